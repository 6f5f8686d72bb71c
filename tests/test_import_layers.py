"""Imports run one way: core <- runners <- composition root <- CLI, and the deploy package imports nothing of
torch, the simulators or the training core. Read from the source with `ast` (every import statement, those inside
functions too), so a lazy import cannot slip past.

`KNOWN` lists back-imports allowed for now (it is empty: issue 20 removed the last ones); the test fails on any
other one, and on an entry of `KNOWN` that no longer happens (so the list only shrinks)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]
PACKAGE = ROOT / "robo_rl"
CORE = tuple(
    f"robo_rl.{name}"
    for name in (
        "envs",
        "spaces",
        "image_spec",
        "memory_spec",
        "artifact",
        "actuator",
        "cost_spec",
        "task_record",
        "sysid",
        "chunks",
        "config",
        "provenance",
        "distributed",
        "capture",
        "modules",
        "algorithms",
        "storage",
    )
)
TRAINING = (
    "robo_rl.runners",
    "robo_rl.experiment",
    "robo_rl.build",
    "robo_rl.api",
    "robo_rl.cli",
    "robo_rl.launch",
    "robo_rl.hil",
)
TRAINING_CODE = (*TRAINING, "robo_rl.algorithms", "robo_rl.modules", "robo_rl.storage")
"""What a simulator never imports (a task folder's presets.py excepted): the learning side, from the networks up."""
OUTER = ("robo_rl.robot", "robo_rl.importers", "robo_rl.export", "robo_rl.firmware_export")
"""What only the composition root and the CLI use: the robot as an env, the importers and the exporters."""
TOP = ("robo_rl.build", "robo_rl.api", "robo_rl.launch", "robo_rl.cli")
"""The composition root, its library API and the command line: they may import every layer; nothing imports the
CLI."""
SUBPACKAGES = tuple(
    f"robo_rl.{path.stem}"
    for path in sorted(PACKAGE.iterdir())
    if path.stem != "__init__" and (path.suffix == ".py" or (path / "__init__.py").exists())
)
RULES: tuple[tuple[tuple[str, ...], tuple[str, ...], str], ...] = (
    (
        CORE,
        (*TRAINING, *OUTER, "robo_rl.real", "robo_rl.sim", "robo_rl.devices"),
        "the core imports no layer above it",
    ),
    (("robo_rl.modules",), ("robo_rl.algorithms",), "modules come before algorithms"),
    (
        ("robo_rl.runners",),
        ("robo_rl.cli", "robo_rl.api", "robo_rl.launch", "robo_rl.experiment", "robo_rl.build"),
        "runners come before the root",
    ),
    (("robo_rl.runners", "robo_rl.hil", "robo_rl.experiment"), ("robo_rl.real",), "training loads no deploy code"),
    (
        ("robo_rl.real",),
        (
            "torch",
            "robo_rl.sim",
            "robo_rl.runners",
            "robo_rl.algorithms",
            "robo_rl.modules",
            "robo_rl.experiment",
            "robo_rl.cli",
            "robo_rl.hil",
            *OUTER,
        ),
        "the deploy package needs no torch, simulator or training code",
    ),
    (
        ("robo_rl.real",),
        ("robo_rl.real.ros", "rclpy"),
        "the deploy core (node_core, controller, safety, ...) is ROS-free: only robo_rl.real.ros uses rclpy",
    ),
    (("robo_rl.sim",), TRAINING_CODE, "simulators know nothing of training: no algorithm, storage, runner or root"),
    (("robo_rl",), ("robo_rl.cli",), "only the CLI imports the CLI"),
    (
        ("robo_rl.real", "robo_rl.sim", "robo_rl.hil", "robo_rl.runners"),
        OUTER,
        "only the composition root and the CLI use the robot env, the importers and the exporters",
    ),
    (
        ("robo_rl.devices",),
        ("torch", "rclpy", *(name for name in SUBPACKAGES if name != "robo_rl.devices")),
        "device drivers stand alone: no torch, no ROS, nothing else of robo_rl",
    ),
    (
        ("robo_rl.firmware_export",),
        ("torch", "robo_rl.sim", "robo_rl.real", "robo_rl.robot", "robo_rl.importers", "robo_rl.export", *TRAINING),
        "the C export reads the ONNX file alone: no torch, simulator, deploy or training code",
    ),
    (
        ("robo_rl.export",),
        (*TRAINING, "robo_rl.sim", "robo_rl.real", "robo_rl.robot", "robo_rl.importers", "robo_rl.firmware_export"),
        "the ONNX export needs only the core",
    ),
    (
        ("robo_rl.importers",),
        (*TRAINING, "robo_rl.sim", "robo_rl.robot", "robo_rl.firmware_export"),
        "importers need only the core, the ONNX export and the deploy core",
    ),
    (
        ("robo_rl.robot",),
        (
            "robo_rl.cli",
            "robo_rl.launch",
            "robo_rl.experiment",
            "robo_rl.build",
            "robo_rl.runners",
            "robo_rl.sim",
            "robo_rl.importers",
            "robo_rl.export",
            "robo_rl.firmware_export",
        ),
        "a robot is one more env: no simulator, runner or composition root",
    ),
)
KNOWN: set[tuple[str, str]] = set()
PRESETS_MAY_IMPORT = (
    "robo_rl.experiment",
    "robo_rl.algorithms",
    "robo_rl.modules",
    "robo_rl.runners.loop_config",
    "robo_rl.runners.on_policy",
    "robo_rl.runners.off_policy",
    "robo_rl.runners.off_policy_config",
    "robo_rl.hil.config",
)
"""A task folder's presets.py (robo_rl/sim/TASK/presets.py) is the one place in a simulator that knows training: it
builds `ExperimentConfig`s, so it imports the experiment, the algorithms' and networks' settings, the runners'
config classes and the HIL section's (`HilConfig` and the simulated human's settings it holds), and no more of
training (never storage, the composition root, the API, the CLI or HIL's devices)."""


def _presets_module(module: str) -> bool:
    """A task folder's presets.py, or robo_rl.sim.presets, which collects them."""
    parts = module.split(".")
    return parts[:2] == ["robo_rl", "sim"] and parts[-1] == "presets" and len(parts) in (3, 4)


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        parts = parts[:-1] if parts[-1] == "__init__" else parts
        out[".".join(("robo_rl", *parts))] = path
    return out


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
    return names


def _under(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes)


def _violations() -> set[tuple[str, str, str]]:
    found = set()
    for module, path in _modules().items():
        for imported in _imports(path):
            for sources, forbidden, why in RULES:
                if _under(module, sources) and _under(imported, forbidden) and not _under(module, forbidden):
                    if not (_presets_module(module) and _under(imported, PRESETS_MAY_IMPORT)):
                        found.add((module, imported, why))
    return found


def _known(module: str, imported: str) -> bool:
    return any(module == m and _under(imported, (target,)) for m, target in KNOWN)


def test_imports_run_one_way() -> None:
    violations = _violations()
    new = sorted(
        f"{module} imports {imported}: {why}" for module, imported, why in violations if not _known(module, imported)
    )
    assert not new, "\n".join(new)


def test_every_known_back_import_still_happens() -> None:
    """A fixed back-import must leave KNOWN, so that it cannot come back unnoticed."""
    violations = _violations()
    stale = [pair for pair in KNOWN if not any(m == pair[0] and _under(i, (pair[1],)) for m, i, _ in violations)]
    assert not stale, stale


def test_the_check_sees_a_lazy_import(tmp_path: Path) -> None:
    source = tmp_path / "lazy.py"
    source.write_text("def f():\n    import torch\n    from robo_rl.cli.main import main\n")
    assert {"torch", "robo_rl.cli.main", "robo_rl.cli.main.main"} <= _imports(source)


def test_every_subpackage_falls_under_a_rule() -> None:
    """A new subpackage must get its place in the layers: each one is a source of at least one rule."""
    ruled = {source for sources, _, _ in RULES for source in sources if source != "robo_rl"} | set(TOP)
    loose = [name for name in SUBPACKAGES if not _under(name, tuple(ruled))]
    assert not loose, f"subpackages no rule covers: {loose}"


def test_outside_the_cli_only_its_entry_point_is_imported() -> None:
    """bench/ and the package use the library API (robo_rl.api), not the CLI's modules: only `robo_rl.cli.main`,
    the entry point a script may run as a user would."""
    found = []
    for path in [*(ROOT / "bench").rglob("*.py"), *PACKAGE.rglob("*.py")]:
        if PACKAGE / "cli" in path.parents:
            continue
        for imported in _imports(path):
            if _under(imported, ("robo_rl.cli",)) and not _under(imported, ("robo_rl.cli.main",)):
                found.append(f"{path.relative_to(ROOT)} imports {imported}")
    assert not found, "\n".join(found)


_IMPORT_EVERY_SIMULATOR = """
import importlib, pkgutil, sys
import robo_rl.sim
training = {training!r}
for info in pkgutil.walk_packages(robo_rl.sim.__path__, "robo_rl.sim."):
    if info.name.rsplit(".", 1)[-1] == "presets":
        continue
    try:
        importlib.import_module(info.name)
    except ModuleNotFoundError as err:  # an optional package (rclpy, MuJoCo) that is not installed
        if (err.name or "robo_rl").partition(".")[0] == "robo_rl":
            raise
        continue
    loaded = sorted(name for name in sys.modules if any(name == t or name.startswith(t + ".") for t in training))
    if loaded:
        sys.exit(f"importing {{info.name}} loads {{loaded}}")
"""


def test_importing_a_simulator_loads_no_training_code() -> None:
    """What the layer rule says of the source holds for what loads: every module of robo_rl.sim but the presets,
    imported in turn in a process of its own, loads no training module, not even through the core it imports."""
    script = _IMPORT_EVERY_SIMULATOR.format(training=TRAINING_CODE)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
