"""Env factories by name: the simulators, a robot on ROS or in simulated time, and the teleop devices.

The library's link to `robo_rl.sim`: the core and the runners receive a factory, never import a simulator.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, cast

from robo_rl.artifact import vehicle_card_json
from robo_rl.build import EnvFactory, TeleopFactory
from robo_rl.config import ConfigError, to_dict
from robo_rl.envs import BatchedEnv, image_specs_of, task_specs
from robo_rl.experiment import ExperimentConfig
from robo_rl.hil import TeleopDevice
from robo_rl.hil.simulated import SimulatedHumanConfig
from robo_rl.image_spec import ImageSpec
from robo_rl.task_record import TaskRecord


def env_factory() -> EnvFactory:
    from robo_rl.sim import make

    return make


def robot_env_factory(
    profile_name: str,
    namespace: str = "/",
    command_type: str = "auto",
    classifier: str | None = None,
    link: str = "ros",
    operator: str = "none",
    human: SimulatedHumanConfig | None = None,
) -> EnvFactory:
    """Builds the robot itself as the training env (`robo-rl train --robot PROFILE`): a RobotEnv with the profile
    kind's reward, on the profile's topics through rclpy (`link="ros"`) or on the profile's task simulator in
    simulated time (`link="sim"`, robo_rl.sim.robot_link; `operator="simulated"` adds
    robo_rl.robot.operator.SimulatedOperator, `"resets"` one that only answers reset prompts, `"demonstrator"` one
    driving all the time; on the peg arm, `"simulated"` is the peg benchmark's operator,
    robo_rl.hil.peg_operator, with `human`'s reaction, budget and delay). One env; the task name must be the
    profile's task. A profile with image inputs trains on its task's cameras (`robot_cameras`): the env returns
    the frames beside the state, as policy_node will feed the exported policy."""
    from robo_rl.real.profile import load_profile

    profile = load_profile(profile_name)
    if operator != "none" and link != "sim":
        raise ConfigError("--operator simulated acts through --robot-link sim; on ROS the operator is teleop_node")

    def make(
        name: str,
        num_envs: int,
        device: str = "cpu",
        seed: int | None = None,
        params: Sequence[str] = (),
        config: Any = None,
    ) -> BatchedEnv:
        if name != profile.task:
            raise ConfigError(
                f"--robot {profile_name}: the profile runs task {profile.task!r}, the config trains {name!r}"
            )
        if num_envs != 1 or device != "cpu":
            raise ConfigError(f"--robot {profile_name}: one robot on the CPU (task.num_envs=1, task.device=cpu)")
        from robo_rl.robot.env import RobotEnv
        from robo_rl.robot.rewards import reward_for, success_for

        success = success_for(profile)  # the task's reward decides (profile `episode.success: reward`), else None
        # a learned detector of a task whose reward is its success (the peg) gives the reward too (HIL-SERL)
        learned_reward = classifier is not None and success is not None
        if classifier is not None:
            from robo_rl.robot.classifier import SuccessClassifier

            detector = SuccessClassifier.load(classifier)
            detector.require_obs_names(profile.obs_names)
            success = detector.success
        if link == "sim":
            from robo_rl.robot.operator import OperatorConfig, SimulatedOperator
            from robo_rl.sim.robot_link import SimLink

            person = {
                "simulated": OperatorConfig(),
                "resets": OperatorConfig(corrects=False),
                "demonstrator": OperatorConfig(always=True),
            }.get(operator)
            # the simulated world is the config's task (e.g. the peg presets' 0.5 mm hole estimate)
            sim = SimLink(
                profile, params, seed or 0, None if person is None else SimulatedOperator(person), config=config
            )
            if profile.task in PEG_TASKS and operator in ("simulated", "resets"):
                sim.operator = peg_operator(sim, profile, operator == "simulated", human, seed or 0)
            reward = reward_for(profile)
            cameras = checked_cameras(profile, sim.cameras)
            env = RobotEnv(
                profile,
                sim,
                reward,
                clock=sim.clock,
                say=sim.say,
                success=success,
                success_reward=learned_reward,
                cameras=cameras,
                cost=robot_cost(profile, params, config),
            )
            return cast(BatchedEnv, env)  # a CameraEnv where the profile has cameras
        cameras = robot_cameras(profile, params, config)  # the world decides the rest
        try:
            from robo_rl.robot.link import RosLink

            ros = RosLink(profile, namespace, command_type=command_type, cameras=cameras)
        except ModuleNotFoundError as err:
            raise ConfigError(f"--robot needs {err.name}: train from .venv-ros (make ros-venv)") from None
        reward = reward_for(profile)
        cost = robot_cost(profile, params, config)
        env = RobotEnv(profile, ros, reward, success=success, success_reward=learned_reward, cameras=cameras, cost=cost)
        return cast(BatchedEnv, env)  # a CameraEnv where the profile has cameras

    return make


PEG_TASK = "mujoco/peg_insert"
PEG_TASKS = (PEG_TASK, "mujoco/peg_insert_pixels")
"""The peg arm's tasks: without and with cameras (whose state task is the first's)."""


def robot_cost(profile: Any, params: Sequence[str], config: Any) -> Any:
    """The constraint the task's config (with `params`) declares, computed on the robot from the profile's fields
    (`robo_rl.robot.costs.cost_for`); None where it declares none. ConfigError where the robot cannot compute it."""
    from robo_rl.config import apply_overrides
    from robo_rl.robot.costs import cost_for
    from robo_rl.sim.registry import task_settings

    settings = task_settings(profile.task, config)
    try:
        return cost_for(profile, apply_overrides(settings, params) if params else settings)
    except ValueError as err:
        raise ConfigError(f"--robot {profile.name}: {err}") from None


def robot_cameras(profile: Any, params: Sequence[str], config: Any) -> tuple[ImageSpec, ...]:
    """The cameras a robot profile's image inputs feed: those of its task as the config sets it (sizes included),
    checked against the profile (`checked_cameras`); () for a profile without image inputs. The task is built for
    its specs only and closed: a camera task starts its renderer at the first frame, so this needs no GL."""
    if not profile.image_inputs:
        return ()
    from robo_rl.sim import make

    env = make(profile.task, num_envs=1, params=params, config=config)
    try:
        cameras = image_specs_of(env)
    finally:
        close = getattr(env, "close", None)
        if close is not None:
            close()
    return checked_cameras(profile, cameras)


def checked_cameras(profile: Any, cameras: tuple[ImageSpec, ...]) -> tuple[ImageSpec, ...]:
    """`cameras` when the profile's image inputs feed exactly them, each one (as policy_node checks an exported
    policy's: `robo_rl.real.policy_fit.camera_mismatches`), else ConfigError naming every mismatch."""
    from robo_rl.real.policy_fit import camera_mismatches

    problems = camera_mismatches(cameras, profile)
    if problems:
        raise ConfigError(f"--robot {profile.name}: task {profile.task}'s cameras do not fit: {'; '.join(problems)}")
    return cameras


def peg_operator(sim: Any, profile: Any, corrects: bool, human: SimulatedHumanConfig | None, seed: int) -> Any:
    """The peg benchmark's operator on a SimLink of the peg arm: it sees the simulator's true hole (the state task's,
    under the cameras of mujoco/peg_insert_pixels)."""
    from robo_rl.hil.peg_operator import PegFieldOperator, PegOperatorConfig
    from robo_rl.sim.mujoco.presets import PEG_OPERATOR

    config = PegOperatorConfig(human=human or PEG_OPERATOR, corrects=corrects)
    low, high = [a.low for a in profile.actions], [a.high for a in profile.actions]
    task = getattr(sim.env, "task", sim.env)  # a CameraTask's state task
    return PegFieldOperator(lambda: task.hole_pose()[0].tolist(), low, high, config, seed)


def task_record(cfg: ExperimentConfig, env: BatchedEnv) -> TaskRecord:
    """What `cfg.task` resolves to: the task's registered config dataclass as `task.config` sets it, and `env`'s
    specs (written into the run directory as RUN/task.yaml), with the task's vehicle card where it states one and
    `env` observes what the card defines (not a robot's own observation, say)."""
    from robo_rl.sim import task_settings, vehicle_card

    settings = task_settings(cfg.task.name, cfg.task.config)
    specs = task_specs(env)
    card = vehicle_card(cfg.task.name, settings)
    if card is not None and _card_names(card) == specs.obs.names:
        specs = replace(specs, vehicle=vehicle_card_json(card))
    return TaskRecord(cfg.task.name, to_dict(settings), specs)


def _card_names(card: dict[str, Any]) -> tuple[str, ...]:
    """The observation entries a vehicle card defines, in order."""
    return tuple(name for group in card.get("observation", ()) for name in group["names"])


def teleop_factory() -> TeleopFactory:
    """Builds the teleoperation device `cfg.hil.teleop` names for a training env: `simulated` (the task's
    expert), `keyboard` (this terminal), `gamepad` (a joystick on this machine) or `ros` (teleop_node's topics)."""

    def make_teleop(cfg: ExperimentConfig, env: BatchedEnv) -> TeleopDevice:
        from robo_rl.hil import SimulatedHuman
        from robo_rl.hil.gamepad import GamepadTeleop
        from robo_rl.hil.keyboard import KeyboardTeleop
        from robo_rl.sim import make_expert

        low, high = env.action_spec.low_tensor(env.device), env.action_spec.high_tensor(env.device)
        if cfg.hil.teleop == "keyboard":
            return KeyboardTeleop(env.num_envs, low, high, center=getattr(env, "hover_action", None))
        if cfg.hil.teleop == "gamepad":
            try:
                return GamepadTeleop(env.num_envs, low, high, cfg.hil.gamepad)
            except (FileNotFoundError, PermissionError) as err:
                raise ConfigError(f"hil.teleop=gamepad: {err}") from None
        if cfg.hil.teleop == "ros":
            return _ros_teleop(env, cfg.hil.ros_namespace)
        expert = make_expert(cfg.task.name, env)
        return SimulatedHuman(expert, low, high, env.num_envs, cfg.hil.human, seed=cfg.seed)

    return make_teleop


def _ros_teleop(env: BatchedEnv, namespace: str) -> TeleopDevice:
    try:
        from robo_rl.hil.ros_teleop import RosTeleop
    except ModuleNotFoundError as err:
        raise ConfigError(f"hil.teleop=ros needs {err.name} here: train from .venv-ros (make ros-venv)") from None
    return RosTeleop(env.num_envs, env.action_spec.dim, namespace)
