"""Sim-to-real robustness of `quadrotor_hover_robust_ppo`: train seeds to the held-out gate, then evaluate
each run's policy on every held-out range alone and together, and on ranges wider than the held-out ones.

    python bench/robust_hover.py --seeds 0 1 2                 # train 3 seeds (one process each), then evaluate
    python bench/robust_hover.py --runs RUN [RUN ...]          # evaluate existing runs only
    python bench/robust_hover.py --runs RUN [RUN ...] --short  # claims mode: only the all-ranges row
    python bench/robust_hover.py --runs RUN [RUN ...] --at-gate  # the snapshot at the gate, not best.pt
    python bench/robust_hover.py --runs RUN --by-thrust-to-weight CHECKPOINT [...]  # where the failures are

Training is `robo-rl train quadrotor_hover_robust_ppo --seed S` (the preset stops at >= 95 % on the held-out
ranges together; add `--keep-training` to train all `--max-iterations` and see whether it holds its level).
`--parallel 2` trains two seeds at a time, one torch thread each (2 cores). Each run reports the training
wall-clock to the first held-out evaluation at or above the gate (`wall_time` in metrics.jsonl: collection,
updates and evaluations, not process start).

The evaluation rows are `robo-rl eval RUN --episodes 1000 --seed 12345 --task-param ...` on the run's best
policy (checkpoints/best.pt), i.e. a seed other than training's evaluations. "only" rows set the other
held-out fields to 0; "nominal" sets all of them to 0, latency included, and keeps training's noise and
disturbances. The "wider" rows go beyond the held-out ranges: sensor noise x2, motor time constant +-40 %,
torque coefficient +-30 %, each on top of all held-out ranges together.

Writes JSON (bench/results/robust_hover.json), docs/robust_hover_curves.png (held-out success per seed vs
iteration, with the gate line) and prints a markdown table per run and the mean over runs.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from machine import machine_info, warn_if_busy

PRESET = "quadrotor_hover_robust_ppo"
RESULTS = Path(__file__).parent / "results" / "robust_hover.json"
CURVES = Path(__file__).parents[1] / "docs" / "robust_hover_curves.png"
GATE = 0.95
EVAL_SEED = 12345

HELD_OUT = {  # field -> held-out value (`task.eval_config` of the preset)
    "randomization.mass": "0.3",
    "randomization.inertia": "0.3",
    "randomization.thrust_coefficient": "0.2",
    "latency": "2",
}
TRAINING_NOISE = {
    "randomization.position_noise": 0.005,
    "randomization.velocity_noise": 0.02,
    "randomization.angular_velocity_noise": 0.05,
}


def _fields(values: dict[str, str]) -> list[str]:
    """Task params for held-out field values ("latency" is the fixed action delay in control steps)."""
    params = []
    for key, value in values.items():
        if key == "latency":
            params += [f"randomization.min_action_latency={value}", f"randomization.max_action_latency={value}"]
        else:
            params.append(f"{key}={value}")
    return params


def _only(field: str) -> list[str]:
    return _fields({key: (value if key == field else "0") for key, value in HELD_OUT.items()})


ROWS: dict[str, list[str]] = {
    "nominal dynamics, no latency": _fields(dict.fromkeys(HELD_OUT, "0")),
    "mass +-30 % only": _only("randomization.mass"),
    "inertia +-30 % only": _only("randomization.inertia"),
    "thrust coefficient +-20 % only": _only("randomization.thrust_coefficient"),
    "latency 20 ms only": _only("latency"),
    "all held-out ranges together": [],
    "wider: + sensor noise x2": [f"{key}={2 * value}" for key, value in TRAINING_NOISE.items()],
    "wider: + motor time constant +-40 %": ["randomization.motor_time_constant=0.4"],
    "wider: + torque coefficient +-30 %": ["randomization.torque_coefficient=0.3"],
    "wider: all three": [
        *(f"{key}={2 * value}" for key, value in TRAINING_NOISE.items()),
        "randomization.motor_time_constant=0.4",
        "randomization.torque_coefficient=0.3",
    ],
}
"""Evaluation rows: task params applied after the run's task.config and task.eval_config (the held-out set)."""
SHORT_ROWS = ("all held-out ranges together",)


def train(seed: int, root: Path, max_iterations: int, keep_training: bool) -> Path:
    """`robo-rl train` of the preset for `seed` in its own process; returns the run directory."""
    command = [str(Path(sys.executable).parent / "robo-rl"), "train", PRESET, "--seed", str(seed), "--quiet"]
    command += ["--max-iterations", str(max_iterations), "--runs-root", str(root), "--threads", "1"]
    if keep_training:
        command += ["--set", "runner.loop.target_success_rate=null"]
    before = set((root / PRESET).glob(f"*-seed{seed}*")) if (root / PRESET).is_dir() else set()
    print(f"seed {seed}: {' '.join(command)}", flush=True)
    subprocess.run(command, check=True)
    (run,) = set((root / PRESET).glob(f"*-seed{seed}*")) - before
    return run


def curve(run: Path) -> list[tuple[int, float, float]]:
    """(iteration, training seconds, held-out success) of every evaluation in the run's metrics.jsonl."""
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines() if line.strip()]
    return [
        (r["iteration"], r["wall_time"], r["eval_success_rate"]) for r in rows if r.get("eval_success_rate") is not None
    ]


def to_gate(points: list[tuple[int, float, float]]) -> dict[str, Any]:
    """The first evaluation at or above the gate, and how the later ones did (min and last)."""
    for index, (iteration, seconds, rate) in enumerate(points):
        if rate >= GATE:
            after = [p[2] for p in points[index:]]
            return {"iteration": iteration, "seconds": seconds, "min_after": min(after), "last": after[-1]}
    return {"iteration": None, "seconds": None, "best": max((p[2] for p in points), default=None)}


def evaluate_rows(run: Path, rows: list[str], episodes: int, checkpoint: Path | None = None) -> dict[str, float]:
    """Success rate of the run's best policy (or `checkpoint`) on each row (1000 episodes, seed 12345)."""
    from robo_rl.api.evaluation import evaluate_run

    out = {}
    for name in rows:
        result = evaluate_run(run, episodes, EVAL_SEED, checkpoint, task_params=ROWS[name])
        out[name] = float(result.success_rate or 0.0)
        print(f"  {run.name}: {name}: {out[name]:.1%}", flush=True)
    return out


TW_BINS = (0.0, 0.7, 0.8, 0.9, 1.1, 1.25, 2.0)
"""Edges of the thrust-to-weight bins: the episode plant's thrust-to-weight over the nominal frame's (with only the
half-range fields, its thrust scale over its mass scale: training reaches 0.85/1.2 = 0.71 to 1.15/0.8 = 1.44; the
held-out ranges 0.8/1.3 = 0.62 to 1.2/0.7 = 1.71)."""


def relative_thrust_to_weight(env: Any) -> Any:
    """`(num_envs,)` each env's true thrust-to-weight (4 x rotor thrust at u = 1 over its weight, from the plant
    this episode flies: thrust scale, battery sag and a drawn thrust-to-weight included) over the nominal frame's."""
    plant = getattr(env, "env", env)  # a ChunkEnv wraps the hover env
    dynamics, params = plant._dynamics, plant.params
    ratio = 4 * dynamics.thrust_curve.sum(0) / (dynamics.mass * params.gravity)
    return ratio / params.thrust_to_weight


def by_thrust_to_weight(run: Path, checkpoint: Path | None, episodes: int) -> dict[str, dict[str, float]]:
    """Held-out success and crash rate of one checkpoint per thrust-to-weight bin (all held-out ranges together,
    `episodes` episodes, seed 12345): where in the held-out set the failures are."""
    import torch

    from robo_rl.api.runs import load_trained, make_env
    from robo_rl.runners.evaluate import evaluate

    trained = load_trained(run, checkpoint)
    env = make_env(trained.cfg, num_envs=episodes, device="cpu", evaluation=True)
    env.reset(seed=EVAL_SEED)
    ratio = relative_thrust_to_weight(env).cpu()
    result = evaluate(env, trained.actor, seed=EVAL_SEED)  # resets to the same episodes
    success = torch.tensor(result.successes)
    crashed = torch.tensor(result.lengths) < env.max_episode_steps
    bins = {}
    for low, high in itertools.pairwise(TW_BINS):
        inside = (ratio >= low) & (ratio < high)
        if inside.any():
            bins[f"{low:.2f}-{high:.2f}"] = {
                "episodes": int(inside.sum()),
                "success": float(success[inside].float().mean()),
                "crash": float(crashed[inside].float().mean()),
            }
    return bins


def plot_curves(runs: dict[str, list[tuple[int, float, float]]], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for label, points in runs.items():
        ax.plot([p[0] for p in points], [100 * p[2] for p in points], marker=".", label=label)
    ax.axhline(100 * GATE, color="red", linestyle="--", label="gate 95 %")
    ax.set_xlabel("PPO iteration (16 steps x 1024 envs)")
    ax.set_ylabel("held-out success (%), 1000 episodes")
    ax.set_title(f"{PRESET}: held-out ranges together")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)


def table(results: dict[str, dict[str, float]]) -> str:
    names = list(results)
    rows = next(iter(results.values())).keys() if results else []
    lines = ["| evaluation (1000 episodes) | " + " | ".join(names) + " | mean |", "|---" * (len(names) + 2) + "|"]
    for row in rows:
        values = [results[n][row] for n in names]
        cells = " | ".join(f"{100 * v:.1f} %" for v in values)
        lines.append(f"| {row} | {cells} | {100 * sum(values) / len(values):.1f} % |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="seeds to train (default 0 1 2)")
    parser.add_argument("--runs", type=Path, nargs="+", help="evaluate these run directories instead of training")
    parser.add_argument("--root", type=Path, default=Path("runs/robust_hover"), help="where training runs go")
    parser.add_argument("--max-iterations", type=int, default=4000)
    parser.add_argument("--keep-training", action="store_true", help="do not stop at the gate")
    parser.add_argument("--parallel", type=int, default=1, help="seeds trained at once (one thread each)")
    parser.add_argument("--episodes", type=int, default=1000, help="episodes per evaluation row")
    parser.add_argument("--short", action="store_true", help="only the held-out row of existing runs")
    parser.add_argument(
        "--at-gate",
        action="store_true",
        help="evaluate each run's snapshot at its first evaluation >= 95 %% (what the preset, which stops there, "
        "deploys) instead of its best policy",
    )
    parser.add_argument(
        "--by-thrust-to-weight",
        type=Path,
        nargs="+",
        metavar="CHECKPOINT",
        help="print held-out success per thrust-to-weight bin for these checkpoints of the one --runs RUN",
    )
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--curves", type=Path, default=CURVES, help="PNG of the held-out curves")
    args = parser.parse_args()
    warn_if_busy()
    if args.by_thrust_to_weight:
        if not args.runs:
            parser.error("--by-thrust-to-weight needs the run: --runs RUN")
        return _print_bins(args.runs[0], args.by_thrust_to_weight, args.episodes)
    started = time.time()
    runs = list(args.runs or []) or _train_all(args)
    rows = list(SHORT_ROWS if args.short else ROWS)
    curves = {f"{run.name}": curve(run) for run in runs}
    gates = {name: to_gate(points) for name, points in curves.items()}
    results = {
        run.name: evaluate_rows(run, rows, args.episodes, _gate_snapshot(run, gates[run.name], args)) for run in runs
    }
    if not args.short:
        plot_curves(curves, args.curves)
    report = {
        "machine": machine_info(),
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "git_hash": _git_hash(),
        "seconds": time.time() - started,
        "policy": "snapshot at the gate" if args.at_gate else "best.pt",
        "runs": {
            str(run): {"gate": gates[run.name], "rows": results[run.name], "curve": curves[run.name]} for run in runs
        },
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    for name, gate in gates.items():
        print(f"{name}: to the gate {gate}")
    print(table(results))
    return 0


def _print_bins(run: Path, checkpoints: list[Path], episodes: int) -> int:
    for checkpoint in checkpoints:
        bins = by_thrust_to_weight(run, checkpoint, episodes)
        cells = "  ".join(
            f"T/W {name}: {b['success']:.0%} ok, {b['crash']:.0%} crash (n={b['episodes']})" for name, b in bins.items()
        )
        print(f"{checkpoint.name}: {cells}", flush=True)
    return 0


def _gate_snapshot(run: Path, gate: dict[str, Any], args: argparse.Namespace) -> Path | None:
    """With --at-gate, the numbered checkpoint of the run's first evaluation at the gate; else None (best.pt)."""
    if not args.at_gate:
        return None
    if gate["iteration"] is None:
        raise SystemExit(f"{run}: never reached the gate; nothing to evaluate --at-gate")
    return run / "checkpoints" / f"model_{gate['iteration']:06d}.pt"


def _train_all(args: argparse.Namespace) -> list[Path]:
    from concurrent.futures import ThreadPoolExecutor

    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    with ThreadPoolExecutor(max_workers=max(1, args.parallel)) as pool:
        jobs = [pool.submit(train, s, args.root, args.max_iterations, args.keep_training) for s in args.seeds]
        return [job.result() for job in jobs]


def _git_hash() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


if __name__ == "__main__":
    sys.exit(main())
