"""`robo-rl play`: a video (GIF or MP4) of a trained policy driving its task, rendered headless."""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from numpy.typing import ArrayLike

from robo_rl.api.bad_file import check_output
from robo_rl.api.evaluation import run_onnx_actor
from robo_rl.api.runs import load_trained, make_env
from robo_rl.cli.arguments import add_task_param_argument, add_threads_argument
from robo_rl.cli.progress import terminal
from robo_rl.envs import INFO_SUCCESS, BatchedEnv, RenderableEnv
from robo_rl.runners.policy_stepper import Actor, PolicyStepper

VIDEO_SUFFIXES = (".gif", ".mp4")
MIN_FPS = 0.01
"""Frames per second at least (a GIF holds a frame for at most 655.35 s)."""


@dataclass(frozen=True)
class PlayResult:
    """What `play_run` wrote and saw."""

    path: Path
    frames: int
    fps: float
    returns: tuple[float, ...]
    """Return of each episode played (the last one may be cut by `max_seconds`)."""
    successes: tuple[bool | None, ...]
    """Per episode: info["success"] at its end, None for tasks without success or for a cut episode."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "play",
        help="write a video of a trained policy",
        description="Run the deterministic policy of RUN_DIR in one env of its task (with the task's evaluation "
        "settings, task.eval_config) and write a video of it: GIF by default, MP4 when --output ends in .mp4. "
        "Rendering is headless: matplotlib for the pendulum, quadrotor and RC car, MuJoCo offscreen (EGL, "
        "or MUJOCO_GL=osmesa) for MuJoCo tasks. Frames are taken every k control steps so that the video plays "
        "in real time at about --fps frames per second.",
    )
    p.add_argument("run_dir", type=Path, help="run directory made by robo-rl train")
    p.add_argument("--output", type=Path, help="video file, .gif or .mp4 (default: RUN_DIR/play.gif)")
    p.add_argument("--episodes", type=int, default=1, help="episodes to play one after another (default: 1)")
    p.add_argument("--seed", type=int, default=0, help="seed of the initial states (default: 0)")
    p.add_argument("--fps", type=float, default=25.0, help="target frames per second of the video (default: 25)")
    p.add_argument("--max-seconds", type=float, default=60.0, help="stop after this much simulated time (s)")
    p.add_argument(
        "--checkpoint",
        type=Path,
        help="checkpoint (default: RUN_DIR/checkpoints/best.pt, the best evaluation, else latest.pt)",
    )
    p.add_argument("--onnx", action="store_true", help="drive with RUN_DIR/policy.onnx in onnxruntime")
    add_task_param_argument(p, "for this video")
    add_threads_argument(p)
    p.set_defaults(func=main)


def play_run(
    run_dir: Path,
    output: Path | None = None,
    episodes: int = 1,
    seed: int = 0,
    fps: float = 25.0,
    max_seconds: float = 60.0,
    checkpoint: Path | None = None,
    use_onnx: bool = False,
    task_params: Sequence[str] = (),
    on_frame: Callable[[int], None] | None = None,
) -> PlayResult:
    """Play `episodes` episodes of the run's deterministic policy in one env and write them as a video."""
    output = run_dir / "play.gif" if output is None else output
    _check_arguments(output, episodes, fps, max_seconds)
    trained = load_trained(run_dir, checkpoint)
    env = make_env(trained.cfg, num_envs=1, device="cpu", extra_params=task_params, evaluation=True)
    if not isinstance(env, RenderableEnv):
        raise ValueError(f"task {trained.cfg.task.name!r} cannot render (its env has no render method)")
    actor = run_onnx_actor(run_dir, env) if use_onnx else trained.actor
    every = max(1, round(1.0 / (env.dt * fps)))
    frames, returns, successes = _rollout(env, actor, seed, episodes, every, max_seconds, on_frame)
    video_fps = 1.0 / (env.dt * every)
    _write_video(output, frames, video_fps)
    return PlayResult(output, len(frames), video_fps, returns, successes)


def _check_arguments(output: Path, episodes: int, fps: float, max_seconds: float) -> None:
    if output.suffix.lower() not in VIDEO_SUFFIXES:
        raise ValueError(f"--output must end in one of {VIDEO_SUFFIXES}, got {output.name!r}")
    if episodes < 1 or not MIN_FPS <= fps < math.inf or not 0 < max_seconds < math.inf:
        raise ValueError(
            f"need --episodes >= 1, finite --fps >= {MIN_FPS} and --max-seconds > 0; "
            f"got {episodes}, {fps}, {max_seconds}"
        )
    check_output(output, "--output")


def _rollout(
    env: BatchedEnv,
    actor: Actor,
    seed: int,
    episodes: int,
    every: int,
    max_seconds: float,
    on_frame: Callable[[int], None] | None,
) -> tuple[list[np.ndarray], tuple[float, ...], tuple[bool | None, ...]]:
    """Frames of env 0 every `every` steps, and each episode's return and success (an actor with memory has its
    state carried and reset at each episode's start)."""
    renderable: RenderableEnv = env  # type: ignore[assignment]
    obs = env.reset(seed=seed)
    policy = PolicyStepper(actor, env.num_envs, env.device)
    frames: list[np.ndarray] = []
    returns: list[float] = []
    successes: list[bool | None] = []
    episode_return, steps, max_steps = 0.0, 0, max(1, round(max_seconds / env.dt))
    with torch.no_grad():
        for total in range(max_steps):
            if total % every == 0:
                frames.append(renderable.render(0))
                if on_frame is not None:
                    on_frame(len(frames))
            obs, reward, terminated, truncated, info = env.step(policy(obs))
            policy.restart(terminated | truncated)
            episode_return += float(reward[0])
            steps += 1
            if bool(terminated[0] | truncated[0]):
                returns.append(episode_return)
                successes.append(bool(info[INFO_SUCCESS][0]) if INFO_SUCCESS in info else None)
                episode_return, steps = 0.0, 0
                if len(returns) == episodes:
                    break
    if steps > 0:  # cut by max_seconds
        returns.append(episode_return)
        successes.append(None)
    return frames, tuple(returns), tuple(successes)


def _write_video(path: Path, frames: list[np.ndarray], fps: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".gif":
        import imageio.v3 as iio

        # GIF frame durations are whole hundredths of a second (given in ms here). The file is opened here: a path
        # that cannot be written fails at once, not in the writer's finalizer (a second traceback).
        with open(path, "wb") as handle:
            iio.imwrite(handle, np.stack(frames), extension=".gif", duration=round(1000.0 / fps, -1), loop=0)
        return
    import imageio.v2 as imageio  # MP4 through imageio-ffmpeg (its own ffmpeg binary)

    video: list[ArrayLike] = list(frames)
    imageio.mimwrite(path, video, format="FFMPEG", fps=fps, codec="libx264", quality=7, macro_block_size=8)


def main(args: argparse.Namespace) -> int:
    # Headless MuJoCo rendering: EGL unless the user chose a backend (e.g. MUJOCO_GL=osmesa).
    os.environ.setdefault("MUJOCO_GL", "egl")
    console = terminal()
    with console.status("rendering...") as status:
        result = play_run(
            args.run_dir,
            args.output,
            args.episodes,
            args.seed,
            args.fps,
            args.max_seconds,
            args.checkpoint,
            args.onnx,
            args.task_params,
            on_frame=lambda n: status.update(f"rendering... {n} frames"),
        )
    returns = ", ".join(f"{value:.1f}" for value in result.returns)
    successes = ", ".join("-" if s is None else ("yes" if s else "no") for s in result.successes)
    console.print(
        f"wrote {result.path}: {result.frames} frames at {result.fps:.1f} fps; episode returns {returns}; "
        f"success {successes}"
    )
    return 0
