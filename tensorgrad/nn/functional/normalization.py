"""Batch and layer normalisation, built on the ``normalize`` op (``tensorgrad.ops.norm``)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tensorgrad import backend, ops
from tensorgrad.core.engine import apply, as_tensor
from tensorgrad.core.math_methods import floating_kernel
from tensorgrad.core.tensor import Tensor
from tensorgrad.grad_mode import no_grad


def batch_norm(
    input: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Batch normalisation of (N, C, ...) input over every dimension but the channel one.

    In training (or without running statistics) the batch statistics are used, and running
    statistics, when given, are updated in place with ``momentum`` and the UNBIASED batch
    variance, as PyTorch does. Otherwise ``running_mean`` and ``running_var`` are used.
    """
    x = input if isinstance(input, Tensor) else as_tensor(input)
    if x.ndim < 2:
        raise ValueError(f"batch_norm: expected input of shape (N, C, ...), got {x.shape}")
    channels = x.shape[1]
    axes = (0, *range(2, x.ndim))
    shape = (channels,) + (1,) * (x.ndim - 2)  # broadcasts a (C,) vector against (N, C, ...)
    if training or running_mean is None or running_var is None:
        count = x._data.size // max(channels, 1)
        if count <= 1:
            raise ValueError(
                f"batch_norm: expected more than 1 value per channel when training, got input "
                f"of shape {x.shape}"
            )
        op = ops.Normalize(axes, eps)
        out = apply(op, x)
        if training and running_mean is not None and running_var is not None:
            mean, var, _ = op.saved
            with no_grad():
                unbiased = var.reshape(channels) * (count / (count - 1))
                running_mean.mul_(1.0 - momentum).add_(mean.reshape(channels) * momentum)
                running_var.mul_(1.0 - momentum).add_(unbiased * momentum)
    else:
        mean = running_mean._data.reshape(shape)
        inverse_std = 1.0 / np.sqrt(running_var._data.reshape(shape) + eps)
        out = (x - mean.astype(x.dtype)) * inverse_std.astype(x.dtype)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def layer_norm(
    input: Tensor,
    normalized_shape: int | Sequence[int],
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise each sample over its trailing ``normalized_shape`` dimensions, then scale
    and shift."""
    x = input if isinstance(input, Tensor) else as_tensor(input)
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if not shape:
        raise RuntimeError(
            "layer_norm: expected normalized_shape to be at least 1-dimensional, got []"
        )
    if len(shape) > x.ndim or x.shape[x.ndim - len(shape) :] != shape:
        raise backend.ShapeError(
            f"layer_norm: input of shape {x.shape} does not end with normalized_shape {shape}"
        )
    floating_kernel("layer_norm", x)
    out = apply(ops.Normalize(tuple(range(x.ndim - len(shape), x.ndim)), eps), x)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out
