"""The loopback-only network namespace every DDS/ROS process of the tests and benchmarks runs in.

`[*LOOPBACK_NETNS, program, *args]` runs `program` in a new user + network namespace whose only interface is
loopback, with multicast routed to it so that DDS discovery works and no packet can leave the machine.
"""

LOOPBACK_NETNS: tuple[str, ...] = (
    "unshare",
    "-rn",
    "sh",
    "-c",
    'ip link set lo up && ip link set lo multicast on && ip route add 224.0.0.0/4 dev lo && exec "$@"',
    "sh",
)
