"""The full configuration of a training run, and presets for it.

A run is described by one `ExperimentConfig`; YAML files map onto it (see `robo_rl.config`), and the
resolved config is written into the run directory.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

from robo_rl.algorithms.dsrl import DSRLConfig
from robo_rl.algorithms.fql import FQLConfig
from robo_rl.algorithms.ppo import PPOConfig
from robo_rl.algorithms.registry import algorithm
from robo_rl.algorithms.reinflow import ReinFlowTrainConfig
from robo_rl.algorithms.sac import SACConfig
from robo_rl.algorithms.td3 import TD3Config
from robo_rl.chunks.spec import check_horizon
from robo_rl.hil.config import HilConfig
from robo_rl.modules.actor_critic import PolicyConfig
from robo_rl.runners.off_policy import OffPolicyRunnerConfig
from robo_rl.runners.on_policy import RunnerConfig

Algorithm = str
"""A registered algorithm name (`robo_rl.algorithms.registry`)."""


MAX_NUM_ENVS = 2**20
"""The most parallel environments a config may ask for: far above what a GPU trains (Isaac Lab: 4,096-65,536), below
what takes a machine's memory before the first step (`--set task.num_envs=1e9` did, instead of an error)."""


@dataclass(frozen=True)
class TaskConfig:
    name: str = "pendulum"
    """Registered task name (`robo-rl tasks` lists them)."""
    num_envs: int = 1024
    """Parallel environments stepped as one batch."""
    device: str = "cpu"
    """Torch device for the env, the rollout storage and the networks: cpu, cuda, cuda:1, ..."""
    params: tuple[str, ...] = ()
    """Settings of the task's own config as "key=value" strings, nested keys dotted, e.g.
    ["position_weight=10", "randomization.mass=0.2"] (see the task's config class for the keys)."""
    eval_params: tuple[str, ...] = ()
    """More "key=value" settings for evaluation only (the runner's evaluations and `robo-rl eval`), applied after
    `params`: held-out ranges wider than the training ranges, or a curriculum switched off."""
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
    def evaluation_params(self) -> tuple[str, ...]:
        """Task settings of the evaluation env: `params`, then `eval_params`."""
        return (*self.params, *self.eval_params)


@dataclass(frozen=True)
class ExperimentConfig:
    name: str = "pendulum_ppo"
    """Experiment name; runs go to RUNS_ROOT/name/<timestamp>-seed<seed>."""
    seed: int = 0
    """Seeds network initialization, action sampling and the env stream."""
    algo: Algorithm = "ppo"
    """Which algorithm trains (`robo_rl.algorithms.registry`): ppo (uses policy, ppo, runner), reinflow (a flow
    policy cloned from demonstrations, fine-tuned by PPO: reinflow, ppo, runner), or sac / td3 / fql (flow
    Q-learning: a flow policy from demonstrations, fine-tuned by Q) / dsrl (SAC steering the noise of a frozen flow
    policy) with their section and off_policy."""
    task: TaskConfig = field(default_factory=TaskConfig)
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    ppo: PPOConfig = field(default_factory=PPOConfig)
    runner: RunnerConfig = field(default_factory=RunnerConfig)
    sac: SACConfig = field(default_factory=SACConfig)
    td3: TD3Config = field(default_factory=TD3Config)
    fql: FQLConfig = field(default_factory=FQLConfig)
    dsrl: DSRLConfig = field(default_factory=DSRLConfig)
    reinflow: ReinFlowTrainConfig = field(default_factory=ReinFlowTrainConfig)
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
        """Config section holding the training loop's settings (max_iterations, target_return, ...)."""
        return algorithm(self.algo).loop_section

    @property
    def on_policy(self) -> bool:
        """Whether the on-policy runner (rollouts, `runner` section) trains it, rather than the replay runner."""
        return algorithm(self.algo).loop == "on_policy"


def pendulum_ppo() -> ExperimentConfig:
    """PPO on the batched pendulum, tuned for wall-clock to a mean return of -200 on a 2-core CPU.

    Short rollouts of few envs (256 x 16 = 4096 samples per update) gave the fastest wall-clock in a sweep over
    64..2048 envs and 8..32 steps (docs/BENCHMARKS.md); gamma 0.9 was less reliable than 0.95. A small entropy
    bonus (0.005) keeps exploring: without it 2 of 24 seeds with one torch thread (the 2-core default) never swung
    up within 150 iterations, seed 0 among them (not in 300 either); with it 1 of 24, and seed 0 passes with 1 and
    2 threads.
    """
    return ExperimentConfig(
        name="pendulum_ppo",
        task=TaskConfig(name="pendulum", num_envs=256),
        ppo=PPOConfig(
            num_steps=16,
            gamma=0.95,
            lam=0.95,
            num_epochs=5,
            num_minibatches=4,
            value_clip=False,
            entropy_coef=0.005,
        ),
        runner=RunnerConfig(max_iterations=300, target_return=-200.0, eval_interval=5),
    )


def _networks(algo: Algorithm, actor_hidden: tuple[int, ...], critic_hidden: tuple[int, ...]) -> dict[str, Any]:
    """`algo`'s config section (found in the registry) with these actor and critic widths, and its flow (where its
    config has one) as wide as the actor; `ExperimentConfig(**...)` leaves the other sections at their defaults."""
    section = algorithm(algo).config
    widths = {"actor_hidden": actor_hidden, "critic_hidden": critic_hidden, "flow_hidden": actor_hidden}
    names = {item.name for item in fields(section)}
    missing = {"actor_hidden", "critic_hidden"} - names
    if missing:
        raise ValueError(f"algo {algo!r}: its config {section.__name__} has no {', '.join(sorted(missing))}")
    return {algo: section(**{name: width for name, width in widths.items() if name in names})}


def _pendulum_off_policy(algo: Algorithm) -> ExperimentConfig:
    """One pendulum, one update per env step, 64-64 networks, stop at a mean return of -200."""
    return ExperimentConfig(
        name=f"pendulum_{algo}",
        algo=algo,
        task=TaskConfig(name="pendulum", num_envs=1),
        **_networks(algo, actor_hidden=(64, 64), critic_hidden=(64, 64)),
        off_policy=OffPolicyRunnerConfig(
            max_iterations=20_000, learning_starts=1_000, batch_size=64, target_return=-200.0, eval_interval=1_000
        ),
    )


def pendulum_sac() -> ExperimentConfig:
    """SAC on one pendulum; reaches -200 in about 4k env steps."""
    return _pendulum_off_policy("sac")


def pendulum_td3() -> ExperimentConfig:
    """TD3 on one pendulum; reaches -200 in about 7k env steps."""
    return _pendulum_off_policy("td3")


def pendulum_fql() -> ExperimentConfig:
    """FQL on one pendulum from scratch (no demonstrations, so its flow clones the replay data); FQL is meant for
    training from demonstrations (point_obstacle_fql), this is the smallest setting that runs it."""
    cfg = _pendulum_off_policy("fql")
    return replace(cfg, fql=replace(cfg.fql, flow_data="all"))


def _point_obstacle_off_policy(algo: Algorithm) -> ExperimentConfig:
    """The multimodal point/obstacle task (pass the obstacle left or right): 16 envs, 128-128 networks, 2
    updates of 256 per step, evaluations of 200 episodes every 250 iterations, stop at 95 % success.
    Demonstrations come from `robo-rl record-demos point/obstacle` and `--set off_policy.prior_buffer=FILE`."""
    return ExperimentConfig(
        name=f"point_obstacle_{algo}",
        algo=algo,
        task=TaskConfig(name="point/obstacle", num_envs=16),
        **_networks(algo, actor_hidden=(128, 128), critic_hidden=(128, 128)),
        off_policy=OffPolicyRunnerConfig(
            max_iterations=20_000,
            learning_starts=1_000,
            updates_per_step=2,
            batch_size=256,
            target_success_rate=0.95,
            eval_interval=250,
            eval_episodes=200,
        ),
    )


def point_obstacle_sac() -> ExperimentConfig:
    return _point_obstacle_off_policy("sac")


def point_obstacle_fql() -> ExperimentConfig:
    return _point_obstacle_off_policy("fql")


def point_obstacle_dsrl() -> ExperimentConfig:
    return _point_obstacle_off_policy("dsrl")


def point_obstacle_reinflow() -> ExperimentConfig:
    """ReinFlow on point/obstacle: the flow (128-128) cloned for 4,000 steps on `reinflow.demos`, then PPO with K = 4
    noisy steps on 64 envs x 32 steps, the learning rate at most 3e-4 (the adaptive schedule only lowers it: while
    the actor is frozen the KL is zero and the schedule would otherwise climb to its 1e-2 maximum), 3 warm-up
    iterations, evaluations of 200 episodes every 5 iterations, stop at 95 % success.
    `robo-rl record-demos point/obstacle -o demos.npz`, then `--set reinflow.demos=demos.npz`."""
    return ExperimentConfig(
        name="point_obstacle_reinflow",
        algo="reinflow",
        task=TaskConfig(name="point/obstacle", num_envs=64),
        reinflow=ReinFlowTrainConfig(),
        ppo=PPOConfig(num_steps=32, learning_rate=3e-4, max_learning_rate=3e-4),
        runner=RunnerConfig(max_iterations=200, eval_interval=5, eval_episodes=200, target_success_rate=0.95),
    )


HOVER_TRAINING = (
    "position_integral_limit=0.5",
    "integral_weight=4",
    "alive_reward=3",
    "distance_weight=3",
    "randomization.thrust_coefficient=0.15",
)
"""Training settings of `quadrotor_hover_ppo` (task params of quadrotor/hover on the identified Crazyflie 2.1):
the integral of the position error in the observation and a penalty on it (a steady offset winds it up), and a
thrust curve drawn within +-15 % per episode, so that the policy learns integral action instead of a memorized
hover command; a larger pull toward the target within its last centimetres (distance_weight 3, alive_reward 3 so
that the reward per step stays positive 0.5 m away)."""
HOVER_EVALUATION = ("backend=auto", "randomization.thrust_coefficient=0")
"""Evaluation of `quadrotor_hover_ppo`: the nominal frame, on the numba step where it applies."""


def quadrotor_hover_ppo() -> ExperimentConfig:
    """PPO on the batched Crazyflie hover task (direct motor commands, the identified Crazyflie 2.1 of L2F), stopping
    at the hover success gate: >= 95 % of 1000 evaluation episodes (5 s from random states) without a crash and with
    a mean position error below 0.10 m over the last second.

    The policy sees the integral of its position error (`HOVER_TRAINING`): this model's propellers spin down 4.5x
    slower than they spin up, so exploration noise raises the mean thrust, and a policy without integral action
    that passes the gate while exploring sags 8-9 cm below the target once it acts deterministically (measured).
    A small initial action noise (log-std -1) keeps the stochastic and deterministic policies close, 4 epochs, and
    the 1000-episode evaluation runs at any iteration where at least half of the training episodes already pass the
    gate, on the numba step (`backend=auto`, 2-3x cheaper evaluations; docs/BENCHMARKS.md).
    """
    return ExperimentConfig(
        name="quadrotor_hover_ppo",
        task=TaskConfig(name="quadrotor/hover", num_envs=1024, params=HOVER_TRAINING, eval_params=HOVER_EVALUATION),
        policy=PolicyConfig(init_log_std=-1.0),
        ppo=PPOConfig(num_steps=16, gamma=0.99, lam=0.95, num_epochs=4, num_minibatches=4, value_clip=False),
        runner=RunnerConfig(
            max_iterations=1000,
            target_success_rate=0.95,
            eval_interval=1,
            eval_min_train_success=0.5,
            eval_episodes=1000,
        ),
    )


def _quadrotor_hover_off_policy(algo: Algorithm) -> ExperimentConfig:
    """SAC / TD3 on the hover task: 64 envs, 2 updates of 512 transitions per batched step, 64-64 actor,
    128-128 critics on the privileged observation, the same 1000-episode gate as the PPO preset (on the numba
    step, as there). A first setting, not tuned (the PPO preset is the fast one; docs/BENCHMARKS.md has the
    comparison)."""
    return ExperimentConfig(
        name=f"quadrotor_hover_{algo}",
        algo=algo,
        task=TaskConfig(name="quadrotor/hover", num_envs=64, eval_params=("backend=auto",)),
        **_networks(algo, actor_hidden=(64, 64), critic_hidden=(128, 128)),
        off_policy=OffPolicyRunnerConfig(
            max_iterations=100_000,
            learning_starts=10_000,
            updates_per_step=2,
            batch_size=512,
            buffer_capacity=2_000_000,
            target_success_rate=0.95,
            eval_interval=250,
            eval_min_train_success=0.5,
            eval_episodes=1000,
        ),
    )


def quadrotor_hover_sac() -> ExperimentConfig:
    return _quadrotor_hover_off_policy("sac")


def quadrotor_hover_td3() -> ExperimentConfig:
    return _quadrotor_hover_off_policy("td3")


def quadrotor_track_ppo() -> ExperimentConfig:
    """PPO on the figure-eight tracking task (motor commands), with the hover preset's settings; gate: >= 95 % of
    1000 episodes without a crash and within 0.10 m of the moving reference over the last second."""
    base = quadrotor_hover_ppo()
    return replace(
        base,
        name="quadrotor_track_ppo",
        task=TaskConfig(name="quadrotor/track", num_envs=1024),
        runner=replace(base.runner, max_iterations=1500, eval_interval=10),
    )


HOVER_ROBUST_TRAINING = (
    "action_history=3",
    "position_integral_limit=0.5",
    "integral_weight=4",
    "alive_reward=3",
    "distance_weight=3",
    "attitude_weight=1",
    "randomization.mass=0.15",
    "randomization.inertia_scale=[0.4, 1.3]",
    "randomization.thrust_to_weight=[1.4, 2.3]",
    "randomization.thrust_curve_quadratic=[0.25, 1.0]",
    "randomization.battery_sag=0.05",
    "randomization.torque_coefficient=0.3",
    "randomization.motor_rise_time_constant=[0.03, 0.08]",
    "randomization.motor_fall_time_constant=[0.05, 0.3]",
    "randomization.max_action_latency=2",
    "randomization.position_noise=0.005",
    "randomization.velocity_noise=0.02",
    "randomization.angular_velocity_noise=0.05",
    "randomization.disturbance_force=0.03",
    "randomization.disturbance_torque=0.000005",
    "curriculum.steps=1000",
)
"""Training ranges of `quadrotor_hover_robust_ppo` (task params of quadrotor/hover on the identified Crazyflie 2.1),
chosen from the spread of identified Crazyflies rather than around one nominal: inertia 0.4-1.3x this frame's
(1.0-3.2x the 2023 bare model's 3.85e-6), thrust-to-weight 1.4-2.3 with curves from half linear to quadratic (hover
commands 0.50-0.85: 62-105 % of this frame's 0.806), motor rise 30-80 ms (L2F: 40-80 ms from the manufacturer's
plot) and fall 50-300 ms (L2F: 249 ms, 4.5x its rise), torque per thrust +-30 %, 0-20 ms latency (the Crazyflie's
on-board loop), sensor noise and disturbances; the integral of the position error gives integral action."""
HOVER_HELD_OUT = (
    "randomization.min_action_latency=2",
    "randomization.max_action_latency=2",
    "curriculum.steps=0",
)
"""Evaluation of `quadrotor_hover_robust_ppo`: the whole training ranges (no curriculum) with a fixed 20 ms (2-step)
action latency (training draws 0-20 ms)."""


def quadrotor_hover_robust_ppo() -> ExperimentConfig:
    """PPO on the hover task with domain randomization over the spread of identified Crazyflies (inertia, thrust
    curve and thrust-to-weight, motor rise and fall, torque per thrust, latency, sensor noise, disturbances) and a
    curriculum on the ranges, for transfer to a real frame; evaluated and gated on the whole ranges with a fixed
    20 ms latency (`HOVER_HELD_OUT`)."""
    base = quadrotor_hover_ppo()
    return replace(
        base,
        name="quadrotor_hover_robust_ppo",
        task=replace(base.task, params=HOVER_ROBUST_TRAINING, eval_params=HOVER_HELD_OUT),
        # The action noise keeps a floor of 0.08 (log-std -2.5): without it the noise shrank to 0.03, the adaptive
        # learning rate (KL ~ step^2 / std^2) shrank with it to 1e-4, and the held-out success stalled at 88-92 %
        # (docs/BENCHMARKS.md, robustness section).
        policy=replace(base.policy, min_log_std=-2.5),
        runner=replace(base.runner, max_iterations=4000, eval_interval=25, eval_min_train_success=0.5),
    )


RC_CAR_RACE_TRAINING = ("off_track_margin=-0.15", "off_track_penalty=10")
"""Training settings of `rc_car_race_ppo` (task params of rc_car/race): the CoG must stay 0.15 m inside the
borders (about the car's half width), a safety margin for the evaluation, which allows the whole track."""
RC_CAR_RACE_EVALUATION = ("off_track_margin=0", "success_laps=4", "backend=auto")
"""Evaluation of `rc_car_race_ppo`: success is 4 laps within the 30 s episode without leaving the track, from a
random start, on the numba step where it applies (the same outcomes, about 5x cheaper). The drive action is the
ESC's speed setpoint, at most 5 m/s (the rc_car profile's scale): a 33.6 m kidney lap takes at least 6.7 s, so 4
laps (134 m) leave about 3 s for the corners and the start. Pure pursuit (`robo_rl.sim.rc_car.pure_pursuit`) laps
in 7.3 s there, about 4 laps in 30 s."""


def rc_car_race_ppo() -> ExperimentConfig:
    """PPO on the RC car race (F1TENTH-class car, kidney track, 20 ms latency, the drive action a speed setpoint
    of the ESC's speed loop, at most 5 m/s): fast laps without leaving the track. Stops when all 100 evaluation
    episodes succeed (`RC_CAR_RACE_EVALUATION`: 4 laps in 30 s, no off-track event).

    Seeds 0-2 reached that gate at iterations 30, 30 and 60 (41-75 s of training on a loaded 2-core CPU), with
    flying laps of 6.77, 6.98 and 7.17 s against pure pursuit's 7.30 s (the 5 m/s limit allows 6.72 s) and no
    off-track event in 200 laps each (`bench/rc_car.py --run`).
    """
    return ExperimentConfig(
        name="rc_car_race_ppo",
        task=TaskConfig(
            name="rc_car/race", num_envs=1024, params=RC_CAR_RACE_TRAINING, eval_params=RC_CAR_RACE_EVALUATION
        ),
        policy=PolicyConfig(actor_hidden=(128, 128), critic_hidden=(128, 128), init_log_std=-0.5),
        ppo=PPOConfig(num_steps=32, gamma=0.99, lam=0.95, num_epochs=5, num_minibatches=4, value_clip=False),
        runner=RunnerConfig(
            max_iterations=300, target_success_rate=1.0, eval_interval=10, eval_min_train_success=0.9, eval_episodes=100
        ),
    )


def mujoco_arm_reach_ppo() -> ExperimentConfig:
    """PPO on the MuJoCo 4-DoF arm reaching random targets with joint-position commands; stops at a mean return
    of -10 (sum over 150 steps of -distance in m, +1 per step within 2 cm: about 7 cm mean distance over the
    episode, the approach from the home pose included)."""
    return ExperimentConfig(
        name="mujoco_arm_reach_ppo",
        task=TaskConfig(name="mujoco/arm_reach", num_envs=64, params=("action_mode=position",)),
        ppo=PPOConfig(num_steps=50, gamma=0.98, lam=0.95, num_epochs=5, num_minibatches=4, value_clip=False),
        runner=RunnerConfig(max_iterations=300, target_return=-10.0, eval_interval=10, eval_episodes=64),
    )


def pybullet_racecar_goal_ppo() -> ExperimentConfig:
    """PPO on the PyBullet racecar driving to random goals (32 envs: each is a PyBullet client); stops when 90 %
    of the evaluation episodes reach their goal."""
    return ExperimentConfig(
        name="pybullet_racecar_goal_ppo",
        task=TaskConfig(name="pybullet/racecar_goal", num_envs=32),
        ppo=PPOConfig(num_steps=64, gamma=0.99, lam=0.95, num_epochs=5, num_minibatches=4, value_clip=False),
        runner=RunnerConfig(max_iterations=200, target_success_rate=0.9, eval_interval=10, eval_episodes=32),
    )


def _robot_off_policy(name: str, task: TaskConfig, max_iterations: int) -> ExperimentConfig:
    """SAC on a real robot (`robo-rl train CONFIG --robot PROFILE`): one env on the robot's real-time grid, the
    learner in its own process so that learning never blocks control (`off_policy.actor_learner`), RLPD-style
    sampling from demonstrations or interventions when given (`off_policy.prior_buffer`), no separate evaluation
    env (the robot is the only one), a checkpoint every 30 s."""
    return ExperimentConfig(
        name=name,
        algo="sac",
        task=task,
        **_networks("sac", actor_hidden=(128, 128), critic_hidden=(256, 256)),
        off_policy=OffPolicyRunnerConfig(
            max_iterations=max_iterations,
            learning_starts=500,
            updates_per_step=1,
            batch_size=256,
            buffer_capacity=200_000,
            eval_interval=0,
            save_every_s=30.0,
            actor_learner=True,
        ),
    )


def robot_rc_car_sac() -> ExperimentConfig:
    """SAC learning the rc_car/race task on the car itself (profile rc_car, 50 Hz): 30,000 steps = 10 minutes of
    robot time."""
    task = TaskConfig(name="rc_car/race", num_envs=1, params=RC_CAR_RACE_TRAINING)
    return _robot_off_policy("robot_rc_car_sac", task, max_iterations=30_000)


def robot_arm_sac() -> ExperimentConfig:
    """SAC learning mujoco/arm_reach (joint-position commands) on the arm itself (profile arm, 50 Hz): 30,000
    steps = 10 minutes of robot time."""
    task = TaskConfig(name="mujoco/arm_reach", num_envs=1, params=("action_mode=position",))
    return _robot_off_policy("robot_arm_sac", task, max_iterations=30_000)


PRESETS = {
    "pendulum_ppo": pendulum_ppo,
    "pendulum_sac": pendulum_sac,
    "pendulum_td3": pendulum_td3,
    "pendulum_fql": pendulum_fql,
    "point_obstacle_sac": point_obstacle_sac,
    "point_obstacle_fql": point_obstacle_fql,
    "point_obstacle_dsrl": point_obstacle_dsrl,
    "point_obstacle_reinflow": point_obstacle_reinflow,
    "quadrotor_hover_ppo": quadrotor_hover_ppo,
    "quadrotor_hover_robust_ppo": quadrotor_hover_robust_ppo,
    "quadrotor_hover_sac": quadrotor_hover_sac,
    "quadrotor_hover_td3": quadrotor_hover_td3,
    "quadrotor_track_ppo": quadrotor_track_ppo,
    "rc_car_race_ppo": rc_car_race_ppo,
    "mujoco_arm_reach_ppo": mujoco_arm_reach_ppo,
    "pybullet_racecar_goal_ppo": pybullet_racecar_goal_ppo,
    "robot_rc_car_sac": robot_rc_car_sac,
    "robot_arm_sac": robot_arm_sac,
}


def with_seed(cfg: ExperimentConfig, seed: int) -> ExperimentConfig:
    return replace(cfg, seed=seed)
