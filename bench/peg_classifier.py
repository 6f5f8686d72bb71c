"""A learned success detector for peg insertion (HIL-SERL's reward classifier), from 20 labelled episodes.

Records 20 episodes of the simulated operator (`robo-rl record-demos mujoco/peg_insert --episodes 20`, its file
carries info["success"] per transition) to train on, and 20 more (another seed) to judge it on, episode by episode,
as a robot would use it (the first frame it calls successful ends the episode with the reward):
- detected: successful episodes whose final frame (inserted 2 cm deep) it calls successful;
- early: episodes it calls successful before their end (a false reward: for a successful one, how many frames early);
- false: failed episodes it calls successful anywhere.
The classifier: robo_rl.robot.classifier (`robo-rl train-classifier`), the last `--last-frames` frames of a
successful episode positive.

Usage: `python bench/peg_classifier.py [--last-frames 3]`; results in bench/results/peg_classifier.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from machine import machine_info

from robo_rl.robot.classifier import ClassifierConfig, episode_rows, load_labelled_frames, train_classifier

RESULTS = Path(__file__).parent / "results" / "peg_classifier.json"
ROBO_RL = str(Path(sys.executable).parent / "robo-rl")


def record(path: Path, seed: int) -> None:
    command = [ROBO_RL, "record-demos", "mujoco/peg_insert", "--episodes", "20", "--seed", str(seed), "-o", str(path)]
    subprocess.run(command, check=True, capture_output=True)


def judge(classifier: Any, path: Path) -> dict[str, Any]:
    """Episode-level verdicts of `classifier` on the finished episodes of demo file `path`."""
    with np.load(path) as data:
        obs, next_obs, success = data["obs"], data["next_obs"], data["success"]
        done = data["terminated"] | data["truncated"]
        num_envs = json.loads(str(data["meta"]))["num_envs"]
    detected = early = false = successes = 0
    frames_early = []
    for rows in episode_rows(done, num_envs):
        frames = np.concatenate((obs[rows], next_obs[rows[-1:]])).astype(np.float32)
        called = classifier.predict(frames) > 0.5
        first = int(np.argmax(called)) if called.any() else None
        if bool(success[rows[-1]]):
            successes += 1
            detected += bool(called[-1])
            if first is not None and first < len(frames) - 1:
                early += 1
                frames_early.append(len(frames) - 1 - first)
        else:
            false += first is not None
    failures = len(episode_rows(done, num_envs)) - successes
    return {
        "successful_episodes": successes,
        "detected": detected,
        "called_early": early,
        "frames_early": frames_early,
        "failed_episodes": failures,
        "false_successes": false,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--last-frames", type=int, default=3, help="positive frames per successful episode")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        train_file, test_file = Path(tmp) / "train.npz", Path(tmp) / "test.npz"
        record(train_file, seed=11)
        record(test_file, seed=12)
        frames, labels, names = load_labelled_frames(train_file, args.last_frames)
        classifier, report = train_classifier(frames, labels, ClassifierConfig(last_frames=args.last_frames), names)
        verdicts = judge(classifier, test_file)
    out = {"machine": machine_info(), "last_frames": args.last_frames, "holdout": report.lines(), **verdicts}
    print(json.dumps({k: v for k, v in out.items() if k != "machine"}, indent=1))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
