"""The same benchmarks on an older commit and on the working tree, interleaved in one run: did a change slow
anything down?

    python bench/before_after.py --ref 224e80b [--hover-seeds 3] [--pendulum-seeds 3] [--rounds 1]

The older commit is checked out as a git worktree (under /tmp) and imported in place of the installed robo_rl
through a folder of links put first on PYTHONPATH (`robo_rl` → its robo_rl/; a commit from before the one-package
layout has its top-level sim/, real/ and firmware_export/ linked in as its setup.py mapped them), so both sides
share this venv. Each round runs,
one process at a time, alternating sides: the hover gate (`bench/hover_gate.py --algos ppo`) and Pendulum to -200
(`bench/pendulum_vs_sb3.py --only robo --only sb3_ppo`), each side with its own copy of the benchmark script.
Ratios are after / before from the same run; writes bench/results/before_after.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from machine import machine_info

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "before_after.json"
MAPPED = {"sim": "sim", "real": "real", "firmware_export": "firmware_export"}
"""robo_rl subpackages that lived outside robo_rl/ in the source tree before the one-package layout."""
METRICS = (
    ("ppo", "median_seconds_from_process_start"),
    ("robo", "median_wall_time_s"),
    ("sb3_ppo", "median_wall_time_s"),
)
"""(method, summary key) compared: hover PPO from process start; Pendulum robo_rl PPO and SB3 PPO training time."""


def worktree(ref: str) -> Path:
    """A detached worktree of `ref` under /tmp (reused when it is already there)."""
    commit = subprocess.run(["git", "rev-parse", ref], cwd=ROOT, capture_output=True, text=True, check=True)
    path = Path(tempfile.gettempdir()) / f"robo_rl_before_{commit.stdout.strip()[:12]}"
    if not path.is_dir():
        subprocess.run(["git", "worktree", "add", "--detach", str(path), ref], cwd=ROOT, check=True)
    return path


def shadow_package(tree: Path) -> Path:
    """A folder whose `robo_rl` is `tree`'s, laid out as the installed package (links only)."""
    folder = tree.parent / f"{tree.name}_pythonpath"
    package = folder / "robo_rl"
    package.mkdir(parents=True, exist_ok=True)
    for child in (tree / "robo_rl").iterdir():
        _link(package / child.name, child)
    for name, source in MAPPED.items():
        if (tree / source / "__init__.py").is_file():  # the old layout
            _link(package / name, tree / source)
    return folder


def _link(link: Path, target: Path) -> None:
    if not link.is_symlink():
        link.symlink_to(target)


def run(tree: Path, pythonpath: Path | None, script: str, args: list[str], output: Path) -> dict[str, Any]:
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    command = [sys.executable, str(tree / "bench" / script), *args, "--output", str(output)]
    print("$", " ".join(command), "(before)" if pythonpath else "(after)", flush=True)
    subprocess.run(command, cwd=tree, env=env, check=True)
    return json.loads(output.read_text())


def check_import(pythonpath: Path, tree: Path) -> None:
    """The before side really imports the old tree."""
    code = "import robo_rl, robo_rl.sim; print(robo_rl.__file__); print(robo_rl.sim.__file__)"
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(pythonpath)},
        cwd=tempfile.gettempdir(),  # not a source tree: the current folder comes first on sys.path
        capture_output=True,
        text=True,
    )
    files = done.stdout.split()
    if done.returncode != 0 or not all(f.startswith(str(pythonpath)) for f in files):
        raise SystemExit(f"the before side does not import {tree}: {done.stdout}{done.stderr}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ref", required=True, help="the older commit (e.g. the one before a refactor)")
    parser.add_argument("--hover-seeds", type=int, default=3, help="hover-gate seeds per side and round")
    parser.add_argument("--pendulum-seeds", type=int, default=3, help="Pendulum seeds per method, side and round")
    parser.add_argument("--rounds", type=int, default=1, help="before/after rounds (default 1)")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    before_tree = worktree(args.ref)
    shadow = shadow_package(before_tree)
    check_import(shadow, before_tree)
    sides = {"before": (before_tree, shadow), "after": (ROOT, None)}
    scratch = Path(tempfile.mkdtemp(prefix="before_after_"))
    rows: list[dict[str, Any]] = []
    for round_index in range(args.rounds):
        pendulum = ["--only", "robo", "--only", "sb3_ppo", "--seeds", str(args.pendulum_seeds)]
        for bench, script, extra in (
            ("hover", "hover_gate.py", ["--algos", "ppo", "--seeds", str(args.hover_seeds)]),
            ("pendulum", "pendulum_vs_sb3.py", pendulum),
        ):
            for side, (tree, pythonpath) in sides.items():
                result = run(tree, pythonpath, script, extra, scratch / f"{bench}_{side}_{round_index}.json")
                rows.append({"round": round_index, "bench": bench, "side": side, "summary": result["summary"]})
    report = {"ref": args.ref, "rows": rows, "ratios": ratios(rows), "machine": machine_info()}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report["ratios"], indent=2))
    print(f"wrote {args.output}")


def ratios(rows: list[dict[str, Any]]) -> dict[str, float | None]:
    """after / before of each round's medians (above 1: slower after)."""
    out: dict[str, float | None] = {}
    for row in rows:
        if row["side"] != "after":
            continue
        before = next(
            r for r in rows if r["round"] == row["round"] and r["bench"] == row["bench"] and r["side"] == "before"
        )
        for method, key in (
            ("ppo", "median_seconds_from_process_start"),
            ("robo", "median_wall_time_s"),
            ("sb3_ppo", "median_wall_time_s"),
        ):
            if method in row["summary"]:
                a, b = row["summary"][method].get(key), before["summary"][method].get(key)
                out[f"{row['bench']}/{method}/round{row['round']}"] = a / b if a and b else None
    return out


if __name__ == "__main__":
    main()
