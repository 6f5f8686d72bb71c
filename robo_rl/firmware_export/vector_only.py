"""The C export's refusal of image policies: one line that says why, before any layer is read.

The generated C is a chain of dense layers over one float vector (`robo_rl.firmware_export.ir`); a policy with
camera inputs needs convolutions over uint8 frames, which no supported board could run at its control rate anyway.
Without this check such a file fails deep in the graph reader on its first uint8 input or Conv node, a message
that reads like a bug in the exporter rather than a policy it was never meant to take.

Two signs, either enough: the artifact lists cameras (`robo_rl.images`, schema 4, a robo_rl camera policy), or the
graph has an input that is uint8 or four-dimensional (a foreign file with image inputs and no robo_rl metadata).
"""

from __future__ import annotations

import json

import onnx

from robo_rl.artifact import IMAGES_KEY
from robo_rl.firmware_export.onnx_ops import UnsupportedGraphError

VECTOR_ONLY = "the C export handles vector policies only"
IMAGE_RANK = 4
"""Rank of a batch of images, `(batch, H, W, C)` or `(batch, C, H, W)`: no vector policy has such an input."""


class ImagePolicyError(UnsupportedGraphError):
    """The policy observes camera images; the message names the cameras (or image inputs), on one line."""


def check_vector_policy(model: onnx.ModelProto) -> None:
    """ImagePolicyError if `model` takes camera images (by its metadata or by its inputs); None otherwise."""
    cameras = declared_cameras(model)
    if cameras:
        raise ImagePolicyError(f"policy has camera inputs ({', '.join(cameras)}): {VECTOR_ONLY}")
    images = image_inputs(model)
    if images:
        raise ImagePolicyError(f"policy has image inputs ({', '.join(images)}): {VECTOR_ONLY}")


def declared_cameras(model: onnx.ModelProto) -> tuple[str, ...]:
    """The camera names the artifact's `robo_rl.images` lists; a value that is not a list of named specs still
    declares cameras (it is only unreadable), so it gives the key itself rather than nothing."""
    text = next((p.value for p in model.metadata_props if p.key == IMAGES_KEY), None)
    if text is None:
        return ()
    try:
        names = tuple(str(item["name"]) for item in json.loads(text))
    except (ValueError, TypeError, KeyError):
        return (f"unreadable {IMAGES_KEY}",)
    return names or (IMAGES_KEY,)


def image_inputs(model: onnx.ModelProto) -> tuple[str, ...]:
    """`name dtype [dims]` of each graph input that is uint8 or of rank 4 (initializers listed as inputs by old
    exporters are skipped)."""
    constants = {tensor.name for tensor in model.graph.initializer}
    found = []
    for value in model.graph.input:
        tensor = value.type.tensor_type
        dims = [d.dim_param or str(d.dim_value) for d in tensor.shape.dim]
        if value.name in constants or (tensor.elem_type != onnx.TensorProto.UINT8 and len(dims) != IMAGE_RANK):
            continue
        dtype = onnx.TensorProto.DataType.Name(tensor.elem_type).lower()
        found.append(f"{value.name} {dtype} [{', '.join(dims)}]")
    return tuple(found)
