"""What the algorithm registry implies for the type checker, written from it.

    python docs/algorithm_sections.py          # rewrite both from robo_rl/algorithms/registry.py
    python docs/algorithm_sections.py --check  # exit 1 when either is not what the registry says

An algorithm is one `register(AlgorithmEntry(NAME, loop, Config, ...))` line; from the entries, in registration order:
- `robo_rl/algorithms/registered.py`: `AlgorithmName`, the Literal of the registered names (the type of `algo`), and
  the config classes, imported from their modules;
- `ExperimentConfig`'s algorithm sections (`robo_rl/experiment.py`, between its `algorithm-sections` markers): one
  field per algorithm, named NAME, of its config class, so that `cfg.NAME` and `ExperimentConfig(NAME=Config(...))`
  are typed exactly and YAML files and `--set NAME.key=...` address it.
Only the registry is imported (not the experiment config, which may be stale), so both are written with the core
install. `make docs` runs this before the generators that read `ExperimentConfig`.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REGISTERED = ROOT / "robo_rl" / "algorithms" / "registered.py"
EXPERIMENT = ROOT / "robo_rl" / "experiment.py"
MODULE = "registered"
"""How robo_rl/experiment.py imports the generated module (`from robo_rl.algorithms import registered`)."""
COMMAND = "make docs (python docs/algorithm_sections.py)"
MARKERS = (
    "    # algorithm-sections:begin (written from robo_rl/algorithms/registry.py by `make docs`; do not edit)\n",
    "    # algorithm-sections:end\n",
)

LINE = 120
"""ruff's line length: a longer generated line is wrapped as `ruff format` wraps it."""
HEADER = '''"""The registered algorithms as static types: `AlgorithmName`, the Literal of their names (the type of a
config's `algo` and of `--algo`), and their config classes (the types of `ExperimentConfig`'s sections).

Written from robo_rl/algorithms/registry.py by `make docs` (`python docs/algorithm_sections.py`); do not edit:
register an algorithm there, then run it. A test checks that this file is current.
"""

from __future__ import annotations

from typing import Literal
'''


def _entries() -> list[tuple[str, type]]:
    """(name, config class) of every registered algorithm, in registration order."""
    from robo_rl.algorithms.registry import entries

    return [(entry.name, entry.config) for entry in entries()]


def _config_classes(entries: list[tuple[str, type]]) -> dict[str, str]:
    """Config class name → its module, each once; ValueError when a class cannot be imported by its name or two
    classes share a name."""
    classes: dict[str, str] = {}
    for name, config in entries:
        module, qualname = config.__module__, config.__qualname__
        if module == "__main__" or "." in qualname or getattr(sys.modules[module], qualname, None) is not config:
            raise ValueError(f"algorithm {name!r}: its config {qualname} is not a module-level class of {module}")
        if classes.setdefault(qualname, module) != module:
            raise ValueError(f"algorithm {name!r}: config classes of {module} and {classes[qualname]} share a name")
    return classes


def _natural(text: str) -> list[int | str]:
    """Sort key of isort's natural order (`td3` before `td10`)."""
    return [int(part) if part.isdigit() else part.lower() for part in re.split(r"(\d+)", text)]


def _wrapped(head: str, items: list[str], tail: str, indent: str = "", parens: bool = False) -> str:
    """`head + items + tail` on one line where it fits, else one item a line with a trailing comma (a form that
    `ruff format` keeps); `parens`: the wrapped form adds them (an import's names)."""
    line = f"{indent}{head}{', '.join(items)}{tail}"
    if len(line) <= LINE:
        return line + "\n"
    head, tail = (f"{head}(", f"){tail}") if parens else (head, tail)
    return f"{indent}{head}\n" + "".join(f"{indent}    {item},\n" for item in items) + f"{indent}{tail}\n"


def registered_module(entries: list[tuple[str, type]]) -> str:
    """The text of robo_rl/algorithms/registered.py: one import a config class, as ruff's isort orders them (by
    module, then constants, classes and the rest), re-exported by `as`."""
    classes = _config_classes(entries)
    order = sorted(classes, key=lambda c: (_natural(classes[c]), 0 if c.isupper() else 1 if c[0].isupper() else 2, c))
    imports = "".join(_wrapped(f"from {classes[c]} import ", [f"{c} as {c}"], "", parens=True) for c in order)
    literal = _wrapped("AlgorithmName = Literal[", [f'"{name}"' for name, _ in entries], "]")
    return (
        HEADER
        + ("\n" + imports if imports else "")
        + "\n"
        + literal
        + '"""A registered algorithm\'s name: `--algo` and a config\'s `algo` are typed by it (a config file naming'
        + '\nanother is a ConfigError listing these)."""\n'
    )


def experiment_fields(entries: list[tuple[str, type]]) -> str:
    """The algorithm-sections block of `ExperimentConfig`'s body: one field per algorithm."""
    lines = []
    for name, config in entries:
        cls = f"{MODULE}.{config.__qualname__}"
        lines.append(_wrapped(f"{name}: {cls} = field(", [f"default_factory={cls}"], ")", indent="    "))
    return "".join(lines)


def rewrite_experiment(text: str, entries: list[tuple[str, type]]) -> str:
    """`text` (robo_rl/experiment.py) with its algorithm-sections block written; ValueError when an algorithm's name
    is already one of `ExperimentConfig`'s other fields."""
    if MARKERS[0] not in text or MARKERS[1] not in text:
        raise ValueError(
            f"robo_rl/experiment.py: ExperimentConfig has no lines {MARKERS[0].strip()!r}, {MARKERS[1].strip()!r}"
        )
    start, end = text.index(MARKERS[0]) + len(MARKERS[0]), text.index(MARKERS[1])
    outside = text[:start] + text[end:]
    body = outside[outside.index("\nclass ExperimentConfig:") :]
    others = set(re.findall(r"^    (\w+): ", body[: body.find("\n    def ")], re.MULTILINE))
    clashes = [name for name, _ in entries if name in others]
    if clashes:
        raise ValueError(f"algorithm {clashes[0]!r}: ExperimentConfig has a field of that name that is not its section")
    return text[:start] + experiment_fields(entries) + text[end:]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 when a written part is stale")
    args = parser.parse_args()
    entries = _entries()
    wanted = {
        REGISTERED: registered_module(entries),
        EXPERIMENT: rewrite_experiment(EXPERIMENT.read_text(encoding="utf-8"), entries),
    }
    stale = [path for path, text in wanted.items() if not path.is_file() or path.read_text(encoding="utf-8") != text]
    if args.check:
        if stale:
            names = " and ".join(str(path.relative_to(ROOT)) for path in stale)
            print(f"{names}: not what the algorithm registry says: run {COMMAND}", file=sys.stderr)
            return 1
        return 0
    for path in stale:
        path.write_text(wanted[path], encoding="utf-8")
    print(f"wrote AlgorithmName and the config sections of {', '.join(name for name, _ in entries)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
