"""SimulatedHuman with the tasks' scripted experts keeps poor policies out of trouble, within its budget."""

from __future__ import annotations

from collections.abc import Callable

import torch

from robo_rl.hil import INFO_INTERVENED, InterventionEnv, SimulatedHuman, SimulatedHumanConfig
from robo_rl.sim import make, make_expert
from robo_rl.sim.quadrotor.actions import hover_action
from robo_rl.sim.quadrotor.params import load_frame

Policy = Callable[[torch.Tensor, torch.Generator], torch.Tensor]


def _run(
    task: str, policy: Policy, human: SimulatedHumanConfig | None, steps: int, flag: str = ""
) -> tuple[int, float]:
    """(terminations, or steps with info[flag] when given; intervention rate) of `policy` on 32 envs of `task`."""
    env = make(task, num_envs=32, seed=0, params=("episode_length=100",))
    if human is not None:
        low, high = env.action_spec.low_tensor(), env.action_spec.high_tensor()
        env = InterventionEnv(env, SimulatedHuman(make_expert(task, env), low, high, 32, human, seed=0))
    env.reset(seed=0)
    generator = torch.Generator().manual_seed(1)
    terminations = 0
    for _ in range(steps):
        _, _, terminated, _, info = env.step(policy(None, generator))
        terminations += int((info[flag] if flag else terminated).sum())
    return terminations, env.intervention_stats()["intervention_rate"] if human is not None else 0.0


HOVER_ACTION = hover_action("motor", load_frame("crazyflie_2_1"))[0]


def _noisy_hover(_obs: torch.Tensor | None, generator: torch.Generator) -> torch.Tensor:
    """An untrained policy: the hover command plus N(0, 0.3) on every motor."""
    return HOVER_ACTION + 0.3 * torch.randn(32, 4, generator=generator)


def _standing_still(_obs: torch.Tensor | None, _generator: torch.Generator) -> torch.Tensor:
    """A timid car policy: straight wheels, no throttle (it stalls)."""
    return torch.zeros(32, 2)


def test_simulated_human_saves_the_quadrotor_from_an_untrained_policy() -> None:
    alone, _ = _run("quadrotor/hover", _noisy_hover, None, 400)
    helped, rate = _run("quadrotor/hover", _noisy_hover, SimulatedHumanConfig(reaction_steps=3), 400)
    assert alone > 200  # 32 quadrotors crash over and over (the identified model falls slower than the bare one)...
    assert helped * 25 < alone  # ...the human takes over when they leave the safe set
    assert 0.0 < rate < 1.0  # and hands back once they are safe again


def test_simulated_human_keeps_a_stalling_car_moving() -> None:
    alone, _ = _run("rc_car/race", _standing_still, None, 400, flag="stalled")
    helped, rate = _run("rc_car/race", _standing_still, SimulatedHumanConfig(reaction_steps=3), 400, flag="stalled")
    assert alone >= 32  # every car stalls (2 s below 0.25 m/s)
    assert helped == 0 and 0.0 < rate < 1.0


def test_budget_caps_the_human_share_of_steps() -> None:
    _, rate = _run("quadrotor/hover", _noisy_hover, SimulatedHumanConfig(budget=0.1), 300)
    assert 0.05 < rate <= 0.1 + 1 / 300  # at most one poll past the cap


def test_the_track_expert_flies_the_figure_eight() -> None:
    """quadrotor/track's expert (record-demos' demonstrator, the simulated human) is the hover pilot of the hover
    task inside the track env; it used to fail on the track env itself (no dtype)."""
    env = make("quadrotor/track", num_envs=8, seed=0)
    expert = make_expert("quadrotor/track", env)
    env.reset(seed=0)
    crashes = 0
    for _ in range(300):  # 3 s
        crashes += int(env.step(expert.action())[2].sum())
    assert crashes == 0
    assert float(env.tracking_error().max()) < 1.0


class AlwaysUnsafe:
    """An expert whose state is never safe: the human wants every env all the time, so only the budget stops it."""

    def __init__(self, num_envs: int) -> None:
        self.num_envs = num_envs

    def action(self) -> torch.Tensor:
        return torch.ones(self.num_envs, 1)

    def unsafe(self) -> torch.Tensor:
        return torch.ones(self.num_envs, dtype=torch.bool)

    def recovered(self) -> torch.Tensor:
        return torch.zeros(self.num_envs, dtype=torch.bool)


def test_the_human_lets_go_everywhere_at_the_cap_and_passes_it_by_at_most_one_poll() -> None:
    # min_takeover_steps=10 would keep a takeover going: the budget must end it anyway, at the first poll that
    # starts at or above the cap; below the cap every env is taken at once (always unsafe, no reaction time).
    num_envs, budget = 4, 0.25
    config = SimulatedHumanConfig(reaction_steps=0, action_noise=0.0, budget=budget, min_takeover_steps=10)
    human = SimulatedHuman(AlwaysUnsafe(num_envs), -torch.ones(1), torch.ones(1), num_envs, config)
    obs = torch.zeros(num_envs, 3)
    pattern = []
    for _ in range(200):
        share_before, steps_before = human.used_budget, human.steps
        active = human.poll(obs).active
        pattern.append(int(active.sum()))
        assert active.tolist() == [share_before < budget] * num_envs  # all or nothing, decided by the cap
        assert human.human_steps <= budget * steps_before + num_envs  # one poll past the cap at most
    # Poll 1 takes all 4 (share 1), then it lets go until the share is below 1/4 again (4 / 20 after poll 5)...
    assert pattern[:7] == [4, 0, 0, 0, 0, 4, 0]
    # ...and over the run the share settles at the cap from above, within one poll of it.
    assert budget <= human.used_budget <= budget + num_envs / human.steps


class RecoversAfter:
    """Always unsafe; env i is recovered from poll `after[i]` on (a takeover that ends when the rescue is done)."""

    def __init__(self, after: list[int]) -> None:
        self.after, self.polls = torch.tensor(after), 0

    def action(self) -> torch.Tensor:
        return torch.ones(len(self.after), 1)

    def unsafe(self) -> torch.Tensor:
        self.polls += 1
        return torch.ones(len(self.after), dtype=torch.bool)

    def recovered(self) -> torch.Tensor:
        return self.polls >= self.after


def test_with_finish_takeovers_the_human_keeps_its_takeovers_past_the_cap_and_starts_none() -> None:
    num_envs, budget = 4, 0.25
    config = SimulatedHumanConfig(
        reaction_steps=0, action_noise=0.0, budget=budget, min_takeover_steps=0, finish_takeovers=True
    )
    human = SimulatedHuman(RecoversAfter([3, 6, 9, 12]), -torch.ones(1), torch.ones(1), 4, config)
    obs = torch.zeros(num_envs, 3)
    held = [human.poll(obs).active.tolist() for _ in range(14)]
    # poll 1 takes all four (share 1 > 1/4); each is kept until its rescue is done (recovered at poll 3, 6, 9, 12)
    assert held[0] == [True] * 4 and held[1] == [True] * 4
    assert held[2] == [False, True, True, True] and held[5] == [False, False, True, True]
    assert held[8] == [False, False, False, True] and held[11] == [False] * 4
    # none is taken again while the share (26 of 48 steps after poll 12) stays above the cap
    assert human.used_budget > budget and held[12] == held[13] == [False] * 4


def test_the_human_never_passes_the_budget_by_more_than_one_poll_on_the_quadrotor() -> None:
    env = make("quadrotor/hover", num_envs=32, seed=0, params=("episode_length=100",))
    low, high = env.action_spec.low_tensor(), env.action_spec.high_tensor()
    human = SimulatedHuman(make_expert("quadrotor/hover", env), low, high, 32, SimulatedHumanConfig(budget=0.1))
    wrapped = InterventionEnv(env, human)
    wrapped.reset(seed=0)
    generator = torch.Generator().manual_seed(1)
    capped_polls = 0
    for _ in range(300):
        share_before, steps_before = human.used_budget, human.steps
        info = wrapped.step(_noisy_hover(None, generator))[4]
        if share_before >= 0.1:  # at the cap: nobody is flown by the human in this step
            capped_polls += 1
            assert not bool(info[INFO_INTERVENED].any())
        assert human.human_steps <= 0.1 * steps_before + 32
    assert capped_polls > 0  # the cap was reached and held the human back
    assert wrapped.intervention_stats()["intervention_rate"] == human.used_budget


class _Counting:
    """An expert that always wants to drive; its action is the number of times it was asked."""

    def __init__(self) -> None:
        self.asked = 0

    def action(self) -> torch.Tensor:
        self.asked += 1
        return torch.full((1, 1), float(self.asked))

    def unsafe(self) -> torch.Tensor:
        return torch.ones(1, dtype=torch.bool)

    def recovered(self) -> torch.Tensor:
        return torch.zeros(1, dtype=torch.bool)


def _human(delay: int) -> SimulatedHuman:
    config = SimulatedHumanConfig(reaction_steps=0, action_noise=0.0, min_takeover_steps=0, delay_steps=delay)
    return SimulatedHuman(_Counting(), torch.tensor([-100.0]), torch.tensor([100.0]), 1, config)


def test_a_late_human_executes_what_it_decided_on_the_previous_observation() -> None:
    """delay_steps=1 is the ROS path's operator: its answer to an observation arrives after the trainer stepped."""
    on_time, late = _human(0), _human(1)
    executed = [(on_time.poll(torch.zeros(1, 1)), late.poll(torch.zeros(1, 1))) for _ in range(3)]
    assert [float(a.action[0, 0]) for a, _ in executed] == [1.0, 2.0, 3.0]
    assert not bool(executed[0][1].active[0])  # nothing decided yet: the policy drives
    assert [float(b.action[0, 0]) for _, b in executed[1:]] == [1.0, 2.0]  # one poll behind
    late.episode_reset(torch.ones(1, dtype=torch.bool))
    assert not bool(late.poll(torch.zeros(1, 1)).active[0])  # the last episode's decision is not executed
