"""Compile generated policies: a host shared library driven through ctypes, and a Cortex-M4F object with its size.

Host: `gcc -O2 -std=c99 -Wall -Wextra -Werror -pedantic -shared -fPIC`; many policies (different prefixes) can go
into one library, compiled by a few compiler processes at once (`build_host_library`). A policy with memory
(`{prefix}_policy_step`, `{PREFIX}_STATE_SIZE` in its header) loads as a `HostRecurrentPolicy`
(`build_host_recurrent`), which also runs whole streams of steps with resets as a deploy side does.
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
from typing import Protocol

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


class GeneratedHeader(Protocol):
    """What the header readers below need: the prefix and the header's text (codegen's `CSources`, or any
    hand-written stand-in with the same fields)."""

    @property
    def prefix(self) -> str: ...
    @property
    def header(self) -> str: ...
    @property
    def header_name(self) -> str: ...


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


@dataclass(frozen=True, eq=False)
class HostRecurrentPolicy:
    """A compiled policy with memory: `int {prefix}_policy_step(obs, h_in, action, h_out)` and
    `void {prefix}_policy_reset(state)` in a loaded library."""

    prefix: str
    obs_dim: int
    action_dim: int
    state_size: int
    library_path: Path
    step_function: Callable[[int, int, int, int], int] = field(repr=False)
    reset_function: Callable[[int], None] = field(repr=False)

    def reset_state(self) -> np.ndarray:
        """`(state_size,)` float32: the state after the C reset function (it starts NaN-filled, so every entry
        shows what the function wrote)."""
        state = np.full(self.state_size, np.nan, np.float32)
        self.reset_function(state.ctypes.data)
        return state

    def step(self, obs: np.ndarray, h_in: np.ndarray, in_place: bool = False) -> tuple[np.ndarray, np.ndarray, int]:
        """One call on obs `(obs_dim,)` and state `(state_size,)`: (action, h_out, return code). `action` and
        `h_out` start NaN-filled (what the C code left unwritten stays NaN; on an error code `h_out` is h_in
        unchanged when `in_place`). `in_place`: pass one array as both h_in and h_out."""
        x = np.ascontiguousarray(obs, dtype=np.float32).reshape(-1)
        h = np.ascontiguousarray(h_in, dtype=np.float32).reshape(-1).copy()
        if x.size != self.obs_dim or h.size != self.state_size:
            raise ValueError(
                f"{self.prefix}: obs/state of {x.size}/{h.size} entries, the policy takes {self.obs_dim}/"
                f"{self.state_size}"
            )
        action = np.full(self.action_dim, np.nan, np.float32)
        h_out = h if in_place else np.full(self.state_size, np.nan, np.float32)
        code = self.step_function(x.ctypes.data, h.ctypes.data, action.ctypes.data, h_out.ctypes.data)
        return action, h_out, int(code)

    def episode(
        self, obs: np.ndarray, starts: np.ndarray, in_place: bool = False
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """A stream of steps as a deploy side runs them: obs `(T, obs_dim)`, `starts` `(T,)` bool (the state is
        reset with the C reset function at those steps and at step 0, and carried from h_out otherwise; a step
        that returns an error code keeps the state). Returns (actions `(T, action_dim)`, states `(T, state_size)`
        as h_out after each step, codes `(T,)`)."""
        obs = np.asarray(obs, dtype=np.float32)
        starts = np.asarray(starts, dtype=bool).reshape(-1)
        if obs.ndim != 2 or len(starts) != len(obs):
            raise ValueError(f"obs {obs.shape} and starts {starts.shape} must be (T, obs_dim) and (T,)")
        actions = np.empty((len(obs), self.action_dim), np.float32)
        states = np.empty((len(obs), self.state_size), np.float32)
        codes = np.empty(len(obs), np.int32)
        h = self.reset_state()
        for t in range(len(obs)):
            h = self.reset_state() if starts[t] else h
            actions[t], h_out, codes[t] = self.step(obs[t], h, in_place)
            h = h_out if codes[t] == 0 else h
            states[t] = h_out
        return actions, states, codes


def find_tool(name: str) -> str:
    """Path of an installed program, or ToolNotFoundError saying which package provides it."""
    path = shutil.which(name)
    if path is None:
        package = {HOST_CC: "gcc", HOST_SIZE: "binutils"}.get(name, "gcc-arm-none-eabi and libnewlib-arm-none-eabi")
        raise ToolNotFoundError(f"{name} not found on PATH; install {package} (`make system-deps` does it with apt)")
    return path


def header_define(sources: GeneratedHeader, name: str) -> int:
    """Integer value of `#define {PREFIX}_{name} <int>` in the generated header."""
    match = re.search(rf"^#define {sources.prefix.upper()}_{name} (\d+)\b", sources.header, re.MULTILINE)
    if match is None:
        raise ValueError(f"{sources.header_name} defines no {sources.prefix.upper()}_{name}")
    return int(match.group(1))


def state_size(sources: GeneratedHeader) -> int:
    """`{PREFIX}_STATE_SIZE` of a policy with memory; 0 for a header without it."""
    if f"#define {sources.prefix.upper()}_STATE_SIZE " not in sources.header:
        return 0
    return header_define(sources, "STATE_SIZE")


def output_width(sources: GeneratedHeader) -> int:
    """Floats the policy function writes: `ACTION_CHUNK` steps (1 in a header without it, e.g. a hand-written
    one) of `ACTION_DIM` actions."""
    chunk = f"#define {sources.prefix.upper()}_ACTION_CHUNK "
    steps = header_define(sources, "ACTION_CHUNK") if chunk in sources.header else 1
    return header_define(sources, "ACTION_DIM") * steps


def build_host(sources: CSources, directory: Path) -> HostPolicy:
    """Compile one policy into a shared library in `directory` and load it."""
    return build_host_library([sources], directory)[sources.prefix]


def build_host_recurrent(sources: CSources, directory: Path) -> HostRecurrentPolicy:
    """Compile one policy with memory into a shared library in `directory` and load it; ValueError for a policy
    without memory (`build_host`)."""
    size = state_size(sources)
    if not size:
        raise ValueError(f"{sources.header_name} defines no state: the policy has no memory (use build_host)")
    loaded, path = _load_library([sources], Path(directory), "policies", 1)
    step = getattr(loaded, f"{sources.prefix}_policy_step")
    step.argtypes = (ctypes.c_void_p,) * 4
    step.restype = ctypes.c_int
    reset = getattr(loaded, f"{sources.prefix}_policy_reset")
    reset.argtypes = (ctypes.c_void_p,)
    reset.restype = None
    return HostRecurrentPolicy(
        prefix=sources.prefix,
        obs_dim=header_define(sources, "OBS_DIM"),
        action_dim=output_width(sources),
        state_size=size,
        library_path=path,
        step_function=step,
        reset_function=reset,
    )


def build_host_library(
    sources: Sequence[CSources], directory: Path, name: str = "policies", jobs: int | None = None
) -> dict[str, HostPolicy]:
    """Compile several policies (distinct prefixes) into one shared library; returns prefix → HostPolicy.

    The sources are split over `jobs` compiler processes (default: CPU count), each compiling its share in one
    call, then linked once. The library file name carries a hash of its sources, so a changed policy is never
    served from an already-loaded library of the same path.
    """
    with_memory = [s.prefix for s in sources if state_size(s)]
    if with_memory:
        raise ValueError(f"policies with memory load with build_host_recurrent, one at a time: {with_memory}")
    loaded, library = _load_library(sources, Path(directory), name, jobs)
    return {s.prefix: _host_policy(loaded, library, s) for s in sources}


def _load_library(
    sources: Sequence[CSources], directory: Path, name: str, jobs: int | None
) -> tuple[ctypes.CDLL, Path]:
    """Compile `sources` into one shared library (named by a hash of the sources) and load it."""
    prefixes = [s.prefix for s in sources]
    if len(set(prefixes)) != len(prefixes):
        raise ValueError(f"prefixes must be distinct to share a library: {prefixes}")
    directory.mkdir(parents=True, exist_ok=True)
    c_files = [s.write(directory)[1] for s in sources]
    digest = hashlib.sha1("".join(s.header + s.source for s in sources).encode()).hexdigest()[:12]
    library = directory / f"lib{name}_{digest}.so"
    if not library.exists():
        objects = _compile_objects(find_tool(HOST_CC), (*HOST_CFLAGS, "-fPIC"), c_files, directory, jobs)
        _run([find_tool(HOST_CC), "-shared", "-o", str(library), *map(str, objects), "-lm"], directory)
    return ctypes.CDLL(str(library)), library


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
