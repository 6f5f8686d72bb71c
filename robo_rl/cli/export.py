"""`robo-rl export`: write a run's deterministic actor to policy.onnx and verify it in onnxruntime, or turn a run's
policy (or any policy ONNX file) into C for a microcontroller target (robo_rl.firmware_export)."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
from rich.console import Console

from robo_rl.api.bad_file import check_output
from robo_rl.api.runs import load_trained, make_env
from robo_rl.chunks.spec import step_spec
from robo_rl.cli.progress import terminal
from robo_rl.config import config_hash
from robo_rl.envs import SpaceSpec
from robo_rl.export.camera import camera_parity, export_camera_policy, sample_camera_inputs
from robo_rl.export.onnx import PolicyMetadata, export_onnx, onnx_episode_parity, onnx_parity
from robo_rl.firmware_export import boards
from robo_rl.modules.camera_policy import CameraPolicy
from robo_rl.modules.recurrent import RecurrentDeterministicActor
from robo_rl.runners.policy_stepper import PolicyStepper

PARITY_TOLERANCE = 1e-5
PARITY_SAMPLES = 4096
CAMERA_PARITY_SAMPLES = 64
PARITY_EPISODES = 16
"""Envs side by side in a policy with memory's parity check (`sample_episodes`): 256 steps each."""
"""Observations the parity check of a camera policy runs: frames make each one up to ~100 kB per camera, and 64
random ones already cover every byte value at every pixel position many times over."""
TARGETS = ("onnx", *boards.names())
"""`--target` values: onnx, then the firmware boards (their registry loads without numpy or onnx)."""
CALIBRATION_OBSERVATIONS = 2048
TEST_OBSERVATIONS = 1024
ROLLOUT_ENVS = 64


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "export",
        help="export a trained policy to ONNX, or to C for microcontrollers",
        description="--target onnx (default): write RUN_DIR/policy.onnx (normalizer + network + action scaling, "
        "with metadata: obs/action names, bounds, units, dt, config and git hash), then check it against torch in "
        "onnxruntime. Other targets turn the policy (RUN_DIR's, exported to RUN_DIR/policy.onnx first, or any "
        "policy .onnx file: robo_rl, SB3, Isaac Lab) into C99 and write a folder with the sources, the target's "
        "template files, a README for building/flashing and report.json (sizes, errors, instruction counts): "
        + "; ".join(f"{name}: {boards.board(name).summary}" for name in boards.names())
        + ".",
    )
    p.add_argument(
        "run_dir_or_onnx",
        type=Path,
        help="run directory made by robo-rl train, or a policy .onnx file (with a firmware --target)",
    )
    p.add_argument(
        "--target",
        default="onnx",
        metavar="{" + ",".join(TARGETS) + "}",
        help="what to produce (default: onnx)",
    )
    p.add_argument(
        "--int8",
        action="store_true",
        help="int8 weights with per-output-channel scales (float activations); reports the error vs float",
    )
    p.add_argument(
        "--int8-activations",
        action="store_true",
        help="int8 activations too (implies --int8), calibrated on observations of the task (RUN_DIR) or sampled "
        "from the metadata bounds (.onnx)",
    )
    p.add_argument(
        "--verify",
        action="store_true",
        help="compile the C on the host and compare with onnxruntime; for cortex-m4 and crazyflie also run it in "
        "QEMU (Cortex-M4) and count instructions per inference",
    )
    p.add_argument("--prefix", default="robo_rl", help="C name prefix: PREFIX_policy() (default: robo_rl)")
    p.add_argument(
        "-o",
        "--output",
        type=Path,
        help="output file for --target onnx (default: RUN_DIR/policy.onnx); output folder for the other targets "
        "(default: RUN_DIR/firmware_TARGET, or firmware_TARGET next to the .onnx file)",
    )
    p.add_argument(
        "--checkpoint",
        type=Path,
        help="checkpoint to export (default: RUN_DIR/checkpoints/best.pt, the best evaluation, else latest.pt)",
    )
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    source: Path = args.run_dir_or_onnx
    if args.target not in TARGETS:
        raise ValueError(f"unknown --target {args.target!r}; choose one of {', '.join(TARGETS)}")
    if not source.exists():
        raise FileNotFoundError(f"{source}: no such run directory or ONNX file")
    if source.is_file() and args.checkpoint is not None:
        raise ValueError("--checkpoint applies to a run directory, not to an ONNX file")
    if args.output is not None:
        check_output(args.output, "--output", folder=args.target != "onnx")
    if args.target == "onnx":
        if source.is_file():
            raise ValueError(f"{source} is already an ONNX file; pick a firmware --target ({', '.join(TARGETS[1:])})")
        if args.int8 or args.int8_activations:
            raise ValueError("--int8 quantizes the C code: pick a firmware --target")
        export_run(source, args.checkpoint, terminal(), args.output)
        return 0
    return export_firmware(args, source)


def export_firmware(args: argparse.Namespace, source: Path) -> int:
    """`--target c|cortex-m4|crazyflie|arduino`: C sources, templates, README and report.json in a folder."""
    from robo_rl.firmware_export.policy_file import read_policy
    from robo_rl.firmware_export.targets import export_target

    console = terminal()
    int8 = args.int8 or args.int8_activations
    calibration = test = None
    if source.is_dir():
        onnx_path = export_run(source, args.checkpoint, console)
        read_policy(onnx_path)  # a policy the C export refuses (camera inputs) stops before the calibration rollouts
        if int8:
            calibration, test = task_observations(source, args.checkpoint)
        out_dir = args.output or source / f"firmware_{args.target}"
    else:
        onnx_path = source
        out_dir = args.output or source.parent / f"firmware_{args.target}"
    report = export_target(
        onnx_path,
        args.target,
        out_dir,
        int8=int8,
        verify=args.verify,
        calibration_obs=calibration,
        int8_activations=args.int8_activations,
        test_obs=test,
        prefix=args.prefix,
    )
    for line in report.lines():
        console.print(line, markup=False, highlight=False)
    if not report.ok:
        console.print(f"export {args.target}: verification FAILED (see {out_dir / 'report.json'})", markup=False)
        return 1
    return 0


def task_observations(run_dir: Path, checkpoint: Path | None) -> tuple[np.ndarray, np.ndarray]:
    """(calibration, test) observations `(n, obs_dim)` the trained policy meets in its task: closed-loop
    rollouts of the deterministic actor in ROLLOUT_ENVS envs (seeds 0 and 1), for int8 calibration and error."""
    trained = load_trained(run_dir, checkpoint)
    actor = trained.actor.eval().to("cpu")

    def rollout(count: int, seed: int) -> np.ndarray:
        env = make_env(trained.cfg, num_envs=ROLLOUT_ENVS, device="cpu", seed=seed)
        obs, rows = env.reset(seed), []
        stepper = PolicyStepper(actor, ROLLOUT_ENVS)  # a policy with memory carries its state per env
        with torch.no_grad():
            for _ in range(-(-count // ROLLOUT_ENVS)):
                rows.append(obs.cpu().numpy().astype(np.float32))
                obs, _, terminated, truncated, _ = env.step(stepper(obs))
                stepper.restart(terminated | truncated)
        return np.concatenate(rows)[:count]

    return rollout(CALIBRATION_OBSERVATIONS, 0), rollout(TEST_OBSERVATIONS, 1)


def sample_observations(spec: SpaceSpec, count: int, seed: int = 0) -> torch.Tensor:
    """Observations spread over the spec's bounds (unbounded elements: standard normal × 3)."""
    gen = torch.Generator().manual_seed(seed)
    low, high = spec.low_tensor(), spec.high_tensor()
    finite = torch.isfinite(low) & torch.isfinite(high)
    uniform = low.nan_to_num(0) + (high - low).nan_to_num(0).clamp(max=1e6) * torch.rand(count, spec.dim, generator=gen)
    normal = 3.0 * torch.randn(count, spec.dim, generator=gen)
    return torch.where(finite, uniform, normal)


def export_run(run_dir: Path, checkpoint: Path | None, console: Console, output: Path | None = None) -> Path:
    trained = load_trained(run_dir, checkpoint)
    task = trained.task  # the specs recorded at training time: the simulator is not rebuilt
    horizon = trained.cfg.task.action_chunk  # a chunked run recorded the chunk env's specs: export one step's
    metadata = PolicyMetadata(
        obs_spec=task.specs.obs,
        action_spec=step_spec(task.specs.action, horizon) if horizon > 1 else task.specs.action,
        dt=task.specs.dt / trained.cfg.task.executed,
        task=trained.cfg.task.name,
        config_hash=config_hash(trained.cfg, task.config),
        git_hash=str(trained.run.meta().get("git_hash", "unknown")),
        task_config=task.config_json(),
        action_chunk=horizon,
        actuator=task.specs.actuator,  # recorded at training time: what the actions meant to that simulator
        vehicle=task.specs.vehicle,  # the vehicle card, recorded at training time too
    )
    path, error, samples = export_checked(trained.actor, metadata, output or run_dir / "policy.onnx")
    verdict = "ok" if error <= PARITY_TOLERANCE else "MISMATCH"
    console.print(
        f"exported {path} (iteration {trained.iteration}); onnxruntime vs torch max |error| over "
        f"{samples} observations: {error:.2e} ({verdict})"
    )
    if error > PARITY_TOLERANCE:
        raise RuntimeError(f"{path}: onnxruntime output differs from torch by {error:.2e} > {PARITY_TOLERANCE}")
    return path


def export_checked(actor: torch.nn.Module, metadata: PolicyMetadata, path: Path) -> tuple[Path, float, int]:
    """(the written file, onnxruntime vs torch max |error|, observations compared) for `actor` exported with
    `metadata`. A `CameraPolicy` gets its cameras as named uint8 inputs (`robo_rl.export.camera`) and is compared
    on random states and frames; any other actor on observations spread over the state spec's bounds."""
    if isinstance(actor, CameraPolicy):
        path = export_camera_policy(actor, metadata, path)
        state, frames = sample_camera_inputs(actor.specs, metadata.obs_spec.dim, CAMERA_PARITY_SAMPLES)
        return path, camera_parity(actor, path, state, frames), CAMERA_PARITY_SAMPLES
    if isinstance(actor, RecurrentDeterministicActor):
        path = export_onnx(actor, replace(metadata, memory=actor.memory), path)
        obs, starts = sample_episodes(metadata.obs_spec)
        return path, onnx_episode_parity(actor, path, obs, starts), PARITY_SAMPLES
    path = export_onnx(actor, metadata, path)
    return path, onnx_parity(actor, path, sample_observations(metadata.obs_spec, PARITY_SAMPLES)), PARITY_SAMPLES


def sample_episodes(spec: SpaceSpec, batch: int = PARITY_EPISODES, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """`PARITY_SAMPLES` observations as `(steps, batch, obs_dim)` sequences (`sample_observations`) with random
    episode starts (1 in 50 steps, and the first): what a policy with memory's parity runs over."""
    obs = sample_observations(spec, PARITY_SAMPLES, seed).reshape(PARITY_SAMPLES // batch, batch, spec.dim)
    starts = torch.rand(obs.shape[:2], generator=torch.Generator().manual_seed(seed)) < 0.02
    starts[0] = True
    return obs, starts
