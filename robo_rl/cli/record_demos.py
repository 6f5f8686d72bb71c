"""`robo-rl record-demos TASK`: record demonstrations from a teleoperation device to a .npz demo file."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from torch import Tensor

from robo_rl.cli.progress import terminal
from robo_rl.envs import BatchedEnv
from robo_rl.hil.demos import save_demos
from robo_rl.runners.collect import collect_demonstrations

DESCRIPTION = """\
Record demonstrations of TASK: the device drives every env for whole episodes (`--teleop simulated`: the task's
scripted expert, e.g. the hover pilot or pure pursuit, with its action noise; `--teleop keyboard`: you, driving
one env from this terminal; `--teleop gamepad`: you, with a joystick on this machine, axis i driving action i).
The transitions go to a .npz demo file (schema robo_rl.demos/1, see robo_rl.hil.demos) that training reads as
its prior buffer:
  robo-rl train quadrotor_hover_sac --set off_policy.prior_buffer=demos.npz
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
    p.add_argument("--episodes", type=int, default=10, help="episodes to record (default: 10)")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="task setting (repeatable)")
    p.add_argument("--seed", type=int, default=0, help="seed of the initial states (default: 0)")
    p.add_argument("-o", "--output", type=Path, default=Path("demos.npz"), help="demo file (default: demos.npz)")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from robo_rl.sim import make, make_expert

    if args.episodes < 1:
        raise ValueError(f"--episodes must be at least 1, got {args.episodes}")
    if args.output.suffix != ".npz":
        raise ValueError(f"--output {args.output}: demo files are .npz")
    num_envs = args.episodes if args.teleop == "simulated" else 1
    env = make(args.task, num_envs=num_envs, seed=args.seed, params=args.param)
    policy = _demonstrator(args.teleop, args.task, env, make_expert, args.gamepad)
    steps = env.max_episode_steps * (args.episodes // num_envs)
    demos = collect_demonstrations(env, policy, steps * num_envs, seed=args.seed)
    save_demos(args.output, demos.buffer, args.task, env, demos.episodes, f"teleop={args.teleop}")
    ret = "none finished" if demos.mean_return is None else f"mean return {demos.mean_return:.1f}"
    console = terminal()
    console.print(f"wrote {len(demos.buffer):,} transitions to {args.output} ({demos.episodes} episodes, {ret})")
    console.print(f"train with them: robo-rl train CONFIG --set off_policy.prior_buffer={args.output}")
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

        device = GamepadTeleop(1, low, high, GamepadConfig(device=gamepad))
    else:
        from robo_rl.hil.keyboard import KeyboardTeleop

        device = KeyboardTeleop(1, low, high, center=getattr(env, "hover_action", None))
    return lambda obs: device.poll(obs).action
