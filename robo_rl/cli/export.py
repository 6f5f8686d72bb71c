"""`robo-rl export`: write a run's deterministic actor to policy.onnx and verify it in onnxruntime."""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from rich.console import Console

from robo_rl.cli.progress import terminal
from robo_rl.cli.run_loading import load_trained, make_env
from robo_rl.config import config_hash
from robo_rl.envs import SpaceSpec
from robo_rl.export.onnx import PolicyMetadata, export_onnx, onnx_parity

PARITY_TOLERANCE = 1e-5
PARITY_SAMPLES = 4096


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "export",
        help="export a trained policy to ONNX",
        description="Write RUN_DIR/policy.onnx (normalizer + network + action scaling, with metadata: obs/action "
        "names, bounds, units, dt, config and git hash), then check it against torch in onnxruntime.",
    )
    p.add_argument("run_dir", type=Path, help="run directory made by robo-rl train")
    p.add_argument("-o", "--output", type=Path, help="output file (default: RUN_DIR/policy.onnx)")
    p.add_argument("--checkpoint", type=Path, help="checkpoint to export (default: RUN_DIR/checkpoints/latest.pt)")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    export_run(args.run_dir, args.checkpoint, terminal(), args.output)
    return 0


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
    env = make_env(trained.cfg, num_envs=1, device="cpu")
    metadata = PolicyMetadata(
        obs_spec=env.obs_spec,
        action_spec=env.action_spec,
        dt=env.dt,
        task=trained.cfg.task.name,
        config_hash=config_hash(trained.cfg),
        git_hash=trained.run.meta()["git_hash"],
    )
    actor = trained.actor
    path = export_onnx(actor, metadata, output or run_dir / "policy.onnx")
    error = onnx_parity(actor, path, sample_observations(env.obs_spec, PARITY_SAMPLES))
    verdict = "ok" if error <= PARITY_TOLERANCE else "MISMATCH"
    console.print(
        f"exported {path} (iteration {trained.iteration}); onnxruntime vs torch max |error| over "
        f"{PARITY_SAMPLES} observations: {error:.2e} ({verdict})"
    )
    if error > PARITY_TOLERANCE:
        raise RuntimeError(f"{path}: onnxruntime output differs from torch by {error:.2e} > {PARITY_TOLERANCE}")
    return path
