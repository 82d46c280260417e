"""What the convolution and pooling functions share: argument checks and batching."""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorgrad.core.engine import as_tensor
from tensorgrad.core.tensor import Tensor

IntPair = int | tuple[int, int]


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
    raise ValueError(
        f"{op}: expected a {ndim - 1}-D (unbatched) or {ndim}-D {layout} input, got shape {x.shape}"
    )


def unbatched(out: Tensor, added: bool) -> Tensor:
    return out.reshape(out.shape[1:]) if added else out
