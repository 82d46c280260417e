"""Module-level spellings of the Tensor methods (``tg.exp(x)`` is ``x.exp()``, PyTorch's
``torch.exp``), and the functions of several tensors: ``where``, ``cat``, ``stack``, ``split``.

Each takes anything ``tg.as_tensor`` does as its first argument, so ``tg.exp(2.0)`` works too.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

import numpy as np

from tensorgrad import array_backend, ops
from tensorgrad.core import engine
from tensorgrad.core.args import numpy_names
from tensorgrad.core.engine import apply, as_tensor, operand


# --------------------------------------------------------------------------- several tensors
def where(condition: Any, input: Any = None, other: Any = None) -> Any:
    """Elements of ``input`` where ``condition`` holds, else of ``other`` (all broadcast);
    with the condition alone, the indices where it holds (``nonzero(as_tuple=True)``)."""
    cond = condition._data if isinstance(condition, engine.Tensor) else np.asarray(condition)
    if cond.dtype != np.bool_:
        raise TypeError(f"where: condition must be a bool tensor, got {cond.dtype}")
    if input is None and other is None:
        return tuple(engine.wrap(i) for i in np.nonzero(cond))
    x, y = operand(input), operand(other)
    ax = x._data if isinstance(x, engine.Tensor) else x
    ay = y._data if isinstance(y, engine.Tensor) else y
    if array_backend.needs_promotion(ax, ay):
        dtype = array_backend.result_type(ax, ay)
        x, y = engine._cast(x, dtype), engine._cast(y, dtype)
        if not isinstance(x, (engine.Tensor, np.ndarray)) and not isinstance(y, engine.Tensor):
            x = np.asarray(x, dtype)  # two numbers: NumPy would make 0.0 and 0 float64
    return apply(ops.Where(), cond, x, y)


def maximum(input: Any, other: Any) -> Any:
    return engine.binary(ops.Maximum, as_tensor(input), other)


def minimum(input: Any, other: Any) -> Any:
    return engine.binary(ops.Minimum, as_tensor(input), other)


def matmul(input: Any, other: Any) -> Any:
    return engine.binary(ops.MatMul, as_tensor(input), other)


@numpy_names
def cat(tensors: Sequence[Any], dim: int = 0) -> Any:
    """Join tensors along an existing dimension (they are promoted to one dtype)."""
    return apply(ops.Concatenate(dim), *_common(tensors, "cat"))


concatenate = concat = cat


@numpy_names
def stack(tensors: Sequence[Any], dim: int = 0) -> Any:
    """Join tensors of one shape along a new dimension."""
    return apply(ops.Stack(dim), *_common(tensors, "stack"))


def _common(tensors: Sequence[Any], name: str) -> list[Any]:
    if isinstance(tensors, engine.Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(
            f"{name}: expected a list or tuple of tensors, got {type(tensors).__name__}"
        )
    values = [operand(t) for t in tensors]
    for t, v in zip(tensors, values):
        if v is NotImplemented:  # None, a string, ...: NumPy would make an object array
            raise TypeError(f"{name}: expected a sequence of tensors, got a {type(t).__name__}")
    arrays = [v._data if isinstance(v, engine.Tensor) else np.asarray(v) for v in values]
    if len({a.dtype for a in arrays}) > 1:
        dtype = array_backend.result_type(*arrays)
        values = [engine._cast(v if isinstance(v, engine.Tensor) else a, dtype)
                  for v, a in zip(values, arrays)]  # fmt: skip
    return values


@numpy_names
def split(tensor: Any, split_size_or_sections: Any, dim: int = 0) -> list[Any]:
    """Split along ``dim`` into pieces of ``split_size`` (the last may be smaller) or into
    pieces of the listed sizes, which must add up to the dimension's length (PyTorch's rule)."""
    x = as_tensor(tensor)
    axis = ops.normalize_axis(dim, x.ndim, "split")
    length = x.shape[axis]
    if isinstance(split_size_or_sections, (int, np.integer)):
        size = int(split_size_or_sections)
        if size < 0 or (size == 0 and length):  # 0 only for a dimension of size 0 (PyTorch)
            raise ValueError(f"split: split size must be positive, got {size}")
        sizes = [builtins.min(size, length - start) for start in range(0, length, size or 1)]
        sizes = sizes or [0]
    else:
        sizes = [int(n) for n in split_size_or_sections]
        if builtins.sum(sizes) != length or builtins.any(n < 0 for n in sizes):
            raise ValueError(
                f"split: section sizes {sizes} do not add up to the length {length} of dim {axis}"
            )
    pieces, start = [], 0
    lead = (slice(None),) * axis
    for n in sizes:
        pieces.append(x[(*lead, slice(start, start + n))])
        start += n
    return pieces


@numpy_names
def chunk(tensor: Any, chunks: int, dim: int = 0) -> list[Any]:
    """At most ``chunks`` pieces of equal size along ``dim`` (PyTorch's rule)."""
    if chunks <= 0:
        raise RuntimeError(f"chunk: chunks must be positive, got {chunks}")
    x = as_tensor(tensor)
    axis = ops.normalize_axis(dim, x.ndim, "chunk")
    if not x.shape[axis]:  # PyTorch: ``chunks`` empty pieces
        return split(x, [0] * chunks, axis)
    return split(x, -(-x.shape[axis] // chunks), axis)


def meshgrid(*tensors: Any, indexing: str = "ij") -> tuple[Any, ...]:
    """Coordinate grids from 1-D tensors: with ``indexing="ij"`` the k-th output varies
    along dimension k; with ``"xy"`` the first two dimensions are swapped (NumPy's default).
    PyTorch's default is ``"ij"``."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing not in ("ij", "xy"):
        raise ValueError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    grids = [as_tensor(t) for t in tensors]
    for t in grids:
        if t.ndim > 1:
            raise RuntimeError(
                f"meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t.ndim}D"
            )
    if len({t.dtype for t in grids}) > 1:
        raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    vectors = [t.reshape(-1) for t in grids]
    shape = tuple(v.shape[0] for v in vectors)
    out = []
    for k, v in enumerate(vectors):
        view = [1] * len(vectors)
        view[k] = shape[k]
        grid = v.reshape(*view).expand(*shape)
        out.append(grid.transpose(0, 1) if indexing == "xy" and len(shape) >= 2 else grid)
    return tuple(out)


def flatten(input: Any, start_dim: int = 0, end_dim: int = -1) -> Any:
    return as_tensor(input).flatten(start_dim, end_dim)


def numel(input: Any) -> int:
    return as_tensor(input).numel()


def is_tensor(obj: Any) -> bool:
    return isinstance(obj, engine.Tensor)


def is_floating_point(input: Any) -> bool:
    return as_tensor(input).dtype.kind == "f"


# --------------------------------------------------------------------------- method spellings
def _method(name: str) -> Any:
    """``tg.<name>(input, *args, **kwargs)`` as ``as_tensor(input).<name>(*args, **kwargs)``."""

    def function(input: Any, *args: Any, **kwargs: Any) -> Any:
        return getattr(as_tensor(input), name)(*args, **kwargs)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"``tg.{name}(x, ...)`` is ``x.{name}(...)``: see ``Tensor.{name}``."
    return function


#: the Tensor methods that are also functions of the package, as in PyTorch
METHOD_FUNCTIONS = (
    "abs", "absolute", "add", "all", "allclose", "amax", "amin", "any", "argmax", "argmin",
    "argsort", "bmm", "ceil", "clamp", "clamp_max", "clamp_min", "clip", "clone", "cos", "cumsum",
    "diag", "diagonal", "div", "divide", "dot", "eq", "equal", "exp", "expm1", "flip", "floor",
    "gather", "ge", "gelu", "gt", "index_select", "isclose", "isfinite", "isinf", "isnan", "le",
    "leaky_relu", "log", "log10", "log1p", "log2", "log_softmax", "logical_and", "logical_not",
    "logical_or", "logical_xor", "logsumexp", "lt", "masked_fill", "masked_select", "max", "mean",
    "min", "mm", "mul", "multiply", "narrow", "ne", "neg", "negative", "nonzero", "norm", "outer",
    "permute", "pow", "prod", "reciprocal", "relu", "repeat_interleave", "reshape", "roll", "round",
    "rsqrt", "scatter_add", "sigmoid", "sign", "sin", "softmax", "sort", "sqrt", "square",
    "squeeze", "std", "sub", "subtract", "sum", "swapaxes", "swapdims", "t", "tan", "tanh", "topk",
    "transpose", "tril", "triu", "true_divide", "trunc", "unbind", "unflatten", "unsqueeze", "var",
)  # fmt: skip

for _name in METHOD_FUNCTIONS:
    globals()[_name] = _method(_name)
del _name
clip = clamp  # noqa: F821 - one function under PyTorch's two names
