"""Scaled dot-product attention: its probabilities computed keys-major (``KEYS_MAJOR``, Pᵀ in C
order) and query-major, and its products with a transposed operand copied to C order first
(``CONTIGUOUS_OPERANDS``) or not, give the same values and gradients; backward's row sums
from the output; an output changed in place refused."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.ops import attention


def _run(q, k, v, mask, dropout, causal):
    tensors = [tg.tensor(a, requires_grad=True) for a in (q, k, v)]
    mask_tensor = None if mask is None else tg.tensor(mask, requires_grad=True)
    op = attention.ScaledDotProductAttention(0.3, causal=causal)
    out = tg.core.engine.apply(op, *tensors, mask_tensor, dropout)
    g = np.random.default_rng(9).standard_normal(out.shape).astype(q.dtype)
    out.backward(tg.tensor(g))
    grads = [t.grad.numpy() for t in tensors]
    if mask_tensor is not None:
        grads.append(mask_tensor.grad.numpy())
    return out.detach().numpy(), grads


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "case", ["plain", "causal", "mask_2d", "mask_1d", "mask_grows", "dropout", "views"]
)
def test_keys_major_query_major_and_contiguous_operands_agree(monkeypatch, dtype, case):
    rng = np.random.default_rng(3)
    q, k, v = (
        rng.standard_normal(s).astype(dtype) for s in ((2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 2))
    )
    if case == "views":
        q = np.swapaxes(rng.standard_normal((2, 3, 4, 5)).astype(dtype), -1, -2)
    mask = {
        "mask_2d": rng.standard_normal((5, 6)),
        "mask_1d": rng.standard_normal(6),
        "mask_grows": rng.standard_normal((4, 2, 3, 5, 6)),
    }.get(case)
    mask = None if mask is None else mask.astype(dtype)
    dropout = (rng.random((2, 3, 5, 6)) > 0.3) / 0.7 if case == "dropout" else None
    results = []
    for keys_major, contiguous in ((True, True), (False, True), (True, False), (False, False)):
        monkeypatch.setattr(attention, "KEYS_MAJOR", keys_major)
        monkeypatch.setattr(attention, "CONTIGUOUS_OPERANDS", contiguous)
        results.append(_run(q, k, v, mask, dropout, case == "causal"))
    tolerance = 1e-5 if dtype == np.float32 else 1e-12
    first = results[0]
    for other in results[1:]:
        np.testing.assert_allclose(other[0], first[0], rtol=tolerance, atol=tolerance)
        for a, b in zip(other[1], first[1], strict=True):
            np.testing.assert_allclose(a, b, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("dropout", [False, True])
def test_backward_row_sums_from_the_output_match_the_softmax_vjp(dropout):
    """Backward takes each query's Σ_s P dP as dO · O: the gradients equal those of the
    softmax VJP written out (float64, with a mask and dropout)."""
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal(s) for s in ((2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 3)))
    mask = rng.standard_normal((4, 6))
    keep = (rng.random((2, 3, 4, 6)) > 0.4) / 0.6 if dropout else None
    _, grads = _run(q, k, v, mask, keep, causal=False)
    scores = q @ np.swapaxes(k, -1, -2) * 0.3 + mask
    p = np.exp(scores - scores.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    d = np.ones_like(p) if keep is None else keep
    g = np.random.default_rng(9).standard_normal((2, 3, 4, 3))
    dp = (g @ np.swapaxes(v, -1, -2)) * d
    ds = p * (dp - (dp * p).sum(-1, keepdims=True))
    expected = [ds @ k * 0.3, np.swapaxes(ds, -1, -2) @ q * 0.3, np.swapaxes(p * d, -1, -2) @ g]
    for got, want in zip(grads, [*expected, ds.sum((0, 1))], strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_an_output_changed_in_place_is_refused_as_pytorch_does():
    q, k, v = (tg.tensor(np.ones((1, 2, 3)), requires_grad=True) for _ in range(3))
    out = tg.nn.functional.scaled_dot_product_attention(q, k, v)
    out.add_(1)  # backward reads the output (dO · O): PyTorch's CPU kernel refuses too
    with pytest.raises(RuntimeError, match="modified in place"):
        out.sum().backward()
    v_only = tg.tensor(np.ones((1, 2, 3)), requires_grad=True)
    out = tg.nn.functional.scaled_dot_product_attention(q.detach(), k.detach(), v_only)
    out.add_(1)  # only v's gradient: P alone, the output is not read
    out.sum().backward()
    np.testing.assert_allclose(v_only.grad.numpy(), np.ones((1, 2, 3)))


@pytest.mark.parametrize("causal", [False, True])
def test_no_keys_give_zeros_silently_as_pytorch(causal):
    """With no keys (S = 0) each query's sum of numerators is 0: the output and q's
    gradient are zeros, PyTorch's, without a division by those sums or a warning."""
    q = tg.tensor(np.ones((2, 3, 4), np.float32), requires_grad=True)
    k = tg.tensor(np.ones((2, 0, 4), np.float32), requires_grad=True)
    v = tg.tensor(np.ones((2, 0, 5), np.float32), requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = tg.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        out.sum().backward()
    np.testing.assert_array_equal(out.detach().numpy(), np.zeros((2, 3, 5), np.float32))
    np.testing.assert_array_equal(q.grad.numpy(), np.zeros((2, 3, 4), np.float32))
    assert k.grad.shape == (2, 0, 4) and v.grad.shape == (2, 0, 5)


@pytest.mark.parametrize("causal", [False, True])
def test_no_features_give_the_mean_of_the_values(causal):
    """Queries and keys of zero features: every score is 0, each query the mean of the values
    it sees (PyTorch's result; the default scale 1/sqrt(0) divided by zero)."""
    rng = np.random.default_rng(0)
    v = rng.standard_normal((2, 4, 5))
    q = tg.zeros(2, 4, 0, dtype=tg.float64, requires_grad=True)
    out = tg.nn.functional.scaled_dot_product_attention(
        q, tg.zeros(2, 4, 0, dtype=tg.float64), tg.tensor(v), is_causal=causal
    )
    seen = np.arange(1, 5)[:, None] if causal else 4
    expected = (np.cumsum(v, axis=1) / seen) if causal else v.mean(axis=1, keepdims=True)
    np.testing.assert_allclose(out.numpy(), np.broadcast_to(expected, out.shape), rtol=1e-12)
    out.sum().backward()
    assert q.grad.shape == (2, 4, 0)
