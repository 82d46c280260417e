"""``tg.bincount`` and ``Tensor.bincount`` against NumPy's ``np.bincount`` and PyTorch's
``torch.bincount``: counts and weighted sums, result dtypes, ``minlength``, empty inputs,
errors by type and message, and autograd (PyTorch defines no derivative: backward refuses).
The op itself (``ops.Bincount``) is in the registry too (tests/ops/registry/scatter.py)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorgrad as tg

_RNG = np.random.default_rng(7)
DATA = {
    "small": np.array([0, 1, 1, 3]),
    "random": _RNG.integers(0, 20, 200),
    "one": np.array([5]),
    "zeros": np.zeros(6, np.int64),
    "empty": np.zeros(0, np.int64),
}


@pytest.mark.parametrize("minlength", [0, 2, 30])
@pytest.mark.parametrize("name", list(DATA))
def test_counts_agree_with_numpy(name, minlength):
    data = DATA[name]
    result = tg.bincount(tg.tensor(data), minlength=minlength)
    assert result.dtype == tg.int64 and not result.requires_grad
    np.testing.assert_array_equal(result.numpy(), np.bincount(data, minlength=minlength))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("minlength", [0, 2, 30])
@pytest.mark.parametrize("name", [name for name in DATA if name != "empty"])
def test_weighted_sums_agree_with_numpy(name, minlength, dtype):
    data = DATA[name]
    weights = _RNG.standard_normal(len(data)).astype(dtype)
    result = tg.bincount(tg.tensor(data), tg.tensor(weights), minlength)
    assert result.dtype == np.dtype(dtype)
    expected = np.bincount(data, weights.astype(np.float64), minlength)
    np.testing.assert_allclose(result.numpy(), expected, rtol=1e-6 if dtype == "float32" else 0)


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8"])
def test_every_integer_dtype_counts_into_int64(dtype):
    x = tg.tensor([2, 0, 2], dtype=getattr(tg, dtype))
    assert x.bincount().tolist() == [1, 0, 2] and x.bincount().dtype == tg.int64


def test_method_and_function_take_the_same_arguments():
    x, w = tg.tensor([0, 1, 1]), tg.tensor([1.0, 2.0, 3.0])
    assert x.bincount().tolist() == tg.bincount(x).tolist() == [1, 2]
    assert x.bincount(minlength=4).tolist() == tg.bincount(x, None, 4).tolist() == [1, 2, 0, 0]
    assert x.bincount(w, 4).tolist() == tg.bincount(input=x, weights=w, minlength=4).tolist()
    assert x.bincount(w, 4).tolist() == [1.0, 5.0, 0.0, 0.0]
    with pytest.raises(TypeError, match=r"bincount\(\): argument 'input' .* not list"):
        tg.bincount([0, 2])  # PyTorch's functions take tensors, not lists


def test_non_float32_weights_sum_in_float64_as_pytorchs():
    x = tg.tensor([0, 1, 1])
    for weights in ([1, 2, 3], [True, False, True]):
        result = x.bincount(tg.tensor(weights))
        assert result.dtype == tg.float64
    assert x.bincount(tg.tensor([1, 2, 3])).tolist() == [1.0, 5.0]
    assert x.bincount(tg.tensor([0.5, 1.0, 2.0], dtype=tg.float16)).dtype == tg.float64


def test_an_empty_input_gives_int64_zeros_even_with_weights():
    """PyTorch's rule, checked before the weights are: their dtype and length do not matter."""
    empty = tg.tensor([], dtype=tg.int64)
    for weights in (None, tg.tensor([]), tg.tensor([1.0, 2.0], dtype=tg.float64)):
        result = empty.bincount(weights, minlength=3)
        assert result.dtype == tg.int64 and result.tolist() == [0, 0, 0]
    assert empty.bincount().shape == (0,)


# --------------------------------------------------------------------------- errors
ERRORS = [
    # (id, call, error type, message)
    ("float_input", lambda lib: lib.bincount(lib.tensor([0.0, 1.0])), NotImplementedError,
     r'"bincount" not implemented for float32 tensors'),
    ("bool_input", lambda lib: lib.bincount(lib.tensor([True])), NotImplementedError,
     r'"bincount" not implemented for bool tensors'),
    ("negative_value", lambda lib: lib.bincount(lib.tensor([2, -3, 1])), RuntimeError,
     r"^bincount only supports 1-d non-negative integral inputs: got the negative value -3$"),
    ("two_dims", lambda lib: lib.bincount(lib.tensor([[0, 1]])), RuntimeError,
     r"^bincount only supports 1-d non-negative integral inputs: got a tensor of 2 dimensions "
     r"\(shape \(1, 2\)\)$"),
    ("zero_dims", lambda lib: lib.bincount(lib.tensor(1)), RuntimeError,
     r"got a tensor of 0 dimensions \(shape \(\)\)$"),
    ("weights_of_another_length",
     lambda lib: lib.bincount(lib.tensor([0, 1]), lib.tensor([1.0])), RuntimeError,
     r"^bincount: weights should be 1-d and have the same length as input: got weights of "
     r"shape \(1,\) for an input of shape \(2,\)$"),
    ("weights_2d", lambda lib: lib.bincount(lib.tensor([0, 1]), lib.tensor([[1.0, 2.0]])),
     RuntimeError, r"weights should be 1-d .* got weights of shape \(1, 2\)"),
    ("negative_minlength", lambda lib: lib.bincount(lib.tensor([0, 1]), minlength=-1),
     RuntimeError, r"^bincount: minlength should be >= 0, got -1$"),
    ("float_minlength", lambda lib: lib.bincount(lib.tensor([0, 1]), minlength=1.5), TypeError,
     r"^bincount\(\): argument 'minlength' must be int, not float$"),
    ("bool_minlength", lambda lib: lib.bincount(lib.tensor([0, 1]), minlength=True), TypeError,
     r"must be int, not bool$"),
    # PyTorch's order: the dtype before minlength, minlength before the shape
    ("float_input_and_negative_minlength",
     lambda lib: lib.bincount(lib.tensor([0.0]), minlength=-1), NotImplementedError,
     r"not implemented for float32"),
    ("two_dims_and_negative_minlength",
     lambda lib: lib.bincount(lib.tensor([[0]]), minlength=-1), RuntimeError,
     r"minlength should be >= 0"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "call", "error", "match"), ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_name_what_is_wrong(name, call, error, match):
    with pytest.raises(error, match=match):
        call(tg)


@pytest.mark.parametrize(("name", "call", "error", "match"), ERRORS, ids=[e[0] for e in ERRORS])
def test_pytorch_raises_the_same_types(name, call, error, match):
    torch = pytest.importorskip("torch")
    with pytest.raises(error):
        call(torch)


# --------------------------------------------------------------------------- autograd
def test_weights_that_require_grad_give_a_result_whose_backward_refuses():
    weights = tg.tensor([0.5, 1.0, 2.0], requires_grad=True)
    result = tg.bincount(tg.tensor([0, 2, 2]), weights)
    assert result.requires_grad and result.tolist() == [0.5, 0.0, 3.0]
    with pytest.raises(RuntimeError, match=r"the derivative for 'weights' is not implemented"):
        result.sum().backward()
    with pytest.raises(RuntimeError, match=r"derivative .* is not implemented"):
        tg.autograd.grad(result.sum(), weights)
    with tg.no_grad():
        assert not tg.bincount(tg.tensor([0]), weights[:1]).requires_grad
    empty = tg.tensor([], dtype=tg.int64).bincount(weights[:0], minlength=2)
    assert not empty.requires_grad  # int64 zeros, as PyTorch's


def test_autograd_is_pytorchs():
    torch = pytest.importorskip("torch")
    weights = torch.tensor([0.5, 1.0, 2.0], requires_grad=True)
    result = torch.bincount(torch.tensor([0, 2, 2]), weights)
    assert result.requires_grad
    with pytest.raises(RuntimeError, match="derivative for aten::bincount is not implemented"):
        result.sum().backward()
    empty = torch.bincount(torch.tensor([], dtype=torch.int64), weights[:0], minlength=2)
    assert not empty.requires_grad


# --------------------------------------------------------------------------- PyTorch
WEIGHT_DTYPES = [None, "float32", "float64", "float16", "int64", "int32", "bool"]


@pytest.mark.parametrize("weights_dtype", WEIGHT_DTYPES)
@pytest.mark.parametrize("minlength", [0, 2, 30])
@pytest.mark.parametrize("name", list(DATA))
def test_values_and_dtypes_are_pytorchs(name, minlength, weights_dtype):
    torch = pytest.importorskip("torch")
    data = DATA[name]
    weights = None
    if weights_dtype is not None:
        weights = _RNG.uniform(0, 3, len(data))
        weights = weights > 1.5 if weights_dtype == "bool" else weights.astype(weights_dtype)
    ours = tg.bincount(
        tg.tensor(data), None if weights is None else tg.tensor(weights), minlength
    ).numpy()
    theirs = torch.bincount(
        torch.tensor(data), None if weights is None else torch.tensor(weights), minlength
    ).numpy()
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)
