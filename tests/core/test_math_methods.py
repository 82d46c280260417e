"""The Tensor's math methods (``tensorgrad/core/math_methods.py``): result dtypes by PyTorch's
rules, checked without PyTorch (``test_torch_parity.py`` compares with PyTorch itself)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorgrad as tg

#: functions whose result is floating: on integer and bool tensors PyTorch computes in the
#: default float dtype (float32), not NumPy's float64 (or float16 for int8/uint8/bool)
FLOAT_FUNCTIONS = [
    "exp", "log", "log1p", "expm1", "log2", "log10", "sqrt", "rsqrt", "sin", "cos", "tan",
    "tanh", "sigmoid", "reciprocal",
]  # fmt: skip


@pytest.mark.parametrize("dtype", [tg.int64, tg.int32, tg.uint8, tg.int8, tg.bool_])
@pytest.mark.parametrize("name", FLOAT_FUNCTIONS)
def test_float_functions_of_integers_are_the_default_float(name, dtype):
    x = tg.tensor([1, 0, 1]).to(dtype)
    with np.errstate(divide="ignore"):  # log(0), 1/0
        result = getattr(x, name)()
        expected = getattr(tg.tensor([1.0, 0.0, 1.0]), name)()
        assert getattr(tg, name)(x).dtype == tg.float32  # the function spelling too
    assert result.dtype == tg.float32
    np.testing.assert_array_equal(result.numpy(), expected.numpy())


@pytest.mark.parametrize("name", FLOAT_FUNCTIONS)
def test_float_functions_keep_a_floating_dtype(name):
    for dtype in (tg.float32, tg.float64):
        assert getattr(tg.tensor([0.5, 2.0], dtype=dtype), name)().dtype == dtype


@pytest.mark.parametrize(
    ("low", "high", "dtype"),
    [(2, 7, tg.int64), (2.5, 7.5, tg.float32), (2, 7.5, tg.float32), (None, 7.5, tg.float32)],
)
def test_clamp_of_integers_promotes_as_pytorch(low, high, dtype):
    """An integer tensor clamped with a float bound is a float tensor of the default dtype."""
    result = tg.tensor([1, 5, 9]).clamp(low, high)
    assert result.dtype == dtype
    expected = np.clip([1, 5, 9], low if low is not None else -np.inf, high)
    np.testing.assert_array_equal(result.numpy(), expected)


def test_clamp_with_tensor_bounds_promotes_as_pytorch():
    x = tg.tensor([1, 5, 9])
    assert x.clamp(tg.tensor([2, 2, 2]), tg.tensor([7, 7, 7])).dtype == tg.int64
    assert x.clamp(tg.tensor([2.5] * 3), tg.tensor([7.5] * 3)).dtype == tg.float32
    f32 = tg.tensor([0.5, 3.0])
    assert f32.clamp(tg.tensor([1.0, 1.0], dtype=tg.float64)).dtype == tg.float64


@pytest.mark.parametrize("other", [3, 2.5, np.float64, "float64", np.ones(2)])
def test_type_as_needs_a_tensor(other):
    with pytest.raises(TypeError, match=r"^type_as: other must be a Tensor, got "):
        tg.tensor([1, 2]).type_as(other)
    assert tg.tensor([1, 2]).type_as(tg.tensor([0.5])).dtype == tg.float32


@pytest.mark.parametrize("dtype", [tg.int64, tg.int32, tg.int16, tg.uint8, tg.int8, tg.bool_])
def test_prod_of_integers_and_bools_is_int64(dtype):
    """PyTorch multiplies integers in int64 (NumPy would keep uint8's product in uint64)."""
    x = tg.tensor([[1, 2, 3], [3, 1, 0]]).to(dtype)
    for result in (x.prod(), x.prod(1), tg.prod(x, 0, keepdim=True)):
        assert result.dtype == tg.int64
    expected = [6, 0] if dtype != tg.bool_ else [1, 0]
    assert x.prod(1).tolist() == expected


def test_prod_keeps_a_floating_dtype_and_casts_to_dtype_first():
    assert tg.tensor([1.5, 2.0], dtype=tg.float16).prod().dtype == tg.float16
    assert tg.tensor([1.5, 2.0]).prod(dtype=tg.int64).item() == 2  # 1 · 2: cast, then multiply
    ints = tg.tensor([[300, 300]], dtype=tg.int32)
    assert ints.prod(1, dtype=tg.int16).dtype == tg.int16
    assert tg.tensor([[1.0, 0.0]]).prod(0, dtype=tg.bool_).tolist() == [True, False]


def test_prod_takes_numpy_spellings_and_one_dim():
    x = tg.tensor(np.arange(1.0, 7.0).reshape(2, 3))
    assert x.prod(axis=1, keepdims=True).tolist() == [[6.0], [120.0]]
    assert x.prod(dim=None, keepdim=True).shape == (1, 1)  # all elements, dims kept
    with pytest.raises(TypeError, match=r"prod: dim must be an int, got \(0, 1\)"):
        x.prod((0, 1))
    with pytest.raises(TypeError, match="prod: dim must be an int, got True"):
        x.prod(True)
