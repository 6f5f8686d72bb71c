"""Camera frames from ROS messages to a camera policy's image inputs: decode, convert channels, crop, resize.

A camera policy's graph (artifact schema 4, `robo_rl.artifact.IMAGE_PREPROCESSING`) takes each camera's frame as
uint8 `(height, width, channels)` HWC at its `ImageSpec`'s size and does the float conversion itself; what a robot's
camera sends (another resolution, BGR byte order, rows padded to an alignment, JPEG) is made into that here, before
the graph. ROS-free: messages are read by attribute (`encoding`, `height`, `width`, `step`, `data` of
`sensor_msgs/Image`; `format`, `data` of `sensor_msgs/CompressedImage`), so rclpy messages and deserialized bag
messages both work, and the arithmetic is numpy (compressed frames are decoded with Pillow). A frame that cannot
be read raises `InputError`: the node skips and counts it, and the camera input goes stale as if it were silent.

Order of operations: decode → the spec's channels → crop (a configured box, or the centred largest box of the
spec's aspect ratio, so that the picture is not stretched) → resize to the spec's size ("area": each output pixel
the mean of the input area it covers, right for shrinking; "bilinear": interpolation between the four nearest input
pixels, half-pixel centres, for sizes near the spec's). Both resizes are separable: one weight matrix per axis.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from robo_rl.image_spec import ImageSpec
from robo_rl.real.fault import InputError

RESIZE_METHODS = ("area", "bilinear")
"""How a crop is scaled to the spec's size (see the module docstring)."""
ENCODINGS: dict[str, tuple[int, tuple[int, ...]]] = {
    "rgb8": (3, (0, 1, 2)),
    "bgr8": (3, (2, 1, 0)),
    "rgba8": (4, (0, 1, 2)),
    "bgra8": (4, (2, 1, 0)),
    "mono8": (1, (0,)),
}
"""`sensor_msgs/Image` encodings read: encoding → (bytes per pixel, the byte of R, G, B, or of grey)."""
COMPRESSED_FORMATS = {"jpeg": "JPEG", "jpg": "JPEG", "png": "PNG"}
"""Words of a `CompressedImage.format` (e.g. "jpeg", "rgb8; jpeg compressed bgr8") → the Pillow decoder allowed."""
_LUMA = (19595, 38470, 7471)
"""ITU-R 601 luma weights in 1/65536, as Pillow converts RGB to grey, so raw and compressed frames agree."""

Box = tuple[int, int, int, int]
"""A crop box `(left, top, width, height)` in the frame's pixels."""


@dataclass(frozen=True)
class FrameSettings:
    """How one camera's frames become its spec's input: the resize method and an optional fixed crop box (None:
    the centred largest box of the spec's aspect ratio)."""

    resize: str = "area"
    crop: Box | None = None

    def __post_init__(self) -> None:
        if self.resize not in RESIZE_METHODS:
            raise ValueError(f"resize must be one of {RESIZE_METHODS}, got {self.resize!r}")
        if self.crop is not None and (min(self.crop[:2]) < 0 or min(self.crop[2:]) < 1):
            raise ValueError(f"crop (left, top, width, height) needs left, top >= 0 and a size >= 1, got {self.crop}")


# ------------------------------------------------------------------------------------------------------- decoding


def decode_raw(encoding: str, height: int, width: int, step: int, data: Any) -> np.ndarray:
    """The pixels of a `sensor_msgs/Image` as `(height, width, 3)` RGB or `(height, width, 1)` grey uint8.

    `step` is the row length in bytes, which may exceed `width * bytes per pixel` (rows padded to an alignment):
    the padding is cut off. InputError for an unknown encoding or data shorter than `height * step`.
    """
    if encoding not in ENCODINGS:
        raise InputError(f"image encoding {encoding!r} is not read (known: {', '.join(ENCODINGS)})")
    size, order = ENCODINGS[encoding]
    if height < 1 or width < 1 or step < width * size:
        raise InputError(f"{encoding} image {width}x{height} with step {step}: rows need {width * size} bytes")
    raw = _bytes(data)
    if raw.size < height * step:
        raise InputError(f"{encoding} image {width}x{height}, step {step}: {raw.size} bytes, expected {height * step}")
    rows = raw[: height * step].reshape(height, step)[:, : width * size]
    return rows.reshape(height, width, size)[:, :, list(order)]


def _bytes(data: Any) -> np.ndarray:
    """A message's `data` (bytes, rclpy's array.array('B'), a bag reader's numpy array or a list) as uint8, uncopied
    where it is a buffer."""
    try:
        return np.frombuffer(memoryview(data).cast("B"), dtype=np.uint8)
    except TypeError:
        return np.asarray(data, dtype=np.uint8).reshape(-1)


def decode_compressed(format_: str, data: Any) -> np.ndarray:
    """The pixels of a `sensor_msgs/CompressedImage` (JPEG or PNG) as RGB `(h, w, 3)` or grey `(h, w, 1)` uint8."""
    from PIL import Image, UnidentifiedImageError

    words = format_.lower().replace(";", " ").split()
    allowed = sorted({COMPRESSED_FORMATS[word] for word in words if word in COMPRESSED_FORMATS})
    if not allowed:
        raise InputError(f"compressed image format {format_!r} is not read (known: jpeg, png)")
    try:
        with Image.open(io.BytesIO(_bytes(data).tobytes()), formats=allowed) as image:
            decoded = image.convert("L" if image.mode in ("L", "LA", "I;16", "1") else "RGB")
    except (UnidentifiedImageError, OSError, ValueError) as err:
        raise InputError(f"compressed image ({format_}): not decodable as {'/'.join(allowed)} ({err})") from None
    pixels = np.asarray(decoded, dtype=np.uint8)
    return pixels[:, :, None] if pixels.ndim == 2 else pixels


def to_channels(pixels: np.ndarray, channels: int) -> np.ndarray:
    """RGB or grey `(h, w, 3|1)` → `channels`: grey from RGB by ITU-R 601 luma (Pillow's rounding); grey never
    becomes RGB (a colour policy fed grey would see a scene it was not trained on): InputError."""
    have = pixels.shape[2]
    if have == channels:
        return pixels
    if channels == 1:
        weighted = pixels.astype(np.uint32) @ np.array(_LUMA, dtype=np.uint32)
        return ((weighted + 0x8000) >> 16).astype(np.uint8)[:, :, None]
    raise InputError(f"a {have}-channel frame cannot feed a {channels}-channel camera input")


# ------------------------------------------------------------------------------------------------- crop and resize


def centre_box(height: int, width: int, spec: ImageSpec) -> Box:
    """The largest box of the spec's aspect ratio (width / height) centred in a `height` x `width` frame."""
    box_width = min(width, max(1, round(height * spec.width / spec.height)))
    box_height = min(height, max(1, round(width * spec.height / spec.width)))
    return (width - box_width) // 2, (height - box_height) // 2, box_width, box_height


def crop(pixels: np.ndarray, box: Box) -> np.ndarray:
    """The `(left, top, width, height)` box of a frame; InputError when it does not lie inside the frame."""
    left, top, width, height = box
    if left + width > pixels.shape[1] or top + height > pixels.shape[0]:
        frame = f"{pixels.shape[1]}x{pixels.shape[0]}"
        raise InputError(f"crop box {width}x{height} at ({left}, {top}) does not fit the {frame} frame")
    return pixels[top : top + height, left : left + width]


@lru_cache(maxsize=64)
def resize_weights(size_in: int, size_out: int, method: str) -> np.ndarray:
    """`(size_out, size_in)` weights along one axis, each row summing to 1 (cached: a camera's size is fixed)."""
    scale = size_in / size_out
    weights = np.zeros((size_out, size_in), dtype=np.float32)
    if method == "area":
        for i in range(size_out):  # output pixel i covers input [i * scale, (i + 1) * scale)
            start, end = i * scale, (i + 1) * scale
            for j in range(int(start), min(size_in, int(np.ceil(end)))):
                weights[i, j] = (min(end, j + 1) - max(start, j)) / scale
    elif method == "bilinear":
        centres = np.clip((np.arange(size_out) + 0.5) * scale - 0.5, 0.0, size_in - 1)
        low = np.floor(centres).astype(int)
        high = np.minimum(low + 1, size_in - 1)
        fraction = centres - low
        np.add.at(weights, (np.arange(size_out), low), 1.0 - fraction)
        np.add.at(weights, (np.arange(size_out), high), fraction)
    else:
        raise ValueError(f"resize must be one of {RESIZE_METHODS}, got {method!r}")
    weights.setflags(write=False)
    return weights


@lru_cache(maxsize=64)
def resize_band(size_in: int, size_out: int, method: str) -> tuple[np.ndarray, np.ndarray]:
    """`resize_weights` as a band: per output pixel, the input indices `(size_out, k)` it reads and their weights
    (k: the most inputs any output reads; unused slots weigh 0). Reading only these keeps a 480 -> 64 resize at a
    few hundred thousand multiplications instead of a dense product's tens of millions."""
    weights = resize_weights(size_in, size_out, method)
    width = max(1, int((weights > 0).sum(axis=1).max()))
    first = np.clip((weights > 0).argmax(axis=1), 0, size_in - width)
    indices = first[:, None] + np.arange(width)[None, :]
    band = np.take_along_axis(weights, indices, axis=1)
    indices.setflags(write=False)
    band.setflags(write=False)
    return indices, band


def resize(pixels: np.ndarray, height: int, width: int, method: str) -> np.ndarray:
    """`(h, w, c)` uint8 → `(height, width, c)` uint8 by `method` (rounded to the nearest integer, halves to even):
    rows, then columns, each output a weighted sum of the band of inputs it covers (`resize_band`)."""
    if pixels.shape[:2] == (height, width):
        return pixels
    rows, row_weights = resize_band(pixels.shape[0], height, method)
    columns, column_weights = resize_band(pixels.shape[1], width, method)
    tall = np.einsum("ikwc,ik->iwc", pixels[rows].astype(np.float32), row_weights)  # (height, w, c)
    scaled = np.einsum("ilkc,lk->ilc", tall[:, columns], column_weights)  # (height, width, c)
    return np.clip(np.rint(scaled), 0, 255).astype(np.uint8)


def prepare(pixels: np.ndarray, spec: ImageSpec, settings: FrameSettings) -> np.ndarray:
    """A decoded frame → the spec's `(height, width, channels)` uint8, contiguous, ready for the graph (cropped
    first: the rest works on the pixels the policy sees only)."""
    box = settings.crop or centre_box(pixels.shape[0], pixels.shape[1], spec)
    cropped = to_channels(crop(pixels, box), spec.channels)
    return np.ascontiguousarray(resize(cropped, spec.height, spec.width, settings.resize))


# -------------------------------------------------------------------------------------------------- messages


class FrameDecoder:
    """`decoder(message)` → one camera's frame for its policy input, from a `sensor_msgs/Image` or (`compressed`)
    a `sensor_msgs/CompressedImage`; InputError for a frame it cannot read. `camera` is the spec's name."""

    def __init__(self, spec: ImageSpec, settings: FrameSettings, compressed: bool) -> None:
        self.spec = spec
        self.settings = settings
        self.compressed = compressed

    @property
    def camera(self) -> str:
        return self.spec.name

    def __call__(self, message: Any) -> np.ndarray:
        if self.compressed:
            pixels = decode_compressed(str(message.format), message.data)
        else:
            pixels = decode_raw(
                str(message.encoding), int(message.height), int(message.width), int(message.step), message.data
            )
        return prepare(pixels, self.spec, self.settings)
