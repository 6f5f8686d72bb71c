"""A simulated camera's frame as `sensor_msgs/Image` and its `ImageSpec` as `sensor_msgs/CameraInfo`, for sim_bridge.

The functions fill message instances the caller creates (rclpy's generated classes), so this module imports no ROS
package and stays type-checked; sim_bridge owns the publishers. Encodings follow the spec's channels (`rgb8` for 3,
`mono8` for 1): the bytes a robot's driver sends for the same camera, which the deploy side and demos-from-bag decode
without conversion. `frame_id` is the camera's name: the one place a subscriber can tell two cameras' frames apart
once they are recorded into one bag.

Topic names come from the bridge's `camera_image_topic` / `camera_info_topic` parameters, templates in which
`{camera}` stands for the camera's name (`camera_topic`).
"""

from __future__ import annotations

import array
from typing import Any

import numpy as np

from robo_rl.image_spec import ImageSpec

CAMERA_PLACEHOLDER = "{camera}"
DEFAULT_IMAGE_TOPIC = "{camera}/image_raw"
DEFAULT_INFO_TOPIC = "{camera}/camera_info"
ENCODINGS = {3: "rgb8", 1: "mono8"}
"""`sensor_msgs/Image` encoding per channel count (robo_rl.image_spec.CHANNELS)."""
DISTORTION_MODEL = "plumb_bob"
"""A simulated pinhole camera has no distortion: plumb_bob with all five coefficients zero."""


def camera_topic(template: str, camera: str) -> str:
    """The topic of `camera` from a template such as `{camera}/image_raw` (a name without the placeholder is used as
    it is: fine for one camera, a collision for two, which `camera_topics` refuses)."""
    return template.replace(CAMERA_PLACEHOLDER, camera)


def camera_topics(template: str, specs: tuple[ImageSpec, ...]) -> dict[str, str]:
    """`{camera: topic}` for every camera; ValueError when the template is empty or two cameras share a topic."""
    if not template:
        raise ValueError("is empty (a topic template such as '{camera}/image_raw')")
    topics = {spec.name: camera_topic(template, spec.name) for spec in specs}
    if len(set(topics.values())) < len(topics):
        raise ValueError(f"{template!r} gives several cameras one topic: put {CAMERA_PLACEHOLDER} in it")
    return topics


def fill_image(message: Any, frame: np.ndarray, spec: ImageSpec, stamp: Any) -> Any:
    """`message` (a `sensor_msgs/Image`) carrying `frame` `(height, width, channels)` uint8 as it is, row-major."""
    if frame.shape != spec.shape or frame.dtype != np.uint8:
        raise ValueError(f"camera {spec.name!r}: frame {frame.shape} {frame.dtype}, spec {spec.shape} uint8")
    message.header.stamp = stamp
    message.header.frame_id = spec.name
    message.height, message.width = spec.height, spec.width
    message.encoding = ENCODINGS[spec.channels]
    message.is_bigendian = 0
    message.step = spec.width * spec.channels
    message.data = array.array("B", np.ascontiguousarray(frame).tobytes())
    return message


def fill_camera_info(message: Any, spec: ImageSpec, stamp: Any) -> Any:
    """`message` (a `sensor_msgs/CameraInfo`) describing `spec`'s camera: K and P from its intrinsics, no distortion,
    identity rectification. A spec without intrinsics leaves K and P zero, ROS's mark of an uncalibrated camera."""
    message.header.stamp = stamp
    message.header.frame_id = spec.name
    message.height, message.width = spec.height, spec.width
    message.distortion_model = DISTORTION_MODEL
    message.d = [0.0] * 5
    message.k = list(camera_matrix(spec))
    message.r = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    fx, _, cx, _, fy, cy, _, _, one = message.k
    message.p = [fx, 0.0, cx, 0.0, 0.0, fy, cy, 0.0, 0.0, 0.0, one, 0.0]
    return message


def camera_matrix(spec: ImageSpec) -> tuple[float, ...]:
    """K, row-major 3×3, of `spec`'s camera; all zeros without intrinsics."""
    if spec.intrinsics is None:
        return (0.0,) * 9
    i = spec.intrinsics
    return (i.fx, 0.0, i.cx, 0.0, i.fy, i.cy, 0.0, 0.0, 1.0)
