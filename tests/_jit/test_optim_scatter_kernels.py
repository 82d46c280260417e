"""``adam_moments`` (Adam's and AdamW's flat moments) and ``add_rows`` (the embedding's and
indexing's VJP) against the NumPy code they replace: bit for bit, float32 and float64."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba")

import tensorgrad as tg
from tensorgrad.ops import index as index_ops
from tests._jit.test_kernels import DTYPES, both_ways


# ------------------------------------------------------------------------------- Adam
def _train(optimizer_type, dtype, steps=5, **options):
    """Every parameter after ``steps`` steps on fixed gradients, and the moments."""
    rng = np.random.default_rng(0)
    params = [
        tg.tensor(rng.standard_normal(shape).astype(dtype), requires_grad=True)
        for shape in [(7, 5), (5,), (), (3, 1, 4), (0, 2)]
    ]
    optimizer = optimizer_type(params, lr=0.01, **options)
    for step in range(steps):
        for k, p in enumerate(params):
            p.grad = tg.tensor((rng.standard_normal(p.shape) * (step + k + 1)).astype(dtype))
        optimizer.step()
    moments = [
        optimizer.state[p][name].copy() for p in params for name in ("exp_avg", "exp_avg_sq")
    ]
    return [p.detach().numpy().copy() for p in params] + moments


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "optimizer_type, options",
    [
        (tg.optim.Adam, {}),
        (tg.optim.Adam, {"weight_decay": 0.1, "maximize": True}),
        (tg.optim.AdamW, {}),
        (tg.optim.AdamW, {"weight_decay": 0.3, "betas": (0.8, 0.99), "eps": 1e-3}),
    ],
    ids=["adam", "adam_decay_maximize", "adamw", "adamw_options"],
)
def test_adam_moments_equal_the_numpy_lines(monkeypatch, ran, optimizer_type, options, dtype):
    plain, fused = both_ways(monkeypatch, lambda: _train(optimizer_type, dtype, **options))
    assert "adam_moments" in ran
    for a, b in zip(fused, plain, strict=True):
        assert a.dtype == b.dtype == dtype
        np.testing.assert_array_equal(a, b)


def test_amsgrad_and_float16_take_the_numpy_lines(monkeypatch, ran):
    _train(tg.optim.Adam, np.float32, amsgrad=True)
    _train(tg.optim.Adam, np.float16)
    assert "adam_moments" not in ran


# ------------------------------------------------------------------------------- add_rows
def _scatter_cases(dtype):
    rng = np.random.default_rng(1)
    return {
        "duplicates": ((6, 3), np.array([0, 5, 0, 0, 2, 5]), (6, 3)),
        "negative": ((4, 2), np.array([-1, 3, -4, 0]), (4, 2)),
        "matrix_index": ((5, 2, 2), np.array([[1, 1], [4, 0]]), (2, 2, 2, 2)),
        "broadcast_values": ((5, 3), np.array([2, 2, 1]), (3,)),
        "empty_index": ((5, 3), np.zeros(0, np.int64), (0, 3)),
        "int32_index": ((9, 4), rng.integers(0, 9, 40).astype(np.int32), (40, 4)),
        "many": ((50, 8), rng.integers(-50, 50, 500), (500, 8)),
    }, rng


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "case",
    [
        "duplicates",
        "negative",
        "matrix_index",
        "broadcast_values",
        "empty_index",
        "int32_index",
        "many",
    ],
)
def test_add_rows_equals_numpy_add_at(monkeypatch, ran, dtype, case):
    cases, rng = _scatter_cases(dtype)
    shape, index, value_shape = cases[case]
    values = (rng.standard_normal(value_shape) * 10).astype(dtype)

    def compute():
        result = np.zeros(shape, dtype)
        index_ops.IndexAdd(shape, index).add(result, values)
        return result

    plain, fused = both_ways(monkeypatch, compute)
    expected = np.zeros(shape, dtype)
    np.add.at(expected, index, values)
    np.testing.assert_array_equal(fused, expected)  # the kernel: add.at's order, bit for bit
    # the sorted sums of the NumPy lines: within rounding of what was summed
    bound = np.finfo(dtype).eps * float(np.abs(values).sum())
    np.testing.assert_allclose(plain, expected, rtol=0, atol=bound)
    assert ("add_rows" in ran) == (index.size > 0)


def test_add_rows_out_of_range_raises_as_numpy(monkeypatch, ran):
    result = np.zeros((3, 2))
    with pytest.raises(IndexError):
        index_ops._add_rows(result, np.array([0, 3]), np.ones((2, 2)))
    assert "add_rows" not in ran and not result.any()


@pytest.mark.parametrize("dtype", DTYPES)
def test_embedding_gradient_both_ways(monkeypatch, dtype):
    """The embedding's VJP through the kernel equals np.add.at's sums of the same rows."""
    rng = np.random.default_rng(2)
    weight = rng.standard_normal((20, 6)).astype(dtype)
    tokens = rng.integers(0, 20, (7, 9))
    grad_out = rng.standard_normal((7, 9, 6)).astype(dtype)

    def compute():
        w = tg.tensor(weight, requires_grad=True)
        tg.nn.functional.embedding(tg.tensor(tokens), w).backward(tg.tensor(grad_out))
        return w.grad.numpy()

    _, fused = both_ways(monkeypatch, compute)
    expected = np.zeros_like(weight)
    np.add.at(expected, tokens, grad_out)
    np.testing.assert_array_equal(fused, expected)
