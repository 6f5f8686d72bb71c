"""teleop_node driven by a SpaceMouse through the spacenav driver's topics, as a process with real rclpy.

The Joy messages are shaped as ROS 2's spacenav driver publishes them (ros-drivers/joystick_drivers, branch ros2,
commit 881f3a5474044b79324a2117fe52a5db2106e4e0, spacenav/src/spacenav.cpp lines 129-130 and 312-320: topic
`spacenav/joy`, axes [x, y, z, rot x, rot y, rot z] normalised by full_scale, buttons by libspnav's number; the
conventions are checked line by line in tests/real/test_spacemouse.py). What teleop_node publishes is checked
against the simulator's forward kinematics of the arm (robo_rl.sim.mujoco.peg_insert.peg_tip_fk).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from robo_rl.sim.mujoco.peg_insert import peg_down_ik, peg_tip_fk

ARM_PEG_DT = 0.1
SPEED = 0.05
"""teleop_node's default `spacenav.speed`, m/s at full deflection (its deadband 0.1)."""


def test_spacemouse_drives_the_peg_tip_only_while_the_dead_man_is_held(
    ros_scenario: Callable[..., dict[str, Any]],
) -> None:
    q = peg_down_ik(np.array([[0.40, 0.02, 0.15]]))[0]
    result = ros_scenario("scenario_spacenav_teleop.py", *(repr(float(v)) for v in q), timeout=300.0)
    logs = result.get("logs")
    assert result["ready"], logs
    # released: a pushed puck without the dead-man button moves nothing
    assert result["released"] == {"interventions": 0, "intervening": []}, logs
    # held: every step moves the FK tip forward (+x) by the deflection's share of speed × dt, nothing sideways
    held = result["held"]
    assert held["reached"], logs
    expected = (350 / 512 - 0.1) / 0.9 * SPEED * ARM_PEG_DT
    for action in held["actions"]:
        moved = peg_tip_fk((q + np.array(action))[None])[0] - peg_tip_fk(q[None])[0]
        np.testing.assert_allclose(moved, [expected, 0.0, 0.0], atol=2e-6)  # float32 on the wire
    # the puck let go, the button still held: zero steps, the hold
    assert result["rest"]["reached"] and result["rest"]["last"] == [[0.0] * 4] * 3, result["rest"]
    # released: intervening false once, and nothing after it
    let_go = result["let_go"]
    assert let_go["reached"] and let_go["falses"] == 1 and let_go["later_interventions"] == 0, let_go
    assert let_go["last"] is False
    # the right button is the success button, once per press
    assert result["success"]["reached"] and result["success"]["events"] == ["success"], result["success"]
    # the driver stops while the button is held: let go within the profile's staleness timeout (0.3 s) and a period
    assert result["silent"]["reached"] and result["silent"]["after_s"] < 2.0, (result["silent"], logs)
    assert result["exit_codes"] == {"teleop_node": 0}, logs
