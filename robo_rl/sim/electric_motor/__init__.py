"""Electric motor control (`electric_motor/current`): a permanent-magnet synchronous motor on a two-level inverter in
the dq frame, batched in torch, with GEM's (gym-electric-motor's) motor as the default so that GEM can judge it; the
DC motor as the simple case; the classic PI/FOC controller to compare with (`foc`); presets in `presets.py`."""

from robo_rl.sim.electric_motor.current_control import CurrentControlConfig, PmsmCurrentControl
from robo_rl.sim.electric_motor.params import DcMotorParams, LoadParams, PmsmParams

__all__ = ["CurrentControlConfig", "DcMotorParams", "LoadParams", "PmsmCurrentControl", "PmsmParams"]
