"""Regression tests for the defects a probe of the public API found, one test per defect,
each failing before its fix. The in-place and view ones are in
``tests/core/test_inplace.py``; the command-line and file ones in ``tests/training``,
``tests/test_serialization.py`` and ``tests/data``."""

from __future__ import annotations

import numpy as np
import pytest

import tensorgrad as tg
import tensorgrad.nn.functional as F
from tensorgrad import nn
from tensorgrad.autograd import check_with_scalar_engine, gradcheck, gradgradcheck


def leaf(values, dtype=tg.float64):
    return tg.tensor(np.asarray(values, dtype=dtype), requires_grad=True)


# a check that checks nothing refuses
@pytest.mark.parametrize("check", [gradcheck, gradgradcheck])
@pytest.mark.parametrize("n", [0, -1])
def test_a_check_along_no_direction_refuses(check, n):
    class Doubled(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, grad):
            return grad * 2.0  # off by 2x

    with pytest.raises(ValueError, match="n_directions must be at least 1"):
        check(Doubled.apply, leaf([1.0, 2.0]), n_directions=n)


# the standard deviation of a constant column has a zero gradient, as in PyTorch
def test_std_of_a_constant_column_has_a_zero_gradient():
    x = leaf([[1.0, 5.0], [1.0, 7.0], [1.0, 9.0]])
    x.std(dim=0, correction=0).sum().backward()
    assert np.isfinite(x.grad.numpy()).all()
    np.testing.assert_array_equal(x.grad.numpy()[:, 0], 0.0)
    np.testing.assert_allclose(x.grad.numpy()[:, 1], [-1 / np.sqrt(6), 0.0, 1 / np.sqrt(6)])


# x ** y with a tensor exponent at x = 0, y = 0
def test_power_with_a_zero_tensor_exponent_at_zero_has_a_zero_base_gradient():
    x, y = leaf([0.0, 2.0]), leaf([0.0, 3.0])
    (x**y).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 12.0])
    np.testing.assert_allclose(y.grad.numpy(), [0.0, 8 * np.log(2)])


# a NaN maximum takes the gradient
def test_max_over_a_nan_sends_the_gradient_to_the_nan():
    x = leaf([np.nan, 1.0, 3.0])
    x.max().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 0.0, 0.0])


# complex numbers are refused, not recorded
def test_complex_operands_are_refused():
    x = tg.tensor([1.0], requires_grad=True)
    with pytest.raises(TypeError, match="complex numbers are not supported"):
        x * 1j
    with pytest.raises(TypeError, match="complex"):
        tg.tensor([1 + 2j])
    with pytest.raises(TypeError, match="complex"):
        tg.tensor(np.array([1j]))


# tensor bounds for clip and clamp_
def test_clamp_takes_tensor_bounds_with_pytorchs_gradients():
    x = leaf([0.0, 1.0, 2.0, 3.0])
    low = leaf(1.5)
    high = leaf([2.5, 2.5, 2.5, 2.5])
    out = x.clip(low, high)
    np.testing.assert_array_equal(out.numpy(), [1.5, 1.5, 2.0, 2.5])
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, 1.0, 0.0])
    assert low.grad.item() == 2.0  # where x < low
    np.testing.assert_array_equal(high.grad.numpy(), [0.0, 0.0, 0.0, 1.0])  # where x > high
    np.testing.assert_array_equal(tg.clip(tg.tensor([0.0, 5.0]), tg.tensor(1.5), 2.0).numpy(),
                                  [1.5, 2.0])  # fmt: skip
    y = tg.tensor([0.0, 2.0, 5.0])
    y.clamp_(tg.tensor(1.5))
    np.testing.assert_array_equal(y.numpy(), [1.5, 2.0, 5.0])


def test_clamp_with_tensor_bounds_matches_pytorch():
    torch = pytest.importorskip("torch")
    values = np.array([-1.0, 0.2, 0.8, 3.0])
    bounds = (np.array([0.0, 0.5, 0.9, 1.0]), np.array([1.0, 0.4, 2.0, 2.0]))  # one min > max
    ours = [leaf(values), leaf(bounds[0]), leaf(bounds[1])]
    theirs = [torch.tensor(v, requires_grad=True) for v in (values, *bounds)]
    (ours[0].clamp(ours[1], ours[2]) * tg.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    (theirs[0].clamp(theirs[1], theirs[2]) * torch.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(a.grad.numpy(), b.grad.numpy())


# cross-entropy of an empty batch
def test_cross_entropy_of_an_empty_batch_is_nan_and_differentiable():
    logits = tg.zeros((0, 3), requires_grad=True)
    loss = F.cross_entropy(logits, np.zeros(0, int))
    assert np.isnan(loss.item())
    loss.backward()
    assert logits.grad.shape == (0, 3)


# the scalar-engine check on normalisation layers
@pytest.mark.parametrize(
    "make",
    [
        lambda: (lambda t: F.layer_norm(t, (3,)), None),
        lambda: (lambda m: (m, m))(nn.LayerNorm(3).double()),
        lambda: (lambda m: (m, m))(nn.BatchNorm1d(3).double()),
    ],
    ids=["F.layer_norm", "LayerNorm", "BatchNorm1d_training"],
)
def test_scalar_engine_checks_normalisation(make):
    fn, params = make()
    x = tg.tensor(np.random.default_rng(0).standard_normal((4, 3)), requires_grad=True)
    assert check_with_scalar_engine(fn, x, params=params)


# an array as grad_outputs is one gradient, not a list of them
def test_grad_outputs_may_be_an_array():
    x = leaf([1.0, 2.0, 3.0])
    y = x * x
    (g,) = tg.autograd.grad(y, x, grad_outputs=np.ones(3))
    np.testing.assert_array_equal(g.numpy(), [2.0, 4.0, 6.0])
    z = x * x
    z.backward(gradient=np.ones(3))
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0, 6.0])


# raw NumPy errors now say what is wrong
def test_bad_tensor_creation_names_the_problem():
    with pytest.raises(ValueError, match=r"expected sequence of length 2 at dim 1 \(got 1\)"):
        tg.tensor([[1, 2], [3]])
    with pytest.raises(RuntimeError, match="eye: n must be greater or equal to 0, got -1"):
        tg.eye(-1)
    with pytest.raises(TypeError, match="full: fill_value must be a number, got str"):
        tg.full((2,), "a")
    with pytest.raises(RuntimeError, match="cross_entropy: logits must be floating point"):
        F.cross_entropy(tg.tensor([[1, 2]]), [0])


# an empty tensor's repr keeps its shape
def test_repr_of_an_empty_tensor_shows_its_shape():
    assert repr(tg.zeros((0, 3))) == "tensor([], size=(0, 3))"
