"""robo_rl.real deploys without torch or rclpy: checked in a fresh process, outside the repository."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

CODE = """
import json, sys
import numpy as np
import robo_rl.real as real
imported_at_import = sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "rclpy"))
runtime = real.PolicyRuntime(sys.argv[1], real.load_profile("arm"))
action = runtime(np.zeros(runtime.obs_dim))
imported = sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "rclpy"))
print(json.dumps({"at_import": imported_at_import, "after_inference": imported, "dim": len(action)}))
"""


def test_import_and_inference_load_no_torch_or_rclpy(policy_file: Callable[[str], Path], tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    proc = subprocess.run(
        [sys.executable, "-c", CODE, str(policy_file("arm"))],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1]) == {"at_import": [], "after_inference": [], "dim": 4}
