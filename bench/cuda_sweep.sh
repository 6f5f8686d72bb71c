#!/bin/sh
# The CUDA measurements of docs/BENCHMARKS.md ("On a GPU"), as one script for a lent GPU machine (the device tool):
# quadrotor simulator env-steps/s on CUDA and on that machine's CPU side by side, and hover PPO to the gate on CUDA.
# Needs torch with CUDA; robo_rl is installed from this checkout (no dependencies fetched: gymnasium comes as wheels
# in .whl/ when the machine lacks it). Writes into ${OUT:-/tmp/cuda_sweep}.
set -e
OUT=${OUT:-/tmp/cuda_sweep}
mkdir -p "$OUT"
if [ -d .whl ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
    export PYTHONPATH=/tmp/site
fi
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
export PYTHONUNBUFFERED=1
cd bench
python3 quadrotor_steps.py --device cuda --no-compile --seconds 1.5 --batches 4096 16384 65536 262144 \
    --output "$OUT/quadrotor_steps_cuda.json" | tee "$OUT/quadrotor_steps_cuda.txt"
python3 quadrotor_steps.py --device cpu --threads 16 --no-compile --seconds 1.5 --batches 4096 16384 \
    --output "$OUT/quadrotor_steps_cpu16.json" | tee "$OUT/quadrotor_steps_cpu16.txt"
cd ..
for envs in 4096 16384; do
    python3 -m robo_rl.cli.main train quadrotor_hover_ppo --device cuda --num-envs "$envs" --seed 0 --quiet \
        --runs-root /tmp/runs 2>&1 | tail -n 6 | tee "$OUT/hover_cuda_$envs.txt"
done
