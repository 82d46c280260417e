"""``tg.amp.GradScaler`` and ``tg.cuda.amp``: disabled without CUDA (every call passes
through, as PyTorch's), real loss scaling with ``device="cpu"`` (compared with PyTorch's
where it is installed), and ``autocast`` refused unless disabled."""

from __future__ import annotations

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import nn


def _model_and_optimizer(module):
    model = module.nn.Linear(3, 2)
    with module.no_grad():
        model.weight.copy_(module.tensor(np.arange(6.0).reshape(2, 3) / 10, dtype=module.float32))
        model.bias.copy_(module.tensor([0.5, -0.5], dtype=module.float32))
    return model, module.optim.SGD(model.parameters(), lr=0.1)


def _train(module, scaler, steps=4, poison=(1,)):
    """A few SGD steps through ``scaler``; the steps in ``poison`` get an inf gradient."""
    model, optimizer = _model_and_optimizer(module)
    x = module.tensor(np.linspace(-1, 1, 12).reshape(4, 3), dtype=module.float32)
    scales = []
    for step in range(steps):
        optimizer.zero_grad()
        loss = (model(x) ** 2).mean()
        scaler.scale(loss).backward()
        if step in poison:
            with module.no_grad():
                model.bias.grad[0] = float("inf")
        scaler.unscale_(optimizer)
        scaler.step(optimizer)
        scaler.update()
        scales.append(scaler.get_scale())
    return model, scales


def test_a_cuda_scaler_warns_and_passes_everything_through():
    with pytest.warns(UserWarning, match="CUDA is not available.  Disabling."):
        scaler = tg.cuda.amp.GradScaler(enabled=True)
    assert not scaler.is_enabled() and scaler.get_scale() == 1.0 and scaler.state_dict() == {}
    loss = tg.tensor(2.0)
    assert scaler.scale(loss) is loss
    model, optimizer = _model_and_optimizer(tg)
    (model(tg.ones(1, 3)).sum()).backward()
    before = model.weight.detach().clone()
    assert scaler.step(optimizer) is None and scaler.update() is None
    np.testing.assert_allclose(model.weight.numpy(), before.numpy() - 0.1, rtol=1e-6)
    assert not tg.amp.GradScaler(enabled=False).is_enabled()  # no warning when disabled


def test_a_cpu_scaler_scales_skips_non_finite_steps_and_grows():
    scaler = tg.amp.GradScaler("cpu", init_scale=2.0**4, growth_interval=2)
    assert scaler.is_enabled() and scaler.scale(tg.tensor(3.0)).item() == 48.0
    scaled, scales = _train(tg, scaler, steps=5, poison=(1,))
    assert scales == [16.0, 8.0, 8.0, 16.0, 16.0]  # backed off at the inf, grown after two
    plain, _ = _train(tg, tg.amp.GradScaler(enabled=False), steps=4, poison=())
    # the skipped step leaves four good ones: the same weights as four unscaled steps
    np.testing.assert_allclose(scaled.weight.numpy(), plain.weight.numpy(), rtol=1e-5)
    state = scaler.state_dict()
    assert state == {
        "scale": 16.0,
        "growth_factor": 2.0,
        "backoff_factor": 0.5,
        "growth_interval": 2,
        "_growth_tracker": 1,
    }
    other = tg.amp.GradScaler("cpu")
    other.load_state_dict(state)
    assert other.state_dict() == state


def test_scaler_errors():
    scaler = tg.amp.GradScaler("cpu")
    model, optimizer = _model_and_optimizer(tg)
    scaler.scale(model(tg.ones(1, 3)).sum()).backward()
    scaler.unscale_(optimizer)
    with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called"):
        scaler.unscale_(optimizer)
    with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
        scaler.step(optimizer, closure=lambda: None)
    with pytest.raises(RuntimeError, match="source state dict is empty"):
        scaler.load_state_dict({})
    with pytest.raises(AssertionError, match="growth factor must be > 1.0"):
        tg.amp.GradScaler("cpu", growth_factor=1.0)


def test_autocast_only_when_disabled():
    with tg.autocast("cpu", enabled=False):
        assert (nn.Linear(2, 2)(tg.ones(1, 2))).dtype == tg.float32
    with tg.amp.autocast("cpu", enabled=False):
        pass
    with (
        pytest.raises(tg.UnsupportedError, match="automatic mixed precision"),
        tg.autocast("cpu", dtype=tg.bfloat16),
    ):
        pass


def test_the_cpu_scaler_agrees_with_pytorch():
    torch = pytest.importorskip("torch")
    ours, our_scales = _train(tg, tg.amp.GradScaler("cpu", init_scale=2.0**4, growth_interval=2), 5)
    theirs, their_scales = _train(
        torch, torch.amp.GradScaler("cpu", init_scale=2.0**4, growth_interval=2), 5
    )
    assert our_scales == their_scales
    np.testing.assert_allclose(ours.weight.numpy(), theirs.weight.detach().numpy(), rtol=1e-5)
    np.testing.assert_allclose(ours.bias.numpy(), theirs.bias.detach().numpy(), rtol=1e-5)
