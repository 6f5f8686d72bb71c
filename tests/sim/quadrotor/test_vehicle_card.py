"""The quadrotor vehicle card (`robo_rl.vehicle`, robo_rl.sim.quadrotor.vehicle_card): a deployer who reads only
the policy file's metadata rebuilds the simulator's observation step for step, integral and action history with
their resets included, and the card's rotor geometry gives the simulator's torques by hand.

Outside sources: the rebuild turns the card's quaternion convention ((w, x, y, z), Hamilton, body to world) into the
rotation matrix with MuJoCo's `mju_quat2Mat`, not robo_rl's formula; the card's rotor positions and yaw torque signs
are held to L2F 2.0.18's own Crazyflie (`parameters_to_json`: rotor_positions, rotor_torque_directions; Eschmann et
al., "Learning to Fly in Seconds"), the simulator the transfer gate trusts.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

from robo_rl.artifact import VEHICLE_KEY, PolicyArtifact
from robo_rl.cli.main import main
from robo_rl.sim import make, vehicle_card
from robo_rl.sim.quadrotor.dynamics import ANGULAR_VELOCITY, VELOCITY, DynamicsParams, state_derivative
from robo_rl.sim.quadrotor.hover_config import HoverConfig
from robo_rl.sim.quadrotor.l2f_gate import l2f_missing_reason, native_parameters_json
from robo_rl.sim.quadrotor.params import load_frame
from robo_rl.sim.quadrotor.randomization import EPISODE_NAMES, RandomizationConfig
from robo_rl.sim.quadrotor.track import TrackConfig
from robo_rl.sim.quadrotor.vehicle_card import FACTOR_MEANINGS, QUANTITIES

TOLERANCE = 2e-5
"""Largest difference between a rebuilt and a simulated observation entry: float32 simulation, float64 rebuild."""


# ------------------------------------------------------------------------------------ the deployer's side
# Everything in this section reads the card (a JSON object from the ONNX metadata) and raw measurements only:
# numpy and MuJoCo's quaternion math, nothing of robo_rl.


class CardObserver:
    """One vehicle's observation, built from the card alone: `reset` at an episode's start, `observe` the raw
    state, `act` with the action sent after it."""

    def __init__(self, card: dict[str, Any]) -> None:
        if card["kind"] != "quadrotor" or card["version"] != 1:
            raise ValueError(f"not a quadrotor card this observer knows: {card['kind']} {card['version']}")
        self.groups = card["observation"]
        self.dt = card["control"]["dt"]
        self.reset()

    def reset(self) -> None:
        self.time = 0.0
        self.integrals = {g["names"][0]: np.full(3, g["initial_value"]) for g in self._of("position_error_integral")}
        self.history = {g["names"][0]: np.tile(g["initial_value"], g["count"]) for g in self._of("previous_actions")}

    def act(self, action: np.ndarray) -> None:
        for name, history in self.history.items():
            self.history[name] = np.concatenate((np.clip(action, -1.0, 1.0), history[: -len(action)]))
        self.time += self.dt

    def observe(self, p: np.ndarray, q: np.ndarray, v: np.ndarray, w: np.ndarray) -> np.ndarray:
        values: dict[str, float] = {}
        for group in self.groups:
            part = RULES[group["quantity"]](self, group, p, q, v, w, values)
            values.update(zip(group["names"], part, strict=True))
        return np.array(list(values.values()))

    def reference(self, group: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        ref = group["reference"]
        if ref["kind"] == "fixed_point":
            return np.array(ref["position"]), np.array(ref["velocity"])
        assert ref["kind"] == "figure_eight" and not ref["random_phase"]  # a random phase is the env's own draw
        a, rate = ref["amplitude"], 2 * math.pi / ref["period"]
        theta = rate * self.time
        position = np.array([a * math.sin(theta), a / 2 * math.sin(2 * theta), ref["height"]])
        return position, np.array([a * rate * math.cos(theta), a * rate * math.cos(2 * theta), 0.0])

    def _of(self, quantity: str) -> list[dict[str, Any]]:
        return [group for group in self.groups if group["quantity"] == quantity]

    def _reference_group(self) -> dict[str, Any]:
        return self._of("position_error")[0]


def _position_error(obs: CardObserver, g: dict, p: np.ndarray, *_: Any) -> np.ndarray:
    return p - obs.reference(g)[0]


def _rotation(obs: CardObserver, g: dict, p: np.ndarray, q: np.ndarray, *_: Any) -> np.ndarray:
    assert g["layout"] == "row-major"
    matrix = np.zeros(9)
    mujoco.mju_quat2Mat(matrix, q / np.linalg.norm(q))  # MuJoCo: (w, x, y, z), body to world, row-major
    return np.clip(matrix, *g["clip"])


def _velocity(obs: CardObserver, g: dict, p: np.ndarray, q: np.ndarray, v: np.ndarray, *_: Any) -> np.ndarray:
    return v - obs.reference(obs._reference_group())[1]


def _angular_velocity(obs: CardObserver, g: dict, p: Any, q: Any, v: Any, w: np.ndarray, *_: Any) -> np.ndarray:
    return w


def _reference_velocity(obs: CardObserver, g: dict, *_: Any) -> np.ndarray:
    return obs.reference(obs._reference_group())[1]


def _integral(obs: CardObserver, g: dict, p: Any, q: Any, v: Any, w: Any, values: dict) -> np.ndarray:
    error = np.array([values[name] for name in g["input"]])
    key = g["names"][0]
    obs.integrals[key] = np.clip(obs.integrals[key] + g["dt"] * error, -g["limit"], g["limit"])
    return obs.integrals[key]


def _previous_actions(obs: CardObserver, g: dict, *_: Any) -> np.ndarray:
    return obs.history[g["names"][0]]


RULES: dict[str, Callable[..., np.ndarray]] = {
    "position_error": _position_error,
    "rotation_matrix": _rotation,
    "velocity": _velocity,
    "velocity_error": _velocity,
    "angular_velocity": _angular_velocity,
    "reference_velocity": _reference_velocity,
    "position_error_integral": _integral,
    "previous_actions": _previous_actions,
}


def hand_torque(card: dict[str, Any], motor_state: np.ndarray) -> tuple[np.ndarray, float]:
    """(body torque N m, total thrust N) of the motor states by the card's rotors and model: r_i x (0, 0, T_i) plus
    each rotor's reaction torque."""
    vehicle = card["vehicle"]
    c0, c1, c2 = vehicle["thrust_curve"]
    torque, total = np.zeros(3), 0.0
    for rotor, u in zip(vehicle["rotors"], motor_state, strict=True):
        thrust = c0 + c1 * u + c2 * u * u
        torque += np.cross([rotor["x"], rotor["y"], 0.0], [0.0, 0.0, thrust])
        torque[2] += rotor["yaw_torque_sign"] * vehicle["torque_to_thrust"] * thrust
        total += thrust
    return torque, total


# ------------------------------------------------------------------------------------------------- the tests


def _cli(argv: list[str]) -> None:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    assert code == 0, f"{argv}: {err.getvalue()}"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A quadrotor_hover_ppo run of one short iteration, exported when training ends (`train --export`)."""
    root = tmp_path_factory.mktemp("runs")
    tiny = ["--set", "ppo.num_steps=8", "--set", "ppo.num_minibatches=2", "--set", "runner.loop.eval_interval=0"]
    _cli(["train", "quadrotor_hover_ppo", "--max-iterations", "1", "--num-envs", "8", "--runs-root", str(root),
          "--quiet", "--export", "--set", "task.backend=torch", *tiny])  # fmt: skip
    return next((root / "quadrotor_hover_ppo").iterdir())


def _props(path: Path) -> dict[str, str]:
    return {p.key: p.value for p in onnx.load(str(path)).metadata_props}


def test_training_and_the_export_command_write_the_card_the_run_recorded(run: Path, tmp_path: Path) -> None:
    trained = _props(run / "policy.onnx")
    _cli(["export", str(run), "-o", str(tmp_path / "again.onnx")])
    assert VEHICLE_KEY in trained and _props(tmp_path / "again.onnx")[VEHICLE_KEY] == trained[VEHICLE_KEY]
    card = PolicyArtifact.from_props(trained).vehicle_card
    assert card is not None and card["kind"] == "quadrotor" and card["vehicle"]["frame"] == "crazyflie_2_1"
    assert trained["robo_rl.schema"] == "3"  # the card raises no schema: the motor actuator's
    integral = next(g for g in card["observation"] if g["quantity"] == "position_error_integral")
    assert (integral["limit"], integral["dt"], integral["initial_value"]) == (0.5, 0.01, 0.0)


def test_the_observation_rebuilt_from_the_metadata_alone_is_the_simulators(run: Path) -> None:
    """Fly the exported policy in onnxruntime for 520 steps (the one-iteration policy crashes: measured, 193 episode
    restarts in the 16 envs; the tracking test below restarts by the time limit): at every step each env's
    observation, rebuilt from its raw state (`env.state`: position, quaternion, velocity, body
    rates) and the actions sent, with the integral and action history updated and reset by the card's rules, is
    the simulator's."""
    props = _props(run / "policy.onnx")
    card = json.loads(props[VEHICLE_KEY])
    assert [n for g in card["observation"] for n in g["names"]] == json.loads(props["robo_rl.obs_names"])
    config = {**json.loads(props["robo_rl.task_config"]), "backend": "torch"}  # the simulator under test
    env = make("quadrotor/hover", num_envs=16, config=config, seed=5)
    session = ort.InferenceSession(str(run / "policy.onnx"), providers=["CPUExecutionProvider"])
    observers = [CardObserver(card) for _ in range(env.num_envs)]
    obs, resets, worst = env.reset(5), 0, 0.0
    for step in range(521):
        worst = max(worst, _compare(env, observers, obs, step))
        if step == 520:
            break
        action = session.run(["action"], {"obs": obs.numpy()})[0]
        obs, _, terminated, truncated, _ = env.step(torch.from_numpy(action))
        for i, observer in enumerate(observers):
            observer.act(action[i].astype(np.float64))
            if terminated[i] or truncated[i]:
                observer.reset()
                resets += 1
    assert resets >= env.num_envs and worst < TOLERANCE


def _compare(env: Any, observers: list[CardObserver], obs: torch.Tensor, step: int) -> float:
    state = env.state.double().numpy()
    worst = 0.0
    for i, observer in enumerate(observers):
        raw = state[i, 0:3], state[i, 3:7], state[i, 7:10], state[i, 10:13]
        rebuilt = observer.observe(*raw)
        error = float(np.max(np.abs(rebuilt - obs[i].double().numpy())))
        assert error < TOLERANCE, f"step {step}, env {i}: rebuilt {rebuilt} != simulated {obs[i].tolist()}"
        worst = max(worst, error)
    return worst


def test_the_tracking_card_rebuilds_the_moving_reference_and_a_longer_history() -> None:
    """The tracking task's card (figure eight, velocity error, reference velocity, the integral and 2 previous
    actions) rebuilds its observation the same way, under random actions around hover."""
    config = TrackConfig(position_integral_limit=0.3, action_history=2, random_phase=False, episode_length=0.5)
    card = vehicle_card("quadrotor/track", config)
    assert card is not None
    env = make("quadrotor/track", num_envs=4, config=config, seed=1)
    hover = getattr(env, "hover_action")  # noqa: B009 (a quadrotor's, not every BatchedEnv's)
    assert [n for g in card["observation"] for n in g["names"]] == list(env.obs_spec.names)
    observers, generator = [CardObserver(card) for _ in range(4)], torch.Generator().manual_seed(0)
    obs, resets = env.reset(1), 0
    for step in range(120):
        _compare(env, observers, obs, step)
        action = torch.tensor(hover) + 0.3 * torch.randn(4, 4, generator=generator)
        obs, _, terminated, truncated, _ = env.step(action)
        for i, observer in enumerate(observers):
            observer.act(action[i].double().numpy())
            if terminated[i] or truncated[i]:
                observer.reset()
                resets += 1
    assert resets >= 4  # 0.5 s episodes: each env restarted at least twice


@pytest.mark.parametrize("frame", ["crazyflie_2_1", "px4_x500"])
def test_the_cards_rotor_geometry_gives_the_simulators_torques(frame: str) -> None:
    """Unequal motor states at rest, upright: the card's hand computation (thrust curve, r_i x F_i, the yaw
    reaction sign) is the simulator's torque (inertia x its angular acceleration) and vertical acceleration."""
    card = vehicle_card("quadrotor/hover", HoverConfig(frame=frame))
    assert card is not None
    motor_state = np.array([0.35, 0.55, 0.7, 0.9])
    torque, thrust = hand_torque(card, motor_state)
    params = load_frame(frame)
    state = torch.tensor([[0.0, 0.0, 0.0, 1.0] + [0.0] * 9 + motor_state.tolist()], dtype=torch.float64).T
    derivative = state_derivative(state, state[13:17], DynamicsParams.nominal(params, 1, dtype=torch.float64))
    simulated = derivative[ANGULAR_VELOCITY, 0].numpy() * np.array(card["vehicle"]["inertia"])
    np.testing.assert_allclose(simulated, torque, rtol=1e-12, atol=1e-15)
    mass, gravity = card["vehicle"]["mass"], card["vehicle"]["gravity"]
    assert float(derivative[VELOCITY, 0][2]) == pytest.approx(thrust / mass - gravity, rel=1e-12)
    assert abs(torque).min() > 0  # every axis is exercised


@pytest.mark.skipif(l2f_missing_reason() is not None, reason=f"{l2f_missing_reason()}")
def test_the_crazyflie_cards_rotors_are_l2fs() -> None:
    """The card's rotor positions and yaw torque signs, in the action order, are L2F's own Crazyflie's."""
    card = vehicle_card("quadrotor/hover", HoverConfig())
    assert card is not None
    rotors = card["vehicle"]["rotors"]
    dynamics = json.loads(native_parameters_json())["dynamics"]
    for rotor, position, direction in zip(
        rotors, dynamics["rotor_positions"], dynamics["rotor_torque_directions"], strict=True
    ):
        assert (rotor["x"], rotor["y"]) == pytest.approx(tuple(position[:2]), abs=1e-6)
        assert rotor["yaw_torque_sign"] == direction[2]


def test_the_card_states_the_trained_ranges_and_noise() -> None:
    """Each drawn factor with its full range (the absolute one too), the latency in steps and the noise; every
    factor has a meaning and every quantity a rebuild rule here."""
    randomization = RandomizationConfig(
        mass=0.1, inertia_scale=(0.8, 3.0), motor_fall_time_constant=(0.05, 0.3), min_action_latency=1,
        max_action_latency=2, position_noise=0.005,
    )  # fmt: skip
    card = vehicle_card("quadrotor/hover", HoverConfig(randomization=randomization))
    assert card is not None
    factors = {f["name"]: f for f in card["randomization"]["factors"]}
    assert list(factors) == list(EPISODE_NAMES) and set(FACTOR_MEANINGS) == set(EPISODE_NAMES)
    mass = factors["mass_scale"]
    assert (mass["low"], mass["high"]) == pytest.approx((0.9, 1.1))
    assert mass["absolute"] == pytest.approx([0.9 * 0.0306, 1.1 * 0.0306])
    assert factors["inertia_z_scale"]["absolute"][1] == pytest.approx(3.0 * card["vehicle"]["inertia"][2])
    assert factors["motor_fall_time_constant_scale"]["absolute"] == pytest.approx([0.05, 0.3])
    assert (factors["action_latency"]["low"], factors["action_latency"]["high"]) == (1.0, 2.0)
    assert card["randomization"]["observation_noise_std"]["position_error"] == 0.005
    assert card["observation"][0]["noise_std"] == 0.005 and "noise" in card["observation"][0]["definition"]
    assert set(RULES) == set(QUANTITIES)


def test_the_record_holds_the_card_only_where_the_env_observes_what_it_defines() -> None:
    """`task_record` (what `robo-rl train` writes to RUN/task.yaml) takes the task's card when the env's observation
    is the one the card defines; an env observing something else (here: another action history, as a robot's
    profile might) gets none rather than a card of entries it does not have."""
    from robo_rl.api.configs import preset
    from robo_rl.api.envs import task_record
    from robo_rl.artifact import vehicle_card_json

    cfg = preset("quadrotor_hover_ppo")
    config = replace(cfg.task.config, backend="torch")
    record = task_record(cfg, make("quadrotor/hover", num_envs=1, config=config))
    assert record.specs.vehicle == vehicle_card_json(vehicle_card("quadrotor/hover", cfg.task.config) or {})
    other = make("quadrotor/hover", num_envs=1, config=replace(config, action_history=2))
    assert task_record(cfg, other).specs.vehicle is None
    pendulum = preset("pendulum_ppo")
    assert task_record(pendulum, make("pendulum", num_envs=1)).specs.vehicle is None  # a task that states none


def test_a_ctbr_card_states_its_rate_loop_and_hover_action() -> None:
    config = HoverConfig(frame="px4_x500", action_mode="ctbr")
    card = vehicle_card("quadrotor/hover", config)
    env = make("quadrotor/hover", num_envs=1, config=replace(config, backend="torch"))
    assert card is not None and card["action"]["mode"] == "ctbr"
    assert card["action"]["names"] == list(env.action_spec.names)
    assert card["action"]["hover_action"] == pytest.approx(list(getattr(env, "hover_action")))  # noqa: B009
    assert card["action"]["max_body_rate"] == list(config.ctbr.max_body_rate)
