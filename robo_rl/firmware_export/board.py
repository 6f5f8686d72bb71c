"""What a firmware board is, and the helpers its module uses to write its folder.

A board (a `robo-rl export --target`) is one module in `robo_rl.firmware_export.boards` that defines `BOARD`, a
`Board`: its name, a one-line summary, whether QEMU can run it, an optional check that refuses a policy the board
cannot run (before anything is written), and the writer of its folder. `boards` finds the modules by itself, so
adding a board is one module (plus its template files). Standard library only: the CLI lists the boards without
loading numpy or onnx.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import robo_rl

if TYPE_CHECKING:
    from robo_rl.firmware_export.codegen import CSources
    from robo_rl.firmware_export.ir import PolicyInfo, PolicyIR
    from robo_rl.firmware_export.report import ExportReport

TEMPLATES = Path(__file__).parent / "templates"
README_FILE = "README.md"
REPORT_FILE = "report.json"

_PLACEHOLDER = re.compile(r"@@([A-Za-z_0-9]+)@@")


class Writer(Protocol):
    def __call__(
        self, context: TargetContext, out_dir: Path, dry_run: bool, report: ExportReport | None = None
    ) -> list[str]: ...


@dataclass(frozen=True)
class Board:
    name: str
    """The `--target` value."""
    summary: str
    """What the folder holds, one line for `--help` and the README."""
    write: Writer
    """Writes the folder (or, with dry_run, only lists its files)."""
    qemu: bool = False
    """`verify` also runs the policy on an emulated Cortex-M4 in QEMU."""
    check: Callable[[PolicyInfo], object] | None = None
    """Raises ValueError for a policy the board cannot run, before anything is written."""
    order: int = 100
    """Where it comes in lists (`--help`, error messages): lower first, then by name."""


def render(template: str, values: Mapping[str, str]) -> str:
    """Replace every `@@NAME@@` in `template` with `values[NAME]`; a placeholder without a value is an error."""
    missing = sorted({name for name in _PLACEHOLDER.findall(template) if name not in values})
    if missing:
        raise KeyError(f"template placeholders without a value: {', '.join(missing)}")
    return _PLACEHOLDER.sub(lambda match: values[match.group(1)], template)


def c_string(text: str) -> str:
    """`text` as a C string literal (ASCII; other bytes as octal escapes)."""
    out = []
    for byte in text.encode():
        char = chr(byte)
        if char in '"\\':
            out.append("\\" + char)
        elif 32 <= byte < 127:
            out.append(char)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def c_comment(text: str) -> str:
    """`text` made safe inside a C block comment."""
    return text.replace("*/", "* /").replace("/*", "/ *")


@dataclass(frozen=True)
class TargetContext:
    """What a board's writer gets: the policy, its C sources and the placeholder values of the templates."""

    ir: PolicyIR
    onnx_path: Path
    target: str
    sources: CSources
    prefix: str
    numerics: str

    def values(self) -> dict[str, str]:
        """Placeholder values shared by all templates."""
        info = self.ir.info
        stem = Path(self.sources.source_name).stem
        period = info.dt if info.dt is not None else 0.01
        return {
            "PREFIX": self.prefix.upper(),
            "prefix": self.prefix,
            "POLICY_NAME": f"{self.prefix}_policy",
            "POLICY_HEADER": self.sources.header_name,
            "POLICY_SOURCE": self.sources.source_name,
            "SOURCE_STEM": stem,
            "TASK": c_comment(info.task or "unknown"),
            "ROBO_RL_VERSION": robo_rl.__version__,
            "ONNX_NAME": self.onnx_path.name,
            "DT": f"{info.dt:g}" if info.dt is not None else "unknown",
            "TARGET": self.target,
            "NUMERICS": self.numerics,
            "ACTION_NAME_LIST": ", ".join(c_string(name) for name in info.action_names),
            "PERIOD_US": str(max(1, round(period * 1e6))),
            "LIBRARY_VERSION": library_version(robo_rl.__version__),
        }


def library_version(version: str) -> str:
    """A semver-like x.y.z for library.properties (local/dev suffixes dropped)."""
    numbers = re.findall(r"\d+", version.split("+")[0])[:3]
    return ".".join([*numbers, "0", "0", "0"][:3])


class FolderWriter:
    """Collects (relative path → text) and writes them, or only lists them on a dry run."""

    def __init__(self, out_dir: Path, dry_run: bool) -> None:
        self.out_dir, self.dry_run = out_dir, dry_run
        self.paths: list[str] = []

    def put(self, relative: str, text: str) -> None:
        self.paths.append(relative)
        if not self.dry_run:
            path = self.out_dir / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)

    def sources(self, sources: CSources, folder: str = "") -> None:
        self.put(f"{folder}{sources.header_name}", sources.header)
        self.put(f"{folder}{sources.source_name}", sources.source)


def template(relative: str) -> str:
    return (TEMPLATES / relative).read_text()


def readme(context: TargetContext, template: str, report: ExportReport | None, extra: dict[str, str]) -> str:
    values = {**context.values(), **extra}
    files = report.files if report is not None else ()
    values["FILE_LIST"] = "\n".join(f"- `{name}`" for name in files)
    values["REPORT"] = report_markdown(report) if report is not None else ""
    return render(template, values)


def report_markdown(report: ExportReport) -> str:
    lines = "\n".join(f"- {line}" for line in report.lines()[1:])
    return f"{lines}\n\nThe same numbers are in `{REPORT_FILE}`."
