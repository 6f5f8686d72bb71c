"""Thread counts and OpenMP waiting (issue 18): the choice from the affinity mask, OMP_NUM_THREADS and --threads,
passive waiting for this process and its children, and `robo-rl train --threads 1` recorded in meta.json."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from robo_rl.api import threads
from robo_rl.cli.main import main

ROBO_RL = Path(sys.executable).with_name("robo-rl")


@pytest.fixture
def keep_torch_threads() -> Iterator[None]:
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_an_explicit_count_wins_over_the_cpus() -> None:
    assert threads.choose_threads(3, cpus=2) == 3
    assert threads.choose_threads(1, cpus=16, processes=4) == 1


def test_the_default_leaves_one_cpu_and_splits_the_rest_between_processes() -> None:
    assert threads.choose_threads(None, cpus=2) == 1
    assert threads.choose_threads(None, cpus=8) == 7
    assert threads.choose_threads(None, cpus=17, processes=4) == 4
    assert threads.choose_threads(None, cpus=1) == 1  # never 0
    assert threads.choose_threads(None, cpus=2, processes=4) == 1


def test_a_count_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="--threads must be at least 1"):
        threads.choose_threads(0, cpus=2)


def test_usable_cpus_follow_the_affinity_mask(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 3, 5}, raising=False)
    assert threads.usable_cpus() == 3


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs sched_setaffinity (Linux)")
def test_a_process_pinned_to_one_cpu_sees_one_cpu() -> None:
    code = (
        "import os; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}); "
        "from robo_rl.api.threads import usable_cpus; print(usable_cpus())"
    )
    assert subprocess.run([sys.executable, "-c", code], **_text()).stdout.strip() == "1"


@pytest.mark.parametrize(
    ("value", "expected"), [("4", 4), ("4,2", 4), (" 2 ", 2), ("0", None), ("", None), ("many", None)]
)
def test_omp_num_threads_is_read_as_a_count(value: str, expected: int | None) -> None:
    assert threads.omp_num_threads({"OMP_NUM_THREADS": value}) == expected
    assert threads.omp_num_threads({}) is None


def test_passive_waiting_unless_the_user_chose_a_policy() -> None:
    environ: dict[str, str] = {}
    threads.prefer_passive_waiting(environ)
    assert environ == {"OMP_WAIT_POLICY": "PASSIVE"}
    chosen = {"OMP_WAIT_POLICY": "ACTIVE"}
    threads.prefer_passive_waiting(chosen)
    assert chosen == {"OMP_WAIT_POLICY": "ACTIVE"}


def test_nproc_ranks_get_their_share_unless_omp_num_threads_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(threads, "usable_cpus", lambda: 9)
    assert threads.rank_environment({"PATH": "/bin"}, 2) == {"PATH": "/bin", "OMP_NUM_THREADS": "4"}
    assert threads.rank_environment({"OMP_NUM_THREADS": "3"}, 2)["OMP_NUM_THREADS"] == "3"


def test_torchrun_ranks_split_the_cpus(monkeypatch: pytest.MonkeyPatch, keep_torch_threads: None) -> None:
    monkeypatch.setattr(threads, "usable_cpus", lambda: 5)
    assert threads.apply_threads(None, {"LOCAL_WORLD_SIZE": "2"}) == 2
    assert torch.get_num_threads() == 2


def test_the_cli_sets_passive_waiting_for_itself_and_its_children(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], keep_torch_threads: None
) -> None:
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert main(["tasks"]) == 0
    assert os.environ["OMP_WAIT_POLICY"] == "PASSIVE"  # os.environ is what subprocesses inherit
    assert torch.get_num_threads() == 1  # OMP_NUM_THREADS is honoured without --threads
    child = subprocess.run([sys.executable, "-c", "import os; print(os.environ['OMP_WAIT_POLICY'])"], **_text())
    assert child.stdout.strip() == "PASSIVE"
    capsys.readouterr()


def test_libgomp_in_robo_rl_does_not_spin() -> None:
    """The policy reaches libgomp: it is set before torch loads (libgomp reads it once, when it loads)."""
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    done = subprocess.run([str(ROBO_RL), "tasks"], env={**env, "OMP_DISPLAY_ENV": "VERBOSE"}, **_text())
    if "GOMP_SPINCOUNT" not in done.stderr:
        pytest.skip("torch does not use GNU OpenMP here")
    assert "GOMP_SPINCOUNT = '0'" in done.stderr  # 300000 when OMP_WAIT_POLICY is unset


def test_the_entry_module_does_not_load_torch() -> None:
    code = "import sys, robo_rl.cli.main; print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], **_text()).stdout.strip() == "False"


def _text() -> dict:
    return {"capture_output": True, "text": True, "check": True}


@pytest.mark.parametrize("command", ["train", "eval", "demo", "play", "collect"])
def test_help_names_the_threads_option(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    assert "--threads N" in capsys.readouterr().out


def test_train_with_one_thread_records_it(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY")}
    command = [str(ROBO_RL), "train", "pendulum_ppo", "--threads", "1", "--max-iterations", "1", "--quiet"]
    subprocess.run([*command, "--runs-root", str(tmp_path)], env=env, **_text())
    (run,) = (tmp_path / "pendulum_ppo").iterdir()
    assert json.loads((run / "meta.json").read_text())["torch_threads"] == 1


def test_a_thread_count_below_one_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "--threads", "0"])
    assert exit_info.value.code == 2
    assert "--threads: must be at least 1" in capsys.readouterr().err


@pytest.mark.parametrize("count", [1, 2])
def test_the_onnx_policy_of_eval_and_play_uses_torchs_thread_count_without_spinning(
    count: int, tmp_path: Path, keep_torch_threads: None
) -> None:
    from robo_rl.api.onnx_policy import _session
    from robo_rl.export.onnx import PolicyMetadata, export_onnx
    from robo_rl.sim import make

    torch.set_num_threads(count)
    env = make("pendulum", num_envs=1)
    metadata = PolicyMetadata(env.obs_spec, env.action_spec, env.dt, "pendulum", "test", "test")
    path = export_onnx(torch.nn.Linear(3, 1), metadata, tmp_path / "p.onnx")
    options = _session(path).get_session_options()
    assert options.intra_op_num_threads == count and options.inter_op_num_threads == 1
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
