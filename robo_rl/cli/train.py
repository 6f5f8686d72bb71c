"""`robo-rl train`: train a policy from a preset or YAML config, or resume a run."""

from __future__ import annotations

import argparse
import contextlib
import shlex
import signal
import sys
import threading
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from rich.console import Console

from robo_rl.algorithms import registry as algorithms
from robo_rl.api.bad_file import BadFileError, check_output
from robo_rl.api.checkpoint_file import checkpoint_errors
from robo_rl.api.configs import override, preset, preset_names, resolve_config
from robo_rl.api.envs import env_factory, robot_env_factory, task_record, teleop_factory
from robo_rl.api.interrupt import IterationBoundaryInterrupt, stop_at_iteration_end
from robo_rl.api.prior_buffer_file import prior_buffer_errors
from robo_rl.api.runs import load_teacher, read_run_config
from robo_rl.build import Runner, build_runner
from robo_rl.cli.arguments import add_threads_argument
from robo_rl.cli.distributed import RankRun, exit_now, join, launched_by_torchrun, leave, rank_device, relaunch
from robo_rl.cli.progress import TrainingProgress, describe_evaluation, terminal
from robo_rl.config import ConfigError, to_dict
from robo_rl.distributed import Reducer
from robo_rl.envs import BatchedEnv
from robo_rl.experiment import ExperimentConfig
from robo_rl.hil.config import TELEOPS
from robo_rl.runners.on_policy import TrainResult
from robo_rl.runners.run_dir import RunDirectory
from robo_rl.storage import checkpoint
from robo_rl.task_record import write_task_record

if TYPE_CHECKING:
    from robo_rl.real.profile import RobotProfile

WORLD_SIZE_FILE = "world_size"
"""In a run directory: how many processes trained it (written by rank 0 of a --nproc / torchrun run)."""

DESCRIPTION = """\
Train a policy. CONFIG is a preset name (default: pendulum_ppo) or a YAML file whose keys map onto the
experiment config (robo_rl/configs/*.yaml: what each preset changes from the defaults). Each run gets a directory
RUNS_ROOT/NAME/<time>-seed<N> with config.yaml, meta.json (git hash, seed, versions), metrics.jsonl, TensorBoard
scalars in tb/, checkpoints/ and learning_curve.png. Ctrl-C or SIGTERM ends the run at the next safe point as
max_iterations would (checkpoint, learning curve, policy.onnx with --export; exit status 130); a second one stops at
once, after saving the checkpoint. Continue with --resume RUN_DIR.
"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "train", help="train a policy", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("config", nargs="?", help="preset name or YAML file (default: pendulum_<algo>)")
    p.add_argument(
        "--algo",
        choices=algorithms.names(),
        help="algorithm ("
        + "; ".join(f"{entry.name}: {entry.summary}" for entry in algorithms.entries())
        + "); shorthand for --set algo=NAME",
    )
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config value, e.g. --set ppo.learning_rate=3e-4 (repeatable)",
    )
    p.add_argument("--seed", type=int, help="shorthand for --set seed=N")
    p.add_argument("--device", help="shorthand for --set task.device=DEVICE (cpu, cuda, cuda:1)")
    p.add_argument("--num-envs", type=int, help="shorthand for --set task.num_envs=N")
    p.add_argument(
        "--teleop",
        choices=TELEOPS,
        help="who may take over the training envs: none, simulated (the task's scripted expert as a simulated "
        "human), keyboard (you, at this terminal: space takes over env 0, w/s d/a i/k l/j nudge the actions), "
        "gamepad (a joystick on this machine drives env 0 while button 4 is held; --set hil.gamepad.device=...) or "
        "ros (a joystick through teleop_node, --set hil.ros_namespace=/cf1; train from .venv-ros); sac/td3 only; "
        "shorthand for --set hil.teleop=NAME",
    )
    p.add_argument(
        "--max-iterations",
        type=int,
        help="iterations to train (runner.loop.max_iterations for ppo, off_policy.loop.max_iterations otherwise)",
    )
    p.add_argument("--runs-root", type=Path, default=Path("runs"), help="where run directories go (default: runs)")
    p.add_argument(
        "--resume",
        type=Path,
        metavar="RUN_DIR",
        help="continue RUN_DIR from its latest checkpoint with its own config (only --max-iterations may change)",
    )
    p.add_argument("--export", action="store_true", help="write RUN_DIR/policy.onnx when training ends")
    p.add_argument(
        "--nproc",
        type=int,
        help="train with N processes on this machine (torchrun; gloo on CPU, NCCL on GPUs: one GPU each with "
        "--device cuda); each runs task.num_envs envs, gradients are averaged. Several machines: run torchrun "
        "yourself (README)",
    )
    p.add_argument(
        "--robot",
        metavar="PROFILE",
        help="learn on the robot itself (bundled profile name or YAML; run from .venv-ros): the training env is the "
        "robot through ROS 2 on the profile's topics, in real time (robo_rl.robot.RobotEnv); stale steps are not "
        "stored, the operator's e-stop ends the episode and holds the safe command, teleop_node's takeover and "
        "episode buttons act; no evaluation env. Default CONFIG: robot_<profile>_sac where that preset exists (e.g. "
        "robot_arm_peg_sac), else robot_<kind>_sac",
    )
    p.add_argument("--robot-namespace", default="/", help="the robot's ROS namespace (with --robot; default /)")
    p.add_argument(
        "--secure",
        action="store_true",
        help="with --robot: DDS-Security, as enclave NAMESPACE/train_on_robot of --keystore (robo-rl security create)",
    )
    p.add_argument(
        "--keystore", default="", help="the keystore of --secure (default: $ROS_SECURITY_KEYSTORE, ./keystore)"
    )
    p.add_argument(
        "--robot-link",
        choices=("ros", "sim"),
        default="ros",
        help="with --robot: `ros` (default) is the robot through ROS 2 in real time; `sim` rehearses the same setup "
        "(safety box, resets, rewards, buttons) on the profile's task simulator in simulated time, without ROS",
    )
    p.add_argument(
        "--operator",
        choices=("none", "simulated", "resets"),
        default="none",
        help="with --robot-link sim: `simulated` plays the operator (the car: takes over near the border, "
        "robo_rl.robot.operator; the peg arm: the peg benchmark's operator with hil.human's reaction, budget and "
        "delay_steps, robo_rl.hil.peg_operator) and answers reset prompts; `resets` only answers reset "
        "prompts (no corrections)",
    )
    p.add_argument(
        "--success-classifier",
        type=Path,
        metavar="FILE",
        help="with --robot: a classifier from robo-rl train-classifier decides success (it ends the episode); "
        "where the task's reward is its success (the peg), the classifier is the reward too (1 where it fires), "
        "as in HIL-SERL",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_threads_argument(p)
    p.set_defaults(func=main)


def _shorthands(args: argparse.Namespace) -> dict[str, Any]:
    """The config values the shorthand options set, typed as argparse parsed them (applied before --set)."""
    pairs: tuple[tuple[str, Any], ...] = (
        ("algo", args.algo),
        ("seed", args.seed),
        ("task.device", args.device),
        ("task.num_envs", args.num_envs),
        ("hil.teleop", args.teleop),
    )
    return {key: value for key, value in pairs if value is not None}


def main(args: argparse.Namespace) -> int:
    if args.nproc is not None and args.nproc < 1:
        raise ConfigError(f"--nproc must be at least 1, got {args.nproc}")
    _check_robot_flags(args)  # before a relaunch: one line, not one per process
    if args.secure:
        _enter_secure_mode(args.robot_namespace, args.keystore)
    if args.resume is None:
        check_output(args.runs_root, "--runs-root", folder=True)
    if args.nproc is not None and args.nproc > 1 and not launched_by_torchrun():
        return relaunch(args.nproc, _without_nproc(args.argv))
    reducer = join(_device(args))
    try:
        with _stop_signals(reducer.world.size) as interrupt:
            code = _train(args, reducer, interrupt)
            args.stopped_by_signal = interrupt is not None and interrupt.signum != 0
    finally:
        leave(reducer)
    if reducer.world.size > 1:
        exit_now(code)  # skip finalization: gloo's threads can abort it after a finished run
    return code


def _stop_signals(world_size: int) -> contextlib.AbstractContextManager[IterationBoundaryInterrupt | None]:
    """SIGINT and SIGTERM for the whole command (robo_rl.api.interrupt): during set-up they stop it at once (a wait for
    the robot too), from the run directory's creation on at the next safe point, with its checkpoint and export.
    Several processes, which must stop at the same iteration, and a thread other than the main one keep Python's
    own."""
    if world_size == 1 and threading.current_thread() is threading.main_thread():
        return stop_at_iteration_end(immediate=True)
    return contextlib.nullcontext()


def _train(args: argparse.Namespace, reducer: Reducer, interrupt: IterationBoundaryInterrupt | None = None) -> int:
    main_rank = reducer.world.is_main
    console = terminal() if main_rank else Console(quiet=True)
    try:
        if args.resume is None:
            runner, run = _start(args, reducer, interrupt)
        else:
            runner, run = _resume(args, reducer)
            _setup_done(interrupt, export=args.export and main_rank)
    except KeyboardInterrupt:  # a stop signal during set-up (interrupt.immediate): nothing to save yet
        console.print("robo-rl train: interrupted during set-up, before training started; no checkpoint was saved")
        return 130
    console.print(f"run directory: [bold]{run.path}[/bold]")
    if reducer.world.size > 1:
        console.print(f"{reducer.world.size} processes; rank 0 logs, evaluates and checkpoints")
    exports = args.export and main_rank
    quiet = args.quiet or not main_rank
    result = train(runner, run, console, quiet, at_iteration_end=reducer.world.size == 1, interrupt=interrupt)
    if result is None:
        return 130
    print_summary(console, result, run, _stopped_by(interrupt))
    if exports:
        from robo_rl.cli.export import export_run

        try:
            export_run(run.path, None, console)
        except KeyboardInterrupt:
            console.print("export interrupted; robo-rl export RUN_DIR writes policy.onnx from the saved checkpoint")
            return 130
    if interrupt is not None and interrupt.requested:
        _print_interrupted(console, runner, run)
        return 130
    return 0


def _setup_done(interrupt: IterationBoundaryInterrupt | None, export: bool = False) -> None:
    """Set-up is over (right before the run directory is created): from now on a stop signal asks the run to stop at
    its next safe point, with its checkpoint. A run that `export`s (a single process, stopped by signals: the
    launchers') first warms the ONNX exporter, still in set-up, so that a stop in its first iteration is as quick."""
    if interrupt is None:
        return
    if export:
        _warm_exporter()
    interrupt.immediate = False


def _warm_exporter() -> None:
    """`robo_rl.export.onnx.warm_exporter` where the export extra is installed (export_run says why otherwise)."""
    try:
        from robo_rl.export.onnx import warm_exporter
    except ImportError:
        return
    warm_exporter()


def _stopped_by(interrupt: IterationBoundaryInterrupt | None) -> str | None:
    """The name of the signal that asked the run to stop (SIGINT, SIGTERM), or None."""
    if interrupt is None or not interrupt.requested:
        return None
    return signal.Signals(interrupt.signum).name


def _device(args: argparse.Namespace) -> str:
    """The training device the command asks for (before the config is resolved: the process group needs it)."""
    if args.device is not None:
        return args.device
    overrides = [o.split("=", 1)[1] for o in args.overrides if o.startswith("task.device=")]
    return overrides[-1] if overrides else "cpu"


def _without_nproc(argv: list[str]) -> list[str]:
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--nproc":
            skip = True
        elif not arg.startswith("--nproc="):
            out.append(arg)
    return out


def _start(
    args: argparse.Namespace, reducer: Reducer, interrupt: IterationBoundaryInterrupt | None = None
) -> tuple[Runner, RunDirectory | RankRun]:
    if args.robot is not None:
        return _start_on_robot(args, reducer, interrupt)
    source = args.config or _default_preset(args.algo or "ppo")
    cfg = resolve_config(source, args.overrides, values=_shorthands(args))
    if args.max_iterations is not None:
        cfg = override(cfg, values={f"{cfg.loop_section}.loop.max_iterations": args.max_iterations})
    cfg = replace(cfg, task=replace(cfg.task, device=rank_device(cfg.task.device, reducer.world)))
    # Before the run directory, so bad input leaves nothing behind.
    with prior_buffer_errors(cfg):
        runner = build_runner(
            cfg, env_factory(), make_teleop=teleop_factory(), reducer=reducer, make_teacher=load_teacher
        )
    run: RunDirectory | RankRun | None = None
    if reducer.world.is_main:
        _setup_done(interrupt, export=args.export)
        run = create_run(args.runs_root, cfg, shlex.join(["robo-rl", *args.argv]), runner.env)
        (run.path / WORLD_SIZE_FILE).write_text(f"{reducer.world.size}\n")
    path = reducer.broadcast(None if run is None else str(run.path))
    rank_run = run if run is not None else RankRun(Path(path), reducer.world.rank)
    runner.run = rank_run
    return runner, rank_run


def _check_robot_flags(args: argparse.Namespace) -> None:
    """The options of learning on a robot come with --robot (and --operator with --robot-link sim)."""
    given = {
        "--robot-namespace": args.robot_namespace != "/",
        "--robot-link": args.robot_link != "ros",
        "--operator": args.operator != "none",
        "--success-classifier": args.success_classifier is not None,
        "--secure": args.secure,
    }
    used = [flag for flag, on in given.items() if on]
    if args.robot is None and used:
        raise ConfigError(f"{', '.join(used)}: only with --robot PROFILE")
    if args.operator != "none" and args.robot_link != "sim":
        raise ConfigError(f"--operator {args.operator}: only with --robot-link sim (a simulated operator)")
    if args.robot is not None and args.nproc is not None and args.nproc > 1:
        raise ConfigError("--robot trains on one robot in one process; drop --nproc")


def _enter_secure_mode(namespace: str, keystore: str) -> None:
    """--secure: the robot link's rclpy runs as enclave NAMESPACE/train_on_robot (robo_rl.real.security)."""
    from robo_rl.real.security.keystore import KeystoreError
    from robo_rl.real.security.secure_mode import prepare, secure_mode

    try:
        mode = secure_mode(True, keystore, f"{namespace.rstrip('/')}/train_on_robot")
        assert mode is not None
        prepare(mode)
    except KeystoreError as err:
        raise ConfigError(str(err)) from None


def robot_preset(profile: RobotProfile) -> str:
    """The default config of `--robot PROFILE`: the preset made for the profile, robot_<name>_sac, where there is
    one (a kind running several tasks: the arm reaching, the arm inserting a peg), else robot_<kind>_sac."""
    own = f"robot_{profile.name}_sac"
    return own if own in preset_names() else f"robot_{profile.kind}_sac"


def _start_on_robot(
    args: argparse.Namespace, reducer: Reducer, interrupt: IterationBoundaryInterrupt | None = None
) -> tuple[Runner, RunDirectory | RankRun]:
    """`--robot PROFILE`: the robot as the one training env; no evaluation env, one process."""
    from robo_rl.real.profile import load_profile

    if reducer.world.size > 1:
        raise ConfigError("--robot trains on one robot in one process; drop --nproc")
    profile = load_profile(args.robot)
    source = args.config or robot_preset(profile)
    cfg = resolve_config(source, args.overrides, values=_shorthands(args))
    if args.max_iterations is not None:
        cfg = override(cfg, values={f"{cfg.loop_section}.loop.max_iterations": args.max_iterations})
    if cfg.hil.teleop in ("ros", "simulated"):
        raise ConfigError(
            f"--robot with hil.teleop={cfg.hil.teleop}: the robot already reads teleop_node's topics; "
            "--teleop keyboard or gamepad adds a device at this computer"
        )
    classifier = None if args.success_classifier is None else str(args.success_classifier)
    factory = robot_env_factory(
        args.robot,
        args.robot_namespace,
        classifier=classifier,
        link=args.robot_link,
        operator=args.operator,
        human=cfg.hil.human,
    )
    with prior_buffer_errors(cfg):
        runner = build_runner(
            cfg, factory, evaluate=False, make_teleop=teleop_factory(), reducer=reducer, make_teacher=load_teacher
        )
    _setup_done(interrupt, export=args.export)
    runner.run = create_run(args.runs_root, cfg, shlex.join(["robo-rl", *args.argv]), runner.env)
    return runner, runner.run


def _default_preset(algo: str) -> str:
    """`pendulum_<algo>`: the preset `--algo` picks without CONFIG; ConfigError naming the algorithm's presets
    when it has no pendulum one."""
    name = f"pendulum_{algo}"
    if name not in preset_names():
        presets = ", ".join(p for p in preset_names() if preset(p).algo == algo) or "none"
        raise ConfigError(f"--algo {algo} without CONFIG: there is no {name} preset; give a CONFIG ({presets})")
    return name


def create_run(root: Path, cfg: ExperimentConfig, command: str, env: BatchedEnv) -> RunDirectory:
    """A new run directory with the resolved experiment config (config.yaml) and what its task resolved to
    (task.yaml: the task's config as task.config sets it, and `env`'s specs)."""
    run = RunDirectory.create(root, cfg.name, cfg.seed, yaml.safe_dump(to_dict(cfg), sort_keys=False), command)
    write_task_record(run.path, task_record(cfg, env))
    return run


def _resume(args: argparse.Namespace, reducer: Reducer) -> tuple[Runner, RunDirectory | RankRun]:
    if args.overrides or _shorthands(args) or args.config is not None:
        raise ConfigError("--resume uses the run's own config; only --max-iterations may be given with it")
    main_run = RunDirectory.open(args.resume)
    saved = read_run_config(main_run)
    cfg = saved
    if args.max_iterations is not None:
        cfg = override(cfg, values={f"{cfg.loop_section}.loop.max_iterations": args.max_iterations})
    _check_world_size(main_run.path, reducer.world.size)
    run = main_run if reducer.world.is_main else RankRun(main_run.path, reducer.world.rank)
    latest = run.latest_checkpoint
    if not latest.is_file() and not checkpoint.previous_of(latest).is_file():
        raise FileNotFoundError(f"{latest}: no checkpoint to resume from")
    device_cfg = replace(cfg, task=replace(cfg.task, device=rank_device(cfg.task.device, reducer.world)))
    with prior_buffer_errors(device_cfg):
        runner = build_runner(
            device_cfg,
            env_factory(),
            run=None,
            make_teleop=teleop_factory(),
            reducer=reducer,
            make_teacher=load_teacher,
        )
    runner.run = run
    with checkpoint_errors(latest):
        leader = _restore(runner, latest, reducer)
    if leader != runner.iteration:
        raise ConfigError(
            f"{main_run.path}: rank {reducer.world.rank} saved iteration {runner.iteration}, rank 0 iteration {leader} "
            "(the run stopped between their checkpoints); resume needs checkpoints of one iteration"
        )
    if cfg != saved and reducer.world.is_main:  # only once the checkpoint loaded: a failed resume writes nothing
        main_run.config_file.write_text(yaml.safe_dump(to_dict(cfg), sort_keys=False))
    run.truncate_metrics(runner.iteration)
    return runner, run


def _restore(runner: Runner, latest: Path, reducer: Reducer) -> int:
    """Load latest.pt, or the previous.pt beside it where latest.pt is damaged (one warning line) or, under several
    processes, newer than rank 0's checkpoint (a run killed while its ranks saved); returns rank 0's iteration.
    CheckpointError when neither file can be used."""
    used = checkpoint.restore_latest(latest, runner.load, warn=_warn, set_aside=True)
    leader = reducer.broadcast(runner.iteration)
    previous = checkpoint.previous_of(latest)
    if leader != runner.iteration and used != previous and previous.is_file():
        newer = runner.iteration
        runner.load(previous)
        if runner.iteration == leader:
            _warn(f"{latest} is newer than rank 0's checkpoint (iteration {newer} > {leader}); restored {previous}")
            latest.replace(latest.with_name(f"{latest.name}.unused"))
    return leader


def _warn(message: str) -> None:
    print(f"robo-rl train: warning: {message}", file=sys.stderr)


def _check_world_size(path: Path, size: int) -> None:
    """A run resumes with as many processes as it had (each rank's envs and buffer are in its own file)."""
    file = path / WORLD_SIZE_FILE
    had = _read_world_size(file) if file.is_file() else 1
    if had != size:
        raise ConfigError(f"{path} was trained by {had} process(es); resume it with --nproc {had}, not {size}")


def _read_world_size(file: Path) -> int:
    try:
        return int(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise BadFileError(file, "expected the number of processes that trained the run") from None


def train(
    runner: Runner,
    run: RunDirectory | RankRun,
    console: Console,
    quiet: bool = False,
    at_iteration_end: bool = True,
    interrupt: IterationBoundaryInterrupt | None = None,
) -> TrainResult | None:
    """Run the training loop with a progress bar; on Ctrl-C save a checkpoint and return None.

    With `at_iteration_end` the first Ctrl-C ends training at the next safe point (robo_rl.api.interrupt); without
    it (several processes, which must stop at the same iteration) at once. `interrupt`: the caller's own, already
    installed (`robo-rl train`); training then ends as at max_iterations on the first signal and the result is
    returned (the caller says it was interrupted), and None only after a second signal.
    """
    graceful = at_iteration_end and threading.current_thread() is threading.main_thread()  # signals: main only
    own = interrupt is None
    try:
        with stop_at_iteration_end() if graceful and own else contextlib.nullcontext(interrupt) as active:
            if active is not None:
                runner.stop_requested = active.is_requested
            result = _learn(runner, console, quiet)
        if active is None or not active.requested or not own:
            return result
    except KeyboardInterrupt:
        runner.save(run.latest_checkpoint)
        run.plot_learning_curve()
    _print_interrupted(console, runner, run)
    return None


def _print_interrupted(console: Console, runner: Runner, run: RunDirectory | RankRun) -> None:
    console.print(
        f"interrupted at iteration {runner.iteration}; checkpoint saved. "
        f"Continue with: robo-rl train --resume {run.path}"
    )


def _learn(runner: Runner, console: Console, quiet: bool) -> TrainResult:
    if quiet:
        return runner.learn()
    with TrainingProgress(runner.cfg.loop.max_iterations, runner.iteration, console) as progress:
        return runner.learn(progress)


def print_summary(
    console: Console, result: TrainResult, run: RunDirectory | RankRun, stopped_by: str | None = None
) -> None:
    """The run's summary; `stopped_by` names the signal that ended it (SIGINT, SIGTERM), if one did."""
    status = "reached the target" if result.reached_target else "stopped at max_iterations"
    if stopped_by is not None:
        status = f"stopped by {stopped_by}"
    if result.estop:
        status = f"stopped by the operator's e-stop (checkpoint saved; robo-rl train --resume {run.path} continues)"
    console.print(
        f"{status}: {result.iterations} iterations, {result.env_steps:,} env steps, "
        f"{result.wall_time:.1f} s training wall-clock "
        f"({result.env_steps / max(result.wall_time, 1e-9):,.0f} steps/s)"
    )
    if result.final_eval is not None:
        console.print(f"last evaluation: {describe_evaluation(result.final_eval)}")
    if result.best_iteration is not None:
        rate = "" if result.best_success_rate is None else f" (success {result.best_success_rate:.1%})"
        console.print(
            f"best evaluation: iteration {result.best_iteration}{rate}; its policy is checkpoints/best.pt, "
            "which eval, export and play use"
        )
    console.print(f"learning curve: {run.path / 'learning_curve.png'}")
