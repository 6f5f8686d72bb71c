"""Simulated camera over ROS and back: sim_bridge publishes a camera env's frames as Image + CameraInfo, the recorder
keeps them in a (zstd) MCAP bag, and demos-from-bag restores them beside the state, tick by tick
(scenarios/scenario_camera_bridge.py; the bridge is ticked by the scenario, not by a clock). Which frame a command
gets and what a gap does are checked exactly on bags written in tests/robo_rl/robot/test_bag_images.py."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from robo_rl.envs import CameraEnv, check_step_result
from robo_rl.image_spec import CameraIntrinsics

TICKS = 30
CAMERAS = {"front": (12, 16, 3, "rgb8"), "grey": (6, 8, 1, "mono8")}
FRONT_K = CameraIntrinsics.from_fovy(60.0, 12, 16)


def _camera_env_module() -> Any:
    path = Path(__file__).parent / "scenarios" / "camera_env.py"
    spec = importlib.util.spec_from_file_location("camera_env", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("camera_env", module)
    spec.loader.exec_module(module)
    return module


def test_the_test_camera_env_keeps_the_camera_contract() -> None:
    camera_env = _camera_env_module()
    env = camera_env.CameraCar(2, seed=0)
    assert isinstance(env, CameraEnv)
    first = env.reset(0)
    result = env.step(torch.zeros(2, 2))
    check_step_result(env, result)
    assert not torch.equal(first["front"], result[0]["front"])  # frames change with the step: order is visible


@pytest.fixture(scope="module")
def run(ros_scenario: Callable[..., dict[str, Any]]) -> dict[str, Any]:
    return ros_scenario("scenario_camera_bridge.py", "zstd", timeout=240.0)


def _env_bytes(run: dict[str, Any], camera: str) -> list[bytes]:
    return [np.asarray(frame, dtype=np.uint8).tobytes() for frame in run["env_frames"][camera]]


def test_the_scenario_ran_every_tick(run: dict[str, Any]) -> None:
    assert run["ready"] and run["lost"] == 0, run.get("recorder_log")
    assert run["recorder_exit"] == 0 and len(run["bags"]) == 1, run["recorder_log"]
    topics = [f"/{camera}/{kind}" for camera in CAMERAS for kind in ("camera_info", "image_raw")]
    assert run["camera_topics"] == sorted(topics)


def test_the_bridge_publishes_each_tick_s_frame_as_the_env_rendered_it(run: dict[str, Any]) -> None:
    for camera, (height, width, channels, encoding) in CAMERAS.items():
        got = run["received"][camera]
        assert got["count"] == TICKS and all(got["bytes_equal"]), camera
        assert got["encoding"] == encoding and got["frame_id"] == camera
        assert got["size"] == [height, width, width * channels]
        assert got["info_size"] == [height, width] and got["info_frame_id"] == camera
        assert len(set(_env_bytes(run, camera))) == TICKS  # every tick's frame differs: the equality means something


def test_frames_and_camera_info_carry_the_tick_s_stamp(run: dict[str, Any]) -> None:
    upper = run["tick_upper_ns"]
    for camera in CAMERAS:
        stamps = run["received"][camera]["stamps_ns"]
        assert stamps == run["received"][camera]["info_stamps_ns"]
        assert all(before < stamp <= after for before, stamp, after in zip([0, *upper], stamps, upper, strict=False))


def test_camera_info_has_the_spec_s_intrinsics(run: dict[str, Any]) -> None:
    k = [FRONT_K.fx, 0.0, FRONT_K.cx, 0.0, FRONT_K.fy, FRONT_K.cy, 0.0, 0.0, 1.0]
    assert run["received"]["front"]["k"] == pytest.approx(k)
    assert run["received"]["grey"]["k"] == [0.0] * 9  # no intrinsics: ROS's uncalibrated camera
    assert run["bag_k"]["/front/camera_info"] == pytest.approx(k)


def test_the_recorder_keeps_every_frame_in_order_in_a_sane_size(run: dict[str, Any]) -> None:
    assert run["bag_types"]["/front/image_raw"] == "sensor_msgs/msg/Image"
    assert all(count == TICKS for count in run["bag_counts"].values()), run["bag_counts"]
    for camera in CAMERAS:
        assert [bytes.fromhex(h) for h in run["bag_images_hex"][f"/{camera}/image_raw"]] == _env_bytes(run, camera)
        assert run["bag_stamps_ns"][f"/{camera}/image_raw"] == run["received"][camera]["stamps_ns"]
    mcap = sum(size for name, size in run["bag_files"].items() if name.endswith(".mcap"))
    assert mcap < run["bag_payload_bytes"], (mcap, run["bag_payload_bytes"])  # zstd chunks: smaller than the messages


def _ticks(run: dict[str, Any], camera: str, which: int) -> list[int]:
    """The tick of each transition's frame (which 0: obs, 1: next obs) in the demo file."""
    index = {frame: tick for tick, frame in enumerate(_env_bytes(run, camera))}
    return [index.get(bytes.fromhex(h), -1) for h in run["demo_frames_hex"][camera][which]]


def test_demos_from_the_bag_hold_the_frames_of_their_ticks_in_order(run: dict[str, Any]) -> None:
    assert run["convert_exit"] == 0, run["convert_output"]
    assert [(s["name"], s["height"], s["width"], s["channels"]) for s in run["demo_specs"]] == [
        (camera, h, w, c) for camera, (h, w, c, _) in CAMERAS.items()
    ]
    obs = _ticks(run, "front", 0)
    assert len(obs) >= TICKS // 2 and min(obs) >= 0, obs
    assert obs == sorted(set(obs))  # in order, none twice
    assert _ticks(run, "front", 1) == [tick + 1 for tick in obs]  # the next observation's frame: the next tick's
    assert _ticks(run, "grey", 0) == obs and _ticks(run, "grey", 1) == [tick + 1 for tick in obs]
    states = [run["env_states"][tick] for tick in obs]  # the frame sits with the state of its own tick
    assert run["demo_obs0"] == pytest.approx(states, abs=1e-6)


def test_camera_topic_templates_name_each_camera_and_refuse_collisions() -> None:
    from robo_rl.image_spec import ImageSpec
    from robo_rl.sim.camera_messages import camera_topics

    specs = (ImageSpec("front", 2, 2), ImageSpec("wrist", 2, 2, 1))
    assert camera_topics("{camera}/image_raw", specs) == {"front": "front/image_raw", "wrist": "wrist/image_raw"}
    assert camera_topics("/robot/cam", specs[:1]) == {"front": "/robot/cam"}  # one camera: a fixed name is fine
    for template in ("/robot/cam", ""):
        with pytest.raises(ValueError):
            camera_topics(template, specs)


def test_an_image_message_refuses_a_frame_that_is_not_its_spec_s() -> None:
    from types import SimpleNamespace

    from robo_rl.image_spec import ImageSpec
    from robo_rl.sim.camera_messages import fill_image

    message = SimpleNamespace(header=SimpleNamespace())
    spec = ImageSpec("front", 2, 3, 3)
    filled = fill_image(message, np.arange(18, dtype=np.uint8).reshape(2, 3, 3), spec, "stamp")
    assert (filled.encoding, filled.step, bytes(filled.data)) == ("rgb8", 9, bytes(range(18)))
    with pytest.raises(ValueError, match="front"):
        fill_image(message, np.zeros((3, 2, 3), np.uint8), spec, "stamp")
