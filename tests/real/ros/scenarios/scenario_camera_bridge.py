"""Scenario: sim_bridge publishes a camera env's frames, the recorder keeps them in MCAP, demos-from-bag restores them.

sim_bridge runs in this process on `camera_env.TASK` (rc_car/race with two drawn cameras), with its timers removed:
the scenario ticks it itself, so each tick's frames are known exactly and nothing depends on the machine's speed.
Each tick: `bridge.tick()` steps and publishes; the probe waits for this tick's frames and state, answers with a
command (Twist), waits until the bridge has it, and lets PAUSE_S pass so the recorder (a real process, MCAP) has the
command before the next tick's frames are stamped. The test profile is rc_car with dt and staleness timeout
stretched (DT_S, STALE_S) so that these paused ticks are a steady stream to demos-from-bag, not gaps.

After TICKS ticks the recorder is stopped (SIGINT), the bag read back with rosbags, and `robo-rl demos-from-bag
--camera ... --all` run on it. Reports: per tick the env's frames (as lists) and the stamps; what the probe received;
the bag's image messages (bytes equal to the env's, stamps, CameraInfo K); the bag's size; and per transition of the
demo file the tick whose frame it holds (obs and next obs) and its state's first value.

argv: LOG_DIR [COMPRESSION]
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import rclpy
from camera_env import TASK, register
from harness import BIN, Processes, finish, ros_args
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data

TICKS = 30
PAUSE_S = 0.2
DT_S = 0.5
STALE_S = 5.0
CAMERAS = ("front", "grey")
COMMAND = "geometry_msgs/msg/Twist"
CAMERA_TOPICS = [f"{camera}/{kind}" for camera in CAMERAS for kind in ("image_raw", "camera_info")]
TOPICS = ["odom", "track", "drive_state", "cmd_vel", *CAMERA_TOPICS]


def test_profile(log_dir: Path) -> Path:
    """rc_car with dt DT_S and staleness timeout STALE_S (module docstring)."""
    from importlib import resources

    lines = resources.files("robo_rl.real").joinpath("profiles", "rc_car.yaml").read_text().splitlines()
    patched = {"dt:": f"dt: {DT_S}", "staleness_timeout:": f"staleness_timeout: {STALE_S}"}
    lines = [next((new for key, new in patched.items() if line.startswith(key)), line) for line in lines]
    path = log_dir / "rc_car_camera.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


class Probe:
    """Receives the bridge's frames, CameraInfo and track state; publishes the commands."""

    def __init__(self, node: Node) -> None:
        from geometry_msgs.msg import Twist
        from nav_msgs.msg import Odometry
        from sensor_msgs.msg import CameraInfo, Image
        from std_msgs.msg import Float32MultiArray

        self.images: dict[str, list[Any]] = {c: [] for c in CAMERAS}
        self.infos: dict[str, list[Any]] = {c: [] for c in CAMERAS}
        self.tracks: list[list[float]] = []
        for camera in CAMERAS:
            node.create_subscription(Image, f"/{camera}/image_raw", self.images[camera].append, qos_profile_sensor_data)
            node.create_subscription(
                CameraInfo, f"/{camera}/camera_info", self.infos[camera].append, qos_profile_sensor_data
            )
        node.create_subscription(
            Float32MultiArray, "/track", lambda m: self.tracks.append(list(m.data)), qos_profile_sensor_data
        )
        # the other state topics too, so that every bridge publisher has the probe and the recorder to wait for
        node.create_subscription(Odometry, "/odom", lambda _: None, qos_profile_sensor_data)
        node.create_subscription(Float32MultiArray, "/drive_state", lambda _: None, qos_profile_sensor_data)
        self.command = node.create_publisher(Twist, "/cmd_vel", 10)
        self.twist = Twist

    def received(self, ticks: int) -> bool:
        return len(self.tracks) >= ticks and all(len(self.images[c]) >= ticks for c in CAMERAS)

    def send(self) -> None:
        message = self.twist()
        message.linear.x = 1.0  # drive 0.2: the car rolls, so the state (and the frames drawn from it) change
        self.command.publish(message)


def spin_until(executor: SingleThreadedExecutor, condition: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        executor.spin_once(timeout_sec=0.01)
    return True


def spin_for(executor: SingleThreadedExecutor, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.01)


def run_ticks(bridge: Any, probe: Probe, executor: SingleThreadedExecutor) -> dict[str, Any]:
    """TICKS handshaken ticks (module docstring); the env's frames and the stamps of each."""
    frames: dict[str, list[Any]] = {c: [] for c in CAMERAS}
    stamps, states, lost = [], [], 0
    for tick in range(TICKS):
        bridge.tick()
        stamps.append(bridge.get_clock().now().nanoseconds)  # just after the tick's stamp: an upper bound
        for camera in CAMERAS:
            frames[camera].append(bridge.frames[camera].tolist())
        states.append(float(bridge.obs[0]))
        lost += not spin_until(executor, lambda t=tick: probe.received(t + 1), 10.0)
        probe.send()
        lost += not spin_until(executor, lambda: bridge.answered, 10.0)
        spin_for(executor, PAUSE_S)
    return {"env_frames": frames, "tick_upper_ns": stamps, "env_states": states, "lost": lost}


def received(probe: Probe, env_frames: dict[str, list[Any]]) -> dict[str, Any]:
    """What the probe got: per camera, whether each image's bytes equal that tick's env frame, and its fields."""
    out: dict[str, Any] = {}
    for camera in CAMERAS:
        images = probe.images[camera]
        pairs = zip(images, env_frames[camera], strict=False)  # a lost image shows in the count (below TICKS)
        equal = [bytes(m.data) == np.asarray(f, dtype=np.uint8).tobytes() for m, f in pairs]
        first, info = images[0], probe.infos[camera][0]
        out[camera] = {
            "count": len(images),
            "bytes_equal": equal,
            "encoding": first.encoding,
            "frame_id": first.header.frame_id,
            "size": [first.height, first.width, first.step],
            "stamps_ns": [m.header.stamp.sec * 10**9 + m.header.stamp.nanosec for m in images],
            "info_stamps_ns": [m.header.stamp.sec * 10**9 + m.header.stamp.nanosec for m in probe.infos[camera]],
            "k": list(info.k),
            "info_size": [info.height, info.width],
            "info_frame_id": info.header.frame_id,
        }
    return out


def read_bag(bag: Path) -> dict[str, Any]:
    from rosbags.highlevel import AnyReader

    images: dict[str, list[str]] = {}
    stamps: dict[str, list[int]] = {}
    types, counts, k, payload = {}, {}, {}, 0
    with AnyReader([bag]) as reader:
        for connection, _, raw in reader.messages():
            payload += len(raw)
            message = reader.deserialize(raw, connection.msgtype)
            types[connection.topic] = connection.msgtype
            counts[connection.topic] = counts.get(connection.topic, 0) + 1
            if connection.msgtype == "sensor_msgs/msg/Image":
                images.setdefault(connection.topic, []).append(bytes(message.data).hex())
                stamp = message.header.stamp
                stamps.setdefault(connection.topic, []).append(stamp.sec * 10**9 + stamp.nanosec)
            if connection.msgtype == "sensor_msgs/msg/CameraInfo":
                k[connection.topic] = [float(v) for v in message.k]
    files = {p.name: p.stat().st_size for p in bag.iterdir()}
    return {"bag_types": types, "bag_counts": counts, "bag_images_hex": images, "bag_stamps_ns": stamps} | {
        "bag_k": k,
        "bag_files": files,
        "bag_payload_bytes": payload,
    }


def convert(bag: Path, profile: Path, output: Path) -> dict[str, Any]:
    """`robo-rl demos-from-bag` with both cameras; per transition, the tick of its frames and its state's value."""
    cameras = [arg for c in CAMERAS for arg in ("--camera", f"{c}={c}/image_raw")]
    argv = [str(BIN / "robo-rl"), "demos-from-bag", str(bag), "--profile", str(profile), "--all", *cameras]
    done = subprocess.run([*argv, "-o", str(output)], capture_output=True, text=True, timeout=120)
    out: dict[str, Any] = {"convert_exit": done.returncode, "convert_output": (done.stdout + done.stderr)[-2000:]}
    if done.returncode == 0:
        from robo_rl.hil.demos import load_demo_frames

        specs, frames = load_demo_frames(output)
        with np.load(output) as data:
            out |= {"demo_obs0": data["obs"][:, 0].tolist(), "demo_terminated": data["terminated"].tolist()}
            out |= {"demo_truncated": data["truncated"].tolist()}
        out["demo_specs"] = [spec.to_dict() for spec in specs]
        out["demo_frames_hex"] = {
            name: [[f.tobytes().hex() for f in obs], [f.tobytes().hex() for f in nxt]]
            for name, (obs, nxt) in frames.items()
        }
    return out


def main() -> None:
    log_dir = Path(sys.argv[1])
    compression = sys.argv[2] if len(sys.argv) > 2 else "none"
    register()
    profile = test_profile(log_dir)
    processes = Processes(log_dir)
    bags = log_dir / "bags"
    params = {"topics": [f"/{t}" for t in TOPICS], "output_dir": str(bags), "compression": compression}
    recorder = processes.start("recorder", "recorder", *ros_args("recorder", "/", **params))
    bridge_params = {"profile": str(profile), "task": TASK, "seed": 0, "command_type": COMMAND}
    # parameters only (no node-name remapping: it would apply to the probe in this process too)
    rclpy.init(args=["--ros-args", *ros_args("sim_bridge", "/", **bridge_params)[5:]])
    from robo_rl.sim.ros_bridge import SimBridge

    bridge = SimBridge()
    for timer in list(bridge.timers):  # the scenario ticks the bridge itself
        bridge.destroy_timer(timer)
    node = Node("probe")
    probe = Probe(node)
    executor = SingleThreadedExecutor()
    executor.add_node(bridge)
    executor.add_node(node)
    image_publishers = [pub for pair in bridge.camera_publishers.values() for pub in pair]
    recorded = [*image_publishers, *bridge.publishers_.values()]
    ready = spin_until(
        executor,
        lambda: all(p.get_subscription_count() >= 2 for p in recorded) and probe.command.get_subscription_count() >= 2,
        60.0,
    )
    results: dict[str, Any] = {"ready": ready, "camera_topics": sorted(p.topic_name for p in image_publishers)}
    if ready:
        spin_for(executor, 0.5)  # both sides of every match settled before the first frame
        results |= run_ticks(bridge, probe, executor)
        results["received"] = received(probe, results["env_frames"])
    spin_for(executor, 1.5)  # the recorder's last messages and its flush
    recorder.send_signal(2)
    results["recorder_exit"] = recorder.wait(30)
    results["recorder_log"] = processes.log("recorder")[-3000:]
    found = [p for p in bags.iterdir() if p.is_dir()] if bags.is_dir() else []
    results["bags"] = [p.name for p in found]
    if len(found) == 1:
        results |= read_bag(found[0])
        results |= convert(found[0], profile, log_dir / "camera_demos.npz")
    finish(results)


if __name__ == "__main__":
    main()
