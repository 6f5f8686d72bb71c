"""Training loop for on-policy algorithms (PPO): collect a rollout from a batched env, update, log, save."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from robo_rl.algorithms.ppo import PPO
from robo_rl.distributed import LOCAL, Reducer, rank0_decides
from robo_rl.envs import INFO_FINAL_OBS, INFO_FINAL_PRIVILEGED_OBS, INFO_PRIVILEGED_OBS, INFO_SUCCESS, BatchedEnv
from robo_rl.modules.actor_critic import ActorCritic
from robo_rl.runners.best_policy import BEST_KEY, BestPolicy
from robo_rl.runners.episode_stats import EpisodeTracker
from robo_rl.runners.evaluate import (
    EvalResult,
    eval_metrics,
    evaluate_held_out,
    evaluation_due,
    targets_reached,
)
from robo_rl.runners.run_dir import RunDirectory
from robo_rl.runners.save_schedule import SaveSchedule
from robo_rl.storage import checkpoint
from robo_rl.storage.rollout import RolloutStorage


@dataclass(frozen=True)
class RunnerConfig:
    max_iterations: int = 300
    """Upper bound on collect-and-update iterations."""
    target_return: float | None = None
    """Stop as soon as a deterministic evaluation's mean return reaches this; None trains all iterations."""
    target_success_rate: float | None = None
    """Stop once an evaluation's success rate (tasks that define success) reaches this, e.g. 0.95; with
    target_return too, both must be reached. None: no success target."""
    eval_interval: int = 5
    """Iterations between deterministic evaluations (0: evaluate only at the end)."""
    eval_min_train_success: float | None = None
    """Skip a due periodic evaluation while the success rate of the training episodes that ended since the last
    log is below this (tasks that report success). The stochastic training policy usually does worse than the
    deterministic evaluated one, so set it below the target. None: evaluate whenever due."""
    eval_episodes: int = 100
    """Episodes per evaluation, run in parallel as one batched env."""
    save_interval: int = 50
    """Iterations between numbered checkpoint snapshots; latest.pt is refreshed at every evaluation too."""
    save_every_s: float = 60.0
    """Also refresh latest.pt before more than this many seconds of training would be lost to a crash (SIGKILL,
    power cut). 0: at save_interval and evaluations only."""

    def __post_init__(self) -> None:
        if self.max_iterations < 0 or self.eval_interval < 0 or self.save_interval < 0:
            raise ValueError("max_iterations, eval_interval and save_interval must not be negative")
        if not self.save_every_s >= 0:
            raise ValueError(f"save_every_s must not be negative, got {self.save_every_s}")
        if self.eval_episodes < 1:
            raise ValueError(f"eval_episodes must be at least 1, got {self.eval_episodes}")


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


def critic_observation(obs: torch.Tensor, info: dict[str, torch.Tensor], key: str) -> torch.Tensor:
    """Critic input: the observation, followed by the privileged part when the env provides one."""
    privileged = info.get(key)
    return obs if privileged is None else torch.cat([obs, privileged], dim=-1)


def reset_critic_observation(env: BatchedEnv, obs: torch.Tensor) -> torch.Tensor:
    """Critic input right after `reset`, when there is no step info: the env exposes `privileged_obs`."""
    privileged = getattr(env, "privileged_obs", None)
    return obs if privileged is None else torch.cat([obs, privileged], dim=-1)


class OnPolicyRunner:
    """Owns the env loop of PPO training; the algorithm only sees filled rollout storage.

    Args:
        env: training env.
        policy: actor-critic being trained.
        algorithm: PPO instance wrapping `policy`.
        cfg: loop settings.
        seed: seeds torch and the env stream.
        eval_env: env for deterministic evaluation (its num_envs = episodes per evaluation); None skips it.
        run: run directory to log and checkpoint into; None keeps everything in memory (tests).
    """

    def __init__(
        self,
        env: BatchedEnv,
        policy: ActorCritic,
        algorithm: PPO,
        cfg: RunnerConfig,
        seed: int,
        eval_env: BatchedEnv | None = None,
        run: RunDirectory | None = None,
        reducer: Reducer = LOCAL,
    ) -> None:
        self.env, self.policy, self.algorithm, self.cfg = env, policy, algorithm, cfg
        self.seed, self.eval_env, self.run = seed, eval_env, run
        self.reducer = reducer
        num_steps = algorithm.cfg.num_steps
        self.storage = RolloutStorage(
            num_steps, env.num_envs, env.obs_spec.dim, policy.critic_obs_dim, policy.action_dim, env.device
        )
        self.tracker = EpisodeTracker(env.num_envs, env.device)
        self.iteration = 0
        self.env_steps = 0
        self.wall_time = 0.0
        self.schedule = SaveSchedule(cfg.save_every_s, reducer)
        self.best = BestPolicy()
        """The best evaluation so far; its policy is checkpoints/best.pt."""
        self.stop_requested: Callable[[], bool] = _never
        """Checked before every iteration: True ends training there, as max_iterations would (Ctrl-C)."""
        torch.manual_seed(seed)
        self.obs = env.reset(seed=seed)
        self.critic_obs = reset_critic_observation(env, self.obs)

    @torch.no_grad()
    def collect(self) -> None:
        """Fill the rollout storage with `num_steps` steps of every env."""
        policy, storage, env = self.policy, self.storage, self.env
        value = policy.value(self.critic_obs)
        for _ in range(storage.num_steps):
            action, log_prob, mean, std = policy.act(self.obs)
            next_obs, reward, terminated, truncated, info = env.step(policy.scaler(action))
            done = terminated | truncated
            next_critic = critic_observation(next_obs, info, INFO_PRIVILEGED_OBS)
            final_critic = critic_observation(info[INFO_FINAL_OBS], info, INFO_FINAL_PRIVILEGED_OBS)
            # One critic pass for both: V(next obs) feeds the next step, V(final obs) bootstraps time-outs.
            both = policy.value(torch.cat([next_critic, final_critic]))
            next_value, final_value = both.chunk(2)
            storage.add(
                obs=self.obs,
                critic_obs=self.critic_obs,
                actions=action,
                log_probs=log_prob,
                values=value,
                next_values=torch.where(done, final_value, next_value),
                mean=mean,
                std=std,
                rewards=reward,
                terminated=terminated,
                dones=done,
            )
            self.tracker.record(reward, done, info.get(INFO_SUCCESS))
            self.obs, self.critic_obs, value = next_obs, next_critic, next_value
        self.env_steps += storage.num_steps * env.num_envs

    def update(self) -> dict[str, float]:
        """PPO update on the collected rollout, then fold its observations into the normalizers.

        The statistics change only after the update: the rollout's log-probs and values were computed with the
        old statistics, and changing them first would shift every action distribution (a KL the adaptive
        learning rate would wrongly blame on the update).
        """
        losses = self.algorithm.update(self.storage)
        obs, critic_obs = self.storage.obs.flatten(0, 1), self.storage.critic_obs.flatten(0, 1)
        self.policy.update_normalizers(obs, critic_obs, self.reducer)
        self.storage.clear()
        return losses

    def learn(self, on_iteration: Callable[[dict[str, Any]], None] | None = None) -> TrainResult:
        """Train until `max_iterations` or the target return; returns the summary of the whole run."""
        last_eval: EvalResult | None = None
        reached = False
        self.schedule.start()
        while self.iteration < self.cfg.max_iterations and not reached and not self.stop_requested():
            start = time.perf_counter()
            self.collect()
            losses = self.update()
            self.iteration += 1
            stats = self.tracker.flush()
            evaluation = self._maybe_evaluate(stats.success_rate)
            self.wall_time += time.perf_counter() - start
            if evaluation is not None:
                last_eval = evaluation
                reached = targets_reached(evaluation, self.cfg.target_return, self.cfg.target_success_rate)
                self.best.offer(evaluation, self.iteration, self._policy_state, self._checkpoints())
            # evaluations fall on these iterations whatever the training success: there, rank 0 decides
            possible = evaluation_due(self.iteration, self.cfg.max_iterations, self.cfg.eval_interval)
            reached = rank0_decides(reached, self.reducer, possible)
            metrics = {
                "iteration": self.iteration,
                "env_steps": self.env_steps * self.reducer.world.size,
                "wall_time": self.wall_time,
                "steps_per_s": self.storage.num_steps
                * self.env.num_envs
                * self.reducer.world.size
                / (time.perf_counter() - start),
                "mean_return": stats.mean_return,
                "mean_length": stats.mean_length,
                "episodes": stats.episodes,
                "train_success_rate": stats.success_rate,
                "train_reward_per_step": stats.reward_per_step,
                **eval_metrics(evaluation),
                **losses,
            }
            self._record(metrics, time.perf_counter() - start)
            if on_iteration is not None:
                on_iteration(metrics)
        self._finish()
        steps = self.env_steps * self.reducer.world.size
        return TrainResult(
            self.iteration,
            steps,
            self.wall_time,
            last_eval,
            reached,
            best_iteration=self.best.iteration,
            best_success_rate=self.best.success_rate,
        )

    def _policy_state(self) -> dict[str, Any]:
        """What best.pt needs to rebuild the deterministic actor."""
        return {"policy": self.policy.state_dict()}

    def _checkpoints(self) -> Path | None:
        return None if self.run is None else self.run.checkpoints

    def _maybe_evaluate(self, training_success_rate: float | None) -> EvalResult | None:
        cfg = self.cfg
        due = evaluation_due(
            self.iteration, cfg.max_iterations, cfg.eval_interval, training_success_rate, cfg.eval_min_train_success
        )
        return self.evaluate() if due and self.eval_env is not None else None

    def evaluate(self) -> EvalResult:
        """Deterministic evaluation on the eval env with a fixed seed (same initial states every time)."""
        actor = self.policy.deterministic_actor().eval()
        return evaluate_held_out(self.eval_env, actor, self.seed)

    def _record(self, metrics: dict[str, Any], iteration_s: float) -> None:
        """Log the iteration's row, then checkpoint: a numbered snapshot every save_interval iterations, and
        latest.pt with it, on every evaluation iteration and by the clock (`SaveSchedule`)."""
        if self.run is None:
            return
        self.run.log(metrics)
        cfg = self.cfg
        by_time = self.schedule.due(iteration_s)  # collective: every rank, every iteration
        snapshot = cfg.save_interval > 0 and self.iteration % cfg.save_interval == 0
        # the evaluation grid, whether rank 0 evaluated or skipped: every rank saves on the same iterations
        evaluation = evaluation_due(self.iteration, cfg.max_iterations, cfg.eval_interval)
        if snapshot:
            self.save(self.run.checkpoints / f"model_{self.iteration:06d}.pt")
        if snapshot or evaluation or by_time:
            latest = self.run.latest_checkpoint
            self.schedule.save(lambda: self.save(latest), self.env.device)

    def _finish(self) -> None:
        if self.run is not None:
            self.run.finish(self.save)

    def state_dict(self) -> dict[str, Any]:
        state: dict[str, Any] = {
            "policy": self.policy.state_dict(),
            "algorithm": self.algorithm.state_dict(),
            "iteration": self.iteration,
            "env_steps": self.env_steps,
            "wall_time": self.wall_time,
            "obs": self.obs,
            "critic_obs": self.critic_obs,
            "tracker": self.tracker.state_dict(),
            "torch_rng": torch.get_rng_state(),
            BEST_KEY: self.best.state_dict(),
        }
        if torch.cuda.is_available():
            state["cuda_rng"] = torch.cuda.get_rng_state_all()
        state["env"] = checkpoint.env_state(self.env)
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.policy.load_state_dict(state["policy"])
        self.algorithm.load_state_dict(state["algorithm"])
        self.iteration = int(state["iteration"])
        self.env_steps = int(state["env_steps"])
        self.wall_time = float(state["wall_time"])
        self.obs = state["obs"].to(self.env.device)
        self.critic_obs = state["critic_obs"].to(self.env.device)
        self.tracker.load_state_dict(state["tracker"])
        self.best.load_state_dict(state.get(BEST_KEY), self._checkpoints())
        torch.set_rng_state(state["torch_rng"])
        if "cuda_rng" in state and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state["cuda_rng"])
        checkpoint.restore_env_state(self.env, state.get("env"))

    def save(self, path: Path) -> None:
        """Write a checkpoint to `path` atomically; a latest.pt keeps the file it replaces as previous.pt."""
        checkpoint.save_checkpoint(self.state_dict(), path)

    def load(self, path: Path) -> None:
        """Restore a checkpoint; CheckpointError naming the file when it is damaged, before anything changes."""
        self.load_state_dict(checkpoint.load(path, self.env.device, required=("iteration",)))


def _never() -> bool:
    return False
