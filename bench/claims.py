"""Every figure README.md quotes, re-measured at HEAD and printed beside the quoted text (`make claims`).

    python bench/claims.py                 # the short versions (minutes): what to run before closing an issue
    python bench/claims.py --long          # the full benchmarks behind the figures (an hour or more)
    python bench/claims.py --only hover-gate kill-resume
    python bench/claims.py --list          # the claims, their README text and commands, without running them

Each claim names the README text that quotes the figure (checked to be there verbatim: a README edit that changes
a figure must change this registry too), the bench command that measures it (a short and a long version; a claim
without a short one is skipped unless `--long`), and how to read the command's JSON output into the measured
figure and a verdict:
- `holds`: the measurement supports the quoted figure;
- `differs`: it does not: fix the code or re-state the figure (never leave it standing);
- `skipped`: no short version, or what it needs (e.g. trained runs) is missing.
Timings are compared as ratios to the quoted figure: these shared VMs vary 2-3x from day to day, so a time claim
holds within `TIME_SLACK` of the quoted value, and the ratio is printed.

Writes bench/results/claims.json (every claim's command, output, measured figure and verdict, the git hash) and
prints a table. Exit status 1 if any claim differs.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from machine import machine_info

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
README = ROOT / "README.md"
RESULTS = BENCH / "results" / "claims.json"
TIME_SLACK = 3.0
"""A quoted time holds while the measured one is at most this many times it (machine-speed variation)."""

Verdict = tuple[str, bool]
"""(the measured figure in words, whether it supports the quoted one)."""


@dataclass(frozen=True)
class Claim:
    name: str
    quote: str
    """Text of README.md that quotes the figure (verbatim, on one line or across a line break)."""
    short: str | None
    """The short version: a bench script and its arguments (run by this Python in bench/; `{out}` is the JSON
    path); None: long only."""
    long: str
    read: Callable[[dict[str, Any]], Verdict]
    """The JSON the command wrote → (measured figure, holds)."""
    needs: Callable[[], str | None] = lambda: None
    """Why the claim cannot run now (e.g. no trained runs), or None."""


def _ratio(measured: float, quoted: float) -> str:
    return f"{measured / quoted:.2f}x the quoted"


HOVER_GATE_SECONDS = 13.9
"""README's median training time of the hover preset to its 97 % target (5 seeds, the identified Crazyflie 2.1)."""


def read_hover_gate(data: dict[str, Any]) -> Verdict:
    summary = data["summary"]["ppo"]
    median = summary["median_training_seconds"]
    reached = f"{summary['reached']}/{summary['runs']} seeds reached the target"
    if median is None:
        return f"{reached}; no median", False
    return f"median {median:.1f} s of training, {reached} ({_ratio(median, HOVER_GATE_SECONDS)})", (
        summary["reached"] == summary["runs"] and median <= HOVER_GATE_SECONDS * TIME_SLACK
    )


def read_contention(data: dict[str, Any]) -> Verdict:
    ratios = {row["config"]: row["ratio"] for row in data["table"]}
    default, spin = ratios.get("default"), ratios.get("spin-all")
    if default is None or spin is None:
        return f"ratios {ratios}", False
    text = f"default keeps {default:.0%} with one core busy, 2 spinning threads {spin:.0%}"
    return text, default >= 0.75 and spin < default


ROBUST_SPREAD_SUCCESS = 0.9
"""README's robust-preset figure (seed 0: 92.9 % on the whole spread of identified Crazyflies), to within 3 points."""


def read_robust(data: dict[str, Any]) -> Verdict:
    rates = [run["rows"]["all held-out ranges together"] for run in data["runs"].values()]
    passed = sum(rate >= ROBUST_SPREAD_SUCCESS for rate in rates)
    text = (
        f"{passed} of {len(rates)} runs >= {ROBUST_SPREAD_SUCCESS:.0%} on all held-out ranges together ("
        + ", ".join(f"{r:.1%}" for r in rates)
    )
    return text + ")", bool(rates) and passed == len(rates)


def read_compile(data: dict[str, Any]) -> Verdict:
    speed = {
        (row["num_envs"], row["compiled"]): row["env_steps_per_s"]
        for row in data["rows"]
        if row["action_mode"] == "motor" and not row["randomized"]
    }
    ratios = {
        n: speed[(n, True)] / speed[(n, False)] for n in (1024, 4096) if (n, True) in speed and (n, False) in speed
    }
    if not ratios:
        return "no compiled rows at 1,024 / 4,096 envs", False
    text = ", ".join(f"{ratio:.1f}x at {n:,} envs" for n, ratio in ratios.items())
    return text, all(ratio >= 1.5 for ratio in ratios.values())


def read_soak(data: dict[str, Any]) -> Verdict:
    """bench/soak.py: no invalid command, no answer lost, every fault named in /diagnostics, RSS growth under 1 %."""
    summary = data["summary"]
    named = all(row["named"] for row in summary["naming"].values())
    growth = summary.get("rss_growth_percent")
    text = f"{summary['violations']} violations in {summary['sim_seconds'] / 60:.1f} simulated min"
    text += f", every fault named: {named}, RSS growth {growth if growth is None else round(growth, 2)} %"
    holds = summary["violations"] == 0 and summary["unanswered"] == 0 and named
    return text, holds and (growth is None or growth < 1.0)


def read_kill(data: dict[str, Any]) -> Verdict:
    kills, lost = data["kills"], data["max_seconds_lost"]
    resumed = sum(kill.get("resumed_from") is not None for kill in kills)
    text = f"{resumed}/{len(kills)} kills resumed, at most {lost:.2f} s lost (save_every_s {data['save_every_s']})"
    return text, resumed == len(kills) and lost <= data["save_every_s"] * 2


def read_bc(data: dict[str, Any]) -> Verdict:
    rates = [row["eval_success_before_training"] for row in data["rows"] if row["condition"] == "rl+demos"]
    text = "cloned policy before RL: " + ", ".join(f"{rate:.1%}" for rate in rates)
    return text, bool(rates) and min(rates) >= 0.95


def read_flow(data: dict[str, Any]) -> Verdict:
    quoted = {0: 1.0, 1: 0.03, 2: 0.865}
    rates = {row["seed"]: row["curve"][0]["success"] for row in data["rows"] if row["learner"] == "bc-flow"}
    text = "cloned flow (standardized) before RL: " + ", ".join(f"seed {s} {r:.1%}" for s, r in sorted(rates.items()))
    return text, bool(rates) and all(abs(rate - quoted.get(seed, 1.0)) <= 0.1 for seed, rate in rates.items())


def read_determinism(data: dict[str, Any]) -> Verdict:
    same = [pair for pair in data["pairs"] if pair["threads"][0] == pair["threads"][1]]
    other = [pair for pair in data["pairs"] if pair["threads"][0] != pair["threads"][1]]
    identical = sum(pair["identical"] for pair in same)
    text = f"{identical}/{len(same)} same-thread pairs bit-identical"
    if other:
        text += f", {sum(not pair['identical'] for pair in other)}/{len(other)} other-thread pairs differ"
    return text, bool(same) and identical == len(same)


def read_suite(data: dict[str, Any]) -> Verdict:
    seconds = data["seconds"]
    text = f"{data['summary']} in {seconds / 60:.1f} min ({_ratio(seconds, 480)})"
    return text, data["returncode"] == 0 and seconds <= 480 * TIME_SLACK


def robust_runs() -> list[Path]:
    """The newest run of each seed under runs/robust_hover (what `robust_hover.py --seeds ...` trains)."""
    root = ROOT / "runs" / "robust_hover" / "quadrotor_hover_robust_ppo"
    newest: dict[str, Path] = {}
    for run in sorted(root.glob("*-seed*")) if root.is_dir() else []:
        newest[run.name.split("-seed")[1]] = run
    return list(newest.values())


MOTOR_PI_ERROR_RATIO = 1.1
"""README's electric-motor figure: PPO to its target tracks within 10 % of the PI/FOC baseline, with zero trips..."""
MOTOR_TARGET_SECONDS = 22.0
"""...within the slowest quoted seed's seconds of training (seeds 0, 1, 2: 17, 22, 11 s)."""


def read_motor(data: dict[str, Any]) -> Verdict:
    rows = data["comparison"]["every speed"]
    pi = rows["PI/FOC (axis clip, gem-control)"]["mean_abs_error"]
    ppo = {name: row for name, row in rows.items() if name.endswith("(to target)")}
    ratios = [row["mean_abs_error"] / pi for row in ppo.values()]
    seconds = [run["training_s"] for run in data["training"] if not run["flags"]]
    instructions = [row["instructions_per_step"] for row in data["cortex_m4"].values()]
    trips = sum(row["trips"] for row in ppo.values())
    text = (
        f"PPO/PI tracking error {', '.join(f'{r:.2f}' for r in ratios)}, trips {trips}; "
        f"{', '.join(f'{t:.0f}' for t in seconds)} s to the target; {max(instructions):.0f} Cortex-M4 instructions"
    )
    fits = all(r <= MOTOR_PI_ERROR_RATIO for r in ratios) and all(
        t <= MOTOR_TARGET_SECONDS * TIME_SLACK for t in seconds
    )
    return text, fits and trips == 0 and max(instructions) <= 6720


CLAIMS = (
    Claim(
        "electric-motor",
        "| PPO to its target (seeds 0, 1, 2: 17, 22, 11 s) | 9.00, 8.99, 9.60 A |",
        "electric_motor.py --seeds 0 --gem-episodes 4 --out {out}",
        "electric_motor.py --seeds 0 1 2 --gem-episodes 32 --out {out}",
        read_motor,
    ),
    Claim(
        "hover-gate",
        "5 seeds in a median of 13.9 s of training",
        "hover_gate.py --kinds ppo --seeds 1 --budget 120 --output {out}",
        "hover_gate.py --kinds ppo --seeds 5 --budget 120 --output {out}",
        read_hover_gate,
    ),
    Claim(
        "contention",
        "hover PPO keeps 88 % of its speed with one core busy, where 2 spinning threads kept 33 %",
        "contention.py --configs default spin-all --rounds 1 --seconds 3 --output {out}",
        "contention.py --output {out}",
        read_contention,
    ),
    Claim(
        "robust-hover",
        "Seed 0 reached 92.9 % on the whole spread",
        "robust_hover.py --short --runs {robust_runs} --output {out}",
        "robust_hover.py --seeds 0 1 2 --parallel 2 --output {out} --curves {out}.png",
        read_robust,
        needs=lambda: None if robust_runs() else "no runs under runs/robust_hover (train them with --long)",
    ),
    Claim(
        "compile-speedup",
        "2–4x the eager env-steps/s at 1,024–4,096 envs here",
        None,
        "quadrotor_steps.py --batches 1024 4096 --output {out}",
        read_compile,
    ),
    Claim(
        "kill-resume",
        "`bench/kill_resume.py` kills and resumes training 20 times",
        "kill_resume.py --kills 2 --output {out}",
        "kill_resume.py --kills 20 --output {out}",
        read_kill,
    ),
    Claim(
        "bc-hover",
        "Ten hover demonstrations and 2,000 steps (3 s) give 98.5–100 % hover success",
        "hil.py --tasks quadrotor/hover --conditions rl+demos --seeds 0 --max-seconds 5 --output {out}",
        "hil.py --tasks quadrotor/hover --conditions rl+demos --seeds 0 1 2 --output {out}",
        read_bc,
    ),
    Claim(
        "flow-standardization",
        "86.5–100 % on seeds 0 and 2, 3 % on seed 1",
        None,
        "flow.py --tasks quadrotor/hover --learners bc-flow --seeds 0 1 2 --output {out}",
        read_flow,
    ),
    Claim(
        "determinism",
        "two runs with the same thread count give bit-identical metrics",
        "determinism.py --iterations 10 --output {out}",
        "determinism.py --iterations 50 --threads 1 1 2 2 --output {out}",
        read_determinism,
    ),
    Claim(
        "soak",
        "0 invalid commands in an hour of simulated flight",
        "soak.py --sim-minutes 1 --every 100 --output {out}",
        "soak.py --sim-minutes 60 --every 200 --output {out}",
        read_soak,
    ),
    Claim(
        "test-suite",
        "The test suite takes about 8 min on 2 cores",
        None,
        "claims.py --suite {out}",
        read_suite,
    ),
)


def quoted_in_readme(claim: Claim, readme: str) -> bool:
    """Whether README.md quotes `claim.quote` (line breaks in the README count as spaces)."""
    return claim.quote in " ".join(readme.split())


def run_claim(claim: Claim, long: bool, workdir: Path) -> dict[str, Any]:
    arguments = claim.long if long else claim.short
    why = "no short version (--long runs it)" if arguments is None else claim.needs()
    if arguments is None or why is not None:
        return {"verdict": "skipped", "measured": why}
    out = workdir / f"{claim.name}.json"
    command = [sys.executable, *_expand(arguments, out)]
    print(f"[{claim.name}] {' '.join(command)}", flush=True)
    started = time.time()
    done = subprocess.run(command, cwd=BENCH, capture_output=True, text=True)
    seconds = time.time() - started
    record: dict[str, Any] = {"command": command, "seconds": seconds, "returncode": done.returncode}
    if done.returncode != 0 or not out.is_file():
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        return {**record, "verdict": "differs", "measured": f"command failed: {' | '.join(tail)}"}
    data = json.loads(out.read_text())
    measured, holds = claim.read(data)
    return {**record, "verdict": "holds" if holds else "differs", "measured": measured}


def _expand(arguments: str, out: Path) -> list[str]:
    expanded: list[str] = []
    for argument in shlex.split(arguments):
        if argument == "{robust_runs}":
            expanded += [str(run) for run in robust_runs()]
        else:
            expanded.append(argument.replace("{out}", str(out)))
    return expanded


def run_suite(out: Path) -> int:
    """The `test-suite` claim's measurement: the suite as `make test` runs it, timed."""
    command = [
        str(Path(sys.executable).parent / "pytest"),
        "-n",
        "2",
        "--dist",
        "worksteal",
        "-q",
        "-p",
        "no:cacheprovider",
    ]
    started = time.time()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    seconds = time.time() - started
    summary = (done.stdout.strip().splitlines() or ["no output"])[-1].strip("= ")
    out.write_text(json.dumps({"seconds": seconds, "returncode": done.returncode, "summary": summary}) + "\n")
    return 0


def print_table(claims: tuple[Claim, ...], results: dict[str, dict[str, Any]]) -> None:
    print("\n| claim | README says | measured at HEAD | verdict |\n|---|---|---|---|")
    for claim in claims:
        result = results[claim.name]
        print(f"| {claim.name} | {claim.quote} | {result['measured']} | {result['verdict']} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--long", action="store_true", help="run the full benchmarks instead of the short versions")
    parser.add_argument("--only", nargs="+", choices=[c.name for c in CLAIMS], help="only these claims")
    parser.add_argument("--list", action="store_true", help="print the claims and their commands, run nothing")
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--suite", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.suite is not None:
        return run_suite(args.suite)
    claims = tuple(c for c in CLAIMS if args.only is None or c.name in args.only)
    readme = README.read_text(encoding="utf-8")
    missing = [c.name for c in claims if not quoted_in_readme(c, readme)]
    if missing:
        print(f"claims.py: README.md no longer quotes: {', '.join(missing)}; update CLAIMS", file=sys.stderr)
        return 2
    if args.list:
        for claim in claims:
            print(f'{claim.name}: "{claim.quote}"\n  short: {claim.short}\n  long: {claim.long}')
        return 0
    with tempfile.TemporaryDirectory(prefix="claims-") as tmp:
        results = {claim.name: run_claim(claim, args.long, Path(tmp)) for claim in claims}
    report = {"git_hash": _git_hash(), "mode": "long" if args.long else "short", "machine": machine_info()}
    report["date"] = time.strftime("%Y-%m-%d %H:%M")
    report["claims"] = {c.name: {"quote": c.quote, **results[c.name]} for c in claims}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print_table(claims, results)
    print(f"\ngit {report['git_hash'][:12]}, {report['mode']} mode; results: {args.output}")
    return 1 if any(r["verdict"] == "differs" for r in results.values()) else 0


def _git_hash() -> str:
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True)
        return done.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


if __name__ == "__main__":
    sys.exit(main())
