"""The captured PPO update: replayed as a recorded graph ("fx", Python frozen as in a CUDA graph) it is the eager
update, and the eager one is the classic `PPO.update` given the same permutations."""

from __future__ import annotations

import copy

import pytest
import torch

from robo_rl.algorithms.ppo import PPO, UPDATE_METRICS, PPOConfig, adapt_learning_rate
from robo_rl.algorithms.ppo_capture import CapturedPPOUpdate
from robo_rl.capture import CaptureBackend
from robo_rl.distributed import World
from robo_rl.modules.actor_critic import ActorCritic, PolicyConfig
from robo_rl.storage.rollout import RolloutStorage

NUM_STEPS, NUM_ENVS = 4, 8
CFG = PPOConfig(num_steps=NUM_STEPS, num_epochs=2, num_minibatches=2, learning_rate=1e-3, desired_kl=0.01)


def _policy() -> ActorCritic:
    torch.manual_seed(0)
    cfg = PolicyConfig(actor_hidden=(16,), critic_hidden=(16,))
    return ActorCritic(3, torch.tensor([-2.0]), torch.tensor([2.0]), cfg)


def _fill(storage: RolloutStorage, policy: ActorCritic, seed: int, mean_offset: float) -> None:
    """A rollout of random observations with actions, log-probs and values from `policy`, written in place as a
    runner writes it; `mean_offset` moves the stored means (the KL, hence the learning rate's direction)."""
    gen = torch.Generator().manual_seed(seed)
    storage.clear()
    with torch.no_grad():
        for t in range(NUM_STEPS):
            device = storage.obs.device
            obs = torch.randn(NUM_ENVS, 3, generator=gen).to(device)
            distribution = policy.distribution(obs)
            action = distribution.mean + distribution.std * torch.randn(NUM_ENVS, 1, generator=gen).to(device)
            value = policy.value(obs)
            storage.add(
                obs=obs,
                critic_obs=obs,
                actions=action,
                log_probs=distribution.log_prob(action),
                values=value,
                next_values=value + 0.1,
                distribution={"mean": distribution.mean + mean_offset, "std": distribution.std},
                rewards=torch.randn(NUM_ENVS, generator=gen),
                terminated=torch.full((NUM_ENVS,), t == 2) & (torch.arange(NUM_ENVS) < 3),
                dones=torch.full((NUM_ENVS,), t == 1),
            )


def _storage(device: str = "cpu") -> RolloutStorage:
    return RolloutStorage(NUM_STEPS, NUM_ENVS, obs_dim=3, critic_obs_dim=3, action_dim=1, device=device)


# Offsets per update: KL 0 (the rate grows), one std off (it shrinks), in between.
OFFSETS = (0.0, 1.0, 0.1)


def _captured_run(
    backend: CaptureBackend, device: str = "cpu"
) -> tuple[ActorCritic, PPO, list[dict[str, torch.Tensor]]]:
    policy = _policy().to(device)
    ppo = PPO(policy, CFG, capturable=True)
    storage = _storage(device)
    _fill(storage, policy, seed=0, mean_offset=OFFSETS[0])
    generator = torch.Generator(device=device).manual_seed(7)
    update = ppo.captured_update(storage, backend, generator=generator)
    metrics = []
    for i, offset in enumerate(OFFSETS):
        if i:
            _fill(storage, policy, seed=i, mean_offset=offset)
        metrics.append(update())
        policy.update_normalizers(storage.obs.flatten(0, 1), storage.critic_obs.flatten(0, 1))
    assert update.captured.calls == len(OFFSETS)
    assert update.captured.captured == (backend != "eager")
    return policy, ppo, metrics


def test_the_replayed_graph_is_the_eager_update_over_three_updates() -> None:
    """The fx backend runs the first update eagerly, records the second and replays the third: each as eager."""
    policy_fx, ppo_fx, metrics_fx = _captured_run("fx")
    policy_eager, ppo_eager, metrics_eager = _captured_run("eager")
    for (name, p_fx), p_eager in zip(policy_fx.named_parameters(), policy_eager.parameters(), strict=True):
        torch.testing.assert_close(p_fx, p_eager, atol=1e-6, rtol=0, msg=name)
    for m_fx, m_eager in zip(metrics_fx, metrics_eager, strict=True):
        assert set(m_fx) == set(UPDATE_METRICS)
        for key in UPDATE_METRICS:
            torch.testing.assert_close(m_fx[key], m_eager[key], atol=1e-6, rtol=0, msg=key)
    assert ppo_fx.learning_rate == pytest.approx(ppo_eager.learning_rate, abs=1e-9)
    # the rate moved both ways: up on the first update (KL 0), down on the second (KL 0.5)
    rates = [m["learning_rate"].item() for m in metrics_eager]
    assert rates[0] > CFG.learning_rate and rates[1] < rates[0]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA is not available")
def test_the_cuda_graph_is_the_eager_update_on_the_gpu() -> None:
    """The device check: the same three updates recorded and replayed as a CUDA graph (a host sync or an
    allocation the graph cannot hold fails the capture) against the eager ones on the GPU."""
    policy_graph, ppo_graph, metrics_graph = _captured_run("cuda", "cuda")
    policy_eager, ppo_eager, metrics_eager = _captured_run("eager", "cuda")
    for (name, p_graph), p_eager in zip(policy_graph.named_parameters(), policy_eager.parameters(), strict=True):
        torch.testing.assert_close(p_graph, p_eager, atol=1e-5, rtol=1e-5, msg=name)
    for m_graph, m_eager in zip(metrics_graph, metrics_eager, strict=True):
        for key in UPDATE_METRICS:
            torch.testing.assert_close(m_graph[key], m_eager[key], atol=1e-5, rtol=1e-5, msg=key)
    assert ppo_graph.learning_rate == pytest.approx(ppo_eager.learning_rate, rel=1e-6)


def test_the_captured_update_is_the_classic_update_given_the_same_permutations() -> None:
    policy_c = _policy()
    ppo_c = PPO(policy_c, CFG, capturable=True)
    storage_c = _storage()
    policy = _policy()
    ppo = PPO(policy, CFG)
    storage = _storage()
    _fill(storage_c, policy_c, seed=0, mean_offset=OFFSETS[0])
    update = ppo_c.captured_update(storage_c, "eager")
    for i, offset in enumerate(OFFSETS):
        _fill(storage, policy, seed=i, mean_offset=offset)
        if i:
            _fill(storage_c, policy_c, seed=i, mean_offset=offset)
        torch.manual_seed(100 + i)  # both draw their permutations from the default generator
        metrics_c = update()
        torch.manual_seed(100 + i)
        metrics = ppo.update(storage)
        for key in UPDATE_METRICS:
            assert metrics_c[key].item() == pytest.approx(metrics[key], rel=1e-5, abs=1e-7), key
        assert ppo_c.learning_rate == pytest.approx(ppo.learning_rate, rel=1e-6)
        for (name, p_c), p in zip(policy_c.named_parameters(), policy.parameters(), strict=True):
            torch.testing.assert_close(p_c, p, atol=1e-5, rtol=1e-5, msg=name)
        torch.testing.assert_close(storage_c.advantages, storage.advantages)


def test_adam_reads_the_learning_rate_tensor_as_it_changes_in_place() -> None:
    """The device rate reaches the step without being written into the optimizer again: a step at rate 0
    leaves the parameters alone, one at a rate moves them by it (Adam's first step is lr * sign(grad))."""
    policy = _policy()
    ppo = PPO(policy, CFG, capturable=True)
    assert all(group["lr"] is ppo.learning_rate_tensor for group in ppo.optimizer.param_groups)
    weight = policy.critic[0].weight
    for rate in (0.0, 0.25):
        ppo.learning_rate_tensor.fill_(rate)
        before = weight.detach().clone()
        ppo.optimizer.zero_grad()
        weight.sum().backward()
        ppo.optimizer.step()
        torch.testing.assert_close(before - weight.detach(), torch.full_like(before, rate), atol=1e-6, rtol=0)


@pytest.mark.parametrize("kl", [0.0, 0.004, 0.01, 0.03, 5.0])
@pytest.mark.parametrize("lr", [1e-5, 1e-3, 9e-3])
def test_the_device_rule_is_the_float_rule(kl: float, lr: float) -> None:
    rate = adapt_learning_rate(torch.tensor(lr), torch.tensor(kl), CFG)
    assert rate.item() == pytest.approx(adapt_learning_rate(lr, kl, CFG), rel=1e-6)


def test_the_learning_rate_float_follows_the_tensor_and_survives_a_checkpoint() -> None:
    ppo = PPO(_policy(), CFG, capturable=True)
    ppo.learning_rate = 2e-3
    assert ppo.learning_rate_tensor.item() == pytest.approx(2e-3)
    ppo.learning_rate_tensor.fill_(4e-3)
    assert ppo.learning_rate == pytest.approx(4e-3)
    classic = PPO(_policy(), CFG)
    classic.load_state_dict(ppo.state_dict())
    assert classic.learning_rate == pytest.approx(4e-3)
    assert classic.optimizer.param_groups[0]["lr"] == classic.learning_rate
    fresh = PPO(_policy(), CFG, capturable=True)
    fresh.load_state_dict(ppo.state_dict())
    assert fresh.learning_rate == pytest.approx(4e-3)
    assert all(group["lr"] is fresh.learning_rate_tensor for group in fresh.optimizer.param_groups)
    with pytest.raises(RuntimeError, match="capturable=True"):
        _ = classic.learning_rate_tensor


def test_a_captured_update_refuses_what_it_cannot_run() -> None:
    policy = _policy()
    storage = _storage()
    ppo = PPO(policy, CFG)
    with pytest.raises(ValueError, match="first rollout"):
        ppo.captured_update(storage)
    assert not ppo.capturable  # refused before the optimizer was rebuilt
    _fill(storage, policy, seed=0, mean_offset=0.0)

    class TwoRanks:
        world = World(rank=0, size=2)

    ppo.reducer = TwoRanks()  # type: ignore[assignment]
    with pytest.raises(ValueError, match="one process"):
        ppo.captured_update(storage)


def _run_with_a_checkpoint_load(backend: CaptureBackend) -> tuple[ActorCritic, CapturedPPOUpdate]:
    """Three updates, then the optimizer state of the first loaded back (new tensors, other moments, another
    rate), three more."""
    policy = _policy()
    ppo = PPO(policy, CFG, capturable=True)
    storage = _storage()
    _fill(storage, policy, seed=0, mean_offset=0.0)
    update = ppo.captured_update(storage, backend, generator=torch.Generator().manual_seed(7))
    saved: dict = {}
    for i in range(6):
        if i == 3:
            ppo.load_state_dict(saved)
        _fill(storage, policy, seed=i, mean_offset=0.5 * (i % 2))
        update()
        if i == 0:
            saved = copy.deepcopy(ppo.state_dict())
    return policy, update


def test_a_loaded_checkpoint_is_recorded_anew() -> None:
    """The graph steps the optimizer state it was recorded with; after a load it records again (the fourth call
    runs eagerly, the fifth records, the sixth replays) and stays the eager update."""
    policy_fx, update = _run_with_a_checkpoint_load("fx")
    policy_eager, _ = _run_with_a_checkpoint_load("eager")
    for (name, p_fx), p_eager in zip(policy_fx.named_parameters(), policy_eager.parameters(), strict=True):
        torch.testing.assert_close(p_fx, p_eager, atol=1e-6, rtol=0, msg=name)
    assert update.captured.calls == 3 and update.captured.captured


def test_a_classic_ppo_made_capturable_goes_on_where_it_was() -> None:
    """`make_capturable` after a classic update keeps Adam's moments, step count and the adapted rate: the next
    (captured, eager) update is the classic one's."""
    policies = [_policy(), _policy()]
    algorithms = [PPO(policy, CFG) for policy in policies]
    storages = [_storage(), _storage()]
    for i in range(2):
        for policy, algorithm, storage in zip(policies, algorithms, storages, strict=True):
            _fill(storage, policy, seed=i, mean_offset=0.5 * i)
            torch.manual_seed(100 + i)
            if i == 1 and algorithm is algorithms[0]:
                algorithm.make_capturable()
                assert algorithm.optimizer.state_dict()["state"][0]["step"].item() == 4  # 2 epochs x 2 minibatches
                # the classic state it loaded said capturable=False, which CUDA graph capture refuses (seen on a GPU)
                assert all(group["capturable"] for group in algorithm.optimizer.param_groups)
                algorithm.captured_update(storage, "eager")()
            else:
                algorithm.update(storage)
    assert algorithms[0].learning_rate == pytest.approx(algorithms[1].learning_rate, rel=1e-6)
    for (name, p_made), p_classic in zip(policies[0].named_parameters(), policies[1].parameters(), strict=True):
        torch.testing.assert_close(p_made, p_classic, atol=1e-5, rtol=1e-5, msg=name)
