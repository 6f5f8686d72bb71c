"""`robo-rl record-demos TASK`: record demonstrations from a teleoperation device to a .npz demo file."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from torch import Tensor

from robo_rl.api.bad_file import check_output
from robo_rl.cli.progress import terminal
from robo_rl.envs import BatchedEnv
from robo_rl.hil.demos import save_demos
from robo_rl.hil.realtime import RealTimeEnv
from robo_rl.runners.collect import collect_demonstrations

DESCRIPTION = """\
Record demonstrations of TASK: the device drives every env for whole episodes (`--teleop simulated`: the task's
scripted expert, e.g. the hover pilot or pure pursuit, with its action noise; `--teleop keyboard`: you, driving
one env from this terminal; `--teleop gamepad`: you, with a joystick on this machine, axis i driving action i).
The transitions go to a .npz demo file (schema robo_rl.demos/1, see robo_rl.hil.demos) that training reads as
its prior buffer:
  robo-rl train quadrotor_hover_sac --set off_policy.prior_buffer=demos.npz

On a robot (`--robot PROFILE`, TASK its profile's task): the operator drives through teleop_node's takeover
(hold the takeover button) and only the steps it drove are kept, with the executed actions, through the same
safety filter and workspace as training (robo_rl.robot.RobotEnv; run from .venv-ros). `--robot-link sim`
rehearses it on the profile's task simulator with the simulated operator driving all the time:
  robo-rl record-demos rc_car/race --robot rc_car --robot-link sim --episodes 1 -o car_demo.npz
"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "record-demos",
        help="record demonstrations from a teleoperation device",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("task", help="task name (robo-rl tasks lists them), e.g. quadrotor/hover")
    p.add_argument(
        "--teleop", choices=("simulated", "keyboard", "gamepad"), default="simulated", help="who demonstrates"
    )
    p.add_argument("--gamepad", default="/dev/input/js0", help="joystick device of --teleop gamepad")
    p.add_argument(
        "--episodes",
        type=int,
        default=10,
        help="episodes to record (default: 10); in simulation, one env per episode stepped for one episode length, "
        "so an env whose episode ends early starts another and records part of it (see --whole-episodes)",
    )
    p.add_argument(
        "--whole-episodes",
        action="store_true",
        help="in simulation: exactly --episodes whole episodes, each env's first (e.g. HIL-SERL's 20 demonstrations)",
    )
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="task setting (repeatable)")
    p.add_argument("--seed", type=int, default=0, help="seed of the initial states (default: 0)")
    p.add_argument("--robot", metavar="PROFILE", help="record on this robot (bundled profile name or YAML)")
    p.add_argument("--robot-namespace", default="/", help="the robot's ROS namespace (with --robot)")
    p.add_argument(
        "--robot-link",
        choices=("ros", "sim"),
        default="ros",
        help="with --robot: the robot through ROS 2 (default), or its task simulator with the simulated operator",
    )
    p.add_argument(
        "--seconds", type=float, help="with --robot: stop after this many seconds of robot time (a short demonstration)"
    )
    p.add_argument("-o", "--output", type=Path, default=Path("demos.npz"), help="demo file (default: demos.npz)")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from robo_rl.sim import make, make_expert

    if args.episodes < 1:
        raise ValueError(f"--episodes must be at least 1, got {args.episodes}")
    if args.output.suffix != ".npz":
        raise ValueError(f"--output {args.output}: demo files are .npz")
    check_output(args.output, "--output")
    if args.robot is not None:
        if args.whole_episodes:
            raise ValueError("--whole-episodes: only in simulation (on a robot the operator's episodes are whole)")
        return _record_on_robot(args)
    robot_only = {"--seconds": args.seconds is not None, "--robot-namespace": args.robot_namespace != "/"}
    robot_only["--robot-link"] = args.robot_link != "ros"
    if any(robot_only.values()):
        raise ValueError(f"{', '.join(flag for flag, on in robot_only.items() if on)}: only with --robot PROFILE")
    num_envs = args.episodes if args.teleop == "simulated" else 1
    env = make(args.task, num_envs=num_envs, seed=args.seed, params=args.param)
    if args.teleop != "simulated":  # a person drives: the simulated time passes as the wall clock does
        env = RealTimeEnv(env)
        terminal().print(f"{args.teleop}: one step every {env.dt:g} s, in real time")
    policy = _demonstrator(args.teleop, args.task, env, make_expert, args.gamepad)
    per_env = args.episodes // num_envs
    steps = env.max_episode_steps * per_env
    whole = per_env if args.whole_episodes else None
    demos = collect_demonstrations(env, policy, steps * num_envs, seed=args.seed, episodes_per_env=whole)
    save_demos(args.output, demos.buffer, args.task, env, demos.episodes, f"teleop={args.teleop}", demos.success)
    ret = "none finished" if demos.mean_return is None else f"mean return {demos.mean_return:.1f}"
    console = terminal()
    console.print(f"wrote {len(demos.buffer):,} transitions to {args.output} ({demos.episodes} episodes, {ret})")
    console.print(f"train with them: robo-rl train CONFIG --set off_policy.prior_buffer={args.output}")
    return 0


def _record_on_robot(args: argparse.Namespace) -> int:
    import torch

    from robo_rl.api.envs import robot_env_factory
    from robo_rl.robot.env import RobotEnv

    operator = "demonstrator" if args.robot_link == "sim" else "none"
    make = robot_env_factory(args.robot, args.robot_namespace, link=args.robot_link, operator=operator)
    env = make(args.task, 1, seed=args.seed)
    assert isinstance(env, RobotEnv)  # the robot factory builds the robot's env
    safe = torch.as_tensor(env.safe, dtype=torch.float32).unsqueeze(0)
    steps = env.max_steps * args.episodes
    if args.seconds is not None:
        if not 0 < args.seconds < float("inf"):
            raise ValueError(f"--seconds must be positive and finite, got {args.seconds}")
        steps = min(steps, max(1, round(args.seconds / env.dt)))
    console = terminal()
    console.print(
        f"recording at most {steps * env.dt:.0f} s of the robot ({args.episodes} episode(s)): take over to drive"
    )
    demos = collect_demonstrations(env, lambda _obs: safe, steps, seed=args.seed, operator_only=True, max_steps=steps)
    env.link.close()
    if len(demos.buffer) == 0:
        raise ValueError("the operator drove no valid step: nothing recorded (hold the takeover button to drive)")
    source = f"robot={args.robot} link={args.robot_link}"
    save_demos(args.output, demos.buffer, args.task, env, demos.episodes, source, demos.success)
    console.print(f"wrote {len(demos.buffer):,} transitions the operator drove to {args.output}")
    console.print(f"train with them: robo-rl train --robot {args.robot} --set off_policy.prior_buffer={args.output}")
    return 0


def _demonstrator(
    teleop: str, task: str, env: BatchedEnv, make_expert: Callable, gamepad: str
) -> Callable[[Tensor], Tensor]:
    """obs → env action of the demonstrating device."""
    if teleop == "simulated":
        expert = make_expert(task, env)
        return lambda _obs: expert.action()
    low, high = env.action_spec.low_tensor(), env.action_spec.high_tensor()
    if teleop == "gamepad":
        from robo_rl.hil.gamepad import GamepadConfig, GamepadTeleop

        if Path(gamepad).is_file():
            raise ValueError(f"--gamepad {gamepad}: a regular file, not a joystick device (ls /dev/input/js*)")
        pad = GamepadTeleop(1, low, high, GamepadConfig(device=gamepad))
        device: Any = lambda: _connected(pad, gamepad)  # noqa: E731
    else:
        from robo_rl.hil.keyboard import KeyboardTeleop

        keyboard = KeyboardTeleop(1, low, high, center=getattr(env, "hover_action", None))
        device = lambda: keyboard  # noqa: E731
    return lambda obs: device().poll(obs).action


def _connected(pad: Any, gamepad: str) -> Any:
    """`pad` while its joystick streams; ValueError (nothing is written) once it went away: a demonstration the
    operator did not drive must not be recorded as one."""
    if not pad.joystick.connected:
        raise ValueError(f"--gamepad {gamepad}: the joystick stopped sending (unplugged?): nothing recorded")
    return pad
