"""Incremental replay buffer checkpoints: append-only chunk files of the transitions added since the last save.

A full replay buffer takes seconds to write (1M quadrotor transitions are about 300 MB); the transitions collected
between two checkpoints are usually a small part of it. So a runner's latest.pt holds a manifest instead of the
buffer: the buffer's sizes, its count of added transitions, and the chunk files (oldest first) that together hold
every transition still in the ring. Each save writes one new chunk (atomically, before the checkpoint that names
it). `ReplayLog.restore` reads the chunks back into a `ReplayHistory`, from which `ReplayBuffer.load_history`
rebuilds the ring exactly (same slots, length and ring position).

A small newest chunk is merged into the next one (`SMALL_CHUNK`). A chunk file is deleted once neither of the last
two checkpoints names it (latest.pt and the previous.pt it
replaced), so a fallback to previous.pt reads its own transitions, never those of the newer latest.pt.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from robo_rl.storage import checkpoint
from robo_rl.storage.replay import (
    FIELD_NAMES,
    ReplayBuffer,
    ReplayHistory,
    Transitions,
    vector_transitions,
    with_costs,
)

CHUNKS_KEY = "replay_chunks"
"""Key that marks a manifest (and holds its chunks as (start, count) pairs)."""
SMALL_CHUNK = 1 / 32
"""A newest chunk holding less than this share of the capacity is rewritten into the next save's chunk, so that
frequent small saves do not pile up files: a ring spans at most about 34 chunk files."""
_SIZE_KEYS = ("capacity", "obs_dim", "critic_obs_dim", "action_dim")


@dataclass(frozen=True)
class Chunk:
    """A chunk file: transitions number `start` to `start + count - 1` of a buffer, in insertion order."""

    start: int
    count: int

    @property
    def end(self) -> int:
        return self.start + self.count

    @property
    def file_name(self) -> str:
        return f"chunk-{self.start:015d}-{self.count:09d}.pt"


def replay_directory(checkpoint_path: Path) -> Path:
    """Where the chunk files of a checkpoint live: `replay/` beside it."""
    return checkpoint_path.parent / "replay"


def is_manifest(state: Any) -> bool:
    return isinstance(state, dict) and CHUNKS_KEY in state


class ReplayLog:
    """The chunk files of one buffer in `directory`, and which of them the last two checkpoints name.

    Use: `manifest = log.append(buffer)`, write the checkpoint holding the manifest, then `log.commit(manifest)`;
    to resume, `history = log.restore(manifest)` and `buffer.load_history(history)`.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._written = 0
        """Count of added transitions that the committed chunks reach."""
        self._committed: tuple[Chunk, ...] = ()
        """The chunks of the checkpoint written (or restored) last: latest.pt."""
        self._kept: tuple[Chunk, ...] = ()
        """The chunks of the checkpoint before it: previous.pt."""

    def append(self, buffer: ReplayBuffer) -> dict[str, Any]:
        """Write the transitions added since the last commit to a new chunk file (with those of the newest chunk
        when it is small); returns the manifest of the whole buffer for the checkpoint."""
        oldest = buffer.added - len(buffer)
        chunks = [chunk for chunk in self._committed if chunk.end > oldest]
        start = max(self._written, oldest)
        if chunks and chunks[-1].count < SMALL_CHUNK * buffer.capacity and buffer.added > start:
            start = max(chunks.pop().start, oldest)
        if buffer.added > start:
            chunk = Chunk(start, buffer.added - start)
            transitions = buffer.since(start)
            state = {"start": start, "transitions": {name: getattr(transitions, name) for name in FIELD_NAMES}}
            checkpoint.save_atomic(state, self.directory / chunk.file_name)
            chunks.append(chunk)
        sizes = {key: getattr(buffer, key) for key in _SIZE_KEYS}
        return {**sizes, "added": buffer.added, CHUNKS_KEY: [(c.start, c.count) for c in chunks]}

    def commit(self, manifest: dict[str, Any]) -> None:
        """The checkpoint holding `manifest` is on disk (as latest.pt, the one before it as previous.pt): delete
        the chunk files neither names, and continue after it."""
        self._kept, self._committed = self._committed, _chunks(manifest)
        self._written = int(manifest["added"])
        self._delete_unnamed()

    def restore(self, manifest: dict[str, Any]) -> ReplayHistory:
        """The transitions `manifest` names, read from its chunk files (CheckpointError naming a missing or
        damaged file); the log continues after them, and keeps their files."""
        chunks = _chunks(manifest)
        sizes = {key: int(manifest[key]) for key in _SIZE_KEYS}
        added = int(manifest["added"])
        oldest = added - min(added, sizes["capacity"])
        self._check_coverage(chunks, oldest, added)
        pieces = [self._read(chunk) for chunk in chunks]
        transitions = _concatenate(pieces, skip=oldest - chunks[0].start) if pieces else _empty(sizes)
        self._committed, self._kept, self._written = chunks, (), added
        return ReplayHistory(sizes, added, transitions)

    def _check_coverage(self, chunks: tuple[Chunk, ...], oldest: int, added: int) -> None:
        """The chunks must follow each other and hold transitions `oldest` to `added - 1`."""
        contiguous = all(a.end == b.start for a, b in itertools.pairwise(chunks))
        if oldest == added:
            covers = not chunks
        else:
            covers = bool(chunks) and chunks[0].start <= oldest and chunks[-1].end == added
        if not (contiguous and covers):
            raise checkpoint.CheckpointError(
                f"{self.directory}: the manifest's chunks {[c.file_name for c in chunks]} do not hold transitions "
                f"{oldest}..{added - 1}"
            )

    def _read(self, chunk: Chunk) -> Transitions:
        path = self.directory / chunk.file_name
        if not path.is_file():
            raise checkpoint.CheckpointError(f"{path} is missing (the checkpoint's replay buffer needs it)")
        state = checkpoint.load(path, "cpu", required=("start", "transitions"))
        fields = with_costs(state["transitions"])
        counts = {len(fields[name]) if name in fields else -1 for name in FIELD_NAMES}
        if state["start"] != chunk.start or counts != {chunk.count}:
            raise checkpoint.CheckpointError(f"{path} does not hold transitions {chunk.start}..{chunk.end - 1}")
        return Transitions(**{name: fields[name] for name in FIELD_NAMES})

    def _delete_unnamed(self) -> None:
        named = {chunk.file_name for chunk in (*self._kept, *self._committed)}
        for path in self.directory.glob("*chunk-*"):
            if path.name not in named:
                path.unlink(missing_ok=True)


def _chunks(manifest: dict[str, Any]) -> tuple[Chunk, ...]:
    return tuple(Chunk(int(start), int(count)) for start, count in manifest[CHUNKS_KEY])


def _concatenate(pieces: list[Transitions], skip: int) -> Transitions:
    """The pieces one after the other, without the first `skip` transitions (already overwritten in the ring)."""
    return vector_transitions({name: torch.cat([getattr(p, name) for p in pieces])[skip:] for name in FIELD_NAMES})


def _empty(sizes: dict[str, int]) -> Transitions:
    """No transitions, with the row shapes of a buffer of `sizes`."""
    return ReplayBuffer(1, sizes["obs_dim"], sizes["critic_obs_dim"], sizes["action_dim"], "cpu").stored()
