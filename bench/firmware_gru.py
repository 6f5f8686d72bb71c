"""Cortex-M4 cost of one control step of a GRU policy (issue 47): instructions per step in QEMU, parameters, sizes.

The policy: a RAPTOR-sized student (Eschmann et al. 2025: a dense layer, a GRU, a dense output) on the hover
task's observation (`--preset`, default quadrotor_hover_ppo: its obs and action specs, control period and actuator
model), obs → dense `--dense` (ELU) → GRU `--memory` → 4 motor commands, with random weights, exported by robo_rl's
own exporter (`robo_rl.export.onnx`, h_in → h_out), then generated as C (`robo_rl.firmware_export`). `--sizes`
adds other dense/GRU widths for comparison. For each size it reports:
- instructions of one `robo_rl_policy_step` on `qemu-system-arm -M mps2-an386 -cpu cortex-m4` (`-icount shift=0`
  and the board's 25 MHz timer, the state carried in place from a reset over the timed steps; the method checked
  on known loops, error reported), and the estimated time on the Crazyflie's STM32F405 at 168 MHz for 1.0-1.5
  cycles per instruction (an estimate: QEMU counts instructions, not cycles);
- parameters (weights and biases of the dense and GRU layers; the normalizer and action scaling not counted);
- text/data/bss of the policy object alone (`build_cortex_m4`);
- max |QEMU − onnxruntime| over a stream of 400 steps (200-step episodes, random resets in between), actions and
  states, each side carrying its own state.
Goals (issue 47): ≤ 20k parameters, ≤ 0.5 ms per step at 168 MHz.

    cd bench && ../.venv/bin/python firmware_gru.py   # → results/firmware_gru.json
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch
from machine import machine_info

from robo_rl.api.configs import preset
from robo_rl.export.onnx import PolicyMetadata, export_onnx
from robo_rl.firmware_export.build import build_cortex_m4
from robo_rl.firmware_export.codegen import generate_c
from robo_rl.firmware_export.ir import PolicyIR
from robo_rl.firmware_export.onnx_reader import load_policy
from robo_rl.firmware_export.onnx_reference import episode_starts, onnxruntime_episode
from robo_rl.firmware_export.qemu import estimated_latency_us, run_in_qemu
from robo_rl.firmware_export.quantize import sample_observations
from robo_rl.modules.actor_critic import PolicyConfig
from robo_rl.modules.recurrent import RecurrentActorCritic
from robo_rl.sim import make

RESULTS = Path(__file__).parent / "results" / "firmware_gru.json"
CLOCK_HZ = 168e6
CPI_RANGE = (1.0, 1.25, 1.5)
GOALS = {"parameters": 20_000, "ms_per_step_at_168mhz": 0.5}
STREAM_STEPS = 400


def export_student(path: Path, preset_name: str, dense: int, memory: int, seed: int) -> tuple[Path, int]:
    """The GRU student on the preset's task specs, random weights, exported as training would export it; returns
    (path, the actor's parameter count in torch: core and head)."""
    cfg = preset(preset_name)
    env = make(cfg.task.name, num_envs=1, seed=0, config=cfg.task.config)
    torch.manual_seed(seed)
    policy_cfg = PolicyConfig(actor_hidden=(dense,), memory="gru", memory_size=memory)
    low, high = env.action_spec.low_tensor(), env.action_spec.high_tensor()
    policy = RecurrentActorCritic(env.obs_spec.dim, low, high, policy_cfg)
    with torch.no_grad():  # a head that moves the actions (the init's 0.01 gain would keep them near the centre)
        for parameter in policy.head.parameters():
            parameter.normal_(0.0, 0.3)
    metadata = PolicyMetadata(
        env.obs_spec, env.action_spec, env.dt, cfg.task.name, "bench", "bench", actuator=env.actuator,
        memory=policy.memory,
    )  # fmt: skip
    actor_parameters = sum(p.numel() for p in [*policy.core.parameters(), *policy.head.parameters()])
    return export_onnx(policy.deterministic_actor(), metadata, path), actor_parameters


def measure(onnx_path: Path, ir: PolicyIR, args: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    obs = sample_observations(ir.info, STREAM_STEPS, seed=args.seed)
    starts = episode_starts(STREAM_STEPS, seed=args.seed)
    sources = generate_c(ir)
    result = run_in_qemu(sources, obs, scratch / "qemu", timed_inferences=args.timed_steps, resets=starts)
    size = build_cortex_m4(sources, scratch / "object")
    if not np.all(result.codes == 0) or result.instructions_per_inference is None or result.states is None:
        raise RuntimeError("the policy rejected a finite observation in QEMU")
    actions, states = onnxruntime_episode(onnx_path, obs, starts, ir.info)
    instructions = result.instructions_per_inference
    return {
        "instructions_per_step": round(instructions, 1),
        "timed_steps": result.timed_inferences,
        "instruction_count_max_relative_error": result.max_count_error,
        "estimated_ms_at_168mhz": {
            f"cpi_{cpi}": round(estimated_latency_us(instructions, CLOCK_HZ, cpi) / 1000, 4) for cpi in CPI_RANGE
        },
        "policy_object": {"text": size.text, "data": size.data, "bss": size.bss, "flash": size.flash, "ram": size.ram},
        "max_abs_error_vs_onnxruntime": {
            "actions": float(np.max(np.abs(result.outputs - actions))),
            "states": float(np.max(np.abs(result.states - states))),
            "steps": STREAM_STEPS,
            "resets": int(np.sum(starts)),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="quadrotor_hover_ppo", help="task specs (obs, actions, dt, actuator)")
    parser.add_argument("--dense", type=int, default=32, help="width of the dense layer before the GRU")
    parser.add_argument("--memory", type=int, default=32, help="GRU state size")
    parser.add_argument("--sizes", default="64x64", help="more DENSExGRU sizes to compare, comma-separated")
    parser.add_argument("--timed-steps", type=int, default=256, help="steps in the timed loop")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, default=RESULTS, help="JSON results path")
    args = parser.parse_args()
    sizes = [(args.dense, args.memory)] + [
        (int(d), int(m)) for d, m in (size.split("x") for size in args.sizes.split(",") if size)
    ]
    rows = {}
    print(f"{'policy':<28}{'params':>8}{'instructions':>14}{'ms@168MHz':>11}{'flash':>8}{'ram':>6}{'max err':>10}")
    for dense, memory in sizes:
        with tempfile.TemporaryDirectory(prefix="firmware_gru_") as scratch:
            onnx_path, torch_parameters = export_student(
                Path(scratch) / "policy.onnx", args.preset, dense, memory, args.seed
            )
            ir = load_policy(onnx_path)
            row = measure(onnx_path, ir, args, Path(scratch))
        name = f"{ir.obs_dim}-dense{dense}-gru{memory}-{ir.action_dim}"
        row = {"parameters": ir.parameter_count, "torch_actor_parameters": torch_parameters, **row}
        row["goals_met"] = {
            "parameters": row["parameters"] <= GOALS["parameters"],
            "ms_per_step": row["estimated_ms_at_168mhz"]["cpi_1.5"] <= GOALS["ms_per_step_at_168mhz"],
        }
        rows[name] = row
        error = max(row["max_abs_error_vs_onnxruntime"]["actions"], row["max_abs_error_vs_onnxruntime"]["states"])
        size = row["policy_object"]
        print(
            f"{name:<28}{row['parameters']:>8,}{row['instructions_per_step']:>14,.0f}"
            f"{row['estimated_ms_at_168mhz']['cpi_1.25']:>11.3f}{size['flash']:>8}{size['ram']:>6}{error:>10.2e}",
            flush=True,
        )
    results = {
        "machine": machine_info(),
        "policy": f"random-weight GRU student on {args.preset}'s specs, exported by robo_rl (h_in -> h_out)",
        "method": "qemu-system-arm -M mps2-an386 -cpu cortex-m4 -icount shift=0; CMSDK timer at 25 MHz; "
        "the state carried in place over the timed steps",
        "settings": {"timed_steps": args.timed_steps, "seed": args.seed, "stream_steps": STREAM_STEPS},
        "goals": GOALS,
        "rows": rows,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
