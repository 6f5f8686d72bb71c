"""The ONNX file itself in onnxruntime: the reference the exported C is checked against (one batch of
observations, or a policy with memory over a stream of steps with resets)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from robo_rl.firmware_export.ir import PolicyInfo

EPISODE_STEPS = 200
"""A policy with memory: steps between the resets of its verification stream."""
RANDOM_RESET_PROBABILITY = 0.02
"""A policy with memory: chance that any other step of the verification stream starts an episode too."""


def onnxruntime_actions(onnx_path: Path, obs: np.ndarray, info: PolicyInfo) -> np.ndarray:
    """Actions `(n, action_dim)` of the ONNX file in onnxruntime for `obs` `(n, obs_dim)` (split over the graph
    inputs in `info.inputs` order); models with a fixed batch of 1 run row by row."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    obs = np.asarray(obs, dtype=np.float32)
    bounds = np.cumsum([0] + [width for _, width in info.inputs])
    batch_dims = {node.name: node.shape[0] for node in session.get_inputs()}

    def run(rows: np.ndarray) -> np.ndarray:
        feeds = {name: rows[:, bounds[i] : bounds[i + 1]] for i, (name, _) in enumerate(info.inputs)}
        return np.asarray(session.run([info.output], feeds)[0], dtype=np.float32)

    if all(dim == 1 for dim in batch_dims.values()):
        return np.concatenate([run(obs[i : i + 1]) for i in range(len(obs))])
    return run(obs)


def episode_starts(count: int, seed: int = 0, episode_steps: int = EPISODE_STEPS) -> np.ndarray:
    """`(count,)` bool: where a stream of `count` steps starts an episode (its state reset): step 0, every
    `episode_steps` steps, and at random steps in between (`RANDOM_RESET_PROBABILITY` each)."""
    starts = np.random.default_rng(seed).random(count) < RANDOM_RESET_PROBABILITY
    starts[::episode_steps] = True
    return starts


def onnxruntime_episode(
    onnx_path: Path, obs: np.ndarray, starts: np.ndarray, info: PolicyInfo
) -> tuple[np.ndarray, np.ndarray]:
    """A policy with memory in onnxruntime over a stream of steps: obs `(T, obs_dim)`, the state set to the reset
    value where `starts` `(T,)` is true (and at step 0) and carried from `h_out` otherwise. Returns (actions
    `(T, action_dim)`, states `(T, state_size)`: each step's `h_out`)."""
    import onnxruntime as ort

    memory = info.memory
    if memory is None:
        raise ValueError("the policy has no memory: use onnxruntime_actions")
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    obs = np.asarray(obs, dtype=np.float32)
    bounds = np.cumsum([0] + [width for _, width in info.inputs])
    reset = np.full((1, memory.size), memory.reset_value, np.float32)
    h, actions, states = reset, [], []
    for t in range(len(obs)):
        h = reset if starts[t] or t == 0 else h
        feeds = {name: obs[t : t + 1, bounds[i] : bounds[i + 1]] for i, (name, _) in enumerate(info.inputs)}
        action, h = session.run([info.output, memory.output], {**feeds, memory.input: h})
        actions.append(action[0])
        states.append(h[0])
    return np.asarray(actions, np.float32), np.asarray(states, np.float32)
