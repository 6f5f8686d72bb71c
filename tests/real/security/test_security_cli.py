"""`robo-rl security create` and `check`: a robot's keystore in one command, bad input in one line."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

pytest.importorskip("cryptography")

from robo_rl.cli.main import main
from robo_rl.real.security.grants import NODES

REPO = Path(__file__).resolve().parents[3]


def topics(folder: Path, kind: str) -> set[str]:
    rule = ElementTree.parse(folder / "permissions.xml").find("permissions/grant/allow_rule")
    assert rule is not None
    return {str(topic.text) for topic in rule.findall(f"{kind}/topics/topic")}


def test_create_makes_every_nodes_enclave(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    keystore = tmp_path / "keystore"
    params = REPO / "launch" / "params" / "rc_car.yaml"
    argv = ["security", "create", str(keystore), "--profile", "rc_car", "--namespace", "/car1"]
    assert main([*argv, "--params", str(params), "--remap", "odom:=/vesc/odom", "--domain-id", "3"]) == 0
    for node in NODES:
        assert main(["security", "check", str(keystore), f"/car1/{node}"]) == 0
    enclaves = keystore / "enclaves" / "car1"
    # the recorder records what launch/params/rc_car.yaml lists, the remapped odometry included
    assert {"rt/vesc/odom", "rt/car1/transitions", "rt/diagnostics"} <= topics(enclaves / "recorder", "subscribe")
    assert "rt/car1/intervention" in topics(enclaves / "teleop_node", "publish")
    assert "rt/car1/intervention" not in topics(enclaves / "policy_node", "publish")
    out = capsys.readouterr().out
    assert "created keystore" in out and out.count("enclave /car1/") == len(NODES)
    # again: the keystore (its CA) is kept, the enclaves are made anew
    assert main([*argv]) == 0 and "created keystore" not in capsys.readouterr().out


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--profile", "no_such_robot"], "no_such_robot"),
        (["--profile", "rc_car", "--remap", "odom"], "--remap 'odom': expected FROM:=TO"),
        (["--profile", "rc_car", "--domain-id", "300"], "--domain-id"),
    ],
)
def test_bad_input_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    assert main(["security", "create", str(tmp_path / "ks"), *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and message in err and "\n" not in err


def test_check_names_a_missing_enclave(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["security", "check", str(tmp_path), "/car1/policy_node"]) == 2
    assert "no enclave /car1/policy_node" in capsys.readouterr().err


def test_train_secure_checks_the_trainers_enclave_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = tmp_path / "runs"
    argv = ["train", "--robot", "rc_car", "--robot-namespace", "/car1", "--runs-root", str(runs), "--secure"]
    assert main([*argv, "--keystore", str(tmp_path / "none")]) == 2
    assert "secure mode: no keystore at" in capsys.readouterr().err
    assert main(["security", "create", str(tmp_path / "ks"), "--profile", "rc_car", "--namespace", "/car2"]) == 0
    assert main([*argv, "--keystore", str(tmp_path / "ks")]) == 2  # the keystore has /car2's enclaves only
    assert "no enclave /car1/train_on_robot" in capsys.readouterr().err
    assert main(["train", "--secure", "--runs-root", str(runs)]) == 2
    assert "--secure: only with --robot PROFILE" in capsys.readouterr().err
    assert not runs.exists()  # refused before anything was written
