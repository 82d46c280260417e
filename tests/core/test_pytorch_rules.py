"""PyTorch's semantics where a differential fuzz against PyTorch found tensorgrad's to differ,
each against hand-computed values, so that they hold without PyTorch installed
(tests/core/test_torch_fuzz.py compares with PyTorch itself): indexing order, NaN in sorts,
gradients of piecewise-constant and remainder ops, dtypes, the calls PyTorch accepts and the
ones it refuses, and PyTorch's exception types.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tensorgrad as tg
import tensorgrad.nn.functional as F

NAN = float("nan")


# --------------------------------------------------------------------------- indexing order
def test_integers_select_before_index_arrays_as_in_pytorch():
    """NumPy counts an integer as one more index array, and arrays separated by a slice put
    their dimension first; PyTorch selects the integers first."""
    x = tg.arange(24.0).reshape(2, 3, 4)
    assert x[0, :, [0, 1]].shape == (3, 2)
    np.testing.assert_array_equal(x[0, :, [0, 1]].numpy(), [[0, 1], [4, 5], [8, 9]])
    square = tg.arange(27).reshape(3, 3, 3)[0, ::2, [2, 0]]
    assert square.tolist() == [[2, 0], [8, 6]]  # NumPy's order: [[2, 8], [0, 6]]
    y = tg.arange(120).reshape(2, 3, 4, 5)
    assert y[:, [0], :, 0].shape == (2, 1, 4)
    assert y[0, [0, 1], :, [1, 2]].shape == (2, 4)  # arrays still apart: their dim first
    assert y[..., 0, [1, 2]].shape == (2, 3, 2)  # side by side: the two orders agree


def test_gradient_of_a_mixed_index_reaches_the_elements_it_read():
    x = tg.zeros(3, 3, 3, dtype=tg.float64, requires_grad=True)
    weights = tg.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=tg.float64)
    (x[0, ::2, [2, 0]] * weights).sum().backward()
    expected = np.zeros((3, 3, 3))
    expected[0, 0, 2], expected[0, 0, 0], expected[0, 2, 2], expected[0, 2, 0] = 1, 2, 3, 4
    np.testing.assert_array_equal(x.grad.numpy(), expected)


def test_setitem_through_a_mixed_index_takes_a_value_in_pytorch_order():
    x = tg.zeros(2, 3, 4)
    x[0, :, [0, 1]] = tg.arange(6.0).reshape(3, 2)  # raised before: NumPy wanted (2, 3)
    np.testing.assert_array_equal(x[0, :, :2].numpy(), [[0, 1], [2, 3], [4, 5]])
    base = tg.zeros(2, 3, 4, requires_grad=True)
    value = tg.ones(3, 2, requires_grad=True)
    y = base.clone()
    y[0, :, [0, 1]] = value * 2
    y.sum().backward()
    np.testing.assert_array_equal(value.grad.numpy(), np.full((3, 2), 2.0))
    assert base.grad[0, :, :2].sum().item() == 0 and base.grad.sum().item() == 24 - 6


def test_empty_list_index_and_a_value_with_leading_ones():
    assert tg.ones(3)[[]].shape == (0,)
    y = tg.zeros(3, dtype=tg.int64)
    y[0] = tg.tensor([7])  # PyTorch drops the value's leading 1s
    assert y.tolist() == [7, 0, 0]


# --------------------------------------------------------------------------- sorting
def test_nan_sorts_as_the_largest_value():
    x = tg.tensor([3.0, NAN, 1.0, float("inf")])
    values, indices = x.sort(descending=True)
    assert np.isnan(values[0].item()) and values[1:].tolist() == [float("inf"), 3.0, 1.0]
    assert indices.tolist() == [1, 3, 0, 2]
    assert x.argsort(descending=True).tolist() == [1, 3, 0, 2]
    assert x.topk(2).indices.tolist() == [1, 3]
    assert np.isnan(x.sort().values[-1].item())  # ascending: last, as before
    big = tg.tensor([-(2**63), 2**63 - 1, 2**62 + 1, 2**62])  # no float64 rounding of keys
    assert big.argsort(descending=True).tolist() == [1, 2, 3, 0]


# --------------------------------------------------------------------------- gradients
def test_remainder_is_differentiable_as_in_pytorch():
    x = tg.tensor([5.5, -3.2], dtype=tg.float64, requires_grad=True)
    y = tg.tensor([2.0, 1.5], dtype=tg.float64, requires_grad=True)
    out = x % y
    assert out.requires_grad
    out.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0] and y.grad.tolist() == [-2.0, 3.0]  # -floor(x / y)
    z = tg.tensor([1.5], requires_grad=True)
    (z % 0.7).sum().backward()
    assert z.grad.tolist() == [1.0]
    w = tg.tensor([0.6, 1.5], dtype=tg.float64, requires_grad=True)
    (2.0 % w).sum().backward()  # a number on the left
    assert w.grad.tolist() == [-3.0, -1.0]


def test_fmod_gradient_truncates_the_quotient():
    x = tg.tensor([5.5, -3.2], dtype=tg.float64, requires_grad=True)
    y = tg.tensor([2.0, 1.5], dtype=tg.float64, requires_grad=True)
    out = tg.core.engine.apply(tg.ops.Fmod(), x, y)
    np.testing.assert_allclose(out.detach().numpy(), np.fmod([5.5, -3.2], [2.0, 1.5]))
    out.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0] and y.grad.tolist() == [-2.0, 2.0]


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x // 2,
        lambda x: x.div(2, rounding_mode="trunc"),
        lambda x: x.floor(),
        lambda x: x.ceil(),
        lambda x: x.round(),
        lambda x: x.trunc(),
        lambda x: x.sign(),
    ],
    ids=["floordiv", "div_trunc", "floor", "ceil", "round", "trunc", "sign"],
)
def test_piecewise_constant_functions_give_a_zero_gradient(fn):
    x = tg.tensor([1.3, -2.7], requires_grad=True)
    out = fn(x)
    assert out.requires_grad  # PyTorch's: recorded, with a zero gradient
    out.sum().backward()
    assert x.grad.tolist() == [0.0, 0.0]


def test_zero_to_a_negative_power_has_exponent_gradient_minus_inf_without_a_warning():
    x = tg.tensor([0.0, 0.0, 2.0], dtype=tg.float64)
    y = tg.tensor([-1.0, 2.0, 3.0], dtype=tg.float64, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (x**y).sum().backward()
    assert y.grad.tolist()[:2] == [-np.inf, 0.0]
    np.testing.assert_allclose(y.grad[2].item(), 8 * np.log(2))


def test_sign_of_nan_is_zero_and_sign_of_bool_is_bool():
    assert tg.tensor([NAN, -2.0, 0.0]).sign().tolist() == [0.0, -1.0, 0.0]
    s = tg.tensor([True, False]).sign()
    assert s.dtype == np.bool_ and s.tolist() == [True, False]
    x = tg.tensor([NAN, -1.0], requires_grad=True)
    x.abs().sum().backward()
    assert x.grad.tolist() == [0.0, -1.0]  # |x|'s slope is sign(x): 0 at NaN


# --------------------------------------------------------------------------- dtypes
def test_remainder_promotes_0d_tensors_as_other_operators_do():
    assert (tg.tensor([1.5]) % tg.tensor(2, dtype=tg.int32)).dtype == np.float32
    assert (tg.tensor([1], dtype=tg.int32) % tg.tensor(2)).dtype == np.int32
    assert (tg.tensor([7], dtype=tg.int32) // tg.tensor(2)).dtype == np.int32
    assert (2 % tg.tensor([3, 4])).tolist() == [2, 2]


def test_integer_dtype_of_sum_and_cumsum():
    x = tg.tensor([1.7, 2.2])
    assert x.sum(dtype=tg.int32).dtype == np.int32 and x.sum(dtype=tg.int32).item() == 3
    assert x.cumsum(0, dtype=tg.int32).dtype == np.int32
    assert tg.tensor([1, 2], dtype=tg.int32).sum().dtype == np.int64  # PyTorch's default
    with pytest.raises(RuntimeError, match="autograd"):
        tg.tensor([1.0], requires_grad=True).sum(dtype=tg.int64)


def test_integer_average_pooling_truncates_as_pytorch():
    out = F.avg_pool2d(tg.tensor([[[1, 2], [3, 5]]]), 2)
    assert out.dtype == np.int64 and out.tolist() == [[[2]]]
    assert F.avg_pool2d(tg.tensor([[[-1, -2], [-4, -4]]]), 2).tolist() == [[[-2]]]
    with pytest.raises(NotImplementedError):
        F.avg_pool2d(tg.tensor([[[1, 2], [3, 5]]], dtype=tg.int32), 2)


def test_integer_linspace_and_arange_as_pytorch():
    assert tg.linspace(-2.5, -3.0, 5, dtype=tg.int64).tolist() == [-2, -2, -2, -2, -3]
    assert tg.linspace(2.7, -1.2, 6, dtype=tg.int32).tolist() == [2, 1, 0, 0, 0, -1]
    assert tg.arange(-1.5, 2.5, 2, dtype=tg.int32).tolist() == [-1, 1]
    assert tg.arange(0, 2.5, 1, dtype=tg.int64).tolist() == [0, 1]
    with pytest.raises(NotImplementedError):
        tg.arange(3, dtype=tg.bool)


def test_bool_arithmetic_dtypes():
    square = tg.tensor([True]).square()
    assert square.dtype == np.int64 and square.tolist() == [1]
    power = tg.tensor([True, False]) ** False
    assert power.dtype == np.bool_ and power.tolist() == [True, True]
    total = tg.add(tg.tensor(False), tg.tensor(True), alpha=2)
    assert total.dtype == np.bool_ and total.item() is True
    assert tg.add(tg.tensor([1], dtype=tg.int32), tg.tensor([True]), alpha=2).dtype == np.int32
    with pytest.raises(NotImplementedError):
        tg.tensor([True]) ** tg.tensor([True])


def test_integer_tensor_to_a_negative_integer_tensor_power():
    x = tg.tensor([2, 1, -1, -1, 3])
    assert (x ** tg.tensor([-1, -1, -2, -3, 2])).tolist() == [0, 1, 1, -1, 9]
    with pytest.raises(RuntimeError, match="negative integer powers"):
        tg.tensor([2]) ** -1


# --------------------------------------------------------------------------- linear
def test_linear_with_zero_size_features_and_a_vector_weight():
    x = tg.zeros(2, 1, 2, requires_grad=True)
    w = tg.zeros(0, 2, requires_grad=True)
    F.linear(x, w).sum().backward()
    assert x.grad.shape == (2, 1, 2) and w.grad.shape == (0, 2)
    v = tg.tensor([1.0, 2.0])
    assert F.linear(tg.ones(3, 2), v).tolist() == [3.0, 3.0, 3.0]
    with pytest.raises(RuntimeError, match="matrix"):
        F.linear(tg.ones(3, 2), v, tg.tensor(1.0))


# --------------------------------------------------------------------------- accepted calls
ACCEPTED: list[tuple[str, Callable[[], Any], Any]] = [
    ("rmod", lambda: (2 % tg.tensor([3, 4])).tolist(), [2, 2]),
    ("rlshift", lambda: (2 << tg.tensor([3, 4])).tolist(), [16, 32]),
    ("rand", lambda: (2 & tg.tensor([3, 4])).tolist(), [2, 0]),
    ("ror", lambda: (2 | tg.tensor([3, 4])).tolist(), [3, 6]),
    ("rxor", lambda: (2 ^ tg.tensor([3, 4])).tolist(), [1, 6]),
    ("rshift", lambda: (tg.tensor([16]) >> 2).tolist(), [4]),
    ("as_tensor_dtype", lambda: str(tg.as_tensor([1, 2], dtype=tg.float64).dtype), "float64"),
    ("zeros_size", lambda: tg.zeros(size=(2,)).shape, (2,)),
    ("ones_size", lambda: tg.ones(size=[1, 2]).shape, (1, 2)),
    ("empty_size", lambda: tg.empty(size=(3,)).shape, (3,)),
    ("rand_size", lambda: tg.rand(size=(2,)).shape, (2,)),
    ("randn_size", lambda: tg.randn(size=(2, 2)).shape, (2, 2)),
    ("var_positional", lambda: round(tg.var(tg.tensor([1.0, 2, 4]), True).item(), 5), 2.33333),
    ("std_positional", lambda: round(tg.tensor([1.0, 2, 4]).std(False).item(), 5), 1.24722),
    (
        "repeat_interleave_tensor",
        lambda: tg.tensor([1, 2]).repeat_interleave(tg.tensor([1, 2])).tolist(),
        [1, 2, 2],
    ),
    (
        "repeat_interleave_counts",
        lambda: tg.repeat_interleave(tg.tensor([1, 2])).tolist(),
        [0, 1, 1],
    ),
    (
        "where_one_argument",
        lambda: [t.tolist() for t in tg.where(tg.tensor([True, False, True]))],
        [[0, 2]],
    ),
    ("cat_skips_1d_empty", lambda: tg.cat([tg.zeros(0), tg.ones(2, 2)]).shape, (2, 2)),
    ("randint_float", lambda: str(tg.randint(0, 3, (2,), dtype=tg.float64).dtype), "float64"),
    ("any_dims_of_0d", lambda: tg.tensor(True).any(dim=(0,)).item(), True),
    ("all_dim_of_0d", lambda: tg.tensor(False).all(dim=-1).item(), False),
    ("broadcast_to_minus_one", lambda: tg.ones(1, 3).broadcast_to(2, -1).shape, (2, 3)),
    ("flip_0d", lambda: tg.tensor(2.0).flip(0).item(), 2.0),
    ("index_select_0d", lambda: tg.tensor(2.0).index_select(0, tg.tensor([0])).item(), 2.0),
    ("cat_only_1d_empty", lambda: tg.cat([tg.zeros(0), tg.zeros(0)], 1).shape, (0,)),
    (
        "adaptive_pool_no_channels",
        lambda: F.adaptive_avg_pool2d(tg.ones(1, 0, 2, 2), 1).shape,
        (1, 0, 1, 1),
    ),
]


@pytest.mark.parametrize(("call", "expected"), [pytest.param(c, e, id=i) for i, c, e in ACCEPTED])
def test_valid_pytorch_calls_are_accepted(call, expected):
    assert call() == expected


# --------------------------------------------------------------------------- refused calls
REFUSED: list[tuple[str, Callable[[], Any], type[Exception], str]] = [
    (
        "index_select_negative",
        lambda: tg.ones(3).index_select(0, tg.tensor([-1])),
        IndexError,
        "out of range",
    ),
    (
        "mm_mixed_dtypes",
        lambda: tg.ones(2, 2).mm(tg.ones(2, 2, dtype=tg.float64)),
        RuntimeError,
        "same dtype",
    ),
    (
        "matmul_mixed_dtypes",
        lambda: tg.ones(2, 2) @ tg.ones(2, dtype=tg.int64),
        RuntimeError,
        "same dtype",
    ),
    (
        "dot_mixed_dtypes",
        lambda: tg.ones(2).dot(tg.ones(2, dtype=tg.float64)),
        RuntimeError,
        "same dtype",
    ),
    (
        "isclose_mixed_dtypes",
        lambda: tg.isclose(tg.ones(2), tg.ones(2, dtype=tg.float64)),
        RuntimeError,
        "same dtype",
    ),
    (
        "allclose_mixed_dtypes",
        lambda: tg.ones(2).allclose(tg.ones(2, dtype=tg.int64)),
        RuntimeError,
        "same dtype",
    ),
    ("maximum_number", lambda: tg.maximum(tg.ones(2), 2), TypeError, "must be Tensor"),
    ("minimum_number", lambda: tg.ones(2).minimum(0.5), TypeError, "must be Tensor"),
    ("logical_and_number", lambda: tg.ones(2).logical_and(2), TypeError, "must be Tensor"),
    ("equal_number", lambda: tg.ones(2).equal(1), TypeError, "must be Tensor"),
    ("copy_larger_source", lambda: tg.zeros(2).copy_(tg.ones(3, 2)), RuntimeError, r"\[3, 2\]"),
    ("abs_bool", lambda: tg.tensor([True]).abs(), NotImplementedError, "bool"),
    ("floor_bool", lambda: tg.tensor([True]).floor(), NotImplementedError, "bool"),
    ("argmax_bool", lambda: tg.tensor([True]).argmax(), RuntimeError, "bool"),
    ("gelu_int", lambda: F.gelu(tg.tensor([1])), NotImplementedError, "int64"),
    ("softmax_int", lambda: tg.tensor([1]).softmax(0), NotImplementedError, "int64"),
    ("elu_int", lambda: F.elu(tg.tensor([1])), NotImplementedError, "int64"),
    (
        "layer_norm_int",
        lambda: F.layer_norm(tg.tensor([[1, 2]]), (2,)),
        NotImplementedError,
        "int64",
    ),
    (
        "mse_loss_int",
        lambda: F.mse_loss(tg.tensor([1]), tg.tensor([2])),
        NotImplementedError,
        "int64",
    ),
    ("dropout_int", lambda: F.dropout(tg.tensor([1, 2])), RuntimeError, "floating"),
    ("bitwise_float", lambda: tg.ones(2) & tg.ones(2), NotImplementedError, "float32"),
    ("floordiv_bool", lambda: tg.tensor([True]) // tg.tensor([True]), NotImplementedError, "bool"),
    ("zeros_no_size", lambda: tg.zeros(), TypeError, "size"),
    ("reshape_no_shape", lambda: tg.ones(1).reshape(), TypeError, "shape"),
    ("expand_no_size", lambda: tg.ones(()).expand(), TypeError, "size"),
    ("permute_no_dims", lambda: tg.ones(()).permute(), TypeError, "dims"),
    ("zeros_size_twice", lambda: tg.zeros(2, size=(2,)), TypeError, "multiple values"),
    ("logsumexp_no_dim", lambda: tg.ones(2).logsumexp(), TypeError, "dim"),
    (
        "add_float_alpha_ints",
        lambda: tg.tensor([1]).add(tg.tensor([2]), alpha=1.5),
        RuntimeError,
        "alpha",
    ),
    ("repeat_negative", lambda: tg.ones(2).repeat(-1), RuntimeError, "negative"),
    ("chunk_0d", lambda: tg.tensor(1.0).chunk(2), RuntimeError, "1-dimensional"),
    ("roll_0d_dim", lambda: tg.tensor(1.0).roll(1, 0), IndexError, "no dimensions"),
]


@pytest.mark.parametrize(
    ("call", "error", "match"), [pytest.param(c, e, m, id=i) for i, c, e, m in REFUSED]
)
def test_calls_pytorch_refuses_are_refused(call, error, match):
    with pytest.raises(error, match=match):
        call()


# --------------------------------------------------------------------------- error types
RUNTIME_ERRORS: list[tuple[str, Callable[[], Any], str]] = [
    ("broadcast", lambda: tg.ones(2) + tg.ones(3), r"shapes \(2,\) \(3,\)"),
    ("matmul_shapes", lambda: tg.ones(2, 3) @ tg.ones(2, 3), r"\(2, 3\) and \(2, 3\)"),
    ("cat_shapes", lambda: tg.cat([tg.ones(2, 3), tg.ones(2, 2)]), r"\(2, 3\), \(2, 2\)"),
    ("split_sizes", lambda: tg.ones(4).split([1, 1]), r"\[1, 1\]"),
    ("layer_norm_shape", lambda: F.layer_norm(tg.ones(2, 3), (2,)), r"\(2, 3\)"),
    ("pad_too_long", lambda: F.pad(tg.ones(2), (1, 1, 1, 1)), r"\(2,\)"),
    ("max_of_empty", lambda: tg.ones(0).max(), "max"),
    ("repeated_dims", lambda: tg.ones(2, 2).sum((0, 0)), "repeated"),
    ("logical_broadcast", lambda: tg.ones(2).logical_or(tg.ones(3)), r"\(2,\) \(3,\)"),
]


@pytest.mark.parametrize(
    ("call", "match"), [pytest.param(c, m, id=i) for i, c, m in RUNTIME_ERRORS]
)
def test_shape_errors_are_pytorchs_runtime_error_and_still_value_errors(call, match):
    with pytest.raises(RuntimeError, match=match) as info:
        call()
    assert isinstance(info.value, ValueError)  # what tensorgrad's own callers catch
    assert isinstance(info.value, tg.ShapeError)


@pytest.mark.parametrize(
    "call",
    [
        lambda: tg.where(tg.ones(2), tg.ones(2), tg.ones(2)),
        lambda: tg.ones(2).masked_fill(tg.ones(2), 1.0),
        lambda: tg.ones(2) @ tg.ones(2, dtype=tg.float64),
    ],
    ids=["where", "masked_fill", "matmul"],
)
def test_dtype_errors_are_runtime_errors_and_type_errors(call):
    with pytest.raises(RuntimeError) as info:
        call()
    assert isinstance(info.value, TypeError) and isinstance(info.value, tg.DtypeError)


def test_converting_many_elements_to_a_number_is_a_value_error_as_in_pytorch():
    for convert in (float, int, lambda t: t.item()):
        with pytest.raises(ValueError, match="2 elements") as info:
            convert(tg.ones(2))
        assert isinstance(info.value, RuntimeError)


def test_gather_and_scatter_add_with_an_empty_index_address_nothing():
    """An index with no element is not checked against the input's other sizes (PyTorch's),
    found by the slow differential fuzz: index (0, 1) on an input (2, 0)."""
    index = tg.zeros(0, 1, dtype=tg.int64)
    assert tg.gather(tg.zeros(2, 0), 0, index).shape == (0, 1)
    assert tg.zeros(2, 0).scatter_add(0, index, tg.zeros(0, 1)).shape == (2, 0)


def test_a_bool_alpha_needs_a_bool_result_even_when_it_is_true():
    """``add(False, 0, alpha=True)`` is int64: PyTorch refuses the bool alpha (found by the
    slow differential fuzz); with a bool result it is fine."""
    with pytest.raises(RuntimeError, match="Boolean alpha only supported for Boolean results"):
        tg.add(tg.tensor(False), 0, alpha=True)
    assert tg.add(tg.tensor(False), tg.tensor(True), alpha=True).item() is True


# --------------------------------------------------------------------------- negative sizes
@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: tg.tensor(1.0).expand(0, -1), r"\(-1\) isn't allowed in a leading"),
        (lambda: tg.ones(3).expand(-1, 3), r"leading, non-existing dimension 0"),
        (lambda: tg.ones(3).expand(0, -2, 3), r"\(-2\) at dimension 1 is negative"),
        (lambda: tg.ones(0, 1).expand(-1, -3), r"\(-3\) at dimension 1 is negative"),
        (lambda: tg.ones(3).expand(-2), r"\(-2\) at dimension 0 is negative"),
        (lambda: tg.tensor(1.0).broadcast_to((0, -2)), r"\(-2\) at dimension 1 is negative"),
        (lambda: tg.ones(2).repeat(-1), r"negative dimension -2: \[-2\]"),
        (lambda: tg.ones(0, 2).repeat(1, -1), r"negative dimension -2: \[0, -2\]"),
    ],
    ids=[
        "0d_leading",
        "leading",
        "new_minus_2",
        "existing",
        "only",
        "broadcast_to",
        "repeat",
        "repeat_of_empty",
    ],
)
def test_a_negative_size_is_refused_by_every_shape_op(call, match):
    """PyTorch's expand lets a negative size through where another size is 0 (the element
    count, 0, passes its overflow check: a tensor of shape (0, -1), which no later op can
    use), found by the slow differential fuzz; tensorgrad refuses every negative size with
    PyTorch's RuntimeError, saying which size and where (docs/porting.md)."""
    with pytest.raises(RuntimeError, match=match):
        call()


def test_a_negative_repeat_of_an_empty_dimension_is_empty_as_in_pytorch():
    """PyTorch checks the sizes repeat makes, not the repeats: -1 times 0 is 0."""
    assert tg.ones(0, 2).repeat(-1, 1).shape == (0, 2)
    assert tg.ones(0).repeat(2, -1).shape == (2, 0)
    x = tg.zeros(2, 0, requires_grad=True)
    x.repeat(1, -1).sum().backward()
    assert x.grad.shape == (2, 0)


@pytest.mark.parametrize("dim", [None, "0", 1.5, True, [0]])
def test_cat_of_only_1d_empty_tensors_still_checks_the_type_of_dim(dim):
    """1-D empty tensors are left out and then no dim is checked against a shape, but the
    dim must still be an int (PyTorch's parser; found by the slow NumPy-reference fuzz)."""
    with pytest.raises(TypeError, match="dim"):
        tg.cat([tg.zeros(0)], dim)
    assert tg.cat([tg.zeros(0)], 100).shape == (0,)  # any int: no shape to check it against


def test_logsumexp_over_no_dims_reduces_them_all():
    """``dim=()`` reduces every dimension, as ``sum(dim=())`` does and as PyTorch's
    ``logsumexp(dim=(), keepdim=True)`` does; PyTorch 2.13 raises "output with shape []
    doesn't match the broadcast shape" without keepdim (docs/porting.md)."""
    x = tg.tensor([[0.0, 1.0], [2.0, 3.0]])
    expected = np.log(np.exp([0.0, 1.0, 2.0, 3.0]).sum())
    assert x.logsumexp(()).shape == ()
    np.testing.assert_allclose(x.logsumexp(()).item(), expected, rtol=1e-6)
    assert x.logsumexp((), keepdim=True).shape == (1, 1)
    assert tg.tensor([False]).logsumexp(()).dtype == tg.float32


# --------------------------------------------------------------------------- int64 accumulation
INTEGRAL = ["bool", "uint8", "int8", "int16", "int32", "int64"]
#: every reduction that sums or multiplies, as it is called without ``dtype=`` (``lib`` is
#: tensorgrad or torch)
ACCUMULATING: dict[str, Callable[[Any, Any], Any]] = {
    "sum": lambda lib, x: x.sum(),
    "sum_dim": lambda lib, x: x.sum(0, keepdim=True),
    "lib.sum": lambda lib, x: lib.sum(x, dim=(0, 1)),
    "prod": lambda lib, x: x.prod(),
    "prod_dim": lambda lib, x: x.prod(1),
    "cumsum": lambda lib, x: x.cumsum(0),
    "cumprod": lambda lib, x: x.cumprod(1),
    "nansum": lambda lib, x: x.nansum(),
    "trace": lambda lib, x: x.trace(),
    "einsum_sum": lambda lib, x: lib.einsum("ij->", x),
}


@pytest.mark.parametrize("dtype", INTEGRAL)
@pytest.mark.parametrize("name", sorted(ACCUMULATING))
def test_integer_sums_and_products_accumulate_in_int64(name, dtype):
    """PyTorch's rule; NumPy sums uint8 in uint64 (``tensor([1, 2], dtype=uint8).sum()``
    was uint64 here)."""
    if name == "trace" and dtype == "bool":
        pytest.skip("PyTorch's trace has no bool kernel: refused")
    x = tg.tensor([[1, 2], [3, 255]]).to(getattr(tg, dtype))
    result = ACCUMULATING[name](tg, x)
    assert result.dtype == tg.int64
    values = x.numpy().astype(np.int64)
    expected = {
        "sum": values.sum(), "sum_dim": values.sum(0, keepdims=True), "lib.sum": values.sum(),
        "prod": values.prod(), "prod_dim": values.prod(1), "cumsum": values.cumsum(0),
        "cumprod": values.cumprod(1), "nansum": values.sum(), "trace": np.trace(values),
        "einsum_sum": values.sum(),
    }[name]  # fmt: skip
    np.testing.assert_array_equal(result.numpy(), expected)


def test_a_dtype_argument_still_chooses_the_accumulator():
    x = tg.tensor([200, 100], dtype=tg.uint8)
    assert x.sum(dtype=tg.uint8).item() == 44  # 300 wraps in uint8, as PyTorch's
    assert x.cumsum(0, dtype=tg.int32).dtype == tg.int32
    assert x.prod(dtype=tg.float64).dtype == tg.float64


@pytest.mark.parametrize("dtype", INTEGRAL)
@pytest.mark.parametrize("name", sorted(ACCUMULATING))
def test_integer_sums_and_products_have_pytorchs_dtype(name, dtype):
    torch = pytest.importorskip("torch")
    results = []
    for lib in (tg, torch):
        x = lib.tensor([[1, 2], [3, 255]]).to(getattr(lib, dtype))
        try:
            out = ACCUMULATING[name](lib, x)
            results.append((str(out.dtype).removeprefix("torch."), out.tolist()))
        except Exception as exc:
            results.append(type(exc).__name__)
    assert results[0] == results[1]


def test_any_and_all_of_uint8_are_uint8_as_in_pytorch():
    x = tg.tensor([[1, 0], [2, 3]], dtype=tg.uint8)
    assert x.any().dtype == tg.uint8 and x.any().item() == 1
    assert x.all(1).tolist() == [0, 1] and x.all(1).dtype == tg.uint8
    assert tg.tensor([1, 0], dtype=tg.int8).any().dtype == tg.bool


@pytest.mark.parametrize(
    "call",
    [
        lambda b: b @ b,
        lambda b: b.mm(b),
        lambda b: b[0].dot(b[1]),
        lambda b: b.mv(b[0]),
        lambda b: tg.einsum("ij,jk->ik", b, b),
        lambda b: tg.tensordot(b, b),
        lambda b: F.linear(b, b),
    ],
    ids=["matmul", "mm", "dot", "mv", "einsum", "tensordot", "linear"],
)
def test_products_that_sum_refuse_bool_as_pytorch(call):
    """PyTorch has no bool kernel for its matrix products ("addmm_impl_cpu_" not
    implemented for 'Bool'); an einsum that sums nothing, outer and kron take bools."""
    b = tg.tensor([[True, False], [True, True]])
    with pytest.raises(NotImplementedError, match="Bool"):
        call(b)
    assert tg.einsum("i,j->ij", b[0], b[1]).tolist() == [[True, True], [False, False]]
    assert tg.einsum("bi,bi->bi", b, b).dtype == tg.bool
    assert b[0].outer(b[1]).dtype == tg.bool


# --------------------------------------------------------------------------- normalized_shape
NORMALIZED_SHAPES: list[tuple[str, Any, Any]] = [
    ("int", 3, TypeError),
    ("numpy_int", np.int64(3), TypeError),
    ("tensor", tg.tensor([3]), TypeError),
    ("float_element", (3.0,), TypeError),
    ("bool_element", (True,), TypeError),
    ("none", None, TypeError),
    ("empty", (), RuntimeError),
    ("tuple", (3,), None),
    ("list", [3], None),
    ("size", tg.ones(2, 3).shape[-1:], None),
    ("numpy_int_element", (np.int64(3),), None),
    ("tensor_element", [tg.tensor(3)], None),
]


@pytest.mark.parametrize("function", ["layer_norm", "rms_norm"])
@pytest.mark.parametrize(
    ("shape", "error"), [pytest.param(s, e, id=i) for i, s, e in NORMALIZED_SHAPES]
)
def test_normalized_shape_is_a_tuple_of_ints_as_pytorchs_parser_wants(function, shape, error):
    """``F.rms_norm(x, 3)`` is PyTorch's TypeError ("must be tuple of ints, not int"), and
    so is ``F.layer_norm(x, 3)``; the modules ``nn.LayerNorm(3)``/``nn.RMSNorm(3)`` take an
    int. tensorgrad took the int in the functions too."""
    x = tg.ones(2, 3)
    call = getattr(F, function)
    if error is None:
        assert call(x, shape).shape == (2, 3)
    else:
        with pytest.raises(error, match="normalized_shape"):
            call(x, shape)
    module = {"layer_norm": tg.nn.LayerNorm, "rms_norm": tg.nn.RMSNorm}[function]
    assert module(3)(x).shape == (2, 3)


@pytest.mark.parametrize("function", ["layer_norm", "rms_norm"])
@pytest.mark.parametrize("shape", [pytest.param(s, id=i) for i, s, _ in NORMALIZED_SHAPES])
def test_normalized_shape_is_read_as_pytorch_reads_it(function, shape):
    torch = pytest.importorskip("torch")
    outcomes = []
    for lib in (tg, torch):
        given = lib.tensor(shape.numpy()) if isinstance(shape, tg.Tensor) else shape
        if isinstance(shape, list) and shape and isinstance(shape[0], tg.Tensor):
            given = [lib.tensor(3)]
        try:
            outcomes.append(
                tuple(getattr(lib.nn.functional, function)(lib.ones(2, 3), given).shape)
            )
        except Exception as exc:
            outcomes.append(type(exc).__name__)
    assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize(
    "call",
    [
        lambda: tg.zeros(0, dtype=tg.bool) % 0,
        lambda: tg.remainder(tg.zeros(0, dtype=tg.int64), tg.tensor(0)),
        lambda: tg.fmod(tg.zeros(2, 0, dtype=tg.int32), tg.zeros(2, 1, dtype=tg.int32)),
        lambda: tg.zeros(0, dtype=tg.int64) // 0,
    ],
    ids=["bool_mod", "remainder", "fmod", "floordiv"],
)
def test_an_integer_remainder_by_zero_of_nothing_is_empty(call):
    """PyTorch raises for an integer divisor of 0 only where there is an element to compute
    (``%`` of an empty bool tensor by 0 raised here; found by the slow differential fuzz)."""
    assert call().numel() == 0
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        tg.ones(2, dtype=tg.int64) % 0
