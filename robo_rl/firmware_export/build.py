"""Compile generated policies: a host shared library driven through ctypes, and a Cortex-M4F object with its size.

Host: `gcc -O2 -std=c99 -Wall -Wextra -Werror -pedantic -shared -fPIC`; many policies (different prefixes) can go
into one library, compiled by a few compiler processes at once (`build_host_library`).
Cortex-M4F: `arm-none-eabi-gcc -mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16 -O2 ...` into one
object; `arm-none-eabi-size` of that object alone gives text (code + const weights), data and bss.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from robo_rl.firmware_export.codegen import CSources

WARNINGS = ("-Wall", "-Wextra", "-Werror", "-pedantic")
HOST_CC = "gcc"
HOST_SIZE = "size"
HOST_CFLAGS = ("-O2", "-std=c99", *WARNINGS)
CORTEX_M4_CC = "arm-none-eabi-gcc"
CORTEX_M4_SIZE = "arm-none-eabi-size"
CORTEX_M4_ARCH = ("-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16")
CORTEX_M4_CFLAGS = (*CORTEX_M4_ARCH, "-O2", "-std=c99", *WARNINGS, "-ffunction-sections", "-fdata-sections")
COMPILE_TIMEOUT_S = 600


class ToolNotFoundError(RuntimeError):
    """A compiler or binutils program is not installed."""


class CompileError(RuntimeError):
    """The compiler rejected generated code; the message carries the command and the compiler's output."""


@dataclass(frozen=True)
class SizeReport:
    """`size` / `arm-none-eabi-size` (Berkeley format) of one object file, in bytes."""

    text: int
    """Code and read-only data (the `static const` weights live here)."""
    data: int
    """Initialized RAM (copied from flash at start-up)."""
    bss: int
    """Zero-initialized RAM (the scratch buffers)."""
    object_path: Path

    @property
    def flash(self) -> int:
        return self.text + self.data

    @property
    def ram(self) -> int:
        return self.data + self.bss


@dataclass(frozen=True, eq=False)
class HostPolicy:
    """A compiled policy entry `int {prefix}_policy(const float *obs, float *action)` in a loaded library."""

    prefix: str
    obs_dim: int
    action_dim: int
    """Floats the function writes (a chunk's every step)."""
    library_path: Path
    function: Callable[[int, int], int] = field(repr=False)
    """The ctypes function: (obs address, action address) → return code."""

    def __call__(self, obs: np.ndarray, fill: float = float("nan")) -> tuple[np.ndarray, np.ndarray]:
        """Run the C policy on each row of `obs` `(n, obs_dim)` (or one `(obs_dim,)` vector).

        Returns `(actions, codes)`: actions `(n, action_dim)` float32 and return codes `(n,)` int32 (squeezed
        for a single vector). `action` buffers start filled with `fill`, so a row whose code is an error shows
        what the C code left in it (it writes nothing then).
        """
        x = np.ascontiguousarray(obs, dtype=np.float32)
        single = x.ndim == 1
        x = np.ascontiguousarray(np.atleast_2d(x))
        if x.shape[1] != self.obs_dim:
            raise ValueError(f"{self.prefix}: obs has {x.shape[1]} features, the policy expects {self.obs_dim}")
        actions = np.full((x.shape[0], self.action_dim), fill, dtype=np.float32)
        codes = np.empty(x.shape[0], dtype=np.int32)
        obs_base, action_base = x.ctypes.data, actions.ctypes.data
        obs_step, action_step = x.strides[0], actions.strides[0]
        for row in range(x.shape[0]):
            codes[row] = self.function(obs_base + row * obs_step, action_base + row * action_step)
        return (actions[0], codes[0:1].reshape(())) if single else (actions, codes)


def find_tool(name: str) -> str:
    """Path of an installed program, or ToolNotFoundError saying which package provides it."""
    path = shutil.which(name)
    if path is None:
        package = {HOST_CC: "gcc", HOST_SIZE: "binutils"}.get(name, "gcc-arm-none-eabi and libnewlib-arm-none-eabi")
        raise ToolNotFoundError(f"{name} not found on PATH; install {package} (`make system-deps` does it with apt)")
    return path


def header_define(sources: CSources, name: str) -> int:
    """Integer value of `#define {PREFIX}_{name} <int>` in the generated header."""
    match = re.search(rf"^#define {sources.prefix.upper()}_{name} (\d+)\b", sources.header, re.MULTILINE)
    if match is None:
        raise ValueError(f"{sources.header_name} defines no {sources.prefix.upper()}_{name}")
    return int(match.group(1))


def output_width(sources: CSources) -> int:
    """Floats the policy function writes: `ACTION_CHUNK` steps (1 in a header without it, e.g. a hand-written
    one) of `ACTION_DIM` actions."""
    chunk = f"#define {sources.prefix.upper()}_ACTION_CHUNK "
    steps = header_define(sources, "ACTION_CHUNK") if chunk in sources.header else 1
    return header_define(sources, "ACTION_DIM") * steps


def build_host(sources: CSources, directory: Path) -> HostPolicy:
    """Compile one policy into a shared library in `directory` and load it."""
    return build_host_library([sources], directory)[sources.prefix]


def build_host_library(
    sources: Sequence[CSources], directory: Path, name: str = "policies", jobs: int | None = None
) -> dict[str, HostPolicy]:
    """Compile several policies (distinct prefixes) into one shared library; returns prefix → HostPolicy.

    The sources are split over `jobs` compiler processes (default: CPU count), each compiling its share in one
    call, then linked once. The library file name carries a hash of its sources, so a changed policy is never
    served from an already-loaded library of the same path.
    """
    prefixes = [s.prefix for s in sources]
    if len(set(prefixes)) != len(prefixes):
        raise ValueError(f"prefixes must be distinct to share a library: {prefixes}")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    c_files = [s.write(directory)[1] for s in sources]
    digest = hashlib.sha1("".join(s.header + s.source for s in sources).encode()).hexdigest()[:12]
    library = directory / f"lib{name}_{digest}.so"
    if not library.exists():
        objects = _compile_objects(find_tool(HOST_CC), (*HOST_CFLAGS, "-fPIC"), c_files, directory, jobs)
        _run([find_tool(HOST_CC), "-shared", "-o", str(library), *map(str, objects), "-lm"], directory)
    loaded = ctypes.CDLL(str(library))
    return {s.prefix: _host_policy(loaded, library, s) for s in sources}


def build_cortex_m4(sources: CSources, directory: Path) -> SizeReport:
    """Compile the policy for the Cortex-M4F (`CORTEX_M4_CFLAGS`) into `directory` and measure the object."""
    directory = Path(directory)
    _, c_file = sources.write(directory)
    obj = _compile_objects(find_tool(CORTEX_M4_CC), CORTEX_M4_CFLAGS, [c_file], directory, 1)[0]
    return object_size(obj)


def build_host_object(sources: CSources, directory: Path) -> SizeReport:
    """Compile the policy with the host gcc (`HOST_CFLAGS`) into `directory` and measure the object with `size`."""
    directory = Path(directory)
    _, c_file = sources.write(directory)
    obj = _compile_objects(find_tool(HOST_CC), HOST_CFLAGS, [c_file], directory, 1)[0]
    return object_size(obj, HOST_SIZE)


def object_size(path: Path, size_tool: str = CORTEX_M4_SIZE) -> SizeReport:
    """text/data/bss of one object file from `size_tool` (Berkeley format; default `arm-none-eabi-size`)."""
    output = _run([find_tool(size_tool), "--format=berkeley", str(path)], Path(path).parent)
    lines = output.strip().splitlines()
    if len(lines) < 2:
        raise RuntimeError(f"unexpected {size_tool} output: {output!r}")
    text, data, bss = (int(v) for v in lines[1].split()[:3])
    return SizeReport(text=text, data=data, bss=bss, object_path=Path(path))


def _host_policy(library: ctypes.CDLL, path: Path, sources: CSources) -> HostPolicy:
    function = getattr(library, f"{sources.prefix}_policy")
    function.argtypes = (ctypes.c_void_p, ctypes.c_void_p)
    function.restype = ctypes.c_int
    return HostPolicy(
        prefix=sources.prefix,
        obs_dim=header_define(sources, "OBS_DIM"),
        action_dim=output_width(sources),
        library_path=path,
        function=function,
    )


def _compile_objects(
    compiler: str, flags: Sequence[str], c_files: Sequence[Path], directory: Path, jobs: int | None
) -> list[Path]:
    """Compile `c_files` to objects next to them, in up to `jobs` compiler processes of several files each."""
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(c_files)))
    chunks = [list(c_files[k::jobs]) for k in range(jobs)]

    def compile_chunk(chunk: list[Path]) -> None:
        _run([compiler, *flags, "-c", *(str(f.name) for f in chunk)], directory)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(compile_chunk, chunks))
    return [directory / f"{Path(f).stem}.o" for f in c_files]


def _run(command: list[str], cwd: Path) -> str:
    try:
        result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S)
    except subprocess.TimeoutExpired as error:
        raise CompileError(f"timed out after {COMPILE_TIMEOUT_S} s: {_shown(command)}") from error
    if result.returncode != 0:
        raise CompileError(f"{_shown(command)} failed ({result.returncode}):\n{result.stderr.strip()}")
    return result.stdout


def _shown(command: list[str]) -> str:
    """The command with long file lists elided."""
    return " ".join(command if len(command) <= 24 else [*command[:20], "...", *command[-2:]])
