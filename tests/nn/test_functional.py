"""nn.functional: losses against NumPy references, their gradients, and argument errors."""

from __future__ import annotations

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.nn import functional as F

RNG = np.random.default_rng(0)
LOGITS = RNG.standard_normal((6, 4))
TARGET = np.array([0, 3, 1, 1, 2, 3])


def reference_cross_entropy(logits, target, smoothing=0.0):
    shifted = logits - logits.max(axis=1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    n, c = logits.shape
    weights = np.full((n, c), smoothing / c)
    weights[np.arange(n), target] += 1 - smoothing
    return -(weights * logp).sum(axis=1)


def reduce(losses, reduction):
    return {"mean": losses.mean(), "sum": losses.sum(), "none": losses}[reduction]


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_cross_entropy_matches_reference(reduction, smoothing, check_gradient):
    x = tg.tensor(LOGITS, requires_grad=True)
    for target in (TARGET, tg.tensor(TARGET), TARGET.tolist()):
        out = F.cross_entropy(x, target, reduction=reduction, label_smoothing=smoothing)
        expected = reduce(reference_cross_entropy(LOGITS, TARGET, smoothing), reduction)
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12)
    check_gradient(
        lambda: F.cross_entropy(x, TARGET, reduction=reduction, label_smoothing=smoothing), [x]
    )


def test_cross_entropy_single_sample_and_spatial_inputs(check_gradient):
    x = tg.tensor(LOGITS[0], requires_grad=True)
    single = F.cross_entropy(x, np.array(2))
    np.testing.assert_allclose(single.numpy(), reference_cross_entropy(LOGITS[:1], [2])[0])
    assert F.cross_entropy(x, 2, reduction="none").shape == ()

    spatial = RNG.standard_normal((2, 4, 3))  # (N, C, L): classes on axis 1, as in PyTorch
    target = np.array([[0, 1, 3], [2, 2, 0]])
    flat = spatial.transpose(0, 2, 1).reshape(-1, 4)
    expected = reference_cross_entropy(flat, target.ravel())
    x = tg.tensor(spatial, requires_grad=True)
    np.testing.assert_allclose(F.cross_entropy(x, target).numpy(), expected.mean(), rtol=1e-12)
    none = F.cross_entropy(x, target, reduction="none")
    np.testing.assert_allclose(none.numpy(), expected.reshape(2, 3), rtol=1e-12)
    check_gradient(lambda: F.cross_entropy(x, target), [x])


def test_cross_entropy_float32_and_errors():
    x = tg.tensor(LOGITS.astype(np.float32), requires_grad=True)
    loss = F.cross_entropy(x, TARGET)
    loss.backward()
    assert loss.dtype == np.float32 and x.grad.dtype == np.float32
    with pytest.raises(ValueError, match="reduction must be 'mean', 'sum' or 'none'"):
        F.cross_entropy(x, TARGET, reduction="avg")
    with pytest.raises(ValueError, match=r"batch_size \(6\) to match target batch_size \(3\)"):
        F.cross_entropy(x, TARGET[:3])
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte"):
        F.cross_entropy(x, TARGET.astype(np.float32))
    with pytest.raises(IndexError, match="out of range"):
        F.cross_entropy(x, TARGET + 1)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss_of_log_softmax_is_cross_entropy(reduction, check_gradient):
    x = tg.tensor(LOGITS, requires_grad=True)
    nll = F.nll_loss(F.log_softmax(x, dim=1), TARGET, reduction=reduction)
    np.testing.assert_allclose(
        nll.numpy(), F.cross_entropy(x, TARGET, reduction=reduction).numpy(), rtol=1e-12
    )
    check_gradient(lambda: F.nll_loss(F.log_softmax(x, dim=1), TARGET, reduction=reduction), [x])


def test_nll_loss_with_repeated_targets_accumulates():
    logp = tg.tensor(RNG.standard_normal((4, 3)), requires_grad=True)
    target = np.array([1, 1, 1, 1])
    F.nll_loss(logp, target, reduction="sum").backward()
    expected = np.zeros((4, 3))
    expected[:, 1] = -1
    np.testing.assert_array_equal(logp.grad.numpy(), expected)


def test_nll_loss_errors():
    logp = tg.zeros((3, 2))
    with pytest.raises(ValueError, match=r"batch_size \(3\) to match target batch_size \(2\)"):
        F.nll_loss(logp, [0, 1])
    with pytest.raises(IndexError, match="target class 2 is out of range for 2 classes"):
        F.nll_loss(logp, [0, 1, 2])
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte"):
        F.nll_loss(logp, np.zeros(3))
    with pytest.raises(ValueError, match="1 or more dimensions"):
        F.nll_loss(tg.zeros(()), [0])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss(reduction, check_gradient):
    a = tg.tensor(RNG.standard_normal((3, 4)), requires_grad=True)
    b = tg.tensor(RNG.standard_normal((3, 4)), requires_grad=True)
    out = F.mse_loss(a, b, reduction=reduction)
    np.testing.assert_allclose(
        out.numpy(), reduce((a.numpy() - b.numpy()) ** 2, reduction), rtol=1e-12
    )
    check_gradient(lambda: F.mse_loss(a, b, reduction=reduction), [a, b])
    np.testing.assert_allclose(F.mse_loss(a, b.numpy(), reduction=reduction).numpy(), out.numpy())


def test_mse_loss_refuses_broadcasting_shapes():
    with pytest.raises(ValueError, match=r"input of shape \(4, 1\) and target of shape \(4,\)"):
        F.mse_loss(tg.zeros((4, 1)), np.zeros(4))
    with pytest.raises(ValueError, match="reduction"):
        F.mse_loss(tg.zeros(2), np.zeros(2), reduction="max")


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_binary_cross_entropy_with_logits(reduction, check_gradient):
    x = tg.tensor(RNG.standard_normal((5, 2)) * 4, requires_grad=True)
    y = RNG.random((5, 2))
    p = 1 / (1 + np.exp(-x.numpy()))
    expected = reduce(-(y * np.log(p) + (1 - y) * np.log(1 - p)), reduction)
    np.testing.assert_allclose(
        F.binary_cross_entropy_with_logits(x, y, reduction=reduction).numpy(), expected, rtol=1e-10
    )
    check_gradient(lambda: F.binary_cross_entropy_with_logits(x, y, reduction=reduction), [x])


def test_binary_cross_entropy_with_logits_is_stable_and_checks_shapes():
    x = tg.tensor([-1000.0, 1000.0])
    out = F.binary_cross_entropy_with_logits(x, [1.0, 0.0], reduction="none")
    np.testing.assert_allclose(out.numpy(), [1000.0, 1000.0])
    assert out.dtype == np.float32
    with pytest.raises(ValueError, match="must be the same as input size"):
        F.binary_cross_entropy_with_logits(x, [1.0])


def test_linear_and_activations_agree_with_tensor_methods():
    x = tg.tensor(RNG.standard_normal((3, 4)))
    w, b = tg.tensor(RNG.standard_normal((2, 4))), tg.tensor(RNG.standard_normal(2))
    np.testing.assert_allclose(
        F.linear(x, w, b).numpy(), x.numpy() @ w.numpy().T + b.numpy(), rtol=1e-12
    )
    np.testing.assert_allclose(F.linear(x, w).numpy(), x.numpy() @ w.numpy().T, rtol=1e-12)
    np.testing.assert_array_equal(F.relu(x).numpy(), np.maximum(x.numpy(), 0))
    np.testing.assert_allclose(F.softmax(x, dim=0).numpy().sum(axis=0), 1.0)
    np.testing.assert_allclose(np.exp(F.log_softmax(x, dim=1).numpy()).sum(axis=1), 1.0)
    np.testing.assert_array_equal(F.leaky_relu(x, 0.1).numpy(), x.leaky_relu(0.1).numpy())
    np.testing.assert_array_equal(F.gelu(x, "tanh").numpy(), x.gelu("tanh").numpy())
    np.testing.assert_array_equal(F.tanh(x).numpy(), np.tanh(x.numpy()))
    np.testing.assert_array_equal(F.sigmoid(x).numpy(), x.sigmoid().numpy())


def test_cosine_similarity_promotes_its_operands_first():
    """float32 with bool is float32 (the fuzz found bool refused by the norm); two integer
    operands are PyTorch's RuntimeError, naming the common dtype."""
    a = tg.tensor([[3.0, 4.0, 0.0]], dtype=tg.float32)
    b = tg.tensor([[True, False, True]])
    out = F.cosine_similarity(a, b)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), [3.0 / (5.0 * np.sqrt(2.0))], rtol=1e-6)
    with pytest.raises(RuntimeError, match="common dtype is int64"):
        F.cosine_similarity(tg.tensor([[1, 2]]), tg.tensor([[3, 4]]))


@pytest.mark.parametrize("dtype", [tg.bool, tg.int64, tg.float64])
@pytest.mark.parametrize("shape", [(1, 0, 2, 2), (0, 2, 2, 2), (1, 2, 0, 2)])
def test_instance_norm_of_an_empty_input_returns_it_in_its_dtype(shape, dtype):
    """PyTorch's order: the one-position check, then an empty input comes back, then the
    dtype check (so an empty bool tensor is not refused)."""
    out = F.instance_norm(tg.zeros(shape, dtype=dtype))
    assert out.shape == shape and out.dtype == dtype


def test_instance_norm_refuses_one_position_before_the_dtype():
    with pytest.raises(ValueError, match="more than 1 spatial element"):
        F.instance_norm(tg.zeros((1, 2, 1, 1), dtype=tg.bool))
    with pytest.raises(NotImplementedError, match="batch_norm"):
        F.instance_norm(tg.zeros((1, 2, 2), dtype=tg.int64))
