"""The soak's policy (bench/soak.py, tests/real/ros/test_soak.py): a linear hover controller exported as policy.onnx
for the bundled quadrotor_crazyflie profile, with the real metadata of quadrotor_hover_ppo's task.

Linear, so that the soak runner can compute its answer to any odometry by itself: it weighs only the position error,
the rotation, the world velocity and the body rates, and gives the position error's integral and the previous action
(which the profile also feeds it, from the node's own state) a weight of zero. A PD on the vertical error and on the
attitude (small angles: roll 0.5 (R21 - R12), pitch 0.5 (R02 - R20), yaw 0.5 (R10 - R01)), with the tilt a PD on the
horizontal error asks for, mapped onto the four rotors through the frame's geometry and its thrust curve linearized
at the hover command. Needs torch (run it in the training venv).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from robo_rl.actuator import actuator_of
from robo_rl.api.configs import preset
from robo_rl.config import config_hash
from robo_rl.export.onnx import PolicyMetadata, export_onnx
from robo_rl.sim import make
from robo_rl.sim.quadrotor.params import load_frame

VERTICAL = (4.0, 3.0)
"""(m/s^2 per m, per m/s): the vertical acceleration asked for the height error and the vertical velocity."""
HORIZONTAL = (-2.0, -2.5)
"""(m/s^2 per m, per m/s): the horizontal acceleration asked for, reached by tilting. The sign was found by flying
the simulator (2 crashes in 256 flights of 5 s from the task's random starts; with the other sign, 1171)."""
ATTITUDE = (100.0, 15.0)
"""(rad/s^2 per rad, per rad/s): roll and pitch."""
YAW = (20.0, 5.0)
"""(rad/s^2 per rad, per rad/s): yaw."""


def controller_weights(frame_name: str, obs: list[str], hover: np.ndarray) -> np.ndarray:
    """The weights `(4, obs_dim)` of the actions' deviation from `hover` on the observations named `obs`."""
    frame = load_frame(frame_name)
    _, c1, c2 = frame.thrust_curve
    command = frame.min_command + (float(np.mean(hover)) + 1.0) / 2.0 * (frame.max_command - frame.min_command)
    per_action = (c1 + 2.0 * c2 * command) * (frame.max_command - frame.min_command) / 2.0  # N per unit action
    (x, y), spin = np.array(frame.rotor_positions).T, np.array(frame.spin_signs, dtype=float)
    ixx, iyy, izz = frame.inertia
    effect = np.stack([np.ones(4) / frame.mass, y / ixx, -x / iyy, -spin * frame.torque_to_thrust / izz]) * per_action
    mix = np.linalg.pinv(effect)  # (4 actions, [vertical accel, roll, pitch, yaw accel])
    index = {name: i for i, name in enumerate(obs)}
    wanted = np.zeros((4, len(obs)))

    def add(row: int, name: str, weight: float) -> None:
        wanted[row, index[name]] += weight

    g = frame.gravity
    add(0, "position_error_z", -VERTICAL[0])
    add(0, "velocity_z", -VERTICAL[1])
    kp, kd = ATTITUDE
    # The tilt that the horizontal PD asks for, as roll and pitch offsets (HORIZONTAL's sign: see there).
    for name, sign in (("rotation_21", 0.5), ("rotation_12", -0.5)):
        add(1, name, -kp * sign)
    add(1, "position_error_y", -kp * HORIZONTAL[0] / g)
    add(1, "velocity_y", -kp * HORIZONTAL[1] / g)
    add(1, "angular_velocity_x", -kd)
    for name, sign in (("rotation_02", 0.5), ("rotation_20", -0.5)):
        add(2, name, -kp * sign)
    add(2, "position_error_x", kp * HORIZONTAL[0] / g)
    add(2, "velocity_x", kp * HORIZONTAL[1] / g)
    add(2, "angular_velocity_y", -kd)
    for name, sign in (("rotation_10", 0.5), ("rotation_01", -0.5)):
        add(3, name, -YAW[0] * sign)
    add(3, "angular_velocity_z", -YAW[1])
    return mix @ wanted


def export_soak_policy(path: Path) -> Path:
    """The controller as policy.onnx for the quadrotor_crazyflie profile (actions clipped to [-1, 1])."""
    cfg = preset("quadrotor_hover_ppo")
    env = make(cfg.task.name, num_envs=1, config=cfg.task.config)
    obs, hover = list(env.obs_spec.names), np.array(env.hover_action)
    frame = cfg.task.config.frame
    weights = controller_weights(frame, obs, hover)
    linear = torch.nn.Linear(len(obs), 4)
    with torch.no_grad():
        linear.weight.copy_(torch.as_tensor(weights, dtype=torch.float32))
        linear.bias.copy_(torch.as_tensor(hover, dtype=torch.float32))

    class Clipped(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.clamp(linear(x), -1.0, 1.0)

    metadata = PolicyMetadata(
        env.obs_spec, env.action_spec, env.dt, cfg.task.name, config_hash(cfg), "soak", actuator=actuator_of(env)
    )
    return export_onnx(Clipped(), metadata, path)
