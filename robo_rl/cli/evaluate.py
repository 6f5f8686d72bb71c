"""`robo-rl eval`: deterministic evaluation of a trained run (torch checkpoint or its policy.onnx)."""

from __future__ import annotations

import argparse
from pathlib import Path

from robo_rl.api.evaluation import evaluate_policy_file, evaluate_run
from robo_rl.build import check_device
from robo_rl.cli.arguments import add_task_param_argument, add_threads_argument
from robo_rl.cli.progress import describe_evaluation, terminal
from robo_rl.runners.best_policy import BEST_CHECKPOINT

SIMULATORS = ("robo_rl", "l2f", "gem")
DEFAULT_EPISODES = 100
L2F_EPISODES = 500
GEM_EPISODES = 64


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
        "%%, steady-state error (cm), episodes and plant. A policy with memory (inputs obs and h_in) has its state "
        "carried from step to step and set to the file's reset value at each episode's start. --sim gem runs an "
        "electric_motor/current policy in gym-electric-motor's own PMSM environment (Cont-CC-PMSM-v0 with the motor, "
        "inverter and period from the file) on --episodes drawn episodes, beside the PI/FOC baseline on the same "
        "episodes, in GEM and in robo_rl's simulator: mean tracking error (A), current-limit trips, settling time.",
    )
    p.add_argument("run_dir", type=Path, help="run directory made by robo-rl train, or a policy .onnx file")
    p.add_argument("--task", help="for a policy .onnx file: the registered task (default: the policy's own)")
    p.add_argument("--episodes", type=int, help="episodes to run (default: 100; 500 with --sim l2f; 64 with --sim gem)")
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
        help="robo_rl: the policy's own task (default); l2f: fly it in L2F (hover policies with motor actions); "
        "gem: run it in gym-electric-motor (electric_motor/current policies)",
    )
    p.add_argument(
        "--plant",
        help="with --sim l2f: native (L2F's own Crazyflie, default), robo_rl (L2F's engine with the frame the policy "
        "was trained on) or a frame YAML file",
    )
    add_task_param_argument(p, "for this evaluation, e.g. held-out ranges: --task-param randomization.mass=0.3")
    add_threads_argument(p)
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    if args.sim == "l2f":
        return _main_l2f(args)
    if args.sim == "gem":
        return _main_gem(args)
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


def _file_only_flags(args: argparse.Namespace, sim: str) -> None:
    """ValueError where flags that do not apply to a policy file flown in another simulator are given."""
    given = {
        "--onnx": args.onnx,
        "--checkpoint": args.checkpoint is not None,
        "--task": args.task is not None,
        "--task-param": bool(args.task_params),
    }
    used = [flag for flag, on in given.items() if on]
    if used:
        raise ValueError(f"{', '.join(used)} cannot be used with --sim {sim} (it runs the policy file as is)")


def _main_l2f(args: argparse.Namespace) -> int:
    from robo_rl.api.l2f_transfer import evaluate_in_l2f

    _file_only_flags(args, "l2f")
    episodes = L2F_EPISODES if args.episodes is None else args.episodes
    result, notes = evaluate_in_l2f(args.run_dir, args.plant or "native", episodes, args.seed)
    for note in notes:
        terminal().print(f"note: {note}")
    terminal().print(f"{args.run_dir} in L2F: {result.describe()}")
    return 0


def _main_gem(args: argparse.Namespace) -> int:
    from robo_rl.api.gem_transfer import compare_in_gem

    _file_only_flags(args, "gem")
    if args.plant is not None:
        raise ValueError("--plant is for --sim l2f")
    episodes = GEM_EPISODES if args.episodes is None else args.episodes
    if episodes < 1:
        raise ValueError(f"--episodes must be at least 1, got {episodes}")
    comparison = compare_in_gem(args.run_dir, episodes, args.seed)
    console = terminal()
    console.print(f"{args.run_dir}: {episodes} episodes (seed {args.seed})")
    for label, result in comparison.rows():
        console.print(
            f"{label:>18}: mean |i - ref| {result.mean_abs_error:6.2f} A, RMS {result.rms_error:6.2f} A, "
            f"trips {result.trips}, settling {result.settling_ms:.2f} ms ({result.unsettled}/{result.holds} unsettled)"
        )
    return 0


def _checkpoint_name(run_dir: Path, checkpoint: Path | None) -> str:
    """The checkpoint `load_trained` reads, as the output names it."""
    if checkpoint is not None:
        return str(checkpoint)
    return BEST_CHECKPOINT if (run_dir / "checkpoints" / BEST_CHECKPOINT).is_file() else "latest.pt"
