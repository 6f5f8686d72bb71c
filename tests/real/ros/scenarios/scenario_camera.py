"""policy_node with a camera policy: state + a raw Image + a CompressedImage in, the policy's command at the state's
rate out, the safe command while the raw camera is silent, the policy again once it is back.

argv: LOG_DIR POLICY PROFILE (tests/real/camera_probe.py's probe and its profile: action = state + the cameras' frame
means / 255, times their gains). The probe publishes at 20 Hz the state [0.5, -0.25] on `state`, an 8x12 rgb8 frame
with rows padded to 40 bytes on `wrist_image` (its centred 8x8 square of 2x2 blocks averaging to WRIST_MEANS, a
255 border the crop must cut off) and a 2x2 grey PNG on `scene_image`. Phases, each waited for by its effect: the
policy's commands with the first wrist frames; with brighter ones; the wrist camera silent (state and scene keep
coming): the safe command and the stale status naming `wrist_image`; the camera back: the policy's commands; its
frames stamped 5 s in the past (a stalled pipeline): the safe command again. The commands and statuses are printed
for the pytest side, which computes what each must be.
"""

from __future__ import annotations

import array
import io
import sys
import time
from pathlib import Path

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from harness import Processes, finish, ros_args, spin_publishing_until, spin_until
from PIL import Image as PillowImage
from rclpy.duration import Duration
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import CompressedImage, Image
from std_msgs.msg import Float32MultiArray

STATE = (0.5, -0.25)
WRIST_MEANS = ((40, 50, 60), (140, 150, 160))
SCENE_GREY = 102
SAFE = -5.0
LATE_S = 5.0
"""How old the last phase's frames are by their stamps on arrival."""
PERIOD_S = 0.05
RECORDED = 20
"""Commands recorded in each phase once its effect showed."""
SETTLE_S = 60.0
"""Bound on waiting for an effect: reached only when it never comes (the check then fails)."""


def wrist_frame(means: tuple[int, int, int]) -> Image:
    """8x12 rgb8, step 40: the centred 8x8 square of blocks [[m - 2, m + 2], [m, m]] per channel, 255 around it."""
    pixels = np.full((8, 12, 3), 255, dtype=np.uint8)
    block = np.stack([np.array([[m - 2, m + 2], [m, m]]) for m in means], axis=-1)
    pixels[:, 2:10] = np.tile(block, (4, 4, 1))
    padded = np.zeros((8, 40), dtype=np.uint8)
    padded[:, :36] = pixels.reshape(8, 36)
    message = Image(height=8, width=12, encoding="rgb8", step=40)
    message.data = array.array("B", padded.tobytes())
    return message


def scene_frame(grey: int) -> CompressedImage:
    buffer = io.BytesIO()
    PillowImage.fromarray(np.full((2, 2), grey, dtype=np.uint8)).save(buffer, format="PNG")
    message = CompressedImage(format="png")
    message.data = array.array("B", buffer.getvalue())
    return message


def main() -> None:
    log_dir, policy, profile = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    processes = Processes(log_dir)
    params = {"policy": policy, "profile": profile, "autostart": True, "diagnostics_period": 0.2}
    processes.start("policy_node", "policy_node", *ros_args("policy_node", "/cam", **params))
    rclpy.init()
    probe = rclpy.create_node("probe")
    commands: list[tuple[float, list[float]]] = []
    statuses: list[tuple[float, int, str, dict[str, str]]] = []
    probe.create_subscription(
        Float32MultiArray, "/cam/cmd", lambda m: commands.append((time.monotonic(), list(m.data))), 100
    )

    def on_diagnostics(m: DiagnosticArray) -> None:
        statuses.extend(
            (time.monotonic(), s.level[0], s.message, {kv.key: kv.value for kv in s.values})
            for s in m.status
            if "policy_node" in s.name
        )

    probe.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, 100)
    state_pub = probe.create_publisher(Float32MultiArray, "/cam/state", qos_profile_sensor_data)
    wrist_pub = probe.create_publisher(Image, "/cam/wrist_image", qos_profile_sensor_data)
    scene_pub = probe.create_publisher(CompressedImage, "/cam/scene_image", qos_profile_sensor_data)
    wrist = {"means": WRIST_MEANS[0], "on": True, "last": 0.0, "late_s": 0.0}

    def publish() -> None:
        now = probe.get_clock().now()
        stamp = now.to_msg()
        if wrist["on"]:
            frame = wrist_frame(wrist["means"])
            frame.header.stamp = (now - Duration(seconds=wrist["late_s"])).to_msg()
            wrist_pub.publish(frame)
            wrist["last"] = time.monotonic()
        scene = scene_frame(SCENE_GREY)
        scene.header.stamp = stamp
        scene_pub.publish(scene)
        state_pub.publish(Float32MultiArray(data=list(STATE)))

    def policy_commands(after: int) -> list[tuple[float, list[float]]]:
        return [c for c in commands[after:] if c[1][0] != SAFE]

    def record(after: int) -> list[tuple[float, list[float]]]:
        """Publish until RECORDED more commands than `after` arrived; those commands."""
        spin_publishing_until(probe, lambda: len(commands) >= after + RECORDED, SETTLE_S, publish, PERIOD_S)
        return commands[after : after + RECORDED]

    pubs = (state_pub, wrist_pub, scene_pub)
    ready = spin_until(probe, lambda: all(p.get_subscription_count() > 0 for p in pubs), SETTLE_S)
    # Phase 1: the first policy command (before it, the cameras' first frames were still missing: safe commands).
    spin_publishing_until(probe, lambda: bool(policy_commands(0)), SETTLE_S, publish, PERIOD_S)
    first = commands.index(policy_commands(0)[0])
    phase1 = record(first)
    # Phase 2: brighter wrist frames; from the first command that shows them on.
    wrist["means"] = WRIST_MEANS[1]
    mark = len(commands)
    brighter = lambda: [c for c in policy_commands(mark) if c[1][0] > phase1[-1][1][0] + 0.1]  # noqa: E731
    spin_publishing_until(probe, lambda: bool(brighter()), SETTLE_S, publish, PERIOD_S)
    phase2 = record(commands.index(brighter()[0]))
    # Phase 3: the wrist camera goes silent; state and scene keep coming.
    wrist["on"] = False
    silent_since = wrist["last"]
    mark = len(commands)
    safe = lambda: [c for c in commands[mark:] if c[1] == [SAFE, SAFE]]  # noqa: E731
    spin_publishing_until(probe, lambda: bool(safe()), SETTLE_S, publish, PERIOD_S)
    first_safe = safe()[0]
    stale = record(commands.index(first_safe))
    spin_until(probe, lambda: any(s[0] > silent_since and "no wrist_image" in s[2] for s in statuses), SETTLE_S)
    # Phase 4: the camera is back.
    wrist["on"] = True
    mark = len(commands)
    spin_publishing_until(probe, lambda: bool(policy_commands(mark)), SETTLE_S, publish, PERIOD_S)
    back = record(commands.index(policy_commands(mark)[0]))
    # Phase 5: the frames keep coming but stamped LATE_S in the past (a stalled camera pipeline): stale as silence.
    wrist["late_s"] = LATE_S
    late_since = time.monotonic()
    mark = len(commands)
    spin_publishing_until(probe, lambda: bool(safe()), SETTLE_S, publish, PERIOD_S)
    late = record(commands.index(safe()[0]))
    spin_until(probe, lambda: any(s[0] > late_since and "no wrist_image" in s[2] for s in statuses), SETTLE_S)
    results = {
        "ready": ready,
        "state": STATE,
        "wrist_means": WRIST_MEANS,
        "scene_grey": SCENE_GREY,
        "phase1": [c[1] for c in phase1],
        "phase2": [c[1] for c in phase2],
        "stale": [c[1] for c in stale],
        "stale_first_safe_after_s": first_safe[0] - silent_since,
        "stale_statuses": [s for s in statuses if s[0] > silent_since and "no wrist_image" in s[2]],
        "back": [c[1] for c in back],
        "late": [c[1] for c in late],
        "late_statuses": [s for s in statuses if s[0] > late_since and "no wrist_image" in s[2]],
    }
    probe.destroy_node()
    finish(results, processes, ["policy_node"])


if __name__ == "__main__":
    main()
