"""Training throughput with a busy core (issue 18): hover PPO env-steps/s alone and with one core kept busy.

Each measurement is a fresh Python process that trains the `quadrotor_hover_ppo` preset (1024 envs × 16 steps
per iteration, no evaluation, no run directory) with one thread configuration, for `--iterations` iterations or
`--seconds` s of training, whichever comes first. Its throughput is the env steps of the iterations after the
first `--warmup` ones over their wall-clock, so interpreter start-up, imports and building the envs are not in
it. The "loaded" measurement of a configuration runs while another process spins `while True: pass` (one busy
core); the scheduler places it. Alone and loaded measurements of every configuration alternate in one run,
`--rounds` times, and the table shows the median of each; the ratio loaded/alone is what a busy core costs.

Configurations (`--configs`; N is a thread count, or `all`: the CPUs this process may use):
- default: what `robo-rl train` does (robo_rl.api.threads: the usable CPUs less one, OMP_WAIT_POLICY=PASSIVE).
- spin-N: N threads, OMP_WAIT_POLICY unset (libgomp spins a while, then sleeps); spin-all is the behaviour
  before issue 18.
- spinK-N: N threads, OMP_WAIT_POLICY unset, GOMP_SPINCOUNT=K (libgomp's default is 300000 spins).
- passive-N, active-N: N threads, OMP_WAIT_POLICY=PASSIVE or ACTIVE.

Usage: `python bench/contention.py [--rounds 2] [--configs default spin-all passive-all active-all] [--nice -19]`;
results go to bench/results/contention.json.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robo_rl.api.threads import usable_cpus

RESULTS = Path(__file__).parent / "results" / "contention.json"
PRESET = "quadrotor_hover_ppo"
ITERATION_STEPS = 1024 * 16
"""Env steps of one iteration of the preset (1024 envs × 16 steps)."""
CONFIGS = ("default", "spin-all", "passive-all", "active-all")
BUSY_LOOP = "while True: pass"
THREAD_VARIABLES = ("OMP_WAIT_POLICY", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "GOMP_SPINCOUNT")


@dataclass(frozen=True)
class ThreadConfig:
    name: str
    threads: int | None
    """torch threads; None: the CLI's choice."""
    wait_policy: str | None
    """OMP_WAIT_POLICY for the process; None: unset; 'cli': what the CLI sets."""
    spin_count: int | None = None
    """GOMP_SPINCOUNT (how long an idle libgomp thread spins before it sleeps); None: unset."""


def parse_config(name: str) -> ThreadConfig:
    if name == "default":
        return ThreadConfig(name, None, "cli")
    kind, _, count = name.partition("-")
    threads = str(usable_cpus()) if count == "all" else count
    policies = {"spin": None, "passive": "PASSIVE", "active": "ACTIVE"}
    spins = kind.removeprefix("spin")
    if kind.startswith("spin") and spins.isdigit() and threads.isdigit():
        return ThreadConfig(name, int(threads), None, int(spins))
    if kind not in policies or not threads.isdigit():
        raise argparse.ArgumentTypeError(
            f"unknown configuration {name!r} (default, spin-N, spinK-N, passive-N, active-N; N a number or all)"
        )
    return ThreadConfig(name, int(threads), policies[kind])


def worker(config: ThreadConfig, iterations: int, seconds: float, warmup: int) -> None:
    """Train in this process (its environment already set by the parent) and print one JSON line: env-steps/s
    after the warm-up. At `seconds` of training a watchdog reports what it has and ends the process: a
    configuration too slow to finish one timed iteration by then gets an upper bound: its env steps, plus the
    iteration under way as if it had just ended, over the time since training started."""
    from robo_rl.api import threads

    if config.wait_policy == "cli":
        threads.prefer_passive_waiting(os.environ)  # before torch loads, as robo-rl's entry point does
    from robo_rl.api.configs import preset
    from robo_rl.build import build_runner
    from robo_rl.config import apply_overrides
    from robo_rl.sim import make

    cfg = apply_overrides(preset(PRESET), ["runner.loop.eval_interval=0", f"runner.loop.max_iterations={10**6}"])
    runner = build_runner(cfg, make)
    used = threads.apply_threads(config.threads, os.environ)
    stamps: list[tuple[float, int]] = [(time.perf_counter(), 0)]
    info = {"torch_threads": used, "omp_wait_policy": os.environ.get(threads.WAIT_POLICY)}
    watchdog = threading.Timer(seconds, lambda: _report(stamps, warmup, info, exit_now=True))
    watchdog.daemon = True
    watchdog.start()

    def stamp(metrics: dict[str, Any]) -> None:
        stamps.append((time.perf_counter(), metrics["env_steps"]))
        if len(stamps) > iterations:
            raise StopIteration  # before max_iterations: its final evaluation is not part of training throughput

    with contextlib.suppress(StopIteration):
        runner.learn(stamp)
    watchdog.cancel()
    _report(stamps, warmup, info, exit_now=False)


def _report(stamps: list[tuple[float, int]], warmup: int, info: dict[str, Any], exit_now: bool) -> None:
    stamps = list(stamps)
    if len(stamps) > warmup + 1:
        (t0, s0), (t1, s1) = stamps[warmup], stamps[-1]
        rate, bound, timed = (s1 - s0) / (t1 - t0), False, len(stamps) - 1 - warmup
    else:  # no timed iteration: even if the one under way had just ended, the rate since the start would be
        per_iteration = stamps[-1][1] / (len(stamps) - 1) if len(stamps) > 1 else ITERATION_STEPS
        rate = (stamps[-1][1] + per_iteration) / (time.perf_counter() - stamps[0][0])
        bound, timed = True, 0
    print(json.dumps({"env_steps_per_s": rate, "upper_bound": bound, "iterations_timed": timed, **info}), flush=True)
    if exit_now:
        os._exit(0)


def measure(config: ThreadConfig, loaded: bool, args: argparse.Namespace) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
    if config.wait_policy not in (None, "cli"):
        env["OMP_WAIT_POLICY"] = config.wait_policy
    if config.spin_count is not None:
        env["GOMP_SPINCOUNT"] = str(config.spin_count)
    command = [sys.executable, __file__, "--worker", config.name, "--iterations", str(args.iterations)]
    command += ["--seconds", str(args.seconds), "--warmup", str(args.warmup)]
    nice = ["nice", "-n", str(args.nice)] if args.nice else []
    busy = subprocess.Popen([*nice, sys.executable, "-c", BUSY_LOOP]) if loaded else None
    try:
        done = subprocess.run([*nice, *command], env=env, capture_output=True, text=True, check=False)
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()
    if done.returncode != 0:
        raise RuntimeError(f"{config.name} failed:\n{done.stderr[-3000:]}")
    return {"config": config.name, "loaded": loaded, "loadavg": _loadavg(), **json.loads(done.stdout.splitlines()[-1])}


def _loadavg() -> str:
    return Path("/proc/loadavg").read_text().strip() if Path("/proc/loadavg").exists() else "n/a"


def summarize(rows: list[dict[str, Any]], names: list[str]) -> list[dict[str, Any]]:
    """Per configuration: the median alone and loaded env-steps/s, their ratio, and whether a median is only an
    upper bound (its measurements did not finish one timed iteration)."""
    table = []
    for name in names:
        mine = [r for r in rows if r["config"] == name]
        alone = _median([r for r in mine if not r["loaded"]])
        loaded = _median([r for r in mine if r["loaded"]])
        table.append(
            {
                "config": name,
                "threads": mine[0]["torch_threads"],
                "omp_wait_policy": mine[0]["omp_wait_policy"],
                "alone": alone[0],
                "alone_upper_bound": alone[1],
                "loaded": loaded[0],
                "loaded_upper_bound": loaded[1],
                "ratio": loaded[0] / alone[0],
            }
        )
    return table


def _median(rows: list[dict[str, Any]]) -> tuple[float, bool]:
    rate = statistics.median(r["env_steps_per_s"] for r in rows)
    return rate, any(r["upper_bound"] and r["env_steps_per_s"] >= rate for r in rows)


def _rate(rate: float, bound: bool) -> str:
    return f"{'<' if bound else ''}{rate:,.0f}"


def _describe(row: dict[str, Any]) -> str:
    rate = _rate(row["env_steps_per_s"], row["upper_bound"])
    return (
        f"round {row['round']} {row['config']:<10} {'loaded' if row['loaded'] else 'alone':<6} {rate:>9} env-steps/s "
        f"({row['torch_threads']} threads, OMP_WAIT_POLICY={row['omp_wait_policy']}; load {row['loadavg']})"
    )


def print_table(table: list[dict[str, Any]]) -> None:
    print(f"{'config':<12} {'threads':>7} {'OMP_WAIT_POLICY':>15} {'alone':>9} {'loaded':>9} {'loaded/alone':>13}")
    for row in table:
        ratio = "n/a" if row["alone_upper_bound"] else f"{row['ratio']:.2f}"
        print(
            f"{row['config']:<12} {row['threads']:>7} {row['omp_wait_policy'] or 'unset':>15} "
            f"{_rate(row['alone'], row['alone_upper_bound']):>9} {_rate(row['loaded'], row['loaded_upper_bound']):>9} "
            f"{ratio:>13}"
        )
    print("env-steps/s, medians over rounds; '<': an upper bound (no timed iteration finished in --seconds)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), help=f"default: {' '.join(CONFIGS)}")
    parser.add_argument("--rounds", type=int, default=2, help="alone + loaded measurements per configuration")
    parser.add_argument("--iterations", type=int, default=14, help="training iterations per measurement, at most")
    parser.add_argument("--seconds", type=float, default=5.0, help="training seconds per measurement, at most")
    parser.add_argument("--warmup", type=int, default=1, help="iterations not timed (at least 1)")
    parser.add_argument(
        "--nice",
        type=int,
        default=0,
        help="niceness of the training and busy-loop processes; on a machine shared with other work, -19 (needs "
        "root) puts both far ahead of it, which approximates a quiet machine (default: 0)",
    )
    parser.add_argument("--output", type=Path, default=RESULTS, help="JSON results path")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        worker(parse_config(args.worker), args.iterations, args.seconds, max(1, args.warmup))
        return
    configs = [parse_config(name) for name in args.configs]
    start_load, rows = _loadavg(), []
    print(f"load average at start: {start_load}", flush=True)
    for round_index in range(args.rounds):
        for config in configs:
            for loaded in (False, True):
                row = {"round": round_index, **measure(config, loaded, args)}
                rows.append(row)
                print(_describe(row), flush=True)
    table = summarize(rows, [c.name for c in configs])
    print_table(table)
    from machine import machine_info  # imports torch: only after the measurements

    results = {
        "machine": machine_info(),
        "command": " ".join(sys.argv),
        "loadavg_start": start_load,
        "loadavg_end": _loadavg(),
        "table": table,
        "rows": rows,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=1))
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
