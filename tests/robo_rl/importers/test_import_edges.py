"""`robo-rl import` at its edges (issue 34): it never writes a file it has not checked, its tolerance is relative to
each action's range, clips are intersected and never replaced, Isaac Lab's defaults for what a config leaves out
are followed, and every input it cannot use is one line naming the file (exit 2)."""

from __future__ import annotations

import base64
import importlib.util
import json
import pickle
import shlex
import sys
import types
import zipfile
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import onnxruntime as ort
import pytest
from gymnasium import spaces

from robo_rl.artifact import PolicyArtifact
from robo_rl.cli.main import build_parser, main
from robo_rl.export.onnx import read_metadata
from robo_rl.importers.sb3 import load_sb3, sample_obs, sb3_predict

sb3 = pytest.importorskip("stable_baselines3")
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize  # noqa: E402


def _helpers() -> Any:
    """tests/robo_rl/importers/foreign_policies.py (pytest's importlib mode puts no test folder on sys.path)."""
    spec = importlib.util.spec_from_file_location("foreign_policies", Path(__file__).with_name("foreign_policies.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


foreign = _helpers()
JOINTS, N = foreign.JOINTS, len(foreign.JOINTS)
JOINT_FLAG = ",".join(JOINTS)
PRESSURE_MEAN, PRESSURE_VAR = 1013.2537, 0.04
"""A barometer's statistics: a mean of about 1013 hPa over a spread of 0.2 hPa (float32 keeps 6e-5 hPa of it)."""


class Weather(gym.Env):
    """Three observations, a barometer among them (hPa), and one bounded action of `bound` either side."""

    def __init__(self, bound: float = 2.0, obs_width: int = 3) -> None:
        self.observation_space = spaces.Box(
            np.array([800.0] + [-5.0] * (obs_width - 1), dtype=np.float32),
            np.array([1100.0] + [5.0] * (obs_width - 1), dtype=np.float32),
        )
        self.action_space = spaces.Box(-bound, bound, shape=(1,), dtype=np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        return np.array([PRESSURE_MEAN, 0.0, 0.0], dtype=np.float32), {}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict]:
        return np.array([PRESSURE_MEAN, 0.0, 0.0], dtype=np.float32), 0.0, False, True, {}


class Torque(Weather):
    """Three observations within ±1 (the actor's tanh stays off its rails) and one torque of ±`bound` N·m."""

    def __init__(self, bound: float) -> None:
        super().__init__(bound)
        self.observation_space = spaces.Box(-1.0, 1.0, shape=(3,), dtype=np.float32)


WEATHER_FLAGS = ["--dt", "0.1", "--obs-names", "pressure,x,y", "--obs-units", "hPa,m,m", "--action-names", "u"]


def _barometer_model(folder: Path, algo: str = "sac") -> tuple[Path, Path]:
    """An untrained SB3 model (seeded) on `Weather` and VecNormalize statistics with the barometer's mean."""
    model = getattr(sb3, algo.upper())("MlpPolicy", Weather(), seed=0, device="cpu", buffer_size=100)
    model.save(folder / f"{algo}.zip")
    venv = VecNormalize(DummyVecEnv([Weather]), norm_reward=False, clip_obs=10.0)
    venv.obs_rms.mean = np.array([PRESSURE_MEAN, 0.1, -0.2])
    venv.obs_rms.var = np.array([PRESSURE_VAR, 1.0, 2.0])
    venv.save(str(folder / "stats.pkl"))
    return folder / f"{algo}.zip", folder / "stats.pkl"


def _near_the_mean(count: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    pressure = PRESSURE_MEAN + rng.uniform(-3, 3, count) * np.sqrt(PRESSURE_VAR)
    return np.stack([pressure, rng.uniform(-2, 2, count), rng.uniform(-2, 2, count)], axis=1).astype(np.float32)


def _run(path: Path, obs: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(["action"], {"obs": obs.astype(np.float32)})[0].astype(np.float64)


def _one_line_naming(capsys: pytest.CaptureFixture[str], path: Path) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert str(path) in err, err
    return err


# --- D1: VecNormalize's mean in two float32 parts ----------------------------------------------------------------


def test_vecnormalize_with_a_large_mean_and_a_small_spread_matches_sb3_in_float64(tmp_path: Path) -> None:
    model, stats = _barometer_model(tmp_path)
    out = tmp_path / "p.onnx"
    assert main(["import", str(model), "--vecnormalize", str(stats), *WEATHER_FLAGS, "-o", str(out)]) == 0
    policy = load_sb3(model, vec_normalize=stats)
    obs = _near_the_mean(512)
    # the normalizer alone against SB3's own normalize_obs (float64 arithmetic, then float32)
    import torch

    with torch.no_grad():
        folded = policy.actor.normalizer(torch.as_tensor(obs)).double().numpy()
    reference = policy.vec_normalize.normalize_obs(obs).astype(np.float64)
    assert np.max(np.abs(folded - reference)) <= 2e-6
    # the whole file: SB3's predict on the same observations, within 1e-5 of the action's half-width (2)
    assert np.max(np.abs(_run(out, obs) - sb3_predict(policy, obs))) / 2.0 <= 1e-5


# --- D2: nothing is written before the parity check ---------------------------------------------------------------


def test_a_refused_import_writes_nothing_and_keeps_the_good_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model, stats = _barometer_model(tmp_path)
    out = tmp_path / "policy.onnx"
    flags = ["import", str(model), "--vecnormalize", str(stats), *WEATHER_FLAGS]
    assert main([*flags, "-o", str(out)]) == 0
    good = out.read_bytes()
    policy = load_sb3(model, vec_normalize=stats)
    checked = sample_obs(policy, 512)
    assert np.max(np.abs(_run(out, checked) - sb3_predict(policy, checked))) > 0  # so --tolerance 0 refuses it
    capsys.readouterr()
    assert main([*flags, "--tolerance", "0", "-o", str(out)]) == 2
    assert "differs from" in _one_line_naming(capsys, model)
    assert out.read_bytes() == good  # the good file is still there, whole
    assert main([*flags, "--tolerance", "0", "-o", str(tmp_path / "new.onnx")]) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["policy.onnx", "sac.zip", "stats.pkl"]


# --- D3, D4, D5: Isaac Lab's action term ------------------------------------------------------------------------


def _isaac_lab(tmp_path: Path, action_block: str, seed: int = 4) -> tuple[Any, Path]:
    """An rsl_rl actor and an env.yaml whose action term is `action_block` (the observation terms of ENV_YAML)."""
    actor = foreign.export_rsl_rl(tmp_path / "exported.onnx", seed=seed)
    head, _ = foreign.ENV_YAML.split("actions:\n  joint_pos:\n")
    (tmp_path / "env.yaml").write_text(head + "actions:\n  joint_pos:\n" + action_block)
    return actor, tmp_path / "env.yaml"


ACTION_TERM = """\
    class_type: isaaclab.envs.mdp.actions.joint_actions:JointPositionAction
    asset_name: robot
    joint_names: [.*]
    offset: 0.0
    preserve_order: false
    use_default_offset: true
"""


def _expected_targets(actor: Any, obs: np.ndarray, scale: np.ndarray, raw_clip: float | None = None) -> np.ndarray:
    """Isaac Lab's joint targets for robot observations, computed here from the torch actor (ENV_YAML's terms)."""
    import torch

    pose = foreign.default_pose()
    policy_input = obs.copy()
    policy_input[:, 0:3] *= 2.0
    policy_input[:, 3:6] *= 0.25
    policy_input[:, 12 : 12 + N] -= pose
    policy_input[:, 12 + N : 12 + 2 * N] *= 0.05
    policy_input[:, 12 + 2 * N :] = (obs[:, 12 + 2 * N :] - pose) / scale
    with torch.no_grad():
        raw = actor(torch.as_tensor(policy_input, dtype=torch.float32)).double().numpy()
    if raw_clip is not None:
        raw = np.clip(raw, -raw_clip, raw_clip)
    return pose + scale * raw


def _robot_obs(count: int, seed: int = 5, spread: float = 0.3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    pose = foreign.default_pose()
    return np.concatenate(
        [
            rng.normal(0, 0.5, size=(count, 12)),
            pose + rng.normal(0, 0.2, size=(count, N)),
            rng.normal(0, 2.0, size=(count, N)),
            pose + rng.normal(0, spread, size=(count, N)),
        ],
        axis=1,
    )


def _act_rows(path: Path, obs: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    rows = [session.run(["action"], {"obs": row[None]})[0][0] for row in obs.astype(np.float32)]
    return np.asarray(rows, dtype=np.float64)


def test_isaac_lab_scale_dict_missing_joints_gives_them_one(tmp_path: Path) -> None:
    """Isaac Lab fills a scale dict's unmatched joints with 1.0: isaac-sim/IsaacLab,
    source/isaaclab/isaaclab/envs/mdp/actions/joint_actions.py (commit f0ca71b4aa58), JointAction.__init__: the
    scale starts as `torch.ones(num_envs, action_dim)` and only the dict's matches are written into it (the offset
    dict starts at zeros, the clip dict at ±inf)."""
    actor, env_yaml = _isaac_lab(tmp_path, ACTION_TERM + "    scale: {.*_hip_joint: 0.125}\n    clip: null\n")
    out = tmp_path / "go2.onnx"
    flags = ["--env-config", str(env_yaml), "--joint-names", JOINT_FLAG, "--action-low", "-9", "--action-high", "9"]
    assert main(["import", str(tmp_path / "exported.onnx"), *flags, "-o", str(out)]) == 0
    scale = np.array([0.125 if "hip" in j else 1.0 for j in JOINTS])
    obs = _robot_obs(32)
    assert np.max(np.abs(_act_rows(out, obs) - np.clip(_expected_targets(actor, obs, scale), -9, 9))) <= 1e-5


def test_env_yaml_clip_and_action_flags_are_intersected(tmp_path: Path) -> None:
    """Near the default pose (thigh 0.8, calf −1.5 rad) env.yaml's clip [−1.45, 0.85] holds the calves and the
    flags' [−1.6, 0.7] the thighs: the file keeps both."""
    block = ACTION_TERM + "    scale: 0.25\n    clip:\n      .*: [-1.45, 0.85]\n"
    actor, env_yaml = _isaac_lab(tmp_path, block)
    out = tmp_path / "go2.onnx"
    flags = ["--env-config", str(env_yaml), "--joint-names", JOINT_FLAG, "--action-low=-1.6", "--action-high", "0.7"]
    assert main(["import", str(tmp_path / "exported.onnx"), *flags, "-o", str(out)]) == 0
    meta = PolicyArtifact.from_props(read_metadata(out))
    assert meta.action.low == (-1.45,) * N and meta.action.high == (0.7,) * N
    obs = _robot_obs(64)
    expected = np.clip(np.clip(_expected_targets(actor, obs, np.full(N, 0.25)), -1.45, 0.85), -1.6, 0.7)
    got = _act_rows(out, obs)
    assert np.max(np.abs(got - expected)) <= 1e-5
    assert np.any(got <= -1.45 + 1e-6) and np.any(got >= 0.7 - 1e-6)  # both clips engage on these observations


def test_a_clip_dict_for_some_joints_clips_those_joints_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    block = ACTION_TERM + "    scale: 0.25\n    clip:\n      .*_hip_joint: [-0.05, 0.05]\n"
    actor, env_yaml = _isaac_lab(tmp_path, block)
    out = tmp_path / "go2.onnx"
    flags = ["--env-config", str(env_yaml), "--joint-names", JOINT_FLAG]
    # the clip leaves thighs and calves unbounded: their bounds must be supplied, and the error names them
    assert main(["import", str(tmp_path / "exported.onnx"), *flags, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "FL_thigh_joint" in err and "--action-low" in err and not out.exists()
    assert (
        main(["import", str(tmp_path / "exported.onnx"), *flags, "--action-low=-3", "--action-high=3", "-o", str(out)])
        == 0
    )
    hip = np.array(["hip" in j for j in JOINTS])
    meta = PolicyArtifact.from_props(read_metadata(out))
    assert np.array_equal(meta.action.high, np.where(hip, 0.05, 3.0))
    obs = _robot_obs(64)
    expected = np.clip(
        _expected_targets(actor, obs, np.full(N, 0.25)), np.where(hip, -0.05, -3), np.where(hip, 0.05, 3)
    )
    assert np.max(np.abs(_act_rows(out, obs) - expected)) <= 1e-5


# --- D6: a tolerance relative to the action's range ---------------------------------------------------------------


def test_the_tolerance_is_relative_to_each_actions_half_width(tmp_path: Path) -> None:
    model = sb3.TD3("MlpPolicy", Torque(bound=1000.0), seed=1, device="cpu", buffer_size=100)
    model.save(tmp_path / "td3.zip")
    out = tmp_path / "p.onnx"
    assert main(["import", str(tmp_path / "td3.zip"), *WEATHER_FLAGS, "-o", str(out)]) == 0
    policy = load_sb3(tmp_path / "td3.zip")
    obs = sample_obs(policy, 512)
    difference = np.max(np.abs(_run(out, obs) - sb3_predict(policy, obs)))
    assert difference > 1e-5  # float32 rounding at ±1000 N·m: an absolute 1e-5 would have refused this file
    assert difference / 1000.0 <= 1e-5


# --- D7: action bounds on an SB3 zip change the graph as they change the metadata ---------------------------------


def test_action_bounds_on_an_sb3_zip_clip_the_graph_as_the_metadata_says(tmp_path: Path) -> None:
    model = sb3.TD3("MlpPolicy", Weather(bound=2.0), seed=3, device="cpu", buffer_size=100)
    model.save(tmp_path / "td3.zip")
    out = tmp_path / "p.onnx"
    flags = [*WEATHER_FLAGS, "--action-low=-1", "--action-high", "1.5"]
    assert main(["import", str(tmp_path / "td3.zip"), *flags, "-o", str(out)]) == 0
    meta = PolicyArtifact.from_props(read_metadata(out))
    assert meta.action.low == (-1.0,) and meta.action.high == (1.5,)
    policy = load_sb3(tmp_path / "td3.zip")
    obs = np.random.default_rng(0).normal(0, 200, size=(256, 3)).astype(np.float32)
    obs[:, 0] += 1000.0
    got, sb3_actions = _run(out, obs), sb3_predict(policy, obs)
    assert np.all(got >= -1.0 - 1e-6) and np.all(got <= 1.5 + 1e-6)
    assert np.any(sb3_actions < -1.0) or np.any(sb3_actions > 1.5)  # SB3 alone goes past the narrower bounds
    assert np.max(np.abs(got - np.clip(sb3_actions, -1.0, 1.5))) <= 1e-5
    # wider bounds than the model's box cannot widen it: the metadata keeps what the graph can output
    assert (
        main(
            ["import", str(tmp_path / "td3.zip"), *WEATHER_FLAGS, "--action-low=-5", "--action-high=5", "-o", str(out)]
        )
        == 0
    )
    meta = PolicyArtifact.from_props(read_metadata(out))
    assert meta.action.low == (-2.0,) and meta.action.high == (2.0,)


# --- D8 and the unclear messages: one line naming the file, exit 2 -----------------------------------------------


@pytest.mark.parametrize(("saved", "algo"), [("dqn", "ppo"), ("ppo", "sac"), ("sac", "ppo"), ("td3", "a2c")])
def test_an_algo_that_does_not_match_the_zip_is_one_line(
    saved: str, algo: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env: Any = "CartPole-v1" if saved == "dqn" else Weather()
    options = {} if saved in ("ppo", "a2c") else {"buffer_size": 100}
    getattr(sb3, saved.upper())("MlpPolicy", env, seed=0, device="cpu", **options).save(tmp_path / "m.zip")
    code = main(["import", str(tmp_path / "m.zip"), "--algo", algo, *WEATHER_FLAGS, "-o", str(tmp_path / "o.onnx")])
    assert code == 2
    err = _one_line_naming(capsys, tmp_path / "m.zip")
    assert saved.upper() in err
    assert not (tmp_path / "o.onnx").exists()


def _fake_class(module: str, name: str) -> str:
    """The `policy_class` entry of SB3's `data` for a class of `module` (a class pickled by reference, base64, as
    SB3's save writes it), made with stand-in modules so that the package itself need not be installed."""
    parts = module.split(".")
    packages = [".".join(parts[: i + 1]) for i in range(len(parts))]
    assert not any(p in sys.modules for p in packages), "the real package is installed: use it instead"
    cls = type(name, (), {"__module__": module, "__qualname__": name})
    for package in packages:
        sys.modules[package] = types.ModuleType(package)
    sys.modules[module].__dict__[name] = cls
    try:
        return base64.b64encode(pickle.dumps(cls)).decode()
    finally:
        for package in packages:
            del sys.modules[package]


def _renamed_policy_class(source: Path, target: Path, module: str, name: str) -> None:
    with zipfile.ZipFile(source) as archive:
        members = {n: archive.read(n) for n in archive.namelist()}
    data = json.loads(members["data"])
    data["policy_class"] = {
        ":type:": "<class 'abc.ABCMeta'>",
        ":serialized:": _fake_class(module, name),
        "__module__": module,
        "__doc__": None,
    }
    members["data"] = json.dumps(data).encode()
    with zipfile.ZipFile(target, "w") as archive:
        for member, content in members.items():
            archive.writestr(member, content)


@pytest.mark.parametrize(
    ("module", "name", "what"),
    [
        ("sb3_contrib.common.recurrent.policies", "RecurrentActorCriticPolicy", "RecurrentPPO"),
        ("sb3_contrib.tqc.policies", "TQCPolicy", "TQC"),
    ],
)
def test_sb3_contrib_zips_are_refused_saying_so(
    module: str, name: str, what: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sb3.PPO("MlpPolicy", Weather(), seed=0, device="cpu").save(tmp_path / "ppo.zip")
    zip_path = tmp_path / "contrib.zip"
    _renamed_policy_class(tmp_path / "ppo.zip", zip_path, module, name)
    for extra in ([], ["--algo", "ppo"]):
        assert main(["import", str(zip_path), *extra, *WEATHER_FLAGS, "-o", str(tmp_path / "o.onnx")]) == 2
        err = _one_line_naming(capsys, zip_path)
        assert what in err and "not supported" in err and "--algo" not in err


def test_a_vecnormalize_pickle_naming_an_unimportable_class_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model, _ = _barometer_model(tmp_path)
    cases = {
        "module.pkl": b"cno_such_package_robo_rl\nVecNormalize\n.",
        "class.pkl": b"cstable_baselines3.common.vec_env\nNoSuchVecNormalize\n.",
        "junk.pkl": b"\x80\x04garbage",
    }
    for name, content in cases.items():
        (tmp_path / name).write_bytes(content)
        flags = ["--vecnormalize", str(tmp_path / name), *WEATHER_FLAGS, "-o", str(tmp_path / "o.onnx")]
        assert main(["import", str(model), *flags]) == 2
        _one_line_naming(capsys, tmp_path / name)
    assert not (tmp_path / "o.onnx").exists()


def test_vecnormalize_statistics_of_another_observation_space_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model, _ = _barometer_model(tmp_path)
    other = VecNormalize(DummyVecEnv([lambda: gym.make("Pendulum-v1")]))  # 3 observations too, other bounds
    other.save(str(tmp_path / "pendulum.pkl"))
    flags = ["--vecnormalize", str(tmp_path / "pendulum.pkl"), *WEATHER_FLAGS, "-o", str(tmp_path / "o.onnx")]
    assert main(["import", str(model), *flags]) == 2
    assert "observation space" in _one_line_naming(capsys, tmp_path / "pendulum.pkl")


def test_a_zip_with_damaged_contents_says_which_member(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model, _ = _barometer_model(tmp_path)
    raw = bytearray(model.read_bytes())
    with zipfile.ZipFile(model) as archive:
        info = archive.getinfo("policy.pth")
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    raw[start + info.compress_size // 2] ^= 0xFF
    damaged = tmp_path / "damaged.zip"
    damaged.write_bytes(bytes(raw))
    for extra in ([], ["--algo", "sac"]):
        assert main(["import", str(damaged), *extra, *WEATHER_FLAGS, "-o", str(tmp_path / "o.onnx")]) == 2
        err = _one_line_naming(capsys, damaged)
        assert "policy.pth" in err and "damaged" in err and "wasn't a zip-file" not in err
    truncated = tmp_path / "truncated.zip"
    truncated.write_bytes(model.read_bytes()[:-200])
    assert main(["import", str(truncated), *WEATHER_FLAGS, "-o", str(tmp_path / "o.onnx")]) == 2
    assert "zip" in _one_line_naming(capsys, truncated)


@pytest.mark.parametrize("content", [b"\xff\xfe\x00binary\x00", b"sim: {dt: [0.005\n", b"- just\n- a list\n"])
def test_an_env_config_that_is_not_yaml_names_the_file(
    content: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    foreign.export_rsl_rl(tmp_path / "p.onnx")
    (tmp_path / "env.yaml").write_bytes(content)
    flags = ["--env-config", str(tmp_path / "env.yaml"), "--joint-names", JOINT_FLAG]
    assert main(["import", str(tmp_path / "p.onnx"), *flags, "-o", str(tmp_path / "o.onnx")]) == 2
    _one_line_naming(capsys, tmp_path / "env.yaml")


def test_bad_values_inside_the_env_config_name_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    flags = ["--joint-names", JOINT_FLAG, "--action-low=-3", "--action-high=3", "-o", str(tmp_path / "o.onnx")]
    for block in (
        "    scale: {.*: fast}\n    clip: null\n",
        "    scale: 0.25\n    clip:\n      .*: 2.5\n",
        "    scale: {'[': 0.25}\n    clip: null\n",
    ):
        _, env_yaml = _isaac_lab(tmp_path, ACTION_TERM + block)
        assert main(["import", str(tmp_path / "exported.onnx"), "--env-config", str(env_yaml), *flags]) == 2
        _one_line_naming(capsys, env_yaml)


def test_every_missing_flag_is_named_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    foreign.export_rsl_rl(tmp_path / "plain.onnx", obs_size=4, action_size=2, seed=1)
    assert main(["import", str(tmp_path / "plain.onnx"), "-o", str(tmp_path / "o.onnx")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    for flag in ("--obs-names", "--action-names", "--action-low", "--action-high", "--dt"):
        assert flag in err, flag


def test_the_import_help_names_only_commands_that_exist(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["import", "--help"])
    text = capsys.readouterr().out
    commands = [part for part in text.split("`") if part.startswith("robo-rl ") and "import" not in part]
    assert commands, "the help names the commands that take the file"
    for command in commands:
        build_parser().parse_args(shlex.split(command)[1:])  # exits (SystemExit 2) on a flag that does not exist


def test_a_negative_or_nan_tolerance_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for value in ("-1", "nan"):
        code = main(["import", "x.zip", "--tolerance", value, "-o", str(tmp_path / "o.onnx")])
        assert code == 2 and "--tolerance" in capsys.readouterr().err


# --- Not stated before: the last_action rebuild and the run's clip_actions ---------------------------------------


def test_last_action_and_clip_actions_are_stated_and_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    actor, env_yaml = _isaac_lab(tmp_path, ACTION_TERM + "    scale: 0.25\n    clip: null\n", seed=6)
    (tmp_path / "agent.yaml").write_text("seed: 42\nclip_actions: 0.1\nnum_steps_per_env: 24\n")
    out = tmp_path / "go2.onnx"
    flags = ["--env-config", str(env_yaml), "--joint-names", JOINT_FLAG, "--action-low=-9", "--action-high=9"]
    assert main(["import", str(tmp_path / "exported.onnx"), *flags, "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "clip_actions 0.1" in printed and "last_action" in printed
    config = json.loads(PolicyArtifact.from_props(read_metadata(out)).task_config or "{}")["imported"]
    assert config["clip_actions"] == 0.1 and "target sent" in config["last_action"]
    obs = _robot_obs(64)
    expected = _expected_targets(actor, obs, np.full(N, 0.25), raw_clip=0.1)  # the runner clipped the raw output
    assert np.max(np.abs(_act_rows(out, obs) - expected)) <= 1e-5
    assert np.max(np.abs(expected - _expected_targets(actor, obs, np.full(N, 0.25)))) > 1e-3  # the clip engages
    # without agent.yaml nothing says it: the import assumes none and says so
    (tmp_path / "agent.yaml").unlink()
    assert main(["import", str(tmp_path / "exported.onnx"), *flags, "-o", str(out)]) == 0
    assert "clip_actions None" in capsys.readouterr().out
    config = json.loads(PolicyArtifact.from_props(read_metadata(out)).task_config or "{}")["imported"]
    assert config["clip_actions"] is None
