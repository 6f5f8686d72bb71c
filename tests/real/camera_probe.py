"""A camera policy whose every output is known: built node by node with `onnx.helper`, not by the torch exporter.

action = W · obs + bias + sum over cameras of gain[camera] * mean(frame[camera]) / 255, the mean over the whole
frame (height, width and channels), as uint8 (batch, height, width, channels) inputs named after the cameras, like a
robo_rl camera policy's graph (artifact schema 4). A command then shows which state values and which frames reached
the policy: a frame of known mean moves the action by a known amount. The probe profile feeds it two cameras, one
raw `sensor_msgs/Image` and one `CompressedImage`, and a state vector on a Float32MultiArray.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import yaml
from onnx import TensorProto, helper

from robo_rl.artifact import PolicyArtifact
from robo_rl.image_spec import ImageSpec
from robo_rl.real.profile import RobotProfile
from robo_rl.spaces import SpaceSpec

OPSET = 13
"""ReduceMean takes its axes as an attribute up to opset 17; 13 is read by every onnxruntime robo_rl supports."""
TASK = "probe/camera"
DT = 0.05
WRIST = ImageSpec("wrist", 4, 4, 3)
SCENE = ImageSpec("scene", 2, 2, 1)
OBS = ("s0", "s1")
ACTIONS = ("a0", "a1")
WEIGHTS = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
"""`(action, obs)`: each action follows one state value."""
BIAS = np.array([0.0, 0.0], dtype=np.float32)
GAINS = {"wrist": np.array([1.0, 0.0], dtype=np.float32), "scene": np.array([0.0, 2.0], dtype=np.float32)}
"""Per camera `(action,)`: a0 sees the wrist camera's mean, a1 twice the scene camera's."""
ACTION_BOUND = 10.0
SAFE = -5.0


def expected_action(obs: np.ndarray, frames: dict[str, np.ndarray]) -> np.ndarray:
    """The probe's output for `obs` and the prepared frames, computed the way its graph does (float32)."""
    action = WEIGHTS @ obs.astype(np.float32) + BIAS
    for camera, gain in GAINS.items():
        action = action + gain * np.float32(frames[camera].astype(np.float32).mean() / 255.0)
    return action


def camera_graph(
    cameras: tuple[ImageSpec, ...] = (WRIST, SCENE),
    weights: np.ndarray = WEIGHTS,
    bias: np.ndarray = BIAS,
    gains: dict[str, np.ndarray] = GAINS,
) -> onnx.ModelProto:
    """The probe's graph without metadata: action = weights · obs + bias + sum of gains[camera] * mean / 255."""
    actions, observations = weights.shape
    nodes, inputs = [], [helper.make_tensor_value_info("obs", TensorProto.FLOAT, ["batch", observations])]
    matrix = helper.make_tensor("weights", TensorProto.FLOAT, weights.T.shape, weights.T.flatten().tolist())
    initializers = [matrix, helper.make_tensor("bias", TensorProto.FLOAT, bias.shape, bias.tolist())]
    initializers.append(helper.make_tensor("scale", TensorProto.FLOAT, [], [1.0 / 255.0]))
    nodes += [
        helper.make_node("MatMul", ["obs", "weights"], ["linear"]),
        helper.make_node("Add", ["linear", "bias"], ["sum0"]),
    ]
    for i, camera in enumerate(cameras):
        shape = ["batch", camera.height, camera.width, camera.channels]
        inputs.append(helper.make_tensor_value_info(camera.name, TensorProto.UINT8, shape))
        gain = gains[camera.name]
        initializers.append(helper.make_tensor(f"gain_{camera.name}", TensorProto.FLOAT, gain.shape, gain.tolist()))
        nodes += [
            helper.make_node("Cast", [camera.name], [f"float_{i}"], to=TensorProto.FLOAT),
            helper.make_node("ReduceMean", [f"float_{i}"], [f"mean_{i}"], axes=[1, 2, 3], keepdims=0),
            helper.make_node("Unsqueeze", [f"mean_{i}", "axis1"], [f"column_{i}"]),
            helper.make_node("Mul", [f"column_{i}", "scale"], [f"unit_{i}"]),
            helper.make_node("Mul", [f"unit_{i}", f"gain_{camera.name}"], [f"term_{i}"]),
            helper.make_node("Add", [f"sum{i}", f"term_{i}"], [f"sum{i + 1}"]),
        ]
    initializers.append(helper.make_tensor("axis1", TensorProto.INT64, [1], [1]))
    nodes.append(helper.make_node("Identity", [f"sum{len(cameras)}"], ["action"]))
    output = helper.make_tensor_value_info("action", TensorProto.FLOAT, ["batch", actions])
    graph = helper.make_graph(nodes, "camera_probe", inputs, [output], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def artifact(cameras: tuple[ImageSpec, ...] = (WRIST, SCENE)) -> PolicyArtifact:
    inf = float("inf")
    obs = SpaceSpec(OBS, (-inf,) * len(OBS), (inf,) * len(OBS), ("1",) * len(OBS))
    bound = ACTION_BOUND
    action = SpaceSpec(ACTIONS, (-bound,) * len(ACTIONS), (bound,) * len(ACTIONS), ("1",) * len(ACTIONS))
    return PolicyArtifact(obs, action, dt=DT, task=TASK, version="test", images=cameras)


def write_camera_probe(path: Path, cameras: tuple[ImageSpec, ...] = (WRIST, SCENE)) -> Path:
    """The probe as a policy file with its robo_rl metadata (schema 4: its cameras)."""
    model = camera_graph(cameras)
    helper.set_model_props(model, artifact(cameras).to_props())
    onnx.save_model(model, str(path))
    return path


def write_profile_probe(path: Path, profile: RobotProfile, cameras: tuple[ImageSpec, ...], gain: float) -> Path:
    """A camera policy for `profile` (its task, dt, observations and actions; unbounded observations) with
    `cameras`: every action is `gain` times the sum of the cameras' means / 255, whatever the state."""
    names, units = profile.obs_names, tuple(o.unit for o in profile.observations)
    inf = float("inf")
    obs = SpaceSpec(names, (-inf,) * len(names), (inf,) * len(names), units)
    limits = profile.actions
    action = SpaceSpec(
        profile.action_names, tuple(a.low for a in limits), tuple(a.high for a in limits), tuple(a.unit for a in limits)
    )
    metadata = PolicyArtifact(obs, action, dt=profile.dt, task=profile.task, version="test", images=cameras)
    weights = np.zeros((len(limits), len(names)), dtype=np.float32)
    gains = {camera.name: np.full(len(limits), gain, dtype=np.float32) for camera in cameras}
    model = camera_graph(cameras, weights, np.zeros(len(limits), dtype=np.float32), gains)
    helper.set_model_props(model, metadata.to_props())
    onnx.save_model(model, str(path))
    return path


def probe_profile(staleness_timeout: float = 1.0, **overrides: Any) -> dict[str, Any]:
    """The probe's robot profile as parsed YAML: state on `state`, the wrist camera raw on `wrist_image` (a centred
    crop, area resize), the scene camera compressed on `scene_image` (bilinear), commands on `cmd`."""
    return {
        "name": "camera_probe",
        "kind": "arm",
        "task": TASK,
        "dt": DT,
        "dt_tolerance": 1e-4,
        "staleness_timeout": staleness_timeout,
        "observations": [{"name": name, "source": f"state.{name}", "unit": "1"} for name in OBS],
        "inputs": [
            {"name": "state", "type": "std_msgs/msg/Float32MultiArray", "labels": list(OBS)},
            {"name": "wrist_image", "type": "sensor_msgs/msg/Image", "camera": "wrist"},
            {"name": "scene_image", "type": "sensor_msgs/msg/CompressedImage", "camera": "scene", "resize": "bilinear"},
        ],
        "actions": [
            {"name": name, "unit": "1", "low": -ACTION_BOUND, "high": ACTION_BOUND, "safe": SAFE} for name in ACTIONS
        ],
        "commands": [
            {
                "type": "std_msgs/msg/Float32MultiArray",
                "topic": "cmd",
                "fields": [{"action": name, "field": f"data[{i}]"} for i, name in enumerate(ACTIONS)],
            }
        ],
        **overrides,
    }


def write_probe_profile(path: Path, staleness_timeout: float = 1.0) -> Path:
    path.write_text(yaml.safe_dump(probe_profile(staleness_timeout), sort_keys=False))
    return path


def block_frame(height: int, width: int, means: tuple[int, ...], border: int = 255) -> np.ndarray:
    """A `(height, width, channels)` frame whose centred square's 2x2 blocks each average to the channel's value
    in `means` ([[m - 2, m + 2], [m, m]] per block), and `border` outside the square: an area resize of the square
    to half its size is `means` everywhere, and a wrong crop shows in the mean."""
    side = min(height, width)
    frame = np.full((height, width, len(means)), border, dtype=np.uint8)
    block = np.stack([np.array([[m - 2, m + 2], [m, m]]) for m in means], axis=-1).astype(np.uint8)
    square = np.tile(block, (side // 2, side // 2, 1))
    top, left = (height - side) // 2, (width - side) // 2
    frame[top : top + side, left : left + side] = square
    return frame
