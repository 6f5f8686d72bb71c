"""Success classifier: episodes of point/obstacle recorded as record-demos does (the scripted expert succeeds,
random actions fail), labelled, learned, saved and loaded back; bad files fail in one line."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from robo_rl.cli import classifier as classifier_cli
from robo_rl.envs import INFO_SUCCESS, BatchedEnv, StepResult
from robo_rl.hil.demos import save_demos
from robo_rl.robot.classifier import (
    ClassifierConfig,
    SuccessClassifier,
    TrainReport,
    episode_rows,
    label_frames,
    load_labelled_files,
    load_labelled_frames,
    stratified_split,
    train_classifier,
)
from robo_rl.runners.collect import collect_demonstrations
from robo_rl.sim import make, make_expert

TASK = "point/obstacle"
K = 5
CONFIG = ClassifierConfig(hidden_sizes=(32, 32), epochs=30, last_frames=K)
NAMES = ("x", "y", "vx", "vy", "goal_dx", "goal_dy", "obstacle_dx", "obstacle_dy")
AT_GOAL = np.array([0.0, 0.96, 0.0, 1.0, 0.0, 0.04, 0.0, -0.96], dtype=np.float32)
"""Robot just short of the goal (0, 1), moving toward it: a success state."""
AT_START = np.array([0.0, -1.0, 0.0, 0.0, 0.0, 2.0, 0.0, 1.0], dtype=np.float32)
"""Robot at rest at the start, 2 m from the goal: a failure state."""


class SuccessLog:
    """The env, keeping `info["success"]` of every step (as record-demos' file now does too)."""

    def __init__(self, env: BatchedEnv) -> None:
        self.env = env
        self.success: list[torch.Tensor] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.env, name)

    def step(self, action: torch.Tensor) -> StepResult:
        result = self.env.step(action)
        self.success.append(result[4][INFO_SUCCESS].clone())
        return result


def record(path: Path, envs: int, seed: int, expert: bool) -> Path:
    """Record `envs` envs for one time limit each as `robo-rl record-demos` does, adding a `success` array."""
    env = make(TASK, num_envs=envs, seed=seed)
    log = SuccessLog(env)
    policy: Callable[[torch.Tensor], torch.Tensor]
    if expert:
        pilot = make_expert(TASK, env)
        policy = lambda _obs: pilot.action()  # noqa: E731
    else:
        generator = torch.Generator().manual_seed(seed)
        policy = lambda obs: torch.rand(len(obs), 2, generator=generator) * 2 - 1  # noqa: E731
    demos = collect_demonstrations(log, policy, env.max_episode_steps * envs, seed=seed)  # type: ignore[arg-type]
    save_demos(path, demos.buffer, TASK, env, demos.episodes, "test")
    with np.load(path) as data:
        arrays = dict(data)
    np.savez_compressed(path, **arrays, success=torch.cat(log.success).numpy())
    return path


@pytest.fixture(scope="module")
def recordings(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("episodes")
    return record(folder / "expert.npz", 24, 0, expert=True), record(folder / "random.npz", 8, 1, expert=False)


@pytest.fixture(scope="module")
def trained(recordings: tuple[Path, Path]) -> tuple[SuccessClassifier, TrainReport, np.ndarray]:
    frames, labels, names = load_labelled_files(recordings, K)
    classifier, report = train_classifier(frames, labels, CONFIG, names)
    return classifier, report, frames


def test_labels_are_the_last_k_frames_of_successful_episodes() -> None:
    np.testing.assert_array_equal(label_frames(6, True, 3), [0, 0, 0, 1, 1, 1])
    np.testing.assert_array_equal(label_frames(2, True, 3), [1, 1])
    np.testing.assert_array_equal(label_frames(4, False, 3), [0, 0, 0, 0])
    # two envs stepping together: env 0 ends at its steps 1 and 2, env 1 at step 2 and then runs on unfinished
    done = np.array([0, 0, 1, 0, 1, 1, 0, 0], dtype=bool)
    rows = episode_rows(done, 2)
    assert [r.tolist() for r in rows] == [[0, 2], [4], [1, 3, 5]]


def test_episodes_of_a_recording_are_labelled_at_their_end(recordings: tuple[Path, Path]) -> None:
    expert, random = recordings
    frames, labels, names = load_labelled_frames(expert, K)
    assert names == NAMES and frames.shape[1] == len(NAMES) and frames.dtype == np.float32
    with np.load(expert) as data:
        successes = int((data["success"] & data["terminated"]).sum())
        done = data["terminated"] | data["truncated"]
    assert successes >= 24
    assert int(labels.sum()) == K * successes  # every expert episode is longer than K frames
    finished = episode_rows(done, 24)  # 24 envs recorded, step-major
    assert len(finished) == int(done.sum())
    assert len(frames) == sum(len(rows) + 1 for rows in finished)  # each episode's final observation too
    goal_distance = np.hypot(frames[:, 4], frames[:, 5])
    step = 0.05  # m per step at full speed
    assert goal_distance[labels].max() <= 0.1 + K * step + 1e-4
    assert goal_distance[~labels].min() > 0.1  # no negative frame is at the goal
    _, random_labels, _ = load_labelled_frames(random, K)
    assert len(random_labels) > 0 and not random_labels.any()
    _, more_labels, _ = load_labelled_frames(expert, 2 * K)
    assert int(more_labels.sum()) == 2 * K * successes


def test_classifier_learns_success_on_the_holdout(trained: tuple[SuccessClassifier, TrainReport, np.ndarray]) -> None:
    classifier, report, frames = trained
    assert report.train_frames + report.holdout_frames == len(frames)
    assert report.holdout_frames == pytest.approx(0.2 * len(frames), abs=2)
    assert report.holdout_positives == pytest.approx(0.2 * (report.train_positives + report.holdout_positives), abs=1)
    # positives are under 10 % of the frames: a classifier that never says success scores 0.9, so recall counts
    assert report.accuracy >= 0.9 and report.recall >= 0.8 and report.precision >= 0.5
    assert classifier.success(AT_GOAL) and not classifier.success(AT_START)
    probabilities = classifier.predict(np.stack((AT_GOAL, AT_START)))
    assert isinstance(probabilities, np.ndarray) and probabilities.shape == (2,)
    assert probabilities[0] > 0.9 and probabilities[1] < 0.1
    as_tensor = classifier.predict(torch.from_numpy(np.stack((AT_GOAL, AT_START))))
    assert isinstance(as_tensor, torch.Tensor)
    np.testing.assert_allclose(as_tensor.numpy(), probabilities)
    with pytest.raises(ValueError, match=r"expected \(\.\.\., 8\)"):
        classifier.predict(np.zeros((2, 7)))


def test_save_and_load_give_identical_predictions(
    trained: tuple[SuccessClassifier, TrainReport, np.ndarray], tmp_path: Path
) -> None:
    classifier, _, frames = trained
    path = tmp_path / "classifier.pt"
    classifier.save(path)
    loaded = SuccessClassifier.load(path)
    assert loaded.config == classifier.config and loaded.obs_names == NAMES
    np.testing.assert_array_equal(loaded.predict(frames), classifier.predict(frames))
    torch.testing.assert_close(loaded.mean, classifier.mean)
    assert float(loaded.std.min()) > 0 and not torch.equal(loaded.mean, torch.zeros_like(loaded.mean))


def test_a_damaged_or_foreign_classifier_file_is_one_line(
    trained: tuple[SuccessClassifier, TrainReport, np.ndarray], tmp_path: Path
) -> None:
    path = tmp_path / "classifier.pt"
    trained[0].save(path)
    data = path.read_bytes()
    truncated = tmp_path / "truncated.pt"
    truncated.write_bytes(data[: len(data) // 2])
    foreign = tmp_path / "foreign.pt"
    torch.save({"model": torch.zeros(3)}, foreign)
    empty = tmp_path / "empty.pt"
    empty.write_bytes(b"")
    for bad, problem in (
        (truncated, "truncated or not"),
        (foreign, "not a robo_rl success classifier"),
        (empty, "empty"),
    ):
        with pytest.raises(ValueError, match=problem) as caught:
            SuccessClassifier.load(bad)
        message = str(caught.value)
        assert message.startswith(f"{bad}: ") and "\n" not in message
    with pytest.raises(FileNotFoundError, match=r"missing\.pt: no such classifier file"):
        SuccessClassifier.load(tmp_path / "missing.pt")


def test_a_recording_without_success_information_is_refused(tmp_path: Path) -> None:
    env = make(TASK, num_envs=2, seed=0)
    pilot = make_expert(TASK, env)
    demos = collect_demonstrations(env, lambda _obs: pilot.action(), 20, seed=0)
    path = tmp_path / "plain.npz"
    save_demos(path, demos.buffer, TASK, env, demos.episodes, "test")  # record-demos' file: no success array
    with pytest.raises(ValueError, match=r"plain\.npz: no success information.*`labels`.*`success`"):
        load_labelled_frames(path)
    with np.load(path) as data:
        arrays = dict(data)
    labels = np.arange(len(arrays["obs"])) % 3 == 0
    np.savez(path, **arrays, labels=labels.astype(np.int64))  # an explicit label per frame is used as it is
    frames, loaded, names = load_labelled_frames(path)
    np.testing.assert_array_equal(loaded, labels)
    np.testing.assert_array_equal(frames, arrays["obs"])
    assert names == NAMES


def test_observation_subset(recordings: tuple[Path, Path]) -> None:
    frames, labels, names = load_labelled_files(recordings, K)
    cfg = ClassifierConfig(hidden_sizes=(16,), epochs=15, last_frames=K, obs_names=("goal_dx", "goal_dy"))
    classifier, report = train_classifier(frames, labels, cfg, names)
    assert classifier.index.tolist() == [4, 5] and report.recall >= 0.8
    moved = AT_GOAL.copy()
    moved[:4] = 100.0  # observations it does not read change nothing
    assert classifier.predict(moved) == classifier.predict(AT_GOAL)
    with pytest.raises(ValueError, match="'speed'"):
        SuccessClassifier(names, ClassifierConfig(obs_names=("speed",)))


def test_the_envelope_keeps_success_where_the_positives_were(tmp_path: Path) -> None:
    """A logistic regression on one observation (failures at 0-1, successes at 2-2.2) scores a frame far beyond
    the successes (10) successful: a policy trained on its reward would go there. The envelope (the training
    positives' range widened by 0.5 standard deviations of the training frames, worked out here from the split)
    says no there and yes where the positives were; it survives saving, and a file saved before it existed loads
    without one."""
    rng = np.random.default_rng(0)
    frames = np.concatenate([rng.uniform(0.0, 1.0, 400), rng.uniform(2.0, 2.2, 100)])[:, None].astype(np.float32)
    labels = np.arange(500) >= 400
    logistic = ClassifierConfig(hidden_sizes=(), epochs=40)
    plain, _ = train_classifier(frames, labels, replace(logistic, envelope=None))
    enveloped, report = train_classifier(frames, labels, logistic)
    far, where_positives_were = np.array([10.0], np.float32), np.array([2.1], np.float32)
    assert plain.success(far) and plain.success(where_positives_were)
    assert not enveloped.success(far) and enveloped.predict(far) == 0.0
    assert enveloped.success(where_positives_were) and report.recall == 1.0
    train, _ = stratified_split(labels, logistic.holdout_fraction, logistic.seed)
    positives, spread = frames[train][labels[train], 0], frames[train, 0].std()
    assert float(enveloped.low[0]) == pytest.approx(positives.min() - 0.5 * spread, rel=1e-5)
    assert float(enveloped.high[0]) == pytest.approx(positives.max() + 0.5 * spread, rel=1e-5)
    assert torch.isinf(plain.low).all() and torch.isinf(plain.high).all()
    path = tmp_path / "enveloped.pt"
    enveloped.save(path)
    loaded = SuccessClassifier.load(path)
    assert not loaded.success(far) and loaded.config.envelope == 0.5
    state = torch.load(path, weights_only=True)
    del state["state_dict"]["low"], state["state_dict"]["high"]
    del state["config"]["envelope"]
    torch.save(state, path)  # the format before the envelope
    older = SuccessClassifier.load(path)
    assert older.config.envelope is None and older.success(far)
    with pytest.raises(ValueError, match="envelope must be None or at least 0"):
        ClassifierConfig(envelope=-1.0)


def test_cli_trains_saves_and_reports(
    recordings: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = argparse.ArgumentParser()
    classifier_cli.add_parser(parser.add_subparsers(dest="command"))
    output = tmp_path / "clf.pt"
    argv = ["train-classifier", *map(str, recordings), "-o", str(output), "--last-frames", "5", "--epochs", "20"]
    args = parser.parse_args(argv)
    assert args.func(args) == 0
    printed = capsys.readouterr().out
    assert "holdout accuracy" in printed and f"wrote {output}" in printed
    assert SuccessClassifier.load(output).config.last_frames == 5
    assert SuccessClassifier.load(output).config.envelope == ClassifierConfig().envelope
    args = parser.parse_args([*argv, "--no-envelope"])
    assert args.func(args) == 0 and SuccessClassifier.load(output).config.envelope is None
    args = parser.parse_args([*argv, "--envelope", "-1"])
    with pytest.raises(ValueError, match="--envelope must be at least 0"):
        args.func(args)
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    args = parser.parse_args(["train-classifier", str(recordings[0]), str(bad), "-o", str(output)])
    with pytest.raises(ValueError, match=r"bad\.npz: not a complete \.npz archive"):
        args.func(args)
