"""Camera frames back from a bag (robo_rl.robot.bag_images, bag_demos with cameras) on MCAP bags written here with
rosbags, message by message at chosen times: which frame each command gets (newest stamped before it, within the
max age, by header stamp even when the frame reached the recorder after the command), what a gap in the camera
topic does, the decodings, and the frames' way into the demo file. The live path (sim_bridge → recorder → bag) runs
in tests/real/ros/test_camera_bridge.py."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from robo_rl.hil.demos import load_demo_frames, read_meta
from robo_rl.real.profile import load_profile
from robo_rl.robot.bag_demos import read_steps, save_bag_demos, transitions
from robo_rl.robot.bag_images import CameraTopic, StampedFrames, decode_frame, parse_camera

rosbags = pytest.importorskip("rosbags")
from rosbags.interfaces import Nodetype  # noqa: E402
from rosbags.rosbag2 import StoragePlugin, Writer  # noqa: E402
from rosbags.typesys import Stores, get_typestore  # noqa: E402

PROFILE = load_profile("rc_car")
DT = PROFILE.dt
START = 100.0
TICKS = 24
GAP = range(10, 16)
"""Ticks whose frame is missing from the bag."""
MAX_AGE = 2.5 * DT
STORE = get_typestore(Stores.LATEST)
FRAME_SHAPE = (4, 5, 3)


def default_message(msgtype: str) -> Any:
    """A rosbags message of `msgtype` with every field zero / empty."""
    _, fields = STORE.fielddefs[msgtype]
    return STORE.types[msgtype](**{name: _default(kind) for name, kind in fields})


def _default(kind: tuple[Any, Any]) -> Any:
    node, detail = kind
    if node == Nodetype.NAME:
        return default_message(detail)
    if node == Nodetype.BASE:
        return "" if detail[0] == "string" else (False if detail[0] == "bool" else 0)
    element, size = detail
    dtype = np.dtype("float32" if element[1][0] == "float32" else "float64" if "float" in element[1][0] else "uint8")
    return np.zeros(size if node == Nodetype.ARRAY else 0, dtype=dtype)


def stamp(seconds: float) -> Any:
    time = default_message("builtin_interfaces/msg/Time")
    time.sec, time.nanosec = int(seconds), round((seconds - int(seconds)) * 1e9)
    return time


def image_message(tick: int, at: float) -> Any:
    message = default_message("sensor_msgs/msg/Image")
    message.header.stamp, message.header.frame_id = stamp(at), "front"
    message.height, message.width, message.encoding, message.step = FRAME_SHAPE[0], FRAME_SHAPE[1], "rgb8", 15
    message.data = frame_of(tick).reshape(-1)
    return message


def frame_of(tick: int) -> np.ndarray:
    return (np.arange(np.prod(FRAME_SHAPE)).reshape(FRAME_SHAPE) + tick).astype(np.uint8)


def car_messages(tick: int) -> dict[str, Any]:
    odom = default_message("nav_msgs/msg/Odometry")
    odom.twist.twist.linear.x = 2.0
    track = default_message("std_msgs/msg/Float32MultiArray")
    track.data = np.asarray([float(tick)] + [0.0] * 21 + [0.7], dtype=np.float32)
    drive_state = default_message("std_msgs/msg/Float32MultiArray")
    drive_state.data = np.zeros(1, dtype=np.float32)
    command = default_message("geometry_msgs/msg/Twist")
    command.linear.x = 1.0
    return {"/odom": odom, "/track": track, "/drive_state": drive_state, "/cmd_vel": command}


def write_bag(path: Path) -> Path:
    """A car's topics at DT: state at t, its frame stamped t but recorded 6 ms later, after the command at t + 5 ms;
    no frame for the ticks in GAP."""
    types = {
        "/odom": "nav_msgs/msg/Odometry",
        "/track": "std_msgs/msg/Float32MultiArray",
        "/drive_state": "std_msgs/msg/Float32MultiArray",
        "/cmd_vel": "geometry_msgs/msg/Twist",
        "/front/image_raw": "sensor_msgs/msg/Image",
    }
    writer = Writer(path, version=9, storage_plugin=StoragePlugin.MCAP)
    writer.open()
    connections = {topic: writer.add_connection(topic, kind, typestore=STORE) for topic, kind in types.items()}
    for tick in range(TICKS):
        at = START + tick * DT
        timed = [(topic, at, message) for topic, message in car_messages(tick).items() if topic != "/cmd_vel"]
        timed.append(("/cmd_vel", at + 0.005, car_messages(tick)["/cmd_vel"]))
        if tick not in GAP:
            timed.append(("/front/image_raw", at + 0.006, image_message(tick, at)))
        for topic, time, message in timed:
            data = STORE.serialize_cdr(message, types[topic])
            writer.write(connections[topic], round(time * 1e9), data)
    writer.close()
    return path


@pytest.fixture(scope="module")
def bag(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_bag(tmp_path_factory.mktemp("bag") / "camera_bag")


CAMERA = CameraTopic("front", "front/image_raw", MAX_AGE)


def expected_frame_tick(tick: int) -> int | None:
    """The tick whose frame the command of `tick` sees: the newest before it, unless older than MAX_AGE."""
    newest = max(t for t in range(tick + 1) if t not in GAP)
    return newest if (tick - newest) * DT <= MAX_AGE + 1e-9 else None


def test_each_command_gets_the_newest_frame_stamped_before_it_within_the_max_age(bag: Path) -> None:
    steps = read_steps(bag, PROFILE, cameras=(CAMERA,))
    assert len(steps) == TICKS
    for tick, step in enumerate(steps):
        expected = expected_frame_tick(tick)
        if expected is None:
            assert step.frames is None and step.obs is None, tick  # a frame too old: no valid observation
        else:
            assert step.frames is not None and step.obs is not None, tick
            np.testing.assert_array_equal(step.frames["front"], frame_of(expected))
            assert step.obs[0] == tick  # the state of this tick (track.lookahead[0] carries it)
    assert [expected_frame_tick(t) for t in (10, 11, 12, 15, 16)] == [9, 9, None, None, 16]  # the gap, as meant


def test_transitions_carry_the_frames_of_obs_and_next_obs_and_skip_the_gap(bag: Path) -> None:
    found = transitions(read_steps(bag, PROFILE, cameras=(CAMERA,)), PROFILE, operator_only=False)
    seen = [expected_frame_tick(t) is not None for t in range(TICKS)]
    kept = [t for t in range(TICKS - 1) if seen[t] and seen[t + 1]]
    assert found.obs[:, 0].tolist() == kept and found.next_obs[:, 0].tolist() == [t + 1 for t in kept]
    obs_frames, next_frames = found.obs_frames["front"], found.next_frames["front"]
    assert obs_frames.shape == (len(kept), *FRAME_SHAPE) and obs_frames.dtype == np.uint8
    for row, tick in enumerate(kept):
        np.testing.assert_array_equal(obs_frames[row], frame_of(expected_frame_tick(tick) or 0))
        np.testing.assert_array_equal(next_frames[row], frame_of(expected_frame_tick(tick + 1) or 0))


def test_without_cameras_nothing_changes(bag: Path) -> None:
    steps = read_steps(bag, PROFILE)
    assert all(step.obs is not None and step.frames == {} for step in steps)
    found = transitions(steps, PROFILE, operator_only=False)
    assert len(found) == TICKS - 1 and found.obs_frames == {} and found.next_frames == {}


def test_the_demo_file_keeps_the_frames_per_camera(bag: Path, tmp_path: Path) -> None:
    found = transitions(read_steps(bag, PROFILE, cameras=(CAMERA,)), PROFILE, operator_only=False)
    save_bag_demos(tmp_path / "demos.npz", found, PROFILE, "bag=test")
    specs, frames = load_demo_frames(tmp_path / "demos.npz")
    assert [spec.to_dict()["name"] for spec in specs] == ["front"] and specs[0].shape == FRAME_SHAPE
    np.testing.assert_array_equal(frames["front"][0], found.obs_frames["front"])
    np.testing.assert_array_equal(frames["front"][1], found.next_frames["front"])
    assert read_meta(tmp_path / "demos.npz")["cameras"][0]["dtype"] == "uint8"


def test_a_missing_camera_topic_is_named(bag: Path) -> None:
    with pytest.raises(ValueError, match="no camera topic /rear/image_raw"):
        read_steps(bag, PROFILE, cameras=(CameraTopic("rear", "rear/image_raw", MAX_AGE),))


def test_decodings_give_rgb_or_grey_hwc() -> None:
    frame = frame_of(3)
    bgr = image_message(3, 0.0)
    bgr.encoding, bgr.data = "bgr8", frame[:, :, ::-1].reshape(-1)
    np.testing.assert_array_equal(decode_frame(bgr, "sensor_msgs/msg/Image"), frame)
    padded = image_message(3, 0.0)  # rows padded to 16 bytes, as some drivers send them
    padded.step, padded.data = 16, np.pad(frame.reshape(4, 15), ((0, 0), (0, 1))).reshape(-1)
    np.testing.assert_array_equal(decode_frame(padded, "sensor_msgs/msg/Image"), frame)
    mono = image_message(3, 0.0)
    mono.encoding, mono.step, mono.data = "mono8", 5, frame[:, :, 0].reshape(-1)
    assert decode_frame(mono, "sensor_msgs/msg/Image").shape == (4, 5, 1)
    bad = image_message(3, 0.0)
    bad.encoding = "16UC1"
    with pytest.raises(ValueError, match="16UC1"):
        decode_frame(bad, "sensor_msgs/msg/Image")


def test_a_png_compressed_image_decodes_to_the_same_pixels() -> None:
    image = pytest.importorskip("PIL.Image")
    frame = frame_of(9)
    buffer = io.BytesIO()
    image.fromarray(frame).save(buffer, format="PNG")
    message = default_message("sensor_msgs/msg/CompressedImage")
    message.format, message.data = "png", np.frombuffer(buffer.getvalue(), dtype=np.uint8)
    np.testing.assert_array_equal(decode_frame(message, "sensor_msgs/msg/CompressedImage"), frame)


def test_frames_of_several_sizes_and_bad_camera_options_are_refused() -> None:
    with pytest.raises(ValueError, match="several sizes"):
        StampedFrames.collect("front", [(0.0, np.zeros((2, 2, 3), np.uint8)), (1.0, np.zeros((2, 3, 3), np.uint8))])
    assert parse_camera("front=front/image_raw", 0.1) == CameraTopic("front", "front/image_raw", 0.1)
    for text in ("front", "state=x", "=x", "front="):
        with pytest.raises(ValueError):
            parse_camera(text, 0.1)


def test_the_cli_restores_the_camera_with_the_given_max_age(bag: Path, tmp_path: Path) -> None:
    from robo_rl.cli.main import main

    output = tmp_path / "cli.npz"
    argv = ["demos-from-bag", str(bag), "--profile", "rc_car", "--all", "--camera", "front=front/image_raw"]
    assert main([*argv, "--image-max-age", str(MAX_AGE), "-o", str(output)]) == 0
    specs, frames = load_demo_frames(output)
    found = transitions(read_steps(bag, PROFILE, cameras=(CAMERA,)), PROFILE, operator_only=False)
    assert [spec.name for spec in specs] == ["front"]
    np.testing.assert_array_equal(frames["front"][0], found.obs_frames["front"])
    main([*argv, "--image-max-age", "1.0", "-o", str(tmp_path / "lenient.npz")])  # the gap's frames are fresh then
    assert len(load_demo_frames(tmp_path / "lenient.npz")[1]["front"][0]) == TICKS - 1
