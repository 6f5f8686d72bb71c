"""The library API the command line, bench/ and the tests build on (the composition root with build.py):

- `configs.resolve_config`: an experiment config from a preset name or a YAML file, with `key=value` overrides;
- `envs`: env factories for the simulators, a robot (`robot_env_factory`) and the teleop devices; `task_record`;
- `runs`: a trained run loaded back (`load_trained`: config, task, actor), its env (`make_env`);
- `evaluation`: a run's or any policy file's evaluation; `l2f_transfer`: a quadrotor policy flown in L2F;
- `onnx_policy`: a policy.onnx as an actor in onnxruntime; `threads`: the CPU thread policy;
- `bad_file`, `checkpoint_file`, `prior_buffer_file`: unreadable inputs as one line naming the file;
- `interrupt`: Ctrl-C stops training at the end of an iteration; `process_time`: seconds since process start.

Nothing here imports `robo_rl.cli`; outside it, only the entry points (`robo_rl.cli.main`) are imported
(tests/test_import_layers.py)."""
