"""Making tensors: from data, filled with a value, ranges, identity and random ones."""

from __future__ import annotations

from typing import Any

from tensorgrad import backend
from tensorgrad.tensor import Tensor


def _shape(shape: tuple) -> tuple[int, ...]:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    for n in shape:
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise ValueError(f"shape must be non-negative ints, got {shape}")
    return tuple(shape)


def _make(array: Any, requires_grad: bool) -> Tensor:
    return Tensor(array, requires_grad=requires_grad)


def tensor(data: Any, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor from ``data`` (a number, a nested list, an array or a Tensor), copying it.

    Python floats and lists become float32 (lists of bools become bool); NumPy arrays keep
    their dtype. Only floating-point tensors can require grad.
    """
    if isinstance(data, Tensor):
        data = data.data
    return _make(backend.as_array(data, dtype, copy=True), requires_grad)


def zeros(*shape: Any, dtype: Any = backend.DEFAULT_FLOAT, requires_grad: bool = False) -> Tensor:
    return _make(backend.zeros(_shape(shape), dtype), requires_grad)


def ones(*shape: Any, dtype: Any = backend.DEFAULT_FLOAT, requires_grad: bool = False) -> Tensor:
    return _make(backend.ones(_shape(shape), dtype), requires_grad)


def full(
    shape: Any, fill_value: Any, dtype: Any = backend.DEFAULT_FLOAT, requires_grad: bool = False
) -> Tensor:
    shape = (shape,) if isinstance(shape, int) else shape
    return _make(backend.full(_shape((shape,)), fill_value, dtype), requires_grad)


def zeros_like(other: Any, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    other = other if isinstance(other, Tensor) else Tensor(other)
    return _make(backend.zeros(other.shape, dtype or other.dtype), requires_grad)


def ones_like(other: Any, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    other = other if isinstance(other, Tensor) else Tensor(other)
    return _make(backend.ones(other.shape, dtype or other.dtype), requires_grad)


def full_like(
    other: Any, fill_value: Any, dtype: Any = None, requires_grad: bool = False
) -> Tensor:
    other = other if isinstance(other, Tensor) else Tensor(other)
    return _make(backend.full(other.shape, fill_value, dtype or other.dtype), requires_grad)


def arange(
    start: Any, stop: Any = None, step: Any = 1, dtype: Any = None, requires_grad: bool = False
) -> Tensor:
    """Evenly spaced values in ``[start, stop)``: int64 for int arguments, else float32."""
    if step == 0:
        raise ValueError("arange: step must not be zero")
    return _make(backend.arange(start, stop, step, dtype), requires_grad)


def eye(
    n: int, m: int | None = None, dtype: Any = backend.DEFAULT_FLOAT, requires_grad: bool = False
) -> Tensor:
    return _make(backend.eye(n, m, dtype), requires_grad)


def rand(*shape: Any, dtype: Any = backend.DEFAULT_FLOAT, requires_grad: bool = False) -> Tensor:
    """Uniform samples in [0, 1) from the generator seeded by ``manual_seed``."""
    return _make(backend.rand(_shape(shape), dtype), requires_grad)


def randn(*shape: Any, dtype: Any = backend.DEFAULT_FLOAT, requires_grad: bool = False) -> Tensor:
    """Standard normal samples from the generator seeded by ``manual_seed``."""
    return _make(backend.randn(_shape(shape), dtype), requires_grad)


def randint(low: int, high: int, size: Any, dtype: Any = backend.int64) -> Tensor:
    """Random integers in ``[low, high)``."""
    size = (size,) if isinstance(size, int) else tuple(size)
    return Tensor(backend.rng().integers(low, high, size, dtype=backend.as_dtype(dtype)))
