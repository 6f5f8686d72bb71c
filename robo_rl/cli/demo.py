"""`robo-rl demo`: the end-to-end job behind `make demo`.

Train PPO on the batched pendulum until the deterministic policy's mean return reaches -200, evaluate it,
export policy.onnx, evaluate the exported file in onnxruntime, and print where everything is.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from robo_rl.cli.evaluate import evaluate_run
from robo_rl.cli.export import export_run
from robo_rl.cli.progress import terminal
from robo_rl.cli.tasks import env_factory, resolve_config
from robo_rl.cli.train import create_run, print_summary, train
from robo_rl.runners.build import build_runner

EVAL_EPISODES = 100


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
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    console = terminal()
    cfg = resolve_config("pendulum_ppo", [f"seed={args.seed}", f"task.device={args.device}"])
    runner = build_runner(cfg, env_factory())
    runner.run = run = create_run(args.runs_root, cfg, "robo-rl demo")
    console.rule("1/3 train PPO on the batched pendulum (target: mean return ≥ -200)")
    console.print(f"{cfg.task.num_envs} envs on {cfg.task.device}; run directory: {run.path}")
    start = time.perf_counter()
    result = train(runner, run, console)
    if result is None:
        return 130
    total = time.perf_counter() - start
    print_summary(console, result, run)
    console.print(f"wall-clock including set-up and checkpoints: {total:.1f} s")
    console.rule("2/3 evaluate")
    torch_eval = evaluate_run(run.path, EVAL_EPISODES, seed=12345)
    console.print(
        f"torch policy: return {torch_eval.mean_return:.1f} ± {torch_eval.std_return:.1f} "
        f"over {EVAL_EPISODES} fresh episodes"
    )
    console.rule("3/3 export policy.onnx and verify it in onnxruntime")
    onnx_path = export_run(run.path, None, console)
    onnx_eval = evaluate_run(run.path, EVAL_EPISODES, seed=12345, use_onnx=True)
    console.print(
        f"onnxruntime policy: return {onnx_eval.mean_return:.1f} ± {onnx_eval.std_return:.1f} "
        f"over the same {EVAL_EPISODES} episodes"
    )
    console.rule("done")
    for label, path in (
        ("run directory", run.path),
        ("config", run.config_file),
        ("checkpoint", run.latest_checkpoint),
        ("learning curve", run.path / "learning_curve.png"),
        ("metrics", run.path / "metrics.jsonl"),
        ("TensorBoard", run.path / "tb"),
        ("policy", onnx_path),
    ):
        console.print(f"{label:>15}: {path}")
    console.print(f"TensorBoard: tensorboard --logdir {run.path / 'tb'}")
    return 0 if result.reached_target else 1
