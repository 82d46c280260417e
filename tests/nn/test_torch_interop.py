"""Moving weights between tensorgrad and PyTorch, and agreeing with PyTorch's layers.
Skipped when torch is not installed."""

from __future__ import annotations

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import nn
from tensorgrad.nn import functional as F
from tests.tolerance import assert_sums_close

torch = pytest.importorskip("torch")


def test_linear_weights_load_into_torch_linear():
    tg.manual_seed(0)
    ours = nn.Linear(20, 7)
    theirs = torch.nn.Linear(20, 7)
    theirs.load_state_dict({k: torch.from_dlpack(v) for k, v in ours.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((5, 20)).astype(np.float32)
    expected = theirs(torch.from_numpy(x)).detach().numpy()
    assert_sums_close(ours(tg.tensor(x)).numpy(), expected, terms=20)


def test_mlp_state_dict_round_trips_with_torch():
    ours = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.BatchNorm1d(16), nn.Linear(16, 3))
    theirs = torch.nn.Sequential(
        torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.BatchNorm1d(16), torch.nn.Linear(16, 3)
    )
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for (name, a), b in zip(ours.state_dict().items(), theirs.state_dict().values(), strict=True):
        assert a.shape == tuple(b.shape), name
        assert a.dtype == b.numpy().dtype, name
    # torch → tensorgrad, then both train one batch and evaluate
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(1).standard_normal((10, 8)).astype(np.float32)
    terms = 16 + 10  # a layer's inputs, and batch norm's batch
    expected = theirs(torch.from_numpy(x)).detach().numpy()
    assert_sums_close(ours(tg.tensor(x)).numpy(), expected, terms)
    for (name, a), b in zip(ours.state_dict().items(), theirs.state_dict().values(), strict=True):
        assert_sums_close(a, b.numpy(), terms, err_msg=name)  # running stats
    ours.eval()
    theirs.eval()
    expected = theirs(torch.from_numpy(x)).detach().numpy()
    assert_sums_close(ours(tg.tensor(x)).numpy(), expected, terms)


def test_batch_norm_3d_and_layer_norm_match_torch_forward_and_backward():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 3, 5))
    for ours, theirs in [
        (nn.BatchNorm1d(3), torch.nn.BatchNorm1d(3)),
        (nn.LayerNorm(5), torch.nn.LayerNorm(5)),
        (nn.LayerNorm((3, 5)), torch.nn.LayerNorm((3, 5))),
    ]:
        ours.double()
        theirs.double()
        with torch.no_grad():
            for p in theirs.parameters():
                p.copy_(torch.from_numpy(rng.standard_normal(tuple(p.shape))))
        ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
        weights = rng.standard_normal(x.shape)
        xt = torch.tensor(x, requires_grad=True)
        (theirs(xt) * torch.from_numpy(weights)).sum().backward()
        xo = tg.tensor(x, requires_grad=True)
        (ours(xo) * weights).sum().backward()
        np.testing.assert_allclose(xo.grad.numpy(), xt.grad.numpy(), rtol=1e-9, atol=1e-12)
        for (name, p), q in zip(ours.named_parameters(), theirs.parameters(), strict=True):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-9, err_msg=name)


def test_losses_match_torch():
    rng = np.random.default_rng(3)
    logits = rng.standard_normal((6, 5))
    target = rng.integers(0, 5, 6)
    for smoothing in (0.0, 0.2):
        ours = F.cross_entropy(tg.tensor(logits), target, label_smoothing=smoothing)
        theirs = torch.nn.functional.cross_entropy(
            torch.from_numpy(logits), torch.from_numpy(target), label_smoothing=smoothing
        )
        assert ours.item() == pytest.approx(theirs.item(), rel=1e-12)
    y = rng.random((6, 5))
    ours = F.binary_cross_entropy_with_logits(tg.tensor(logits), y, reduction="sum")
    theirs = torch.nn.functional.binary_cross_entropy_with_logits(
        torch.from_numpy(logits), torch.from_numpy(y), reduction="sum"
    )
    assert ours.item() == pytest.approx(theirs.item(), rel=1e-12)
