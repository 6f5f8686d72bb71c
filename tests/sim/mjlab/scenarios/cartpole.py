"""mjlab's cart-pole through `robo_rl.sim.from_mjlab`, run by .venv-mjlab's Python (tests/sim/mjlab/conftest.py).

Usage: cartpole.py OUT_DIR [--mjlab-onnx PATH] [--mjlab-onnx-go1 PATH]

Checks, printed as one JSON line at the end (the test asserts on it):
- the batched env contract (`check_step_result`) on 25 steps of random actions, with an episode boundary at
  step 20 (1 s episodes of 0.05 s steps);
- at that boundary, `final_obs` against a twin env whose episodes do not end, stepped with the same seed and
  actions: the twin's observation is the truth the final observation must equal;
- 2 iterations of robo_rl's PPO runner, then the deterministic actor exported with robo_rl's ONNX exporter and
  compared with onnxruntime;
- env-steps per second through the adapter (64 envs, CPU).
With --mjlab-onnx, it also writes an (untrained) cart-pole policy with mjlab's own exporter
(`MjlabOnPolicyRunner.export_policy_to_onnx`) to PATH, for the importer's tests; --mjlab-onnx-go1 writes the Go1
velocity task's, with the metadata mjlab's velocity runner attaches (joint names, default pose, action scale, ...).
"""

from __future__ import annotations

import os

# mjlab runs on the CPU here: Warp must not see a GPU (set before torch, warp and mjlab load).
os.environ["CUDA_VISIBLE_DEVICES"] = ""

import argparse
import json
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import torch

from robo_rl.algorithms.ppo import PPO
from robo_rl.api.configs import preset
from robo_rl.build import build_policy
from robo_rl.envs import INFO_FINAL_OBS, INFO_FINAL_PRIVILEGED_OBS, check_step_result
from robo_rl.export.onnx import PolicyMetadata, export_onnx, onnx_parity, read_metadata
from robo_rl.runners.on_policy import OnPolicyRunner
from robo_rl.sim import from_mjlab
from robo_rl.sim.manager_based import IsaacLabEnv

TASK = "Mjlab-Cartpole-Balance"
NUM_ENVS = 16
EPISODE_S = 1.0
SEED = 3


def random_actions(steps: int, num_envs: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(SEED)
    return 2 * torch.rand(steps, num_envs, 1, generator=generator) - 1


def contract(env: IsaacLabEnv, actions: torch.Tensor) -> dict[str, Any]:
    """Step through 25 steps, checking each result; what the episode boundary looked like."""
    env.reset(seed=SEED)
    boundary: dict[str, Any] = {}
    for step, action in enumerate(actions, start=1):
        result = env.step(action)
        check_step_result(env, result)
        obs, _, terminated, truncated, info = result
        done = terminated | truncated
        if done.any() and not boundary:
            final = info[INFO_FINAL_OBS]
            boundary = {
                "step": step,
                "done": int(done.sum()),
                "terminated": int(terminated.sum()),
                "final_obs": final.tolist(),
                "next_obs": obs.tolist(),
                "min_row_diff": float((final[done] - obs[done]).abs().amax(dim=-1).min()),
                "final_privileged_equals_final_obs": bool(torch.equal(info[INFO_FINAL_PRIVILEGED_OBS], final)),
            }
    return boundary


def twin_obs(actions: torch.Tensor, at_step: int) -> list[list[float]]:
    """The observation at `at_step` of an env like the tested one whose episodes last 100 s."""
    twin = from_mjlab(TASK, NUM_ENVS, seed=SEED, play=True, episode_length_s=100.0)
    twin.reset(seed=SEED)
    obs = torch.empty(0)
    for action in actions[:at_step]:
        obs = twin.step(action)[0]
    return obs.tolist()


def train_and_export(env: IsaacLabEnv, out: Path) -> dict[str, Any]:
    """2 PPO iterations on the env, then robo_rl's ONNX export and its parity with torch."""
    base = preset("pendulum_ppo")
    ppo_cfg = replace(base.ppo, num_steps=16)
    runner_cfg = replace(
        base.runner, loop=replace(base.runner.loop, max_iterations=2, target_return=None, save_every_s=0.0)
    )
    torch.manual_seed(SEED)
    policy = build_policy(base, env)
    before = [p.detach().clone() for p in policy.parameters()]
    runner = OnPolicyRunner(env, policy, PPO(policy, ppo_cfg), runner_cfg, SEED)
    result = runner.learn()
    changed = any(not torch.equal(a, b) for a, b in zip(before, policy.parameters(), strict=True))
    actor = policy.deterministic_actor()
    metadata = PolicyMetadata(env.obs_spec, env.action_spec, env.dt, f"mjlab/{TASK}", "scenario", "scenario")
    path = export_onnx(actor, metadata, out / "policy.onnx")
    obs = env.reset(seed=SEED + 1)
    batch = torch.cat([obs, 3 * torch.randn(64, env.obs_spec.dim)])
    return {
        "iterations": result.iterations,
        "env_steps": result.env_steps,
        "parameters_changed": changed,
        "parity": onnx_parity(actor, path, batch),
        "metadata": read_metadata(path),
        "ppo_num_steps": ppo_cfg.num_steps,
    }


def steps_per_second(num_envs: int = 64, steps: int = 50) -> float:
    env = from_mjlab(TASK, num_envs, seed=SEED)
    env.reset(seed=SEED)
    action = torch.zeros(num_envs, 1)
    env.step(action)  # the first step loads Warp's kernels
    start = time.perf_counter()
    for _ in range(steps):
        env.step(action)
    return num_envs * steps / (time.perf_counter() - start)


def export_with_mjlab(task: str, path: Path) -> dict[str, Any]:
    """An untrained policy of `task` written by mjlab's own exporter (`export_policy_to_onnx`), with the metadata
    its velocity, manipulation and tracking runners attach (`get_base_metadata`: tasks with a "robot" entity
    and a "joint_pos" action; the cart-pole has neither, so its file has none); inputs, outputs, metadata."""
    import onnx
    from mjlab.envs import ManagerBasedRlEnv
    from mjlab.rl import RslRlVecEnvWrapper
    from mjlab.rl.exporter_utils import attach_metadata_to_onnx, get_base_metadata
    from mjlab.rl.runner import MjlabOnPolicyRunner
    from mjlab.tasks.registry import load_env_cfg, load_rl_cfg, load_runner_cls

    cfg = load_env_cfg(task)
    cfg.scene.num_envs = 2
    agent = load_rl_cfg(task)
    env = RslRlVecEnvWrapper(ManagerBasedRlEnv(cfg, device="cpu"), clip_actions=agent.clip_actions)
    runner = (load_runner_cls(task) or MjlabOnPolicyRunner)(env, asdict(agent), None, "cpu")
    path.parent.mkdir(parents=True, exist_ok=True)
    runner.export_policy_to_onnx(str(path.parent), path.name)
    if "robot" in env.unwrapped.scene.entities:
        attach_metadata_to_onnx(str(path), get_base_metadata(env.unwrapped, "local"))
    model = onnx.load(str(path))
    return {
        "path": str(path),
        "inputs": [i.name for i in model.graph.input],
        "outputs": [o.name for o in model.graph.output],
        "metadata": {p.key: p.value for p in model.metadata_props},
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--mjlab-onnx", type=Path, default=None, help="write the cart-pole with mjlab's exporter")
    parser.add_argument("--mjlab-onnx-go1", type=Path, default=None, help="the same for Go1 velocity (metadata)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    started = time.perf_counter()
    env = from_mjlab(TASK, NUM_ENVS, seed=SEED, play=True, episode_length_s=EPISODE_S)
    actions = random_actions(25, NUM_ENVS)
    report: dict[str, Any] = {
        "obs_names": list(env.obs_spec.names),
        "privileged_names": list(env.privileged_obs_spec.names) if env.privileged_obs_spec else None,
        "action_names": list(env.action_spec.names),
        "action_low": list(env.action_spec.low),
        "action_high": list(env.action_spec.high),
        "dt": env.dt,
        "max_episode_steps": env.max_episode_steps,
        "final_obs_source": env.final_obs_source,
    }
    report["boundary"] = contract(env, actions)
    report["twin_obs"] = twin_obs(actions, report["boundary"]["step"]) if report["boundary"] else None
    report["ppo"] = train_and_export(env, args.out_dir)
    report["steps_per_s"] = steps_per_second()
    try:
        from_mjlab("Mjlab-No-Such-Task", 1)
        report["unknown_task_error"] = None
    except ValueError as err:
        report["unknown_task_error"] = str(err)
    if args.mjlab_onnx is not None:
        report["mjlab_onnx"] = export_with_mjlab(TASK, args.mjlab_onnx)
    if args.mjlab_onnx_go1 is not None:
        report["mjlab_onnx_go1"] = export_with_mjlab("Mjlab-Velocity-Flat-Unitree-Go1", args.mjlab_onnx_go1)
    report["seconds"] = time.perf_counter() - started
    print(json.dumps(report))


if __name__ == "__main__":
    main()
