"""The full configuration of a training run.

A run is described by one `ExperimentConfig`; YAML files map onto it (see `robo_rl.config`), and the
resolved config is written into the run directory. Presets live with their task (`robo_rl/sim/TASK/presets.py`,
collected by `robo_rl.sim.presets`), built from the helpers below.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from robo_rl.algorithms import registered
from robo_rl.algorithms.registered import AlgorithmName
from robo_rl.algorithms.registry import algorithm
from robo_rl.chunks.spec import check_horizon
from robo_rl.config import OpenConfig, deep_update, differences, merge, plain_fields, to_dict
from robo_rl.hil.config import HilConfig
from robo_rl.modules.actor_critic import PolicyConfig
from robo_rl.runners.loop_config import LoopConfig
from robo_rl.runners.off_policy_config import OFF_POLICY_LOOP, OffPolicyRunnerConfig
from robo_rl.runners.on_policy import RunnerConfig

Algorithm = AlgorithmName
"""A registered algorithm name (`robo_rl.algorithms.registered.AlgorithmName`)."""


MAX_NUM_ENVS = 2**20
"""The most parallel environments a config may ask for: far above what a GPU trains (Isaac Lab: 4,096-65,536), below
what takes a machine's memory before the first step (`--set task.num_envs=1e9` did, instead of an error)."""


TaskSettings = OpenConfig
"""A task's own config: an instance of the config dataclass its simulator registered (`robo-rl tasks` lists the
fields), or, as read from YAML or `--set`, a mapping of the fields that differ from its defaults (nested keys as
nested mappings), which `robo_rl.api.configs` turns into that instance where configs are read; None: its defaults."""


@dataclass(frozen=True)
class TaskConfig:
    name: str = "pendulum"
    """Registered task name (`robo-rl tasks` lists them)."""
    num_envs: int = 1024
    """Parallel environments stepped as one batch."""
    device: str = "cpu"
    """Torch device for the env, the rollout storage and the networks: cpu, cuda, cuda:1, ..."""
    config: TaskSettings = None
    """The task's own settings, a typed config (e.g. the hover task's `HoverConfig(position_integral_limit=0.5)`);
    None: its defaults. In YAML a mapping of what differs (`config: {randomization: {mass: 0.2}}`); on the command
    line `--set task.config.randomization.mass=0.2`, or the shorthand `--set task.randomization.mass=0.2`."""
    eval_config: TaskSettings = None
    """The evaluation env's settings (the runner's evaluations and `robo-rl eval`): held-out ranges wider than the
    training ranges, a curriculum switched off; None: `config`. In YAML, what differs from `config`."""
    action_chunk: int = 1
    """H: the policy outputs H actions at once (`robo_rl.chunks`: the task runs in a `ChunkEnv`, the exported
    policy is a chunked artifact); 1: one action per step."""
    chunk_execute: int = 0
    """Actions of each chunk executed before the policy is asked again (receding horizon), 1..H; 0: all H."""

    def __post_init__(self) -> None:
        if not 1 <= self.num_envs <= MAX_NUM_ENVS:
            raise ValueError(f"num_envs must be between 1 and {MAX_NUM_ENVS:,} (2**20), got {self.num_envs:,}")
        check_horizon(self.action_chunk, self.chunk_execute or None)

    @property
    def executed(self) -> int:
        """Actions executed per chunk (H when `chunk_execute` is 0)."""
        return self.chunk_execute or self.action_chunk

    @property
    def evaluation_config(self) -> TaskSettings:
        """The settings of the evaluation env: `eval_config`, or `config` where there is none; a mapping of changes
        is laid over `config`."""
        if self.eval_config is None:
            return self.config
        if not isinstance(self.eval_config, Mapping) or self.config is None:
            return self.eval_config
        if isinstance(self.config, Mapping):
            return deep_update(self.config, self.eval_config)
        return merge(self.config, self.eval_config, "task.eval_config")

    def __config_dict__(self) -> dict[str, Any]:
        """Plain data with `eval_config` as what differs from `config` (so that a file changing `config` changes the
        evaluation too, as it should); `config` in full."""
        data = plain_fields(self)
        if self.eval_config is not None and not isinstance(self.eval_config, Mapping):
            data["eval_config"] = differences(data["eval_config"], _plain_settings(self.config, self.eval_config))
        return data


def _plain_settings(config: TaskSettings, like: Any) -> dict[str, Any]:
    """`config` as plain data, over the defaults of `like`'s class where it is a mapping of changes or None."""
    if config is not None and not isinstance(config, Mapping):
        return to_dict(config)
    return deep_update(to_dict(type(like)()), config or {})


@dataclass(frozen=True)
class ExperimentConfig:
    name: str = "pendulum_ppo"
    """Experiment name; runs go to RUNS_ROOT/name/<timestamp>-seed<seed>."""
    seed: int = 0
    """Seeds network initialization, action sampling and the env stream."""
    algo: Algorithm = "ppo"
    """Which algorithm trains (`robo_rl.algorithms.registry`; `robo-rl train --help` lists them). It reads the
    section of its name below and its loop's section: `runner` (on-policy, e.g. ppo, which also reads `policy`) or
    `off_policy` (e.g. sac); reinflow, PPO fine-tuning a flow policy, reads `reinflow` and `ppo`."""
    task: TaskConfig = field(default_factory=TaskConfig)
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    # algorithm-sections:begin (written from robo_rl/algorithms/registry.py by `make docs`; do not edit)
    ppo: registered.PPOConfig = field(default_factory=registered.PPOConfig)
    ppo_lag: registered.PPOLagConfig = field(default_factory=registered.PPOLagConfig)
    sac: registered.SACConfig = field(default_factory=registered.SACConfig)
    sac_lag: registered.SACLagConfig = field(default_factory=registered.SACLagConfig)
    td3: registered.TD3Config = field(default_factory=registered.TD3Config)
    fql: registered.FQLConfig = field(default_factory=registered.FQLConfig)
    dsrl: registered.DSRLConfig = field(default_factory=registered.DSRLConfig)
    reinflow: registered.ReinFlowTrainConfig = field(default_factory=registered.ReinFlowTrainConfig)
    pa_rl: registered.PARLConfig = field(default_factory=registered.PARLConfig)
    # algorithm-sections:end
    runner: RunnerConfig = field(default_factory=RunnerConfig)
    off_policy: OffPolicyRunnerConfig = field(default_factory=OffPolicyRunnerConfig)
    hil: HilConfig = field(default_factory=HilConfig)
    """Human-in-the-loop: who may take over the training envs (off-policy algorithms)."""

    def __post_init__(self) -> None:
        algorithm(self.algo)  # ValueError naming the registered algorithms
        if not self.name or self.name in (".", "..") or "/" in self.name or "\\" in self.name:
            # The run directory is RUNS_ROOT/name/...: a name with a separator would put it elsewhere.
            raise ValueError(f"name: {self.name!r} is not a folder name (runs go to RUNS_ROOT/name/)")

    @property
    def loop_section(self) -> str:
        """Config section of the active runner (`runner` or `off_policy`), whose `loop` holds the training loop's
        settings: override keys are `f"{cfg.loop_section}.loop.max_iterations"`."""
        return algorithm(self.algo).loop_section

    @property
    def loop(self) -> LoopConfig:
        """The active runner's loop settings (max_iterations, target_return, ...): `runner.loop` or
        `off_policy.loop`."""
        return self.runner.loop if self.on_policy else self.off_policy.loop

    @property
    def on_policy(self) -> bool:
        """Whether the on-policy runner (rollouts, `runner` section) trains it, rather than the replay runner."""
        return algorithm(self.algo).loop == "on_policy"


def with_networks(
    cfg: ExperimentConfig, actor_hidden: tuple[int, ...], critic_hidden: tuple[int, ...]
) -> ExperimentConfig:
    """`cfg` with the hidden layers of its algorithm's networks set: `actor_hidden` and `critic_hidden`, and
    `flow_hidden` (a flow as wide as the actor) where the algorithm's section has one; the other sections keep
    their defaults. Works for any registered algorithm whose section names its networks so."""
    section = getattr(cfg, cfg.algo)
    sizes = {"actor_hidden": actor_hidden, "critic_hidden": critic_hidden, "flow_hidden": actor_hidden}
    known = {f.name for f in fields(section)}
    missing = {"actor_hidden", "critic_hidden"} - known
    if missing:
        raise ValueError(f"algo {cfg.algo!r}: its config {type(section).__name__} has no {', '.join(sorted(missing))}")
    return replace(cfg, **{cfg.algo: replace(section, **{k: v for k, v in sizes.items() if k in known})})


def robot_off_policy(name: str, task: TaskConfig, max_iterations: int) -> ExperimentConfig:
    """SAC on a real robot (`robo-rl train CONFIG --robot PROFILE`): one env on the robot's real-time grid, the
    learner in its own process so that learning never blocks control (`off_policy.actor_learner`), RLPD-style
    sampling from demonstrations or interventions when given (`off_policy.prior_buffer`), no separate evaluation
    env (the robot is the only one), a checkpoint every 30 s."""
    cfg = ExperimentConfig(
        name=name,
        algo="sac",
        task=task,
        off_policy=OffPolicyRunnerConfig(
            loop=replace(OFF_POLICY_LOOP, max_iterations=max_iterations, eval_interval=0, save_every_s=30.0),
            learning_starts=500,
            updates_per_step=1,
            batch_size=256,
            buffer_capacity=200_000,
            actor_learner=True,
        ),
    )
    return with_networks(cfg, actor_hidden=(128, 128), critic_hidden=(256, 256))


def with_seed(cfg: ExperimentConfig, seed: int) -> ExperimentConfig:
    return replace(cfg, seed=seed)
