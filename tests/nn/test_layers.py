"""Layers: forward against NumPy references, backward by float64 directional derivatives,
and the behaviour of Dropout, BatchNorm1d and LayerNorm in training and evaluation."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import nn
from tensorgrad.nn import functional as F


def erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf)(x)


def numpy_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


#: layer, input shape, NumPy reference of the forward (given the input and the layer)
ELEMENTWISE = [
    (nn.ReLU(), lambda x, m: np.maximum(x, 0)),
    (nn.LeakyReLU(0.2), lambda x, m: np.where(x > 0, x, 0.2 * x)),
    (nn.Tanh(), lambda x, m: np.tanh(x)),
    (nn.Sigmoid(), lambda x, m: 1 / (1 + np.exp(-x))),
    (nn.GELU(), lambda x, m: 0.5 * x * (1 + erf(x / np.sqrt(2)))),
    (
        nn.GELU("tanh"),
        lambda x, m: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3))),
    ),
    (nn.Softmax(dim=1), lambda x, m: numpy_softmax(x, 1)),
    (nn.Softmax(dim=0), lambda x, m: numpy_softmax(x, 0)),
    (nn.LogSoftmax(dim=1), lambda x, m: np.log(numpy_softmax(x, 1))),
    (nn.Identity(), lambda x, m: x),
    (nn.Flatten(), lambda x, m: x.reshape(len(x), -1)),
    (nn.Flatten(0, 1), lambda x, m: x.reshape(-1, *x.shape[2:])),
]

LAYERS = [
    (nn.Linear(5, 3), (4, 5), lambda x, m: x @ m.weight.numpy().T + m.bias.numpy()),
    (nn.Linear(5, 3, bias=False), (2, 6, 5), lambda x, m: x @ m.weight.numpy().T),
    (
        nn.Sequential(nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 2)),
        (3, 5),
        lambda x, m: (
            np.tanh(x @ m[0].weight.numpy().T + m[0].bias.numpy()) @ m[2].weight.numpy().T
            + m[2].bias.numpy()
        ),
    ),
]


def batch_norm_reference(x, weight, bias, eps, axes):
    mean = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    shape = (-1,) if x.ndim == 2 else (-1, 1)
    return (x - mean) / np.sqrt(var + eps) * weight.reshape(shape) + bias.reshape(shape)


def double_with_random_affine(module: nn.Module, seed: int = 0) -> nn.Module:
    """float64, with non-trivial weight and bias so their gradients are exercised."""
    rng = np.random.default_rng(seed)
    module.double()
    with tg.no_grad():
        for p in module.parameters():
            p.copy_(rng.standard_normal(p.shape))
    return module


@pytest.mark.parametrize("layer, reference", ELEMENTWISE, ids=lambda v: repr(v)[:20])
@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 5)])
def test_elementwise_layers_forward_and_backward(layer, reference, shape, check_gradient):
    x = tg.tensor(np.random.default_rng(1).standard_normal(shape), requires_grad=True)
    np.testing.assert_allclose(
        layer(x).numpy(), reference(x.numpy(), layer), rtol=1e-12, atol=1e-12
    )
    check_gradient(lambda: layer(x), [x])


@pytest.mark.parametrize("layer, shape, reference", LAYERS, ids=["linear", "nobias", "mlp"])
def test_parametric_layers_forward_and_backward(layer, shape, reference, check_gradient):
    layer = double_with_random_affine(layer)
    x = tg.tensor(np.random.default_rng(2).standard_normal(shape), requires_grad=True)
    np.testing.assert_allclose(
        layer(x).numpy(), reference(x.numpy(), layer), rtol=1e-12, atol=1e-12
    )
    check_gradient(lambda: layer(x), [x, *layer.parameters()])


def test_linear_float32_forward_stays_float32():
    layer = nn.Linear(3, 2)
    out = layer(tg.randn((4, 3)))
    assert out.dtype == np.float32 and out.shape == (4, 2)
    with pytest.raises(ValueError, match="linear: input of shape"):
        layer(tg.randn((4, 2)))


def test_linear_default_init_bounds_and_reproducibility():
    tg.manual_seed(0)
    layer = nn.Linear(400, 300)
    bound = 1 / math.sqrt(400)
    for p in (layer.weight, layer.bias):
        assert p.dtype == np.float32
        assert np.abs(p.numpy()).max() <= bound
    assert np.abs(layer.weight.numpy()).max() > 0.99 * bound  # fills the interval
    tg.manual_seed(0)
    np.testing.assert_array_equal(nn.Linear(400, 300).weight.numpy(), layer.weight.numpy())


# --------------------------------------------------------------------- dropout
def test_dropout_mask_statistics_and_scaling():
    tg.manual_seed(0)
    drop = nn.Dropout(0.3)
    out = drop(tg.ones((200, 500))).numpy()
    kept = out != 0
    assert abs(kept.mean() - 0.7) < 0.005  # 100,000 draws: standard error 0.0015
    np.testing.assert_allclose(out[kept], 1 / 0.7, rtol=1e-6)
    assert out.dtype == np.float32


def test_dropout_is_identity_in_eval_and_for_p_zero():
    x = tg.randn((3, 4))
    assert nn.Dropout(0.5).eval()(x) is x
    assert nn.Dropout(0.0)(x) is x
    assert F.dropout(x, 0.5, training=False) is x


def test_dropout_p_one_zeroes_everything_with_zero_gradient():
    x = tg.randn((3, 4), requires_grad=True)
    out = nn.Dropout(1.0)(x)
    assert np.all(out.numpy() == 0)
    out.sum().backward()
    assert np.all(x.grad.numpy() == 0)


def test_dropout_masks_depend_on_the_seed_only():
    x = tg.ones((10, 10))
    tg.manual_seed(3)
    a = nn.Dropout(0.5)(x).numpy()
    tg.manual_seed(3)
    b = nn.Dropout(0.5)(x).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, nn.Dropout(0.5)(x).numpy())


def test_dropout_gradient_is_the_mask(check_gradient):
    x = tg.tensor(np.random.default_rng(0).standard_normal((5, 6)), requires_grad=True)

    def f() -> tg.Tensor:
        tg.manual_seed(7)
        return F.dropout(x, 0.4)

    check_gradient(f, [x])


@pytest.mark.parametrize("p", [-0.1, 1.5])
def test_dropout_rejects_bad_probabilities(p):
    with pytest.raises(ValueError, match="probability has to be between 0 and 1"):
        nn.Dropout(p)
    with pytest.raises(ValueError, match="probability has to be between 0 and 1"):
        F.dropout(tg.ones(2), p)


# --------------------------------------------------------------------- batch norm
@pytest.mark.parametrize("shape, axes", [((8, 3), (0,)), ((4, 3, 5), (0, 2))])
def test_batch_norm_training_forward_and_running_stats(shape, axes):
    bn = double_with_random_affine(nn.BatchNorm1d(3, momentum=0.2))
    x = np.random.default_rng(0).standard_normal(shape) * 3 + 1
    out = bn(tg.tensor(x))
    np.testing.assert_allclose(
        out.numpy(),
        batch_norm_reference(x, bn.weight.numpy(), bn.bias.numpy(), 1e-5, axes),
        rtol=1e-10,
    )
    # PyTorch's update: the UNBIASED batch variance, mixed in with momentum
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.2 * x.mean(axis=axes), rtol=1e-12)
    np.testing.assert_allclose(
        bn.running_var.numpy(), 0.8 * 1.0 + 0.2 * x.var(axis=axes, ddof=1), rtol=1e-12
    )
    assert bn.num_batches_tracked.item() == 1


def test_batch_norm_eval_uses_running_stats():
    bn = double_with_random_affine(nn.BatchNorm1d(3))
    with tg.no_grad():
        bn.running_mean.copy_(np.array([0.5, -1.0, 2.0]))
        bn.running_var.copy_(np.array([4.0, 0.25, 1.0]))
    bn.eval()
    x = np.random.default_rng(1).standard_normal((5, 3))
    expected = (x - bn.running_mean.numpy()) / np.sqrt(bn.running_var.numpy() + 1e-5)
    expected = expected * bn.weight.numpy() + bn.bias.numpy()
    np.testing.assert_allclose(bn(tg.tensor(x)).numpy(), expected, rtol=1e-12)
    assert bn.num_batches_tracked.item() == 0  # eval does not count batches
    before = bn.running_mean.numpy().copy()
    bn(tg.tensor(x))
    np.testing.assert_array_equal(bn.running_mean.numpy(), before)


def test_batch_norm_cumulative_average_when_momentum_is_none():
    bn = nn.BatchNorm1d(2, momentum=None).double()
    batches = [np.random.default_rng(i).standard_normal((6, 2)) for i in range(3)]
    for x in batches:
        bn(tg.tensor(x))
    np.testing.assert_allclose(
        bn.running_mean.numpy(), np.mean([b.mean(axis=0) for b in batches], axis=0), rtol=1e-12
    )
    np.testing.assert_allclose(
        bn.running_var.numpy(),
        np.mean([b.var(axis=0, ddof=1) for b in batches], axis=0),
        rtol=1e-12,
    )


def test_batch_norm_without_running_stats_or_affine():
    bn = nn.BatchNorm1d(3, affine=False, track_running_stats=False).double()
    assert list(bn.parameters()) == [] and bn.state_dict() == {}
    x = np.random.default_rng(0).standard_normal((6, 3))
    expected = (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5)
    np.testing.assert_allclose(bn.eval()(tg.tensor(x)).numpy(), expected, rtol=1e-10)


@pytest.mark.parametrize("shape", [(6, 3), (3, 3, 4)])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_gradient(shape, training, check_gradient):
    bn = double_with_random_affine(nn.BatchNorm1d(3))
    with tg.no_grad():
        bn.running_var.fill_(2.0)
    bn.train(training)
    x = tg.tensor(np.random.default_rng(3).standard_normal(shape), requires_grad=True)
    check_gradient(lambda: bn(x), [x, *bn.parameters()])


def test_batch_norm_float32_and_shape_errors():
    bn = nn.BatchNorm1d(4)
    out = bn(tg.randn((8, 4)))
    assert out.dtype == np.float32 and bn.running_var.dtype == np.float32
    with pytest.raises(ValueError, match=r"expected input of shape \(N, 4\)"):
        bn(tg.randn((8, 3)))
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        bn(tg.randn((1, 4)))
    assert bn.eval()(tg.randn((1, 4))).shape == (1, 4)  # a single sample is fine in eval


# --------------------------------------------------------------------- layer norm
@pytest.mark.parametrize("normalized_shape", [5, (4, 5)])
def test_layer_norm_forward_and_gradient(normalized_shape, check_gradient):
    ln = double_with_random_affine(nn.LayerNorm(normalized_shape))
    x = tg.tensor(np.random.default_rng(0).standard_normal((3, 4, 5)) * 2 + 1, requires_grad=True)
    axes = (-1,) if normalized_shape == 5 else (-2, -1)
    mean = x.numpy().mean(axis=axes, keepdims=True)
    var = x.numpy().var(axis=axes, keepdims=True)
    expected = (x.numpy() - mean) / np.sqrt(var + 1e-5) * ln.weight.numpy() + ln.bias.numpy()
    np.testing.assert_allclose(ln(x).numpy(), expected, rtol=1e-10, atol=1e-12)
    check_gradient(lambda: ln(x), [x, *ln.parameters()])


def test_layer_norm_defaults_and_errors():
    ln = nn.LayerNorm(3)
    np.testing.assert_array_equal(ln.weight.numpy(), 1.0)
    np.testing.assert_array_equal(ln.bias.numpy(), 0.0)
    out = ln(tg.tensor([[1.0, 2.0, 3.0]]))
    np.testing.assert_allclose(out.numpy(), [[-1.2247, 0.0, 1.2247]], atol=1e-4)
    assert list(nn.LayerNorm(3, elementwise_affine=False).parameters()) == []
    with pytest.raises(ValueError, match="does not end with normalized_shape"):
        ln(tg.randn((2, 4)))
    assert repr(ln) == "LayerNorm((3,), eps=1e-05, elementwise_affine=True)"


def test_normalize_second_derivative(check_gradient):
    """The fused op's backward stays differentiable (create_graph): check the gradient of a
    gradient against central differences."""
    x = tg.tensor(np.random.default_rng(5).standard_normal((4, 6)), requires_grad=True)
    w = np.random.default_rng(6).standard_normal((4, 6))

    def grad_of_layer_norm() -> tg.Tensor:
        out = (F.layer_norm(x, (6,)) * w).sum()
        (g,) = tg.grad(out, [x], create_graph=True)
        return g

    check_gradient(grad_of_layer_norm, [x])


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "composed"])
def test_layer_norm_with_and_without_the_fused_op(monkeypatch, fused):
    """``F.layer_norm`` with weight and bias runs as one op (``FUSE_LAYER_NORM``) or as
    normalize, multiply and add: the same values and gradients, against float64 NumPy."""
    from tensorgrad.nn.functional import normalization

    monkeypatch.setattr(normalization, "FUSE_LAYER_NORM", fused)
    rng = np.random.default_rng(4)
    x64, w64, b64 = rng.standard_normal((3, 5, 8)), rng.standard_normal(8), rng.standard_normal(8)
    g64 = rng.standard_normal((3, 5, 8))
    x, w, b = (tg.tensor(a.astype(np.float32), requires_grad=True) for a in (x64, w64, b64))
    out = F.layer_norm(x, (8,), w, b)
    assert type(out.grad_fn.op).__name__ == ("LayerNorm" if fused else "Add")
    out.backward(tg.tensor(g64.astype(np.float32)))
    mean = x64.mean(-1, keepdims=True)
    inverse_std = 1 / np.sqrt(x64.var(-1, keepdims=True) + 1e-5)
    normalized = (x64 - mean) * inverse_std
    gn = g64 * w64
    dx = inverse_std * (
        gn - gn.mean(-1, keepdims=True) - normalized * (gn * normalized).mean(-1, keepdims=True)
    )
    np.testing.assert_allclose(out.detach().numpy(), normalized * w64 + b64, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(x.grad.numpy(), dx, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(w.grad.numpy(), (g64 * normalized).sum((0, 1)), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(b.grad.numpy(), g64.sum((0, 1)), rtol=1e-5, atol=1e-5)
