"""`robo-rl demos-from-bag BAG --profile PROFILE`: a robot recording (rosbag2) back as a demo file."""

from __future__ import annotations

import argparse
from pathlib import Path

from robo_rl.api.bad_file import check_output
from robo_rl.cli.progress import terminal

DESCRIPTION = """\
Turn a rosbag2 recording of a robot (MCAP or sqlite3, e.g. from the recorder node of the train_on_robot and hardware
launch files) into a demo file (.npz, schema robo_rl.demos/1) that training reads as its prior buffer:
  robo-rl demos-from-bag recordings/recorder_20261126-101500 --profile rc_car --namespace /car1 -o lap.npz
  robo-rl train --robot rc_car --set off_policy.prior_buffer=lap.npz
When the bag holds the trainer's `transitions` topic (robo-rl train/record-demos --robot publish every step), those
are the transitions, exactly. Otherwise they are rebuilt: each command the robot received is a step, the observation
assembled from the profile's inputs as RobotEnv does (approximate: the recorder may receive topics in another order
than the trainer did), the action the command read back into policy units, the reward the profile kind's. Episodes
end at workspace violations, success/failure/reset presses, e-stops and gaps; a discarded episode is dropped. By
default only the steps the operator drove (intervention) are kept; --all keeps the policy's steps too. The bag needs
the profile's input topics and its command topic (and intervention, estop, episode_event to know who drove). Run
from .venv-ros.
Cameras: --camera NAME=TOPIC (repeatable; sensor_msgs/Image or CompressedImage) restores each camera's frames: every
step takes the newest frame stamped before it, at most --image-max-age s old (default: the profile's staleness
timeout), else the step has no valid observation, as with a stale input. The demo file then holds, per camera,
obs.NAME and next_obs.NAME arrays, (transitions, height, width, channels) uint8. Frames come only from a rebuild
(the transitions topic has none), so --camera implies --rebuild:
  robo-rl demos-from-bag BAG --profile rc_car --camera front=front/image_raw -o lap.npz
"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demos-from-bag",
        help="a robot recording (rosbag2/MCAP) as a demo file",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("bag", type=Path, help="the bag folder (or an .mcap file)")
    p.add_argument("--profile", required=True, help="robot profile (bundled name or YAML)")
    p.add_argument("--namespace", default="/", help="the robot's ROS namespace in the bag (default /)")
    p.add_argument("--all", action="store_true", help="keep the policy's steps too, not only the operator's")
    p.add_argument(
        "--rebuild",
        action="store_true",
        help="rebuild from the robot's topics even when the transitions topic is there",
    )
    p.add_argument(
        "--camera",
        action="append",
        default=[],
        metavar="NAME=TOPIC",
        help="restore a camera's frames from its image topic (repeatable; implies --rebuild)",
    )
    p.add_argument(
        "--image-max-age",
        type=float,
        default=None,
        help="seconds a frame stays valid after its stamp (default: the profile's staleness timeout)",
    )
    p.add_argument("-o", "--output", type=Path, default=Path("demos.npz"), help="demo file (default: demos.npz)")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from robo_rl.real.profile import load_profile
    from robo_rl.robot.bag_demos import read_steps, read_transitions, recorded_transitions, save_bag_demos, transitions
    from robo_rl.robot.bag_images import parse_camera

    if args.output.suffix != ".npz":
        raise ValueError(f"--output {args.output}: demo files are .npz")
    check_output(args.output, "--output")
    try:
        import rosbags  # noqa: F401
    except ModuleNotFoundError:
        raise ValueError("demos-from-bag needs rosbags: run it from .venv-ros (make ros-venv)") from None
    profile = load_profile(args.profile)
    max_age = profile.staleness_timeout if args.image_max_age is None else args.image_max_age
    cameras = tuple(parse_camera(text, max_age) for text in args.camera)
    rows = None if args.rebuild or cameras else read_transitions(args.bag, profile, args.namespace)
    if rows is not None:
        found = recorded_transitions(rows, profile, operator_only=not args.all)
        how = "the trainer's transitions topic"
    else:
        steps = read_steps(args.bag, profile, args.namespace, cameras)
        found = transitions(steps, profile, operator_only=not args.all)
        how = "rebuilt from the robot's topics (approximate: see robo_rl.robot.bag_demos)"
        if cameras:
            stale = sum(step.frames is None for step in steps)
            how += f"; frames of {', '.join(c.name for c in cameras)} ({stale} steps without a fresh frame)"
    source = f"bag={args.bag.name} profile={profile.name}"
    save_bag_demos(args.output, found, profile, source)
    operator = int(found.intervened.sum())
    terminal().print(
        f"wrote {len(found):,} transitions ({operator:,} driven by the operator, {found.episodes} episodes) of "
        f"{found.commands:,} steps to {args.output}; {how}"
    )
    return 0
