"""Policies with memory for the deploy tests: a small `RecurrentActorCritic` for the task a bundled profile deploys,
exported by `robo_rl.export.onnx` with its real metadata (actuator model and `robo_rl.memory`), and the offline
reference: the same file in onnxruntime directly, the state carried and reset by the caller's list."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import torch

from robo_rl.actuator import actuator_of
from robo_rl.config import config_hash
from robo_rl.export.onnx import PolicyMetadata, export_onnx
from robo_rl.modules.actor_critic import PolicyConfig
from robo_rl.modules.recurrent import RecurrentActorCritic
from robo_rl.sim import make

from .conftest import PROFILE_TASKS

GRU = PolicyConfig(actor_hidden=(16,), memory="gru", memory_size=8)
HISTORY = PolicyConfig(actor_hidden=(16,), memory="history", history_length=2)


def export_memory_policy(
    profile: str, path: Path, cfg: PolicyConfig = GRU, seed: int = 0, reset_value: float = 0.0
) -> Path:
    """A randomly initialized policy with memory (`cfg.memory`) for the task `profile` deploys, its artifact stating
    `reset_value`. Its head's weights are drawn at gain 0.5 instead of the init's 0.01, so that the state visibly
    moves the action."""
    preset, params = PROFILE_TASKS[profile]
    experiment = preset()
    env = make(experiment.task.name, num_envs=1, config=experiment.task.config, params=params)
    torch.manual_seed(seed)
    low, high = env.action_spec.low_tensor(), env.action_spec.high_tensor()
    policy = RecurrentActorCritic(env.obs_spec.dim, low, high, cfg)
    with torch.no_grad():
        for parameter in policy.head.parameters():
            parameter.normal_(0.0, 0.5)
    metadata = PolicyMetadata(
        env.obs_spec,
        env.action_spec,
        env.dt,
        experiment.task.name,
        config_hash(experiment),
        "test",
        actuator=actuator_of(env),
        memory=replace(policy.memory, reset_value=reset_value),
    )
    return export_onnx(policy.deterministic_actor(), metadata, path)


class RecordedSession:
    """A real onnxruntime session that keeps what each `run` was fed and returned (copies), so that a test sees the
    state the runtime fed without changing what runs."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.feeds: list[dict[str, np.ndarray]] = []
        self.outputs: list[list[np.ndarray]] = []

    def run(self, names: list[str], feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        out = self.session.run(names, feed)
        self.feeds.append({name: value.copy() for name, value in feed.items()})
        self.outputs.append([value.copy() for value in out])
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self.session, name)


def offline_run(
    path: Path, obs: Sequence[np.ndarray], resets: Sequence[bool], reset_value: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """Actions `(T, action_dim)` and next states `(T, size)` of the file at `path` for observations `(obs_dim,)` fed
    one by one in a fresh onnxruntime session, every entry of the state `reset_value` where `resets` is true (the
    first step must be one) and the previous step's `h_out` otherwise."""
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    size = {value.name: value.shape for value in session.get_inputs()}["h_in"][1]
    h = np.full((1, size), np.nan, dtype=np.float32)
    actions, states = [], []
    for o, reset in zip(obs, resets, strict=True):
        if reset:
            h = np.full_like(h, reset_value)
        action, h = session.run(["action", "h_out"], {"obs": np.asarray(o, dtype=np.float32)[None], "h_in": h})
        actions.append(action[0])
        states.append(h[0])
    return np.array(actions), np.array(states)
