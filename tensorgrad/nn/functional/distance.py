"""Distances: ``F.cosine_similarity`` and ``F.pairwise_distance`` (and, at the top level,
``tg.cdist``), composed of existing ops."""

from __future__ import annotations

import numpy as np

from tensorgrad import ops
from tensorgrad.core.engine import as_tensor
from tensorgrad.core.functions import result_type
from tensorgrad.core.tensor import Tensor


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``Σ (x1 / ‖x1‖) · (x2 / ‖x2‖)`` along ``dim``, the two broadcast; each norm is at
    least ``eps`` (PyTorch's formula: the clamp changes the value, not the gradient path)."""
    a, b = as_tensor(x1), as_tensor(x2)
    try:
        shape = np.broadcast_shapes(a.shape, b.shape)
    except ValueError as exc:
        raise RuntimeError(
            f"cosine_similarity: shapes {a.shape} and {b.shape} do not broadcast"
        ) from exc
    common = result_type(a, b)  # PyTorch promotes first: float32 with bool is float32
    if common.kind != "f":
        raise RuntimeError(
            f"cosine_similarity: expected common dtype to be floating point, yet common dtype "
            f"is {common} (from {a.dtype} and {b.dtype})"
        )
    a, b = a.to(common), b.to(common)
    a = a if a.shape == shape else a.expand(shape)
    b = b if b.shape == shape else b.expand(shape)
    axis = ops.normalize_axis(dim, max(len(shape), 1), "cosine_similarity")

    def clamped_norm(t: Tensor) -> Tensor:
        norm = t.norm(2, axis, keepdim=True)
        value = norm.detach()
        lift = value.clamp_min(eps) - value  # 0 unless the norm is below eps
        return norm + lift

    return ((a / clamped_norm(a)) * (b / clamped_norm(b))).sum(axis)


def pairwise_distance(
    x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False
) -> Tensor:
    """``‖x1 − x2 + eps‖_p`` over the last dimension (PyTorch adds eps for the gradient at 0)."""
    a, b = as_tensor(x1), as_tensor(x2)
    difference = a - b + eps
    if not difference.ndim:
        return difference.abs() if not keepdim else difference.abs().reshape(1)
    return difference.norm(p, -1, keepdim)
