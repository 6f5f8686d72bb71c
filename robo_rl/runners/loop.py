"""The training loop both runners share: stop conditions, timing, evaluation cadence, the best policy, agreement
across processes, the metrics row, the run directory's log and checkpoint cadence, and the checkpoint state every
runner has. A runner (`OnPolicyRunner`, `OffPolicyRunner`) plugs in one iteration of collecting and updating, its
own metrics, its deterministic actor, its policy for best.pt, its checkpoint state and its `Cadence`.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

import torch
from torch import nn

from robo_rl.capture import CaptureBackend
from robo_rl.distributed import Reducer, rank0_decides
from robo_rl.envs import BatchedEnv, ImageObs, capturable
from robo_rl.runners.best_policy import BEST_KEY, BestPolicy
from robo_rl.runners.captured_evaluation import CapturedEvaluation
from robo_rl.runners.episode_stats import EpisodeStats, EpisodeTracker
from robo_rl.runners.evaluate import (
    EVAL_SEED_OFFSET,
    PRECHECK_SEED_OFFSET,
    EvalResult,
    eval_metrics,
    evaluate,
    evaluation_due,
    targets_reached,
)
from robo_rl.runners.gate_test import SequentialGate
from robo_rl.runners.loop_config import LoopConfig
from robo_rl.runners.observations import critic_observation as critic_observation
from robo_rl.runners.observations import reset_critic_observation
from robo_rl.runners.run_dir import RunLog
from robo_rl.runners.save_schedule import SaveSchedule
from robo_rl.storage import checkpoint


@dataclass(frozen=True)
class TrainResult:
    iterations: int
    env_steps: int
    wall_time: float
    """Seconds spent training (collection, updates and evaluations), summed across resumes."""
    final_eval: EvalResult | None
    reached_target: bool
    estop: bool = False
    """The operator pressed the e-stop (robo_rl.hil.InterventionEnv), which ended training."""
    best_iteration: int | None = None
    """Iteration of the best evaluation (the policy in checkpoints/best.pt); None without evaluations."""
    best_success_rate: float | None = None
    """Success rate of that evaluation (tasks that define success)."""


class IterationStopped(Exception):
    """Raised by a runner's `_train_iteration` where `stop_requested` turned True before the iteration completed (an
    on-policy rollout checks it before each step): `learn` then ends as before the iteration, which leaves no trace
    beyond the env steps already taken."""


def observation_to(obs: torch.Tensor | ImageObs, device: torch.device) -> Any:
    """`obs` (a tensor, or a camera env's dict of them) on `device`."""
    if isinstance(obs, dict):
        return {name: tensor.to(device) for name, tensor in obs.items()}
    return obs.to(device)


def random_state(cuda_available: bool) -> dict[str, Any]:
    """torch's global random state (`torch_rng`), and every CUDA device's (`cuda_rng`) when `cuda_available`."""
    state: dict[str, Any] = {"torch_rng": torch.get_rng_state()}
    if cuda_available:
        state["cuda_rng"] = torch.cuda.get_rng_state_all()
    return state


def restore_random_state(state: dict[str, Any], cuda_available: bool) -> None:
    """Restore what `random_state` saved; the CUDA state only when saved (older checkpoints lack it) and available."""
    torch.set_rng_state(state["torch_rng"])
    if cuda_available and "cuda_rng" in state:
        torch.cuda.set_rng_state_all(state["cuda_rng"])


def on_interval(iteration: int, interval: int) -> bool:
    """Whether `iteration` is a multiple of `interval` (0: never)."""
    return interval > 0 and iteration % interval == 0


class RunnerSettings(Protocol):
    """What the shared loop needs of a runner's config (`RunnerConfig`, `OffPolicyRunnerConfig`): its `loop`."""

    @property
    def loop(self) -> LoopConfig: ...


class Cadence(Protocol):
    """When a runner produces a metrics row, logs it and writes checkpoints (besides the clock's saves)."""

    def row_due(self, iteration: int, cfg: LoopConfig, callback: bool, run: bool) -> bool:
        """Whether `iteration` produces a metrics row, which flushes the episode statistics and is the only place
        an evaluation may happen. `callback`: `learn` was given one; `run`: a run directory is attached."""
        ...

    def logs(self, iteration: int, evaluated: bool) -> bool:
        """Whether the row goes to the run directory's log."""
        ...

    def snapshot_due(self, iteration: int, cfg: LoopConfig) -> bool:
        """Whether to write the numbered checkpoint model_XXXXXX.pt (and latest.pt with it)."""
        ...

    def latest_due(self, iteration: int, cfg: LoopConfig) -> bool:
        """Whether to refresh latest.pt on this iteration's count."""
        ...


ConfigT = TypeVar("ConfigT", bound=RunnerSettings)
Losses = Mapping[str, float | torch.Tensor]
"""An iteration's losses; tensors (no host sync per update) are read only when a metrics row is made."""


class TrainingLoop(ABC, Generic[ConfigT]):
    """The state and the loop every runner shares; a runner implements the abstract methods, then calls
    `_reset_env` last in its constructor.

    Args:
        env: training env.
        cfg: the runner's config; the loop reads its `loop` settings.
        seed: seeds torch and the env stream.
        eval_env: env for deterministic evaluation (its num_envs = episodes per evaluation); None skips it.
        run: run directory to log and checkpoint into; None keeps everything in memory (tests).
        reducer: the processes' collectives; rank 0 alone evaluates and decides for every rank.
        cadence: when rows are produced and logged, and checkpoints written.
        precheck_env: the env of the evaluation's pre-check (`LoopConfig.eval_precheck_episodes`), or None.
    """

    obs: torch.Tensor
    critic_obs: torch.Tensor

    def __init__(
        self,
        env: BatchedEnv,
        cfg: ConfigT,
        seed: int,
        eval_env: BatchedEnv | None,
        run: RunLog | None,
        reducer: Reducer,
        cadence: Cadence,
        precheck_env: BatchedEnv | None = None,
    ) -> None:
        self.env, self.cfg, self.seed = env, cfg, seed
        self.eval_env, self.run, self.reducer, self.cadence = eval_env, run, reducer, cadence
        self.precheck_env = precheck_env
        self._precheck_rate: float | None = None
        """This iteration's pre-check success rate (None where none ran)."""
        self.tracker = EpisodeTracker(env.num_envs, env.device)
        self.iteration = self.env_steps = 0
        self.wall_time = 0.0
        self.schedule = SaveSchedule(cfg.loop.save_every_s, reducer)
        self.best = BestPolicy(self.cfg.loop.max_eval_cost)
        """The best evaluation so far; its policy is checkpoints/best.pt."""
        self.stop_requested: Callable[[], bool] = _never
        """Checked before every iteration (and by an on-policy rollout before each step): True ends training there,
        as max_iterations would (Ctrl-C, SIGTERM)."""
        self.capture_backend: CaptureBackend | None = None
        """Set by a runner whose `capture` setting is on: evaluations of a capturable eval env then run as one
        captured graph (`robo_rl.runners.captured_evaluation.CapturedEvaluation`)."""
        self._captured_evaluations: dict[int, CapturedEvaluation] = {}
        """The captured evaluation of each evaluation env (by id), built at its first evaluation."""

    def _reset_env(self) -> None:
        """Seed torch and reset the training env: the last step of building a runner."""
        torch.manual_seed(self.seed)
        self.obs = self.env.reset(seed=self.seed)
        self.critic_obs = reset_critic_observation(self.env, self.obs)

    @abstractmethod
    def _train_iteration(self) -> Losses:
        """Collect and update once; the update's losses."""

    @abstractmethod
    def _steps_per_s(self, iteration_s: float) -> float:
        """The row's `steps_per_s`, all processes together, after an iteration of `iteration_s` seconds."""

    def _extra_metrics(self) -> dict[str, Any]:
        """The runner's own columns of the row, after the training episodes' statistics."""
        return {}

    @abstractmethod
    def _deterministic_actor(self) -> nn.Module:
        """The actor that evaluations run."""

    @abstractmethod
    def _policy_state(self) -> dict[str, Any]:
        """What best.pt needs to rebuild the deterministic actor."""

    @abstractmethod
    def save(self, path: Path) -> None:
        """Write a checkpoint to `path`."""

    def learn(self, on_iteration: Callable[[dict[str, Any]], None] | None = None) -> TrainResult:
        """Train until max_iterations, the targets, the operator's e-stop or `stop_requested`; returns the summary
        of the whole run. `on_iteration` gets every metrics row."""
        last_eval: EvalResult | None = None
        reached = False
        self.schedule.start()
        while not self._stops(reached):
            start = time.perf_counter()
            try:
                losses = self._train_iteration()
            except IterationStopped:  # a stop request inside the iteration: it ends incomplete, nothing of it kept
                self.wall_time += time.perf_counter() - start
                break
            self.iteration += 1
            row = self.cadence.row_due(self.iteration, self.cfg.loop, on_iteration is not None, self.run is not None)
            stats = self.tracker.flush() if row else None
            evaluation = self._maybe_evaluate(stats)
            self.wall_time += time.perf_counter() - start
            metrics = None
            if stats is not None:
                if evaluation is not None:
                    last_eval = evaluation
                    loop = self.cfg.loop
                    reached = targets_reached(
                        evaluation, loop.target_return, loop.target_success_rate, loop.max_eval_cost
                    )
                    self.best.offer(evaluation, self.iteration, self._policy_state, self._checkpoints())
                reached = self._agree(reached)
                metrics = self._metrics(stats, evaluation, losses, time.perf_counter() - start)
                self._log(metrics, evaluation is not None)
            self._save_if_due(time.perf_counter() - start)
            if metrics is not None and on_iteration is not None:
                on_iteration(metrics)
        self._finish()
        return TrainResult(
            self.iteration,
            self.env_steps * self.reducer.world.size,
            self.wall_time,
            last_eval,
            reached,
            self._estop(),
            best_iteration=self.best.iteration,
            best_success_rate=self.best.success_rate,
        )

    def evaluate(self) -> EvalResult:
        """Deterministic evaluation on the eval env with a fixed seed (same initial states every time); with
        `eval_sequential` and a success target alone, stopped as soon as the gate is decided."""
        gate = None
        loop = self.cfg.loop
        target = loop.target_success_rate
        if loop.eval_sequential and target is not None and loop.target_return is None and loop.max_eval_cost is None:
            gate = SequentialGate(target=target)
        if self.eval_env is None:
            raise RuntimeError("no evaluation env was given to the runner")
        return self._evaluate_on(self.eval_env, self.seed + EVAL_SEED_OFFSET, gate)

    def _evaluate_on(self, env: BatchedEnv, seed: int, gate: SequentialGate | None = None) -> EvalResult:
        """`evaluate` on `env` from the initial states of `seed`; as one captured graph where capture is on and the
        env is capturable, built at its first evaluation (its actor shares the parameters)."""
        if self.capture_backend is None or not capturable(env):
            return evaluate(env, self._deterministic_actor().eval(), seed=seed, gate=gate)
        captured = self._captured_evaluations.get(id(env))
        if captured is None:
            actor = self._deterministic_actor().eval()
            captured = self._captured_evaluations[id(env)] = CapturedEvaluation(env, actor, self.capture_backend)
        return captured(seed, gate)

    def _stops(self, reached: bool) -> bool:
        return self.iteration >= self.cfg.loop.max_iterations or reached or self._estop() or self.stop_requested()

    def _estop(self) -> bool:
        """The operator's e-stop (an InterventionEnv's `estop`) ends training."""
        return bool(getattr(self.env, "estop", False))

    def _checkpoints(self) -> Path | None:
        return None if self.run is None else self.run.checkpoints

    def _maybe_evaluate(self, stats: EpisodeStats | None) -> EvalResult | None:
        """Evaluate on a row's iteration of the evaluation grid, unless the training success is below
        eval_min_train_success; never without an eval env (ranks other than 0)."""
        cfg = self.cfg.loop
        self._precheck_rate = None
        if stats is None or self.eval_env is None:
            return None
        due = evaluation_due(
            self.iteration, cfg.max_iterations, cfg.eval_interval, stats.success_rate, cfg.eval_min_train_success
        )
        return self.evaluate() if due and self._precheck_passes() else None

    def _precheck_passes(self) -> bool:
        """The evaluation's pre-check (`LoopConfig.eval_precheck_episodes`): True where none applies (no pre-check
        env, no success target, the final evaluation, a task without success), else whether the deterministic
        policy's success on the pre-check episodes reaches the target less the margin. It stops as soon as its
        outcome is certain (`SequentialGate.certain`: a failing policy after its first few crashes, not after whole
        episodes); its rate is recorded where it ran to the end."""
        cfg = self.cfg.loop
        if self.precheck_env is None or cfg.target_success_rate is None or self.iteration >= cfg.max_iterations:
            return True
        threshold = cfg.target_success_rate - cfg.eval_precheck_margin
        gate = SequentialGate(target=threshold, margin=threshold / 2) if 0.0 < threshold < 1.0 else None
        result = self._evaluate_on(self.precheck_env, self.seed + PRECHECK_SEED_OFFSET, gate)
        if result.decision is not None and len(result.returns) < self.precheck_env.num_envs:
            return result.decision == "pass"  # stopped early: the outcome is certain, the rate is not known
        self._precheck_rate = rate = result.success_rate
        return rate is None or rate >= threshold

    def _agree(self, reached: bool) -> bool:
        """Rank 0's `reached` on every rank on the evaluation grid, where rank 0 may have evaluated (whatever the
        training success); this rank's own elsewhere."""
        loop = self.cfg.loop
        possible = evaluation_due(self.iteration, loop.max_iterations, loop.eval_interval)
        return rank0_decides(reached, self.reducer, possible)

    def _metrics(
        self, stats: EpisodeStats, evaluation: EvalResult | None, losses: Losses, iteration_s: float
    ) -> dict[str, Any]:
        return {
            "iteration": self.iteration,
            "env_steps": self.env_steps * self.reducer.world.size,
            "wall_time": self.wall_time,
            "steps_per_s": self._steps_per_s(iteration_s),
            "mean_return": stats.mean_return,
            "mean_length": stats.mean_length,
            "episodes": stats.episodes,
            "train_success_rate": stats.success_rate,
            "train_reward_per_step": stats.reward_per_step,
            "train_cost": stats.mean_cost,
            **self._extra_metrics(),
            **eval_metrics(evaluation),
            **({} if self._precheck_rate is None else {"eval_precheck_success_rate": self._precheck_rate}),
            **{name: float(value) for name, value in losses.items()},  # a tensor is read here, on a row only
        }

    def _log(self, metrics: dict[str, Any], evaluated: bool) -> None:
        if self.run is not None and self.cadence.logs(self.iteration, evaluated):
            self.run.log(metrics)

    def _save_if_due(self, iteration_s: float) -> None:
        """After the iteration's row (so that a resumed run's rows stop where its checkpoint does): a numbered
        snapshot and latest.pt as the cadence says, and latest.pt by the clock (`SaveSchedule`)."""
        if self.run is None:
            return
        by_time = self.schedule.due(iteration_s)  # collective: every rank, every iteration
        snapshot = self.cadence.snapshot_due(self.iteration, self.cfg.loop)
        if snapshot:
            self.save(self.run.checkpoints / f"model_{self.iteration:06d}.pt")
        if snapshot or by_time or self.cadence.latest_due(self.iteration, self.cfg.loop):
            latest = self.run.latest_checkpoint
            self.schedule.save(lambda: self.save(latest), self.env.device)

    def _finish(self) -> None:
        if self.run is not None:
            self.run.finish(self.save)

    def loop_state(self) -> dict[str, Any]:
        """The checkpoint state every runner has; a runner's `state_dict` adds its own."""
        return {
            "iteration": self.iteration,
            "env_steps": self.env_steps,
            "wall_time": self.wall_time,
            "obs": self.obs,
            "critic_obs": self.critic_obs,
            "tracker": self.tracker.state_dict(),
            **random_state(torch.cuda.is_available()),
            BEST_KEY: self.best.state_dict(),
            "env": checkpoint.env_state(self.env),
        }

    def load_loop_state(self, state: dict[str, Any]) -> None:
        """Restore what `loop_state` saved."""
        self.iteration = int(state["iteration"])
        self.env_steps = int(state["env_steps"])
        self.wall_time = float(state["wall_time"])
        self.obs = observation_to(state["obs"], self.env.device)
        self.critic_obs = state["critic_obs"].to(self.env.device)
        self.tracker.load_state_dict(state["tracker"])
        self.best.load_state_dict(state.get(BEST_KEY), self._checkpoints())
        restore_random_state(state, torch.cuda.is_available())
        checkpoint.restore_env_state(self.env, state.get("env"))


def _never() -> bool:
    return False
