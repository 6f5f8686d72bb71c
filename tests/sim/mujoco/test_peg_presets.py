"""The peg insertion recipe end to end (mechanics, not success): demonstrations recorded by the simulated operator,
then `peg_insert_hil` with them: the operator steps in within its budget and the run directory holds what
bench/peg_hil.py reads. (That intervened steps go to both buffers: tests/robo_rl/hil/test_intervention.py.)"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np

from robo_rl.cli.main import main
from robo_rl.config import load_yaml
from robo_rl.experiment import ExperimentConfig


def _run(argv: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(argv) == 0
    return out.getvalue()


def test_demos_then_hil_training_with_the_operator_within_its_budget(tmp_path: Path) -> None:
    demos = tmp_path / "demos.npz"
    _run(["record-demos", "mujoco/peg_insert", "--episodes", "2", "--whole-episodes", "--seed", "3", "-o", str(demos)])
    with np.load(demos) as data:
        # two whole episodes, one per env, each ending where it succeeds or at 150 steps (no third one begun)
        assert (data["terminated"] | data["truncated"]).sum() == 2 and data["is_demo"].all()
        assert len(data["rewards"]) <= 300
        # the file carries info["success"] per transition for `robo-rl train-classifier` (insertion terminates)
        assert json.loads(str(data["meta"]))["num_envs"] == 2
        assert np.array_equal(data["success"], data["terminated"].astype(bool)) and data["success"].any()
    sets = ["off_policy.learning_starts=50", "off_policy.loop.eval_episodes=2", f"off_policy.prior_buffer={demos}"]
    argv = ["train", "peg_insert_hil", "--max-iterations", "300", "--runs-root", str(tmp_path / "runs"), "--quiet"]
    _run([*argv, *(arg for item in sets for arg in ("--set", item))])
    (run,) = (tmp_path / "runs" / "peg_insert_hil").iterdir()
    cfg = load_yaml(ExperimentConfig, run / "config.yaml")
    assert cfg.hil.teleop == "simulated" and cfg.sac.layer_norm and cfg.off_policy.prior_fraction == 0.5
    last = json.loads((run / "metrics.jsonl").read_text().splitlines()[-1])
    share = last["intervention_rate_total"]
    # an untrained policy heads wrong at once; the operator takes over while under its budget and finishes the
    # takeover under way (at most one episode of 150 steps past the cap)
    assert cfg.hil.human.finish_takeovers
    assert 0.1 < share <= cfg.hil.human.budget + 150 / 300
    assert last["env_steps"] == 300 and last["eval_success_rate"] is not None
    assert (run / "checkpoints" / "latest.pt").is_file()
