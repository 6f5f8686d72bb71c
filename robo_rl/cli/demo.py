"""`robo-rl demo`: the end-to-end job behind `make demo`.

Train a Crazyflie hover policy from scratch with PPO on the batched quadrotor simulator until it passes the
hover gate with margin (the gate: >= 95 % of 1000 evaluation flights of 5 s from random states end without a crash
and within 0.10 m of the target over the last second; the preset trains on to 97 %), evaluate it on 1000 fresh
flights, export policy.onnx, evaluate the exported file in onnxruntime, plot 3-D evaluation flights and the learning
curve, fly the exported file in L2F (the Crazyflie simulator of "Learning to Fly in Seconds", when the l2f package is
installed) and print where everything is.

It never exports a policy below the gate: when training stops without reaching its target, or the fresh flights
fall below the gate, it says so and what to do (resume the run for more iterations, or another seed) and exits 1.
`--preset pendulum_ppo` runs the earlier pendulum demo instead.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from robo_rl.api.bad_file import check_output
from robo_rl.api.configs import override, resolve_config
from robo_rl.api.envs import env_factory
from robo_rl.api.evaluation import evaluate_run, plot_run_flights
from robo_rl.api.process_time import seconds_since_process_start
from robo_rl.build import build_runner
from robo_rl.cli.arguments import add_threads_argument
from robo_rl.cli.export import export_run
from robo_rl.cli.progress import describe_evaluation, describe_targets, terminal
from robo_rl.cli.train import create_run, print_summary, train

EVAL_EPISODES = 1000
GATE_SUCCESS_RATE = 0.95
"""The hover gate on the fresh flights (tasks that define success): below it, the demo exports nothing."""
FLIGHTS_PLOTTED = 20
L2F_EPISODES = 500


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo",
        help="train, evaluate and export the demo policy end to end",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--runs-root", type=Path, default=Path("runs"), help="where the run directory goes")
    p.add_argument("--seed", type=int, default=0, help="training seed (default: 0)")
    p.add_argument("--device", default="cpu", help="torch device (default: cpu)")
    p.add_argument("--preset", default="quadrotor_hover_ppo", help="preset to train (default: quadrotor_hover_ppo)")
    p.add_argument(
        "--max-iterations",
        type=int,
        default=None,
        metavar="N",
        help="stop training after N iterations if the target is not reached first (default: the preset's)",
    )
    add_threads_argument(p)
    p.set_defaults(func=main)


def describe_l2f_transfer(onnx_path: Path, task: str, episodes: int = L2F_EPISODES) -> str:
    """One line: the exported hover policy flown in L2F's own Crazyflie (`robo-rl eval --sim l2f`), or why not."""
    from robo_rl.api.l2f_transfer import HOVER_TASK, evaluate_in_l2f
    from robo_rl.sim.quadrotor.l2f_gate import l2f_missing_reason

    if task != HOVER_TASK:
        return f"L2F transfer: n/a (it flies {HOVER_TASK} policies, this demo trained {task})"
    missing = l2f_missing_reason()
    if missing is not None:
        return f"L2F transfer: skipped: {missing}"
    try:
        result, notes = evaluate_in_l2f(onnx_path, "native", episodes, seed=12345)
    except ValueError as error:
        return f"L2F transfer: not flown: {error}"
    return "; ".join((f"L2F transfer: {result.describe()}", *notes))


def stalled_advice(args: argparse.Namespace, run: Path, iterations: int, best: float | None) -> str:
    """What the demo says when training stopped before its target: nothing is exported."""
    reached = "" if best is None else f"; its best evaluation passed {best:.1%}"
    return (
        f"not exported: training stopped after {iterations} iterations without reaching its target{reached}. "
        f"Train on with `robo-rl train --resume {run} --max-iterations {2 * iterations}`, then "
        f"`robo-rl export {run}`; or run the demo with another seed (`robo-rl demo --seed {args.seed + 1}`)."
    )


def below_gate_advice(args: argparse.Namespace, run: Path, success_rate: float) -> str:
    """What the demo says when the fresh flights fall below the gate: nothing is exported."""
    return (
        f"not exported: {success_rate:.1%} of the fresh flights pass, below the {GATE_SUCCESS_RATE:.0%} gate "
        f"(the training evaluation passed on its own flights). Train on with `robo-rl train --resume {run} "
        f"--set runner.loop.target_success_rate=0.98`, or run the demo with another seed "
        f"(`robo-rl demo --seed {args.seed + 1}`)."
    )


def main(args: argparse.Namespace) -> int:
    console = terminal()
    check_output(args.runs_root, "--runs-root", folder=True)
    cfg = resolve_config(args.preset, [f"seed={args.seed}", f"task.device={args.device}"])
    if args.max_iterations is not None:
        cfg = override(cfg, values={f"{cfg.loop_section}.loop.max_iterations": args.max_iterations})
    runner = build_runner(cfg, env_factory())
    runner.run = run = create_run(args.runs_root, cfg, "robo-rl demo", runner.env)
    console.rule(f"1/5 train {cfg.algo.upper()} on {cfg.task.name} ({describe_targets(cfg.loop)})")
    console.print(f"{cfg.task.num_envs} envs on {cfg.task.device}; run directory: {run.path}")
    start = time.perf_counter()
    result = train(runner, run, console)
    if result is None:
        return 130
    total = time.perf_counter() - start
    print_summary(console, result, run)
    console.print(f"wall-clock including set-up and checkpoints: {total:.1f} s")
    since_start = seconds_since_process_start()
    if since_start is not None:
        console.print(f"wall-clock from process start: {since_start:.1f} s")
    if not result.reached_target:
        console.print(stalled_advice(args, run.path, result.iterations, result.best_success_rate))
        return 1
    console.rule("2/5 evaluate")
    torch_eval = evaluate_run(run.path, EVAL_EPISODES, seed=12345)
    console.print(f"torch policy, fresh episodes: {describe_evaluation(torch_eval)}")
    if torch_eval.success_rate is not None and torch_eval.success_rate < GATE_SUCCESS_RATE:
        console.print(below_gate_advice(args, run.path, torch_eval.success_rate))
        return 1
    console.rule("3/5 export policy.onnx and verify it in onnxruntime")
    onnx_path = export_run(run.path, None, console)
    onnx_eval = evaluate_run(run.path, EVAL_EPISODES, seed=12345, use_onnx=True)
    console.print(f"onnxruntime policy, same episodes: {describe_evaluation(onnx_eval)}")
    console.rule("4/5 plots")
    flights = plot_run_flights(run.path, FLIGHTS_PLOTTED, seed=12345)
    console.print(f"flights: {flights or 'n/a (the task has no position error to plot)'}")
    console.rule("5/5 transfer: policy.onnx in L2F, a Crazyflie simulator robo_rl did not write")
    console.print(describe_l2f_transfer(onnx_path, cfg.task.name))
    console.rule("done")
    for label, path in (
        ("run directory", run.path),
        ("config", run.config_file),
        ("checkpoint", run.latest_checkpoint),
        ("learning curve", run.path / "learning_curve.png"),
        ("flights", flights),
        ("metrics", run.path / "metrics.jsonl"),
        ("TensorBoard", run.path / "tb"),
        ("policy", onnx_path),
    ):
        console.print(f"{label:>15}: {path}")
    console.print(f"TensorBoard: tensorboard --logdir {run.path / 'tb'}")
    return 0 if result.reached_target else 1
