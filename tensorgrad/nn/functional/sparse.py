"""Index lookups: ``F.one_hot`` and ``F.embedding`` (PyTorch lists them with the sparse
functions)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorgrad import array_backend
from tensorgrad.core import batching
from tensorgrad.core.engine import wrap
from tensorgrad.core.functions import where
from tensorgrad.core.tensor import Tensor
from tensorgrad.grad_mode import no_grad


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """An int64 tensor of shape ``(*tensor.shape, num_classes)``: 1 at each index, 0 elsewhere.

    ``num_classes=-1`` takes one more than the largest index. As in PyTorch, the result has
    no gradient, and negative indices, indices ``>= num_classes`` and an empty tensor without
    ``num_classes`` raise ``RuntimeError``. Any integer dtype is accepted (PyTorch: int64 only).
    """
    indices = tensor._data if isinstance(tensor, Tensor) else np.asarray(tensor)
    if indices.dtype.kind not in "iu":
        raise RuntimeError(
            f"one_hot is only applicable to index tensors (integers), got {indices.dtype}"
        )
    if num_classes == -1 and batching.levels_of(tensor):
        raise RuntimeError(
            "vmap: one_hot with num_classes=-1 infers its shape from the values, which differ "
            "from sample to sample; pass num_classes"
        )
    classes = _classes(indices, num_classes)
    encoded = indices[..., None] == np.arange(classes, dtype=indices.dtype)
    # (inside vmap the array holds every sample, batch axes first: so does the encoding)
    return batching.like(tensor, wrap(encoded.astype(array_backend.int64)))


def _classes(indices: np.ndarray, num_classes: Any) -> int:
    if indices.size == 0:
        if num_classes <= 0:
            raise RuntimeError("one_hot: can not infer total number of classes from empty tensor.")
        return int(num_classes)
    if indices.min() < 0:
        raise RuntimeError("one_hot: class values must be non-negative.")
    if num_classes == -1:
        return int(indices.max()) + 1
    if not indices.max() < num_classes:
        raise RuntimeError("one_hot: class values must be smaller than num_classes.")
    return int(num_classes)


def embedding(
    input: Tensor,
    weight: Tensor,
    padding_idx: int | None = None,
    max_norm: float | None = None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Tensor:
    """The rows of ``weight`` (num_embeddings, dim) at the integer ``input``'s indices:
    shape ``(*input.shape, dim)``. The row at ``padding_idx`` gets no gradient. With
    ``max_norm``, the rows looked up whose ``norm_type``-norm exceeds it are first scaled
    down to it, in place in ``weight``, as PyTorch does."""
    indices = input._data if isinstance(input, Tensor) else np.asarray(input)
    if indices.dtype.kind not in "iu":
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar "
            f"types: Long, Int; but got {indices.dtype} instead (while checking arguments for "
            "embedding)"
        )
    if scale_grad_by_freq or sparse:
        raise array_backend.UnsupportedError(
            "embedding: scale_grad_by_freq and sparse gradients are not supported in "
            "tensorgrad (see docs/porting.md)"
        )
    if weight.ndim != 2:
        raise RuntimeError(f"embedding: 'weight' must be 2-D, got shape {tuple(weight.shape)}")
    rows = weight.shape[0]
    if indices.size and (indices.min() < -rows or indices.max() >= rows):
        raise IndexError("embedding: index out of range in self")
    if max_norm is not None:
        _renorm(weight, np.unique(indices % rows), max_norm, norm_type)
    out = weight[indices]
    if padding_idx is not None:  # the same values; the padding row's gradient held back
        padding = batching.like(input, wrap(indices[..., None] == padding_idx % rows))
        out = where(padding, out.detach(), out)
    return out


def _renorm(weight: Tensor, rows: np.ndarray, max_norm: float, norm_type: float) -> None:
    """Scale the given rows of ``weight`` whose norm exceeds ``max_norm`` down to it."""
    with no_grad():
        data = weight._data
        norms = np.linalg.norm(data[rows], ord=norm_type, axis=1)
        over = norms > max_norm
        if over.any():
            scale = max_norm / (norms[over] + 1e-7)  # PyTorch's guard against 0
            weight[rows[over]] = weight[rows[over]] * weight.new_tensor(scale)[:, None]
