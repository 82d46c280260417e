"""Scaled dot-product attention with its probabilities computed keys-major (``KEYS_MAJOR``,
Pᵀ in C order) and query-major: the same values and gradients."""

from __future__ import annotations

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
def test_keys_major_and_query_major_probabilities_agree(monkeypatch, dtype, case):
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
    results = {}
    for keys_major in (True, False):
        monkeypatch.setattr(attention, "KEYS_MAJOR", keys_major)
        results[keys_major] = _run(q, k, v, mask, dropout, case == "causal")
    tolerance = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(results[True][0], results[False][0], rtol=tolerance, atol=tolerance)
    for a, b in zip(results[True][1], results[False][1], strict=True):
        np.testing.assert_allclose(a, b, rtol=tolerance, atol=tolerance)
