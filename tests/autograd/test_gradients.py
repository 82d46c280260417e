"""``tg.autograd.grad``'s PyTorch options: ``is_grads_batched`` (a batch of VJPs in one sweep,
vmap over the backward) and ``materialize_grads``."""

from __future__ import annotations

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.core import batching


def graph(rng: np.random.Generator) -> tuple:
    x = tg.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    w = tg.tensor(rng.standard_normal((4, 5)), requires_grad=True)
    unused = tg.tensor(rng.standard_normal(2), requires_grad=True)
    h = (x @ w).tanh()
    return (x, w, unused), (h, (x.sin() * 2).sum())


@pytest.mark.parametrize("batch", [1, 3, 0])
def test_batched_grads_equal_a_loop_of_grads(batch):
    rng = np.random.default_rng(0)
    (x, w, unused), (h, s) = graph(rng)
    cotangents = [tg.tensor(rng.standard_normal((batch, *o.shape))) for o in (h, s)]
    before = dict(batching.state.looped)
    got = tg.autograd.grad(
        (h, s), (x, w, unused), cotangents, retain_graph=True, allow_unused=True,
        is_grads_batched=True,
    )  # fmt: skip
    assert dict(batching.state.looped) == before  # every VJP batched by its rule
    assert got[2] is None
    for j, inp in enumerate((x, w)):
        assert got[j].shape == (batch, *inp.shape)
        for b in range(batch):
            one = tg.autograd.grad((h, s), inp, [c[b] for c in cotangents], retain_graph=True)
            np.testing.assert_allclose(got[j][b].numpy(), one[0].numpy(), rtol=1e-12)


def test_batched_grads_with_create_graph_are_differentiable():
    x = tg.tensor([0.5, -1.0, 2.0], dtype=tg.float64, requires_grad=True)
    y = x**3
    v = tg.tensor(np.eye(3))
    (jac,) = tg.autograd.grad(y, x, v, create_graph=True, is_grads_batched=True)
    np.testing.assert_allclose(jac.numpy(), np.diag(3 * x.detach().numpy() ** 2))
    (second,) = tg.autograd.grad(jac.sum(), x)  # d/dx Σ 3x² = 6x
    np.testing.assert_allclose(second.numpy(), 6 * x.detach().numpy())


def test_batched_grads_materialize_unused_inputs_unbatched():
    rng = np.random.default_rng(1)
    (x, _, unused), (h, _) = graph(rng)
    got = tg.autograd.grad(
        h, (x, unused), tg.ones(2, *h.shape), is_grads_batched=True, materialize_grads=True
    )
    assert got[0].shape == (2, 3, 4) and got[1].shape == (2,)
    assert not got[1].numpy().any()


def test_batched_grads_errors():
    rng = np.random.default_rng(2)
    (x, _, _), (h, s) = graph(rng)
    with pytest.raises(RuntimeError, match=r"grad_output\[0\] has a shape of \(2, 5\) and output"):
        tg.autograd.grad(h, x, tg.ones(4, 2, 5), retain_graph=True, is_grads_batched=True)
    with pytest.raises(RuntimeError, match="interpret the first dimension"):
        tg.autograd.grad(s, x, tg.ones(()), retain_graph=True, is_grads_batched=True)
    with pytest.raises(RuntimeError, match="the same batch size"):
        tg.autograd.grad(
            (h, s), x, [tg.ones(2, 3, 5), tg.ones(3)], retain_graph=True, is_grads_batched=True
        )
    with pytest.raises(RuntimeError, match=r"grad_outputs\[1\] is None"):
        tg.autograd.grad((h, s), x, [tg.ones(2, 3, 5), None], is_grads_batched=True)
    with pytest.raises(ValueError, match="allow_unused to be True or not passed"):
        tg.autograd.grad(s, x, materialize_grads=True, allow_unused=False)


def test_batched_grads_agree_with_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x0, w0 = rng.standard_normal((3, 4)), rng.standard_normal((4, 5))
    v0 = rng.standard_normal((6, 3, 5))
    results = []
    for lib in (tg, torch):
        x = lib.tensor(x0, requires_grad=True)
        w = lib.tensor(w0, requires_grad=True)
        u = lib.tensor(np.ones(2), requires_grad=True)
        h = (x @ w).tanh() * x.sum()
        results.append(
            lib.autograd.grad(
                h, (x, w, u), lib.tensor(v0), is_grads_batched=True, materialize_grads=True
            )
        )
    for ours, theirs in zip(*results, strict=True):
        assert tuple(ours.shape) == tuple(theirs.shape)
        np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-12, atol=1e-14)
    for lib in (tg, torch):  # a cotangent batch of the wrong shape: the same error type
        t = lib.ones(3, requires_grad=True)
        with pytest.raises(RuntimeError, match="interpret the first dimension"):
            lib.autograd.grad(t * 2, t, lib.ones(2, 4), is_grads_batched=True)
