"""Every registered off-policy algorithm keeps `OffPolicyAlgorithm`, and the hooks' defaults are what the runner
needs from an algorithm without normalizers, captured updates or cameras, and which acts with its actor alone."""

from __future__ import annotations

from typing import Any

import torch

from robo_rl.algorithms import registry
from robo_rl.algorithms.off_policy import OffPolicyAlgorithm
from robo_rl.distributed import LOCAL
from robo_rl.experiment import ExperimentConfig
from robo_rl.modules.squashed_actor import TanhActor
from robo_rl.storage.replay import Transitions

LOW, HIGH = -2 * torch.ones(2), 2 * torch.ones(2)


class Minimal(OffPolicyAlgorithm):
    """The members every algorithm defines, and nothing else."""

    def __init__(self) -> None:
        self.actor = TanhActor(3, LOW, HIGH, (8,), "relu", False)
        self.reducer = LOCAL

    def act(self, obs: Any, deterministic: bool = False) -> torch.Tensor:
        return self.actor(obs)

    def update(self, batch: Transitions, update_actor: bool = True) -> dict[str, torch.Tensor]:
        return {}

    def state_dict(self) -> dict[str, Any]:
        return {"actor": self.actor.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.actor.load_state_dict(state["actor"])


def test_every_registered_off_policy_algorithm_keeps_the_contract() -> None:
    for entry in registry.entries():
        if entry.loop != "off_policy":
            continue
        section = getattr(ExperimentConfig(), entry.section("build"))
        algorithm = entry.build(3, 3, LOW, HIGH, section, device="cpu", reducer=LOCAL)
        assert OffPolicyAlgorithm in type(algorithm).__mro__, entry.name  # subclassed: it has the hooks' defaults
        assert algorithm.reducer is LOCAL and algorithm.scaler is algorithm.actor.scaler
        obs = torch.randn(4, 3)
        assert algorithm.act(obs).shape == (4, 2)
        assert algorithm.deterministic_policy()(obs).shape == (4, 2)


def test_the_hooks_default_to_no_normalizers_no_capture_no_cameras() -> None:
    algorithm = Minimal()
    assert not algorithm.needs_normalizers and algorithm.image_specs == ()
    assert algorithm.acting_module() is algorithm.actor  # what a learner process publishes
    assert algorithm.capture_problem() == "its updates are not captured (SAC's and TD3's are)"
    obs = torch.randn(5, 3)
    expected = algorithm.scaler(algorithm.act(obs))
    assert torch.allclose(algorithm.deterministic_policy()(obs), expected)
    fresh = Minimal()
    fresh.load_policy_state(algorithm.policy_state())
    assert torch.allclose(fresh.deterministic_policy()(obs), expected)
