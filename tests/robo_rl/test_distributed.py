"""Data-parallel training with two real processes over gloo: every rank ends with the same parameters, and one
update equals the single-process update on the combined batch; `robo-rl train --nproc 2` end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.multiprocessing as mp

from robo_rl.algorithms.ppo import PPO, PPOConfig
from robo_rl.algorithms.sac import SAC, SACConfig
from robo_rl.distributed import LOCAL, ProcessGroupReducer, World, update_normalizer
from robo_rl.modules.actor_critic import ActorCritic, PolicyConfig
from robo_rl.modules.normalizer import EmpiricalNormalizer
from robo_rl.storage.replay import Transitions
from robo_rl.storage.rollout import RolloutStorage

OBS, ACT, STEPS, ENVS = 5, 2, 8, 4
PPO_CFG = PPOConfig(num_steps=STEPS, num_minibatches=1, num_epochs=3, schedule="adaptive", max_grad_norm=0.5)


def _policy() -> ActorCritic:
    torch.manual_seed(0)
    return ActorCritic(OBS, -torch.ones(ACT), torch.ones(ACT), PolicyConfig(actor_hidden=(16,), critic_hidden=(16,)))


def _rollout(seed: int, envs: int) -> dict[str, torch.Tensor]:
    """Random but consistent rollout data for `envs` envs (behaviour policy: the initial one)."""
    generator = torch.Generator().manual_seed(seed)
    policy = _policy()
    obs = torch.randn(STEPS, envs, OBS, generator=generator)
    with torch.no_grad():
        action, log_prob, mean, std = policy.act(obs.flatten(0, 1))
        values = policy.value(obs.flatten(0, 1))
    shape = (STEPS, envs)
    return {
        "obs": obs,
        "critic_obs": obs,
        "actions": action.view(*shape, ACT),
        "log_probs": log_prob.view(shape),
        "values": values.view(shape),
        "next_values": torch.randn(shape, generator=generator),
        "mean": mean.view(*shape, ACT),
        "std": std.view(*shape, ACT),
        "rewards": torch.randn(shape, generator=generator),
        "terminated": torch.rand(shape, generator=generator) < 0.1,
        "dones": torch.rand(shape, generator=generator) < 0.1,
    }


def _storage(data: dict[str, torch.Tensor]) -> RolloutStorage:
    envs = data["obs"].shape[1]
    storage = RolloutStorage(STEPS, envs, OBS, OBS, ACT, "cpu")
    for step in range(STEPS):
        storage.add(**{name: value[step] for name, value in data.items()})
    return storage


def _sac_batch(seed: int) -> Transitions:
    generator = torch.Generator().manual_seed(seed)
    obs = torch.randn(64, OBS, generator=generator)
    flags = torch.zeros(64, dtype=torch.bool)
    return Transitions(
        obs=obs, critic_obs=obs, actions=torch.rand(64, ACT, generator=generator) * 2 - 1,
        rewards=torch.randn(64, generator=generator), next_obs=torch.randn(64, OBS, generator=generator),
        next_critic_obs=obs, terminated=flags, truncated=flags, intervened=flags, is_demo=flags,
    )  # fmt: skip


def _worker(rank: int, size: int, init_file: str, out: str) -> None:
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"  # gloo's traffic stays on loopback
    torch.distributed.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=size)
    reducer = ProcessGroupReducer(World(rank, size))
    # PPO: this rank's rollout, gradients and statistics averaged
    policy = _policy()
    ppo = PPO(policy, PPO_CFG)
    ppo.reducer = reducer
    metrics = ppo.update(_storage(_rollout(100 + rank, ENVS)))
    normalizer = EmpiricalNormalizer(OBS)
    update_normalizer(normalizer, _rollout(100 + rank, ENVS)["obs"].flatten(0, 1), reducer)
    # SAC: several updates on this rank's own batches (different on each rank)
    torch.manual_seed(7 + rank)
    sac = SAC(OBS, OBS, -torch.ones(ACT), torch.ones(ACT), SACConfig(actor_hidden=(16,), critic_hidden=(16,)))
    for module in (sac.actor, sac.critic, sac.target_critic):  # start equal, as build_runner does
        for tensor in [*module.parameters(), *module.buffers()]:
            torch.distributed.broadcast(tensor.data, src=0)
    torch.distributed.broadcast(sac.log_alpha.data, src=0)
    sac.reducer = reducer
    for step in range(5):
        sac.update(_sac_batch(1000 * rank + step))
    state = {
        "ppo": {k: v.clone() for k, v in policy.state_dict().items()},
        "lr": metrics["learning_rate"],
        "normalizer": (normalizer.mean.clone(), normalizer.var.clone(), normalizer.count.clone()),
        "sac": {k: v.clone() for k, v in sac.actor.state_dict().items()} | {"alpha": sac.log_alpha.detach().clone()},
    }
    torch.save(state, f"{out}.{rank}")
    torch.distributed.destroy_process_group()


@pytest.fixture(scope="module")
def ranks(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    directory = tmp_path_factory.mktemp("ddp")
    mp.start_processes(
        _worker, args=(2, str(directory / "init"), str(directory / "state")), nprocs=2, start_method="spawn"
    )
    return [torch.load(directory / f"state.{rank}") for rank in range(2)]


def test_every_rank_ends_with_the_same_parameters(ranks: list[dict]) -> None:
    for name in ("ppo", "sac"):
        for key, value in ranks[0][name].items():
            torch.testing.assert_close(ranks[1][name][key], value, rtol=0, atol=0)
    assert ranks[0]["lr"] == ranks[1]["lr"]
    lonely = SAC(OBS, OBS, -torch.ones(ACT), torch.ones(ACT), SACConfig(actor_hidden=(16,), critic_hidden=(16,)))
    assert any(not torch.equal(lonely.actor.state_dict()[k], v) for k, v in ranks[0]["sac"].items() if k != "alpha")


def test_ppo_update_matches_one_process_with_the_combined_batch(ranks: list[dict]) -> None:
    data = [_rollout(100 + rank, ENVS) for rank in range(2)]
    combined = {name: torch.cat([d[name] for d in data], dim=1) for name in data[0]}
    policy = _policy()
    ppo = PPO(policy, PPO_CFG)
    metrics = ppo.update(_storage(combined))
    assert metrics["learning_rate"] == pytest.approx(ranks[0]["lr"])
    for key, value in policy.state_dict().items():
        torch.testing.assert_close(ranks[0]["ppo"][key], value, rtol=1e-4, atol=1e-5)
    assert ppo.reducer is LOCAL


def test_normalizer_statistics_are_those_of_the_combined_batch(ranks: list[dict]) -> None:
    both = torch.cat([_rollout(100 + rank, ENVS)["obs"].flatten(0, 1) for rank in range(2)])
    single = EmpiricalNormalizer(OBS)
    single.update(both)
    mean, var, count = ranks[0]["normalizer"]
    torch.testing.assert_close(mean, single.mean, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(var, single.var, rtol=1e-4, atol=1e-6)
    assert float(count) == float(single.count) == 2 * STEPS * ENVS


@pytest.mark.slow
def test_train_with_two_processes_checkpoints_every_rank_and_resumes(tmp_path: Path) -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "GLOO_SOCKET_IFNAME": "lo"}  # loopback only
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
    from robo_rl.cli.tasks import env_factory, resolve_config
    from robo_rl.config import ConfigError
    from robo_rl.runners.build import build_runner

    two = ProcessGroupReducer(World(0, 2))  # the check comes before any collective
    with pytest.raises(ConfigError, match="a person drives one process"):
        build_runner(resolve_config("pendulum_sac", ["hil.teleop=keyboard"]), env_factory(), reducer=two)
    with pytest.raises(ConfigError, match="actor_learner runs in one process"):
        build_runner(resolve_config("pendulum_sac", ["off_policy.actor_learner=true"]), env_factory(), reducer=two)
    with pytest.raises(ValueError, match="need 0 <= rank < size"):
        World(2, 2)
