"""The algorithms `robo-rl train --algo` can run, registered in one place.

Each entry names its training loop (on-policy: the PPO runner; off-policy: the replay runner), its config class
(the `ExperimentConfig` section of the same name) and the builders the composition root (`robo_rl.build`) calls, so
that it names no algorithm: off-policy, `build` makes the algorithm; on-policy, `build_policy` makes the policy,
`prepare` (optional) readies it before training (e.g. ReinFlow's cloning on demonstrations) and `build` makes its
update (PPO). CLI choices, help text, config validation and the README command line read this registry too.
Adding an algorithm: its module in `robo_rl/algorithms/`, one `register(...)` line below, then `make docs`, which
writes what the registry implies for the type checker (`docs/algorithm_sections.py`: the `AlgorithmName` Literal in
`robo_rl/algorithms/registered.py` and the algorithm's config section on `ExperimentConfig`) and the README's
`--algo` list; docs/ARCHITECTURE.md has the steps.
"""

from __future__ import annotations

import keyword
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from robo_rl.algorithms import ppo, reinflow
from robo_rl.algorithms.drq import sac
from robo_rl.algorithms.dsrl import DSRLConfig, dsrl
from robo_rl.algorithms.fql import FQL, FQLConfig
from robo_rl.algorithms.pa_rl import PARL, PARLConfig
from robo_rl.algorithms.ppo import PPO, PPOConfig
from robo_rl.algorithms.ppo_lag import PPOLagConfig, ppo_lag
from robo_rl.algorithms.reinflow import ReinFlowTrainConfig
from robo_rl.algorithms.sac import SACConfig
from robo_rl.algorithms.sac_lag import SACLagConfig, sac_lag
from robo_rl.algorithms.td3 import TD3, TD3Config

if TYPE_CHECKING:
    from robo_rl.algorithms.registered import AlgorithmName

Loop = Literal["on_policy", "off_policy"]


@dataclass(frozen=True)
class AlgorithmEntry:
    name: AlgorithmName
    """`--algo` value and the name of its config section (an identifier). `AlgorithmName`, the Literal of the
    registered names, is written from this registry by `make docs`."""
    loop: Loop
    """Which runner trains it: on_policy (rollouts, section `runner`) or off_policy (replay, section `off_policy`)."""
    config: type
    """Its config dataclass."""
    summary: str
    """One line for `--help`."""
    build: Callable[..., Any]
    """Off-policy: `build(obs_dim, critic_obs_dim, action_low, action_high, cfg, device=...)` → the algorithm, `cfg`
    its section (`name`). On-policy: `build(policy, cfg, reducer=...)` → its update (e.g. `PPO`: a
    `robo_rl.algorithms.on_policy_update.OnPolicyUpdate`), `cfg` the section `build_section`."""
    build_policy: Callable[..., Any] | None = None
    """On-policy only: `build_policy(obs_dim, critic_obs_dim, action_low, action_high, cfg, *, seed,
    nominal_action, device)` → the policy (an `nn.Module` that is a `robo_rl.modules.distributions.StochasticPolicy`),
    `cfg` the section `policy_section`."""
    build_section: str = ""
    """The `ExperimentConfig` section `build` reads; "": `name`."""
    policy_section: str = ""
    """The `ExperimentConfig` section `build_policy` reads; "": `name`."""
    prepare: str | None = None
    """On-policy, optional: "module:function" of a hook `function(policy, cfg, env, seed)` run on a fresh policy
    before training (`cfg` the section `policy_section`), e.g. behaviour cloning. Named, not imported: such a hook may
    need a layer above the core (`robo_rl.hil`); the composition root (`robo_rl.build`) imports it."""
    cameras: bool = False
    """Off-policy: learns from camera envs (`robo_rl.envs.CameraEnv`); `build` then also takes `image_specs=`."""
    needs_costs: bool = False
    """A constrained algorithm: it trains only on a task that declares a cost (`robo_rl.cost_spec`), and `build`
    also takes `time_limit=`, the task's episode length in steps (its budget is per episode; off-policy builders
    default it to 0, for a policy rebuilt from a run's recorded specs, which does not train)."""

    def section(self, role: Literal["build", "policy"]) -> str:
        """The `ExperimentConfig` section that `build` ("build") or `build_policy` ("policy") reads."""
        return (self.build_section if role == "build" else self.policy_section) or self.name

    @property
    def loop_section(self) -> str:
        """The `ExperimentConfig` section with its loop's settings (max_iterations, target_return, ...)."""
        return "runner" if self.loop == "on_policy" else "off_policy"


_ALGORITHMS: dict[str, AlgorithmEntry] = {}


def register(entry: AlgorithmEntry) -> None:
    if entry.name in _ALGORITHMS:
        raise ValueError(f"algorithm {entry.name!r} is already registered")
    if not callable(entry.build):
        raise ValueError(f"algorithm {entry.name!r}: every algorithm needs a builder (`build`)")
    if (entry.loop == "on_policy") != (entry.build_policy is not None):
        raise ValueError(f"algorithm {entry.name!r}: on-policy algorithms, and only they, need a policy builder")
    if entry.prepare is not None and (entry.loop != "on_policy" or entry.prepare.count(":") != 1):
        raise ValueError(f"algorithm {entry.name!r}: prepare is an on-policy algorithm's 'module:function' hook")
    if not entry.name.isidentifier() or keyword.iskeyword(entry.name):
        raise ValueError(f"algorithm {entry.name!r}: a name is an identifier (it names its ExperimentConfig section)")
    _ALGORITHMS[entry.name] = entry


def algorithm(name: str) -> AlgorithmEntry:
    """The entry of `name`; ValueError listing the registered names when there is none."""
    if name not in _ALGORITHMS:
        raise ValueError(f"algo: unknown algorithm {name!r}; registered: {', '.join(names())}")
    return _ALGORITHMS[name]


def names() -> tuple[str, ...]:
    """Registered algorithm names, in registration order."""
    return tuple(_ALGORITHMS)


def entries() -> tuple[AlgorithmEntry, ...]:
    return tuple(_ALGORITHMS.values())


register(
    AlgorithmEntry(
        "ppo", "on_policy", PPOConfig, "PPO on batched rollouts", PPO, ppo.build_policy, policy_section="policy"
    )
)
register(
    AlgorithmEntry(
        "ppo_lag",
        "on_policy",
        PPOLagConfig,
        "PPO-Lagrangian: PPO keeping the expected episode cost under ppo_lag.lagrange.cost_budget (tasks with costs)",
        ppo_lag,
        ppo.build_policy,
        policy_section="policy",
        needs_costs=True,
    )
)
register(
    AlgorithmEntry(
        "sac",
        "off_policy",
        SACConfig,
        "soft actor-critic (DrQ's shared camera encoder on camera tasks)",
        sac,
        cameras=True,
    )
)
register(
    AlgorithmEntry(
        "sac_lag",
        "off_policy",
        SACLagConfig,
        "SAC-Lagrangian: SAC keeping the expected episode cost under sac_lag.lagrange.cost_budget (tasks with costs)",
        sac_lag,
        needs_costs=True,
    )
)
register(AlgorithmEntry("td3", "off_policy", TD3Config, "twin delayed DDPG", TD3))
register(
    AlgorithmEntry(
        "fql", "off_policy", FQLConfig, "flow Q-learning: a flow policy from demonstrations fine-tuned by Q", FQL
    )
)
register(
    AlgorithmEntry(
        "dsrl",
        "off_policy",
        DSRLConfig,
        "SAC choosing the noise of a frozen flow policy cloned from demonstrations",
        dsrl,
    )
)
register(
    AlgorithmEntry(
        "reinflow",
        "on_policy",
        ReinFlowTrainConfig,
        "ReinFlow: PPO fine-tuning a flow policy cloned from demonstrations, with learned noise in its K steps",
        PPO,
        reinflow.build_policy,
        build_section="ppo",
        prepare="robo_rl.hil.reinflow_clone:clone_flow",
    )
)
register(
    AlgorithmEntry(
        "pa_rl",
        "off_policy",
        PARLConfig,
        "policy-agnostic RL: a flow policy trained by its own flow matching on critic-optimized actions (PA-RL)",
        PARL,
    )
)
