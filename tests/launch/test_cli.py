"""`robo-rl launch`: one-line errors with exit status 2, the dry-run plan, a real tiny training run, and
stopping children."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from robo_rl.cli.main import main
from robo_rl.launch import stop_processes

REPO = Path(__file__).resolve().parents[2]
TRAIN = REPO / "launch" / "train_quadrotor_hover.launch.yaml"


def one_line_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(["launch", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("robo-rl launch: error: "), err
    return err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([str(TRAIN), "seed=1"], "'seed=1': launch arguments are NAME:=VALUE"),
        ([str(TRAIN), "sed:=1"], "unknown launch argument 'sed'"),
        (["missing.launch.yaml"], "missing.launch.yaml: cannot read launch file"),
        ([str(REPO / "launch" / "hardware_quadrotor.launch.yaml"), "--dry-run"], "missing required argument 'policy'"),
        ([str(REPO / "launch" / "sim_quadrotor.launch.yaml")], "cannot run: sim_bridge needs rclpy"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    assert message in one_line_error(capsys, argv)


def test_dry_run_prints_the_plan_with_the_package_share_of_this_checkout(capsys: pytest.CaptureFixture[str]) -> None:
    file = REPO / "launch" / "sim_rc_car.launch.yaml"
    assert main(["launch", str(file), "--dry-run", "teleop:=false"]) == 0
    out = capsys.readouterr().out
    assert out.count("$ ") == 2
    assert f"--params-file {REPO}/launch/params/rc_car.yaml" in out
    assert "[not runnable: policy_node needs rclpy, which this Python lacks" in out  # the test venv has no rclpy


def test_an_executable_that_is_not_installed_is_named(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    file = tmp_path / "a.launch.yaml"
    file.write_text("launch:\n- node: {pkg: robo_rl, exec: no_such_node}\n")
    assert "cannot run: no_such_node is not installed (no console script" in one_line_error(capsys, [str(file)])


def test_train_launch_file_trains_a_tiny_run(tmp_path: Path) -> None:
    argv = [str(TRAIN), "preset:=pendulum_ppo", "max_iterations:=1", "num_envs:=16", "export:=false"]
    proc = subprocess.run(
        [sys.executable, "-m", "robo_rl.cli.main", "launch", *argv, f"runs_root:={tmp_path}"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    (run,) = (tmp_path / "pendulum_ppo").iterdir()
    assert (run / "checkpoints" / "latest.pt").is_file()
    assert len((run / "metrics.jsonl").read_text().splitlines()) == 1
    assert "--num-envs 16 --max-iterations 1" in proc.stdout


def test_stop_processes_interrupts_then_terminates() -> None:
    polite = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    stubborn = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); print(1, flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
    )
    assert stubborn.stdout is not None and stubborn.stdout.readline().strip() == b"1"  # SIGINT ignored from now on
    start = time.monotonic()
    stop_processes([polite, stubborn], timeout_s=1.0)
    assert polite.returncode not in (None, 0) and stubborn.returncode == -15  # SIGTERM
    assert time.monotonic() - start < 5.0


def test_after_a_terminal_ctrl_c_the_children_get_no_second_sigint() -> None:
    """The terminal's Ctrl-C reached the children already (a train node would take a second one as "stop at once"):
    stop_processes then waits, and sends SIGTERM to those still running."""
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import os, signal, time; signal.signal(signal.SIGINT, lambda *_: os._exit(7)); print(1, flush=True); "
            "time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
    )
    assert child.stdout is not None and child.stdout.readline().strip() == b"1"
    stop_processes([child], timeout_s=0.5, send_sigint=False)
    assert child.returncode == -15  # SIGTERM, never SIGINT (which would have made it exit with 7)


def test_sigterm_stops_robo_rl_launch_and_its_children(tmp_path: Path) -> None:
    script = tmp_path / "sleeper.py"
    script.write_text("import time\ntime.sleep(60)\n")
    launch = tmp_path / "a.launch.yaml"
    launch.write_text(f"launch:\n- executable: {{cmd: '{sys.executable} {script}'}}\n")
    robo_rl = str(Path(sys.executable).with_name("robo-rl"))
    launcher = subprocess.Popen([robo_rl, "launch", str(launch)], stdout=subprocess.PIPE, text=True)
    assert launcher.stdout is not None and launcher.stdout.readline().startswith("[1]")
    deadline = time.monotonic() + 60.0
    while not _children(launcher.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    (child,) = _children(launcher.pid)
    launcher.terminate()
    assert launcher.wait(timeout=60) == 130
    assert not Path(f"/proc/{child}").exists() or "Z" in Path(f"/proc/{child}/stat").read_text().split(")")[-1][:3]


def _children(pid: int) -> list[int]:
    return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def test_executable_actions_run_and_their_exit_status_is_returned(tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text("import sys; open(sys.argv[1], 'w').write(sys.argv[2]); sys.exit(int(sys.argv[2]))\n")
    launch = tmp_path / "a.launch.yaml"
    launch.write_text(
        "launch:\n"
        "- arg: {name: code, default: '0'}\n"
        f"- executable: {{cmd: '{sys.executable} {script} {tmp_path}/one 0'}}\n"
        f"- executable: {{cmd: '{sys.executable} {script} {tmp_path}/two $(var code)'}}\n"
    )
    assert main(["launch", str(launch)]) == 0
    assert main(["launch", str(launch), "code:=3"]) == 3
    assert (tmp_path / "one").read_text() == "0" and (tmp_path / "two").read_text() == "3"


def test_a_command_that_cannot_start_stops_the_others(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sleeper = tmp_path / "sleeper.py"
    sleeper.write_text("import time\ntime.sleep(60)\n")
    launch = tmp_path / "a.launch.yaml"
    launch.write_text(
        f"launch:\n- executable: {{cmd: '{sys.executable} {sleeper}'}}\n- executable: {{cmd: /nonexistent/program}}\n"
    )
    start = time.monotonic()
    message = one_line_error(capsys, [str(launch)])
    assert "a.launch.yaml:3: cannot start /nonexistent/program: No such file or directory" in message
    assert time.monotonic() - start < 10.0
    assert not [cmdline for cmdline in command_lines() if str(sleeper) in cmdline]


def command_lines() -> list[str]:
    """Command lines of the processes running on this (Linux) machine."""
    lines = []
    for entry in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            lines.append(entry.read_bytes().decode(errors="replace").replace("\0", " "))
        except OSError:
            pass  # the process ended meanwhile
    return lines
