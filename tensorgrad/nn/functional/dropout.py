"""Dropout: ``F.dropout``."""

from __future__ import annotations

import warnings

import numpy as np

from tensorgrad import array_backend
from tensorgrad.core.engine import as_tensor
from tensorgrad.core.tensor import Tensor
from tensorgrad.nn.functional._conv_args import tensor_of


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``
    (inverted dropout), so evaluation needs no rescaling; the identity when not training.
    Masks come from the global generator (``tg.manual_seed``)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: probability has to be between 0 and 1, but got {p}")
    x = input if isinstance(input, Tensor) else as_tensor(input)
    if not training or p == 0.0 or x.numel() == 0:
        return x
    _floating_mask("dropout", x)
    if p == 1.0:
        mask = np.zeros(x.shape, dtype=x.dtype)
    else:
        keep = array_backend.rng().random(x.shape, dtype=np.float32) >= p
        mask = keep.astype(x.dtype)
        mask *= 1.0 / (1.0 - p)
    return x.mul_(mask) if inplace else x * mask


def _floating_mask(name: str, x: Tensor) -> None:
    """The mask scales by 1 / (1 − p), a float: an integer or bool input with elements is
    PyTorch's RuntimeError (an empty one is returned as it is, before this check)."""
    if x.dtype.kind != "f":
        raise RuntimeError(
            f"{name}: result type float can't be cast to the desired output type {x.dtype} "
            "(the kept elements are scaled: a floating point input is needed)"
        )


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero whole channels with probability ``p`` (one draw per sample and channel of
    (N, C, H, W) input) and scale the rest by 1/(1 − p); the identity when not training.

    As in PyTorch, a 3-D input is taken as (N, C, L), with a warning (PyTorch plans to read it
    as unbatched (C, H, W) instead), and other shapes are warned about but accepted.
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout2d: probability p must be in [0, 1], got {p}")
    if inplace:
        raise NotImplementedError(
            "dropout2d: inplace=True is not supported in tensorgrad; use the returned tensor"
        )
    x = tensor_of(input)
    if training and x.numel() == 0:
        return x
    if x.ndim < 2:
        raise RuntimeError(
            f"dropout2d: Feature dropout requires at least 2 dimensions in the input, got "
            f"shape {x.shape}"
        )
    if x.ndim == 3:
        warnings.warn(
            "dropout2d: a 3-D input is taken as (N, C, L) and whole channels of it are zeroed "
            "(PyTorch's behaviour, which it plans to change to unbatched (C, H, W)); use a 4-D "
            "input to mean (N, C, H, W)",
            UserWarning,
            stacklevel=2,
        )
    elif x.ndim != 4:
        warnings.warn(
            f"dropout2d: received a {x.ndim}-D input; dropout2d is meant for 4-D (N, C, H, W) "
            "input (PyTorch deprecates other shapes)",
            UserWarning,
            stacklevel=2,
        )
    if not training or p == 0.0:
        return x
    _floating_mask("dropout2d", x)
    if p == 1.0:
        return x * 0.0
    shape = (*x.shape[:2], *(1,) * (x.ndim - 2))
    keep = array_backend.rng().random(shape, dtype=np.float32) >= p
    mask = keep.astype(x.dtype)
    mask *= 1.0 / (1.0 - p)
    return x * mask


# --------------------------------------------------------------------------- more dropout
# (channel dropout of 1-D input, alpha dropout)
def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero whole channels of (N, C, L) or (C, L) input with probability ``p`` and scale the
    rest by 1/(1 − p); the identity when not training."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    x = tensor_of(input)
    if x.ndim not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {x.ndim}D input. Note that "
            "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension"
        )
    if not training or p == 0.0 or x.numel() == 0:
        return x
    _floating_mask("dropout1d", x)
    shape = (*x.shape[:-1], 1)
    if p == 1.0:
        mask = np.zeros(shape, dtype=x.dtype)
    else:
        mask = (array_backend.rng().random(shape, dtype=np.float32) >= p).astype(x.dtype)
        mask *= 1.0 / (1.0 - p)
    return x.mul_(mask) if inplace else x * mask


#: SELU's ``scale · alpha``: the value a dropped unit takes, negated
_ALPHA_PRIME = 1.7580993408473766


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False):
    """Dropout that keeps SELU's zero mean and unit variance: dropped units are set to SELU's
    negative saturation value, then everything is scaled and shifted (PyTorch's formula)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    x = input if isinstance(input, Tensor) else as_tensor(input)
    if not training or p == 0.0 or x.numel() == 0:
        return x
    _floating_mask("alpha_dropout", x)
    if p == 1.0:
        return x.mul_(0.0) if inplace else x * 0.0
    keep = (array_backend.rng().random(x.shape, dtype=np.float32) >= p).astype(x.dtype)
    a = 1.0 / np.sqrt((_ALPHA_PRIME**2 * p + 1) * (1 - p))
    shift = ((keep - 1) * (_ALPHA_PRIME * a) + _ALPHA_PRIME * a * p).astype(x.dtype)
    scale = (keep * a).astype(x.dtype)
    return x.mul_(scale).add_(shift) if inplace else x * scale + shift
