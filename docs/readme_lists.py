"""README's task table, preset list and `--algo` list, generated from the registries.

    python docs/readme_lists.py          # rewrite them in README.md
    python docs/readme_lists.py --check  # exit 1 when README.md's lists are not what the registries say

The table: every registered task (`robo_rl.sim.register`: its name, backend and description), tasks with the same
backend and description on one row. The list: every preset (the task folders' `PRESETS`, `robo_rl.sim.presets`).
Both go between their markers. The `--algo` list: `[--algo a|b|...]` of the command line, the registered algorithms
(`robo_rl.algorithms.registry`) in registration order. None imports a simulator, so all are written with the core
install.
`make docs` runs this with the preset files' and the package map's generators.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
TASKS = ("<!-- tasks:begin (docs/readme_lists.py writes this) -->", "<!-- tasks:end -->")
PRESETS = ("<!-- presets:begin (docs/readme_lists.py writes this) -->", "<!-- presets:end -->")
ALGO_CHOICES = re.compile(r"\[--algo [\w|]+\]")
"""The `--algo` choices of README's `robo-rl train` line."""


def task_table() -> str:
    """The markdown table of the registered tasks, in registration order, same (backend, about) on one row."""
    from robo_rl.sim import about, registry

    rows: dict[tuple[str, str], list[str]] = {}
    for name in registry.in_registration_order():
        rows.setdefault(about(name), []).append(name)
    lines = ["| task | backend | what |", "|---|---|---|"]
    lines += [
        f"| {', '.join(f'`{n}`' for n in names)} | {backend} | {text} |" for (backend, text), names in rows.items()
    ]
    return "\n".join(lines)


def preset_list() -> str:
    """Every preset name, in code quotes, sorted, wrapped at 116 characters (read from the task folders' source, so
    that no simulator is imported)."""
    from robo_rl.sim.presets import declared_presets, preset_modules

    words = [f"`{name}`," for name in sorted(name for module in preset_modules() for name in declared_presets(module))]
    words[-1] = words[-1].rstrip(",")
    lines, line = [], ""
    for word in words:
        if line and len(line) + 1 + len(word) > 116:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return "\n".join([*lines, line])


def rewrite(text: str, markers: tuple[str, str], body: str) -> str:
    start, end = text.index(markers[0]) + len(markers[0]), text.index(markers[1])
    return text[:start] + "\n" + body + "\n" + text[end:]


def algo_choices(text: str) -> str:
    """`text` with its `[--algo ...]` listing the registered algorithms; ValueError where it has none."""
    from robo_rl.algorithms.registry import names

    if not ALGO_CHOICES.search(text):
        raise ValueError("README.md has no `[--algo a|b|...]` to write the registered algorithms into")
    return ALGO_CHOICES.sub(f"[--algo {'|'.join(names())}]", text, count=1)


def fresh(text: str) -> str:
    return algo_choices(rewrite(rewrite(text, TASKS, task_table()), PRESETS, preset_list()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 when README's lists are stale")
    args = parser.parse_args()
    text = README.read_text(encoding="utf-8")
    new = fresh(text)
    if args.check:
        if new != text:
            print(
                "README.md's task table, preset list or --algo list is out of date: run python docs/readme_lists.py",
                file=sys.stderr,
            )
            return 1
        return 0
    README.write_text(new, encoding="utf-8")
    print(f"wrote the task table, the preset list and the --algo list into {README}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
