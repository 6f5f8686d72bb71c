"""Text helpers of the C generator: float literals, comments and strings, macro names, declarations, array
initializers."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np

VALUES_PER_LINE = 8


def float_literal(value: float) -> str:
    """The shortest C float literal that parses back to exactly `float32(value)` (INFINITY for infinities)."""
    single = np.float32(value)
    if math.isnan(single):
        raise ValueError("NaN constant in the policy")
    if math.isinf(single):
        return "INFINITY" if single > 0 else "-INFINITY"
    for digits in range(6, 10):
        text = f"{float(single):.{digits}g}"
        if np.float32(text) == single:
            break
    return (text if "e" in text or "." in text else text + ".0") + "f"


def float_literals(values: np.ndarray, what: str) -> list[str]:
    flat = np.asarray(values, np.float32).reshape(-1)
    if not np.isfinite(flat).all():
        raise ValueError(f"{what}: non-finite constant in the policy")
    texts = [f"{v:.9g}" for v in flat.astype(np.float64).tolist()]
    return [t + "f" if ("e" in t or "." in t) else t + ".0f" for t in texts]


def comment(text: str) -> str:
    """`text` made safe inside a /* */ comment: ASCII, one line, no comment end, no trigraphs."""
    ascii_text = text.encode("ascii", "replace").decode().replace("?", "_") if not text.isascii() else text
    return " ".join(ascii_text.replace("*/", "* /").replace("??", "? ?").split())


def c_string(text: str) -> str:
    safe = comment(text).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{safe}"'


def macro_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_").upper()


def bound(value: float) -> str:
    return "-inf" if value == -math.inf else "inf" if value == math.inf else f"{value:g}"


def declaration(kind: str, items: list[str]) -> list[str]:
    """`kind a0 = ..., a1 = ...;` with four initializers per line."""
    lines = [", ".join(items[i : i + 4]) for i in range(0, len(items), 4)]
    ends = [","] * (len(lines) - 1) + [";"]
    return [f"{kind} {lines[0]}{ends[0]}", *(f"    {line}{end}" for line, end in zip(lines[1:], ends[1:], strict=True))]


def array_body(values: Sequence[str]) -> str:
    lines = [", ".join(values[i : i + VALUES_PER_LINE]) for i in range(0, len(values), VALUES_PER_LINE)]
    return "{\n    " + ",\n    ".join(lines) + "\n}"
