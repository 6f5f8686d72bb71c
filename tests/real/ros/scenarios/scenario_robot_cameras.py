"""RobotEnv with cameras over its ROS link (robo_rl.robot.link.RosLink), in this process: the arm_peg_pixels profile's
JointState, hole estimate and both cameras' Images come from a driver thread at 10 Hz, as a robot's drivers publish
them; the env steps on the joint states' arrival (trigger input) and returns the state with each camera's newest frame,
decoded and resized (32 x 32 rgb8 → the cameras' 16 x 16) on arrival. The driver numbers its periods: the state's
hole estimate x is `k` mm and every pixel of both frames `k`, so each observation says which period its state and its
frames came from. Phases (`PHASES`): fresh; the wrist's frames stamped `OLD_S` s in the past (arriving on time, but
older than the staleness timeout by their stamps); fresh; the side camera silent; the wrist's frames undecodable;
fresh.

argv: LOG_DIR. Prints per step its phase, validity, periods of the state and frames, and the stale inputs; the
link's skipped messages per phase, as JSON.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import rclpy
import torch
from harness import finish
from rclpy.duration import Duration
from rclpy.qos import qos_profile_sensor_data
from rclpy.time import Time
from sensor_msgs.msg import Image, JointState
from std_msgs.msg import Float32MultiArray, String

from robo_rl.image_spec import STATE_KEY, ImageSpec
from robo_rl.real.profile import load_profile
from robo_rl.robot.env import RobotEnv
from robo_rl.robot.link import RosLink
from robo_rl.robot.rewards import reward_for

NS = "/arm"
JOINTS = ["yaw", "shoulder", "elbow", "wrist"]
CAMERAS = (ImageSpec("wrist", 16, 16, 3), ImageSpec("side", 16, 16, 3))
SENT = 32
"""Pixels square of the frames the driver sends."""
OLD_S = 0.5
"""How old the wrist's frames are by their stamps in phase `old` (the profile's staleness timeout: 0.3 s)."""
PHASES = (("fresh", 15), ("old", 15), ("fresh_again", 10), ("side_silent", 15), ("undecodable", 15), ("fresh_end", 10))
"""(phase, steps)."""
X_INDEX = 8
"""peg_tip_to_hole_estimate_x in the profile's observation."""


class Driver:
    """The robot's drivers: every period the joint states, the hole estimate and both cameras' frames of period `k`."""

    def __init__(self, node: Any) -> None:
        self.node = node
        self.joints = node.create_publisher(JointState, f"{NS}/joint_states", qos_profile_sensor_data)
        self.state = node.create_publisher(Float32MultiArray, f"{NS}/state", qos_profile_sensor_data)
        self.images = {
            c.name: node.create_publisher(Image, f"{NS}/{c.name}/image_raw", qos_profile_sensor_data) for c in CAMERAS
        }
        self.phase = "fresh"
        self.periods = 0
        self.sent: dict[str, int] = {}
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def matched(self) -> bool:
        publishers = [self.joints, self.state, *self.images.values()]
        return all(p.get_subscription_count() > 0 for p in publishers)

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            self.periods += 1
            k = self.periods % 100
            now = self.node.get_clock().now()
            for camera, publisher in self.images.items():
                if camera == "side" and self.phase == "side_silent":
                    continue
                stamp = now - Duration(seconds=OLD_S) if self._old(camera) else now
                publisher.publish(self._frame(camera, k, stamp))
                self.sent[self.phase] = self.sent.get(self.phase, 0) + 1
            self.state.publish(Float32MultiArray(data=[k * 0.001, 0.0, 0.05]))
            self.joints.publish(JointState(name=JOINTS, position=[0.0, 0.5, -1.0, 0.5], velocity=[0.0] * 4))

    def _old(self, camera: str) -> bool:
        return camera == "wrist" and self.phase == "old"

    def _frame(self, camera: str, k: int, stamp: Time) -> Image:
        message = Image(height=SENT, width=SENT, encoding="rgb8", step=SENT * 3, data=bytes([k]) * (SENT * SENT * 3))
        if camera == "wrist" and self.phase == "undecodable":
            message.encoding = "yuv422"  # not read: skipped, counted, keeps nothing fresh
        message.header.stamp = stamp.to_msg()
        message.header.frame_id = camera
        return message

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self._stop.set()
        self.thread.join(1.0)


def main() -> None:
    rclpy.init()
    profile = load_profile("arm_peg_pixels")
    link = RosLink(profile, namespace=NS, cameras=CAMERAS)
    env = RobotEnv(profile, link, reward_for(profile), say=lambda text: None, cameras=CAMERAS)
    probe = rclpy.create_node("driver")
    driver = Driver(probe)
    events = probe.create_publisher(String, f"{NS}/episode_event", 10)
    deadline = time.monotonic() + 20.0
    while time.monotonic() < deadline and not (driver.matched() and events.get_subscription_count() > 0):
        link.wait_until(time.monotonic() + 0.01)
    events.publish(String(data="reset"))  # the operator starts the episode (arm_peg_pixels: reset by a person)
    driver.start()
    obs = env.reset()
    first = {name: int(obs[name][0, 0, 0, 0]) for name in ("wrist", "side")}
    steps: list[dict[str, Any]] = []
    skipped: dict[str, int] = {}
    for phase, count in PHASES:
        driver.phase = phase
        before = link.skipped_messages
        for _ in range(count):
            obs, _, _, _, info = env.step(torch.zeros(1, 4))
            newest = link.frames()
            steps.append(
                {
                    "phase": phase,
                    "valid": bool(info["valid"][0]),
                    "state": round(float(obs[STATE_KEY][0, X_INDEX]) * 1000),
                    "frames": {name: int(obs[name][0, 0, 0, 0]) for name in ("wrist", "side")},
                    "shape": list(obs["wrist"].shape),
                    "newest_wrist": int(newest["wrist"][0, 0, 0]) if "wrist" in newest else None,
                    "stale": link.stale_inputs(),
                }
            )
        skipped[phase] = link.skipped_messages - before
    driver.stop()
    results = {"first": first, "steps": steps, "skipped": skipped, "sent": driver.sent}
    results["invalid_steps"] = env.invalid_steps
    link.close()
    finish(results)


if __name__ == "__main__":
    main()
