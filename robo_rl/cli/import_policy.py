"""`robo-rl import SOURCE -o policy.onnx`: a policy trained elsewhere as a robo_rl policy artifact."""

from __future__ import annotations

import argparse
import math
import os
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from robo_rl.cli.progress import terminal

T = TypeVar("T")

DESCRIPTION = """\
Turn a policy trained with another stack into a robo_rl policy artifact (policy.onnx with robo_rl metadata), so that
policy_node, `robo-rl eval POLICY.onnx` and the firmware export (`robo-rl export POLICY.onnx --target cortex-m4`)
take it unchanged:
  SB3 model zip (PPO, A2C, SAC, TD3, DDPG; flat Box spaces; not sb3-contrib's). The VecNormalize statistics
  (--vecnormalize, checked to be of the model's observation space) and SB3's action mapping (tanh unscaled onto
  the action box, or clipped to it) are folded into the file; --action-low/--action-high narrow the box:
    robo-rl import ppo_pendulum.zip --vecnormalize vec_normalize.pkl --dt 0.05 \\
        --obs-names cos_theta,sin_theta,theta_dot --action-names torque --action-units N*m -o policy.onnx
  rsl_rl / Isaac Lab / mjlab ONNX (normalizer inside, a feed-forward actor). With the run's params/env.yaml
  (Isaac Lab: control period, observation terms and scales, joint action scale/offset/clip, default pose; the
  runner's clip_actions from agent.yaml beside it) and the robot's joint order, or with mjlab's own ONNX metadata
  (joints, default pose, action scale, term names: supply --dt), the observation and action mappings are folded
  in: the file takes absolute joint angles and the last command sent, and outputs joint targets. The action clip
  and --action-low/--action-high are intersected. A draft robot profile is written beside it (--profile-out):
    robo-rl import exported/policy.onnx --env-config logs/rsl_rl/go2/run/params/env.yaml \\
        --joint-names FL_hip_joint,FL_thigh_joint,... --action-low -2.5 --action-high 2.5 -o go2.onnx
    robo-rl import mjlab_policy.onnx --dt 0.02 --action-low -3 --action-high 3 -o go1.onnx
  Any other ONNX policy: supply --dt, --obs-names, --action-names and the action bounds.
Whatever the source does not say stops the import with one error naming every flag to supply. The result is
checked against the source before anything is written (SB3: its own predict; ONNX: the source file with the folds
applied): a difference above --tolerance (a fraction of each action's half-width) is an error, and -o is left as
it was. The assumptions made (last_action, clip_actions) are printed and recorded in the file's metadata.
"""


def _names(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _numbers(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(part) for part in _names(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None


def _sizes(text: str) -> dict[str, int]:
    out = {}
    for part in _names(text):
        name, _, size = part.partition("=")
        if not size.isdigit():
            raise argparse.ArgumentTypeError(f"expected TERM=N,..., got {part!r}")
        out[name] = int(size)
    return out


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "import",
        help="a policy from SB3, rsl_rl, Isaac Lab or mjlab as a robo_rl policy artifact",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("source", type=Path, help="an SB3 model .zip or an ONNX policy file")
    p.add_argument("-o", "--output", type=Path, required=True, help="the robo_rl policy.onnx to write")
    p.add_argument("--algo", choices=("ppo", "a2c", "sac", "td3", "ddpg"), help="SB3 algorithm (default: from the zip)")
    p.add_argument("--vecnormalize", type=Path, help="SB3 VecNormalize statistics (the .pkl VecNormalize.save wrote)")
    p.add_argument("--env-config", type=Path, help="Isaac Lab run config (logs/rsl_rl/EXPERIMENT/RUN/params/env.yaml)")
    p.add_argument("--dt", type=float, help="control period in seconds (where the source does not say)")
    p.add_argument("--task", help="task name recorded in the artifact (and the profile that deploys it)")
    p.add_argument("--obs-names", type=_names, default=(), help="observation names, comma-separated, in order")
    p.add_argument("--obs-units", type=_names, default=(), help="observation units (one for all, or one each)")
    p.add_argument("--action-names", type=_names, default=(), help="action names, comma-separated, in order")
    p.add_argument("--action-units", type=_names, default=(), help="action units (one for all, or one each)")
    p.add_argument(
        "--action-low",
        type=_numbers,
        default=(),
        help="action lower bounds (one for all, or one each; a list starting with a minus: --action-low=-1,-2)",
    )
    p.add_argument("--action-high", type=_numbers, default=(), help="action upper bounds (one for all, or one each)")
    p.add_argument("--joint-names", type=_names, default=(), help="the robot's joints in the simulator's order")
    p.add_argument("--obs-sizes", type=_sizes, default={}, help="widths of observation terms: TERM=N,...")
    p.add_argument("--profile-out", type=Path, help="draft robot profile (default: OUTPUT with .profile.yaml)")
    p.add_argument(
        "--tolerance",
        type=float,
        default=1e-5,
        help="largest accepted difference to the source, as a fraction of each action's half-width (default 1e-5)",
    )
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from robo_rl.importers.supplied import Supplied

    if not (math.isfinite(args.tolerance) and args.tolerance >= 0):
        raise ValueError(
            f"--tolerance must be a number ≥ 0 (a fraction of an action's half-width), got {args.tolerance}"
        )
    if not args.source.is_file():
        raise FileNotFoundError(f"{args.source}: no such file")
    if args.output.suffix != ".onnx":
        raise ValueError(f"--output {args.output}: a policy artifact is an .onnx file")
    supplied = Supplied(
        dt=args.dt,
        task=args.task,
        obs_names=args.obs_names,
        obs_units=args.obs_units,
        action_names=args.action_names,
        action_units=args.action_units,
        action_low=args.action_low,
        action_high=args.action_high,
        joint_names=args.joint_names,
    )
    if _is_zip(args.source):
        return _import_sb3(args, supplied)
    return _import_onnx(args, supplied)


def _is_zip(path: Path) -> bool:
    """A zip, or what is left of one (a truncated zip has lost its directory but keeps its first header)."""
    with path.open("rb") as handle:
        head = handle.read(4)
    return zipfile.is_zipfile(path) or head == b"PK\x03\x04" or path.suffix.lower() == ".zip"


def _checked_write(output: Path, write: Callable[[Path], T], check: Callable[[Path, T], None]) -> T:
    """`write` the file to a temporary path beside `output`, `check` it there, then move it onto `output` (one
    rename): a refused or failed import leaves `output` as it was, and no other file."""
    staged = output.with_name(f".{output.name}.{os.getpid()}.unchecked.onnx")
    try:
        result = write(staged)
        check(staged, result)
        staged.replace(output)
        return result
    finally:
        staged.unlink(missing_ok=True)


def _check(difference: float, tolerance: float, source: Path, against: str) -> str:
    if not difference <= tolerance:
        raise ValueError(
            f"{source}: the imported policy differs from {against} by {difference:.3g} of an action's half-width "
            f"(> --tolerance {tolerance}); nothing was written"
        )
    return f"matches {against} within {difference:.1e} of each action's half-width"


def _import_sb3(args: argparse.Namespace, supplied: object) -> int:
    from robo_rl.importers.sb3 import Sb3Policy, import_sb3, parity, sample_obs

    if args.env_config is not None:
        raise ValueError("--env-config is for Isaac Lab ONNX policies, not SB3 zips")
    checks: list[str] = []

    def check(staged: Path, result: tuple[Sb3Policy, object]) -> None:
        policy = result[0]
        checks.append(
            _check(
                parity(policy, staged, sample_obs(policy, 512)), args.tolerance, args.source, "SB3's predict on 512 obs"
            )
        )

    policy, meta = _checked_write(
        args.output,
        lambda staged: import_sb3(args.source, staged, supplied, args.algo, args.vecnormalize),  # type: ignore[arg-type]
        check,
    )
    normalized = "with VecNormalize folded in" if policy.vec_normalize is not None else "without VecNormalize"
    terminal().print(
        f"imported SB3 {policy.algorithm.upper()} {normalized}: {meta.obs.dim} observations → {meta.action.dim} "
        f"actions (low {_box(meta.action.low)}, high {_box(meta.action.high)}) at dt {meta.dt} s, task {meta.task!r}; "
        f"{checks[0]}; wrote {args.output}"
    )
    return 0


def _box(values: tuple[float, ...]) -> str:
    return f"{values[0]:g}" if len(set(values)) == 1 else ", ".join(f"{v:g}" for v in values)


def _import_onnx(args: argparse.Namespace, supplied: object) -> int:
    from robo_rl.importers.foreign_onnx import ImportedOnnx, import_onnx, parity, sample_obs
    from robo_rl.importers.profile_draft import write_draft_profile

    if args.vecnormalize is not None or args.algo is not None:
        raise ValueError("--vecnormalize and --algo are for SB3 zips; this is an ONNX file")
    checks: list[str] = []

    def check(staged: Path, imported: ImportedOnnx) -> None:
        difference = parity(args.source, imported, staged, sample_obs(imported, 64))
        checks.append(
            _check(difference, args.tolerance, args.source, "the source file with the folds applied, on 64 obs")
        )

    imported = _checked_write(
        args.output,
        lambda staged: import_onnx(args.source, staged, supplied, args.env_config, args.obs_sizes),  # type: ignore[arg-type]
        check,
    )
    meta, console = imported.artifact, terminal()
    console.print(
        f"imported the {imported.description.label} policy: {meta.obs.dim} observations → {meta.action.dim} actions "
        f"at dt {meta.dt} s, task {meta.task!r}; {checks[0]}; wrote {args.output}"
    )
    for assumption in imported.description.assumptions:
        console.print(f"  assumed: {assumption}")
    if imported.description.action is not None:
        profile = args.profile_out or args.output.with_suffix(".profile.yaml")
        write_draft_profile(imported, profile)
        console.print(f"wrote a DRAFT robot profile to {profile}: check its topics, sources and limits")
    return 0
