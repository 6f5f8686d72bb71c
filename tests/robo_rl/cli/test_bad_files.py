"""One line, never a traceback: every command answers a bad input file with exit code 2, one stderr line naming the
file, and nothing written.

The corpus: for every file kind a command reads (policy.onnx, checkpoints, YAML configs, a run's config.yaml,
meta.json and world_size, launch files, parameter files, track CSVs, demonstration .npz files, replay buffers; and,
without a good file, Crazyflie flight-log CSVs and rosbag2 bags for sysid and demos-from-bag), a
good file (made once per module by tiny trainings) emptied, truncated at several offsets, replaced by random bytes
or by a good file of every other kind, and edited into a wrong version or a wrong shape. Each bad file goes to one
command that reads that kind (the generic ones in turn to every such command, the edits to the commands they are
wrong for). Truncations cut where the format can tell: anywhere in binary and JSON files, inside a key in YAML
files (a cut at a line end leaves a shorter valid file), after a comma in a track CSV (a cut between rows leaves a
shorter valid track).
The commands run in-process (`robo_rl.cli.main.main`); two run as real processes to show that the entry point
does the same. A second corpus (BAD_ARGUMENTS, from a bad-input sweep of every command) holds bad paths and flags:
outputs that cannot be written (a folder where a file goes, a path under a file), unusable numbers (NaN, inf, tiny
frame rates), options given without the option they need, input folders that are not what they are named.
Robot profiles, and policy and parameter files as the nodes read them: tests/real/test_bad_files.py; the nodes'
parameters: tests/real/ros/test_bad_files.py.
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import pytest
import torch
import yaml

import robo_rl
from robo_rl.cli.main import main

REPO = Path(robo_rl.__file__).resolve().parents[1]


@dataclass(frozen=True)
class GoodFiles:
    """A trained pendulum PPO run (1 iteration, with policy.onnx) and one good file of every kind."""

    run: Path
    files: dict[str, Path]

    def data(self, kind: str) -> bytes:
        return self.files[kind].read_bytes()

    def copy_run(self, into: Path) -> Path:
        """A copy of the run directory (without TensorBoard files and the plot, which no command reads)."""
        shutil.copytree(self.run, into, ignore=shutil.ignore_patterns("tb", "learning_curve.png"))
        return into


def _cli(argv: list[str]) -> None:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(argv)
    assert code == 0, f"{argv}: {err.getvalue()}"


@pytest.fixture(scope="module")
def good_files(tmp_path_factory: pytest.TempPathFactory) -> GoodFiles:
    root = tmp_path_factory.mktemp("good")
    tiny = ["--set", "runner.loop.eval_interval=0", "--set", "runner.loop.eval_episodes=1", "--quiet"]
    _cli(["train", "--max-iterations", "1", "--num-envs", "4", "--runs-root", str(root / "runs"), *tiny])
    run = next((root / "runs" / "pendulum_ppo").iterdir())
    _cli(["export", str(run)])
    _cli(["collect", str(run), "--transitions", "32", "--envs", "4", "-o", str(root / "buffer.pt")])
    _cli(["record-demos", "pendulum", "--episodes", "1", "-o", str(root / "demos.npz")])
    files = {
        "onnx": run / "policy.onnx",
        "checkpoint": run / "checkpoints" / "latest.pt",
        "config": REPO / "robo_rl" / "configs" / "pendulum_ppo.yaml",
        "run_config": run / "config.yaml",
        "meta": run / "meta.json",
        "task": run / "task.yaml",
        "launch": REPO / "launch" / "hardware_quadrotor.launch.yaml",
        "params": REPO / "launch" / "params" / "quadrotor.yaml",
        "track": REPO / "robo_rl" / "sim" / "rc_car" / "tracks" / "oval.csv",
        "demos": root / "demos.npz",
        "buffer": root / "buffer.pt",
        "profile": REPO / "robo_rl" / "real" / "profiles" / "quadrotor_crazyflie.yaml",
    }
    return GoodFiles(run, files)


Mutate = Callable[[GoodFiles], bytes]


@dataclass(frozen=True)
class Command:
    """A command that reads one file kind: where the bad file goes in the work folder, and the argv."""

    name: str
    place: Callable[[Path], Path]
    """work folder (holding a copy of the good run at work/run) → path the bad file is written to."""
    argv: Callable[[Path, Path], list[str]]
    """(work folder, bad file) → argv."""


@dataclass(frozen=True)
class Case:
    kind: str
    mutation: str
    command: Command
    make: Mutate

    @property
    def id(self) -> str:
        return f"{self.kind}-{self.mutation}-{self.command.name}"


def _in_run(*parts: str) -> Callable[[Path], Path]:
    return lambda work: work.joinpath("run", *parts)


def _latest_alone(work: Path) -> Path:
    """The run's latest.pt, without the previous.pt that a resume falls back to (a resume that can fall back to a
    good checkpoint warns and goes on)."""
    latest = work / "run" / "checkpoints" / "latest.pt"
    latest.with_name("previous.pt").unlink(missing_ok=True)
    return latest


def _in_work(name: str) -> Callable[[Path], Path]:
    return lambda work: work / name


def _train(*args: str) -> Callable[[Path, Path], list[str]]:
    def argv(work: Path, bad: Path) -> list[str]:
        line = [arg.replace("BAD", str(bad)) for arg in args]
        return ["train", *line, "--max-iterations", "1", "--runs-root", str(work / "runs"), "--quiet"]

    return argv


def _with_run(*args: str) -> Callable[[Path, Path], list[str]]:
    return lambda work, bad: [arg.replace("RUN", str(work / "run")).replace("BAD", str(bad)) for arg in args]


TINY_EVAL = ("--episodes", "2")
SYSID_FRAME = ("--frame", "crazyflie_2_1", "-o", "frame.yaml")
SHORT_PLAY = ("--max-seconds", "0.1")
PRIOR = (
    "pendulum_sac",
    "--num-envs",
    "2",
    "--set",
    "off_policy.buffer_capacity=1000",
    "--set",
    "off_policy.prior_buffer=BAD",
)
COMMANDS: dict[str, tuple[Command, ...]] = {
    "onnx": (
        Command("export-c", _in_work("policy.onnx"), lambda work, bad: ["export", str(bad), "--target", "c"]),
        Command("eval-onnx", _in_run("policy.onnx"), _with_run("eval", "RUN", "--onnx", *TINY_EVAL)),
        Command("play-onnx", _in_run("policy.onnx"), _with_run("play", "RUN", "--onnx", *SHORT_PLAY)),
        Command("eval-file", _in_work("policy.onnx"), lambda work, bad: ["eval", str(bad), *TINY_EVAL]),
    ),
    "checkpoint": (
        Command("eval", _in_work("bad.pt"), _with_run("eval", "RUN", "--checkpoint", "BAD", *TINY_EVAL)),
        Command("export", _in_work("bad.pt"), _with_run("export", "RUN", "--checkpoint", "BAD")),
        Command("export-c", _in_work("bad.pt"), _with_run("export", "RUN", "--target", "c", "--checkpoint", "BAD")),
        Command(
            "collect", _in_work("bad.pt"), _with_run("collect", "RUN", "--checkpoint", "BAD", "--transitions", "8")
        ),
        Command("play", _in_work("bad.pt"), _with_run("play", "RUN", "--checkpoint", "BAD", *SHORT_PLAY)),
        Command("resume", _latest_alone, _with_run("train", "--resume", "RUN", "--quiet")),
    ),
    "config": (Command("train", _in_work("config.yaml"), _train("BAD")),),
    "run_config": (
        Command("eval", _in_run("config.yaml"), _with_run("eval", "RUN", *TINY_EVAL)),
        Command("compare", _in_run("config.yaml"), _with_run("compare", "RUN", "-o", "compare.png")),
        Command("resume", _in_run("config.yaml"), _with_run("train", "--resume", "RUN", "--max-iterations", "3")),
    ),
    "meta": (Command("export", _in_run("meta.json"), _with_run("export", "RUN")),),
    "task": (
        Command("export", _in_run("task.yaml"), _with_run("export", "RUN")),
        Command("eval", _in_run("task.yaml"), _with_run("eval", "RUN", "--episodes", "1")),
    ),
    "world_size": (Command("resume", _in_run("world_size"), _with_run("train", "--resume", "RUN", "--quiet")),),
    "flight_csv": (Command("sysid", _in_work("flight.csv"), lambda work, bad: ["sysid", str(bad), *SYSID_FRAME]),),
    "bag": (
        Command("sysid", _in_work("flight.mcap"), lambda work, bad: ["sysid", str(bad), *SYSID_FRAME]),
        Command(
            "demos-from-bag",
            _in_work("flight.mcap"),
            lambda work, bad: ["demos-from-bag", str(bad), "--profile", "rc_car", "-o", str(work / "d.npz")],
        ),
    ),
    "launch": (
        Command(
            "launch", _in_work("bad.launch.yaml"), lambda work, bad: ["launch", str(bad), "policy:=p.onnx", "--dry-run"]
        ),
    ),
    "params": (
        Command(
            "launch", _in_work("params.yaml"), lambda work, bad: ["launch", str(_params_launch(work, bad)), "--dry-run"]
        ),
    ),
    "track": (
        Command(
            "train",
            _in_work("track.csv"),
            _train("rc_car_race_ppo", "--num-envs", "2", "--set", "task.track=BAD"),
        ),
        Command(
            "record-demos",
            _in_work("track.csv"),
            _with_run("record-demos", "rc_car/race", "--episodes", "1", "--param", "track=BAD"),
        ),
    ),
    "demos": (Command("train", _in_work("demos.npz"), _train(*PRIOR)),),
    "buffer": (Command("train", _in_work("buffer.pt"), _train(*PRIOR)),),
}


def _params_launch(work: Path, params: Path) -> Path:
    """A launch file whose one node takes its parameters from `params`."""
    launch = work / "node.launch.yaml"
    launch.write_text(f"launch:\n- node: {{pkg: robo_rl, exec: teleop_node, param: [{{from: '{params}'}}]}}\n")
    return launch


# ------------------------------------------------------------------------------------------------ generic mutations

GOOD_KINDS = ("onnx", "checkpoint", "config", "run_config", "meta", "launch", "params", "track", "demos", "buffer")
GOOD_KINDS += ("profile", "task")
"""The kinds of GoodFiles.files."""
BINARY_FRACTIONS = (0.0, 0.1, 0.25, 0.5, 0.75, 0.9)
"""Cut offsets (share of the file) for binary and JSON files; plus a cut of the very last byte."""
YAML_KEY = re.compile(rb"^[ -]*['\"]?([A-Za-z_/*][\w/*.]*)['\"]?:", re.MULTILINE)
YAML_KINDS = ("config", "run_config", "launch", "params", "task")
OTHER_KINDS_EXCLUDED = {("config", "run_config"), ("run_config", "config")}
"""(kind, other kind) pairs where the other kind's good file is a good file of this kind too."""
RANDOM_SIZES = (16, 1000, None)
"""Bytes of random content; None: as long as the good file."""


def truncations(kind: str, data: bytes) -> dict[str, bytes]:
    """Cuts the format can tell from a complete file."""
    if kind in YAML_KINDS:
        return _cuts_inside(data, [m.start(1) for m in YAML_KEY.finditer(data)], "key", keep_after=1)
    if kind == "track":
        return _cuts_inside(data, [m.end() for m in re.finditer(rb"^[^#\n][^,\n]*,", data, re.MULTILINE)], "comma", 0)
    cuts = {f"cut-{int(fraction * 100)}%": data[: max(1, int(len(data) * fraction))] for fraction in BINARY_FRACTIONS}
    return {**cuts, "cut-last-byte": data.rstrip()[:-1]}  # rstrip: a JSON file without its final newline is whole


def _cuts_inside(data: bytes, positions: list[int], what: str, keep_after: int) -> dict[str, bytes]:
    """Cuts `keep_after` bytes past 6 of `positions` spread over the file (the first, the last and between)."""
    picks = sorted({positions[round(i * (len(positions) - 1) / 5)] for i in range(6)})
    return {f"cut-in-{what}-{i}": data[: at + keep_after] for i, at in enumerate(picks)}


def generic_mutations(kind: str) -> dict[str, Mutate]:
    mutations: dict[str, Mutate] = {"empty": lambda good: b""}
    for size in RANDOM_SIZES:
        mutations[f"random-{size or 'same-size'}"] = _random_bytes(kind, size)
    for other in GOOD_KINDS:
        if other != kind and (kind, other) not in OTHER_KINDS_EXCLUDED:
            mutations[f"is-{other}"] = _good(other)
    return mutations


def _random_bytes(kind: str, size: int | None) -> Mutate:
    return lambda good: random.Random(f"{kind}{size}").randbytes(size or len(good.data(kind)))


def _good(kind: str) -> Mutate:
    return lambda good: good.data(kind)


# ------------------------------------------------------------------------------------------------ specific mutations


def _text(text: str) -> Mutate:
    return lambda good: text.encode()


def _yaml_edit(kind: str, edit: Callable[[dict], object]) -> Mutate:
    """The good YAML file of `kind` with its data edited in place by `edit`."""

    def mutate(good: GoodFiles) -> bytes:
        data = yaml.safe_load(good.data(kind))
        edit(data)
        return yaml.safe_dump(data).encode()

    return mutate


def _torch_bytes(value: object) -> bytes:
    out = io.BytesIO()
    torch.save(value, out)
    return out.getvalue()


def _state(good: GoodFiles, kind: str) -> dict:
    return torch.load(io.BytesIO(good.data(kind)), weights_only=False)


def _checkpoint_edit(edit: Callable[[dict], object]) -> Mutate:
    return lambda good: _torch_bytes(edit(_state(good, "checkpoint")))


def _without(state: dict, key: str) -> dict:
    return {k: v for k, v in state.items() if k != key}


def _resized_network(state: dict) -> dict:
    policy = dict(state["policy"])
    name = next(key for key, value in policy.items() if value.ndim == 2)
    policy[name] = torch.zeros(policy[name].shape[0] + 5, policy[name].shape[1])
    return {**state, "policy": policy}


def _buffer_edit(edit: Callable[[dict], None]) -> Mutate:
    def make(good: GoodFiles) -> bytes:
        state = _state(good, "buffer")
        edit(state)
        return _torch_bytes(state)

    return make


def _buffer_obs_dim(state: dict, dim: int) -> None:
    state["obs_dim"] = state["critic_obs_dim"] = dim
    for name in ("obs", "critic_obs", "next_obs", "next_critic_obs"):
        state["transitions"][name] = torch.zeros(state["size"], dim)


def _onnx_edit(edit: Callable[[onnx.ModelProto], None]) -> Mutate:
    def make(good: GoodFiles) -> bytes:
        model = onnx.load_from_string(good.data("onnx"))
        edit(model)
        return model.SerializeToString()

    return make


def _set_metadata(key: str, value: str) -> Callable[[onnx.ModelProto], None]:
    def edit(model: onnx.ModelProto) -> None:
        props = {p.key: p.value for p in model.metadata_props} | {key: value}
        onnx.helper.set_model_props(model, props)

    return edit


def _rename_input(model: onnx.ModelProto) -> None:
    old = model.graph.input[0].name
    model.graph.input[0].name = "x"
    for node in model.graph.node:
        node.input[:] = ["x" if name == old else name for name in node.input]


def _op_type(op: str) -> Callable[[onnx.ModelProto], None]:
    def edit(model: onnx.ModelProto) -> None:
        next(node for node in model.graph.node if node.op_type in ("Tanh", "Elu", "Relu")).op_type = op

    return edit


def _gemm_policy(obs_dim: int) -> Mutate:
    """A valid ONNX policy `obs (batch, obs_dim)` → `action (batch, 1)` (the pendulum's obs_dim is 3)."""

    def make(good: GoodFiles) -> bytes:
        helper = onnx.helper
        weight = onnx.numpy_helper.from_array(np.zeros((1, obs_dim), np.float32), "w")
        node = helper.make_node("Gemm", ["obs", "w"], ["action"], transB=1)
        inputs = [helper.make_tensor_value_info("obs", onnx.TensorProto.FLOAT, ["batch", obs_dim])]
        outputs = [helper.make_tensor_value_info("action", onnx.TensorProto.FLOAT, ["batch", 1])]
        graph = helper.make_graph([node], "policy", inputs, outputs, [weight])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
        return model.SerializeToString()

    return make


def _demos_edit(edit: Callable[[dict[str, np.ndarray], dict], object]) -> Mutate:
    """The good demo file with its arrays and meta record edited in place by `edit`."""

    def make(good: GoodFiles) -> bytes:
        arrays = _demo_arrays(good)
        meta = json.loads(str(arrays.pop("meta")))
        edit(arrays, meta)
        return _npz(meta=np.array(json.dumps(meta)), **arrays)

    return make


def _demos_meta(text: str) -> Mutate:
    """The good demo file with `text` as its meta record."""
    return lambda good: _npz(**{**_demo_arrays(good), "meta": np.array(text)})


def _demo_arrays(good: GoodFiles) -> dict[str, np.ndarray]:
    with np.load(io.BytesIO(good.data("demos"))) as data:
        return {name: data[name] for name in data.files}


def _npz(**arrays: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.savez(out, **arrays)
    return out.getvalue()


def _npy(good: GoodFiles) -> bytes:
    out = io.BytesIO()
    np.save(out, np.zeros((4, 3), np.float32))
    return out.getvalue()


def _object_obs(arrays: dict[str, np.ndarray], meta: dict) -> None:
    arrays["obs"] = np.array([None] * len(arrays["obs"]), dtype=object)


TRACK_HEADER = "x_m,y_m,width_m\n"


def _track(rows: str) -> Mutate:
    return _text(TRACK_HEADER + rows)


SQUARE = "0,0,1\n10,0,1\n10,10,1\n0,10,1\n"
SPECIFIC: dict[str, dict[str, tuple[Mutate, tuple[str, ...]]]] = {
    "onnx": {
        "obs-width-4": (_gemm_policy(4), ("eval-onnx", "play-onnx")),
        "input-renamed": (_onnx_edit(_rename_input), ("eval-onnx",)),
        "obs-names-for-4": (_onnx_edit(_set_metadata("robo_rl.obs_names", '["a", "b", "c", "d"]')), ("export-c",)),
        "obs-names-not-json": (_onnx_edit(_set_metadata("robo_rl.obs_names", "[a, b")), ("export-c",)),
        "flow-part-garbage": (_onnx_edit(_set_metadata("robo_rl.flow.velocity", "!!")), ("export-c",)),
        "unsupported-op": (_onnx_edit(_op_type("Softplus")), ("export-c",)),
        "random-1000": (_random_bytes("onnx", 1000), ("eval-file",)),
        "cut-50%": (lambda good: good.data("onnx")[: len(good.data("onnx")) // 2], ("eval-file",)),
        "empty": (_text(""), ("eval-file",)),
        "no-metadata": (_gemm_policy(3), ("eval-file",)),
    },
    "checkpoint": {
        "a-list": (lambda good: _torch_bytes([1, 2, 3]), ("eval", "resume")),
        "a-tensor": (lambda good: _torch_bytes(torch.zeros(3)), ("export",)),
        "no-policy": (_checkpoint_edit(lambda s: _without(s, "policy")), ("export", "resume")),
        "no-iteration": (_checkpoint_edit(lambda s: _without(s, "iteration")), ("collect", "resume")),
        "bigger-network": (_checkpoint_edit(_resized_network), ("eval", "play", "resume")),
        "sac-state": (lambda good: _torch_bytes({"algorithm": {"actor": {}}, "iteration": 1}), ("export-c",)),
    },
    "config": {
        "a-list": (_text("- algo: ppo\n"), ("train",)),
        "a-scalar": (_text("ppo\n"), ("train",)),
        "comments-only": (_text("# nothing here\n"), ("train",)),
        "unknown-key": (_text("algo: ppo\nlerning_rate: 1\n"), ("train",)),
        "wrong-type": (_text("seed: fast\n"), ("train",)),
        "section-scalar": (_text("ppo: 3\n"), ("train",)),
    },
    "run_config": {
        "a-list": (_text("- 1\n"), ("eval",)),
        "unknown-key": (_text("algo: ppo\ntask: {nme: pendulum}\n"), ("compare",)),
    },
    "meta": {"a-list": (_text("[1, 2]"), ("export",))},
    "task": {
        "a-list": (_text("- name: pendulum\n"), ("export",)),
        "no-specs": (_text("name: pendulum\nconfig: {}\n"), ("export",)),
        "config-a-list": (_yaml_edit("task", lambda d: d.update(config=[1])), ("eval",)),
        "short-action-bounds": (_yaml_edit("task", lambda d: d["specs"]["action"]["low"].pop()), ("export",)),
        "dt-text": (_yaml_edit("task", lambda d: d["specs"].update(dt="fast")), ("eval",)),
    },
    "flight_csv": {
        "empty": (_text(""), ("sysid",)),
        "random": (lambda good: random.Random(5).randbytes(500), ("sysid",)),
        "latin-1": (lambda good: f"timestamp,gyro.x\n1,{chr(0xE9)}\n".encode("latin-1"), ("sysid",)),
        "nul-byte": (_text("timestamp,gyro.x\n1,\x002\n"), ("sysid",)),
        "is-onnx": (_good("onnx"), ("sysid",)),
        "is-track": (_good("track"), ("sysid",)),
    },
    "bag": {
        "empty": (_text(""), ("sysid", "demos-from-bag")),
        "random": (lambda good: random.Random(6).randbytes(500), ("sysid", "demos-from-bag")),
        "is-onnx": (_good("onnx"), ("sysid",)),
        "is-demos": (_good("demos"), ("demos-from-bag",)),
        "mcap-magic-only": (lambda good: b"\x89MCAP0\r\n", ("sysid", "demos-from-bag")),
    },
    "world_size": {
        "empty": (_text(""), ("resume",)),
        "text": (_text("two\n"), ("resume",)),
        "fraction": (_text("1.5\n"), ("resume",)),
        "random": (lambda good: random.Random(0).randbytes(64), ("resume",)),
    },
    "launch": {
        "a-list": (_text("- launch: []\n"), ("launch",)),
        "a-scalar": (_text("launch\n"), ("launch",)),
        "launch-scalar": (_text("launch: 5\n"), ("launch",)),
        "unknown-action": (_text("launch:\n- nodes: {pkg: robo_rl, exec: policy_node}\n"), ("launch",)),
        "node-without-exec": (_text("launch:\n- node: {pkg: robo_rl}\n"), ("launch",)),
    },
    "params": {
        "a-list": (_text("- ros__parameters: {}\n"), ("launch",)),
        "a-scalar": (_text("ros__parameters\n"), ("launch",)),
        "section-scalar": (_text("/**: 5\n"), ("launch",)),
        "parameters-list": (_text("/**:\n  ros__parameters: [1, 2]\n"), ("launch",)),
        "list-of-maps": (_text("/**:\n  ros__parameters:\n    a: [{b: 1}]\n"), ("launch",)),
    },
    "track": {
        "wrong-header": (_text("x,y,w\n" + SQUARE), ("train",)),
        "two-points": (_track("0,0,1\n10,0,1\n"), ("record-demos",)),
        "text-cell": (_track(SQUARE + "1,two,1\n"), ("train",)),
        "negative-width": (_track(SQUARE.replace("10,10,1", "10,10,-1")), ("record-demos",)),
        "nan": (_track(SQUARE.replace("10,0,1", "nan,0,1")), ("train",)),
        "four-columns": (_track(SQUARE + "1,2,3,4\n"), ("record-demos",)),
    },
    "demos": {
        "schema-2": (_demos_edit(lambda a, m: m.update(schema="robo_rl.demos/2")), ("train",)),
        "other-names": (_demos_edit(lambda a, m: m.update(obs_names=["a", "b", "c"])), ("train",)),
        "obs-shape": (_demos_edit(lambda a, m: a.update(obs=np.zeros((len(a["obs"]), 4), np.float32))), ("train",)),
        "float-flags": (_demos_edit(lambda a, m: a.update(terminated=a["terminated"].astype(np.float32))), ("train",)),
        "no-is_demo": (_demos_edit(lambda a, m: a.pop("is_demo")), ("train",)),
        "object-obs": (_demos_edit(_object_obs), ("train",)),
        "meta-not-json": (_demos_meta("{schema"), ("train",)),
        "meta-a-list": (_demos_meta("[1, 2]"), ("train",)),
        "npy-array": (_npy, ("train",)),
    },
    "buffer": {
        "obs-dim-4": (_buffer_edit(lambda s: _buffer_obs_dim(s, 4)), ("train",)),
        "no-transitions": (_buffer_edit(lambda s: s.pop("transitions")), ("train",)),
        "no-is_demo": (_buffer_edit(lambda s: s["transitions"].pop("is_demo")), ("train",)),
        "short-obs": (_buffer_edit(lambda s: s["transitions"].update(obs=s["transitions"]["obs"][:, :2])), ("train",)),
        "a-list": (lambda good: _torch_bytes([]), ("train",)),
    },
}


# ------------------------------------------------------------------------------------------------ the corpus


def _truncation(kind: str, name: str) -> Mutate:
    return lambda good: truncations(kind, good.data(kind))[name]


TRUNCATION_NAMES = {
    "yaml": [f"cut-in-key-{i}" for i in range(6)],
    "track": [f"cut-in-comma-{i}" for i in range(6)],
    "binary": [f"cut-{int(f * 100)}%" for f in BINARY_FRACTIONS] + ["cut-last-byte"],
}


def _truncation_names(kind: str) -> list[str]:
    return TRUNCATION_NAMES["yaml" if kind in YAML_KINDS else "track" if kind == "track" else "binary"]


def corpus() -> list[Case]:
    cases = []
    for kind, commands in COMMANDS.items():
        mutations = generic_mutations(kind) if kind in GOOD_KINDS else {}
        if kind in GOOD_KINDS:
            mutations |= {name: _truncation(kind, name) for name in _truncation_names(kind)}
        for i, (name, make) in enumerate(mutations.items()):
            cases.append(Case(kind, name, commands[i % len(commands)], make))
        by_name = {command.name: command for command in commands}
        for name, (make, command_names) in SPECIFIC.get(kind, {}).items():
            cases += [Case(kind, name, by_name[command], make) for command in command_names]
    return cases


CORPUS = corpus()


def _listing(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file and folder under `folder` with its size and modification time."""
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*")}


def test_the_corpus_is_large() -> None:
    assert len(CORPUS) >= 200


@pytest.mark.parametrize("case", CORPUS, ids=[case.id for case in CORPUS])
def test_bad_file_is_one_line_naming_it_and_writes_nothing(
    case: Case,
    good_files: GoodFiles,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    good_files.copy_run(tmp_path / "run")
    bad = case.command.place(tmp_path)
    bad.write_bytes(case.make(good_files))
    argv = case.command.argv(tmp_path, bad)
    monkeypatch.chdir(tmp_path)  # outputs that default to the working folder would show in the listing
    capsys.readouterr()
    before = _listing(tmp_path)
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, f"{argv} -> {code}: {err}"
    assert err.count("\n") == 1 and err.endswith("\n") and "Traceback" not in err, err
    assert str(bad) in err, err
    assert _listing(tmp_path) == before


# ------------------------------------------------------------------------------------------------ bad paths and flags

# (id, argv with RUN = the good run's copy, WORK = the work folder, ONNX = its policy.onnx; what the line says).
# WORK holds `a-file` (a file where a folder is expected), `a-folder`, `a-folder.csv`, `a-folder.npz`, `a-folder.yaml`,
# `empty-bag` (a folder without metadata.yaml) and `bad-bag` (a folder whose metadata.yaml is not a bag's).
BAD_ARGUMENTS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("export-output-under-a-file", ("export", "RUN", "-o", "WORK/a-file/policy.onnx"), "WORK/a-file is a file"),
    ("export-output-a-folder", ("export", "RUN", "-o", "WORK/a-folder"), "--output WORK/a-folder: is a folder"),
    ("export-c-output-a-file", ("export", "ONNX", "--target", "c", "-o", "WORK/a-file"), "is a file, not a folder"),
    ("export-c-output-under-a-file", ("export", "ONNX", "--target", "c", "-o", "WORK/a-file/c"), "WORK/a-file is a"),
    ("play-output-under-a-file", ("play", "RUN", "--output", "WORK/a-file/p.gif"), "WORK/a-file is a file"),
    ("play-fps-tiny", ("play", "RUN", "--fps", "1e-9", *SHORT_PLAY), "--fps >= 0.01"),
    ("play-fps-inf", ("play", "RUN", "--fps", "inf", *SHORT_PLAY), "finite --fps"),
    ("play-seconds-nan", ("play", "RUN", "--max-seconds", "nan"), "--max-seconds > 0"),
    ("collect-output-a-folder", ("collect", "RUN", "--transitions", "8", "-o", "WORK/a-folder"), "is a folder"),
    ("collect-noise-nan", ("collect", "RUN", "--transitions", "8", "--noise", "nan"), "--noise must be a finite"),
    ("record-demos-output-a-folder", ("record-demos", "pendulum", "-o", "WORK/a-folder.npz"), "is a folder"),
    (
        "record-demos-gamepad-a-file",
        ("record-demos", "pendulum", "--teleop", "gamepad", "--gamepad", "WORK/a-file"),
        "a regular file, not a joystick",
    ),
    ("record-demos-seconds-without-robot", ("record-demos", "pendulum", "--seconds", "-1"), "--seconds: only with"),
    (
        "record-demos-whole-episodes-on-a-robot",
        ("record-demos", "mujoco/peg_insert", "--robot", "arm_peg", "--whole-episodes"),
        "--whole-episodes: only in simulation",
    ),
    ("compare-output-under-a-file", ("compare", "RUN", "-o", "WORK/a-file/c.png"), "WORK/a-file is a file"),
    ("compare-output-a-folder", ("compare", "RUN", "-o", "WORK/a-folder"), "is a folder"),
    ("sysid-output-a-folder", ("sysid", "WORK/a-file.csv", *SYSID_FRAME[:2], "-o", "WORK/a-folder.yaml"), "a folder"),
    ("sysid-log-a-folder", ("sysid", "WORK/a-folder.csv", *SYSID_FRAME), "WORK/a-folder.csv: a folder with neither"),
    ("sysid-bag-without-metadata", ("sysid", "WORK/empty-bag", *SYSID_FRAME), "WORK/empty-bag: a folder with neither"),
    (
        "sysid-bag-without-metadata-as-mcap",
        ("sysid", "WORK/empty-bag", "--format", "mcap", *SYSID_FRAME),
        "WORK/empty-bag: not a readable",
    ),
    ("sysid-bag-bad-metadata", ("sysid", "WORK/bad-bag", *SYSID_FRAME), "WORK/bad-bag: not a readable rosbag2"),
    ("bag-demos-bad-metadata", ("demos-from-bag", "WORK/bad-bag", "--profile", "rc_car"), "WORK/bad-bag: not a"),
    (
        "bag-demos-output-a-folder",
        ("demos-from-bag", "WORK/bad-bag", "--profile", "rc_car", "-o", "WORK/a-folder.npz"),
        "is a folder",
    ),
    ("classifier-output-under-a-file", ("train-classifier", "WORK/a-folder.npz", "-o", "WORK/a-file/c.pt"), "a file"),
    ("train-runs-root-a-file", ("train", "--runs-root", "WORK/a-file", "--max-iterations", "1"), "--runs-root"),
    ("train-runs-root-under-a-file", ("train", "--runs-root", "WORK/a-file/runs", "--max-iterations", "1"), "a file"),
    ("demo-runs-root-a-file", ("demo", "--runs-root", "WORK/a-file"), "--runs-root WORK/a-file: is a file"),
    ("train-device-meta", ("train", "--device", "meta", "--max-iterations", "1"), "'meta' cannot run the simulators"),
    ("train-num-envs-1e9", ("train", "--set", "task.num_envs=1e9", "--max-iterations", "1"), "between 1 and 1,048,576"),
    ("train-num-envs-huge", ("train", "--num-envs", "2000000", "--max-iterations", "1"), "got 2,000,000"),
    ("train-name-escapes", ("train", "--set", "name=../../escaped", "--max-iterations", "1"), "is not a folder name"),
    ("train-name-nested", ("train", "--set", "name=a/b", "--max-iterations", "1"), "is not a folder name"),
    ("train-operator-without-robot", ("train", "--operator", "simulated"), "--operator: only with --robot"),
    ("train-classifier-without-robot", ("train", "--success-classifier", "WORK/a-file"), "only with --robot"),
    ("train-robot-link-without-robot", ("train", "--robot-link", "sim"), "--robot-link: only with --robot"),
    ("train-operator-on-ros", ("train", "--robot", "rc_car", "--operator", "resets"), "only with --robot-link sim"),
    ("eval-device-unknown", ("eval", "RUN", "--device", "foo", *TINY_EVAL), "--device: 'foo' is not a torch device"),
    ("eval-device-meta", ("eval", "RUN", "--device", "meta", *TINY_EVAL), "--device: 'meta' cannot run"),
    ("eval-l2f-not-onnx", ("eval", "WORK/a-file.onnx", "--sim", "l2f"), "WORK/a-file.onnx: not a robo_rl policy"),
    ("eval-gem-not-onnx", ("eval", "WORK/a-file.onnx", "--sim", "gem"), "WORK/a-file.onnx: not a robo_rl policy"),
    ("eval-gem-other-task", ("eval", "ONNX", "--sim", "gem"), "--sim gem runs electric_motor/current policies"),
    ("eval-gem-no-episodes", ("eval", "ONNX", "--sim", "gem", "--episodes", "0"), "--episodes must be at least 1"),
    ("eval-gem-plant", ("eval", "ONNX", "--sim", "gem", "--plant", "native"), "--plant is for --sim l2f"),
    (
        "train-ppo-lag-no-cost",
        ("train", "pendulum_ppo", "--algo", "ppo_lag", "--max-iterations", "1"),
        "declares no cost",
    ),
)


def _bad_work_folder(work: Path) -> None:
    (work / "a-file").write_text("x")
    (work / "a-file.csv").write_text("x")
    (work / "a-file.onnx").write_bytes(random.Random(7).randbytes(300))
    for name in ("a-folder", "a-folder.csv", "a-folder.npz", "a-folder.yaml", "empty-bag", "bad-bag"):
        (work / name).mkdir()
    (work / "bad-bag" / "metadata.yaml").write_text("rosbag2_bagfile_information: 5\n")


@pytest.mark.parametrize(("argv", "expected"), [case[1:] for case in BAD_ARGUMENTS], ids=[c[0] for c in BAD_ARGUMENTS])
def test_bad_path_or_flag_is_one_line_and_writes_nothing(
    argv: tuple[str, ...],
    expected: str,
    good_files: GoodFiles,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Outputs a command cannot write (a folder where a file goes, a path under a file), numbers it cannot use,
    options that need another option, and input folders that are not what they are named: one line, exit 2."""
    run = good_files.copy_run(tmp_path / "run")
    work = tmp_path / "work"
    work.mkdir()
    _bad_work_folder(work)
    words = {"RUN": str(run), "WORK": str(work), "ONNX": str(run / "policy.onnx")}
    line = [re.sub(r"\b(RUN|WORK|ONNX)\b", lambda m: words[m.group(1)], arg) for arg in argv]
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    before = _listing(tmp_path)
    code = main(
        [*line, *(("--runs-root", str(tmp_path / "runs")) if line[0] == "train" and "--runs-root" not in line else ())]
    )
    err = capsys.readouterr().err
    assert code == 2, f"{line} -> {code}: {err}"
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert expected.replace("WORK", str(work)) in err, err
    assert _listing(tmp_path) == before


# ------------------------------------------------------------------------------------------------ real processes

ROBO_RL = str(Path(sys.executable).with_name("robo-rl"))


def test_the_entry_point_answers_the_same(good_files: GoodFiles, tmp_path: Path) -> None:
    """The two failures issue 18 reported (a truncated latest.pt on resume, a truncated policy.onnx for C), as real
    processes: exit code 2, one stderr line naming the file, nothing written."""
    run = good_files.copy_run(tmp_path / "run")
    latest = _latest_alone(tmp_path)
    latest.write_bytes(good_files.data("checkpoint")[:1000])
    onnx_file = tmp_path / "policy.onnx"
    onnx_file.write_bytes(good_files.data("onnx")[:-1])
    commands = {
        latest: ["train", "--resume", str(run), "--quiet"],
        onnx_file: ["export", str(onnx_file), "--target", "c"],
    }
    before = _listing(tmp_path)
    processes = {
        bad: subprocess.Popen([ROBO_RL, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
        for bad, argv in commands.items()
    }
    for bad, process in processes.items():
        _, err = process.communicate(timeout=120)
        assert process.returncode == 2, err
        assert err.count("\n") == 1 and "Traceback" not in err and str(bad) in err, err
    assert _listing(tmp_path) == before
