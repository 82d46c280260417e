"""``jacrev`` as one backward sweep vmap-ed over the outputs' unit cotangents (PyTorch's
way), ``chunk_size`` of them at a time, and ``autograd.functional.jacobian(vectorize=True)``
on the same path: equal to the row-by-row path (``BATCHED_JACOBIANS = False``), to finite
differences' shapes and to PyTorch's."""

from __future__ import annotations

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import func
from tensorgrad.autograd import functional as AF
from tensorgrad.func import jacobians

RNG = np.random.default_rng(7)
A = tg.tensor(RNG.standard_normal((5, 4)))
X = tg.tensor(RNG.standard_normal(4))
Y = tg.tensor(RNG.standard_normal((2, 3)))


def several(x, y):
    """Two inputs, two outputs of different shapes, one output ignoring ``y``."""
    h = (A @ x).tanh()
    return h * y.sum(), (x[:3] * y).exp().softmax(-1)


@pytest.mark.parametrize("chunk_size", [None, 1, 4, 100])
def test_jacrev_batched_equals_row_by_row(monkeypatch, chunk_size):
    batched = func.jacrev(several, argnums=(0, 1), chunk_size=chunk_size)(X, Y)
    monkeypatch.setattr(jacobians, "BATCHED_JACOBIANS", False)
    rows = func.jacrev(several, argnums=(0, 1))(X, Y)
    for got_out, want_out in zip(batched, rows, strict=True):
        for got, want in zip(got_out, want_out, strict=True):
            assert got.shape == want.shape
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-13, atol=1e-15)


def test_jacrev_of_an_output_that_ignores_the_input_is_zeros():
    jac = func.jacrev(lambda x, y: y * 2.0, argnums=0)(X, Y)
    assert jac.shape == (2, 3, 4)
    assert not jac.numpy().any()


def test_jacrev_with_aux_and_chunks_against_torch():
    torch = pytest.importorskip("torch")

    def f(m, a, x):
        out = m.sin(a @ x) * x.sum()
        return out, out.sum()

    ours, aux = func.jacrev(lambda x: f(tg, A, x), has_aux=True, chunk_size=2)(X)
    theirs, their_aux = torch.func.jacrev(
        lambda x: f(torch, torch.tensor(A.numpy()), x), has_aux=True, chunk_size=2
    )(torch.tensor(X.numpy()))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)
    np.testing.assert_allclose(aux.numpy(), their_aux.numpy(), rtol=1e-12)


def test_hessians_through_batched_jacrev_stay_symmetric():
    def f(x):
        return (x.sin() * x[0]).sum() + (x**3).sum()

    by_reverse = func.jacrev(func.jacrev(f))(X).numpy()
    np.testing.assert_allclose(by_reverse, func.hessian(f)(X).numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(by_reverse, by_reverse.T, atol=1e-12)


@pytest.mark.parametrize("batched", [True, False])
def test_autograd_functional_jacobian_vectorized_equals_the_loop(monkeypatch, batched):
    monkeypatch.setattr(jacobians, "BATCHED_JACOBIANS", batched)
    vectorized = AF.jacobian(several, (X, Y), vectorize=True)
    looped = AF.jacobian(several, (X, Y))
    for got_out, want_out in zip(vectorized, looped, strict=True):
        for got, want in zip(got_out, want_out, strict=True):
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-13, atol=1e-15)
    hess = AF.hessian(lambda x: (x.sin() * x).sum(), X, vectorize=True)
    np.testing.assert_allclose(
        hess.numpy(), AF.hessian(lambda x: (x.sin() * x).sum(), X).numpy(), rtol=1e-12
    )


def test_autograd_functional_jacobian_vectorized_against_torch():
    torch = pytest.importorskip("torch")
    from torch.autograd import functional as TAF

    def f(m, x, y):
        return (x[:3] * y).exp(), m.tanh(x).sum()

    ours = AF.jacobian(lambda x, y: f(tg, x, y), (X, Y), vectorize=True)
    theirs = TAF.jacobian(
        lambda x, y: f(torch, x, y), (torch.tensor(X.numpy()), torch.tensor(Y.numpy())),
        vectorize=True,
    )  # fmt: skip
    for got_out, want_out in zip(ours, theirs, strict=True):
        for got, want in zip(got_out, want_out, strict=True):
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-15)
