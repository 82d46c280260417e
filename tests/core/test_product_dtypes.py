"""The matrix products' dtype rules (``tensorgrad/core/product_dtypes.py``): ``@``,
``matmul``, ``mm``, ``bmm``, ``dot``, ``mv``, ``addmm``, ``addmv`` and ``baddbmm`` refuse two
dtypes (PyTorch's RuntimeError) and bool (its NotImplementedError) where PyTorch does, name
the op and both dtypes, and refuse a Python number as an operand (its TypeError). Each case
is compared with PyTorch itself where it is installed; ``linear`` and the convolutions are in
tests/nn/test_mixed_dtypes.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.core.product_dtypes import check_same_dtype
from tests.dtype_pairs import DTYPE_PAIRS, outcome


def make(lib: Any, shape: tuple[int, ...], dtype: str) -> Any:
    """A tensor of ``lib`` (tensorgrad or torch) holding 0, 1, 2, 0, ...: products of such
    small integers are exact in every dtype, so the two libraries' results compare equal."""
    return lib.tensor((np.arange(math.prod(shape)) % 3).reshape(shape).astype(dtype))


def _matmul(x_shape: tuple[int, ...], y_shape: tuple[int, ...]) -> Callable[..., Any]:
    return lambda lib, a, b: lib.matmul(make(lib, x_shape, a), make(lib, y_shape, b))


#: (name, op named in the message, call(lib, a, b)): ``a`` and ``b`` are dtypes
CASES: list[tuple[str, str, Callable[..., Any]]] = [
    ("matmul_2d", "matmul", _matmul((2, 3), (3, 4))),
    ("matmul_1d", "matmul", _matmul((3,), (3,))),
    ("matmul_1d_2d", "matmul", _matmul((3,), (3, 4))),
    ("matmul_2d_1d", "matmul", _matmul((2, 3), (3,))),
    ("matmul_3d", "matmul", _matmul((5, 2, 3), (5, 3, 4))),
    ("matmul_3d_2d", "matmul", _matmul((5, 2, 3), (3, 4))),
    ("matmul_2d_3d", "matmul", _matmul((2, 3), (5, 3, 4))),
    ("matmul_4d_3d", "matmul", _matmul((2, 5, 2, 3), (5, 3, 4))),
    ("operator", "matmul", lambda lib, a, b: make(lib, (2, 3), a) @ make(lib, (3, 4), b)),
    ("mm", "mm", lambda lib, a, b: make(lib, (2, 3), a).mm(make(lib, (3, 4), b))),
    ("bmm", "bmm", lambda lib, a, b: lib.bmm(make(lib, (5, 2, 3), a), make(lib, (5, 3, 4), b))),
    ("dot", "dot", lambda lib, a, b: lib.dot(make(lib, (3,), a), make(lib, (3,), b))),
    ("mv", "mv", lambda lib, a, b: lib.mv(make(lib, (2, 3), a), make(lib, (3,), b))),
    (
        "addmm_self",
        "addmm",
        lambda lib, a, b: lib.addmm(
            make(lib, (2, 4), b), make(lib, (2, 3), a), make(lib, (3, 4), a)
        ),
    ),
    (
        "addmm_mat2",
        "addmm",
        lambda lib, a, b: lib.addmm(
            make(lib, (2, 4), a), make(lib, (2, 3), a), make(lib, (3, 4), b)
        ),
    ),
    (
        "addmm_beta_0",  # the ignored self's dtype still counts, as in PyTorch
        "addmm",
        lambda lib, a, b: make(lib, (4,), b).addmm(
            make(lib, (2, 3), a), make(lib, (3, 4), a), beta=0
        ),
    ),
    (
        "addmv_self",
        "addmv",
        lambda lib, a, b: lib.addmv(make(lib, (2,), b), make(lib, (2, 3), a), make(lib, (3,), a)),
    ),
    (
        "baddbmm_self",
        "baddbmm",
        lambda lib, a, b: lib.baddbmm(
            make(lib, (5, 2, 4), b), make(lib, (5, 2, 3), a), make(lib, (5, 3, 4), a)
        ),
    ),
    (
        "baddbmm_batch2",
        "baddbmm",
        lambda lib, a, b: lib.baddbmm(
            make(lib, (5, 2, 4), a), make(lib, (5, 2, 3), a), make(lib, (5, 3, 4), b)
        ),
    ),
]


@pytest.mark.parametrize(("a", "b"), DTYPE_PAIRS, ids=[f"{a}-{b}" for a, b in DTYPE_PAIRS])
@pytest.mark.parametrize(("name", "op", "call"), CASES, ids=[c[0] for c in CASES])
def test_refused_and_accepted_as_pytorch(name, op, call, a, b):
    """The same outcome as PyTorch's: its error type, or a result of its dtype and values.
    (A bool first operand of a batched product is NotImplementedError before the dtypes are
    compared, as PyTorch's ``bmm`` kernel is chosen by it.)"""
    torch = pytest.importorskip("torch")
    ours = outcome(lambda: call(tg, a, b))
    theirs = outcome(lambda: call(torch, a, b))
    if isinstance(theirs, Exception):
        assert isinstance(ours, type(theirs)), f"PyTorch: {theirs!r}; tensorgrad: {ours!r}"
        assert isinstance(ours, NotImplementedError) == isinstance(theirs, NotImplementedError)
        assert op in str(ours)
    else:
        assert not isinstance(ours, Exception), f"PyTorch accepts; tensorgrad: {ours!r}"
        assert str(ours.dtype) == str(theirs.dtype).removeprefix("torch.")
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


MIXED = [("float32", "float64"), ("float64", "float32"), ("int64", "float32"), ("int32", "int64")]


@pytest.mark.parametrize(("a", "b"), MIXED, ids=[f"{a}-{b}" for a, b in MIXED])
@pytest.mark.parametrize(("name", "op", "call"), CASES, ids=[c[0] for c in CASES])
def test_two_dtypes_are_a_runtime_error_naming_the_op_and_both(name, op, call, a, b):
    first, second = (b, a) if name.endswith("_self") or name == "addmm_beta_0" else (a, b)
    with pytest.raises(RuntimeError, match=rf"^{op}: .*{first}.*{second}") as info:
        call(tg, a, b)
    assert isinstance(info.value, tg.DtypeError) and isinstance(info.value, TypeError)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64", "uint8"])
@pytest.mark.parametrize(("name", "op", "call"), CASES, ids=[c[0] for c in CASES])
def test_one_dtype_gives_that_dtype(name, op, call, dtype):
    assert call(tg, dtype, dtype).dtype == np.dtype(dtype)


def test_messages_name_the_operands_and_their_shapes():
    with pytest.raises(RuntimeError) as info:
        tg.ones(2, 3).mm(tg.ones(3, 4, dtype=tg.float64))
    assert str(info.value) == (
        "mm: expected self and mat2 to have the same dtype, but got float32 (shape (2, 3)) and "
        "float64 (shape (3, 4))"
    )
    with pytest.raises(RuntimeError, match=r"^addmm: expected self, mat1 and mat2 .* float64"):
        tg.ones(2, 4, dtype=tg.float64).addmm(tg.ones(2, 3), tg.ones(3, 4))
    bools = tg.ones(5, 2, 3, dtype=tg.bool)
    with pytest.raises(NotImplementedError, match=r"^matmul: not implemented for 'Bool'.*bmm"):
        bools @ tg.ones(5, 3, 4)
    with pytest.raises(RuntimeError, match=r"^dot: expected self and other"):
        tg.ones(3).dot(tg.ones(3, dtype=tg.int64))


def test_a_0d_operand_is_the_shape_error_pytorch_raises_first():
    with pytest.raises(tg.ShapeError, match="at least 1 dimension"):
        tg.tensor(1.0) @ tg.ones(2, dtype=tg.float64)


@pytest.mark.parametrize(
    "number", [2, 2.0, True, np.float64(2.0)], ids=["int", "float", "bool", "numpy"]
)
def test_a_number_is_no_matrix_product_operand(number):
    """PyTorch's ``Tensor.__matmul__`` takes tensors only: Python's TypeError either way."""
    x = tg.ones(2, 2)
    with pytest.raises(TypeError, match="unsupported operand type"):
        x @ number
    if not isinstance(number, np.generic):  # NumPy's scalar runs its own matmul first
        with pytest.raises(TypeError, match="unsupported operand type"):
            number @ x
    for call, argument in [(tg.matmul, "other"), (tg.mm, "mat2"), (tg.Tensor.bmm, "mat2")]:
        with pytest.raises(TypeError, match=rf"argument '{argument}' .* must be Tensor"):
            call(x, number)


def test_numbers_and_lists_are_left_to_the_op():
    check_same_dtype("op", ("x", tg.ones(2)), ("y", 2.0), ("z", [1, 2]))
    with pytest.raises(tg.DtypeError, match=r"^op: expected x and z .* float32 .* int64"):
        check_same_dtype("op", ("x", tg.ones(2)), ("y", 2.0), ("z", tg.ones(2, dtype=tg.int64)))
