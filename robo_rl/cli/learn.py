"""`robo-rl learn --robot PROFILE`: the learner of a robot's training, anywhere on the ROS 2 graph."""

from __future__ import annotations

import argparse
import signal
import time
from pathlib import Path
from typing import Any, cast

from robo_rl.cli.progress import terminal

DESCRIPTION = """\
Run the learner of `robo-rl train --robot PROFILE --set off_policy.learner_transport=ros` as its own program, on
this machine or another one on the same ROS 2 graph (robo_rl.robot.topic_learner): it subscribes the robot's
`transitions`, keeps the replay buffer and the prior buffer (`off_policy.prior_buffer` demonstrations plus the
operator's takeovers), makes `off_policy.updates_per_step` gradient steps per transition, and publishes the actor's
weights on `policy_weights`, which the robot's trainer takes up without waiting. Give it the same CONFIG and --set
values as the trainer. Stops on Ctrl-C or after --seconds. Run from .venv-ros:
  robo-rl learn --robot rc_car --robot-namespace /car1 --set off_policy.prior_buffer=lap.npz
"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "learn",
        help="the learner of robot training, over ROS 2 topics",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("config", nargs="?", help="preset or config YAML (default: robot_<kind>_sac)")
    p.add_argument("--robot", required=True, metavar="PROFILE", help="robot profile (bundled name or YAML)")
    p.add_argument("--robot-namespace", default="/", help="the robot's ROS namespace (default /)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE", help="config value")
    p.add_argument("--seconds", type=float, default=float("inf"), help="stop after this many seconds")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from robo_rl.api.configs import resolve_config
    from robo_rl.build import build_off_policy
    from robo_rl.config import ConfigError
    from robo_rl.hil.demos import load_demos
    from robo_rl.real.profile import load_profile
    from robo_rl.robot.env import ProfileSpecs
    from robo_rl.task_record import TaskSpecs

    try:
        import rclpy

        from robo_rl.robot.topic_learner import TopicLearner
    except ModuleNotFoundError as err:
        raise ConfigError(f"robo-rl learn needs {err.name}: run it from .venv-ros (make ros-venv)") from None
    profile = load_profile(args.robot)
    cfg = resolve_config(args.config or f"robot_{profile.kind}_sac", args.overrides)
    if cfg.on_policy:
        raise ConfigError(f"robo-rl learn trains off-policy algorithms; {cfg.algo} is on-policy")
    holder = ProfileSpecs.of(profile)
    specs = TaskSpecs(holder.obs_spec, holder.action_spec, profile.dt, holder.obs_spec.dim)
    algorithm = build_off_policy(cfg, specs, "cpu")
    loop = cfg.off_policy
    prior = None if loop.prior_buffer is None else load_demos(Path(loop.prior_buffer), cast(Any, holder))
    rclpy.init()
    node = rclpy.create_node("learner", namespace=args.robot_namespace)
    learner = TopicLearner(algorithm, profile, node, loop, prior)
    stop = {"now": False}
    signal.signal(signal.SIGINT, lambda *_: stop.update(now=True))
    signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))
    console = terminal()
    console.print(f"learner for {profile.name} in {args.robot_namespace}: {cfg.algo}, waiting for transitions")
    started = time.monotonic()
    stats = learner.spin(args.seconds, lambda: stop["now"])
    console.print(
        f"learner stopped after {time.monotonic() - started:.0f} s: received {stats.received:,} transitions "
        f"({learner.invalid:,} invalid), {stats.updates:,} gradient steps, published {stats.published:,} weights"
    )
    node.destroy_node()
    rclpy.try_shutdown()
    return 0
