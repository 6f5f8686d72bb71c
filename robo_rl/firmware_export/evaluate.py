"""The layer IR in numpy (float32): a batch of observations at once, or a policy with memory one step or one
stream of steps with resets at a time, as the deploy side runs it."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from robo_rl.firmware_export.ir import Activation, Clip, Dense, Gru, Pointwise, PolicyIR


def evaluate(ir: PolicyIR, obs: np.ndarray) -> np.ndarray:
    """Numpy float32 forward pass of the IR: obs `(n, obs_dim)` or `(obs_dim,)` → actions of matching rank.
    A policy with memory needs its state: `evaluate_step` (ValueError here)."""
    if ir.state_size:
        raise ValueError("the policy has memory (a GRU state): run it with evaluate_step(ir, obs, h_in)")
    action, _ = _forward(ir, obs, None)
    return action


def evaluate_step(ir: PolicyIR, obs: np.ndarray, h_in: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One step of a policy with memory: obs `(n, obs_dim)` and state `h_in` `(n, state_size)` (or one row each)
    → (action `(n, action_dim)`, next state `h_out` `(n, state_size)`), float32, of matching rank."""
    if not ir.state_size:
        raise ValueError("the policy has no memory: run it with evaluate(ir, obs)")
    state = np.atleast_2d(np.asarray(h_in, dtype=np.float32))
    if state.shape[1] != ir.state_size:
        raise ValueError(f"h_in has {state.shape[1]} entries, the policy's state has {ir.state_size}")
    action, h_out = _forward(ir, obs, state)
    assert h_out is not None
    return action, h_out if np.ndim(obs) > 1 else h_out[0]


def evaluate_episode(ir: PolicyIR, obs: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A policy with memory over a stream of steps, as the deploy side runs it: obs `(T, obs_dim)`, `starts`
    `(T,)` bool (an episode begins at that step; step 0 always does). The state is set to the memory's reset value
    at each start and carried from `h_out` otherwise. Returns (actions `(T, action_dim)`, states `(T,
    state_size)`: each step's `h_out`)."""
    obs = np.asarray(obs, dtype=np.float32)
    starts = np.asarray(starts, dtype=bool).reshape(-1)
    if obs.ndim != 2 or len(starts) != len(obs):
        raise ValueError(f"obs {obs.shape} and starts {starts.shape} must be (T, obs_dim) and (T,)")
    reset = np.full((1, ir.state_size), _reset_value(ir), np.float32)
    h, actions, states = reset, [], []
    for t in range(len(obs)):
        h = reset if starts[t] or t == 0 else h
        action, h = evaluate_step(ir, obs[t : t + 1], h)
        actions.append(action[0])
        states.append(h[0])
    return np.stack(actions), np.stack(states)


def _reset_value(ir: PolicyIR) -> float:
    return ir.info.memory.reset_value if ir.info.memory is not None else 0.0


def _forward(ir: PolicyIR, obs: np.ndarray, state: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
    x = np.asarray(obs, dtype=np.float32)
    single = x.ndim == 1
    x = np.atleast_2d(x)
    if x.shape[1] != ir.obs_dim:
        raise ValueError(f"obs has {x.shape[1]} features, the policy expects {ir.obs_dim}")
    if state is not None and len(state) != len(x):
        raise ValueError(f"{len(x)} observations but {len(state)} states")
    h_out = None
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for layer in ir.layers:
            if isinstance(layer, Gru):
                assert state is not None
                x = h_out = gru_step(layer, x, state)
            else:
                x = apply_layer(layer, x)
    return (x[0] if single else x), h_out


def apply_layer(layer: Dense | Pointwise, x: np.ndarray) -> np.ndarray:
    """One stateless layer on `x` `(n, in_features)` float32 → `(n, out_features)` float32."""
    if isinstance(layer, Dense):
        return (x @ layer.weight.T + layer.bias).astype(np.float32)
    return apply_pointwise(layer, x)


def gru_step(layer: Gru, x: np.ndarray, h: np.ndarray) -> np.ndarray:
    """The GRU's next state `(n, hidden_size)` float32 for inputs `x` `(n, in_features)` and states `h`."""
    size = layer.hidden_size
    gates_x = x @ layer.input_weight.T + layer.input_bias
    gates_h = h @ layer.state_weight.T + layer.state_bias
    sigmoid = _ACTIVATIONS["sigmoid"]
    z = sigmoid(gates_x[:, :size] + gates_h[:, :size], np.float32(0))
    r = sigmoid(gates_x[:, size : 2 * size] + gates_h[:, size : 2 * size], np.float32(0))
    n = np.tanh(gates_x[:, 2 * size :] + r * gates_h[:, 2 * size :])
    return ((np.float32(1) - z) * n + z * h).astype(np.float32)


def apply_pointwise(layer: Pointwise, x: np.ndarray) -> np.ndarray:
    """An Activation, Clip or Elementwise layer on `x` `(n, features)` float32."""
    if isinstance(layer, Activation):
        return _ACTIVATIONS[layer.kind](x, np.float32(layer.alpha)).astype(np.float32)
    if isinstance(layer, Clip):
        return np.minimum(np.maximum(x, np.float32(layer.low)), np.float32(layer.high))
    c = layer.constant
    a, b = (c, x) if layer.constant_first else (x, c)
    return _ELEMENTWISE[layer.op](a, b).astype(np.float32)


_ACTIVATIONS: dict[str, Callable[[np.ndarray, np.float32], np.ndarray]] = {
    "relu": lambda x, _: np.maximum(x, np.float32(0)),
    "tanh": lambda x, _: np.tanh(x),
    "sigmoid": lambda x, _: np.float32(1) / (np.float32(1) + np.exp(-x)),
    "elu": lambda x, alpha: np.where(x > 0, x, alpha * np.expm1(x)),
    "leaky_relu": lambda x, alpha: np.where(x >= 0, x, alpha * x),
}
_ELEMENTWISE: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
}
