"""Camera policies on the deploy side without ROS: image inputs in profiles, the profile ↔ camera check, the
multi-input runtime, and the node core assembling frames and state at the control rate on a fake clock.

The policy is `camera_probe`'s hand-built graph (action = W obs + gain * mean(frame) / 255), so every command is
known exactly; the frames are decoded from message-like objects by the real `FrameDecoder`.
"""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import onnx
import pytest

from robo_rl.image_spec import ImageSpec
from robo_rl.real.controller import PolicyController
from robo_rl.real.fault import FaultKind
from robo_rl.real.images import FrameDecoder
from robo_rl.real.node_core import NodeSettings, PolicyNodeCore
from robo_rl.real.profile import ProfileError, RobotProfile, profile_from_dict
from robo_rl.real.runtime import PolicyFileError, PolicyRuntime, ProfileMismatchError

from .camera_probe import (
    SAFE,
    SCENE,
    WRIST,
    artifact,
    block_frame,
    camera_graph,
    expected_action,
    probe_profile,
    write_camera_probe,
)
from .conftest import FakeClock

TIMEOUT = 0.5
STATE = np.array([0.5, -0.25])


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_camera_probe(tmp_path_factory.mktemp("camera") / "probe.onnx")


def _profile(**overrides: Any) -> RobotProfile:
    return profile_from_dict(probe_profile(TIMEOUT, **overrides), "probe.yaml")


def _with_input(index: int, **changes: Any) -> dict[str, Any]:
    data = probe_profile(TIMEOUT)
    data["inputs"][index] = data["inputs"][index] | changes
    return data


# -------------------------------------------------------------------------------------------------- profiles


def test_image_inputs_name_their_camera_and_frame_settings() -> None:
    profile = _profile()
    wrist, scene = profile.image_inputs
    assert (wrist.camera, wrist.frame_settings.resize, wrist.frame_settings.crop) == ("wrist", "area", None)
    assert (scene.camera, scene.frame_settings.resize) == ("scene", "bilinear")
    boxed = profile_from_dict(_with_input(1, crop={"left": 2, "top": 0, "width": 8, "height": 8}))
    assert boxed.image_inputs[0].frame_settings.crop == (2, 0, 8, 8)


@pytest.mark.parametrize(
    ("index", "changes", "message"),
    [
        (1, {"camera": ""}, r"inputs\[1\]\.camera: an image input names the policy camera it feeds, got ''"),
        (0, {"camera": "wrist"}, r"inputs\[0\]\.camera: only an image input \(sensor_msgs/msg/Image, .*\) has one"),
        (1, {"resize": "cubic"}, r"inputs\[1\]\.resize: must be one of \('area', 'bilinear'\), got 'cubic'"),
        (1, {"channels": 2}, r"inputs\[1\]\.channels: must be 3 \(colour\) or 1 \(grey\), got 2"),
        (1, {"crop": {"left": 0, "top": 0, "width": 0, "height": 4}}, r"inputs\[1\]\.crop\.width: must be >= 1"),
        (2, {"camera": "wrist"}, r"inputs\.camera: duplicate names \['wrist'\]"),
    ],
)
def test_bad_image_inputs_are_refused_in_one_line(index: int, changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ProfileError, match=f"^probe.yaml: {message}") as info:
        profile_from_dict(_with_input(index, **changes), "probe.yaml")
    assert "\n" not in str(info.value)


def test_an_image_input_never_triggers_the_commands_nor_feeds_an_observation() -> None:
    data = probe_profile(TIMEOUT)
    data["inputs"] = [data["inputs"][1], data["inputs"][0], data["inputs"][2]]
    with pytest.raises(ProfileError, match=r"inputs\[0\]: an image input cannot trigger the commands"):
        profile_from_dict(data)
    data = probe_profile(TIMEOUT)
    data["observations"][1]["source"] = "wrist_image.height"
    with pytest.raises(ProfileError, match=r"observations\[1\]\.source: 'wrist_image' is an image input"):
        profile_from_dict(data)


# --------------------------------------------------------------------------------------------------- runtime


def test_the_runtime_feeds_obs_and_one_frame_per_camera(probe: Path) -> None:
    runtime = PolicyRuntime(probe, _profile())
    assert runtime.cameras == (WRIST, SCENE)
    frames = {"wrist": block_frame(4, 4, (40, 50, 60)), "scene": block_frame(2, 2, (102,))}
    action = runtime(STATE, frames)
    np.testing.assert_allclose(action, [0.5 + 50 / 255, -0.25 + 2 * 102 / 255], rtol=0, atol=1e-6)
    np.testing.assert_allclose(action, expected_action(STATE, frames), rtol=0, atol=1e-6)
    with pytest.raises(ValueError, match="no frame of camera 'scene'"):
        runtime(STATE, {"wrist": frames["wrist"]})
    with pytest.raises(ValueError, match=r"camera 'wrist': frame \(4, 4, 1\) uint8, expected \(4, 4, 3\) uint8"):
        runtime(STATE, frames | {"wrist": frames["wrist"][:, :, :1]})


def test_every_camera_must_be_fed_and_fit_its_input(probe: Path) -> None:
    data = probe_profile(TIMEOUT)
    del data["inputs"][2]
    data["inputs"][1] |= {"crop": {"left": 0, "top": 0, "width": 640, "height": 480}, "channels": 1}
    data["inputs"].append({"name": "side", "type": "sensor_msgs/msg/Image", "camera": "side"})
    with pytest.raises(ProfileMismatchError) as info:
        PolicyRuntime(probe, profile_from_dict(data))
    assert info.value.mismatches == (
        "camera 'scene' (2x2): no image input of the profile feeds it",
        "image input 'side' feeds camera 'side', which the policy does not take (its cameras: ['scene', 'wrist'])",
        "camera 'wrist' (input 'wrist_image'): crop box 640x480 (aspect 1.333) would stretch the policy's 4x4 frames "
        "(aspect 1.000)",
        "camera 'wrist' (input 'wrist_image'): the profile's camera sends grey frames (channels 1), the policy takes "
        "colour (3)",
    )


def test_camera_and_state_only_policies_need_profiles_that_match_their_cameras(tmp_path: Path) -> None:
    camera_policy = write_camera_probe(tmp_path / "camera.onnx")
    state_only = probe_profile(TIMEOUT)
    del state_only["inputs"][1:]
    with pytest.raises(ProfileMismatchError, match=r"camera 'wrist' \(4x4\): no image input of the profile feeds it"):
        PolicyRuntime(camera_policy, profile_from_dict(state_only))
    state_policy = write_camera_probe(tmp_path / "state.onnx", cameras=())
    with pytest.raises(ProfileMismatchError) as info:
        PolicyRuntime(state_policy, _profile())
    assert info.value.mismatches == (
        "image input 'wrist_image' feeds camera 'wrist', which the policy does not take (its cameras: none)",
        "image input 'scene_image' feeds camera 'scene', which the policy does not take (its cameras: none)",
    )
    assert PolicyRuntime(state_policy, profile_from_dict(state_only)).cameras == ()


def test_a_graph_input_unlike_its_camera_spec_is_refused(tmp_path: Path) -> None:
    model = camera_graph()
    bigger = (ImageSpec("wrist", 8, 8, 3), SCENE)
    onnx.helper.set_model_props(model, artifact(bigger).to_props())
    onnx.save_model(model, str(tmp_path / "probe.onnx"))
    with pytest.raises(PolicyFileError, match=r"input 'wrist' is tensor\(uint8\) \['batch', 4, 4, 3\], its metadata"):
        PolicyRuntime(tmp_path / "probe.onnx")


# ------------------------------------------------------------------------------------------------ node core


class CameraNode:
    """The probe on its profile in a `PolicyNodeCore` with the real frame decoders, on a fake clock."""

    def __init__(self, probe: Path, clock: FakeClock, **settings: Any) -> None:
        profile = _profile()
        runtime = PolicyRuntime(probe, profile)
        controller = PolicyController(runtime, profile, clock, available=lambda _: True)
        specs = {camera.name: camera for camera in runtime.cameras}
        frame_decoders = {
            spec.name: FrameDecoder(specs[spec.camera], spec.frame_settings, spec.type.endswith("CompressedImage"))
            for spec in profile.image_inputs
        }
        self.clock = clock
        self.commands: list[tuple[list[float], str]] = []
        self.core = PolicyNodeCore(
            controller,
            NodeSettings(**settings),
            {"state": lambda message: {f"state.{k}": v for k, v in message.items()}},
            lambda fields, fault: self.commands.append(([fields["data[0]"], fields["data[1]"]], fault)),
            lambda level, message: None,
            now_monotonic=clock,
            now_ros_ns=lambda: round(clock.now * 1e9),
            frame_decoders=frame_decoders,
        )
        self.core.activate()

    def state(self, s0: float, s1: float) -> None:
        self.core.on_input("state", {"s0": s0, "s1": s1})

    def wrist(self, means: tuple[int, int, int], encoding: str = "rgb8", taken: float | None = None) -> np.ndarray:
        """An 8x12 rgb8 frame, rows padded to 40 bytes, stamped `taken` s before now (no header when None); returns
        what the policy should see (4x4 block means)."""
        frame = block_frame(8, 12, means)
        padded = np.zeros((8, 40), dtype=np.uint8)
        padded[:, :36] = frame.reshape(8, 36)
        message = SimpleNamespace(encoding=encoding, height=8, width=12, step=40, data=padded.tobytes())
        if taken is not None:
            stamp = round((self.clock.now - taken) * 1e9)
            message.header = SimpleNamespace(stamp=SimpleNamespace(sec=stamp // 10**9, nanosec=stamp % 10**9))
        self.core.on_input("wrist_image", message)
        return np.broadcast_to(np.array(means, dtype=np.uint8), (4, 4, 3))

    def scene(self, grey: int) -> np.ndarray:
        """A 2x2 grey PNG of one level (bilinear to 2x2 keeps it)."""
        import io

        from PIL import Image

        buffer = io.BytesIO()
        Image.fromarray(np.full((2, 2), grey, dtype=np.uint8)).save(buffer, format="PNG")
        self.core.on_input("scene_image", SimpleNamespace(format="png", data=buffer.getvalue()))
        return np.full((2, 2, 1), grey, dtype=np.uint8)


def test_commands_follow_the_state_with_the_newest_frames(probe: Path, clock: FakeClock) -> None:
    node = CameraNode(probe, clock)
    frames = {"wrist": node.wrist((40, 50, 60)), "scene": node.scene(102)}
    assert node.commands == []  # frames trigger nothing
    node.state(0.5, -0.25)
    expected = expected_action(STATE, frames)
    assert node.commands[-1][1] == ""
    np.testing.assert_allclose(node.commands[-1][0], expected, rtol=0, atol=1e-6)
    clock.advance(0.05)
    frames["wrist"] = node.wrist((90, 100, 110))
    frames["wrist"] = node.wrist((140, 150, 160))  # two frames between commands: the newest goes with the state
    assert len(node.commands) == 1
    node.state(0.5, -0.25)
    np.testing.assert_allclose(node.commands[-1][0], expected_action(STATE, frames), rtol=0, atol=1e-6)
    assert node.commands[-1][0][0] == pytest.approx(0.5 + 150 / 255, abs=1e-6)


def test_a_silent_camera_gives_the_safe_command_naming_it(probe: Path, clock: FakeClock) -> None:
    node = CameraNode(probe, clock)
    node.wrist((40, 50, 60))
    for _ in range(int(TIMEOUT / 0.05) + 2):  # state and scene keep coming; the wrist camera went silent
        node.scene(102)
        node.state(0.5, -0.25)
        clock.advance(0.05)
    faults = [fault for _, fault in node.commands]
    assert faults[0] == "" and faults[-1].kind == FaultKind.STALE
    assert "no wrist_image for 0.5 s" in faults[-1]
    assert node.commands[-1][0] == [SAFE, SAFE]
    fresh = [fault == "" for fault in faults]
    assert fresh == sorted(fresh, reverse=True)  # fresh until the timeout, stale after: never the other way round
    values = node.core.diagnostics()
    assert values["stale_inputs"] == "wrist_image"
    assert values["input_age_ms.wrist_image"] > TIMEOUT * 1e3 > values["input_age_ms.state"]
    node.wrist((40, 50, 60))  # it comes back: the policy's commands again
    node.state(0.5, -0.25)
    assert node.commands[-1][1] == "" and node.core.diagnostics()["stale_inputs"] == ""


def test_a_camera_silent_from_the_start_never_lets_the_policy_command(probe: Path, clock: FakeClock) -> None:
    node = CameraNode(probe, clock)
    node.scene(102)
    node.state(0.5, -0.25)
    assert node.commands[-1] == ([SAFE, SAFE], node.commands[-1][1])
    assert "no wrist_image" in node.commands[-1][1]
    assert math.isinf(node.core.diagnostics()["input_age_ms.wrist_image"])


def test_unreadable_frames_are_skipped_and_do_not_keep_the_camera_fresh(probe: Path, clock: FakeClock) -> None:
    node = CameraNode(probe, clock)
    node.wrist((40, 50, 60))
    node.scene(102)
    clock.advance(TIMEOUT + 0.01)
    node.scene(102)
    node.wrist((40, 50, 60), encoding="yuv422")
    node.state(0.5, -0.25)
    assert node.core.counters.skipped_messages == 1
    assert node.core.counters.last_skipped.startswith("wrist_image: image encoding 'yuv422' is not read")
    assert "no wrist_image" in node.commands[-1][1]


def test_a_frame_ages_from_its_stamp_so_late_frames_go_stale_as_silent_ones(probe: Path, clock: FakeClock) -> None:
    node = CameraNode(probe, clock)
    node.scene(102)
    node.wrist((40, 50, 60), taken=0.3)  # 0.3 s old on arrival: fresh for 0.2 s more
    node.state(0.5, -0.25)
    clock.advance(0.15)
    node.scene(102)
    node.state(0.5, -0.25)
    assert [fault for _, fault in node.commands] == ["", ""]
    clock.advance(0.1)  # 0.55 s since it was taken, 0.25 s since it arrived
    node.scene(102)
    node.state(0.5, -0.25)
    assert "no wrist_image" in node.commands[-1][1]
    node.wrist((40, 50, 60), taken=TIMEOUT + 0.01)  # older than the timeout on arrival: the camera stays stale
    node.state(0.5, -0.25)
    assert "no wrist_image" in node.commands[-1][1]
    assert node.core.diagnostics()["input_age_ms.wrist_image"] == pytest.approx((TIMEOUT + 0.01) * 1e3)
    node.wrist((40, 50, 60), taken=-1.0)  # stamped in the future (another machine's clock): counts as new
    node.state(0.5, -0.25)
    assert node.commands[-1][1] == ""
