"""ONNX policy → C99 for microcontrollers (installed as `robo_rl.firmware_export`).

- `ir`: `load_policy(path | ModelProto) -> PolicyIR`, a chain of Dense / Activation / Clip / Elementwise layers
  read from the ONNX graph (constants folded), with the observation/action metadata; `evaluate` runs it in numpy.
  A policy with memory (`robo_rl.memory`, a GRU) has one stateful `Gru` layer: `evaluate_step` and
  `evaluate_episode` carry its state `h_in -> h_out`, and its C entry is `{prefix}_policy_step(obs, h_in, action,
  h_out)` with `{prefix}_policy_reset(state)` (float32 only).
- `quantize`: `quantize(ir, calibration_obs, activations="float" | "int8") -> QuantizedIR` (int8 weights with
  per-output-channel scales), its numpy simulation, error report and worst-case bound.
- `codegen`: `generate_c(ir, prefix, quantization) -> CSources`, one header and one source, no heap, no libc.
- `build`: host shared library through ctypes (`build_host`, `build_host_library`) and the Cortex-M4F object
  with its size (`build_cortex_m4`).
- `qemu`: the generated code on an emulated Cortex-M4 (outputs and instructions per inference).
- `targets`: the `robo-rl export --target ...` folders (generic C, Crazyflie, Arduino).

Needs numpy and onnx (onnxruntime only to verify); never torch. Submodules are imported explicitly, so importing
this package alone pulls in nothing.
"""
