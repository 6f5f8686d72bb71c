"""`robo-rl import` of Stable-Baselines3 models: PPO, SAC and TD3 trained briefly with VecNormalize on a Gymnasium
env with asymmetric action bounds and unbounded observations; the artifact computes SB3's own
`predict(normalize_obs(obs), deterministic=True)`, and the deploy runtime and the firmware export take it."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import onnxruntime as ort
import pytest
from gymnasium import spaces

from robo_rl.artifact import PolicyArtifact
from robo_rl.cli.main import main
from robo_rl.export.onnx import read_metadata
from robo_rl.firmware_export.build import build_host
from robo_rl.firmware_export.codegen import generate_c
from robo_rl.firmware_export.onnx_reader import load_policy
from robo_rl.importers.sb3 import load_sb3, sample_obs, sb3_predict
from robo_rl.real.runtime import PolicyRuntime

sb3 = pytest.importorskip("stable_baselines3")
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize  # noqa: E402

LOW, HIGH = np.array([-1.0, -0.5]), np.array([2.0, 0.5])
NAMES = "x,y,target_x,target_y,speed"
FLAGS = ["--dt", "0.1", "--obs-names", NAMES, "--obs-units", "m,m,m,m,m/s", "--action-names", "vx,vy"]


class PointReach(gym.Env):
    """A point driven by a velocity command towards a target; the speed observation is unbounded."""

    def __init__(self) -> None:
        self.observation_space = spaces.Box(
            np.array([-3, -3, -3, -3, -np.inf], dtype=np.float32), np.array([3, 3, 3, 3, np.inf], dtype=np.float32)
        )
        self.action_space = spaces.Box(LOW.astype(np.float32), HIGH.astype(np.float32))
        self.state = np.zeros(5, dtype=np.float32)
        self.steps = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.state = np.concatenate([self.np_random.uniform(-2, 2, 4), [0.0]]).astype(np.float32)
        self.steps = 0
        return self.state.copy(), {}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict]:
        action = np.clip(action, LOW, HIGH)
        self.state[:2] = np.clip(self.state[:2] + 0.1 * action, -3, 3)
        self.state[4] = float(np.linalg.norm(action)) * 10.0
        self.steps += 1
        distance = float(np.linalg.norm(self.state[:2] - self.state[2:4]))
        return self.state.copy(), -distance, distance < 0.1, self.steps >= 50, {}


def _train(algo: str, folder: Path) -> tuple[Path, Path]:
    venv = VecNormalize(DummyVecEnv([PointReach, PointReach]), norm_obs=True, norm_reward=True, clip_obs=4.0)
    venv.seed(0)
    options: dict[str, Any] = {"n_steps": 64, "batch_size": 64} if algo == "ppo" else {"learning_starts": 64}
    model = getattr(sb3, algo.upper())("MlpPolicy", venv, seed=0, device="cpu", **options)
    model.learn(256)
    model.save(folder / f"{algo}.zip")
    venv.save(str(folder / f"{algo}_vecnormalize.pkl"))
    return folder / f"{algo}.zip", folder / f"{algo}_vecnormalize.pkl"


@pytest.fixture(scope="module", params=["ppo", "sac", "td3"])
def imported(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp(request.param)
    model, stats = _train(request.param, folder)
    out = folder / "policy.onnx"
    code = main(["import", str(model), "--vecnormalize", str(stats), *FLAGS, "-o", str(out)])
    return {"algo": request.param, "model": model, "stats": stats, "out": out, "code": code, "folder": folder}


def test_the_artifact_computes_sb3_predict_with_vecnormalize_folded_in(imported: dict[str, Any]) -> None:
    assert imported["code"] == 0
    policy = load_sb3(imported["model"], vec_normalize=imported["stats"])
    assert policy.algorithm == imported["algo"]
    rng = np.random.default_rng(1)
    far = rng.normal(0, 20, size=(64, 5)).astype(np.float32)  # the normalizer's clip and the action box engage
    obs = np.concatenate([sample_obs(policy, 256), far])
    session = ort.InferenceSession(str(imported["out"]), providers=["CPUExecutionProvider"])
    got = session.run(["action"], {"obs": obs})[0]
    expected = sb3_predict(policy, obs)
    assert np.max(np.abs(got - expected)) <= 1e-5
    assert np.all(got >= LOW - 1e-6) and np.all(got <= HIGH + 1e-6)
    # the statistics matter: SB3 on the raw observations acts differently, so a file without them would fail above
    raw, _ = policy.model.predict(obs, deterministic=True)
    assert np.max(np.abs(raw - expected)) > 1e-2


def test_the_metadata_holds_the_supplied_names_and_the_spaces_bounds(imported: dict[str, Any]) -> None:
    meta = PolicyArtifact.from_props(read_metadata(imported["out"]))  # strict: what policy_node reads
    assert meta.obs.names == tuple(NAMES.split(",")) and meta.obs.units[-1] == "m/s"
    assert meta.obs.low[:4] == (-3.0,) * 4 and meta.obs.high[4] == math.inf
    assert meta.action.names == ("vx", "vy") and meta.action.low == tuple(LOW) and meta.action.high == tuple(HIGH)
    assert meta.dt == pytest.approx(0.1) and meta.task == f"imported/sb3_{imported['algo']}"
    assert '"stable-baselines3"' in (meta.task_config or "")


def test_the_deploy_runtime_and_the_firmware_export_take_it(imported: dict[str, Any]) -> None:
    runtime = PolicyRuntime(imported["out"])
    obs = np.array([0.5, -0.2, 1.0, 1.5, 3.0], dtype=np.float32)
    policy = load_sb3(imported["model"], vec_normalize=imported["stats"])
    assert runtime(obs) == pytest.approx(sb3_predict(policy, obs[None])[0], abs=1e-5)
    ir = load_policy(imported["out"])
    host = build_host(generate_c(ir, "imported"), imported["folder"] / "c")
    rows = sample_obs(policy, 128, seed=3)
    c_actions, codes = host(rows)
    assert np.all(codes == 0)
    assert np.max(np.abs(c_actions - sb3_predict(policy, rows))) <= 1e-5


def test_missing_names_and_dt_are_named_in_one_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = sb3.TD3("MlpPolicy", PointReach(), device="cpu")
    model.save(tmp_path / "td3.zip")
    code = main(["import", str(tmp_path / "td3.zip"), "-o", str(tmp_path / "bad.onnx")])
    err = capsys.readouterr().err
    assert code == 2
    assert "--obs-names with 5" in err and "--action-names with 2" in err and "--dt" in err
    assert not (tmp_path / "bad.onnx").exists()
    code = main(["import", str(tmp_path / "td3.zip"), *FLAGS[:2], "--obs-names", "a,b", "-o", "x.onnx"])
    assert code == 2 and "the observation has 5 entries, got 2" in capsys.readouterr().err


def test_what_cannot_be_imported_is_refused_saying_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    discrete = sb3.PPO("MlpPolicy", "CartPole-v1", device="cpu", n_steps=16, batch_size=16)
    discrete.save(tmp_path / "cartpole.zip")
    assert main(["import", str(tmp_path / "cartpole.zip"), *FLAGS, "-o", str(tmp_path / "c.onnx")]) == 2
    assert "only a flat Box can be imported" in capsys.readouterr().err
    (tmp_path / "junk.onnx").write_bytes(b"not a model")
    assert main(["import", str(tmp_path / "junk.onnx"), *FLAGS, "-o", str(tmp_path / "j.onnx")]) == 2
    assert "not an ONNX model" in capsys.readouterr().err


def test_an_sb3_policy_trained_on_a_robo_rl_task_evaluates_like_sb3_in_closed_loop(tmp_path: Path) -> None:
    """SB3 PPO on robo_rl's pendulum through the Gymnasium adapter, imported with the task's names: `robo-rl eval`
    on the file gives the returns SB3's own predict gives on the same initial states."""
    import torch

    from robo_rl.api.evaluation import evaluate_policy_file
    from robo_rl.runners.evaluate import evaluate
    from robo_rl.sim import make
    from robo_rl.sim.gymnasium_adapter import GymnasiumEnv

    venv = VecNormalize(DummyVecEnv([lambda: GymnasiumEnv.from_task("pendulum")]), norm_reward=False)
    model = sb3.PPO("MlpPolicy", venv, n_steps=128, batch_size=64, seed=0, device="cpu")
    model.learn(256)
    model.save(tmp_path / "ppo.zip")
    venv.save(str(tmp_path / "stats.pkl"))
    task = make("pendulum", num_envs=1)
    flags = ["--obs-names", ",".join(task.obs_spec.names), "--obs-units", ",".join(task.obs_spec.units)]
    flags += ["--action-names", ",".join(task.action_spec.names), "--action-units", task.action_spec.units[0]]
    flags += ["--dt", str(task.dt), "--task", "pendulum", "--vecnormalize", str(tmp_path / "stats.pkl")]
    assert main(["import", str(tmp_path / "ppo.zip"), *flags, "-o", str(tmp_path / "ppo.onnx")]) == 0
    imported = evaluate_policy_file(tmp_path / "ppo.onnx", episodes=6, seed=7)
    policy = load_sb3(tmp_path / "ppo.zip", vec_normalize=tmp_path / "stats.pkl")

    def sb3_actor(obs: torch.Tensor) -> torch.Tensor:
        return torch.as_tensor(sb3_predict(policy, obs.numpy()), dtype=torch.float32).reshape(len(obs), -1)

    reference = evaluate(make("pendulum", num_envs=6), sb3_actor, seed=7)
    assert imported.returns == pytest.approx(reference.returns, abs=1e-2)  # episode by episode
    assert len(set(np.round(reference.returns, 1))) > 1  # distinct initial states, not one episode repeated
    assert main(["eval", str(tmp_path / "ppo.onnx"), "--episodes", "2", "--task", "quadrotor/hover"]) == 2


@pytest.mark.parametrize("algo", ["a2c", "ddpg"])
def test_a2c_and_ddpg_zips_are_told_from_ppo_and_td3_and_import_with_parity(algo: str, tmp_path: Path) -> None:
    """A2C saves PPO's policy class and DDPG TD3's; their hyperparameters tell them apart."""
    getattr(sb3, algo.upper())("MlpPolicy", PointReach(), device="cpu", seed=2).save(tmp_path / "model.zip")
    assert main(["import", str(tmp_path / "model.zip"), *FLAGS, "-o", str(tmp_path / "p.onnx")]) == 0
    policy = load_sb3(tmp_path / "model.zip")
    assert policy.algorithm == algo
    obs = sample_obs(policy, 128)
    got = ort.InferenceSession(str(tmp_path / "p.onnx")).run(["action"], {"obs": obs})[0]
    assert np.max(np.abs(got - sb3_predict(policy, obs))) <= 1e-5
