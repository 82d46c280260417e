"""Row and column sums through BLAS (``ops.sums``, ``BLAS_SUMS``) and through NumPy, and the
ops that use them (layer norm, linear), with the trick on and off."""

from __future__ import annotations

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.nn import functional as F
from tensorgrad.ops import sums


@pytest.mark.parametrize("blas", [True, False], ids=["blas", "numpy"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
@pytest.mark.parametrize("shape", [(7, 5), (1, 3), (4, 1), (0, 3), (3, 0)])
def test_row_and_column_sums(monkeypatch, blas, dtype, shape):
    monkeypatch.setattr(sums, "BLAS_SUMS", blas)
    a = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    rows, columns = sums.row_sums(a), sums.column_sums(a)
    assert rows.shape == shape[:1] and columns.shape == shape[1:]
    assert rows.dtype == columns.dtype == a.dtype
    tolerance = 1e-6 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(rows, a.astype(np.float64).sum(1), rtol=tolerance, atol=tolerance)
    np.testing.assert_allclose(columns, a.astype(np.float64).sum(0), rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("blas", [True, False], ids=["blas", "numpy"])
def test_layer_norm_and_linear_gradients_with_and_without_blas_sums(monkeypatch, blas):
    monkeypatch.setattr(sums, "BLAS_SUMS", blas)
    rng = np.random.default_rng(2)
    x64, g64 = rng.standard_normal((4, 6, 8)), rng.standard_normal((4, 6, 3))
    w64, b64 = rng.standard_normal(8), rng.standard_normal(8)
    lw64, lb64 = rng.standard_normal((3, 8)), rng.standard_normal(3)
    results = {}
    for dtype in (np.float32, np.float64):
        tensors = [
            tg.tensor(a.astype(dtype), requires_grad=True) for a in (x64, w64, b64, lw64, lb64)
        ]
        x, w, b, lw, lb = tensors
        out = F.linear(F.layer_norm(x, (8,), w, b), lw, lb)
        out.backward(tg.tensor(g64.astype(dtype)))
        results[dtype] = [out.detach().numpy()] + [t.grad.numpy() for t in tensors]
    for ours, exact in zip(results[np.float32], results[np.float64], strict=True):
        np.testing.assert_allclose(ours, exact, rtol=1e-4, atol=1e-4)
