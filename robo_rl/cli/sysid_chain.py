"""`robo-rl sysid LOG --frame BASE --train PRESET`: from a flight log to a flown policy in one command.

1. identify the frame from LOG (`robo-rl sysid`) and write it;
2. train PRESET on it (`task.config.frame` = the frame file), to the preset's targets;
3. evaluate the trained policy on the fitted frame (fresh flights; the hover gate: >= `--gate` of them succeed);
4. export policy.onnx and fly the exported file on the fitted frame in onnxruntime;
5. fly policy.onnx in L2F's own Crazyflie (the simulator of "Learning to Fly in Seconds", when installed);
6. write the report (sysid_report.json and the lines printed) into the run directory, with a copy of the frame.

Nothing is exported below the gate: the report says so and how to go on, and the command exits 1.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from robo_rl.sysid.fit import Identification

EVAL_EPISODES = 1000
L2F_EPISODES = 500
DEFAULT_GATE = 0.95
"""The hover gate: the share of fresh flights on the fitted frame that must succeed before anything is exported."""


def add_chain_arguments(p: argparse.ArgumentParser) -> None:
    chain = p.add_argument_group("from log to policy (--train)")
    chain.add_argument(
        "--train",
        metavar="PRESET",
        help="then train PRESET (a quadrotor preset, e.g. quadrotor_hover_ppo) on the fitted frame, export it and "
        "fly it on the frame and in L2F, with one report",
    )
    chain.add_argument("--runs-root", type=Path, default=Path("runs"), help="where the run directory goes (runs)")
    chain.add_argument("--seed", type=int, default=0, help="training seed (default 0)")
    chain.add_argument("--max-iterations", type=int, metavar="N", help="stop training after N iterations")
    chain.add_argument(
        "--gate",
        type=float,
        default=DEFAULT_GATE,
        help=f"share of fresh flights on the fitted frame that must succeed to export (default {DEFAULT_GATE})",
    )
    chain.add_argument("--episodes", type=int, default=EVAL_EPISODES, help=f"fresh flights (default {EVAL_EPISODES})")
    chain.add_argument(
        "--l2f-episodes", type=int, default=L2F_EPISODES, help=f"flights in L2F (default {L2F_EPISODES}; 0: skip)"
    )
    chain.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE", help="preset override"
    )


def check_chain_arguments(args: argparse.Namespace) -> None:
    """Bad chain options, refused before the fit runs."""
    if not 0.0 <= args.gate <= 1.0:
        raise ValueError(f"--gate {args.gate}: a share of flights, in [0, 1]")
    if args.episodes < 1 or args.l2f_episodes < 0:
        raise ValueError("--episodes must be at least 1 and --l2f-episodes at least 0")
    if args.max_iterations is not None and args.max_iterations < 1:
        raise ValueError(f"--max-iterations {args.max_iterations}: at least 1")
    from robo_rl.api.bad_file import check_output
    from robo_rl.api.configs import resolve_config

    cfg = resolve_config(args.train, list(args.overrides))
    if not hasattr(cfg.task.config, "frame"):
        raise ValueError(
            f"--train {args.train}: its task ({cfg.task.name}) has no frame to train on; use a quadrotor preset "
            "(robo-rl list shows them)"
        )
    check_output(args.runs_root, "--runs-root", folder=True)


def run_chain(
    args: argparse.Namespace, frame: Path, fit: Identification, fit_lines: list[str], say: Callable[[str], None]
) -> int:
    """Steps 2-6 of the module docstring for the frame file `frame` that `fit` wrote."""
    from robo_rl.api.configs import override, resolve_config
    from robo_rl.api.envs import env_factory
    from robo_rl.api.evaluation import evaluate_run
    from robo_rl.build import build_runner
    from robo_rl.cli.demo import describe_l2f_transfer
    from robo_rl.cli.export import export_run
    from robo_rl.cli.progress import describe_evaluation, terminal
    from robo_rl.cli.train import create_run, train

    console = terminal()
    cfg = resolve_config(args.train, [*args.overrides, f"seed={args.seed}", f"task.config.frame={frame.resolve()}"])
    if args.max_iterations is not None:
        cfg = override(cfg, values={f"{cfg.loop_section}.loop.max_iterations": args.max_iterations})
    runner = build_runner(cfg, env_factory())
    runner.run = run = create_run(args.runs_root, cfg, "robo-rl sysid --train", runner.env)
    kept_frame = run.path / frame.name
    shutil.copyfile(frame, kept_frame)
    report: dict[str, Any] = {"log": str(args.log), "frame": str(frame), "fit": _fit_summary(fit), "run": str(run.path)}
    say(f"2/5 train {args.train} on {frame.name} (run directory {run.path})")
    start = time.perf_counter()
    result = train(runner, run, console)
    if result is None:
        return 130
    report["train"] = {
        "iterations": result.iterations,
        "reached_target": result.reached_target,
        "best_success_rate": result.best_success_rate,
        "seconds": round(time.perf_counter() - start, 1),
    }
    say("3/5 evaluate on the fitted frame")
    fresh = evaluate_run(run.path, args.episodes, seed=12345)
    report["fitted_frame"] = {"episodes": args.episodes, "success_rate": fresh.success_rate}
    lines = [f"on the fitted frame, {args.episodes} fresh flights: {describe_evaluation(fresh)}"]
    say(lines[-1])
    rate = fresh.success_rate if fresh.success_rate is not None else 0.0
    if rate < args.gate:
        lines.append(
            f"not exported: {rate:.1%} of the flights succeed, below the {args.gate:.0%} gate; train on with "
            f"`robo-rl train --resume {run.path} --max-iterations N`, or fly a longer, richer excitation log"
        )
        return _finish(run.path, report, [*fit_lines, *lines], say, 1)
    say("4/5 export policy.onnx and fly it on the fitted frame in onnxruntime")
    onnx = export_run(run.path, None, console)
    exported = evaluate_run(run.path, args.episodes, seed=12345, use_onnx=True)
    report["onnx"] = {"path": str(onnx), "success_rate": exported.success_rate}
    lines.append(f"policy.onnx on the fitted frame (onnxruntime), same flights: {describe_evaluation(exported)}")
    say(lines[-1])
    say("5/5 fly policy.onnx in L2F's own Crazyflie")
    l2f = (
        describe_l2f_transfer(onnx, cfg.task.name, args.l2f_episodes)
        if args.l2f_episodes
        else "L2F transfer: skipped (0 flights)"
    )
    report["l2f"] = l2f
    lines.append(l2f)
    say(l2f)
    return _finish(run.path, report, [*fit_lines, *lines], say, 0)


def _fit_summary(fit: Identification) -> dict[str, Any]:
    def pair(e: Any) -> list[float]:
        return [e.value, e.standard_error]

    return {
        "thrust_curve": [pair(e) for e in fit.thrust_curve],
        "motor_rise_time_constant": pair(fit.motor_rise_time_constant),
        "motor_fall_time_constant": pair(fit.motor_fall_time_constant),
        "inertia": [pair(e) for e in fit.inertia],
        "motor_model": fit.motor_model,
        "motor_idle_speed": None if fit.motor_idle_speed is None else pair(fit.motor_idle_speed),
        "aerodynamics": fit.aerodynamics,
        "candidates": list(fit.candidates),
        "slow_share": list(fit.slow_share),
    }


def _finish(run: Path, report: dict[str, Any], lines: list[str], say: Callable[[str], None], code: int) -> int:
    (run / "sysid_report.json").write_text(json.dumps(report, indent=1, default=str), encoding="utf-8")
    (run / "sysid_report.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    say(f"report: {run / 'sysid_report.txt'} and sysid_report.json")
    return code
