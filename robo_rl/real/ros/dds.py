"""The DDS settings the robo_rl nodes start with: Fast DDS without XTypes type propagation.

Fast DDS 3.x (Kilted's RMW) resolves the type of every remote endpoint it has not registered itself through the
XTypes TypeLookup service. When a lookup with a CycloneDDS participant fails at the same time ("TYPELOOKUP_SERVICE_
REPLY_LISTENER Error registering remote type: Inconsistent TypeObject", CycloneDDS 11), the endpoints still waiting
for their types are never matched: sim_bridge's odom publisher never reached policy_node, which then sent no
command at all. A node is exposed for as long as it has not created its own publishers and subscriptions (a
lifecycle node until configure; sim_bridge while it builds its simulator). ROS 2 matches endpoints by type name and
needs none of this, so the nodes run with type propagation "registration_only" (fastdds_profile.xml), unless the
user configured Fast DDS with a profiles file of their own or chose another RMW.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

FASTDDS_PROFILE = Path(__file__).with_name("fastdds_profile.xml")
PROFILES_VARIABLE = "FASTDDS_DEFAULT_PROFILES_FILE"
# What else makes Fast DDS load a profiles file of the user's: the 2.x variable, and the file it reads from the
# working directory when no variable names one.
USER_PROFILES_VARIABLES = (PROFILES_VARIABLE, "FASTRTPS_DEFAULT_PROFILES_FILE")
USER_PROFILES_FILES = ("DEFAULT_FASTDDS_PROFILES.xml", "DEFAULT_FASTRTPS_PROFILES.xml")


def dds_environment(environ: Mapping[str, str], cwd: Path) -> dict[str, str]:
    """Variables to add to a node process's environment (`environ`, started in `cwd`) before rclpy.init."""
    if not environ.get("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp").startswith("rmw_fastrtps"):
        return {}
    if any(environ.get(name) for name in USER_PROFILES_VARIABLES) or any(
        (cwd / name).is_file() for name in USER_PROFILES_FILES
    ):
        return {}
    return {PROFILES_VARIABLE: str(FASTDDS_PROFILE)}
