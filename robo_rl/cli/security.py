"""`robo-rl security`: a ROS 2 DDS-Security keystore for a robot's graph (create), and an enclave's check (check)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

DESCRIPTION = """\
Make the keystore of a robot's graph and check an enclave of it. `create` makes KEYSTORE (ROS 2's layout, as
`ros2 security create_keystore` does: one CA for identities and permissions, the domain governance) unless it
exists, and one enclave per node of the launch files, named after the node's full name in --namespace:
policy_node, teleop_node, driver, sim_bridge, recorder and train_on_robot, each allowed exactly its topics (from
the profile, the recorder's `topics` in --params, and the launch file's --remap rules): only teleop_node may publish
estop, intervention, go_home and vehicle_request; only driver (and sim_bridge, which stands in for it) may publish
the profile's state inputs. Then start the launch file with `secure:=true keystore:=KEYSTORE`, and run the robot's
driver as the driver enclave (`--ros-args --enclave /NS/driver`, ROS_SECURITY_* set as for any secure ROS node).
`check` verifies an enclave's files as a node does before it starts (signatures by OpenSSL).
Needs the `cryptography` package (pip install 'robo-rl[ros]') and the `openssl` command.
"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "security",
        help="make a DDS-Security keystore for a robot's graph, or check an enclave",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)
    create = verbs.add_parser("create", help="the keystore and every node's enclave")
    create.add_argument("keystore", type=Path, metavar="KEYSTORE", help="folder of the keystore (made if missing)")
    create.add_argument("--profile", required=True, help="robot profile: a bundled name or a profile YAML")
    create.add_argument("--namespace", default="/", help="the robot's namespace, e.g. /car1 (default /)")
    create.add_argument("--params", type=Path, help="the launch file's parameter file (the recorder's topics)")
    create.add_argument(
        "--remap", action="append", default=[], metavar="FROM:=TO", help="a remap rule of the launch file (repeat)"
    )
    create.add_argument("--domain-id", type=int, default=0, help="ROS_DOMAIN_ID the graph runs on (default 0)")
    check = verbs.add_parser("check", help="verify an enclave's files as a node does at start")
    check.add_argument("keystore", type=Path, metavar="KEYSTORE")
    check.add_argument("enclave", metavar="ENCLAVE", help="e.g. /car1/policy_node")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from robo_rl.real.profile import ProfileError
    from robo_rl.real.security.keystore import KeystoreError
    from robo_rl.real.security.signing import SigningError

    try:
        return _create(args) if args.verb == "create" else _check(args)
    except ModuleNotFoundError as err:
        print(
            f"error: robo-rl security needs the Python package {err.name!r} (pip install cryptography)", file=sys.stderr
        )
    except (KeystoreError, SigningError, ProfileError, ValueError, OSError) as err:
        print(f"error: {' '.join(str(err).split())}", file=sys.stderr)
    return 2


def _create(args: argparse.Namespace) -> int:
    from robo_rl.real.profile import load_profile
    from robo_rl.real.ros.startup import StartupArguments, file_parameters
    from robo_rl.real.security.grants import robot_grants
    from robo_rl.real.security.keystore import Keystore, create_enclave, create_keystore

    if args.domain_id not in range(0, 233):
        raise ValueError(f"--domain-id: a ROS domain id in [0, 232], got {args.domain_id}")
    remaps = dict(_rule(item) for item in args.remap)
    recorder = StartupArguments("recorder", args.namespace)
    recorded = (
        file_parameters(args.params, recorder).get("topics", DEFAULT_RECORDED) if args.params else DEFAULT_RECORDED
    )
    store = Keystore(args.keystore)
    if not store.exists():
        create_keystore(args.keystore, args.domain_id)
        print(f"created keystore {args.keystore} (domain {args.domain_id})")
    for grant in robot_grants(load_profile(args.profile), args.namespace, remaps, recorded):
        folder = create_enclave(store, grant, args.domain_id)
        counts = f"publishes {len(grant.publish)}, subscribes {len(grant.subscribe)} topics"
        print(f"enclave {grant.enclave}: {counts} ({folder})")
    return 0


DEFAULT_RECORDED = ("odom", "cmd_motors", "estop", "intervention", "operator_log", "/diagnostics")


def _check(args: argparse.Namespace) -> int:
    from robo_rl.real.security.keystore import Keystore, check_enclave

    folder = check_enclave(Keystore(args.keystore), args.enclave)
    print(f"{args.enclave}: identity, governance and permissions verify ({folder})")
    return 0


def _rule(item: str) -> tuple[str, str]:
    source, separator, target = item.partition(":=")
    if not separator or not source or not target:
        raise ValueError(f"--remap {item!r}: expected FROM:=TO")
    return source, target
