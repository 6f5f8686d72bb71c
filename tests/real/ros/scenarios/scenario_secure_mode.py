"""The secure mode of the robot's graph: refusals at start, and who may command the node (issue 52, item 1).

argv: LOG_DIR POLICY (a quadrotor_crazyflie policy.onnx). Makes the keystore with `robo-rl security create` for the
bundled quadrotor_crazyflie profile in /cf1, then:
1. whether this RMW can do DDS-Security at all: a node started with a valid enclave (rcl says so when it cannot);
2. policy_node with `secure:=true` and a tampered permissions.p7s (the policy node's grant edited to publish the
   operator's topics): refused before rcl starts, one line, exit 2;
3. policy_node with `secure:=true` and the valid keystore: refused in one line where the RMW lacks DDS-Security;
   where it has it, the full test: the node runs as its enclave with a driver (odometry), the authorized operator
   (interventions), an observer, and two rogues sending `estop true` and interventions of 1.0, one without
   credentials and one with an enclave (the recorder's) that may not publish them. The observer's /diagnostics and
   operator_log must name the operator only.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from harness import BIN, Processes, finish, generous_profile, ros_args

SECURE_RUN_S = 20.0
"""How long the peers of step 3 run (discovery with DDS-Security handshakes is slower than without)."""


def main() -> None:
    log_dir, policy = Path(sys.argv[1]), sys.argv[2]
    keystore = log_dir / "keystore"
    create = [str(BIN / "robo-rl"), "security", "create", str(keystore), "--profile", "quadrotor_crazyflie"]
    made = subprocess.run([*create, "--namespace", "/cf1"], capture_output=True, text=True, timeout=120)
    results: dict = {"create_exit": made.returncode, "create_output": made.stdout + made.stderr}
    profile = generous_profile(log_dir, "quadrotor_crazyflie")
    params = {"policy": policy, "profile": profile, "autostart": True, "secure": True}
    results["tampered"] = _tampered_start(log_dir, keystore, params)
    results["supported"], results["rmw_says"] = _rmw_has_security(log_dir, keystore)
    if not results["supported"]:
        results["secure_start"] = _start_once(log_dir, "secure", {**params, "keystore": str(keystore)})
        finish(results)
    _secure_graph(log_dir, keystore, {**params, "keystore": str(keystore)}, results)


def _start_once(log_dir: Path, label: str, params: dict) -> dict:
    """policy_node started with `params`, expected to stop by itself: its exit code and output."""
    command = [str(BIN / "policy_node"), *ros_args("policy_node", "/cf1", **params)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=log_dir)
    return {"exit": done.returncode, "stderr": done.stderr.strip(), "stdout": done.stdout[-2000:]}


def _tampered_start(log_dir: Path, keystore: Path, params: dict) -> dict:
    import shutil

    copy = log_dir / "tampered"
    shutil.copytree(keystore, copy, symlinks=True)
    signed = copy / "enclaves" / "cf1" / "policy_node" / "permissions.p7s"
    signed.write_text(signed.read_text().replace("<topic>rt/cf1/cmd_motors</topic>", "<topic>rt/cf1/estop</topic>"))
    result = _start_once(log_dir, "tampered", {**params, "keystore": str(copy)})
    return result | {"file": str(signed)}


def _rmw_has_security(log_dir: Path, keystore: Path) -> tuple[bool, str]:
    """Whether a node starts as a valid enclave here (the peer reports rcl's refusal otherwise)."""
    report = _peer(log_dir, "driver", keystore, 0.1)
    error = report.get("error", "")
    return not error, error


def _peer(log_dir: Path, role: str, keystore: Path, seconds: float) -> dict:
    out = log_dir / f"{role}.json"
    script = Path(__file__).with_name("secure_peer.py")
    subprocess.run([sys.executable, str(script), role, str(keystore), str(seconds), str(out)], timeout=300)
    return json.loads(out.read_text()) if out.is_file() else {"error": "no report"}


def _secure_graph(log_dir: Path, keystore: Path, params: dict, results: dict) -> None:
    processes = Processes(log_dir)
    processes.start("policy_node", "policy_node", *ros_args("policy_node", "/cf1", **params))
    script = str(Path(__file__).with_name("secure_peer.py"))
    peers = {}
    for role in ("driver", "observer", "operator", "rogue_plain", "rogue_enclave"):
        out = log_dir / f"{role}.json"
        peers[role] = (
            subprocess.Popen([sys.executable, script, role, str(keystore), str(SECURE_RUN_S), str(out)]),
            out,
        )
    reports = {}
    for role, (process, out) in peers.items():
        process.wait(timeout=SECURE_RUN_S + 120)
        reports[role] = json.loads(out.read_text()) if out.is_file() else {"error": "no report"}
    finish(results | {"peers": reports}, processes, ["policy_node"])


if __name__ == "__main__":
    main()
