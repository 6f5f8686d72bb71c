"""ONNX policy → C99 for microcontrollers (installed as `robo_rl.firmware_export`).

- `ir`: the layer IR, a chain of Dense / Activation / Clip / Elementwise layers with the observation/action
  metadata (`PolicyIR`). `onnx_reader.load_policy(path | ModelProto)` reads it from the ONNX graph (constants
  folded; operator handlers in `onnx_ops`, a GRU memory in `onnx_memory`); `evaluate` runs it in numpy.
  A policy with memory (`robo_rl.memory`, a GRU) has one stateful `Gru` layer: `evaluate_step` and
  `evaluate_episode` carry its state `h_in -> h_out`, and its C entry is `{prefix}_policy_step(obs, h_in, action,
  h_out)` with `{prefix}_policy_reset(state)` (float32 only).
- `quantize`: `quantize(ir, calibration_obs, activations="float" | "int8") -> QuantizedIR` (int8 weights with
  per-output-channel scales), its numpy simulation, error report and worst-case bound.
- `codegen`: `generate_c(ir, prefix, quantization) -> CSources`, one header and one source, no heap, no libc
  (parts in `c_stages`, `c_header`, `c_source`, `c_kernels`, `c_activations`, `c_text`).
- `flow`: a flow-matching policy's sampler as C.
- `build`: host shared library through ctypes (`build_host`, `build_host_library`) and the Cortex-M4F object
  with its size (`build_cortex_m4`).
- `qemu`: the generated code on an emulated Cortex-M4 (outputs and instructions per inference).
- `targets`: `export_target`, the `robo-rl export --target ...` folders; a board per module in `boards`
  (`board`: what a board is), the checks in `checks` against `onnx_reference`, the result in `report`.

Needs numpy and onnx (onnxruntime only to verify); never torch. Submodules are imported explicitly, so importing
this package alone pulls in nothing.
"""
