"""Policies trained elsewhere as robo_rl policy artifacts (`robo-rl import`).

- `sb3`: Stable-Baselines3 model zips (PPO/A2C/SAC/TD3/DDPG), VecNormalize and SB3's action mapping folded in.
- `foreign_onnx`: rsl_rl / Isaac Lab / mjlab ONNX files, with the observation and joint-action mappings of the run
  (`sources`: mjlab's ONNX metadata, Isaac Lab's env.yaml; `terms`: what each observation term is on a robot)
  folded around the original graph; `profile_draft` writes a draft robot profile for them.
- `supplied`: what the user supplies and the `MissingInfoError` that names what is still missing.

Submodules are imported explicitly: `sb3` needs torch and stable-baselines3, the others only onnx and numpy.
"""
