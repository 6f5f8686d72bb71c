"""robo_rl.artifact: the one definition of a policy file's metadata, as export writes it and deployment and the
firmware export read it."""

from __future__ import annotations

import math
import subprocess
import sys
from dataclasses import replace

import pytest

from robo_rl import artifact as artifact_module
from robo_rl.artifact import (
    ACTION_CHUNK_KEY,
    SCHEMA_KEY,
    SCHEMA_VERSION,
    ArtifactError,
    NewerSchemaError,
    PolicyArtifact,
)
from robo_rl.spaces import SpaceSpec

ARTIFACT = PolicyArtifact(
    obs=SpaceSpec(("x", "v"), (-1.0, -math.inf), (1.0, math.inf), ("m", "m/s")),
    action=SpaceSpec(("thrust",), (0.0,), (1.0,), ("1",)),
    dt=0.01,
    task="quadrotor/hover",
    config_hash="c" * 16,
    git_hash="g" * 40,
    version="0.1.0",
)


def test_props_round_trip_exactly_with_infinite_bounds() -> None:
    props = ARTIFACT.to_props()
    assert all(isinstance(value, str) for value in props.values())
    assert props[SCHEMA_KEY] == "1" and ACTION_CHUNK_KEY not in props  # unchunked files stay schema 1
    assert PolicyArtifact.from_props(props) == ARTIFACT
    assert PolicyArtifact.from_foreign(props, 2, 1) == ARTIFACT


def test_a_newer_schema_is_refused_with_a_clear_error_and_a_missing_one_is_schema_1() -> None:
    props = {**ARTIFACT.to_props(), SCHEMA_KEY: str(SCHEMA_VERSION + 1)}
    for read in (PolicyArtifact.from_props, lambda p: PolicyArtifact.from_foreign(p, 2, 1)):
        with pytest.raises(NewerSchemaError, match=r"newer robo_rl .*upgrade robo_rl"):
            read(props)
    older = {key: value for key, value in ARTIFACT.to_props().items() if key != SCHEMA_KEY}
    assert PolicyArtifact.from_props(older).schema == 1


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("robo_rl.dt", None, r"missing metadata 'robo_rl\.dt'"),
        ("robo_rl.dt", "fast", r"'robo_rl\.dt' is not a number"),
        ("robo_rl.obs_low", "[1.0", r"'robo_rl\.obs_low' is not a JSON list of float"),
        ("robo_rl.obs_units", '["m"]', r"robo_rl\.obs_\*: SpaceSpec fields differ in length"),
        ("robo_rl.schema", "two", r"'robo_rl\.schema' is not an integer"),
    ],
)
def test_strict_reading_names_the_bad_key(key: str, value: str | None, message: str) -> None:
    props = ARTIFACT.to_props()
    if value is None:
        del props[key]
    else:
        props[key] = value
    with pytest.raises(ArtifactError, match=message):
        PolicyArtifact.from_props(props)


def test_a_foreign_file_gets_unnamed_unbounded_vectors_of_the_graph_widths() -> None:
    artifact = PolicyArtifact.from_foreign({}, 3, 2)
    assert artifact.obs == SpaceSpec.unnamed("obs", 3) and artifact.obs.names == ("obs_0", "obs_1", "obs_2")
    assert artifact.action.low == (-math.inf, -math.inf) and artifact.dt is None and artifact.task is None
    with pytest.raises(ArtifactError, match=r"robo_rl\.obs_names: expected a list of 3"):
        PolicyArtifact.from_foreign({"robo_rl.obs_names": '["a"]'}, 3, 2)


def test_importing_it_loads_neither_torch_nor_numpy() -> None:
    code = "import sys, robo_rl.artifact; print(sorted({'torch', 'numpy'} & set(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


CHUNKED = replace(ARTIFACT, action_chunk=5)


def test_a_chunked_policy_is_schema_2_with_one_steps_action_spec_and_its_horizon() -> None:
    props = CHUNKED.to_props()
    assert props[SCHEMA_KEY] == "2" == str(SCHEMA_VERSION) and props[ACTION_CHUNK_KEY] == "5"
    assert props["robo_rl.action_names"] == '["thrust"]'  # one step: a robot profile matches it unchanged
    assert PolicyArtifact.from_props(props) == CHUNKED and CHUNKED.output_dim == 5
    assert PolicyArtifact.from_foreign(props, 2, 5) == CHUNKED  # the graph's output: 5 steps of 1 action
    with pytest.raises(ArtifactError, match=r"action_chunk: 5 does not divide the output width 7"):
        PolicyArtifact.from_foreign(props, 2, 7)


def test_a_robo_rl_that_reads_only_schema_1_refuses_a_chunked_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(artifact_module, "SCHEMA_VERSION", 1)  # the reader before chunks
    with pytest.raises(NewerSchemaError, match=r"policy schema 2; this robo_rl reads up to 1"):
        PolicyArtifact.from_props(CHUNKED.to_props())
    assert PolicyArtifact.from_props(ARTIFACT.to_props()) == ARTIFACT  # unchunked files still read


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({ACTION_CHUNK_KEY: "three"}, r"'robo_rl\.action_chunk' is not an integer"),
        ({ACTION_CHUNK_KEY: "0"}, r"'robo_rl\.action_chunk' must be >= 1"),
        ({ACTION_CHUNK_KEY: "4", SCHEMA_KEY: "1"}, r"needs robo_rl\.schema >= 2, the file says 1"),
    ],
)
def test_a_bad_chunk_is_refused_naming_the_key(props: dict[str, str], message: str) -> None:
    with pytest.raises(ArtifactError, match=message):
        PolicyArtifact.from_props({**CHUNKED.to_props(), **props})
    with pytest.raises(ArtifactError, match=r"action_chunk: must be an integer >= 1"):
        replace(ARTIFACT, action_chunk=0)
