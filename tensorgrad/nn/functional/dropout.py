"""Dropout: ``F.dropout``."""

from __future__ import annotations

import numpy as np

from tensorgrad import backend
from tensorgrad.core.engine import as_tensor
from tensorgrad.core.tensor import Tensor


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``
    (inverted dropout), so evaluation needs no rescaling; the identity when not training.
    Masks come from the global generator (``tg.manual_seed``)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: probability has to be between 0 and 1, but got {p}")
    x = input if isinstance(input, Tensor) else as_tensor(input)
    if not training or p == 0.0:
        return x
    if p == 1.0:
        mask = np.zeros(x.shape, dtype=x.dtype)
    else:
        keep = backend.rng().random(x.shape, dtype=np.float32) >= p
        mask = keep.astype(x.dtype)
        mask *= 1.0 / (1.0 - p)
    return x.mul_(mask) if inplace else x * mask
