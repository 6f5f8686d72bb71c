"""Certificates and S/MIME signatures of a DDS-Security keystore.

Keys are ECDSA on prime256v1 (DDS-Security 1.1, 9.3.1: the builtin PKI-DH authentication's curve); certificates are
X.509 v3 signed with SHA-256, the CA's with BasicConstraints ca=true. Governance and permissions documents are
signed by the permissions CA as S/MIME `multipart/signed` with a detached PKCS#7 signature over the text (DDS-Security
9.4.1.1: "signed by the Permissions CA ... S/MIME"), which is what the security plugins read (`*.p7s`). Signing uses
the `cryptography` package; checking uses OpenSSL's own `openssl smime -verify` (the PKCS7_verify that Fast DDS's
and Cyclone DDS's access-control plugins call), so a document is checked by the code that will read it, not by ours.
"""

from __future__ import annotations

import datetime as dt
import shutil
import subprocess
from pathlib import Path
from typing import Any

CA_VALIDITY_DAYS = 3650
BACKDATE = dt.timedelta(days=1)  # a certificate valid from yesterday: a robot's clock a little behind still accepts it


class SigningError(RuntimeError):
    """A document or certificate fails its check; the message is one line naming the file and the reason."""


def new_key() -> Any:
    """A fresh prime256v1 private key."""
    from cryptography.hazmat.primitives.asymmetric import ec

    return ec.generate_private_key(ec.SECP256R1())


def certificate(subject: str, key: Any, issuer: Any | None = None, issuer_key: Any | None = None) -> Any:
    """An X.509 certificate for `CN=subject` on `key`'s public key: self-signed as a CA when `issuer` is None,
    else signed by `issuer_key` under `issuer`'s subject."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.x509.oid import NameOID

    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    now = dt.datetime.now(dt.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name if issuer is None else issuer.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(now + dt.timedelta(days=CA_VALIDITY_DAYS))
        .add_extension(x509.BasicConstraints(ca=issuer is None, path_length=None), critical=issuer is None)
    )
    return builder.sign(key if issuer_key is None else issuer_key, hashes.SHA256())


def write_key(key: Any, path: Path) -> None:
    """`key` as unencrypted PKCS#8 PEM, readable by its owner only (what the security plugins load)."""
    from cryptography.hazmat.primitives import serialization

    data = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    path.write_bytes(data)
    path.chmod(0o600)


def write_certificate(cert: Any, path: Path) -> None:
    from cryptography.hazmat.primitives import serialization

    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def load_certificate(path: Path) -> Any:
    from cryptography import x509

    try:
        return x509.load_pem_x509_certificate(path.read_bytes())
    except (OSError, ValueError) as err:
        raise SigningError(f"{path}: not a readable PEM certificate ({_why(err)})") from None


def load_key(path: Path) -> Any:
    from cryptography.hazmat.primitives import serialization

    try:
        return serialization.load_pem_private_key(path.read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as err:
        raise SigningError(f"{path}: not a readable unencrypted PEM private key ({_why(err)})") from None


def sign_smime(text: bytes, cert: Any, key: Any) -> bytes:
    """`text` signed by `cert`/`key` as S/MIME multipart/signed, detached SHA-256 signature, text mode."""
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.serialization import pkcs7

    builder = pkcs7.PKCS7SignatureBuilder().set_data(text).add_signer(cert, key, hashes.SHA256())
    options = [pkcs7.PKCS7Options.Text, pkcs7.PKCS7Options.DetachedSignature]
    return builder.sign(serialization.Encoding.SMIME, options)


def verify_smime(signed: Path, ca_cert: Path) -> bytes:
    """The content of the S/MIME document `signed` once OpenSSL has checked its signature against `ca_cert`;
    SigningError (one line) when it does not verify: tampered, signed by another CA, or not S/MIME at all."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise SigningError(f"{signed}: cannot check its signature: the `openssl` command is not installed")
    # -purpose any: the CA signs documents, it has no S/MIME key usage (nor do SROS2's CAs).
    command = [openssl, "smime", "-verify", "-text", "-in", str(signed), "-CAfile", str(ca_cert), "-purpose", "any"]
    done = subprocess.run(command, capture_output=True, timeout=30, check=False)
    if done.returncode != 0:
        reason = _openssl_reason(done.stderr.decode(errors="replace"))
        raise SigningError(f"{signed}: signature does not verify against {ca_cert.name} ({reason})")
    return done.stdout


def verify_certificate(cert_path: Path, ca_path: Path) -> Any:
    """The certificate at `cert_path` once its signature checks against the CA at `ca_path` and it is valid now."""
    from cryptography.exceptions import InvalidSignature

    cert, ca = load_certificate(cert_path), load_certificate(ca_path)
    try:
        cert.verify_directly_issued_by(ca)
    except (InvalidSignature, ValueError, TypeError) as err:
        raise SigningError(f"{cert_path}: not issued by {ca_path.name} ({_why(err) or 'bad signature'})") from None
    now = dt.datetime.now(dt.UTC)
    if not cert.not_valid_before_utc <= now <= cert.not_valid_after_utc:
        window = f"{cert.not_valid_before_utc:%Y-%m-%d} to {cert.not_valid_after_utc:%Y-%m-%d}"
        raise SigningError(f"{cert_path}: not valid now (valid {window})")
    return cert


def _openssl_reason(stderr: str) -> str:
    """OpenSSL 3's error lines (`ID:error:CODE:LIBRARY:FUNCTION:REASON:FILE:LINE:`) reduced to their reasons."""
    reasons = []
    for line in stderr.splitlines():
        parts = line.split(":")
        reason = parts[5] if len(parts) > 6 and parts[1] == "error" else line.strip()
        if reason and reason not in reasons and reason != "Verification failure":
            reasons.append(reason)
    return "; ".join(reasons[:2]) or "verification failure"


def _why(err: BaseException) -> str:
    return " ".join(str(err).split())[:200]
