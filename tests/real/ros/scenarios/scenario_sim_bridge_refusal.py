"""Scenario: sim_bridge refuses at start a task whose actions are not the profile's (here the quadrotor_px4 profile's
body-rate commands against quadrotor/hover made with action_mode=motor, which would read a rates setpoint back as
rotor commands).

argv: LOG_DIR. Reports the exit code and stderr of the sim_bridge process.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from harness import BIN, finish

if __name__ == "__main__":
    folder = Path(sys.argv[1])
    params = ["profile:=quadrotor_px4", "task:=quadrotor/hover", "task_params:=[action_mode=motor]"]
    argv = [str(BIN / "sim_bridge"), "--ros-args", *(arg for p in params for arg in ("-p", p))]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=folder)
    finish({"exit_code": done.returncode, "stderr": done.stderr})
