"""What the convolution and pooling functions and layers share: PyTorch's argument checks
(ints or tuples, positive sizes, padding strings) and batching."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tensorgrad.array_backend import ShapeError
from tensorgrad.core.engine import as_tensor
from tensorgrad.core.tensor import Tensor
from tensorgrad.ops.windows import Pair

IntPair = int | tuple[int, int]


def int_tuple(value: Any, n: int, what: str, op: str) -> tuple[int, ...]:
    """An int, or a sequence of ``n`` ints, as a tuple of ``n`` ints (PyTorch's ``_pair``)."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return (int(value),) * n
    if isinstance(value, Sequence) and not isinstance(value, str):
        items = tuple(value)
        if len(items) == n and all(
            isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in items
        ):
            return tuple(int(v) for v in items)
    raise TypeError(
        f"{op}: {what} must be an int or a tuple of {n} ints, got {value!r}"
        if n > 1
        else f"{op}: {what} must be an int or a tuple of one int, got {value!r}"
    )


def positive(values: tuple[int, ...], what: str, op: str) -> tuple[int, ...]:
    if any(v <= 0 for v in values):
        raise ValueError(
            f"{op}: {what} must be positive, got {values if len(values) > 1 else values[0]}"
        )
    return values


def conv_padding(
    padding: Any,
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    dilation: tuple[int, ...],
    op: str,
) -> tuple[Pair, ...]:
    """Padding per side for each spatial axis, from an int, a tuple, ``'valid'`` or ``'same'``.

    ``'same'`` keeps the size: it pads ``dilation · (kernel − 1)`` in all, half of it (rounded
    down) before and the rest after, as PyTorch does; it needs stride 1.
    """
    n = len(kernel)
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0),) * n
        if padding == "same":
            if any(s != 1 for s in stride):
                raise ValueError(f"{op}: padding='same' is not supported for strided convolutions")
            totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
            return tuple((t // 2, t - t // 2) for t in totals)
        raise ValueError(f"{op}: invalid padding string {padding!r}; use 'valid', 'same' or ints")
    pads = int_tuple(padding, n, "padding", op)
    if any(p < 0 for p in pads):
        raise ValueError(f"{op}: negative padding is not supported, got {padding!r}")
    return tuple((p, p) for p in pads)


def tensor_of(x: Any) -> Tensor:
    return x if isinstance(x, Tensor) else as_tensor(x)


def groups_of(groups: Any, op: str) -> int:
    if not isinstance(groups, (int, np.integer)) or isinstance(groups, bool):
        raise TypeError(f"{op}: groups must be an int, got {groups!r}")
    if groups < 1:
        raise ValueError(f"{op}: groups must be a positive integer, got {groups}")
    return int(groups)


def non_negative(values: tuple[int, ...], what: str, op: str) -> tuple[int, ...]:
    if any(v < 0 for v in values):
        raise ValueError(f"{op}: {what} must be non-negative, got {values}")
    return values


def batched(x: Tensor, ndim: int, op: str, layout: str) -> tuple[Tensor, bool]:
    """``x`` with a batch axis (added when it has ``ndim - 1`` dimensions), and whether one
    was added."""
    if x.ndim == ndim:
        return x, False
    if x.ndim == ndim - 1:
        return x.reshape((1, *x.shape)), True
    raise ShapeError(  # a RuntimeError too, as PyTorch's
        f"{op}: expected a {ndim - 1}-D (unbatched) or {ndim}-D {layout} input, got shape {x.shape}"
    )


def unbatched(out: Tensor, added: bool) -> Tensor:
    return out.reshape(out.shape[1:]) if added else out
