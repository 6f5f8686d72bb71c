"""recorder: ROS 2 topics into a rosbag2 bag (MCAP by default), the serialized messages as received.

Parameters:
  topics      string array; relative names resolve in the node's namespace (remappings apply), absolute ones as
              given; default `odom`, `cmd_motors`, `estop`, `intervention`, `operator_log` (policy_node: who sent each
              operator command it acted on), `/diagnostics`.
  output_dir  the bag goes to `output_dir/<node name>_<UTC YYYYmmdd-HHMMSS>` (`_1`, `_2`, ... appended when that
              folder exists; a bag is never overwritten); default `recordings`.
  storage     `mcap` (default) or `sqlite3`.
  compression `none` (default) or `zstd`: MCAP chunks compressed with zstd (readers decompress them transparently;
              rosbags' storage-side mode), sqlite3 messages one by one (its message mode). Worth it for camera
              topics: a simulated or still scene compresses many times; noisy real frames far less.

Camera topics (`sensor_msgs/Image`, `CompressedImage`, `CameraInfo`) are recorded like any other: name them in
`topics` (e.g. `front/image_raw`, `front/camera_info`), and only those are kept. Raw images are large (64×64 rgb8:
12 kB a frame, 0.9 GB an hour at 20 Hz): record the topics the policy reads, and CompressedImage where the camera
driver offers it. At close the recorder logs each topic's message count and mean bytes per message.

Topics may appear at any time: the graph is polled every 0.5 s, and a topic is subscribed once it has a publisher,
with its type from the graph and a QoS compatible with every publisher (best effort if any publisher is best
effort, transient local only if all are, so a latched `estop` still arrives). Messages are taken raw (CDR bytes)
and written as they are, stamped with the receive time on the node clock (ns); the bag's message definitions and
type hashes come from the rosbags typestore of $ROS_DISTRO (unset: rosbags' latest store, Kilted in rosbags 0.11,
as the ros-rclpy wheels). A type that store does not know is logged once and not recorded; one whose hash differs
from the publisher's is recorded with a warning (the bag's definition may not decode it). A topic whose publishers
use several types is recorded with the first one seen.

`stop()` (SIGINT/SIGTERM, through spin.run) closes the bag, writing metadata.yaml and the storage's index, and logs
the message count per topic and the bag's path.

After a crash: neither storage is complete until it is closed (MCAP writes its summary and footer, sqlite3 commits,
and metadata.yaml is written, only at close). The recorder flushes every second (MCAP: the pending chunk is
written out and the file flushed; sqlite3: the transaction is committed), so a killed recorder process loses at most
about the last second of messages; the bag then lacks metadata.yaml (and an MCAP file its footer): rebuild them with
`mcap recover` and `ros2 bag reindex`. The flush uses internals of rosbags' storage writers (there is no public
flush); with a rosbags version that changes them, the recorder logs a warning once and data reaches the disk only
at close.
"""

from __future__ import annotations

import datetime
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from rclpy.exceptions import ParameterUninitializedException
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rosbags.interfaces import Connection, Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime
from rosbags.rosbag2 import CompressionFormat, CompressionMode, StoragePlugin, Writer, WriterError
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from robo_rl.real.ros.messages import MessageTypeError, message_class
from robo_rl.real.ros.spin import StartupError, StartupInputError, run

DEFAULT_TOPICS = ["odom", "cmd_motors", "estop", "intervention", "operator_log", "/diagnostics"]
STORAGES = {"mcap": StoragePlugin.MCAP, "sqlite3": StoragePlugin.SQLITE3}
COMPRESSIONS = ("none", "zstd")
DISCOVERY_PERIOD_S = 0.5
FLUSH_PERIOD_S = 1.0
QUEUE_DEPTH = 100
BAG_VERSION = 9
MAX_SUFFIX = 1000


@dataclass
class Recording:
    """One subscribed topic: its bag connection and how many messages it got."""

    connection: Connection
    msgtype: str
    subscription: Any
    count: int = 0
    bytes: int = 0
    """Serialized bytes received (before any compression)."""


class Recorder(Node):
    """See the module docstring."""

    def __init__(self, name: str = "recorder") -> None:
        super().__init__(name)
        self.declare_parameter("topics", DEFAULT_TOPICS)
        self.declare_parameter("output_dir", "recordings")
        self.declare_parameter("storage", "mcap")
        self.declare_parameter("compression", "none")
        self.topics = _topics(self, _string_list(self, "topics"))
        storage = str(self.get_parameter("storage").value)
        if storage not in STORAGES:
            raise StartupInputError(f"parameter 'storage': must be one of {tuple(STORAGES)}, got {storage!r}")
        compression = str(self.get_parameter("compression").value)
        if compression not in COMPRESSIONS:
            raise StartupInputError(f"parameter 'compression': must be one of {COMPRESSIONS}, got {compression!r}")
        output_dir = str(self.get_parameter("output_dir").value)
        if not output_dir:
            raise StartupInputError("parameter 'output_dir' is empty")
        self.store = typestore_name()
        self.typestore = get_typestore(self.store)
        plugin = STORAGES[storage]
        self.writer: Writer | None = open_bag(
            Path(output_dir), self.get_name(), plugin, compression_mode(plugin, compression)
        )
        self.path = self.writer.path
        self.recordings: dict[str, Recording] = {}
        self.warned: set[str] = set()
        self.create_timer(DISCOVERY_PERIOD_S, self.discover)
        self.create_timer(FLUSH_PERIOD_S, self.flush)
        self.get_logger().info(
            f"recording {', '.join(self.topics)} to {self.path} ({storage}, compression {compression})"
        )
        self.discover()

    def discover(self) -> None:
        """Subscribe each wanted topic that has appeared in the graph with a publisher."""
        if self.writer is None:
            return
        graph = dict(self.get_topic_names_and_types())
        for topic in self.topics:
            recording = self.recordings.get(topic)
            if recording is not None:
                self._check_type(topic, recording.msgtype, graph.get(topic, []))
            elif topic in graph:
                self._subscribe(topic)

    def _subscribe(self, topic: str) -> None:
        publishers = self.get_publishers_info_by_topic(topic)
        if not publishers:
            return  # only subscribers so far: wait for a publisher, whose QoS decides ours
        msgtype = publishers[0].topic_type
        if msgtype not in self.typestore.fielddefs and not register_installed(self.typestore, msgtype):
            self.warn_once(
                f"{topic}: type {msgtype} is neither in the rosbags typestore {self.store.value} nor installed as a "
                ".msg file (share/PKG/msg in $AMENT_PREFIX_PATH); not recorded"
            )
            return
        try:
            cls = message_class(msgtype)
        except MessageTypeError as err:
            self.warn_once(f"{topic}: {err}; not recorded")
            return
        offered = [p.qos_profile for p in publishers if p.topic_type == msgtype]
        digest = self.typestore.hash_rihs01(msgtype)
        for other in {str(p.topic_type_hash) for p in publishers if p.topic_type == msgtype}:
            if other.startswith("RIHS01_") and other != digest:
                self.warn_once(f"{topic}: {msgtype} differs from its definition in {self.store.value} ({other})")
        assert self.writer is not None
        connection = self.writer.add_connection(
            topic, msgtype, typestore=self.typestore, offered_qos_profiles=[bag_qos(q) for q in offered]
        )
        qos = subscription_qos(offered)
        subscription = self.create_subscription(cls, topic, partial(self.on_message, topic), qos, raw=True)
        self.recordings[topic] = Recording(connection, msgtype, subscription)
        self.get_logger().info(
            f"{topic}: recording {msgtype} ({qos.reliability.name.lower()}, {qos.durability.name.lower()})"
        )

    def _check_type(self, topic: str, msgtype: str, types: Sequence[str]) -> None:
        for other in types:
            if other != msgtype:
                self.warn_once(f"{topic}: also published as {other}; only {msgtype} is recorded")

    def on_message(self, topic: str, data: bytes) -> None:
        if self.writer is None:
            return
        recording = self.recordings[topic]
        self.writer.write(recording.connection, self.get_clock().now().nanoseconds, data)
        recording.count += 1
        recording.bytes += len(data)

    def flush(self) -> None:
        """Push what was written so far to the disk (see the module docstring)."""
        if self.writer is not None and not flush_storage(self.writer.storage):
            self.warn_once("this rosbags version's storage writer cannot be flushed; data is written at close")

    def warn_once(self, text: str) -> None:
        if text not in self.warned:
            self.warned.add(text)
            self.get_logger().warning(text)

    def stop(self) -> None:
        """Close the bag (metadata.yaml, MCAP summary) and log what it holds."""
        writer, self.writer = self.writer, None
        if writer is None:
            return
        writer.close()
        counts = ", ".join(f"{topic}: {_volume(r)}" for topic, r in self.recordings.items()) or "no topics"
        missing = [t for t in self.topics if t not in self.recordings]
        skipped = f"; not recorded: {', '.join(missing)}" if missing else ""
        self.get_logger().info(f"bag {self.path} closed ({counts}{skipped})")


def _volume(recording: Recording) -> str:
    """`N` messages, with their mean size: `120 (12,345 B/msg)`."""
    mean = f" ({recording.bytes / recording.count:,.0f} B/msg)" if recording.count else ""
    return f"{recording.count}{mean}"


def compression_mode(storage: StoragePlugin, compression: str) -> CompressionMode:
    """How rosbags compresses a bag of `storage` for the `compression` parameter: MCAP compresses its chunks
    (storage side), sqlite3 can only compress message by message."""
    if compression == "none":
        return CompressionMode.NONE
    return CompressionMode.STORAGE if storage == StoragePlugin.MCAP else CompressionMode.MESSAGE


def open_bag(
    output_dir: Path, name: str, storage: StoragePlugin, compression: CompressionMode = CompressionMode.NONE
) -> Writer:
    """An open Writer on a new folder `output_dir/<name>_<UTC YYYYmmdd-HHMMSS>[_N]`, zstd-compressed unless
    `compression` is NONE; StartupError when impossible."""
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
    base = output_dir / f"{name}_{stamp}"
    for suffix in range(MAX_SUFFIX):
        path = base if suffix == 0 else base.with_name(f"{base.name}_{suffix}")
        if path.exists():
            continue
        writer = Writer(path, version=BAG_VERSION, storage_plugin=storage)  # type: ignore[arg-type]
        writer.set_compression(compression, CompressionFormat.ZSTD)
        try:
            writer.open()
        except WriterError:
            continue  # created by someone else meanwhile
        except OSError as err:
            raise StartupInputError(f"cannot create the bag folder {path}: {err}") from None
        return writer
    raise StartupError(f"no free bag folder name after {MAX_SUFFIX} tries: {base}")


def register_installed(typestore: Any, msgtype: str) -> bool:
    """Add `msgtype` (and the types it uses that the store lacks) to `typestore` from its installed .msg file, as
    rosidl installs it (share/PKG/msg/NAME.msg under $AMENT_PREFIX_PATH or this Python's prefix): e.g. ackermann_msgs
    or px4_msgs built into .venv-ros. False when a definition is missing or unreadable."""
    pending: list[str] = [msgtype]
    found: dict[str, Any] = {}
    while pending:
        name = pending.pop()
        if name in typestore.fielddefs or name in found:
            continue
        package, _, short = name.partition("/msg/")
        path = next((p for p in _share_dirs() if (p / package / "msg" / f"{short}.msg").is_file()), None)
        if path is None:
            return False
        try:
            types = get_types_from_msg((path / package / "msg" / f"{short}.msg").read_text(), name)
        except Exception:
            return False
        found |= types
        for _, fields in types.values():
            pending += [_nested(kind) for _, kind in fields if _nested(kind)]
    typestore.register(found)
    return True


def _nested(kind: Any) -> str:
    """The message type a field definition refers to ("" for a base type), arrays and sequences included."""
    node, detail = kind
    if getattr(node, "name", "") == "NAME":
        return str(detail)
    if isinstance(detail, tuple) and detail:
        return _nested(detail[0]) if isinstance(detail[0], tuple) else ""
    return ""


def _share_dirs() -> list[Path]:
    prefixes = [p for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
    return [Path(p) / "share" for p in [*prefixes, sys.prefix]]


def typestore_name() -> Stores:
    """The rosbags store of the running ROS distribution ($ROS_DISTRO), else the store rosbags calls latest."""
    distro = os.environ.get("ROS_DISTRO", "")
    return next((store for store in Stores if store.value == f"ros2_{distro}"), Stores.LATEST)


def subscription_qos(offered: Sequence[QoSProfile]) -> QoSProfile:
    """A QoS that matches every offered one: best effort if any is, transient local only if all are."""
    best_effort = any(q.reliability == ReliabilityPolicy.BEST_EFFORT for q in offered)
    latched = bool(offered) and all(q.durability == DurabilityPolicy.TRANSIENT_LOCAL for q in offered)
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST,
        depth=QUEUE_DEPTH,
        reliability=ReliabilityPolicy.BEST_EFFORT if best_effort else ReliabilityPolicy.RELIABLE,
        durability=DurabilityPolicy.TRANSIENT_LOCAL if latched else DurabilityPolicy.VOLATILE,
    )


def bag_qos(qos: QoSProfile) -> Qos:
    """A publisher's QoS as rosbags writes it into the bag (offered_qos_profiles, used by `ros2 bag play`)."""
    return Qos(
        history=_enum(QosHistory, qos.history),
        depth=int(qos.depth),
        reliability=_enum(QosReliability, qos.reliability),
        durability=_enum(QosDurability, qos.durability),
        deadline=_time(qos.deadline),
        lifespan=_time(qos.lifespan),
        liveliness=_enum(QosLiveliness, qos.liveliness),
        liveliness_lease_duration=_time(qos.liveliness_lease_duration),
        avoid_ros_namespace_conventions=bool(qos.avoid_ros_namespace_conventions),
    )


def flush_storage(storage: Any) -> bool:
    """Write out what the storage writer holds in memory; False when it has no known way to (rosbags internals)."""
    if storage is None:
        return True
    chunk = getattr(storage, "chunk", None)
    if hasattr(storage, "close_chunk") and hasattr(storage, "bio") and hasattr(chunk, "msgs"):  # McapWriter
        if chunk is not None and chunk.msgs:
            storage.close_chunk()
            storage.bio.flush()
        return True
    if hasattr(storage, "conn"):  # Sqlite3Writer
        storage.conn.commit()
        return True
    return False


def _enum(kind: Any, policy: Any) -> Any:
    name = getattr(policy, "name", "UNKNOWN")
    return kind[name] if name in kind.__members__ else kind.UNKNOWN


def _time(duration: Any) -> QosTime:
    """rclpy Duration → (sec, nsec); infinite (2**63-1 ns) becomes rosbag2's RMW_DURATION_INFINITE encoding."""
    sec, nsec = divmod(int(duration.nanoseconds), 1_000_000_000)
    return QosTime(sec, nsec)


def _string_list(node: Node, name: str) -> list[str]:
    try:
        value = node.get_parameter(name).value
    except ParameterUninitializedException:  # `-p topics:=[]` leaves the parameter unset
        return []
    return [str(v) for v in value or []]


def _topics(node: Node, names: Sequence[str]) -> list[str]:
    """Fully qualified topic names, in order, without duplicates; StartupError on an empty list or a bad name."""
    if not names:
        raise StartupInputError("parameter 'topics' is empty (topic names to record, e.g. [odom, /diagnostics])")
    topics: list[str] = []
    for name in names:
        try:
            topic = node.resolve_topic_name(name)
        except RuntimeError as err:
            reason = str(err).removeprefix("failed to resolve name: ").split(", at ")[0]
            raise StartupInputError(f"parameter 'topics': bad topic name {name!r}: {reason}") from None
        if topic not in topics:
            topics.append(topic)
    return topics


def main(argv: Sequence[str] | None = None) -> int:
    return run(Recorder, argv, name="recorder")


if __name__ == "__main__":
    raise SystemExit(main())
