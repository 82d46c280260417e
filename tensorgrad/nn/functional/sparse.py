"""Index encodings: ``F.one_hot`` (PyTorch lists it with the sparse functions)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorgrad import backend
from tensorgrad.core.engine import wrap
from tensorgrad.core.tensor import Tensor


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
    classes = _classes(indices, num_classes)
    encoded = indices[..., None] == np.arange(classes, dtype=indices.dtype)
    return wrap(encoded.astype(backend.int64))


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
