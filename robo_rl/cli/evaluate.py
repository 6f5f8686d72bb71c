"""`robo-rl eval`: deterministic evaluation of a trained run (torch checkpoint or its policy.onnx)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

from robo_rl.build import check_device
from robo_rl.cli.onnx_policy import onnx_actor, policy_artifact
from robo_rl.cli.progress import describe_evaluation, terminal
from robo_rl.cli.run_loading import add_task_param_argument, load_trained, make_env
from robo_rl.cli.threads import add_threads_argument
from robo_rl.envs import BatchedEnv
from robo_rl.runners.best_policy import BEST_CHECKPOINT
from robo_rl.runners.evaluate import EvalResult, evaluate
from robo_rl.runners.flight_plot import plot_flights, record_positions

SIMULATORS = ("robo_rl", "l2f")
DEFAULT_EPISODES = 100
L2F_EPISODES = 500


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "eval",
        help="evaluate a trained policy",
        description="Run the deterministic policy of RUN_DIR for --episodes episodes (in parallel) and print the "
        "mean, std, min and max return, and the success rate for tasks that define success (e.g. pendulum: "
        "balanced at the end of the episode). --onnx evaluates RUN_DIR/policy.onnx in onnxruntime instead "
        "of the torch checkpoint, i.e. exactly the artifact that gets deployed. A policy .onnx file (e.g. one "
        "`robo-rl import` made from SB3) is evaluated on its task (--task to choose another registered task); its "
        "observation and action names must be the task's. --sim l2f flies a quadrotor/hover policy (a .onnx file, "
        "or RUN_DIR/policy.onnx) in L2F, the Crazyflie simulator of 'Learning to Fly in Seconds' (PyPI l2f 2.0.18), "
        "from robo_rl's evaluation initial states and judged by robo_rl's hover gate; it prints success %%, crash "
        "%%, steady-state error (cm), episodes and plant.",
    )
    p.add_argument("run_dir", type=Path, help="run directory made by robo-rl train, or a policy .onnx file")
    p.add_argument("--task", help="for a policy .onnx file: the registered task (default: the policy's own)")
    p.add_argument("--episodes", type=int, help="episodes to run (default: 100; 500 with --sim l2f)")
    p.add_argument("--seed", type=int, default=12345, help="seed of the initial states (default: 12345)")
    p.add_argument(
        "--checkpoint",
        type=Path,
        help="checkpoint (default: RUN_DIR/checkpoints/best.pt, the best evaluation, else latest.pt)",
    )
    p.add_argument("--onnx", action="store_true", help="evaluate RUN_DIR/policy.onnx with onnxruntime")
    p.add_argument("--device", default="cpu", help="device for env and policy (default: cpu)")
    p.add_argument(
        "--sim",
        choices=SIMULATORS,
        default="robo_rl",
        help="robo_rl: the policy's own task (default); l2f: fly it in L2F (hover policies with motor actions)",
    )
    p.add_argument(
        "--plant",
        help="with --sim l2f: native (L2F's own Crazyflie, default), robo_rl (L2F's engine with the frame the policy "
        "was trained on) or a frame YAML file",
    )
    add_task_param_argument(p, "for this evaluation, e.g. held-out ranges: --task-param randomization.mass=0.3")
    add_threads_argument(p)
    p.set_defaults(func=main)


def evaluate_run(
    run_dir: Path,
    episodes: int,
    seed: int,
    checkpoint: Path | None = None,
    use_onnx: bool = False,
    device: str = "cpu",
    task_params: Sequence[str] = (),
) -> EvalResult:
    """Evaluate the run's deterministic policy; `task_params` change the task (after the run's own params)."""
    if episodes < 1:
        raise ValueError(f"--episodes must be at least 1, got {episodes}")
    trained = load_trained(run_dir, checkpoint, device)
    env = make_env(trained.cfg, num_envs=episodes, device=device, extra_params=task_params, evaluation=True)
    actor = run_onnx_actor(run_dir, env) if use_onnx else trained.actor
    return evaluate(env, actor, seed=seed)


def run_onnx_actor(run_dir: Path, env: BatchedEnv) -> Callable[[torch.Tensor], torch.Tensor]:
    """RUN_DIR/policy.onnx in onnxruntime, checked to fit `env`'s observation and action sizes."""
    return onnx_actor(run_dir / "policy.onnx", env.obs_spec.dim, env.action_spec.dim)


def plot_run_flights(run_dir: Path, episodes: int, seed: int) -> Path | None:
    """RUN_DIR/flights.png: 3-D position-error paths of `episodes` deterministic flights; None if the task has
    no position error in its observation."""
    trained = load_trained(run_dir)
    env = make_env(trained.cfg, num_envs=episodes, device="cpu", evaluation=True)
    try:
        positions = record_positions(env, trained.actor, seed)
    except ValueError:
        return None
    out = run_dir / "flights.png"
    plot_flights(positions, out, f"{trained.cfg.task.name}: {episodes} evaluation flights")
    return out


def evaluate_policy_file(
    path: Path,
    episodes: int,
    seed: int,
    task: str | None = None,
    device: str = "cpu",
    task_params: Sequence[str] = (),
) -> EvalResult:
    """Evaluate a policy artifact (any robo_rl policy.onnx, imported ones included) on a registered task: the
    policy's own unless `task` is given, built with the task settings the file recorded at training time
    (`robo_rl.task_config`: the observation it was trained with, its frame, its randomization) and then
    `task_params`. The policy's observation and action names must be the task's."""
    from robo_rl.sim import make, names

    if episodes < 1:
        raise ValueError(f"--episodes must be at least 1, got {episodes}")
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such policy file")
    artifact = policy_artifact(path)
    task = task or artifact.task
    if task not in names():
        raise ValueError(f"{path}: its task {task!r} is not a registered task: supply --task (robo-rl tasks)")
    recorded = recorded_task_params(artifact.task_config) if task == artifact.task else []
    env = make(task, num_envs=episodes, device=device, params=[*recorded, *task_params])
    for role, policy_spec, env_spec in (
        ("observation", artifact.obs, env.obs_spec),
        ("action", artifact.action, env.action_spec),
    ):
        if policy_spec.names != env_spec.names:
            raise ValueError(
                f"{path}: its {role} names differ from task {task!r}'s: policy {list(policy_spec.names)[:6]}..., "
                f"task {list(env_spec.names)[:6]}... (import it with the task's names, in order)"
            )
    return evaluate(env, onnx_actor(path, env.obs_spec.dim, env.action_spec.dim), seed=seed)


def main(args: argparse.Namespace) -> int:
    if args.sim == "l2f":
        return _main_l2f(args)
    if args.plant is not None:
        raise ValueError("--plant is for --sim l2f")
    check_device(args.device, "--device")
    args.episodes = DEFAULT_EPISODES if args.episodes is None else args.episodes
    if args.run_dir.suffix == ".onnx":
        if args.onnx or args.checkpoint is not None:
            raise ValueError("--onnx and --checkpoint are for run directories; a policy .onnx file is evaluated as is")
        result = evaluate_policy_file(args.run_dir, args.episodes, args.seed, args.task, args.device, args.task_params)
        terminal().print(f"{args.run_dir} (onnxruntime): {describe_evaluation(result)}")
        return 0
    if args.task is not None:
        raise ValueError("--task is for a policy .onnx file; a run directory evaluates its own task")
    result = evaluate_run(
        args.run_dir, args.episodes, args.seed, args.checkpoint, args.onnx, args.device, args.task_params
    )
    source = "policy.onnx (onnxruntime)" if args.onnx else f"{_checkpoint_name(args.run_dir, args.checkpoint)} (torch)"
    terminal().print(f"{args.run_dir} ({source}): {describe_evaluation(result)}")
    if result.success_rate is None:
        terminal().print("success rate: n/a (this task defines no success criterion)")
    return 0


def _main_l2f(args: argparse.Namespace) -> int:
    from robo_rl.cli.l2f_transfer import evaluate_in_l2f

    given = {
        "--onnx": args.onnx,
        "--checkpoint": args.checkpoint is not None,
        "--task": args.task is not None,
        "--task-param": bool(args.task_params),
    }
    used = [flag for flag, on in given.items() if on]
    if used:
        raise ValueError(f"{', '.join(used)} cannot be used with --sim l2f (it flies the policy file as is)")
    episodes = L2F_EPISODES if args.episodes is None else args.episodes
    result, notes = evaluate_in_l2f(args.run_dir, args.plant or "native", episodes, args.seed)
    for note in notes:
        terminal().print(f"note: {note}")
    terminal().print(f"{args.run_dir} in L2F: {result.describe()}")
    return 0


def _checkpoint_name(run_dir: Path, checkpoint: Path | None) -> str:
    """The checkpoint `load_trained` reads, as the output names it."""
    if checkpoint is not None:
        return str(checkpoint)
    return BEST_CHECKPOINT if (run_dir / "checkpoints" / BEST_CHECKPOINT).is_file() else "latest.pt"


SPEED_ONLY_SETTINGS = ("backend", "compile")
"""Task settings that change how fast a task steps, not what it computes: not taken from a recorded config."""


def recorded_task_params(task_config: str | None) -> list[str]:
    """A recorded task config (canonical JSON, `robo_rl.task_config`) as `"key=value"` task params, nested keys
    dotted; [] when the file recorded none."""
    import json

    if not task_config:
        return []
    data = json.loads(task_config)
    if not isinstance(data, dict) or "imported" in data:  # an imported policy records what the import folded in
        return []
    return [param for key, value in data.items() if key not in SPEED_ONLY_SETTINGS for param in _flat(key, value)]


def _flat(key: str, value: object) -> list[str]:
    import json

    if isinstance(value, dict):
        return [param for name, item in value.items() for param in _flat(f"{key}.{name}", item)]
    return [f"{key}={json.dumps(value)}"]
