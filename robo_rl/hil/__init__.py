"""Human-in-the-loop: teleoperation devices, a simulated human, the intervention wrapper and demonstration files.

A `TeleopDevice` (`SimulatedHuman`; `KeyboardTeleop` in robo_rl.hil.keyboard) is polled every step.
`InterventionEnv` executes its action wherever it is active and flags those transitions `intervened`. The
off-policy runner stores the executed action and copies intervened transitions to the prior buffer, which
RLPD-style sampling draws half of every batch from. `SimulatedHuman` stands in for a person with a task's
scripted `Expert` (robo_rl.sim.make_expert). Demonstrations are .npz files (robo_rl.hil.demos).
"""

from robo_rl.hil.device import TeleopCommand, TeleopDevice
from robo_rl.hil.intervention import INFO_EXECUTED_ACTION, INFO_INTERVENED, InterventionEnv, intervention_metrics
from robo_rl.hil.simulated import Expert, SimulatedHuman, SimulatedHumanConfig

__all__ = [
    "INFO_EXECUTED_ACTION",
    "INFO_INTERVENED",
    "Expert",
    "InterventionEnv",
    "SimulatedHuman",
    "SimulatedHumanConfig",
    "TeleopCommand",
    "TeleopDevice",
    "intervention_metrics",
]
