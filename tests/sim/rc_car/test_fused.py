"""The numba race step against the torch one: the same transitions (to float rounding) from the same states and
actions, and resets from the torch path's initial-state equations given the kernel's own uniform draws."""

from __future__ import annotations

import dataclasses
from importlib import resources
from pathlib import Path

import pytest
import torch
import yaml

from robo_rl.envs import INFO_FINAL_OBS, INFO_SUCCESS
from robo_rl.sim.rc_car import (
    INFO_LAP_TIME,
    INFO_LAPS,
    INFO_OFF_TRACK,
    INFO_PROGRESS,
    INFO_STALLED,
    RaceConfig,
    RCCarRace,
)
from robo_rl.sim.rc_car.track import TrackProjection

fused = pytest.importorskip("robo_rl.sim.rc_car.fused", reason="numba is not installed")

N = 256
TOLERANCE = {"atol": 5e-4, "rtol": 1e-4}
_SYNCED = ("_state", "_steps", "_laps", "_slow_steps", "_distance", "_lap_start", "_history", "_last_action", "_buffer")


def _sync(source: RCCarRace, target: RCCarRace) -> None:
    for name in _SYNCED:
        setattr(target, name, getattr(source, name).clone())
    target._projection = TrackProjection(*(value.clone() for value in source._projection))


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"episode_length": 1.0, "stall_time": 0.1, "action_history": 0, "track": "oval", "action_weight": 0.1},
        {"car": "throttle"},
    ],
    ids=["default", "short-episodes-stalls-oval", "throttle-car"],
)
def test_numba_steps_match_torch_steps(changes: dict, tmp_path: Path) -> None:
    if changes.get("car") == "throttle":  # the bundled car with the throttle/brake drive instead of the speed loop
        car = yaml.safe_load((resources.files("robo_rl.sim.rc_car") / "cars" / "f1tenth.yaml").read_text())
        (tmp_path / "throttle.yaml").write_text(yaml.safe_dump({**car, "command_mode": "throttle"}))
        changes = {"car": str(tmp_path / "throttle.yaml")}
    config = dataclasses.replace(RaceConfig(), **changes)
    torch_env = RCCarRace(N, config=config, seed=0)
    numba_env = RCCarRace(N, config=dataclasses.replace(config, backend="numba"), seed=0)
    generator = torch.Generator().manual_seed(1)
    seen = {"terminated": 0, "truncated": 0, "laps": 0}
    # Half the cars are about to complete a lap (0.35 m short: no car of these draws ends within float32 rounding
    # of the finish line, where the float64 kernel and float32 torch may count the lap one step apart).
    torch_env._distance[: N // 2] = torch_env.track.length - 0.35
    for step in range(150):
        _sync(torch_env, numba_env)
        drive = torch.rand(N, 1, generator=generator) * 1.6 - 0.3  # mostly forward: laps happen
        action = torch.cat((torch.rand(N, 1, generator=generator) * 2.4 - 1.2, drive), dim=1)
        ours, theirs = numba_env.step(action), torch_env.step(action)
        for name, a, b in zip(("reward", "terminated", "truncated"), ours[1:4], theirs[1:4], strict=True):
            torch.testing.assert_close(a, b, **TOLERANCE, msg=f"{name} at step {step}")
        for key in (INFO_FINAL_OBS, INFO_SUCCESS, INFO_LAPS, INFO_OFF_TRACK, INFO_STALLED, INFO_PROGRESS):
            torch.testing.assert_close(ours[4][key], theirs[4][key], **TOLERANCE, msg=f"{key} at step {step}")
        torch.testing.assert_close(ours[4][INFO_LAP_TIME], theirs[4][INFO_LAP_TIME], equal_nan=True, **TOLERANCE)
        kept = ~(theirs[2] | theirs[3])
        torch.testing.assert_close(ours[0][kept], theirs[0][kept], **TOLERANCE)
        torch.testing.assert_close(numba_env._state[:, kept], torch_env._state[:, kept], **TOLERANCE)
        seen["terminated"] += int(theirs[2].sum())
        seen["truncated"] += int(theirs[3].sum())
        seen["laps"] += int((~theirs[4][INFO_LAP_TIME].isnan()).sum())
    assert seen["terminated"] > 0  # the comparison covered crashes or stalls...
    if config.episode_length <= 1.0:
        assert seen["truncated"] > 0  # ...time limits...
    else:
        assert seen["laps"] > 0  # ...and completed laps


def test_resets_follow_the_torch_equations_from_the_kernel_s_draws() -> None:
    config = RaceConfig(backend="numba")
    env = RCCarRace(N, config=config, seed=3)
    env._steps.fill_(config.max_episode_steps - 1)  # every episode ends at the next step
    obs, _, terminated, truncated, _ = env.step(torch.zeros(N, 2))
    assert bool((terminated | truncated).all())
    uniforms = torch.tensor(
        [[fused.uniform(env._fused_seed, env._fused_steps, i, k) for i in range(N)] for k in range(4)]
    )
    expected, _ = env._initial_state(uniforms.float())
    torch.testing.assert_close(env._state, expected, atol=2e-5, rtol=1e-5)
    torch.testing.assert_close(obs, env._observe().T, atol=2e-5, rtol=1e-5)
    assert not bool(env._steps.any()) and not bool(env._laps.any()) and not bool(env._history.any())


def test_numba_race_resumes_exactly_and_refuses_randomization() -> None:
    config = RaceConfig(backend="numba", episode_length=0.5)
    env = RCCarRace(N, config=config, seed=0)
    actions = [torch.rand(N, 2, generator=torch.Generator().manual_seed(i)) * 2 - 1 for i in range(40)]
    for action in actions[:10]:
        env.step(action)
    saved = env.state_dict()
    first = [env.step(action)[0] for action in actions[10:]]
    resumed = RCCarRace(N, config=config, seed=99)
    resumed.load_state_dict(saved)
    second = [resumed.step(action)[0] for action in actions[10:]]
    assert all(torch.equal(a, b) for a, b in zip(first, second, strict=True))
    randomized = dataclasses.replace(RaceConfig().randomization, friction=0.2)
    with pytest.raises(ValueError, match="no domain randomization"):
        RaceConfig(backend="numba", randomization=randomized)


def test_auto_backend_takes_numba_without_randomization_and_torch_with_it() -> None:
    assert RCCarRace(4, config=RaceConfig(backend="auto"), seed=0)._fused is not None
    randomized = dataclasses.replace(RaceConfig().randomization, mass=0.2)
    assert RCCarRace(4, config=RaceConfig(backend="auto", randomization=randomized), seed=0)._fused is None
