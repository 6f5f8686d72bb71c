"""`robo-rl eval POLICY.onnx --sim gem`: an exported electric_motor/current policy run in gym-electric-motor (GEM).

The file says everything the run needs: the task, its config (the motor, its inverter and limits, the control period,
the sensor noise, the delay and how references are drawn; `robo_rl.task_config`) and the observation the policy
reads. The episodes are drawn from `--seed` (`scenario.draw_scenario`); the same episodes run with the PI/FOC baseline
(`foc`) in GEM, and both in our simulator, so the four numbers compare side by side.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from robo_rl.api.onnx_policy import policy_artifact
from robo_rl.config import ConfigError, from_dict
from robo_rl.sim.electric_motor.current_control import OBS_NAMES, CurrentControlConfig
from robo_rl.sim.electric_motor.gem_judge import gem_missing_reason, rollout_gem
from robo_rl.sim.electric_motor.scenario import draw_scenario, rollout
from robo_rl.sim.electric_motor.scoring import Score, onnx_factory, pi_factory, score

CURRENT_TASK = "electric_motor/current"


@dataclass(frozen=True)
class GemComparison:
    """The policy and the PI/FOC baseline on the same episodes, in GEM and in our simulator."""

    policy_gem: Score
    pi_gem: Score
    policy_ours: Score
    pi_ours: Score

    def rows(self) -> list[tuple[str, Score]]:
        return [
            ("policy in GEM", self.policy_gem),
            ("PI/FOC in GEM", self.pi_gem),
            ("policy in robo_rl", self.policy_ours),
            ("PI/FOC in robo_rl", self.pi_ours),
        ]


def read_current_policy(path: Path) -> tuple[Path, CurrentControlConfig]:
    """The policy file (a .onnx, or a run directory's policy.onnx) and its task config; ValueError naming the file when
    it is not an electric_motor/current policy."""
    path = path / "policy.onnx" if path.is_dir() else path
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such policy file")
    artifact = policy_artifact(path)
    if artifact.task != CURRENT_TASK:
        raise ValueError(f"{path}: --sim gem runs {CURRENT_TASK} policies; this one is for {artifact.task!r}")
    if tuple(artifact.obs.names) != OBS_NAMES:
        raise ValueError(f"{path}: its observation {list(artifact.obs.names)} is not this task's {list(OBS_NAMES)}")
    if artifact.task_config is None:
        return path, CurrentControlConfig()
    try:
        return path, from_dict(CurrentControlConfig, json.loads(artifact.task_config))
    except (ConfigError, ValueError, TypeError) as error:
        raise ValueError(f"{path}: its task config does not fit this robo_rl's CurrentControlConfig: {error}") from None


def compare_in_gem(path: Path, episodes: int, seed: int) -> GemComparison:
    """Run the policy at `path` and the PI/FOC baseline on `episodes` drawn episodes, in GEM and in ours."""
    missing = gem_missing_reason()
    if missing is not None:
        raise ValueError(missing)
    path, config = read_current_policy(path)
    scenario = draw_scenario(config, episodes, seed)
    policy, pi = onnx_factory(path), pi_factory(config.motor, config.dt)
    return GemComparison(
        policy_gem=score(scenario, rollout_gem(scenario, policy)),
        pi_gem=score(scenario, rollout_gem(scenario, pi)),
        policy_ours=score(scenario, rollout(scenario, policy)),
        pi_ours=score(scenario, rollout(scenario, pi)),
    )
