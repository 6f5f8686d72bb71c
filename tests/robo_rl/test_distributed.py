"""Data-parallel training with two real processes over gloo: every rank ends with the same parameters (pixel SAC's
camera encoder included), and one update equals the single-process update on the combined batch; `robo-rl train
--nproc 2` end to end."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
import torch

from robo_rl.algorithms.drq import PixelSAC
from robo_rl.algorithms.ppo import PPO
from robo_rl.algorithms.sac import SAC, SACConfig
from robo_rl.distributed import LOCAL, ProcessGroupReducer, World
from robo_rl.modules.normalizer import EmpiricalNormalizer

WORKER = Path(__file__).with_name("ddp_worker.py")
LOOPBACK = {"GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1"}  # gloo's traffic stays on loopback


def _load_worker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ddp_worker", WORKER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


W = _load_worker()
OBS, ACT, STEPS, ENVS = W.OBS, W.ACT, W.STEPS, W.ENVS


@pytest.fixture(scope="module")
def ranks(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    directory = tmp_path_factory.mktemp("ddp")
    env = {**os.environ, **LOOPBACK}
    args = [str(directory / "init"), str(directory / "state")]
    workers = [subprocess.Popen([sys.executable, str(WORKER), str(r), "2", *args], env=env) for r in range(2)]
    assert [w.wait(timeout=120) for w in workers] == [0, 0]
    return [torch.load(directory / f"state.{rank}") for rank in range(2)]


def test_every_rank_ends_with_the_same_parameters(ranks: list[dict]) -> None:
    for name in ("ppo", "sac"):
        for key, value in ranks[0][name].items():
            torch.testing.assert_close(ranks[1][name][key], value, rtol=0, atol=0)
    assert ranks[0]["lr"] == ranks[1]["lr"]
    lonely = SAC(OBS, OBS, -torch.ones(ACT), torch.ones(ACT), SACConfig(actor_hidden=(16,), critic_hidden=(16,)))
    assert any(not torch.equal(lonely.actor.state_dict()[k], v) for k, v in ranks[0]["sac"].items() if k != "alpha")


def test_ppo_update_matches_one_process_with_the_combined_batch(ranks: list[dict]) -> None:
    data = [W.rollout(100 + rank, ENVS) for rank in range(2)]
    combined = {name: torch.cat([d[name] for d in data], dim=1) for name in data[0]}
    policy = W.make_policy()
    ppo = PPO(policy, W.PPO_CFG)
    metrics = ppo.update(W.storage(combined))
    assert metrics["learning_rate"] == pytest.approx(ranks[0]["lr"])
    for key, value in policy.state_dict().items():
        torch.testing.assert_close(ranks[0]["ppo"][key], value, rtol=1e-4, atol=1e-5)
    assert ppo.reducer is LOCAL


def test_normalizer_statistics_are_those_of_the_combined_batch(ranks: list[dict]) -> None:
    both = torch.cat([W.rollout(100 + rank, ENVS)["obs"].flatten(0, 1) for rank in range(2)])
    single = EmpiricalNormalizer(OBS)
    single.update(both)
    mean, var, count = ranks[0]["normalizer"]
    torch.testing.assert_close(mean, single.mean, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(var, single.var, rtol=1e-4, atol=1e-6)
    assert float(count) == float(single.count) == 2 * STEPS * ENVS


def test_sac_normalizers_are_fitted_to_every_rank_s_batch(ranks: list[dict]) -> None:
    single = EmpiricalNormalizer(OBS)
    single.update(torch.cat([W.sac_batch(50 + rank).obs for rank in range(2)]))
    for rank in ranks:
        mean, var, count = rank["sac_normalizer"]
        torch.testing.assert_close(mean, single.mean, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(var, single.var, rtol=1e-4, atol=1e-6)
        assert float(count) == float(single.count) == 2 * 64


def test_pixel_sac_ranks_keep_one_camera_encoder(ranks: list[dict]) -> None:
    """Each rank stepped its own envs, yet the encoder, which moves in an extra group of the critic optimizer, and
    its state normalizer, fitted to both ranks' first transitions, end equal on both; and they did move."""
    first, second = (rank["pixel_sac"] for rank in ranks)
    for part in ("encoder", "sac"):
        assert first[part].keys() == second[part].keys()
        for key, value in first[part].items():
            torch.testing.assert_close(second[part][key], value, rtol=0, atol=0, msg=f"{part} {key}")
    start, end = first["start"], first["encoder"]
    cameras = [key for key in end if key.startswith("cameras.")]
    assert cameras and all(not torch.equal(start[key], end[key]) for key in cameras if key.endswith("weight"))
    assert float(end["state_normalizer.count"]) == 2 * W.PIXEL_STARTS  # both ranks' transitions, once


def test_every_network_of_pixel_sac_starts_from_rank_0() -> None:
    """build_runner broadcasts what `algorithm_modules` lists: the encoder and the inner SAC's networks too."""
    from robo_rl.api.configs import resolve_config
    from robo_rl.build import algorithm_modules, build_off_policy
    from robo_rl.sim import make

    env = make("double_integrator/pixels", 2, seed=0)
    algorithm = build_off_policy(resolve_config("double_integrator_pixels_sac", W.PIXEL_SETTINGS), env)
    assert isinstance(algorithm, PixelSAC)
    sac = algorithm.sac
    expected = [algorithm.encoder, sac.actor, sac.critic, sac.target_critic]
    assert sorted(map(id, algorithm_modules(algorithm))) == sorted(map(id, expected))


@pytest.mark.slow
def test_train_with_two_processes_checkpoints_every_rank_and_resumes(tmp_path: Path) -> None:
    env = {**os.environ, **LOOPBACK}
    base = [sys.executable, "-m", "robo_rl.cli.main", "train", "pendulum_ppo", "--quiet", "--runs-root", str(tmp_path)]
    first = subprocess.run([*base, "--nproc", "2", "--max-iterations", "3"], env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr[-2000:]
    (run,) = (tmp_path / "pendulum_ppo").iterdir()
    assert (run / "world_size").read_text().strip() == "2"
    assert (run / "checkpoints" / "latest.pt").is_file() and (run / "checkpoints" / "rank1" / "latest.pt").is_file()
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert rows[-1]["iteration"] == 3 and rows[-1]["env_steps"] == 2 * 3 * 16 * 256  # both ranks' steps
    resume = ["--resume", str(run), "--max-iterations", "5"]
    wrong = subprocess.run([*base[:4], *resume], env=env, capture_output=True, text=True)
    assert wrong.returncode == 2 and "resume it with --nproc 2" in wrong.stderr
    again = subprocess.run([*base[:4], *resume, "--nproc", "2"], env=env, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr[-2000:]
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert rows[-1]["iteration"] == 5


def test_a_person_or_an_actor_learner_cannot_be_split_across_processes() -> None:
    from robo_rl.api.configs import resolve_config
    from robo_rl.api.envs import env_factory
    from robo_rl.build import build_runner
    from robo_rl.config import ConfigError

    two = ProcessGroupReducer(World(0, 2))  # the check comes before any collective
    with pytest.raises(ConfigError, match="a person drives one process"):
        build_runner(resolve_config("pendulum_sac", ["hil.teleop=keyboard"]), env_factory(), reducer=two)
    with pytest.raises(ConfigError, match="actor_learner runs in one process"):
        build_runner(resolve_config("pendulum_sac", ["off_policy.actor_learner=true"]), env_factory(), reducer=two)
    with pytest.raises(ValueError, match="need 0 <= rank < size"):
        World(2, 2)
