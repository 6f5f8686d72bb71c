"""Assemble env, policy, algorithm and runner from an `ExperimentConfig`.

The env factory is injected (the CLI passes `robo_rl.sim.make`), so the core never imports a simulator.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any, Protocol

import torch
from torch import nn

from robo_rl.algorithms.drq import camera_specs_of_policy
from robo_rl.algorithms.off_policy import OffPolicyAlgorithm
from robo_rl.algorithms.registry import algorithm, entries
from robo_rl.chunks.env import ChunkEnv
from robo_rl.config import ConfigError
from robo_rl.cost_spec import cost_spec_of
from robo_rl.distributed import LOCAL, Reducer, broadcast_module
from robo_rl.envs import BatchedEnv, image_specs_of, task_specs
from robo_rl.experiment import ExperimentConfig
from robo_rl.hil import InterventionEnv, TeleopDevice
from robo_rl.hil.realtime import RealTimeEnv
from robo_rl.image_spec import ImageSpec
from robo_rl.runners.dagger import TeacherPolicy
from robo_rl.runners.evaluate import EVAL_SEED_OFFSET, PRECHECK_SEED_OFFSET
from robo_rl.runners.off_policy import OffPolicyRunner
from robo_rl.runners.on_policy import OnPolicyRunner
from robo_rl.runners.run_dir import RunDirectory
from robo_rl.task_record import TaskSpecs


class EnvFactory(Protocol):
    """Builds task `name`: `config` is its typed config (or a mapping of changes, or None for its defaults), `params`
    `"key=value"` text laid over it (from a command line or a profile)."""

    def __call__(
        self,
        name: str,
        num_envs: int,
        device: str = "cpu",
        seed: int | None = None,
        params: Sequence[str] = (),
        config: Any = None,
    ) -> BatchedEnv: ...


class TeleopFactory(Protocol):
    def __call__(self, cfg: ExperimentConfig, env: BatchedEnv) -> TeleopDevice: ...


class TeacherFactory(Protocol):
    """`off_policy.teacher`'s run directory -> its deterministic obs -> env-action module and observation names."""

    def __call__(self, run: str) -> tuple[nn.Module, tuple[str, ...]]: ...


def chunked(cfg: ExperimentConfig, env: BatchedEnv) -> BatchedEnv:
    """`env` acting on chunks of `task.action_chunk` actions (`robo_rl.chunks.ChunkEnv`), or `env` itself (H = 1)."""
    if cfg.task.action_chunk == 1:
        return env
    return ChunkEnv(env, cfg.task.action_chunk, cfg.task.executed)


def check_device(device: str, key: str = "task.device") -> None:
    """Raise ValueError, naming the config key (or flag) `key`, if `device` is malformed, not present on this
    machine, or holds no data the simulators can draw random numbers on (e.g. `meta`)."""
    try:
        parsed = torch.device(device)
    except RuntimeError as err:
        raise ValueError(f"{key}: {device!r} is not a torch device ({err})") from None
    if parsed.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"{key}: {device!r} requested, but CUDA is not available to this torch build")
    if parsed.type == "cuda" and parsed.index is not None and parsed.index >= torch.cuda.device_count():
        raise ValueError(f"{key}: {device!r} requested, but only {torch.cuda.device_count()} GPU(s) exist")
    try:
        torch.Generator(device=parsed)
    except RuntimeError as err:
        raise ValueError(f"{key}: {device!r} cannot run the simulators ({str(err).strip()})") from None


def build_policy(cfg: ExperimentConfig, task: BatchedEnv | TaskSpecs, device: str | torch.device | None = None) -> Any:
    """The policy of the on-policy algorithm `cfg.algo` for `task` (an env, or the specs a run recorded), on `device`
    (default: the env's, or cpu), from its registry entry's `build_policy` and config section: an `nn.Module` that
    is a `robo_rl.modules.distributions.StochasticPolicy`, not yet prepared (`prepare_policy`)."""
    entry = algorithm(cfg.algo)
    if entry.build_policy is None:
        raise ValueError(f"algo {cfg.algo!r} is not an on-policy algorithm")
    specs, device = _specs_and_device(task, device)
    spec = specs.action
    if not spec.is_bounded:
        raise ValueError(f"task {cfg.task.name!r}: action bounds must be finite to scale the policy onto them")
    return entry.build_policy(
        specs.obs.dim,
        specs.critic_obs_dim,
        spec.low_tensor(),
        spec.high_tensor(),
        getattr(cfg, entry.section("policy")),
        seed=cfg.seed,
        nominal_action=_nominal_action(task),
        device=device,
    )


def prepare_policy(cfg: ExperimentConfig, policy: nn.Module, env: BatchedEnv) -> None:
    """Run the registry entry's `prepare` hook, if it has one, on a fresh `policy` (e.g. clone it on demos)."""
    entry = algorithm(cfg.algo)
    if entry.prepare is None:
        return
    module, _, name = entry.prepare.partition(":")
    hook = getattr(importlib.import_module(module), name)
    hook(policy, getattr(cfg, entry.section("policy")), env, cfg.seed)


def _nominal_action(task: BatchedEnv | TaskSpecs) -> torch.Tensor | None:
    """The env's optional `nominal_action` (the action that holds it at rest), for `PolicyConfig.init_mean`; a
    recorded run's specs have none (its weights are loaded anyway)."""
    nominal = None if isinstance(task, TaskSpecs) else getattr(task, "nominal_action", None)
    return None if nominal is None else torch.as_tensor(nominal, dtype=torch.float32)


def _specs_and_device(
    task: BatchedEnv | TaskSpecs, device: str | torch.device | None
) -> tuple[TaskSpecs, str | torch.device]:
    if isinstance(task, TaskSpecs):
        return task, device or "cpu"
    return task_specs(task), device or task.device


Runner = OnPolicyRunner | OffPolicyRunner


def build_runner(
    cfg: ExperimentConfig,
    make_env: EnvFactory,
    run: RunDirectory | None = None,
    evaluate: bool = True,
    make_teleop: TeleopFactory | None = None,
    reducer: Reducer = LOCAL,
    make_teacher: TeacherFactory | None = None,
) -> Runner:
    """A ready-to-train runner for `cfg.algo`; `evaluate=False` skips creating the evaluation env.

    With `cfg.hil.teleop` other than "none", `make_teleop(cfg, env)` builds the device that may take over the
    training envs (never the evaluation envs), which then run inside an `InterventionEnv`. With
    `off_policy.teacher`, `make_teacher(run)` loads the teacher that DAgger imitates (`robo_rl.runners.dagger`).

    Under several processes (`reducer` of a torch.distributed job) every rank builds its own envs, seeded
    `reducer.world.seed(cfg.seed)`, starts from rank 0's weights and averages its updates with the other ranks;
    only rank 0 evaluates.
    """
    check_device(cfg.task.device)
    task = cfg.task
    world = reducer.world
    _check_distributable(cfg, world.size)
    seed = world.seed(cfg.seed)
    env = chunked(cfg, make_env(task.name, num_envs=task.num_envs, device=task.device, seed=seed, config=task.config))
    if task.action_chunk > 1 and (cfg.hil.real_time or cfg.hil.teleop != "none"):
        raise ValueError("task.action_chunk > 1 does not combine with hil.real_time or hil.teleop yet")
    if cfg.hil.real_time:
        env = RealTimeEnv(env, cfg.hil.rate_hz or None)
    if cfg.hil.teleop != "none":
        env = _with_teleop(cfg, env, make_teleop)
    eval_env = precheck_env = None
    if evaluate and world.is_main:
        eval_env = _evaluation_env(cfg, make_env, cfg.loop.eval_episodes, cfg.seed + EVAL_SEED_OFFSET)
        if cfg.loop.eval_precheck_episodes > 0:
            precheck = cfg.loop.eval_precheck_episodes
            precheck_env = _evaluation_env(cfg, make_env, precheck, cfg.seed + PRECHECK_SEED_OFFSET)
    if algorithm(cfg.algo).needs_costs and cost_spec_of(env) is None:
        raise ValueError(
            f"--algo {cfg.algo} keeps a cost under a budget, and task {task.name!r} declares no cost (with its "
            "config as given); e.g. rc_car/race with --set task.config.cost_speed_limit=2.0"
        )
    torch.manual_seed(cfg.seed)  # network initialization is part of what the seed reproduces
    if cfg.on_policy:
        policy = build_policy(cfg, env)
        prepare_policy(cfg, policy, env)
        broadcast_module(policy, reducer)
        entry = algorithm(cfg.algo)
        limits = {"time_limit": env.max_episode_steps} if entry.needs_costs else {}
        update = entry.build(policy, getattr(cfg, entry.section("build")), reducer=reducer, **limits)
        evaluation = {"eval_env": eval_env, "precheck_env": precheck_env}
        return OnPolicyRunner(env, policy, update, cfg.runner, seed, run=run, reducer=reducer, **evaluation)
    learner = build_off_policy(cfg, env, reducer=reducer)
    for module in algorithm_modules(learner):
        broadcast_module(module, reducer)
    teacher = _teacher(cfg, env, make_teacher)
    return OffPolicyRunner(
        env,
        learner,
        cfg.off_policy,
        seed,
        eval_env=eval_env,
        run=run,
        reducer=reducer,
        precheck_env=precheck_env,
        teacher=teacher,
    )


def _teacher(cfg: ExperimentConfig, env: BatchedEnv, make_teacher: TeacherFactory | None) -> TeacherPolicy | None:
    """DAgger's teacher of `off_policy.teacher`, reading from `env`'s critic input; None without one."""
    source = cfg.off_policy.teacher
    if source is None:
        return None
    if cfg.hil.teleop != "none" or cfg.hil.real_time:
        raise ValueError("off_policy.teacher (DAgger) labels simulated steps: not with hil.teleop or hil.real_time")
    if make_teacher is None:
        raise ValueError("off_policy.teacher needs a teacher loader (robo_rl.api.runs.load_teacher)")
    actor, names = make_teacher(source)
    return TeacherPolicy(actor.to(env.device), names, env)


def algorithm_modules(algorithm: OffPolicyAlgorithm) -> list[nn.Module]:
    """Every network of an off-policy algorithm, once each: its module attributes and those of an algorithm it
    wraps (DrQ's `PixelSAC`: its camera encoder beside the actor and critics of the algorithm inside). What every
    rank must start from identically."""
    found: dict[int, nn.Module] = {}
    for value in vars(algorithm).values():
        if isinstance(value, nn.Module):
            found.setdefault(id(value), value)
        elif OffPolicyAlgorithm in type(value).__mro__:  # an inner algorithm (the protocol is not runtime-checkable)
            found.update((id(module), module) for module in algorithm_modules(value))
    return list(found.values())


def _evaluation_env(cfg: ExperimentConfig, make_env: EnvFactory, episodes: int, seed: int) -> BatchedEnv:
    """An evaluation env of `episodes` parallel episodes with the task's evaluation settings."""
    task = cfg.task
    env = make_env(task.name, num_envs=episodes, device=task.device, seed=seed, config=task.evaluation_config)
    return chunked(cfg, env)


def _check_distributable(cfg: ExperimentConfig, processes: int) -> None:
    if processes == 1:
        return
    if cfg.hil.teleop in ("keyboard", "gamepad", "ros"):
        raise ConfigError(f"hil.teleop={cfg.hil.teleop}: a person drives one process; train it without --nproc")
    if not cfg.on_policy and cfg.off_policy.actor_learner:
        raise ConfigError("off_policy.actor_learner runs in one process; train it without --nproc")


def _with_teleop(cfg: ExperimentConfig, env: BatchedEnv, make_teleop: TeleopFactory | None) -> BatchedEnv:
    if cfg.on_policy:
        off_policy = ", ".join(entry.name for entry in entries() if entry.loop == "off_policy")
        raise ConfigError(
            f"hil.teleop={cfg.hil.teleop}: interventions are off-policy data; use an off-policy algo ({off_policy})"
        )
    if make_teleop is None:
        raise ConfigError(f"hil.teleop={cfg.hil.teleop}: no teleoperation device factory given")
    attach = getattr(env, "attach_teleop", None)
    if attach is not None:  # a robot takes the device in beside teleop_node's topics (robo_rl.robot.RobotEnv)
        attach(make_teleop(cfg, env))
        return env
    return InterventionEnv(env, make_teleop(cfg, env))


def build_off_policy(
    cfg: ExperimentConfig,
    task: BatchedEnv | TaskSpecs,
    device: str | torch.device | None = None,
    cameras: tuple[ImageSpec, ...] = (),
    reducer: Reducer = LOCAL,
) -> OffPolicyAlgorithm:
    """The off-policy algorithm `cfg.algo`, from its registry entry and its config section; for the env's cameras,
    or `cameras` where `task` is a run's recorded specs (which hold none); its gradients averaged by `reducer`."""
    entry = algorithm(cfg.algo)
    if entry.loop != "off_policy":
        raise ValueError(f"algo {cfg.algo!r} is not an off-policy algorithm")
    specs, device = _specs_and_device(task, device)
    bounds = (specs.action.low_tensor(), specs.action.high_tensor())
    cameras = cameras if isinstance(task, TaskSpecs) else image_specs_of(task)
    if cameras and not entry.cameras:
        able = ", ".join(e.name for e in entries() if e.cameras)
        raise ValueError(f"algo {cfg.algo!r} does not learn from cameras (task {cfg.task.name!r} has them); use {able}")
    extra: dict[str, Any] = {"image_specs": cameras} if cameras else {}
    if entry.needs_costs and not isinstance(task, TaskSpecs):
        extra["time_limit"] = task.max_episode_steps
    section = getattr(cfg, entry.section("build"))
    learner: OffPolicyAlgorithm = entry.build(
        specs.obs.dim, specs.critic_obs_dim, *bounds, section, device=device, reducer=reducer, **extra
    )
    return learner


def build_deployable_actor(
    cfg: ExperimentConfig, task: BatchedEnv | TaskSpecs, state: dict[str, Any], device: str | None = None
) -> nn.Module:
    """The deterministic obs → env-action module of a checkpoint `state`, whatever algorithm trained it; `task` is
    an env or the specs its run recorded (no simulator needed)."""
    if cfg.on_policy:
        policy = build_policy(cfg, task, device)
        policy.load_state_dict(state["policy"])
        return policy.deterministic_actor().eval()
    learner = build_off_policy(cfg, task, device, camera_specs_of_policy(state["algorithm"]))
    learner.load_policy_state(state["algorithm"])  # with cameras (DrQ) the encoder comes with the actor
    return learner.deterministic_policy().eval()
