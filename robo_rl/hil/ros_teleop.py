"""RosTeleop: a joystick on ROS 2 as the TeleopDevice of human-in-the-loop training (`--teleop ros`).

teleop_node turns sensor_msgs/Joy into `intervention` (std_msgs/Float32MultiArray, the operator's action in
the policy's units, clipped to the robot profile's bounds) and `intervening` (std_msgs/Bool) while the dead-man
button is held. This device subscribes to both in the training process (a background executor thread) and
reports the operator's action for env `env_index` while an intervention message is fresher than `timeout`
seconds; `estop` (std_msgs/Bool) shows up as the `estop` button. Needs rclpy and torch (.venv-ros).
"""

from __future__ import annotations

import atexit
import threading
import time
from typing import Any

import rclpy
import torch
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions
from std_msgs.msg import Bool, Float32MultiArray

from robo_rl.hil.device import TeleopCommand


class RosTeleop:
    """See the module docstring; `namespace` is the robot's (e.g. `/cf1`), where teleop_node publishes."""

    def __init__(
        self, num_envs: int, action_dim: int, namespace: str = "/", env_index: int = 0, timeout: float = 0.2
    ) -> None:
        if not 0 <= env_index < num_envs:
            raise ValueError(f"RosTeleop: env_index {env_index} outside 0..{num_envs - 1}")
        self.owns_context = not rclpy.ok()
        if self.owns_context:  # Ctrl-C and SIGTERM are robo-rl train's: rclpy's handlers would shut the context down
            rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
        self.num_envs, self.action_dim, self.env_index, self.timeout = num_envs, action_dim, env_index, timeout
        self.lock = threading.Lock()
        self.action = torch.zeros(action_dim)
        self.received_at = -float("inf")
        self.holding = False
        self.estop = False
        self.node = rclpy.create_node("hil_teleop", namespace=namespace)
        reliable = ReliabilityPolicy.RELIABLE
        latched = QoSProfile(depth=1, reliability=reliable, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.node.create_subscription(Float32MultiArray, "intervention", self._on_intervention, 10)
        self.node.create_subscription(Bool, "intervening", self._on_intervening, 10)
        self.node.create_subscription(Bool, "estop", self._on_estop, latched)
        self.executor = SingleThreadedExecutor()
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self.executor.spin, daemon=True)
        self.thread.start()
        self.closed = False
        atexit.register(self.close)  # a spinning executor thread at interpreter exit aborts the process

    def _on_intervention(self, message: Any) -> None:
        values = list(message.data)
        if len(values) != self.action_dim:
            problem = f"intervention of {len(values)} values, the task has {self.action_dim} actions"
            self.node.get_logger().error(problem, throttle_duration_sec=1.0)
            return
        with self.lock:
            self.action = torch.tensor(values, dtype=torch.float32)
            self.received_at = time.monotonic()
            self.holding = True

    def _on_intervening(self, message: Any) -> None:
        with self.lock:
            self.holding = bool(message.data)

    def _on_estop(self, message: Any) -> None:
        with self.lock:
            self.estop = self.estop or bool(message.data)

    def poll(self, obs: torch.Tensor) -> TeleopCommand:
        with self.lock:
            fresh = self.holding and time.monotonic() - self.received_at <= self.timeout
            action = torch.zeros(self.num_envs, self.action_dim, dtype=obs.dtype, device=obs.device)
            action[self.env_index] = self.action.to(obs.device, obs.dtype)
            active = torch.zeros(self.num_envs, dtype=torch.bool, device=obs.device)
            active[self.env_index] = fresh
            buttons = {"estop": True} if self.estop else {}
            self.estop = False
        return TeleopCommand(action, active, buttons)

    def episode_reset(self, done: torch.Tensor) -> None:
        """The operator's hold outlives episodes."""

    def close(self) -> None:
        """Stop the executor thread and the node (also at exit)."""
        if self.closed:
            return
        self.closed = True
        self.executor.shutdown()
        self.thread.join(timeout=2.0)
        self.node.destroy_node()
        if self.owns_context:
            rclpy.try_shutdown()
