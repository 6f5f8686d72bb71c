"""The keystore under a DDS-Security implementation we did not write: Cyclone DDS 0.10.2 and its plugins.

The ros-* wheels' Fast DDS has no security plugins (tests/real/ros/test_secure_mode.py), so the documents and
grants of `robo-rl security create` are checked here against Debian's Cyclone DDS (libddsc0debian 0.10.2: builtin
DDS:Auth:PKI-DH authentication, DDS:Access:Permissions access control and DDS:Crypto:AES-GCM-GMAC), through C
participants (dds_peer.c) on the DDS topics the ROS graph uses (`rt/cf1/intervention`): the plugins must accept
each enclave's identity, governance and permissions as they are, carry the authorized operator's samples to the
policy node's enclave, and keep out a participant without credentials, an enclave without the permission, and an
enclave whose permissions were edited after signing. Run in a loopback-only network namespace.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("cryptography")

from robo_rl.real.profile import load_profile
from robo_rl.real.ros.netns import LOOPBACK_NETNS
from robo_rl.real.security.grants import robot_grants
from robo_rl.real.security.keystore import Keystore, create_enclave, create_keystore

HERE = Path(__file__).resolve().parent
PLUGINS = Path("/usr/lib/x86_64-linux-gnu/libddsc0debian")
IDL = "module robo_rl { @final struct Msg { long value; }; };\n"
TOPIC = "rt/cf1/intervention"
WANT = 50
"""Samples of the authorized operator the reader waits for (then 3 s more for anything else to get through)."""
LIMIT_S = 90.0


def _missing() -> str:
    for tool in ("idlc", "gcc", "unshare"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (make test installs cyclonedds-tools, cyclonedds-dev, libddsc0debian)"
    if not (PLUGINS / "libdds_security_ac.so").is_file() or not Path("/usr/include/dds/dds.h").is_file():
        return "Cyclone DDS with its security plugins is not installed (apt: libddsc0debian cyclonedds-dev)"
    probe = subprocess.run([*LOOPBACK_NETNS, "true"], capture_output=True, check=False)
    return "" if probe.returncode == 0 else "cannot create a loopback-only network namespace here"


@pytest.fixture(scope="module")
def peer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    reason = _missing()
    if reason:
        pytest.skip(reason)
    folder = tmp_path_factory.mktemp("dds_peer")
    (folder / "dds_peer_msg.idl").write_text(IDL)
    subprocess.run(["idlc", "dds_peer_msg.idl"], cwd=folder, check=True, capture_output=True)
    sources = [str(HERE / "dds_peer.c"), "dds_peer_msg.c"]
    subprocess.run(["gcc", "-O1", "-I.", "-o", "dds_peer", *sources, "-lddsc"], cwd=folder, check=True)
    return folder / "dds_peer"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Keystore:
    keystore = create_keystore(tmp_path_factory.mktemp("dds") / "keystore", domain_id=0)
    recorded = ("odom", "estop", "intervention", "operator_log", "/diagnostics")
    for grant in robot_grants(load_profile("quadrotor_crazyflie"), "/cf1", {}, recorded):
        create_enclave(keystore, grant, domain_id=0)
    return keystore


def config(store: Keystore | None, enclave: str = "") -> str:
    """CYCLONEDDS_URI for a participant on loopback, secured as `enclave` of `store` (None: no security)."""
    network = '<General><Interfaces><NetworkInterface name="lo" multicast="true"/></Interfaces></General>'
    if store is None:
        return f'<CycloneDDS><Domain id="any">{network}</Domain></CycloneDDS>'
    files = store.enclave_dir(enclave)
    security = (
        f"<Security><Authentication><IdentityCertificate>file:{files}/cert.pem</IdentityCertificate>"
        f"<IdentityCA>file:{files}/identity_ca.cert.pem</IdentityCA><PrivateKey>file:{files}/key.pem</PrivateKey>"
        f"</Authentication><AccessControl><Governance>file:{files}/governance.p7s</Governance>"
        f"<PermissionsCA>file:{files}/permissions_ca.cert.pem</PermissionsCA>"
        f"<Permissions>file:{files}/permissions.p7s</Permissions></AccessControl></Security>"
    )
    return f'<CycloneDDS><Domain id="any">{network}{security}</Domain></CycloneDDS>'


def run_peers(peer: Path, reader: str, writers: list[tuple[str, int]]) -> list[dict]:
    """Run the reader (CYCLONEDDS_URI `reader`) and the (URI, value) writers at once in one namespace; the writers
    stop when the reader has. Their JSON reports, the reader's first."""
    script = [f"{peer} reader {TOPIC} {WANT} {LIMIT_S} > reader.json &", "reader=$!", "writers="]
    for index, (uri, value) in enumerate(writers):
        script.append(f"CYCLONEDDS_URI='{uri}' {peer} writer {TOPIC} {value} {LIMIT_S} > writer{index}.json &")
        script.append('writers="$writers $!"')
    script += ["wait $reader", "kill -TERM $writers 2>/dev/null; wait; true"]
    folder = peer.parent
    env = {**os.environ, "CYCLONEDDS_URI": reader}
    subprocess.run([*LOOPBACK_NETNS, "sh", "-c", "\n".join(script)], cwd=folder, env=env, timeout=LIMIT_S + 60)
    outputs = [folder / "reader.json", *(folder / f"writer{index}.json" for index in range(len(writers)))]
    return [json.loads(path.read_text() or "{}") for path in outputs]


def test_only_the_operators_enclave_reaches_the_policy_node(peer: Path, store: Keystore) -> None:
    # the reader runs as the policy node; the values tell the writers apart (1: the operator)
    operator, plain = config(store, "/cf1/teleop_node"), config(None)
    no_permission = config(store, "/cf1/recorder")  # the recorder may read intervention, not publish it
    writers = [(operator, 1), (plain, 2), (no_permission, 3)]
    received, authorized, unauthenticated, unauthorized = run_peers(peer, config(store, "/cf1/policy_node"), writers)
    assert received.get("received", {}).get("1", 0) >= WANT, (received, authorized)
    assert set(received["received"]) == {"1"}  # nothing from the participant without credentials
    assert authorized["sent"] > 0 and unauthenticated["sent"] > 0
    assert unauthorized == {"error": "writer: Not Allowed By Security"}


def test_edited_permissions_are_refused_by_the_plugins(peer: Path, store: Keystore, tmp_path: Path) -> None:
    copy = Keystore(tmp_path / "copy")
    shutil.copytree(store.root, copy.root, symlinks=True)
    signed = copy.enclave_dir("/cf1/recorder") / "permissions.p7s"
    grant = f"<publish><topics><topic>{TOPIC}</topic></topics></publish><subscribe>"
    signed.write_text(signed.read_text().replace("<subscribe>", grant, 1))  # the recorder grants itself the topic
    writers = [(config(store, "/cf1/teleop_node"), 1), (config(copy, "/cf1/recorder"), 3)]
    received, _, edited = run_peers(peer, config(store, "/cf1/policy_node"), writers)
    assert edited.get("error", "").startswith("participant:"), edited
    assert "3" not in received.get("received", {})
