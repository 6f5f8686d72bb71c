"""Who sent an operator's command: the publisher of every e-stop, intervention, go_home and vehicle request.

A DDS sample carries its writer's GUID (rmw's publisher GID), which rcl hands out as the message info of a take.
rclpy 9's EventsExecutor (the nodes' executor on Kilted, real/ros/executor.py) cannot call a callback with the
message info ("SystemError: null argument to internal routine"), so the operator's topics are not given to the
executor: `OperatorTopic` holds a subscription of its own, outside the node's list, and `take()` drains it with
the message info each time the node polls it (a timer every `POLL_PERIOD_S`, and before each control decision).

`SenderDirectory` turns a GID into the node that owns the publisher and that node's enclave, from the ROS graph
(rcl's endpoint info and node list); a GID whose node the graph does not know yet (rmw discovers a publisher before
the graph message that names its node) is reported as its GID alone, node and enclave "?", and looked up again at
the next message. In the secure mode the enclave is what DDS-Security authenticated the publisher's
participant as; without it, anyone may claim any node name, and the GID is only as good as the network.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

POLL_PERIOD_S = 0.01
"""How often the operator's topics are drained between observations (an e-stop waits at most this long)."""
UNKNOWN = "?"
UNKNOWN_NODE, UNKNOWN_NAMESPACE = "_NODE_NAME_UNKNOWN_", "_NODE_NAMESPACE_UNKNOWN_"
"""What rmw reports as the node of an endpoint discovered before the ROS graph message naming its node."""


@dataclass(frozen=True)
class Sender:
    """A publisher as the graph knows it: its GID (hex), fully qualified node name and enclave ("?" unknown)."""

    gid: str
    node: str = UNKNOWN
    enclave: str = UNKNOWN

    def describe(self) -> str:
        return f"{self.node} (enclave {self.enclave}, gid {self.gid})"


def gid_hex(data: bytes | list[int]) -> str:
    """A publisher GID as dotted hex (`01.0f.7f...`), trailing zero bytes dropped (rmw pads GIDs to 24 bytes)."""
    raw = bytes(data).rstrip(b"\x00") or b"\x00"
    return ".".join(f"{byte:02x}" for byte in raw)


class SenderDirectory:
    """GID → Sender for the publishers of one node's topics, looked up in the ROS graph and cached."""

    def __init__(self, node: Any) -> None:
        self.node = node
        self.known: dict[str, Sender] = {}

    def sender(self, topic: str, gid: bytes | list[int]) -> Sender:
        key = gid_hex(gid)
        if key not in self.known:
            found = self._lookup(topic, key)
            if found.node == UNKNOWN:
                return found  # not cached: the graph may know it at the next message
            self.known[key] = found
        return self.known[key]

    def _lookup(self, topic: str, key: str) -> Sender:
        for info in self.node.get_publishers_info_by_topic(topic):
            if info.node_name == UNKNOWN_NODE or info.node_namespace == UNKNOWN_NAMESPACE:
                continue  # rmw saw the endpoint before the node's graph message: not cached, asked again next time
            if gid_hex(info.endpoint_gid) == key:
                name = _full_name(info.node_namespace, info.node_name)
                return Sender(key, name, self._enclave(info.node_namespace, info.node_name))
        return Sender(key)

    def _enclave(self, namespace: str, name: str) -> str:
        for node_name, node_namespace, enclave in self.node.get_node_names_and_namespaces_with_enclaves():
            if (node_name, node_namespace) == (name, namespace):
                return str(enclave)
        return UNKNOWN


class OperatorTopic:
    """A subscription on `node` taken by `take()` with each message's sender, outside the node's executor."""

    def __init__(
        self, node: Any, message_type: type, topic: str, qos: Any, handle: Callable[[Any, Sender], None]
    ) -> None:
        from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
        from rclpy.type_support import check_is_valid_msg_type

        check_is_valid_msg_type(message_type)  # loads the type support, as create_subscription does
        self.node, self.message_type, self.handle = node, message_type, handle
        with node.handle:
            self.subscription = _rclpy.Subscription(node.handle, message_type, topic, qos.get_c_qos_profile(), None)
        self.topic = self.subscription.get_topic_name()  # resolved and remapped, for the graph lookup

    def take(self, directory: SenderDirectory) -> int:
        """Hand every waiting message to the callback with its sender; the number taken."""
        taken = 0
        while True:
            with self.subscription:
                result = self.subscription.take_message(self.message_type, False)
            if result is None:
                return taken
            message, info = result
            self.handle(message, directory.sender(self.topic, info["publisher_gid"]["data"]))
            taken += 1

    def destroy(self) -> None:
        self.subscription.destroy_when_not_in_use()


def _full_name(namespace: str, name: str) -> str:
    return f"{namespace.rstrip('/')}/{name}"
