"""diagnostic_msgs/DiagnosticArray for the robo_rl nodes: one status with a level, a message and key values."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from robo_rl.real.fault import Level

DIAGNOSTICS_TOPIC = "/diagnostics"
OK, WARN, ERROR = Level.OK, Level.WARN, Level.ERROR
"""diagnostic_msgs/DiagnosticStatus levels (robo_rl.real.fault.Level)."""


def diagnostic_array(node: Any, level: int, message: str, hardware_id: str, values: Mapping[str, object]) -> Any:
    """A DiagnosticArray stamped now, with one status named after the node's full name."""
    from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

    status = DiagnosticStatus()
    status.level = bytes([level])
    status.name = node.get_fully_qualified_name()
    status.message = message
    status.hardware_id = hardware_id
    status.values = [KeyValue(key=key, value=_text(value)) for key, value in values.items()]
    array = DiagnosticArray()
    array.header.stamp = node.get_clock().now().to_msg()
    array.status = [status]
    return array


def _text(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)
