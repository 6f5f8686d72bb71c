"""Demonstration files: replay transitions as a plain .npz with a schema, readable without torch.

Layout (schema `robo_rl.demos/1`): one array per transition field (`obs`, `critic_obs`, `actions` in the
normalized [-1, 1] action space, `rewards`, `next_obs`, `next_critic_obs`, `terminated`, `truncated`,
`intervened`, `is_demo`; first axis = transition), and `meta`, a JSON string with `schema`, `task`, `obs_names`,
`action_names`, `action_low`, `action_high`, `dt`, `episodes` and `source`. `load_demos` checks the names
against the env it is loaded for, so demonstrations never silently feed a different observation layout.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

from robo_rl.envs import BatchedEnv
from robo_rl.storage.replay import FIELD_NAMES, ReplayBuffer, Transitions

SCHEMA = "robo_rl.demos/1"


def save_demos(path: Path, buffer: ReplayBuffer, task: str, env: BatchedEnv, episodes: int, source: str) -> None:
    """Write the stored transitions of `buffer` to `path` (.npz) atomically, with the metadata of `env`."""
    stored = buffer.stored()
    arrays = {name: getattr(stored, name).cpu().numpy() for name in FIELD_NAMES}
    meta = {
        "schema": SCHEMA,
        "task": task,
        "obs_names": list(env.obs_spec.names),
        "action_names": list(env.action_spec.names),
        "action_low": list(env.action_spec.low),
        "action_high": list(env.action_spec.high),
        "dt": env.dt,
        "episodes": episodes,
        "source": source,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=path.parent, suffix=".npz")
    os.close(handle)
    np.savez_compressed(tmp, meta=np.array(json.dumps(meta)), **arrays)
    os.replace(tmp, path)


def read_meta(path: Path) -> dict[str, Any]:
    with np.load(path) as data:
        return json.loads(str(data["meta"]))


def load_demos(path: Path, env: BatchedEnv) -> Transitions:
    """The transitions of demo file `path` on `env`'s device; ValueError when it does not fit `env`."""
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such demonstration file")
    with np.load(path) as data:
        meta = json.loads(str(data["meta"])) if "meta" in data else {}
        if meta.get("schema") != SCHEMA:
            raise ValueError(f"{path}: not a robo_rl demonstration file (schema {meta.get('schema')!r})")
        for key, ours in (("obs_names", env.obs_spec.names), ("action_names", env.action_spec.names)):
            if tuple(meta[key]) != tuple(ours):
                raise ValueError(f"{path}: {key} differ from the task's ({meta[key]} vs {list(ours)})")
        missing = [name for name in FIELD_NAMES if name not in data]
        if missing:
            raise ValueError(f"{path}: missing arrays {missing}")
        return Transitions(**{name: torch.as_tensor(data[name]).to(env.device) for name in FIELD_NAMES})
