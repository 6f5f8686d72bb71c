"""A ROS 2 security keystore: the layout `ros2 security create_keystore` / `create_enclave` make (ros2/sros2, the
ROS 2 DDS-Security integration design), which rcl reads through ROS_SECURITY_KEYSTORE and `--enclave`.

    KEYSTORE/public/ca.cert.pem                 the CA (identity_ca.cert.pem, permissions_ca.cert.pem link to it)
    KEYSTORE/private/ca.key.pem                 its key (identity_ca.key.pem, permissions_ca.key.pem link to it)
    KEYSTORE/enclaves/governance.xml, .p7s      the domain governance, signed by the permissions CA
    KEYSTORE/enclaves/ENCLAVE/                  one folder per enclave path (`/car1/policy_node` → car1/policy_node):
        cert.pem, key.pem                       the enclave's identity (CN=ENCLAVE), signed by the identity CA
        identity_ca.cert.pem, permissions_ca.cert.pem, governance.p7s   links to the keystore's
        permissions.xml, permissions.p7s        its permissions, signed by the permissions CA

rcl hands exactly these six files of the enclave's folder to the RMW (rcl/security.c). `check_enclave` verifies
them before a node starts, so that a damaged or tampered keystore is refused in one line naming the file (the RMW's
own refusal is a multi-line error from deep in the stack, or, with ROS_SECURITY_STRATEGY=Permissive, none at all).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from robo_rl.real.security.documents import Grant, governance_xml, permissions_xml
from robo_rl.real.security.signing import (
    SigningError,
    certificate,
    load_certificate,
    load_key,
    new_key,
    sign_smime,
    verify_certificate,
    verify_smime,
    write_certificate,
    write_key,
)

CA_NAME = "robo_rl keystore CA"
ENCLAVE_FILES = (
    "cert.pem",
    "key.pem",
    "identity_ca.cert.pem",
    "permissions_ca.cert.pem",
    "governance.p7s",
    "permissions.p7s",
)
"""The files rcl passes to the RMW for an enclave (rcl/security.c, `rcl_get_security_options_from_environment`)."""
_ENCLAVE_NAME = re.compile(r"^(/[A-Za-z_][A-Za-z0-9_]*)+$")


class KeystoreError(RuntimeError):
    """A keystore or enclave cannot be made or used; the message is one line naming what and why."""


@dataclass(frozen=True)
class Keystore:
    """The keystore at `root` (see the module docstring)."""

    root: Path

    @property
    def ca_cert(self) -> Path:
        return self.root / "public" / "ca.cert.pem"

    @property
    def ca_key(self) -> Path:
        return self.root / "private" / "ca.key.pem"

    @property
    def enclaves(self) -> Path:
        return self.root / "enclaves"

    def enclave_dir(self, enclave: str) -> Path:
        return self.enclaves / check_enclave_name(enclave).lstrip("/")

    def exists(self) -> bool:
        return self.ca_cert.is_file() and self.ca_key.is_file() and (self.enclaves / "governance.p7s").is_file()


def check_enclave_name(enclave: str) -> str:
    """`enclave` when it is an absolute ROS name (`/car1/policy_node`); KeystoreError otherwise."""
    if not _ENCLAVE_NAME.match(enclave):
        raise KeystoreError(f"enclave {enclave!r}: expected an absolute ROS name such as /car1/policy_node")
    return enclave


def create_keystore(root: Path, domain_id: int) -> Keystore:
    """A new keystore at `root` with one CA (identity and permissions) and the governance for `domain_id`.
    KeystoreError when `root` already holds one: its CA signs every enclave, so it is never replaced silently."""
    store = Keystore(root)
    if store.exists():
        raise KeystoreError(f"{root}: a keystore is already there (its CA would be replaced); choose another folder")
    for folder in ("public", "private", "enclaves"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    (root / "private").chmod(0o700)
    key = new_key()
    ca = certificate(CA_NAME, key)
    write_key(key, store.ca_key)
    write_certificate(ca, store.ca_cert)
    for role in ("identity_ca", "permissions_ca"):
        _link(root / "public" / f"{role}.cert.pem", "ca.cert.pem")
        _link(root / "private" / f"{role}.key.pem", "ca.key.pem")
    governance = governance_xml(domain_id).encode()
    (store.enclaves / "governance.xml").write_bytes(governance)
    (store.enclaves / "governance.p7s").write_bytes(sign_smime(governance, ca, key))
    return store


def create_enclave(store: Keystore, grant: Grant, domain_id: int) -> Path:
    """The enclave folder for `grant.enclave`: a new identity signed by the CA and the grant's permissions signed by
    it (an existing enclave gets a new identity and new permissions)."""
    if not store.exists():
        raise KeystoreError(f"{store.root}: no keystore there (create it first)")
    folder = store.enclave_dir(grant.enclave)
    folder.mkdir(parents=True, exist_ok=True)
    ca, ca_key = load_certificate(store.ca_cert), load_key(store.ca_key)
    key = new_key()
    cert = certificate(grant.enclave, key, issuer=ca, issuer_key=ca_key)
    write_key(key, folder / "key.pem")
    write_certificate(cert, folder / "cert.pem")
    for name, target in (
        ("identity_ca.cert.pem", store.ca_cert.parent / "identity_ca.cert.pem"),
        ("permissions_ca.cert.pem", store.ca_cert.parent / "permissions_ca.cert.pem"),
        ("governance.p7s", store.enclaves / "governance.p7s"),
    ):
        _link(folder / name, os.path.relpath(target, folder))
    text = permissions_xml(grant, domain_id, cert.not_valid_before_utc, cert.not_valid_after_utc).encode()
    (folder / "permissions.xml").write_bytes(text)
    (folder / "permissions.p7s").write_bytes(sign_smime(text, ca, ca_key))
    return folder


def check_enclave(store: Keystore, enclave: str) -> Path:
    """The enclave's folder once every file rcl hands the RMW is there and checks out: the identity issued by the
    identity CA and valid now, governance and permissions signed by the permissions CA, and the permissions granting
    this enclave's subject. KeystoreError (one line, naming the file) otherwise."""
    folder = store.enclave_dir(enclave)
    if not folder.is_dir():
        raise KeystoreError(f"secure mode: no enclave {enclave} in the keystore {store.root} (create it first)")
    missing = [name for name in ENCLAVE_FILES if not (folder / name).is_file()]
    if missing:
        raise KeystoreError(f"secure mode: enclave {enclave} in {store.root} lacks {', '.join(missing)}")
    try:
        cert = verify_certificate(folder / "cert.pem", folder / "identity_ca.cert.pem")
        verify_smime(folder / "governance.p7s", folder / "permissions_ca.cert.pem")
        permissions = verify_smime(folder / "permissions.p7s", folder / "permissions_ca.cert.pem")
    except SigningError as err:
        raise KeystoreError(f"secure mode: {err}") from None
    subject = f"<subject_name>{cert.subject.rfc4514_string()}</subject_name>"
    if subject.encode() not in permissions:
        raise KeystoreError(
            f"secure mode: {folder / 'permissions.p7s'} grants nothing to {cert.subject.rfc4514_string()} "
            f"(the subject of {folder / 'cert.pem'})"
        )
    return folder


def _link(path: Path, target: str) -> None:
    if path.is_symlink() or path.exists():
        path.unlink()
    path.symlink_to(target)
