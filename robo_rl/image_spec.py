"""Camera images as observations (`ImageSpec`): a named camera's frame size, layout and pinhole intrinsics.

An env with cameras returns its observation as a dict (`robo_rl.envs`): the state vector under `"state"` and one
`(N, height, width, channels)` uint8 tensor per camera under the camera's name. The same spec travels into the
policy artifact (the image inputs an exported policy expects) and into the deploy side, which resizes and crops
incoming `sensor_msgs/Image` frames to it. Standard library only, like `robo_rl.spaces`.

Layout is HWC, dtype uint8, channels RGB (3) or grey (1): what cameras, MuJoCo's renderer and `sensor_msgs/Image`
with encoding `rgb8`/`mono8` deliver. Conversion to float and to CHW happens inside the policy network (and the
exported graph), so a robot sends the bytes as they come.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

STATE_KEY = "state"
"""Key of the state vector in an observation dict (`robo_rl.envs.ImageObs`); no camera may take the name."""
IMAGE_DTYPE = "uint8"
IMAGE_LAYOUT = "HWC"
CHANNELS = (1, 3)
"""Channel counts accepted: grey (mono8) or RGB (rgb8)."""


@dataclass(frozen=True)
class CameraIntrinsics:
    """Pinhole intrinsics in pixels of the frame the spec describes (after any resize or crop): focal lengths
    `fx`, `fy` and principal point `cx`, `cy`, as in `sensor_msgs/CameraInfo`'s K matrix."""

    fx: float
    fy: float
    cx: float
    cy: float

    def __post_init__(self) -> None:
        if not all(math.isfinite(v) for v in (self.fx, self.fy, self.cx, self.cy)):
            raise ValueError(f"camera intrinsics must be finite, got {self}")
        if self.fx <= 0 or self.fy <= 0:
            raise ValueError(f"focal lengths must be positive, got fx={self.fx} fy={self.fy}")

    @classmethod
    def from_fovy(cls, fovy_deg: float, height: int, width: int) -> CameraIntrinsics:
        """A centred pinhole camera with square pixels and vertical field of view `fovy_deg` (MuJoCo's `fovy`):
        `f = (height / 2) / tan(fovy / 2)`, principal point at the image centre."""
        if not 0.0 < fovy_deg < 180.0:
            raise ValueError(f"fovy must be in (0, 180) degrees, got {fovy_deg}")
        focal = (height / 2.0) / math.tan(math.radians(fovy_deg) / 2.0)
        return cls(focal, focal, width / 2.0, height / 2.0)

    def scaled(self, sx: float, sy: float) -> CameraIntrinsics:
        """The intrinsics after resizing the image by `sx` horizontally and `sy` vertically."""
        return CameraIntrinsics(self.fx * sx, self.fy * sy, self.cx * sx, self.cy * sy)

    def cropped(self, left: float, top: float) -> CameraIntrinsics:
        """The intrinsics after cutting `left` columns and `top` rows off the image."""
        return CameraIntrinsics(self.fx, self.fy, self.cx - left, self.cy - top)

    def to_dict(self) -> dict[str, float]:
        return {"fx": self.fx, "fy": self.fy, "cx": self.cx, "cy": self.cy}


@dataclass(frozen=True)
class ImageSpec:
    """One camera's observation: `(height, width, channels)` uint8, HWC.

    Attributes:
        name: the camera's name, the key of its image in an observation dict and the name of its ONNX input.
            Not "state" (the vector's key) and usable as an identifier.
        height, width: frame size in pixels.
        channels: 3 (RGB) or 1 (grey).
        intrinsics: pinhole intrinsics of this frame, or None where unknown (a foreign camera).
    """

    name: str
    height: int
    width: int
    channels: int = 3
    intrinsics: CameraIntrinsics | None = None

    def __post_init__(self) -> None:
        if not self.name.isidentifier() or self.name == STATE_KEY:
            raise ValueError(f"camera name must be an identifier other than 'state', got {self.name!r}")
        for field, value in (("height", self.height), ("width", self.width)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"camera {self.name!r}: {field} must be a positive integer, got {value!r}")
        if self.channels not in CHANNELS:
            raise ValueError(f"camera {self.name!r}: channels must be one of {CHANNELS}, got {self.channels!r}")

    @property
    def shape(self) -> tuple[int, int, int]:
        """`(height, width, channels)` of one frame."""
        return (self.height, self.width, self.channels)

    @property
    def dtype(self) -> str:
        return IMAGE_DTYPE

    @property
    def layout(self) -> str:
        return IMAGE_LAYOUT

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "height": self.height, "width": self.width}
        out.update({"channels": self.channels, "dtype": IMAGE_DTYPE, "layout": IMAGE_LAYOUT})
        out["intrinsics"] = None if self.intrinsics is None else self.intrinsics.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ImageSpec:
        """Inverse of `to_dict`; ValueError naming the first bad field (unknown dtype or layout included)."""
        if not isinstance(data, dict):
            raise ValueError(f"an image spec must be a mapping, got {type(data).__name__}")
        for key, expected in (("dtype", IMAGE_DTYPE), ("layout", IMAGE_LAYOUT)):
            if data.get(key, expected) != expected:
                raise ValueError(f"image spec {data.get('name')!r}: {key} must be {expected!r}, got {data[key]!r}")
        unknown = set(data) - {"name", "height", "width", "channels", "dtype", "layout", "intrinsics"}
        if unknown:
            raise ValueError(f"image spec {data.get('name')!r}: unknown fields {sorted(unknown)}")
        try:
            raw = data.get("intrinsics")
            values = None if raw is None else {key: float(raw[key]) for key in ("fx", "fy", "cx", "cy")}
            intrinsics = None if values is None else CameraIntrinsics(**values)
            return cls(str(data["name"]), data["height"], data["width"], data.get("channels", 3), intrinsics)
        except (KeyError, TypeError) as error:
            raise ValueError(f"image spec {data.get('name')!r}: malformed ({error!r})") from error


def check_camera_names(specs: tuple[ImageSpec, ...]) -> None:
    """ValueError if two cameras share a name."""
    names = [spec.name for spec in specs]
    duplicated = sorted({name for name in names if names.count(name) > 1})
    if duplicated:
        raise ValueError(f"camera names must be unique, repeated: {duplicated}")
