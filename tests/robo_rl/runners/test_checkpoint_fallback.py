"""latest.pt keeps previous.pt beside it; a damaged latest.pt falls back to it; saves happen by the clock too;
an off-policy latest.pt writes its replay buffer incrementally and resumes exactly, also from previous.pt."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch

from robo_rl.algorithms.sac import SAC, SACConfig
from robo_rl.algorithms.td3 import TD3, TD3Config
from robo_rl.distributed import LOCAL
from robo_rl.runners import save_schedule
from robo_rl.runners.loop_config import LoopConfig
from robo_rl.runners.off_policy import OffPolicyRunner
from robo_rl.runners.off_policy_config import OFF_POLICY_LOOP, OffPolicyRunnerConfig
from robo_rl.runners.run_dir import RunDirectory
from robo_rl.runners.save_schedule import SaveSchedule
from robo_rl.sim import make
from robo_rl.storage import checkpoint
from robo_rl.storage.checkpoint import CheckpointError


def _runner(name: str, cfg: OffPolicyRunnerConfig, seed: int = 0) -> OffPolicyRunner:
    """A pendulum runner with small networks (as in test_off_policy)."""
    env = make("pendulum", num_envs=1, seed=seed)
    low, high = env.action_spec.low_tensor(), env.action_spec.high_tensor()
    torch.manual_seed(seed)
    hidden = (64, 64)
    algorithm = (
        SAC(3, 3, low, high, SACConfig(actor_hidden=hidden, critic_hidden=hidden))
        if name == "sac"
        else TD3(3, 3, low, high, TD3Config(actor_hidden=hidden, critic_hidden=hidden))
    )
    return OffPolicyRunner(env, algorithm, cfg, seed)


def _flat_state(runner: OffPolicyRunner) -> dict[str, torch.Tensor]:
    tensors = {f"p.{k}": v for k, v in runner.algorithm.actor.state_dict().items()}
    tensors |= {f"q.{k}": v for k, v in runner.algorithm.critic.state_dict().items()}
    tensors |= {f"b.{k}": v for k, v in runner.buffer.state_dict().items() if isinstance(v, torch.Tensor)}
    return tensors


def _save(path: Path, iteration: int) -> None:
    checkpoint.save_keeping_previous({"iteration": iteration, "w": torch.full((4,), float(iteration))}, path)


def _damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    damaged = {"empty": b"", "truncated": data[: len(data) // 2], "garbage": b"not a checkpoint" * 8}[how]
    path.write_bytes(damaged)


def _restore(latest: Path) -> tuple[Path, list[int], list[str]]:
    """restore_latest with a recording loader: (path used, iterations restored, warnings)."""
    restored: list[int] = []
    warnings: list[str] = []
    used = checkpoint.restore_latest(
        latest, lambda p: restored.append(checkpoint.load(p, required=("iteration",))["iteration"]), warnings.append
    )
    return used, restored, warnings


def test_latest_keeps_the_file_it_replaces_as_previous(tmp_path: Path) -> None:
    latest = tmp_path / "latest.pt"
    _save(latest, 1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest.pt"]
    _save(latest, 2)
    _save(latest, 3)
    assert checkpoint.load(latest)["iteration"] == 3
    assert checkpoint.load(tmp_path / "previous.pt")["iteration"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest.pt", "previous.pt"]


def test_a_killed_write_leaves_a_temporary_that_the_next_save_removes(tmp_path: Path) -> None:
    latest = tmp_path / "latest.pt"
    _save(latest, 1)
    (tmp_path / ".latest.pt.abc123.tmp").write_bytes(b"half a checkpoint")  # what SIGKILL mid-write leaves
    (tmp_path / ".previous.pt.link.tmp").write_bytes(b"")
    _save(latest, 2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest.pt", "previous.pt"]


@pytest.mark.parametrize(
    ("how", "problem"),
    [("empty", "is empty (0 bytes)"), ("truncated", "is truncated or corrupt"), ("garbage", "is truncated or corrupt")],
)
def test_damaged_latest_falls_back_to_previous_with_one_warning(tmp_path: Path, how: str, problem: str) -> None:
    latest = tmp_path / "latest.pt"
    _save(latest, 1)
    _save(latest, 2)
    _damage(latest, how)
    used, restored, warnings = _restore(latest)
    assert used == tmp_path / "previous.pt" and restored == [1]
    assert len(warnings) == 1 and "\n" not in warnings[0]
    assert warnings[0].startswith(f"{latest} {problem}") and str(tmp_path / "previous.pt") in warnings[0]


def test_missing_latest_falls_back_to_previous(tmp_path: Path) -> None:
    _save(tmp_path / "latest.pt", 1)
    _save(tmp_path / "latest.pt", 2)
    (tmp_path / "latest.pt").unlink()
    used, restored, warnings = _restore(tmp_path / "latest.pt")
    assert used.name == "previous.pt" and restored == [1] and "is missing" in warnings[0]


def test_both_damaged_is_a_checkpoint_error_naming_both_files(tmp_path: Path) -> None:
    latest, previous = tmp_path / "latest.pt", tmp_path / "previous.pt"
    _save(latest, 1)
    _save(latest, 2)
    _damage(latest, "empty")
    _damage(previous, "truncated")
    with pytest.raises(CheckpointError) as raised:
        _restore(latest)
    message = str(raised.value)
    assert isinstance(raised.value, ValueError) and "\n" not in message
    assert f"{latest} is empty (0 bytes)" in message and f"{previous} is truncated or corrupt" in message


def test_damaged_latest_without_previous_says_so(tmp_path: Path) -> None:
    _save(tmp_path / "latest.pt", 1)
    _damage(tmp_path / "latest.pt", "truncated")
    with pytest.raises(CheckpointError, match=r"is truncated or corrupt .*no previous\.pt to fall back to"):
        _restore(tmp_path / "latest.pt")


def test_no_checkpoint_at_all_is_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no checkpoint to resume from"):
        _restore(tmp_path / "latest.pt")


def test_set_aside_moves_a_damaged_latest_out_of_the_rotation(tmp_path: Path) -> None:
    latest = tmp_path / "latest.pt"
    _save(latest, 1)
    _save(latest, 2)
    _damage(latest, "truncated")
    checkpoint.restore_latest(latest, lambda p: checkpoint.load(p), lambda _: None, set_aside=True)
    assert not latest.exists() and (tmp_path / "latest.pt.corrupt").is_file()
    _save(latest, 3)  # the next save keeps the good previous.pt (iteration 1), not the damaged file
    assert checkpoint.load(tmp_path / "previous.pt")["iteration"] == 1


def test_load_names_a_non_dict_and_a_missing_key(tmp_path: Path) -> None:
    torch.save([1, 2], tmp_path / "list.pt")
    with pytest.raises(CheckpointError, match=r"list.pt is not a checkpoint \(it holds a list"):
        checkpoint.load(tmp_path / "list.pt")
    torch.save({"w": 1}, tmp_path / "other.pt")
    with pytest.raises(CheckpointError, match=r"other.pt is not a training checkpoint \(no 'iteration'\)"):
        checkpoint.load(tmp_path / "other.pt", required=("iteration",))


# The clock


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_schedule_saves_before_every_s_of_training_would_be_lost(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _Clock()
    monkeypatch.setattr(save_schedule.time, "monotonic", clock)
    schedule = SaveSchedule(10.0, LOCAL)
    clock.now = 8.0
    assert not schedule.due(iteration_s=1.0)  # the next chance (9 s) still comes in time
    clock.now = 9.5
    assert schedule.due(iteration_s=1.0)  # waiting one more iteration would leave 10.5 s unsaved

    def write() -> None:
        clock.now += 2.0  # a slow write: the next save comes that much earlier

    schedule.save(write, torch.device("cpu"))
    assert schedule.write_s == 2.0
    # counted from when the saved state was taken (9.5 s), the write's 2 s included
    clock.now = 9.5 + 6.0
    assert not schedule.due(iteration_s=1.0)  # 6 + 1 + 2 = 9 s
    clock.now = 9.5 + 7.5
    assert schedule.due(iteration_s=1.0)  # 7.5 + 1 + 2 > 10 s


def test_schedule_with_zero_seconds_never_saves_by_time(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _Clock()
    monkeypatch.setattr(save_schedule.time, "monotonic", clock)
    schedule = SaveSchedule(0.0, LOCAL)
    clock.now = 1e9
    assert not schedule.due(iteration_s=1.0)


def test_save_every_s_must_not_be_negative() -> None:
    with pytest.raises(ValueError, match="save_every_s must not be negative"):
        LoopConfig(save_every_s=-1.0)


def _recorded_saves(runner: OffPolicyRunner) -> list[int]:
    saved: list[int] = []
    save = runner.save

    def recording(path: Path) -> None:
        saved.append(runner.iteration)
        save(path)

    runner.save = recording  # type: ignore[method-assign]
    return saved


def test_off_policy_runner_saves_by_time_between_save_intervals(tmp_path: Path) -> None:
    """A save_every_s shorter than any iteration saves after every iteration, whatever save_interval says."""
    cfg = OffPolicyRunnerConfig(
        loop=replace(OFF_POLICY_LOOP, max_iterations=5, eval_interval=0, save_interval=0, save_every_s=1e-9),
        learning_starts=10,
    )
    runner = _runner("td3", cfg)
    runner.run = RunDirectory.create(tmp_path, "x", 0, "{}\n", "test")
    saved = _recorded_saves(runner)
    runner.learn()
    assert saved == [1, 2, 3, 4, 5, 5]  # by time after each iteration, then the final checkpoint


# Off-policy latest.pt: incremental replay buffer


def _off_policy_cfg(iterations: int) -> OffPolicyRunnerConfig:
    return OffPolicyRunnerConfig(
        loop=replace(OFF_POLICY_LOOP, max_iterations=iterations, eval_interval=0),
        learning_starts=20,
        batch_size=16,
        buffer_capacity=60,
    )


def test_off_policy_resume_through_latest_and_its_chunks_is_exact(tmp_path: Path) -> None:
    latest = tmp_path / "checkpoints" / "latest.pt"
    straight = _runner("sac", _off_policy_cfg(110))
    straight.learn()
    first = _runner("sac", _off_policy_cfg(30))
    first.learn()
    first.save(latest)
    first.cfg = _off_policy_cfg(70)
    first.learn()  # the ring wraps between the two saves
    first.save(latest)
    assert "transitions" not in checkpoint.load(latest)["buffer"]  # a manifest, not the buffer
    resumed = _runner("sac", _off_policy_cfg(110))
    resumed.load(latest)
    assert len(resumed.buffer) == 60 and resumed.iteration == 70 and resumed.buffer.added == 70
    resumed.learn()
    a, b = _flat_state(straight), _flat_state(resumed)
    for key in a:
        assert torch.equal(a[key], b[key]), key


def test_saves_write_only_new_transitions_and_merge_small_chunks(tmp_path: Path) -> None:
    """Capacity 320: a chunk of fewer than 10 transitions (1/32) is merged into the next save's chunk."""
    latest = tmp_path / "latest.pt"
    runner = _runner(
        "sac",
        OffPolicyRunnerConfig(
            loop=replace(OFF_POLICY_LOOP, max_iterations=0), learning_starts=1000, buffer_capacity=320
        ),
    )
    files: list[list[str]] = []
    for iterations in (100, 103, 106, 109):
        runner.cfg = OffPolicyRunnerConfig(
            loop=replace(OFF_POLICY_LOOP, max_iterations=iterations), learning_starts=1000, buffer_capacity=320
        )
        runner.learn()  # one transition per iteration (1 env)
        runner.save(latest)
        files.append(sorted(p.name.split(".")[0] for p in (tmp_path / "replay").iterdir()))
    assert checkpoint.load(latest)["buffer"]["replay_chunks"] == [(0, 100), (100, 9)]
    assert files == [
        ["chunk-000000000000000-000000100"],
        ["chunk-000000000000000-000000100", "chunk-000000000000100-000000003"],  # only the 3 new ones written
        # (100, 3) was small: rewritten with the new 3 as (100, 6); previous.pt still names (100, 3)
        ["chunk-000000000000000-000000100", "chunk-000000000000100-000000003", "chunk-000000000000100-000000006"],
        ["chunk-000000000000000-000000100", "chunk-000000000000100-000000006", "chunk-000000000000100-000000009"],
    ]


def test_fallback_to_previous_pairs_with_the_older_replay_buffer(tmp_path: Path) -> None:
    latest = tmp_path / "checkpoints" / "latest.pt"
    runner = _runner("sac", _off_policy_cfg(30))
    runner.learn()
    runner.save(latest)
    at_30 = runner.buffer.state_dict()
    runner.cfg = _off_policy_cfg(70)
    runner.learn()
    runner.save(latest)
    _damage(latest, "truncated")
    resumed = _runner("sac", _off_policy_cfg(80))
    warnings: list[str] = []
    used = checkpoint.restore_latest(latest, resumed.load, warnings.append, set_aside=True)
    assert used.name == "previous.pt" and resumed.iteration == 30 and len(warnings) == 1
    state = resumed.buffer.state_dict()
    assert state["size"] == at_30["size"] == 30 and state["added"] == 30
    for name, tensor in at_30["transitions"].items():
        assert torch.equal(state["transitions"][name], tensor), name
    resumed.save(latest)  # goes on from previous.pt: its chunks stay, the newer ones go
    assert checkpoint.load(tmp_path / "checkpoints" / "previous.pt")["iteration"] == 30
    again = _runner("sac", _off_policy_cfg(80))
    again.load(tmp_path / "checkpoints" / "previous.pt")
    assert again.buffer.added == 30


def test_a_damaged_replay_chunk_makes_latest_unusable(tmp_path: Path) -> None:
    latest = tmp_path / "checkpoints" / "latest.pt"
    runner = _runner("sac", _off_policy_cfg(30))
    runner.learn()
    runner.save(latest)
    runner.cfg = _off_policy_cfg(70)
    runner.learn()
    runner.save(latest)
    chunk = sorted((tmp_path / "checkpoints" / "replay").glob("chunk-*"))[-1]
    _damage(chunk, "truncated")
    resumed = _runner("sac", _off_policy_cfg(80))
    with pytest.raises(CheckpointError, match=f"{chunk} is truncated or corrupt"):
        resumed.load(latest)
    assert resumed.iteration == 0  # nothing was applied
    warnings: list[str] = []
    checkpoint.restore_latest(latest, resumed.load, warnings.append)
    assert resumed.iteration == 30 and chunk.name in warnings[0]
