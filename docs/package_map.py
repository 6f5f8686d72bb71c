"""The package map of docs/ARCHITECTURE.md, generated from the code: which parts of robo_rl import which.

    python docs/package_map.py          # rewrite the map between the markers in docs/ARCHITECTURE.md
    python docs/package_map.py --check  # exit 1 when the map there is not what the code says (make test checks)

Every import statement counts, those inside functions too (read with `ast`, as tests/test_import_layers.py does).
A part is a subpackage or a top-level module of robo_rl; parts are grouped into the layers of GROUPS. The picture
draws one arrow per pair of layers that import each other's code, from the importer to the imported, labelled with
the number of import statements; the table lists every part's imports.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "robo_rl"
DOC = ROOT / "docs" / "ARCHITECTURE.md"
BEGIN, END = "<!-- package-map:begin (docs/package_map.py writes this) -->", "<!-- package-map:end -->"
GROUPS: dict[str, tuple[str, ...]] = {
    "cli": ("cli",),
    "root": ("api", "build", "experiment", "presets", "launch"),
    "training": ("runners", "hil"),
    "robot": ("robot",),
    "import / export": ("importers", "export", "firmware_export"),
    "sim": ("sim",),
    "real": ("real",),
    "core": (
        "algorithms",
        "modules",
        "storage",
        "chunks",
        "sysid",
        "envs",
        "spaces",
        "image_spec",
        "memory_spec",
        "artifact",
        "actuator",
        "cost_spec",
        "task_record",
        "config",
        "provenance",
        "distributed",
        "capture",
    ),
    "devices": ("devices",),
}
"""The layers, from the top; every part of robo_rl belongs to one (a new part must be placed here)."""


PRESETS = "presets"
"""A part of its own: the tasks' presets (robo_rl/sim/TASK/presets.py, and robo_rl/sim/presets.py, which collects
them). They live in the task folders but build training configs, so they sit in the root layer, above the simulators
they configure."""


def parts() -> list[str]:
    """The subpackages and top-level modules of robo_rl/, and the presets."""
    found = [p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()]
    found += [p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"]
    return sorted([*found, PRESETS])


def part_of(module: str) -> str | None:
    """The part a dotted module name belongs to; None outside robo_rl (or robo_rl itself)."""
    pieces = module.split(".")
    if pieces[:2] == ["robo_rl", "sim"] and pieces[-1] == "presets" and len(pieces) in (3, 4):
        return PRESETS
    return pieces[1] if len(pieces) > 1 and pieces[0] == "robo_rl" else None


def _source_part(path: Path) -> str:
    """The part of the file `path` (a presets module, or the part of its first folder under robo_rl/)."""
    relative = path.relative_to(PACKAGE)
    if relative.parts[0] == "sim" and path.stem == "presets" and len(relative.parts) in (2, 3):
        return PRESETS
    return relative.parts[0].removesuffix(".py")


def import_counts() -> Counter[tuple[str, str]]:
    """(importing part, imported part) → import statements, between different parts."""
    counts: Counter[tuple[str, str]] = Counter()
    for path in PACKAGE.rglob("*.py"):
        source = _source_part(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module] if node.module != "robo_rl" else [f"robo_rl.{a.name}" for a in node.names]
            for name in names:
                target = part_of(name)
                if target is not None and target != source and target in GROUP_OF:
                    counts[source, target] += 1
    return counts


GROUP_OF = {part: group for group, members in GROUPS.items() for part in members}


def render(counts: Counter[tuple[str, str]]) -> str:
    """The markdown between the markers: the Mermaid picture of the layers and the table of parts."""
    missing = sorted(set(parts()) - set(GROUP_OF))
    if missing:
        raise SystemExit(f"docs/package_map.py: place {missing} in GROUPS")
    between: Counter[tuple[str, str]] = Counter()
    for (source, target), n in counts.items():
        if GROUP_OF[source] != GROUP_OF[target]:
            between[GROUP_OF[source], GROUP_OF[target]] += n
    ids = {group: f"g{k}" for k, group in enumerate(GROUPS)}
    lines = ["```mermaid", "flowchart TD"]
    for group, members in GROUPS.items():
        lines.append(f'    {ids[group]}["{group}: {", ".join(members)}"]')
    for (source, target), n in sorted(between.items(), key=lambda item: (list(GROUPS).index(item[0][0]), item[0][1])):
        lines.append(f"    {ids[source]} -->|{n}| {ids[target]}")
    lines += ["```", "", "| part | layer | imports (import statements) | imported by |", "|---|---|---|---|"]
    for group, members in GROUPS.items():
        for part in members:
            out = sorted((t, n) for (s, t), n in counts.items() if s == part)
            into = sorted(s for (s, t) in counts if t == part)
            imports = ", ".join(f"{t} ({n})" for t, n in out) or "nothing of robo_rl"
            lines.append(f"| {part} | {group} | {imports} | {', '.join(into) or 'none'} |")
    return "\n".join(lines)


def current(doc: str) -> str:
    """The generated text now between the markers of `doc`."""
    start, end = doc.index(BEGIN) + len(BEGIN), doc.index(END)
    return doc[start:end].strip("\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 when the map is out of date")
    args = parser.parse_args()
    doc = DOC.read_text(encoding="utf-8")
    fresh = render(import_counts())
    if args.check:
        if current(doc) != fresh:
            print("docs/ARCHITECTURE.md's package map is out of date: run python docs/package_map.py", file=sys.stderr)
            return 1
        return 0
    start, end = doc.index(BEGIN) + len(BEGIN), doc.index(END)
    DOC.write_text(doc[:start] + "\n" + fresh + "\n" + doc[end:], encoding="utf-8")
    print(f"wrote the package map into {DOC}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
