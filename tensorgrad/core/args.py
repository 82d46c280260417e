"""The naming policy, in one place: PyTorch's names and semantics first; NumPy's spellings
accepted where they do not conflict.

Tensor methods take PyTorch's ``dim`` and ``keepdim``; :func:`numpy_names` lets a method take
NumPy's ``axis`` and ``keepdims`` for them too (PyTorch itself accepts both). Where the two
libraries disagree on what a name *means* (``transpose``, ``repeat``, ``max(dim)``, ``size``),
PyTorch's meaning wins, and NumPy's is reached through NumPy's own functions, which Tensors
answer with NumPy semantics (``np.transpose(t, axes)``, ``np.max(t, axis=0)``): see the
conventions table in docs/design.md.

It also reads the arguments that ``tg.zeros``/``tg.full`` and ``Tensor.new_zeros``/``new_full``
share (sizes, fill values), so both sides check them alike.
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

F = TypeVar("F", bound=Callable[..., Any])

#: NumPy's keyword → PyTorch's
ALIASES = {"axis": "dim", "keepdims": "keepdim"}


def numpy_names(method: F) -> F:
    """Accept NumPy's ``axis=``/``keepdims=`` for ``dim=``/``keepdim=`` (not both at once)."""

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if kwargs:
            for numpy_name, torch_name in ALIASES.items():
                if numpy_name in kwargs:
                    if torch_name in kwargs:
                        raise TypeError(
                            f"{method.__name__}() got both {torch_name!r} and its NumPy "
                            f"spelling {numpy_name!r}"
                        )
                    kwargs[torch_name] = kwargs.pop(numpy_name)
        return method(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def shape_args(shape: tuple, what: str = "shape") -> tuple[int, ...]:
    """``f(2, 3)``, ``f((2, 3))`` and ``f([2, 3])`` alike, as a tuple of ints."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    result = []
    for n in shape:
        try:
            result.append(int(n.__index__()))
        except (AttributeError, TypeError):
            raise TypeError(f"{what} must be a sequence of ints, got {shape!r}") from None
    return tuple(result)


def size_args(size: tuple, what: str) -> tuple[int, ...]:
    """The size of a new tensor, read as :func:`shape_args` reads it; a negative dimension
    raises PyTorch's RuntimeError naming ``what``."""
    shape = shape_args(size, "size")
    for n in shape:
        if n < 0:
            raise RuntimeError(f"{what}: trying to create a tensor with negative dimension {n}")
    return shape


def check_fill_value(value: Any, what: str) -> None:
    """A ``fill_value`` must be a real number (a 0-d Tensor's item is unwrapped by the caller)."""
    if not isinstance(value, (numbers.Number, np.generic)) or isinstance(value, complex):
        raise TypeError(
            f"{what}: fill_value must be a number, got {type(value).__name__} {value!r}"
        )


def check_fits(value: Any, dtype: Any, what: str) -> None:
    """A number written into a tensor of ``dtype`` (a fill value, an end of a range) must be
    representable there, as PyTorch checks: NaN and ±inf fit only floating dtypes, a value
    beyond the dtype's range fits nowhere (a float is truncated first), and an unsigned
    dtype takes negative integers down to minus its maximum (they wrap, two's complement)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b" or isinstance(value, (bool, np.bool_)):
        return
    value = value.item() if isinstance(value, np.generic) else value
    if dtype.kind == "f":
        info = np.finfo(dtype)
        fits = not math.isfinite(value) or -float(info.max) <= value <= float(info.max)
    elif isinstance(value, float) and not math.isfinite(value):
        fits = False
    else:
        info = np.iinfo(dtype)
        low = -int(info.max) if dtype.kind == "u" and isinstance(value, int) else int(info.min)
        fits = low <= value <= int(info.max)  # a float untruncated: 255.5 is beyond uint8
    if not fits:
        raise RuntimeError(f"{what}: value {value!r} cannot be converted to type {dtype} "
                           "without overflow")  # fmt: skip


class Size(tuple):
    """A tensor's shape, as ``x.size()`` returns it (PyTorch's ``torch.Size``): a tuple."""

    def numel(self) -> int:
        return math.prod(self)

    def __repr__(self) -> str:
        return f"tg.Size({list(self)})"

    def __getitem__(self, index: Any) -> Any:
        result = tuple.__getitem__(self, index)
        return Size(result) if isinstance(index, slice) else result


class SizeOrCount(int):
    """What ``x.size`` is: NumPy's element count (an int: ``x.size * 2``), which can also be
    called as PyTorch's method: ``x.size()`` is the shape, ``x.size(0)`` one dimension."""

    _shape: tuple[int, ...]

    def __new__(cls, shape: tuple[int, ...]) -> SizeOrCount:
        count = super().__new__(cls, math.prod(shape))
        count._shape = shape
        return count

    def __call__(self, dim: int | None = None) -> Any:
        if dim is None:
            return Size(self._shape)
        ndim = len(self._shape)
        if not isinstance(dim, int) or not -max(ndim, 1) <= dim < max(ndim, 1) or not ndim:
            raise IndexError(
                f"size: dimension {dim!r} is out of range for a tensor of {ndim} dimensions"
            )
        return self._shape[dim]
