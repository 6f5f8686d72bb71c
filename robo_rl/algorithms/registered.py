"""The registered algorithms as static types: `AlgorithmName`, the Literal of their names (the type of a
config's `algo` and of `--algo`), and their config classes (the types of `ExperimentConfig`'s sections).

Written from robo_rl/algorithms/registry.py by `make docs` (`python docs/algorithm_sections.py`); do not edit:
register an algorithm there, then run it. A test checks that this file is current.
"""

from __future__ import annotations

from typing import Literal

from robo_rl.algorithms.dsrl import DSRLConfig as DSRLConfig
from robo_rl.algorithms.fql import FQLConfig as FQLConfig
from robo_rl.algorithms.pa_rl import PARLConfig as PARLConfig
from robo_rl.algorithms.ppo import PPOConfig as PPOConfig
from robo_rl.algorithms.ppo_lag import PPOLagConfig as PPOLagConfig
from robo_rl.algorithms.reinflow import ReinFlowTrainConfig as ReinFlowTrainConfig
from robo_rl.algorithms.sac import SACConfig as SACConfig
from robo_rl.algorithms.sac_lag import SACLagConfig as SACLagConfig
from robo_rl.algorithms.td3 import TD3Config as TD3Config

AlgorithmName = Literal["ppo", "ppo_lag", "sac", "sac_lag", "td3", "fql", "dsrl", "reinflow", "pa_rl"]
"""A registered algorithm's name: `--algo` and a config's `algo` are typed by it (a config file naming
another is a ConfigError listing these)."""
