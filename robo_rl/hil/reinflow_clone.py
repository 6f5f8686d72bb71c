"""ReinFlow's `prepare` hook (`robo_rl.algorithms.registry`): behaviour-clone the flow of a fresh ReinFlow policy on
`reinflow.demos` before PPO starts. It lives here, not in `robo_rl.algorithms.reinflow`, because reading demo files
and cloning (`robo_rl.hil.demos`, `robo_rl.hil.pretrain`) is this layer's, which the core does not import; the
registry names it as "module:function" and the composition root imports it."""

from __future__ import annotations

from pathlib import Path

from robo_rl.algorithms.reinflow import ReinFlowTrainConfig
from robo_rl.envs import BatchedEnv
from robo_rl.hil.demos import load_demos
from robo_rl.hil.pretrain import behaviour_clone
from robo_rl.modules.reinflow import ReinFlowPolicy


def clone_flow(policy: ReinFlowPolicy, cfg: ReinFlowTrainConfig, env: BatchedEnv, seed: int) -> None:
    """Clone `policy.flow` for `cfg.bc_steps` steps on `cfg.demos` (nothing with `bc_steps=0`), then freeze the
    actor again for its warm-up."""
    if cfg.bc_steps == 0:
        return
    if cfg.demos is None:
        raise ValueError(
            "reinflow clones its flow on demonstrations first: --set reinflow.demos=FILE (from robo-rl "
            "record-demos), or reinflow.bc_steps=0 for an untrained flow"
        )
    demos = load_demos(Path(cfg.demos), env)
    policy.freeze_actor(False)  # the warm-up freezes it for PPO, not for cloning
    behaviour_clone(policy.flow, demos, cfg.bc_steps, cfg.bc_batch_size, cfg.bc_learning_rate, seed)
    policy.apply_warmup()
