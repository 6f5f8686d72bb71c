"""The secure mode's keystore, checked by OpenSSL (the library DDS-Security plugins verify with), not by our code.

Sources: ROS 2's keystore layout and document conventions from ros2/sros2 (keystore/_keystore.py, _enclave.py:
public/, private/, enclaves/, the CA links, subject `CN=<enclave>`, ROS topics as `rt/...`, services as
`rq/...Request` and `rr/...Reply`); OMG DDS-Security 1.1 sections 9.3.1 (prime256v1 keys) and 9.4.1 (documents
signed as S/MIME by the permissions CA).
"""

from __future__ import annotations

import shutil
import subprocess
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

pytest.importorskip("cryptography")

from robo_rl.real.security.documents import Grant
from robo_rl.real.security.keystore import (
    ENCLAVE_FILES,
    Keystore,
    KeystoreError,
    check_enclave,
    create_enclave,
    create_keystore,
)

OPENSSL = shutil.which("openssl")
needs_openssl = pytest.mark.skipif(OPENSSL is None, reason="the openssl command is not installed")
GRANT = Grant(
    "/car1/policy_node",
    publish=("/car1/drive", "/diagnostics"),
    subscribe=("/vesc/odom", "/car1/intervention"),
    serve=("/car1/policy_node/*",),
)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Keystore:
    keystore = create_keystore(tmp_path_factory.mktemp("ks") / "keystore", domain_id=7)
    create_enclave(keystore, GRANT, domain_id=7)
    return keystore


def openssl(*args: str) -> subprocess.CompletedProcess[str]:
    assert OPENSSL is not None
    return subprocess.run([OPENSSL, *args], capture_output=True, text=True, check=False)


def test_layout_is_sros2s(store: Keystore) -> None:
    root = store.root
    for path in ("public/ca.cert.pem", "private/ca.key.pem", "enclaves/governance.xml", "enclaves/governance.p7s"):
        assert (root / path).is_file(), path
    for role in ("identity_ca", "permissions_ca"):
        assert (root / "public" / f"{role}.cert.pem").resolve() == (root / "public" / "ca.cert.pem").resolve()
        assert (root / "private" / f"{role}.key.pem").resolve() == (root / "private" / "ca.key.pem").resolve()
    folder = root / "enclaves" / "car1" / "policy_node"
    assert sorted(p.name for p in folder.iterdir()) == sorted([*ENCLAVE_FILES, "permissions.xml"])
    assert (folder / "governance.p7s").resolve() == (root / "enclaves" / "governance.p7s").resolve()
    assert (root / "private").stat().st_mode & 0o077 == 0  # the CA key's folder is the owner's alone


@needs_openssl
def test_openssl_verifies_documents_and_identity(store: Keystore) -> None:
    folder = store.enclave_dir("/car1/policy_node")
    ca = str(store.root / "public" / "permissions_ca.cert.pem")
    for document in ("permissions", "governance"):
        signed = folder / f"{document}.p7s"
        done = openssl("smime", "-verify", "-text", "-in", str(signed), "-CAfile", ca, "-purpose", "any")
        assert done.returncode == 0, done.stderr
        source = folder / "permissions.xml" if document == "permissions" else store.enclaves / "governance.xml"
        assert done.stdout.replace("\r\n", "\n") == source.read_text()
    done = openssl("verify", "-CAfile", str(store.root / "public" / "identity_ca.cert.pem"), str(folder / "cert.pem"))
    assert done.returncode == 0 and "OK" in done.stdout, done.stderr
    subject = openssl("x509", "-in", str(folder / "cert.pem"), "-noout", "-subject", "-nameopt", "RFC2253").stdout
    assert subject.strip() == "subject=CN=/car1/policy_node"
    key = openssl("pkey", "-in", str(folder / "key.pem"), "-noout", "-text").stdout
    assert "prime256v1" in key  # DDS-Security 1.1, 9.3.1


def test_permissions_grant_exactly_the_topics(store: Keystore) -> None:
    tree = ElementTree.parse(store.enclave_dir("/car1/policy_node") / "permissions.xml")
    grant = tree.find("permissions/grant")
    assert grant is not None and grant.get("name") == "/car1/policy_node"
    assert grant.findtext("subject_name") == "CN=/car1/policy_node"
    assert grant.findtext("default") == "DENY"
    rule = grant.find("allow_rule")
    assert rule is not None and rule.findtext("domains/id") == "7"
    published = {t.text for t in rule.findall("publish/topics/topic")}
    subscribed = {t.text for t in rule.findall("subscribe/topics/topic")}
    # ROS topic /car1/drive is DDS topic rt/car1/drive; served services: requests in, replies out.
    assert published == {"rt/car1/drive", "rt/diagnostics", "rr/car1/policy_node/*Reply", "ros_discovery_info"}
    assert subscribed == {
        "rt/vesc/odom",
        "rt/car1/intervention",
        "rq/car1/policy_node/*Request",
        "ros_discovery_info",
    }
    governance = ElementTree.parse(store.enclaves / "governance.xml").find("domain_access_rules/domain_rule")
    assert governance is not None
    assert governance.findtext("allow_unauthenticated_participants") == "false"
    assert governance.findtext("topic_access_rules/topic_rule/enable_write_access_control") == "true"


def test_check_accepts_the_enclave(store: Keystore) -> None:
    assert check_enclave(store, "/car1/policy_node") == store.enclave_dir("/car1/policy_node")


def copy_of(store: Keystore, tmp_path: Path) -> Keystore:
    copy = tmp_path / "copy"
    shutil.copytree(store.root, copy, symlinks=True)
    return Keystore(copy)


@needs_openssl
def test_tampered_permissions_are_refused_in_one_line(store: Keystore, tmp_path: Path) -> None:
    copy = copy_of(store, tmp_path)
    signed = copy.enclave_dir("/car1/policy_node") / "permissions.p7s"
    # The attack: let the policy node's enclave publish the operator's intervention too.
    signed.write_text(signed.read_text().replace("rt/car1/drive", "rt/car1/intervention"))
    with pytest.raises(KeystoreError) as refused:
        check_enclave(copy, "/car1/policy_node")
    message = str(refused.value)
    assert "\n" not in message and str(signed) in message and "signature does not verify" in message


@needs_openssl
def test_permissions_of_another_keystore_are_refused(store: Keystore, tmp_path: Path) -> None:
    other = create_keystore(tmp_path / "other", domain_id=7)
    create_enclave(other, GRANT, domain_id=7)
    copy = copy_of(store, tmp_path)
    target = copy.enclave_dir("/car1/policy_node") / "permissions.p7s"
    shutil.copy(other.enclave_dir("/car1/policy_node") / "permissions.p7s", target)
    with pytest.raises(KeystoreError, match=r"permissions\.p7s: signature does not verify"):
        check_enclave(copy, "/car1/policy_node")


def test_missing_files_and_enclaves_are_named(store: Keystore, tmp_path: Path) -> None:
    copy = copy_of(store, tmp_path)
    (copy.enclave_dir("/car1/policy_node") / "key.pem").unlink()
    with pytest.raises(KeystoreError, match=r"lacks key\.pem"):
        check_enclave(copy, "/car1/policy_node")
    with pytest.raises(KeystoreError, match="no enclave /car1/teleop_node"):
        check_enclave(copy, "/car1/teleop_node")
    with pytest.raises(KeystoreError, match="absolute ROS name"):
        check_enclave(copy, "car1/x")


def test_an_existing_keystore_is_never_replaced(store: Keystore) -> None:
    with pytest.raises(KeystoreError, match="already there"):
        create_keystore(store.root, domain_id=7)
