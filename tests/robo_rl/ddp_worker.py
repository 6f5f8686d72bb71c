"""Worker of tests/robo_rl/test_distributed.py: one rank of a two-process gloo job, run as a script
(`python ddp_worker.py RANK SIZE INIT_FILE OUT`) so that it needs no importable test package. It runs one PPO
update on its own rollout, a normalizer update, five SAC updates on its own batches, a SAC normalizer fit to its
own batch, and a short pixel SAC (DrQ) run on its own `double_integrator/pixels` envs, with everything averaged over
ranks, and saves the resulting parameters to OUT.RANK. The helpers also build the single-process reference.
"""

from __future__ import annotations

import os
import sys

import torch

from robo_rl.algorithms.drq import PixelSAC
from robo_rl.algorithms.ppo import PPO, PPOConfig
from robo_rl.algorithms.sac import SAC, SACConfig
from robo_rl.distributed import ProcessGroupReducer, Reducer, World, update_normalizer
from robo_rl.modules.actor_critic import ActorCritic, PolicyConfig
from robo_rl.modules.normalizer import EmpiricalNormalizer
from robo_rl.storage.replay import Transitions
from robo_rl.storage.rollout import RolloutStorage

OBS, ACT, STEPS, ENVS = 5, 2, 8, 4
PIXEL_STARTS = 16
"""The pixel run's learning_starts: its state normalizer is fitted to this many transitions of each rank."""
PIXEL_SETTINGS = [
    "task.num_envs=2",
    "sac.encoder.channels=8",
    "sac.encoder.features=8",
    "sac.encoder.trained_by=critic",  # DrQ's: the encoder's gradients are averaged with the critics'
    "sac.actor_hidden=[32]",
    "sac.critic_hidden=[32]",
    "sac.normalize_obs=true",
    f"off_policy.learning_starts={PIXEL_STARTS}",
    "off_policy.batch_size=16",
    "off_policy.loop.max_iterations=20",
    "off_policy.loop.eval_interval=0",
]
"""A tiny `double_integrator_pixels_sac` with DrQ's critic-trained encoder: 20 steps of 2 envs, 13 updates."""
PPO_CFG = PPOConfig(num_steps=STEPS, num_minibatches=1, num_epochs=3, schedule="adaptive", max_grad_norm=0.5)


def make_policy() -> ActorCritic:
    torch.manual_seed(0)
    return ActorCritic(OBS, -torch.ones(ACT), torch.ones(ACT), PolicyConfig(actor_hidden=(16,), critic_hidden=(16,)))


def rollout(seed: int, envs: int) -> dict[str, torch.Tensor]:
    """Random but consistent rollout data for `envs` envs (behaviour policy: the initial one)."""
    generator = torch.Generator().manual_seed(seed)
    policy = make_policy()
    obs = torch.randn(STEPS, envs, OBS, generator=generator)
    with torch.no_grad():
        action, distribution = policy.act(obs.flatten(0, 1))
        log_prob, mean, std = distribution.log_prob(action), distribution.mean, distribution.std
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


def storage(data: dict[str, torch.Tensor]) -> RolloutStorage:
    envs = data["obs"].shape[1]
    storage = RolloutStorage(STEPS, envs, OBS, OBS, ACT, "cpu")
    for step in range(STEPS):
        distribution = {name: data[name][step] for name in ("mean", "std")}
        storage.add(distribution, **{name: value[step] for name, value in data.items() if name not in distribution})
    return storage


def sac_batch(seed: int) -> Transitions:
    generator = torch.Generator().manual_seed(seed)
    obs = torch.randn(64, OBS, generator=generator)
    flags = torch.zeros(64, dtype=torch.bool)
    return Transitions(
        obs=obs, critic_obs=obs, actions=torch.rand(64, ACT, generator=generator) * 2 - 1,
        rewards=torch.randn(64, generator=generator), costs=torch.zeros(64),
        next_obs=torch.randn(64, OBS, generator=generator),
        next_critic_obs=obs, terminated=flags, truncated=flags, intervened=flags, is_demo=flags,
    )  # fmt: skip


def pixel_sac(reducer: Reducer) -> dict[str, dict[str, torch.Tensor]]:
    """A short pixel SAC run on this rank's own envs, built as `robo-rl train --nproc` builds it; the encoder's
    state after the build and at the end, and the inner SAC's networks at the end."""
    from robo_rl.api.configs import resolve_config
    from robo_rl.api.envs import env_factory
    from robo_rl.build import build_runner

    cfg = resolve_config("double_integrator_pixels_sac", PIXEL_SETTINGS)
    runner = build_runner(cfg, env_factory(), evaluate=False, reducer=reducer)
    algorithm = runner.algorithm
    assert isinstance(algorithm, PixelSAC)
    start = {k: v.clone() for k, v in algorithm.encoder.state_dict().items()}
    runner.learn()
    networks = {"actor": algorithm.sac.actor, "critic": algorithm.sac.critic, "target": algorithm.sac.target_critic}
    end = {f"{name}.{k}": v.clone() for name, module in networks.items() for k, v in module.state_dict().items()}
    return {"start": start, "encoder": {k: v.clone() for k, v in algorithm.encoder.state_dict().items()}, "sac": end}


def run_rank(rank: int, size: int, init_file: str, out: str) -> None:
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"  # gloo's traffic stays on loopback
    torch.distributed.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=size)
    reducer = ProcessGroupReducer(World(rank, size))
    # PPO: this rank's rollout, gradients and statistics averaged
    policy = make_policy()
    ppo = PPO(policy, PPO_CFG)
    ppo.reducer = reducer
    metrics = ppo.update(storage(rollout(100 + rank, ENVS)))
    normalizer = EmpiricalNormalizer(OBS)
    update_normalizer(normalizer, rollout(100 + rank, ENVS)["obs"].flatten(0, 1), reducer)
    # SAC: several updates on this rank's own batches (different on each rank)
    torch.manual_seed(7 + rank)
    small = SACConfig(actor_hidden=(16,), critic_hidden=(16,))
    sac = SAC(OBS, OBS, -torch.ones(ACT), torch.ones(ACT), small, reducer=reducer)
    for module in (sac.actor, sac.critic, sac.target_critic):  # start equal, as build_runner does
        for tensor in [*module.parameters(), *module.buffers()]:
            torch.distributed.broadcast(tensor.data, src=0)
    torch.distributed.broadcast(sac.log_alpha.data, src=0)
    for step in range(5):
        sac.update(sac_batch(1000 * rank + step))
    # SAC's normalizers fitted once, to this rank's batch merged with the other's
    fitted = SAC(OBS, OBS, -torch.ones(ACT), torch.ones(ACT), SACConfig(normalize_obs=True), reducer=reducer)
    fitted.fit_normalizers(sac_batch(50 + rank))
    fitted_normalizer = fitted.actor.obs_normalizer
    state = {
        "sac_normalizer": (fitted_normalizer.mean.clone(), fitted_normalizer.var.clone(), fitted_normalizer.count),
        "pixel_sac": pixel_sac(reducer),
        "ppo": {k: v.clone() for k, v in policy.state_dict().items()},
        "lr": metrics["learning_rate"],
        "normalizer": (normalizer.mean.clone(), normalizer.var.clone(), normalizer.count.clone()),
        "sac": {k: v.clone() for k, v in sac.actor.state_dict().items()} | {"alpha": sac.log_alpha.detach().clone()},
    }
    torch.save(state, f"{out}.{rank}")
    torch.distributed.barrier()  # leave together: a rank whose peer has already torn gloo down may abort on exit
    torch.distributed.destroy_process_group()


if __name__ == "__main__":
    run_rank(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4])
    # gloo's worker threads can outlive the process group and abort the interpreter's finalization (SIGABRT,
    # "terminate called without an active exception"; pytorch/pytorch#190489): everything is saved, leave now.
    sys.stdout.flush()
    os._exit(0)
