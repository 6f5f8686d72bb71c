"""PixelSAC (DrQ): the shared encoder learns from the critic loss only, frames are shifted in updates, the state
alone is normalized, pretrained encoders load (and freeze), and the deployable CameraPolicy is the trained one."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch

from robo_rl.algorithms.drq import PixelSAC, save_encoder
from robo_rl.algorithms.encoder_config import EncoderConfig
from robo_rl.algorithms.sac import SACConfig
from robo_rl.image_spec import STATE_KEY, ImageSpec
from robo_rl.modules.camera_policy import CameraPolicy
from robo_rl.modules.normalizer import EmpiricalNormalizer
from robo_rl.storage.replay import Transitions

SPECS = (ImageSpec("cam", 16, 16, 1),)
STATE_DIM, PRIVILEGED_DIM, BATCH = 2, 1, 12
LOW, HIGH = torch.tensor([-2.0]), torch.tensor([2.0])


def config(**encoder: object) -> SACConfig:
    small = {"features": 8, "channels": 8, **encoder}
    return SACConfig(actor_hidden=(32,), critic_hidden=(32,), encoder=EncoderConfig(**small))  # type: ignore[arg-type]


def pixel_sac(cfg: SACConfig | None = None, specs: tuple[ImageSpec, ...] = SPECS, **kwargs: object) -> PixelSAC:
    torch.manual_seed(0)
    cfg = cfg or config()
    return PixelSAC(STATE_DIM, STATE_DIM + PRIVILEGED_DIM, LOW, HIGH, cfg, specs, **kwargs)  # type: ignore[arg-type]


def batch(seed: int = 0, same_next_frames: bool = False) -> Transitions:
    g = torch.Generator().manual_seed(seed)
    state, next_state = torch.randn(BATCH, STATE_DIM, generator=g), torch.randn(BATCH, STATE_DIM, generator=g)
    frames = torch.randint(0, 256, (BATCH, 16, 16, 1), generator=g, dtype=torch.uint8)
    next_frames = frames.clone() if same_next_frames else torch.randint(0, 256, frames.shape, generator=g).byte()
    flags = torch.zeros(BATCH, dtype=torch.bool)
    privileged = torch.randn(BATCH, PRIVILEGED_DIM, generator=g)
    return Transitions(
        obs=state,
        critic_obs=torch.cat((state, privileged), -1),
        actions=torch.rand(BATCH, 1, generator=g) * 2 - 1,
        rewards=torch.randn(BATCH, generator=g),
        costs=torch.zeros(BATCH),
        next_obs=next_state,
        next_critic_obs=torch.cat((next_state, privileged), -1),
        terminated=flags,
        truncated=flags,
        intervened=torch.arange(BATCH) % 3 == 0,
        is_demo=torch.arange(BATCH) % 2 == 0,
        images={"cam": frames},
        next_images={"cam": next_frames},
    )


def encoder_grads(algo: PixelSAC) -> list[torch.Tensor]:
    grads = [p.grad for p in algo.encoder.cameras.parameters()]
    assert all(g is not None for g in grads)
    return [g.clone() for g in grads if g is not None]


def test_the_critic_loss_alone_gives_the_encoder_its_gradient() -> None:
    """The encoder's .grad after an update with the actor step equals the one without it: the actor loss adds
    nothing (an actor gradient through the encoder would accumulate into .grad, which only the critic optimizer
    clears). The actor itself did get a gradient."""
    with_actor, critic_only = pixel_sac(), pixel_sac()
    torch.manual_seed(1)
    with_actor.update(batch(), update_actor=True)
    torch.manual_seed(1)
    critic_only.update(batch(), update_actor=False)
    grads, reference = encoder_grads(with_actor), encoder_grads(critic_only)
    assert any(float(g.abs().sum()) > 0 for g in reference)
    for g, r in zip(grads, reference, strict=True):
        assert torch.equal(g, r)
    assert all(p.grad is not None for p in with_actor.actor.parameters())
    assert all(p.grad is None for p in critic_only.actor.parameters())


def test_the_encoder_moves_with_the_critic_optimizer_only() -> None:
    algo = pixel_sac()
    encoder_ids = {id(p) for p in algo.encoder.cameras.parameters()}
    critic_ids = {id(p) for group in algo.sac.critic_optimizer.param_groups for p in group["params"]}
    actor_ids = {id(p) for group in algo.sac.actor_optimizer.param_groups for p in group["params"]}
    assert encoder_ids <= critic_ids and not encoder_ids & actor_ids
    before = [p.clone() for p in algo.encoder.cameras.parameters()]
    algo.update(batch())
    assert any(not torch.equal(b, p) for b, p in zip(before, algo.encoder.cameras.parameters(), strict=True))


def seen_frames(algo: PixelSAC, data: Transitions) -> list[torch.Tensor]:
    """The frames the camera encoder received during one update: obs frames, then next frames."""
    seen: list[torch.Tensor] = []
    handle = algo.encoder.cameras["cam"].register_forward_pre_hook(lambda _, args: seen.append(args[0].clone()))
    algo.update(data, update_actor=False)
    handle.remove()
    return seen


def test_updates_shift_obs_and_next_frames_independently() -> None:
    data = batch(same_next_frames=True)
    assert data.images is not None
    torch.manual_seed(3)
    obs_frames, next_frames = seen_frames(pixel_sac(), data)
    assert obs_frames.dtype == torch.uint8 and obs_frames.shape == data.images["cam"].shape
    assert not torch.equal(obs_frames, data.images["cam"])  # shifted
    assert not torch.equal(obs_frames, next_frames)  # identical inputs, independent shifts
    unshifted = seen_frames(pixel_sac(config(shift_pad=0)), data)
    assert all(torch.equal(frames, data.images["cam"]) for frames in unshifted)


def test_normalize_obs_normalizes_the_state_part_only() -> None:
    algo = pixel_sac(SACConfig(normalize_obs=True, actor_hidden=(32,), critic_hidden=(32,)))
    assert algo.needs_normalizers
    assert not isinstance(getattr(algo.sac.actor, "obs_normalizer", None), EmpiricalNormalizer)
    assert not isinstance(getattr(algo.sac.critic, "obs_normalizer", None), EmpiricalNormalizer)
    data = batch()
    algo.fit_normalizers(data)
    normalizer = algo.encoder.state_normalizer
    assert isinstance(normalizer, EmpiricalNormalizer) and normalizer.mean.shape == (STATE_DIM,)
    assert torch.allclose(normalizer.mean, data.obs.mean(0)) and not algo.needs_normalizers
    algo.fit_normalizers(batch(seed=5))  # fitted once: a second call changes nothing
    assert torch.allclose(normalizer.mean, data.obs.mean(0))


def test_the_camera_policy_acts_as_the_algorithm_does_and_state_round_trips() -> None:
    algo = pixel_sac()
    algo.update(batch())
    data = batch(seed=4)
    assert data.images is not None
    obs = {STATE_KEY: data.obs, "cam": data.images["cam"]}
    policy = algo.deterministic_policy()
    assert isinstance(policy, CameraPolicy)
    expected = algo.actor.scaler(algo.act(obs, deterministic=True))
    assert torch.allclose(policy(data.obs, data.images["cam"]), expected)
    restored = pixel_sac()
    restored.load_state_dict(copy.deepcopy(algo.state_dict()))
    assert torch.allclose(restored.deterministic_policy().act(obs), expected)
    fresh = pixel_sac()
    fresh.load_policy_state(algo.policy_state())
    assert torch.allclose(fresh.deterministic_policy().act(obs), expected)


def test_a_pretrained_encoder_loads_and_can_be_frozen(tmp_path: Path) -> None:
    trained = pixel_sac()
    trained.update(batch())
    save_encoder(trained.encoder, tmp_path / "encoder.pt")
    frozen = pixel_sac(config(weights=str(tmp_path / "encoder.pt"), freeze=True))
    for a, b in zip(trained.encoder.cameras.parameters(), frozen.encoder.cameras.parameters(), strict=True):
        assert torch.equal(a, b) and not b.requires_grad
    critic_ids = {id(p) for group in frozen.sac.critic_optimizer.param_groups for p in group["params"]}
    assert not critic_ids & {id(p) for p in frozen.encoder.cameras.parameters()}
    before = [p.clone() for p in frozen.encoder.cameras.parameters()]
    frozen.update(batch())
    assert all(torch.equal(b, p) for b, p in zip(before, frozen.encoder.cameras.parameters(), strict=True))
    torch.save({"algorithm": trained.policy_state()}, tmp_path / "best.pt")  # a camera run's best.pt
    warm = pixel_sac(config(weights=str(tmp_path / "best.pt")))
    assert all(p.requires_grad for p in warm.encoder.cameras.parameters())
    assert torch.equal(next(warm.encoder.cameras.parameters()), next(trained.encoder.cameras.parameters()))


def test_encoders_of_other_cameras_or_files_without_one_are_refused(tmp_path: Path) -> None:
    save_encoder(pixel_sac(specs=(ImageSpec("cam", 24, 24, 1),)).encoder, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="encoder of other cameras"):
        pixel_sac(config(weights=str(tmp_path / "other.pt")))
    torch.save({"algorithm": {"actor": {}}}, tmp_path / "state_only.pt")
    with pytest.raises(ValueError, match="holds no camera encoder"):
        pixel_sac(config(weights=str(tmp_path / "state_only.pt")))
    with pytest.raises(ValueError, match="freeze"):
        EncoderConfig(freeze=True)


def test_updates_need_frames() -> None:
    data = batch()
    with pytest.raises(ValueError, match="camera frames"):
        pixel_sac().update(Transitions(**{**data.__dict__, "images": None, "next_images": None}))


def test_bf16_runs_the_encoders_convolutions_in_bfloat16_and_keeps_weights_and_features_float32() -> None:
    algo = pixel_sac(config(bf16=True))
    dtypes: list[torch.dtype] = []
    conv = algo.encoder.cameras["cam"].convs[0]
    handle = conv.register_forward_hook(lambda _m, _args, out: dtypes.append(out.dtype))
    features: list[torch.dtype] = []
    head = algo.encoder.cameras["cam"].register_forward_hook(lambda _m, _args, out: features.append(out.dtype))
    before = [p.clone() for p in algo.encoder.cameras.parameters()]
    algo.update(batch())
    assert dtypes == [torch.bfloat16, torch.bfloat16] and features == [torch.float32, torch.float32]
    assert all(p.dtype == torch.float32 for p in algo.encoder.parameters())
    assert any(not torch.equal(b, p) for b, p in zip(before, algo.encoder.cameras.parameters(), strict=True))
    algo.act({STATE_KEY: torch.zeros(1, STATE_DIM), "cam": batch().images["cam"][:1]})  # type: ignore[index]
    assert dtypes[-1] == torch.float32  # acting (and so export) stays float32
    handle.remove()
    head.remove()


def test_trained_by_actor_moves_the_encoder_with_the_actor_step_only() -> None:
    """Asymmetric actor-critic: the encoder sits in the actor optimizer; a critic-only update leaves it as it was
    (the critic reads its features detached), an update with the actor step moves it."""
    algo = pixel_sac(config(trained_by="actor"))
    encoder_ids = {id(p) for p in algo.encoder.cameras.parameters()}
    actor_ids = {id(p) for group in algo.sac.actor_optimizer.param_groups for p in group["params"]}
    critic_ids = {id(p) for group in algo.sac.critic_optimizer.param_groups for p in group["params"]}
    assert encoder_ids <= actor_ids and not encoder_ids & critic_ids
    before = [p.clone() for p in algo.encoder.cameras.parameters()]
    critic_before = [p.clone() for p in algo.sac.critic.parameters()]
    algo.update(batch(), update_actor=False)
    assert all(torch.equal(b, p) for b, p in zip(before, algo.encoder.cameras.parameters(), strict=True))
    assert any(not torch.equal(b, p) for b, p in zip(critic_before, algo.sac.critic.parameters(), strict=True))
    algo.update(batch(1), update_actor=True)
    assert any(not torch.equal(b, p) for b, p in zip(before, algo.encoder.cameras.parameters(), strict=True))
    with pytest.raises(ValueError, match="trained_by"):
        EncoderConfig(trained_by="both")  # type: ignore[arg-type]
