"""Action chunks: policies that output H actions at once, and how those actions are executed.

- `robo_rl.chunks.spec` (standard library): a chunk's action spec from one step's (`NAME@i`) and back.
- `robo_rl.chunks.execution` (numpy, no torch: the deploy side uses it): temporal ensembling and the receding
  horizon, step by step for batched evaluation (`ChunkExecutor`) and by timestamps for a robot (`TimedChunkQueue`).
- `robo_rl.chunks.env` (torch): `ChunkEnv`, any `BatchedEnv` as an env whose action is a chunk, so that every
  algorithm trains chunked policies unchanged.
- `robo_rl.chunks.demos` (torch): demonstrations as chunks, for behaviour cloning of a chunked (flow) policy.

This package imports nothing itself, so that importing the numpy executor does not load torch.
"""
