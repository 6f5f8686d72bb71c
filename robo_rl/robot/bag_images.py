"""Camera frames from a recorded bag, for demos-from-bag (`robo_rl.robot.bag_demos`): which topics hold a camera,
how a `sensor_msgs/Image` or `CompressedImage` becomes a `(H, W, C)` uint8 frame, and which frame a control tick saw.

A tick's frame is the newest one whose header stamp is not after the tick (the command's time in the bag), and only
if it is at most the camera's `max_age` old: the rule the state inputs follow (the latest value before the command,
within the profile's staleness timeout), except that frames go by their header stamp, the camera's capture time,
rather than by when the recorder received them. A big image message may reach the recorder after the command it
preceded; its stamp still places it before. A tick without such a frame has no valid observation, like a tick with
a stale state input.

Decoding keeps the bytes a camera sent: rgb8 and mono8 as they are; bgr8 and the 4-channel encodings reordered to
RGB (alpha dropped). CompressedImage (JPEG, PNG) needs Pillow. A camera's frames must all have one size: the demo
file stores them as one `(T, H, W, C)` array per camera (`robo_rl.hil.demos`). A camera's frames are held in memory
while the steps are read (an hour of 64×64 RGB at 20 Hz: 0.9 GB): simple, and a demo file holds them all anyway.
"""

from __future__ import annotations

import io
import math
from bisect import bisect_right
from dataclasses import dataclass
from typing import Any

import numpy as np

from robo_rl.image_spec import ImageSpec

IMAGE_TYPES = ("sensor_msgs/msg/Image", "sensor_msgs/msg/CompressedImage")
CHANNEL_ORDER: dict[str, tuple[int, list[int]]] = {
    "rgb8": (3, [0, 1, 2]),
    "bgr8": (3, [2, 1, 0]),
    "rgba8": (4, [0, 1, 2]),
    "bgra8": (4, [2, 1, 0]),
    "mono8": (1, [0]),
    "8UC1": (1, [0]),
}
"""Image encoding → (channels in the message, the channels kept in RGB / grey order)."""


@dataclass(frozen=True)
class CameraTopic:
    """A camera to restore from a bag.

    Attributes:
        name: the camera's name: its key in the observation dict and its array name in the demo file.
        topic: its Image or CompressedImage topic (relative names resolve in the robot's namespace).
        max_age: seconds a frame stays valid after its stamp (the profile's staleness timeout by default).
    """

    name: str
    topic: str
    max_age: float

    def __post_init__(self) -> None:
        ImageSpec(self.name, 1, 1)  # the name rules of a camera (an identifier, not "state")
        if not self.topic:
            raise ValueError(f"camera {self.name!r}: empty topic")
        if not 0.0 < self.max_age < math.inf:
            raise ValueError(f"camera {self.name!r}: max_age must be a finite number of seconds > 0")


def parse_camera(text: str, max_age: float) -> CameraTopic:
    """`NAME=TOPIC` (the CLI's --camera) as a CameraTopic; ValueError saying what is wrong."""
    name, sep, topic = text.partition("=")
    if not sep:
        raise ValueError(f"--camera {text!r}: expected NAME=TOPIC, e.g. front=front/image_raw")
    return CameraTopic(name.strip(), topic.strip(), max_age)


@dataclass(frozen=True)
class StampedFrames:
    """One camera's frames in stamp order: `stamps` `(K,)` s, `frames` `(K, H, W, C)` uint8."""

    stamps: np.ndarray
    frames: np.ndarray

    @classmethod
    def collect(cls, camera: str, stamped: list[tuple[float, np.ndarray]]) -> StampedFrames:
        """From `(stamp s, frame)` pairs in any order; ValueError when the frames differ in size or there are none."""
        if not stamped:
            raise ValueError(f"camera {camera!r}: no frame in the bag")
        shapes = sorted({frame.shape for _, frame in stamped})
        if len(shapes) > 1:
            raise ValueError(f"camera {camera!r}: frames of several sizes {shapes}; a demo file needs one")
        ordered = sorted(stamped, key=lambda pair: pair[0])
        stamps = np.asarray([stamp for stamp, _ in ordered], dtype=np.float64)
        return cls(stamps, np.stack([frame for _, frame in ordered]))

    @property
    def shape(self) -> tuple[int, int, int]:
        h, w, c = self.frames.shape[1:]
        return (int(h), int(w), int(c))

    def at(self, time: float, max_age: float) -> np.ndarray | None:
        """The newest frame stamped at or before `time`, if at most `max_age` s old; else None."""
        index = bisect_right(self.stamps, time) - 1
        if index < 0 or time - self.stamps[index] > max_age:
            return None
        return self.frames[index]


def header_seconds(message: Any) -> float:
    """A message's header stamp in s."""
    return float(message.header.stamp.sec) + 1e-9 * float(message.header.stamp.nanosec)


def decode_frame(message: Any, msgtype: str) -> np.ndarray:
    """`(H, W, C)` uint8 (C = 3 RGB or 1 grey) of an Image or CompressedImage; ValueError for what it cannot read."""
    if msgtype == "sensor_msgs/msg/CompressedImage":
        return _decode_compressed(bytes(message.data), str(message.format))
    if msgtype != "sensor_msgs/msg/Image":
        raise ValueError(f"{msgtype} is not an image type ({', '.join(IMAGE_TYPES)})")
    return _decode_raw(message)


def _decode_raw(message: Any) -> np.ndarray:
    encoding = str(message.encoding)
    if encoding not in CHANNEL_ORDER:
        raise ValueError(f"image encoding {encoding!r} is not one of {sorted(CHANNEL_ORDER)}")
    channels, keep = CHANNEL_ORDER[encoding]
    height, width, step = int(message.height), int(message.width), int(message.step)
    data = np.frombuffer(bytes(message.data), dtype=np.uint8)
    if step < width * channels or data.size < height * step:
        raise ValueError(f"image {width}x{height} {encoding}: {data.size} bytes with step {step} is too short")
    rows = data[: height * step].reshape(height, step)[:, : width * channels]
    return np.ascontiguousarray(rows.reshape(height, width, channels)[:, :, keep])


def _decode_compressed(data: bytes, fmt: str) -> np.ndarray:
    try:
        from PIL import Image
    except ModuleNotFoundError:
        raise ValueError("CompressedImage frames need Pillow (pip install pillow)") from None
    try:
        with Image.open(io.BytesIO(data)) as image:
            grey = image.mode in ("L", "1", "I;16")
            pixels = np.asarray(image.convert("L" if grey else "RGB"), dtype=np.uint8)
    except OSError as err:
        raise ValueError(f"CompressedImage ({fmt or 'no format'}) does not decode: {err}") from None
    return pixels[:, :, None] if grey else pixels
