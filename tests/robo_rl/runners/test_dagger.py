"""DAgger in the off-policy runner (`off_policy.teacher`, robo_rl.runners.dagger): the schedule, the teacher's
inputs by name, the stored labels, and a camera student that learns a controller it cannot see the state of."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from torch import nn

from robo_rl.api.configs import preset
from robo_rl.build import build_runner
from robo_rl.cli.main import main
from robo_rl.experiment import ExperimentConfig
from robo_rl.runners.dagger import TeacherPolicy, mix_actions, teacher_share
from robo_rl.runners.off_policy import OffPolicyRunner
from robo_rl.runners.off_policy_config import OffPolicyRunnerConfig
from robo_rl.sim.double_integrator.pixels import PixelDoubleIntegrator, PixelDoubleIntegratorConfig

GAINS = (-8.0, -4.0)
"""The PD teacher's force per m and per m/s (the double integrator's force bound clips it)."""


class PDTeacher(nn.Module):
    """A hand-written teacher of the state task's observation [x, v] (N): force = -8 x - 4 v, which
    brings the 1 kg cart to rest at the origin (critically damped, poles at -2)."""

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return (obs @ torch.tensor(GAINS).unsqueeze(-1)).clamp(-1.0, 1.0)


def _make_env(
    name: str, num_envs: int, device: str = "cpu", seed: int | None = None, params: Sequence[str] = (), config=None
) -> PixelDoubleIntegrator:
    return PixelDoubleIntegrator(num_envs, device, PixelDoubleIntegratorConfig(privileged_position=True), seed)


def _teacher_factory(run: str) -> tuple[nn.Module, tuple[str, ...]]:
    assert run == "pd"
    return PDTeacher(), ("x", "v")


def _config(iterations: int, teacher_steps: int = 800) -> ExperimentConfig:
    base = preset("double_integrator_pixels_sac")
    loop = replace(base.off_policy.loop, max_iterations=iterations, eval_interval=0)
    off_policy = replace(
        base.off_policy,
        loop=loop,
        learning_starts=64,
        batch_size=64,
        updates_per_step=1,
        teacher="pd",
        teacher_steps=teacher_steps,
    )
    return replace(base, task=replace(base.task, num_envs=8), off_policy=off_policy)


def test_teacher_share_falls_linearly_to_zero() -> None:
    assert teacher_share(0.8, 100, 0) == pytest.approx(0.8)
    assert teacher_share(0.8, 100, 25) == pytest.approx(0.6)
    assert teacher_share(0.8, 100, 100) == 0.0
    assert teacher_share(0.8, 100, 250) == 0.0
    assert teacher_share(1.0, 0, 0) == 0.0


def test_mix_actions_takes_the_teacher_with_its_share() -> None:
    teacher, student = torch.ones(4000, 2), -torch.ones(4000, 2)
    generator = torch.Generator().manual_seed(0)
    assert torch.equal(mix_actions(teacher, student, 0.0, generator), student)
    assert torch.equal(mix_actions(teacher, student, 1.0, generator), teacher)
    mixed = mix_actions(teacher, student, 0.3, generator)
    assert torch.equal(mixed[:, 0], mixed[:, 1]), "an env executes one driver's whole action"
    assert 0.27 < float((mixed[:, 0] > 0).float().mean()) < 0.33


def test_the_teacher_reads_its_names_from_the_state_and_the_privileged_part() -> None:
    env = _make_env("double_integrator/pixels", 3, seed=0)
    seen: list[torch.Tensor] = []

    class Recorder(nn.Module):
        def forward(self, obs: torch.Tensor) -> torch.Tensor:
            seen.append(obs)
            return obs[:, :1]

    obs = env.reset(seed=0)
    critic_obs = torch.cat((obs["state"], env.privileged_obs), dim=-1)  # [v, x], the runner's critic input
    TeacherPolicy(Recorder(), ("x", "v"), env)(critic_obs)
    cart = env.cart.reset(seed=0)  # the state task alone, same seed: [x, v]
    torch.testing.assert_close(seen[0], cart)
    with pytest.raises(ValueError, match="theta"):
        TeacherPolicy(Recorder(), ("x", "theta"), env)


def test_refusals() -> None:
    with pytest.raises(ValueError, match="prior_buffer"):
        OffPolicyRunnerConfig(teacher="run", prior_buffer="demos.npz")
    with pytest.raises(ValueError, match="teacher_start"):
        OffPolicyRunnerConfig(teacher_start=1.5)
    with pytest.raises(ValueError, match="teacher loader"):
        build_runner(_config(4), _make_env, evaluate=False)
    on_a_robot = replace(_config(4), hil=replace(_config(4).hil, real_time=True))
    with pytest.raises(ValueError, match=r"hil\.teleop or hil\.real_time"):
        build_runner(on_a_robot, _make_env, evaluate=False, make_teacher=_teacher_factory)
    cfg = _config(4)
    runner = build_runner(cfg, _make_env, evaluate=False, make_teacher=_teacher_factory)
    assert isinstance(runner, OffPolicyRunner)
    with pytest.raises(ValueError, match="TeacherPolicy"):
        OffPolicyRunner(runner.env, runner.algorithm, cfg.off_policy, 0)


def test_the_buffer_holds_the_teachers_labels_and_the_student_learns_to_act_like_it() -> None:
    torch.manual_seed(0)
    runner = build_runner(_config(250), _make_env, evaluate=False, make_teacher=_teacher_factory)
    assert isinstance(runner, OffPolicyRunner)
    probe = _make_env("double_integrator/pixels", 256, seed=123)
    obs = probe.reset(seed=123)
    teacher = probe.action_spec
    target = PDTeacher()(torch.cat((probe.privileged_obs, obs["state"]), dim=-1)) / teacher.high[0]

    def error() -> float:
        return float((runner.algorithm.act(obs, deterministic=True) - target).square().mean())

    before = error()
    runner.learn()
    stored = runner.buffer.stored()
    x, v = stored.critic_obs[:, 1], stored.critic_obs[:, 0]  # [v] then the privileged [x]
    labels = PDTeacher()(torch.stack((x, v), dim=-1)) / teacher.high[0]
    torch.testing.assert_close(stored.actions, labels)  # the teacher's labels, not the executed actions
    after = error()
    assert after < before / 5, (before, after)
    assert after < 0.02


def test_robo_rl_train_imitates_a_state_run_from_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The whole path: a state run (double_integrator_ppo, a few iterations) is the teacher of the camera task's
    run through `--set off_policy.teacher=RUN`; its metrics carry DAgger's share and the cloning loss, and its
    policy exports and evaluates like any camera run's."""
    quiet = ["--quiet", "--runs-root", str(tmp_path)]
    _cli(["train", "double_integrator_ppo", "--max-iterations", "3", *quiet])
    (teacher,) = (tmp_path / "double_integrator_ppo").iterdir()
    student_args = ["--set", f"off_policy.teacher={teacher}", "--set", "off_policy.learning_starts=40"]
    student_args += ["--set", "off_policy.batch_size=32", "--set", "off_policy.teacher_steps=200"]
    _cli(["train", "double_integrator_pixels_sac", "--max-iterations", "60", *student_args, *quiet])
    (student,) = (tmp_path / "double_integrator_pixels_sac").iterdir()
    rows = [json.loads(line) for line in (student / "metrics.jsonl").read_text().splitlines()]
    shares = [row["teacher_share"] for row in rows]
    assert shares == sorted(shares, reverse=True) and shares[-1] == 0.0, shares  # 240 env steps > 200
    assert any("imitation_loss" in row for row in rows) and not any("critic_loss" in row for row in rows)
    assert "(ok)" in _cli(["export", str(student)])
    missing = tmp_path / "no_such_run"
    capsys.readouterr()
    assert main(["train", "double_integrator_pixels_sac", "--set", f"off_policy.teacher={missing}", *quiet]) == 2
    assert f"{missing} is not a run directory" in capsys.readouterr().err
    assert len(list((tmp_path / "double_integrator_pixels_sac").iterdir())) == 1, "a refused run leaves nothing"


def _cli(argv: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(argv) == 0
    return out.getvalue()


def test_a_resumed_dagger_run_continues_as_the_uninterrupted_one() -> None:
    """Labels in the buffer, the cloning optimizer's moments and DAgger's schedule survive a checkpoint: 40
    iterations, save, 40 more equal 80 straight (same seed, same weights to the bit)."""
    straight = build_runner(_config(80), _make_env, evaluate=False, make_teacher=_teacher_factory)
    straight.learn()
    first = build_runner(_config(40), _make_env, evaluate=False, make_teacher=_teacher_factory)
    first.learn()
    state = first.state_dict()
    second = build_runner(_config(80), _make_env, evaluate=False, make_teacher=_teacher_factory)
    assert isinstance(second, OffPolicyRunner) and isinstance(straight, OffPolicyRunner)
    second.load_state_dict(state)
    second.learn()
    expected, resumed = straight.algorithm.acting_module(), second.algorithm.acting_module()
    for a, b in zip(expected.parameters(), resumed.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
