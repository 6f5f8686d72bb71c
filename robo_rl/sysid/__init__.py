"""System identification of a quadrotor from a flight log: `robo-rl sysid LOG --frame BASE -o frame.yaml`.

A log (a Crazyflie CSV, `crazyflie_csv`, or a robo_rl recorder bag, `recorder_bag`) becomes a `FlightLog`;
`units` checks its columns' units against the physics; `fit.identify` fits the thrust curve, the motor rise and fall
time constants, the motor model and the inertia of the model in `airframe` to it (`views`, `solve`,
`motor_response`), with standard errors checked against the log's halves, half its rate and the other models, or
refuses (`NotIdentifiable`) when the log cannot tell a parameter; `frame_file` writes the base frame with the fitted
fields replaced. `excitation` flies a simulator through a flight that identifies them all. Needs numpy (numba, when
installed, compiles the motor response; PyYAML for the frame file, rosbags for bags); no simulator.
"""

from robo_rl.sysid.airframe import Airframe
from robo_rl.sysid.fit import Estimate, Identification, identify
from robo_rl.sysid.flight_log import FlightLog, NotIdentifiable

__all__ = ["Airframe", "Estimate", "FlightLog", "Identification", "NotIdentifiable", "identify"]
