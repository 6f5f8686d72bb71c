"""`robo-rl import` of rsl_rl / Isaac Lab / mjlab ONNX policies (normalizer inside, action mapping outside): the
folds match an independent computation from the torch actor, the metadata names what a robot publishes, the draft
profile loads and the deploy runtime accepts the policy with it, the firmware export takes the file, and what is
missing is named."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

from robo_rl.artifact import PolicyArtifact
from robo_rl.cli.main import main
from robo_rl.export.onnx import read_metadata
from robo_rl.firmware_export.build import build_host
from robo_rl.firmware_export.codegen import generate_c
from robo_rl.firmware_export.onnx_reader import load_policy
from robo_rl.real.profile import load_profile
from robo_rl.real.runtime import PolicyRuntime


def _helpers() -> Any:
    """tests/robo_rl/importers/foreign_policies.py (pytest's importlib mode puts no test folder on sys.path)."""
    spec = importlib.util.spec_from_file_location("foreign_policies", Path(__file__).with_name("foreign_policies.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


foreign = _helpers()
ENV_YAML, JOINTS, OBS_SIZE = foreign.ENV_YAML, foreign.JOINTS, foreign.OBS_SIZE
add_mjlab_metadata, default_pose = foreign.add_mjlab_metadata, foreign.default_pose
export_rsl_rl = foreign.export_rsl_rl
JOINT_FLAG = ",".join(JOINTS)
N = len(JOINTS)


def _run(actor: torch.nn.Module, inputs: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return actor(torch.as_tensor(inputs, dtype=torch.float32)).double().numpy()


def _session(path: Path) -> ort.InferenceSession:
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def _act(path: Path, obs: np.ndarray) -> np.ndarray:
    session = _session(path)
    return np.array([session.run(["action"], {"obs": row[None]})[0][0] for row in obs.astype(np.float32)])


def _robot_obs(count: int, seed: int = 0) -> np.ndarray:
    """What a robot publishes: base velocities, gravity, command, absolute joint angles, velocities, last targets."""
    rng = np.random.default_rng(seed)
    base = rng.normal(0, 0.5, size=(count, 12))
    angles = default_pose() + rng.normal(0, 0.2, size=(count, N))
    velocities = rng.normal(0, 2.0, size=(count, N))
    targets = default_pose() + rng.normal(0, 0.3, size=(count, N))
    return np.concatenate([base, angles, velocities, targets], axis=1)


@pytest.fixture(scope="module")
def mjlab(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("mjlab")
    actor = export_rsl_rl(folder / "policy.onnx")
    add_mjlab_metadata(folder / "policy.onnx", action_scale=0.25)
    out = folder / "go.onnx"
    flags = "--dt 0.02 --action-low -3 --action-high 3 --task go/walk".split()
    code = main(["import", str(folder / "policy.onnx"), *flags, "-o", str(out)])
    return {"folder": folder, "actor": actor, "out": out, "code": code}


def test_mjlab_policy_takes_what_the_robot_publishes_and_outputs_joint_targets(mjlab: dict[str, Any]) -> None:
    assert mjlab["code"] == 0
    obs = _robot_obs(48)
    pose = np.round(default_pose(), 3)  # mjlab writes the default pose with 3 decimals
    # what mjlab computed in simulation: joint_pos_rel, joint_vel_rel, last_action = the raw output (target −
    # default) / scale; the target = default + scale × raw
    policy_input = obs.copy()
    policy_input[:, 12 : 12 + N] -= pose
    policy_input[:, 12 + 2 * N :] = (obs[:, 12 + 2 * N :] - pose) / 0.25
    expected = np.clip(pose + 0.25 * _run(mjlab["actor"], policy_input), -3, 3)
    assert np.max(np.abs(_act(mjlab["out"], obs) - expected)) <= 1e-5


def test_mjlab_import_names_entries_and_keeps_the_source_metadata(mjlab: dict[str, Any]) -> None:
    props = read_metadata(mjlab["out"])
    meta = PolicyArtifact.from_props(props)
    assert meta.obs.dim == OBS_SIZE and meta.action.names[0] == "FL_hip_joint_target"
    assert meta.obs.names[12] == "FL_hip_joint_pos" and meta.obs.units[12] == "rad"
    assert meta.obs.names[-1] == "previous_RR_calf_joint_target" and meta.obs.units[12 + N] == "rad/s"
    assert meta.dt == pytest.approx(0.02) and meta.task == "go/walk" and meta.action.low == (-3.0,) * N
    assert props["joint_names"].startswith("FL_hip_joint,") and "mjlab" in (meta.task_config or "")


def test_the_draft_profile_loads_and_the_runtime_accepts_the_policy_with_it(mjlab: dict[str, Any]) -> None:
    profile = load_profile(mjlab["out"].with_suffix(".profile.yaml"))
    assert mjlab["out"].with_suffix(".profile.yaml").read_text().startswith("# DRAFT robot profile")
    runtime = PolicyRuntime(mjlab["out"], profile)  # raises on any mismatch of names, units, bounds, dt, task
    assert runtime.obs_dim == OBS_SIZE
    sources = {o.name: o.source for o in profile.observations}
    assert sources["FR_hip_joint_pos"] == "joint_states.position[3]"
    assert sources["previous_FL_hip_joint_target"] == "previous_action[0].FL_hip_joint_target"
    assert sources["base_ang_vel_z"] == "odom.twist.twist.angular.z"
    assert profile.commands[0].joint_names == JOINTS
    assert [a.safe for a in profile.actions] == pytest.approx(np.round(default_pose(), 3).tolist())


def test_the_firmware_export_takes_the_imported_file(mjlab: dict[str, Any]) -> None:
    host = build_host(generate_c(load_policy(mjlab["out"]), "go"), mjlab["folder"] / "c")
    obs = _robot_obs(64, seed=2).astype(np.float32)
    actions, codes = host(obs)
    assert np.all(codes == 0) and np.max(np.abs(actions - _act(mjlab["out"], obs))) <= 1e-5


def test_isaac_lab_env_config_folds_scales_offsets_and_clip(tmp_path: Path) -> None:
    actor = export_rsl_rl(tmp_path / "exported.onnx", seed=4)
    (tmp_path / "env.yaml").write_text(ENV_YAML)
    out = tmp_path / "go2.onnx"
    config = ["--env-config", str(tmp_path / "env.yaml"), "--joint-names", JOINT_FLAG]
    code = main(["import", str(tmp_path / "exported.onnx"), *config, "-o", str(out)])
    assert code == 0
    meta = PolicyArtifact.from_props(read_metadata(out))
    assert meta.dt == pytest.approx(0.005 * 4) and meta.action.low == (-2.5,) * N and meta.action.high == (2.5,) * N
    assert meta.obs.names[9:12] == ("command_lin_vel_x", "command_lin_vel_y", "command_ang_vel_z")
    obs = _robot_obs(48, seed=5)
    pose = default_pose()
    scale = np.array([0.125 if "hip" in j else 0.25 for j in JOINTS])  # the config's {.*_hip_joint: 0.125, .*: 0.25}
    policy_input = obs.copy()
    policy_input[:, 0:3] *= 2.0  # base_lin_vel scale 2
    policy_input[:, 3:6] *= 0.25  # base_ang_vel scale 0.25
    policy_input[:, 12 : 12 + N] -= pose
    policy_input[:, 12 + N : 12 + 2 * N] *= 0.05  # joint_vel scale 0.05
    policy_input[:, 12 + 2 * N :] = (obs[:, 12 + 2 * N :] - pose) / scale
    expected = np.clip(pose + scale * _run(actor, policy_input), -2.5, 2.5)
    assert np.max(np.abs(_act(out, obs) - expected)) <= 1e-5
    assert load_profile(out.with_suffix(".profile.yaml")).dt == pytest.approx(0.02)


def test_a_plain_rsl_rl_file_needs_names_dt_and_bounds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    actor = export_rsl_rl(tmp_path / "plain.onnx", obs_size=4, action_size=2, seed=1)
    out = tmp_path / "plain_robo_rl.onnx"
    assert main(["import", str(tmp_path / "plain.onnx"), "-o", str(out)]) == 2
    assert "supply --obs-names" in capsys.readouterr().err
    assert main(["import", str(tmp_path / "plain.onnx"), "--obs-names", "a,b,c,d", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--action-names with 2" in err and "--action-low" in err and "--dt" in err
    flags = ["--obs-names", "a,b,c,d", "--action-names", "u,v", "--action-low=-1,-2", "--action-high", "1,0.5"]
    assert main(["import", str(tmp_path / "plain.onnx"), *flags, "--dt", "0.01", "-o", str(out)]) == 0
    obs = np.random.default_rng(0).normal(0, 3, size=(64, 4))
    expected = np.clip(_run(actor, obs), [-1, -2], [1, 0.5])  # the bounds only: no joint mapping to fold
    assert np.max(np.abs(_act(out, obs) - expected)) <= 1e-5
    assert not out.with_suffix(".profile.yaml").exists()  # no joints, no draft profile


def test_missing_or_unsupported_information_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    export_rsl_rl(tmp_path / "p.onnx")
    (tmp_path / "env.yaml").write_text(ENV_YAML)
    base = ["import", str(tmp_path / "p.onnx"), "-o", str(tmp_path / "o.onnx")]
    assert main([*base, "--env-config", str(tmp_path / "env.yaml")]) == 2
    assert "supply --joint-names" in capsys.readouterr().err
    add_mjlab_metadata(tmp_path / "p.onnx")
    assert main([*base, "--action-low", "-3", "--action-high", "3"]) == 2
    assert "supply --dt" in capsys.readouterr().err
    model = onnx.load(str(tmp_path / "p.onnx"))
    names = {p.key: p.value for p in model.metadata_props}
    names["observation_names"] = names["observation_names"] + ",height_scan"
    onnx.helper.set_model_props(model, names)
    onnx.save(model, str(tmp_path / "p.onnx"))
    flags = "--dt 0.02 --action-low -3 --action-high 3".split()
    assert main([*base, *flags]) == 2
    assert "--obs-sizes height_scan=N" in capsys.readouterr().err
    assert main([*base, *flags, "--obs-sizes", "height_scan=5"]) == 2
    assert "add up to 53 entries" in capsys.readouterr().err
    recurrent = onnx.helper.make_model(
        onnx.helper.make_graph(
            [onnx.helper.make_node("Add", ["obs", "h_in"], ["actions"])],
            "lstm",
            [onnx.helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, [1, 4]) for n in ("obs", "h_in")],
            [onnx.helper.make_tensor_value_info("actions", onnx.TensorProto.FLOAT, [1, 4])],
        )
    )
    onnx.save(recurrent, str(tmp_path / "r.onnx"))
    assert main(["import", str(tmp_path / "r.onnx"), "-o", str(tmp_path / "r2.onnx"), "--dt", "0.02"]) == 2
    assert "feed-forward" in capsys.readouterr().err
