"""The secure mode of a robo_rl process: which enclave of which keystore it runs as, checked before rcl starts.

ROS 2 turns DDS-Security on from the environment that rcl reads at `rclpy.init` (rcl/security.c):
ROS_SECURITY_ENABLE=true, ROS_SECURITY_STRATEGY (Enforce: refuse to start without valid files; Permissive: run
unsecured then), ROS_SECURITY_KEYSTORE, and the enclave from `--ros-args --enclave NAME` or
ROS_SECURITY_ENCLAVE_OVERRIDE. A robo_rl node is secure when its `secure` parameter is true (the launch files'
`secure:=true`, which also passes `keystore`) or when the user exported ROS_SECURITY_ENABLE=true as for any ROS
node. Either way it runs with the Enforce strategy (a Permissive node that lost its files would quietly accept
anyone), as the enclave named by `--enclave`, ROS_SECURITY_ENCLAVE_OVERRIDE, or else its own fully qualified
name (`/car1/policy_node`: what `robo-rl security create` makes), and `check_enclave` verifies the enclave's
files before rcl sees them: a missing, expired, foreign or tampered file stops the node in one line.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from robo_rl.real.security.keystore import Keystore, KeystoreError, check_enclave, check_enclave_name

ENABLE = "ROS_SECURITY_ENABLE"
STRATEGY = "ROS_SECURITY_STRATEGY"
KEYSTORE = "ROS_SECURITY_KEYSTORE"
ENCLAVE_OVERRIDE = "ROS_SECURITY_ENCLAVE_OVERRIDE"
DEFAULT_KEYSTORE = "keystore"


@dataclass(frozen=True)
class SecureMode:
    """A process's secure mode: the keystore and the enclave it runs as."""

    keystore: Path
    enclave: str

    def environment(self) -> dict[str, str]:
        """The variables rcl reads (the enclave goes in as an override, so every context of the process has it)."""
        return {
            ENABLE: "true",
            STRATEGY: "Enforce",
            KEYSTORE: str(self.keystore),
            ENCLAVE_OVERRIDE: self.enclave,
        }


def secure_mode(
    secure: bool, keystore: str, enclave: str, environ: Mapping[str, str] | None = None
) -> SecureMode | None:
    """The secure mode asked for by a `secure` parameter or the environment's ROS_SECURITY_ENABLE, else None.

    `keystore`: the `keystore` parameter ("" for ROS_SECURITY_KEYSTORE, then ./keystore); `enclave`: the enclave to
    run as (the caller's choice of `--enclave`, ROS_SECURITY_ENCLAVE_OVERRIDE or the node's full name)."""
    env = os.environ if environ is None else environ
    if not secure and env.get(ENABLE, "").lower() != "true":
        return None
    store = keystore or env.get(KEYSTORE, "") or DEFAULT_KEYSTORE
    return SecureMode(Path(store).expanduser().absolute(), check_enclave_name(enclave))


def prepare(mode: SecureMode) -> None:
    """Check the enclave's files (KeystoreError, one line) and put the secure mode into this process's environment,
    where rclpy.init's rcl reads it."""
    store = Keystore(mode.keystore)
    if not store.root.is_dir():
        raise KeystoreError(f"secure mode: no keystore at {store.root} (robo-rl security create {store.root} ...)")
    check_enclave(store, mode.enclave)
    os.environ.update(mode.environment())


def refusal(rcl_error: str, mode: SecureMode) -> str:
    """One line for the RMW's refusal to start a secure participant (rcl's multi-line error)."""
    text = " ".join(rcl_error.split())
    if "doesn't have the security libraries" in text:
        return (
            f"secure mode: this RMW's Fast DDS was built without DDS-Security (rcl: 'This Fast DDS version doesn't "
            f"have the security libraries'), so enclave {mode.enclave} cannot be enforced; the ros-* wheels' Fast "
            "DDS is such a build: use a ROS 2 installation whose Fast DDS has -DSECURITY=ON (the ROS apt packages)"
        )
    return f"secure mode: the RMW refused enclave {mode.enclave} of {mode.keystore}: {text[:300]}"
