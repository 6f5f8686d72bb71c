"""Rehearsals of the hand-over protocol (`robo_rl.real.handover`) against each vehicle's stand-in, in stepped time.

A rehearsal runs the deploy core exactly as policy_node runs it (`PolicyNodeCore` with the profile, the policy
file and the vehicle link) against a `Rig`: the task's simulator, the vehicle's own controller, and the rules its
firmware or driver applies (the Crazyflie's thrust lock and commander priorities, PX4's modes, the VESC chain's
clamps, joint_trajectory_controller's acceptance). The plan (`standard_plan`): the vehicle's controller takes off
and holds, the policy takes over, an input falls silent, the vehicle holds, the policy takes over again, a requested
hand-back, landing. The report counts rule violations, periods airborne with the motors off, and per transition the
response to a fault in control periods and the command, position and tilt jumps."""

from robo_rl.sim.rehearsal.plan import Event, Plan, Report, Transition, standard_plan
from robo_rl.sim.rehearsal.run import Rig, rehearse

__all__ = ["Event", "Plan", "Report", "Rig", "Transition", "rehearse", "standard_plan"]
