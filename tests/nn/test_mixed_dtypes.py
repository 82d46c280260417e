"""Operands of two dtypes in ``F.linear``, the convolutions and the layers around them
(``tensorgrad/core/product_dtypes.py``): refused where PyTorch refuses, with its error type
and a message naming the op and both dtypes; accepted, in PyTorch's result dtype, where it
accepts (a float32 input with float64 weights is an error, not a float64 result). Each case
is compared with PyTorch itself where it is installed; the matrix products are in
tests/core/test_product_dtypes.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import nn
from tensorgrad.nn import functional as F
from tests.dtype_pairs import DTYPE_PAIRS, outcome


def make(lib: Any, shape: tuple[int, ...], dtype: str) -> Any:
    """A tensor of ``lib`` (tensorgrad or torch) holding 0, 1, 2, 0, ...: products of such
    small integers are exact in every dtype, so the two libraries' results compare equal."""
    return lib.tensor((np.arange(math.prod(shape)) % 3).reshape(shape).astype(dtype))


#: (name, op named in the message, call(lib, functional, a, b)): ``a`` and ``b`` are dtypes
CASES: list[tuple[str, str, Callable[..., Any]]] = [
    ("linear", "linear", lambda lib, f, a, b: f.linear(make(lib, (2, 3), a), make(lib, (4, 3), b))),
    (
        "linear_1d_input",
        "linear",
        lambda lib, f, a, b: f.linear(make(lib, (3,), a), make(lib, (4, 3), b)),
    ),
    (
        "linear_3d_input",
        "linear",
        lambda lib, f, a, b: f.linear(make(lib, (5, 2, 3), a), make(lib, (4, 3), b)),
    ),
    (
        "linear_bias",
        "linear",
        lambda lib, f, a, b: f.linear(
            make(lib, (2, 3), a), make(lib, (4, 3), a), make(lib, (4,), b)
        ),
    ),
    (
        "linear_3d_input_bias",
        "linear",
        lambda lib, f, a, b: f.linear(
            make(lib, (5, 2, 3), a), make(lib, (4, 3), a), make(lib, (4,), b)
        ),
    ),
    (
        "linear_vector_weight",
        "linear",
        lambda lib, f, a, b: f.linear(make(lib, (2, 3), a), make(lib, (3,), b)),
    ),
    (
        "linear_vector_weight_0d_bias",  # PyTorch adds this bias in place after the product
        "linear",
        lambda lib, f, a, b: f.linear(
            make(lib, (5, 2, 3), a), make(lib, (3,), a), make(lib, (), b)
        ),
    ),
    (
        "conv1d",
        "conv1d",
        lambda lib, f, a, b: f.conv1d(make(lib, (1, 2, 5), a), make(lib, (3, 2, 2), b)),
    ),
    (
        "conv1d_bias",
        "conv1d",
        lambda lib, f, a, b: f.conv1d(
            make(lib, (1, 2, 5), a), make(lib, (3, 2, 2), a), make(lib, (3,), b)
        ),
    ),
    (
        "conv2d",
        "conv2d",
        lambda lib, f, a, b: f.conv2d(make(lib, (1, 2, 4, 4), a), make(lib, (3, 2, 2, 2), b)),
    ),
    (
        "conv2d_unbatched",
        "conv2d",
        lambda lib, f, a, b: f.conv2d(make(lib, (2, 4, 4), a), make(lib, (3, 2, 2, 2), b)),
    ),
    (
        "conv2d_bias",
        "conv2d",
        lambda lib, f, a, b: f.conv2d(
            make(lib, (1, 2, 4, 4), a), make(lib, (3, 2, 2, 2), a), make(lib, (3,), b)
        ),
    ),
    (
        "conv_transpose1d",
        "conv_transpose1d",
        lambda lib, f, a, b: f.conv_transpose1d(make(lib, (1, 2, 5), a), make(lib, (2, 3, 2), b)),
    ),
    (
        "conv_transpose1d_bias",  # added in place: cast to the input's dtype where it can be
        "conv_transpose1d",
        lambda lib, f, a, b: f.conv_transpose1d(
            make(lib, (1, 2, 5), a), make(lib, (2, 3, 2), a), make(lib, (3,), b)
        ),
    ),
    (
        "conv_transpose2d",
        "conv_transpose2d",
        lambda lib, f, a, b: f.conv_transpose2d(
            make(lib, (1, 2, 4, 4), a), make(lib, (2, 3, 2, 2), b)
        ),
    ),
    (
        "conv_transpose2d_bias",
        "conv_transpose2d",
        lambda lib, f, a, b: f.conv_transpose2d(
            make(lib, (1, 2, 4, 4), a), make(lib, (2, 3, 2, 2), a), make(lib, (3,), b)
        ),
    ),
]


@pytest.mark.parametrize(("a", "b"), DTYPE_PAIRS, ids=[f"{a}-{b}" for a, b in DTYPE_PAIRS])
@pytest.mark.parametrize(("name", "op", "call"), CASES, ids=[c[0] for c in CASES])
def test_refused_and_accepted_as_pytorch(name, op, call, a, b):
    """The same outcome as PyTorch's: its error type (NotImplementedError for a dtype its
    kernel lacks, RuntimeError for two dtypes), or a result of its dtype, shape and values."""
    torch = pytest.importorskip("torch")
    ours = outcome(lambda: call(tg, F, a, b))
    theirs = outcome(lambda: call(torch, torch.nn.functional, a, b))
    if isinstance(theirs, Exception):
        assert isinstance(ours, type(theirs)), f"PyTorch: {theirs!r}; tensorgrad: {ours!r}"
        assert isinstance(ours, NotImplementedError) == isinstance(theirs, NotImplementedError)
        assert op in str(ours)
    else:
        assert not isinstance(ours, Exception), f"PyTorch accepts; tensorgrad: {ours!r}"
        assert str(ours.dtype) == str(theirs.dtype).removeprefix("torch.")
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


#: the cases whose bias PyTorch adds in place after the product: cast, where it can be
IN_PLACE = {"linear_vector_weight_0d_bias", "conv_transpose1d_bias", "conv_transpose2d_bias"}
STRICT = [c for c in CASES if c[0] not in IN_PLACE]
MIXED = [("float32", "float64"), ("float64", "float32"), ("int64", "float32"), ("int64", "int32")]


@pytest.mark.parametrize(("a", "b"), MIXED, ids=[f"{a}-{b}" for a, b in MIXED])
@pytest.mark.parametrize(("name", "op", "call"), STRICT, ids=[c[0] for c in STRICT])
def test_two_dtypes_are_a_runtime_error_naming_the_op_and_both(name, op, call, a, b):
    with pytest.raises(RuntimeError, match=rf"^{op}: .*{a}.*{b}") as info:
        call(tg, F, a, b)
    assert isinstance(info.value, tg.DtypeError) and isinstance(info.value, TypeError)


def test_messages_name_the_operands_and_their_shapes():
    with pytest.raises(RuntimeError) as info:
        F.linear(tg.ones(2, 3), tg.ones(4, 3, dtype=tg.float64))
    assert str(info.value) == (
        "linear: expected input and weight to have the same dtype, but got float32 (shape "
        "(2, 3)) and float64 (shape (4, 3))"
    )
    with pytest.raises(RuntimeError, match=r"input, weight and bias .* float64 \(shape \(4,\)\)"):
        F.linear(tg.ones(2, 3), tg.ones(4, 3), tg.ones(4, dtype=tg.float64))
    with pytest.raises(RuntimeError, match=r"^conv2d: expected input and bias .* \(shape \(3,\)\)"):
        F.conv2d(tg.ones(1, 2, 4, 4), tg.ones(3, 2, 2, 2), tg.ones(3, dtype=tg.float64))
    with pytest.raises(NotImplementedError, match=r"^conv2d: not implemented for 'Bool'"):
        F.conv2d(tg.ones(1, 2, 4, 4, dtype=tg.bool), tg.ones(3, 2, 2, 2, dtype=tg.bool))
    with pytest.raises(NotImplementedError, match=r"^conv_transpose2d: .* for 'Int'"):
        F.conv_transpose2d(tg.ones(1, 2, 4, 4, dtype=tg.int32), tg.ones(2, 3, 2, 2, dtype=tg.int32))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64"])
@pytest.mark.parametrize(("name", "op", "call"), CASES, ids=[c[0] for c in CASES])
def test_one_dtype_gives_that_dtype(name, op, call, dtype):
    assert call(tg, F, dtype, dtype).dtype == np.dtype(dtype)


def test_a_bias_added_in_place_keeps_the_products_dtype_and_its_own_gradient():
    """``conv_transpose*d`` (always) and ``linear`` (off PyTorch's fused path) add the bias
    after the product, in place: a float64 bias on float32 gives float32, and the bias's
    gradient comes back in float64; a float bias on an integer output is refused."""
    x = tg.ones(1, 2, 4, 4, requires_grad=True)
    bias = tg.ones(3, dtype=tg.float64, requires_grad=True)
    out = F.conv_transpose2d(x, tg.ones(2, 3, 2, 2), bias)
    assert out.dtype == tg.float32
    out.sum().backward()
    assert bias.grad.dtype == tg.float64 and bias.grad.tolist() == [25.0] * 3
    scalar_bias = tg.tensor(0.5, dtype=tg.float64, requires_grad=True)
    out = F.linear(tg.ones(5, 2, 3), tg.ones(3), scalar_bias)
    assert out.dtype == tg.float32 and out.shape == (5, 2)
    out.sum().backward()
    assert scalar_bias.grad.dtype == tg.float64 and scalar_bias.grad.item() == 10.0
    ints = tg.ones(1, 2, 4, 4, dtype=tg.int64)
    with pytest.raises(
        RuntimeError, match=r"^conv_transpose2d: .*float32.* can't be cast to int64"
    ):
        F.conv_transpose2d(ints, ints.new_ones((2, 3, 2, 2)), tg.ones(3))


# --------------------------------------------------------------------------- layers
def test_float32_layers_refuse_float64_data_as_pytorch():
    """A float32 model fed float64 data (NumPy's default) is refused, not run in float64."""
    data = tg.ones(2, 3, dtype=tg.float64)
    with pytest.raises(RuntimeError, match="^linear: .*float64.*float32"):
        nn.Linear(3, 4)(data)
    with pytest.raises(RuntimeError, match=r"^linear_chain: step 0 \(linear\+bias\): .*float64"):
        nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))(data)
    images = tg.ones(1, 2, 5, 5, dtype=tg.float64)
    with pytest.raises(RuntimeError, match="^conv2d: .*float64.*float32"):
        nn.Conv2d(2, 3, 3)(images)
    with pytest.raises(RuntimeError, match="^conv2d: .*float64.*float32"):
        nn.Sequential(nn.Conv2d(2, 3, 3), nn.ReLU())(images)  # the fused conv2d_relu
    with pytest.raises(RuntimeError, match="^conv_transpose2d: .*float64.*float32"):
        nn.ConvTranspose2d(2, 3, 3)(images)
    with pytest.raises(RuntimeError, match="^conv1d: .*float64.*float32"):
        nn.Conv1d(2, 3, 3)(tg.ones(1, 2, 5, dtype=tg.float64))
    assert nn.Sequential(nn.Linear(3, 4), nn.ReLU()).double()(data).dtype == tg.float64
    assert nn.Conv2d(2, 3, 3)(images.float()).dtype == tg.float32


def test_a_linear_chain_checks_each_layer():
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    model[2].double()
    with pytest.raises(RuntimeError, match=r"^linear_chain: step 2 \(linear\+bias\): .*float64"):
        model(tg.ones(2, 3))
    model[2].bias = None
    model[2].weight = nn.Parameter(tg.ones(2, 4, dtype=tg.float16))
    with pytest.raises(RuntimeError, match=r"^linear_chain: step 2 \(linear\): .*float16"):
        model(tg.ones(2, 3))


@pytest.mark.parametrize("mode", ["RNN", "LSTM", "GRU"])
def test_recurrent_layers_refuse_another_input_dtype_with_pytorchs_value_error(mode):
    layer = getattr(nn, mode)(3, 4)
    with pytest.raises(ValueError, match=r"RNN input dtype \(float64\) does not match weight"):
        layer(tg.ones(5, 2, 3, dtype=tg.float64))
    assert layer.double()(tg.ones(5, 2, 3, dtype=tg.float64))[0].dtype == tg.float64


@pytest.mark.parametrize(
    "make_layer",
    [
        lambda lib: lib.nn.Linear(3, 4),
        lambda lib: lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.ReLU()),
        lambda lib: lib.nn.RNN(3, 4),
        lambda lib: lib.nn.LSTM(3, 4),
        lambda lib: lib.nn.GRUCell(3, 4),
    ],
    ids=["Linear", "Sequential", "RNN", "LSTM", "GRUCell"],
)
def test_layers_refuse_float64_data_with_pytorchs_error_type(make_layer):
    torch = pytest.importorskip("torch")
    ours = outcome(lambda: make_layer(tg)(tg.ones(2, 3, dtype=tg.float64)))
    theirs = outcome(lambda: make_layer(torch)(torch.ones(2, 3, dtype=torch.float64)))
    assert isinstance(theirs, Exception) and isinstance(ours, type(theirs)), (theirs, ours)


# --------------------------------------------------------------------------- on purpose
def test_checked_where_pytorch_skips_the_kernel():
    """Where PyTorch never reaches the check (no element to convolve) or adds a 1-D bias
    after the product (a non-contiguous input of three or more dimensions, a layout that
    tensorgrad's channels-last convolution outputs do not share), tensorgrad refuses two
    dtypes all the same (docs/porting.md)."""
    with pytest.raises(RuntimeError, match="^conv2d: .*float32.*float64"):
        F.conv2d(tg.ones(0, 2, 4, 4), tg.ones(3, 2, 2, 2, dtype=tg.float64))
    with pytest.raises(RuntimeError, match="^conv_transpose2d: .*float32.*float64"):
        F.conv_transpose2d(tg.ones(0, 2, 4, 4), tg.ones(2, 3, 2, 2, dtype=tg.float64))
    strided = tg.ones(2, 5, 3).transpose(0, 1)
    with pytest.raises(RuntimeError, match="^linear: .*bias"):
        F.linear(strided, tg.ones(4, 3), tg.ones(4, dtype=tg.float64))
