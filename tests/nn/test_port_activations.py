"""softplus, elu, silu, one_hot and dropout against PyTorch: values and gradients in float64
including the extremes (no overflow in a branch that is not taken) and the kinks, the error
types, and the module forms."""

from __future__ import annotations

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import nn
from tensorgrad.nn import functional as F

#: kinks, extremes and ordinary values
POINTS = np.array([-1000.0, -80.0, -20.0, -1.5, -1e-8, 0.0, 1e-8, 0.7, 5.0, 19.999, 20.0, 20.1,
                   40.0, 800.0])  # fmt: skip


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def values_and_gradients(fn, x):
    t = tg.tensor(x, requires_grad=True)
    out = fn(t)
    out.backward(np.ones(out.shape))
    return out.numpy(), t.grad.numpy()


def torch_values_and_gradients(torch, fn, x):
    t = torch.tensor(x, requires_grad=True)
    out = fn(t)
    out.backward(torch.ones_like(out))
    return out.detach().numpy(), t.grad.numpy()


@pytest.mark.parametrize(
    ("name", "kwargs"),
    [
        ("softplus", {}),
        ("softplus", {"beta": 2.0, "threshold": 5.0}),
        ("softplus", {"beta": 0.5, "threshold": 30.0}),
        ("elu", {}),
        ("elu", {"alpha": 0.3}),
        ("silu", {}),
    ],
)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_activations_match_torch_everywhere(torch, name, kwargs, dtype):
    """Same values and gradients, at the kinks and the extremes too (finite everywhere)."""
    x = POINTS.astype(dtype)
    ours = values_and_gradients(lambda t: getattr(F, name)(t, **kwargs), x)
    theirs = torch_values_and_gradients(
        torch, lambda t: getattr(torch.nn.functional, name)(t, **kwargs), x
    )
    tol = {"rtol": 1e-12, "atol": 1e-300} if dtype == np.float64 else {"rtol": 2e-6, "atol": 1e-37}
    for a, b in zip(ours, theirs, strict=True):
        assert a.dtype == dtype
        assert np.isfinite(a).all()
        np.testing.assert_allclose(a, b, **tol)


def test_softplus_threshold_switches_to_the_identity():
    x = tg.tensor([20.0, 20.5], dtype=tg.float64)
    np.testing.assert_array_equal(F.softplus(x).numpy()[1], 20.5)  # βx > threshold: x itself
    assert F.softplus(x).numpy()[0] == pytest.approx(np.logaddexp(0, 20.0), rel=1e-15)


@pytest.mark.parametrize("name", ["elu", "silu", "leaky_relu"])
def test_inplace_activations_write_into_their_input(torch, name):
    x = np.array([-2.0, -0.5, 0.0, 1.5])
    ours = tg.tensor(x)
    result = getattr(F, name)(ours, inplace=True)
    expected = getattr(torch.nn.functional, name)(torch.tensor(x), inplace=True)
    np.testing.assert_allclose(ours.numpy(), expected.numpy(), rtol=1e-15)
    np.testing.assert_array_equal(result.numpy(), ours.numpy())
    # on a non-leaf that is part of a graph, the in-place form is recorded and differentiable
    leaf = tg.tensor(x, requires_grad=True)
    y = leaf * 2
    getattr(F, name)(y, inplace=True).sum().backward()
    expected_grad = values_and_gradients(lambda t: getattr(F, name)(t * 2), x)[1]
    np.testing.assert_allclose(leaf.grad.numpy(), expected_grad, rtol=1e-15)


@pytest.mark.parametrize(
    ("module", "kwargs"),
    [("Softplus", {}), ("Softplus", {"beta": 2.0, "threshold": 10.0}), ("ELU", {}),
     ("ELU", {"alpha": 0.5, "inplace": True}), ("SiLU", {}), ("SiLU", {"inplace": True})],
)  # fmt: skip
def test_activation_modules_match_torch(torch, module, kwargs):
    ours, theirs = getattr(nn, module)(**kwargs), getattr(torch.nn, module)(**kwargs)
    assert repr(ours) == repr(theirs)
    x = np.linspace(-3, 3, 7)
    np.testing.assert_allclose(
        ours(tg.tensor(x)).numpy(), theirs(torch.tensor(x)).numpy(), rtol=1e-14
    )


# --------------------------------------------------------------------------- one_hot
@pytest.mark.parametrize(
    ("indices", "num_classes"),
    [([0, 2, 1], -1), ([[1, 0], [3, 3]], 5), (2, -1), (np.zeros((0,), np.int64), 4)],
)
def test_one_hot_matches_torch(torch, indices, num_classes):
    ours = F.one_hot(tg.tensor(indices), num_classes)
    theirs = torch.nn.functional.one_hot(torch.tensor(indices), num_classes)
    assert ours.dtype == tg.int64 and not ours.requires_grad
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize(
    ("indices", "num_classes", "message"),
    [
        ([-1, 2], -1, "class values must be non-negative"),
        ([1, 2], 2, "class values must be smaller than num_classes"),
        ([1, 2], 0, "class values must be smaller than num_classes"),
        (np.zeros((0,), np.int64), -1, "can not infer total number of classes"),
        ([1.0, 2.0], -1, "only applicable to index tensors"),
    ],
)
def test_one_hot_errors_are_pytorchs(torch, indices, num_classes, message):
    with pytest.raises(RuntimeError):
        torch.nn.functional.one_hot(torch.tensor(indices), num_classes)
    with pytest.raises(RuntimeError, match=message):
        F.one_hot(tg.tensor(indices), num_classes)


def test_one_hot_accepts_other_integer_dtypes():
    """PyTorch takes only int64; any integer dtype works here (see docs/porting.md)."""
    out = F.one_hot(tg.tensor(np.array([2, 0], dtype=np.uint8)))
    np.testing.assert_array_equal(out.numpy(), [[0, 0, 1], [1, 0, 0]])


# --------------------------------------------------------------------------- dropout
def test_dropout_signature_and_semantics(torch):
    tg.manual_seed(0)
    x = tg.ones(10_000, dtype=tg.float64, requires_grad=True)
    out = F.dropout(x, 0.25, True)
    kept = out.numpy() != 0
    assert abs(kept.mean() - 0.75) < 0.02
    np.testing.assert_allclose(out.numpy()[kept], 1 / 0.75)
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), out.numpy())  # the gradient is the mask
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, p=0.5, training=False) is x
    np.testing.assert_array_equal(F.dropout(x, 1.0).numpy(), 0.0)
    for p in (-0.1, 1.5):
        with pytest.raises(ValueError):
            torch.nn.functional.dropout(torch.ones(2), p)
        with pytest.raises(ValueError, match="probability has to be between 0 and 1"):
            F.dropout(x, p)


# --------------------------------------------------------------------------- gelu
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_matches_torch_in_value_gradient_and_second_derivative(torch, approximate):
    x = np.linspace(-6.0, 6.0, 41)
    ours = values_and_gradients(lambda t: F.gelu(t, approximate=approximate), x)
    theirs = torch_values_and_gradients(
        torch, lambda t: torch.nn.functional.gelu(t, approximate=approximate), x
    )
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    t = tg.tensor(x, requires_grad=True)
    (g,) = tg.autograd.grad(nn.GELU(approximate=approximate)(t).sum(), t, create_graph=True)
    (h,) = tg.autograd.grad(g.sum(), t)
    u = torch.tensor(x, requires_grad=True)
    (gt,) = torch.autograd.grad(
        torch.nn.GELU(approximate=approximate)(u).sum(), u, create_graph=True
    )
    (ht,) = torch.autograd.grad(gt.sum(), u)
    np.testing.assert_allclose(h.numpy(), ht.numpy(), rtol=1e-10, atol=1e-12)
    assert repr(nn.GELU(approximate=approximate)) == repr(torch.nn.GELU(approximate=approximate))


def test_gelu_refuses_an_unknown_approximation_with_pytorchs_type(torch):
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        F.gelu(tg.zeros(2), approximate="tan")
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        torch.nn.functional.gelu(torch.zeros(2), approximate="tan")
