"""robo_rl.artifact: the one definition of a policy file's metadata, as export writes it and deployment and the
firmware export read it."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from robo_rl import artifact as artifact_module
from robo_rl.actuator import ACTUATOR_KEY, MotorActuator
from robo_rl.artifact import (
    ACTION_CHUNK_KEY,
    ACTUATOR_SCHEMA,
    CHUNK_SCHEMA,
    IMAGE_PREPROCESSING_KEY,
    IMAGES_KEY,
    IMAGES_SCHEMA,
    MEMORY_KEY,
    MEMORY_SCHEMA,
    SCHEMA_KEY,
    SCHEMA_VERSION,
    VEHICLE_KEY,
    ArtifactError,
    NewerSchemaError,
    PolicyArtifact,
    vehicle_card_json,
)
from robo_rl.image_spec import CameraIntrinsics, ImageSpec
from robo_rl.memory_spec import MemorySpec
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
    assert props[SCHEMA_KEY] == "2" == str(CHUNK_SCHEMA) and props[ACTION_CHUNK_KEY] == "5"
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


ACTUATOR = MotorActuator(
    thrust_curve=(0.0035, 0.0144, 0.0922),
    torque_to_thrust=0.0047,
    motor_rise_time_constant=0.03,
    motor_fall_time_constant=0.08,
    command_low=0.0,
    command_high=1.0,
    action_low=0.0,
    action_high=1.0,
    frame="crazyflie_2_1",
    hover_action=0.61,
)
MOTOR = replace(ARTIFACT, actuator=ACTUATOR)


def test_the_actuator_model_round_trips_as_json_in_a_schema_3_file() -> None:
    props = MOTOR.to_props()
    assert props[SCHEMA_KEY] == "3" == str(ACTUATOR_SCHEMA)
    assert MotorActuator.from_json(props[ACTUATOR_KEY]) == ACTUATOR
    assert PolicyArtifact.from_props(props) == MOTOR and PolicyArtifact.from_foreign(props, 2, 1) == MOTOR
    assert PolicyArtifact.from_props(ARTIFACT.to_props()).actuator is None  # files without it: none, schema 1
    chunked = replace(MOTOR, action_chunk=5).to_props()
    assert chunked[SCHEMA_KEY] == "3" and PolicyArtifact.from_props(chunked).action_chunk == 5


def test_a_robo_rl_without_actuators_refuses_a_file_that_states_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """An older robo_rl ignores unknown keys, so it would read the motor actions with its own meaning (a thrust
    fraction, sent as its square root by its Crazyflie export): the file's schema makes it refuse instead."""
    monkeypatch.setattr(artifact_module, "SCHEMA_VERSION", 2)  # the reader before actuators
    with pytest.raises(NewerSchemaError, match=r"policy schema 3; this robo_rl reads up to 2"):
        PolicyArtifact.from_props(MOTOR.to_props())
    assert PolicyArtifact.from_props(ARTIFACT.to_props()) == ARTIFACT


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", r"'robo_rl\.actuator': is not JSON"),
        ("[1, 2]", r"'robo_rl\.actuator': must be a JSON object"),
        ('{"thrust_curve": [0, 1]}', r"'robo_rl\.actuator': missing fields \['motor_fall_time_constant', "),
        (ACTUATOR.to_json().replace("0.0922]", "0.0922, 1.0]"), r"thrust_curve needs 3 coefficients"),
        (ACTUATOR.to_json().replace('"motor_command"', '"servo"'), r"actuator kind 'servo' is not known"),
        (ACTUATOR.to_json().replace('"frame"', '"frames"'), r"unknown fields \['frames'\]"),
        (ACTUATOR.to_json().replace("0.08", '"slow"'), r"must be finite numbers: \['motor_fall_time_constant'\]"),
        (ACTUATOR.to_json().replace('"command_high": 1.0', '"command_high": 1.5'), r"command_high <= 1"),
    ],
)
def test_a_malformed_actuator_model_is_refused_naming_the_key(text: str, message: str) -> None:
    for read in (PolicyArtifact.from_props, lambda p: PolicyArtifact.from_foreign(p, 2, 1)):
        with pytest.raises(ArtifactError, match=message):
            read({**MOTOR.to_props(), ACTUATOR_KEY: text})


def test_an_actuator_must_cover_the_action_bounds_and_needs_schema_3() -> None:
    with pytest.raises(
        ArtifactError, match=r"its action range \[-1, 1\] is not that of the action\(s\) thrust \[0, 1\]"
    ):
        replace(ARTIFACT, actuator=replace(ACTUATOR, action_low=-1.0))
    with pytest.raises(ArtifactError, match=r"'robo_rl\.actuator' needs robo_rl\.schema >= 3, the file says 2"):
        PolicyArtifact.from_props({**MOTOR.to_props(), SCHEMA_KEY: "2"})


def test_the_actuator_map_is_linear_in_the_motor_command_hand_computed() -> None:
    """u = command_low + (a - action_low) / (action_high - action_low) * (command_high - command_low), clipped;
    PWM round(u * 65535) (crazyflie-firmware: powerDistributionForce sends normalizedForces * UINT16_MAX)."""
    model = replace(ACTUATOR, action_low=-1.0, command_low=0.1, command_high=0.9, hover_action=0.0)
    assert [model.command(a) for a in (-2.0, -1.0, 0.0, 0.5, 1.0, 3.0)] == pytest.approx([0.1, 0.1, 0.5, 0.7, 0.9, 0.9])
    assert model.action(0.7) == pytest.approx(0.5) and model.slope == pytest.approx(0.4)
    assert model.pwm(1.0) == round(0.9 * 65535) and model.thrust(0.5) == pytest.approx(0.0035 + 0.0072 + 0.02305)


def test_a_run_records_the_envs_actuator_and_export_writes_it(tmp_path: Path) -> None:
    """`robo-rl train` records `task_specs(env)` in RUN/task.yaml, the env's actuator model with its hover action
    among them (recorded when the run trains: a later simulator may mean something else by an action); export
    writes it into policy.onnx. A run recorded before it reads back without one."""
    import torch

    from robo_rl.envs import task_specs
    from robo_rl.export.onnx import PolicyMetadata, export_onnx, read_metadata
    from robo_rl.sim import make
    from robo_rl.task_record import TaskRecord, read_task_record, write_task_record

    env = make("quadrotor/hover", num_envs=1)
    specs = task_specs(env)
    assert specs.actuator is not None and specs.actuator.hover_action == pytest.approx(env.hover_action[0])
    write_task_record(tmp_path, TaskRecord("quadrotor/hover", {}, specs))
    recorded = read_task_record(tmp_path)
    assert recorded is not None and recorded.specs == specs
    older = replace(specs, actuator=None).to_dict()
    assert "actuator" not in older and type(specs).from_dict(older).actuator is None

    actor = torch.nn.Sequential(torch.nn.Linear(specs.obs.dim, specs.action.dim), torch.nn.Tanh())
    metadata = PolicyMetadata(specs.obs, specs.action, specs.dt, "quadrotor/hover", "c", "g", actuator=specs.actuator)
    props = read_metadata(export_onnx(actor, metadata, tmp_path / "policy.onnx"))
    assert PolicyArtifact.from_props(props).actuator == specs.actuator and props[SCHEMA_KEY] == "3"


CAMERAS = (ImageSpec("wrist", 64, 64, 3, CameraIntrinsics.from_fovy(60.0, 64, 64)), ImageSpec("fixed", 48, 64, 1))
VISION = replace(MOTOR, images=CAMERAS)


def test_camera_inputs_round_trip_in_a_schema_4_file_with_the_preprocessing_stated() -> None:
    props = VISION.to_props()
    assert props[SCHEMA_KEY] == "4" == str(IMAGES_SCHEMA)
    assert "resize and crop to the spec's size" in props[IMAGE_PREPROCESSING_KEY]
    assert PolicyArtifact.from_props(props) == VISION and PolicyArtifact.from_foreign(props, 2, 1) == VISION
    assert PolicyArtifact.from_props(MOTOR.to_props()).images == ()


def test_a_robo_rl_without_cameras_refuses_a_camera_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader of schema 3 would feed the graph the state alone: the schema makes it refuse the file."""
    monkeypatch.setattr(artifact_module, "SCHEMA_VERSION", 3)
    with pytest.raises(NewerSchemaError, match=r"policy schema 4; this robo_rl reads up to 3"):
        PolicyArtifact.from_props(VISION.to_props())


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({SCHEMA_KEY: "3"}, r"'robo_rl\.images' needs robo_rl\.schema >= 4, the file says 3"),
        ({IMAGE_PREPROCESSING_KEY: "normalize by ImageNet mean"}, r"'robo_rl\.image_preprocessing' must be"),
        ({IMAGES_KEY: "[]"}, r"'robo_rl\.images': expected a non-empty JSON list"),
        ({IMAGES_KEY: "{"}, r"'robo_rl\.images': "),
        ({IMAGES_KEY: '[{"name": "a", "height": 8, "width": 8, "layout": "CHW"}]'}, "layout must be 'HWC'"),
        ({IMAGES_KEY: '[{"name": "a", "height": 8, "width": 8}, {"name": "a", "height": 8, "width": 8}]'}, "repeated"),
    ],
)
def test_malformed_camera_metadata_is_refused_naming_the_key(change: dict[str, str], message: str) -> None:
    with pytest.raises(ArtifactError, match=message):
        PolicyArtifact.from_props({**VISION.to_props(), **change})


RECURRENT = replace(MOTOR, memory=MemorySpec("gru", 16))


def test_memory_round_trips_in_a_schema_5_file_naming_its_state_input_and_output() -> None:
    props = RECURRENT.to_props()
    assert props[SCHEMA_KEY] == "5" == str(MEMORY_SCHEMA) == str(SCHEMA_VERSION)
    stated = json.loads(props[MEMORY_KEY])
    assert stated["input"] == "h_in" and stated["output"] == "h_out" and stated["size"] == 16
    assert stated["reset_value"] == 0.0 and "episode's first step" in stated["reset_rule"]
    assert PolicyArtifact.from_props(props) == RECURRENT and PolicyArtifact.from_foreign(props, 2, 1) == RECURRENT
    assert PolicyArtifact.from_props(MOTOR.to_props()).memory is None


def test_a_robo_rl_without_memory_refuses_a_recurrent_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader of schema 4 would run the graph without its state: the schema makes it refuse the file."""
    monkeypatch.setattr(artifact_module, "SCHEMA_VERSION", 4)
    with pytest.raises(NewerSchemaError, match=r"policy schema 5; this robo_rl reads up to 4"):
        PolicyArtifact.from_props(RECURRENT.to_props())


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({SCHEMA_KEY: "4"}, r"'robo_rl\.memory' needs robo_rl\.schema >= 5, the file says 4"),
        ({MEMORY_KEY: "{"}, r"'robo_rl\.memory': "),
        ({MEMORY_KEY: '{"kind": "lstm"}'}, r"missing fields"),
        ({MEMORY_KEY: json.dumps({**MemorySpec("gru", 4).to_dict(), "size": 0})}, r"size must be an integer >= 1"),
        ({MEMORY_KEY: json.dumps({**MemorySpec("gru", 4).to_dict(), "kind": "lstm"})}, r"kind must be one of"),
        ({MEMORY_KEY: json.dumps({**MemorySpec("gru", 4).to_dict(), "input": "state"})}, r"must be 'h_in'"),
        ({MEMORY_KEY: json.dumps({**MemorySpec("gru", 4).to_dict(), "reset_rule": "never"})}, r"not the rule"),
    ],
)
def test_malformed_memory_metadata_is_refused_naming_the_key(change: dict[str, str], message: str) -> None:
    with pytest.raises(ArtifactError, match=message):
        PolicyArtifact.from_props({**RECURRENT.to_props(), **change})


CARD = {"kind": "cart", "observation": [{"names": ["x"], "quantity": "position"}, {"names": ["v"]}], "mass": 1.5}
CARDED = replace(ARTIFACT, vehicle=vehicle_card_json(CARD))


def test_the_vehicle_card_round_trips_as_canonical_json_without_raising_the_schema() -> None:
    """The card documents what the graph does not hold and changes nothing a reader does with the file: an older
    robo_rl ignores the key and runs the policy the same, so the file keeps its schema (1 here)."""
    props = CARDED.to_props()
    assert props[SCHEMA_KEY] == "1" and props[VEHICLE_KEY] == vehicle_card_json(dict(reversed(CARD.items())))
    assert PolicyArtifact.from_props(props) == CARDED and PolicyArtifact.from_foreign(props, 2, 1) == CARDED
    assert CARDED.vehicle_card == CARD and ARTIFACT.vehicle_card is None and VEHICLE_KEY not in ARTIFACT.to_props()
    assert replace(MOTOR, vehicle=CARDED.vehicle).to_props()[SCHEMA_KEY] == "3"  # the actuator's, not the card's


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", r"'robo_rl\.vehicle' is not JSON"),
        ("[1]", r"must be a JSON object"),
        ('{"mass": 1}', r"needs a 'kind'"),
        ('{"kind": "cart", "observation": {"names": ["x"]}}', r"list of groups with 'names'"),
        ('{"kind": "cart", "observation": [{"names": ["v"]}, {"names": ["x"]}]}', r"not the policy's 2 observations"),
        ('{"kind": "cart", "observation": [{"names": ["x"]}]}', r"name 1 entries"),
    ],
)
def test_a_malformed_vehicle_card_is_refused_naming_the_key(text: str, message: str) -> None:
    with pytest.raises(ArtifactError, match=message):
        PolicyArtifact.from_props({**ARTIFACT.to_props(), VEHICLE_KEY: text})


def test_a_card_with_non_finite_numbers_is_refused() -> None:
    with pytest.raises(ArtifactError, match=r"not plain finite JSON"):
        vehicle_card_json({"kind": "cart", "mass": math.nan})
