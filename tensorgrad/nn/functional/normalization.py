"""Batch and layer normalisation, built on the ``normalize`` op (``tensorgrad.ops.norm``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from tensorgrad import array_backend, ops
from tensorgrad.core import batching, engine
from tensorgrad.core.engine import apply, as_tensor
from tensorgrad.core.methods.common import floating_kernel
from tensorgrad.core.tensor import Tensor
from tensorgrad.grad_mode import no_grad

#: layer_norm with weight and bias as one op (``ops.LayerNorm``), not normalize, multiply and
#: add: a GPT normalises five times a step, and each recorded op costs (docs/performance.md)
FUSE_LAYER_NORM = True


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
        count = x.numel() // max(channels, 1)
        if count <= 1 and channels:  # no channels: nothing to normalise, as PyTorch
            raise ValueError(
                f"batch_norm: expected more than 1 value per channel when training, got input "
                f"of shape {x.shape}"
            )
        if (
            training
            and running_mean is not None
            and running_var is not None
            and set(batching.levels_of(x)) - set(batching.levels_of(running_mean))
        ):
            raise RuntimeError(
                "Batch norm got a batched tensor as input while the running_mean or "
                "running_var, which will be updated in place, were not batched.\nIf you are "
                "using a module and do not need eval mode, please set `track_running_stats` "
                "to be False. If you are using a prebuilt module and do not need eval mode, "
                "please see the functorch website for resources on how to patch your module "
                "to work with vmap"
            )
        floating_kernel("batch_norm", x)  # after the count check, as PyTorch orders them
        op = ops.Normalize(axes, eps)
        out = apply(op, x)
        if training and running_mean is not None and running_var is not None:
            if op.saved is None:  # inside vmap its rule ran a copy: each sample's statistics
                mean, var = x.detach().mean(axes), x.detach().var(axes, unbiased=False)
            else:
                mean, var, _ = op.saved
            with no_grad():  # (inside vmap, PyTorch's error: a shared buffer, batched stats)
                unbiased = var.reshape(channels) * (count / (count - 1))
                running_mean.mul_(1.0 - momentum).add_(mean.reshape(channels) * momentum)
                running_var.mul_(1.0 - momentum).add_(unbiased * momentum)
    elif batching.levels_of(running_mean) or batching.levels_of(running_var):
        # statistics per sample (vmap over the buffers): by tensor ops, which batch
        out = (x - running_mean.reshape(shape).to(x.dtype)) * (
            running_var.reshape(shape).to(x.dtype) + eps
        ).rsqrt()
    else:
        floating_kernel("batch_norm", x)
        mean = running_mean._data.reshape(shape)
        inverse_std = 1.0 / np.sqrt(running_var._data.reshape(shape) + eps)
        out = (x - mean.astype(x.dtype)) * inverse_std.astype(x.dtype)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def _normalized_shape(name: str, value: Any) -> tuple[int, ...]:
    """``normalized_shape`` as PyTorch's parser takes it: a tuple, list or ``Size`` of ints
    (0-d integer tensors too), never a bare int (the modules ``LayerNorm(3)`` and
    ``RMSNorm(3)`` take one; the functions do not)."""
    if not isinstance(value, (tuple, list)):
        raise TypeError(
            f"{name}(): argument 'normalized_shape' (position 2) must be tuple of ints, "
            f"not {type(value).__name__}"
        )
    shape = []
    for n in value:
        if isinstance(n, Tensor) and n.ndim == 0 and n.dtype.kind in "iu":
            n = n.item()
        if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
            raise TypeError(
                f"{name}(): argument 'normalized_shape' (position 2) must be tuple of ints, "
                f"but found element of type {type(n).__name__} at pos {len(shape)}"
            )
        shape.append(int(n))
    return tuple(shape)


def layer_norm(
    input: Tensor,
    normalized_shape: Sequence[int],
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise each sample over its trailing ``normalized_shape`` dimensions, then scale
    and shift."""
    x = floating_kernel("layer_norm", input if isinstance(input, Tensor) else as_tensor(input))
    shape = _normalized_shape("layer_norm", normalized_shape)
    if not shape:
        raise RuntimeError(
            "layer_norm: expected normalized_shape to be at least 1-dimensional, got []"
        )
    if len(shape) > x.ndim or x.shape[x.ndim - len(shape) :] != shape:
        raise array_backend.ShapeError(
            f"layer_norm: input of shape {x.shape} does not end with normalized_shape {shape}"
        )
    floating_kernel("layer_norm", x)
    if (
        FUSE_LAYER_NORM
        and not engine.state.vmapping  # (inside vmap: the composition, whose ops batch)
        and isinstance(weight, Tensor)
        and isinstance(bias, Tensor)
        and weight.shape == shape == bias.shape
        and weight.dtype == x.dtype == bias.dtype
    ):
        return apply(ops.LayerNorm(len(shape), eps), x, weight, bias)
    out = apply(ops.Normalize(tuple(range(x.ndim - len(shape), x.ndim)), eps), x)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


# --------------------------------------------------------------------------- more normalisations
# the ``normalize`` op over other axes, or compositions
def _affine(out: Tensor, weight: Tensor | None, bias: Tensor | None, shape: tuple) -> Tensor:
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def group_norm(
    input: Tensor,
    num_groups: int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise (N, C, ...) input over each group of ``C / num_groups`` channels (and all
    positions), then scale and shift per channel."""
    x = floating_kernel("group_norm", input if isinstance(input, Tensor) else as_tensor(input))
    if x.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {x.ndim}")
    n, channels = x.shape[0], x.shape[1]
    if num_groups > 0 and n * channels // num_groups * math.prod(x.shape[2:]) == 1:
        raise ValueError(  # PyTorch's check (before the divisibility's): one value per group
            f"group_norm: Expected more than 1 value per channel when training, got input "
            f"size {[n * channels // num_groups, num_groups, *x.shape[2:]]}"
        )
    if num_groups <= 0 or channels % num_groups:
        raise RuntimeError(
            f"Expected number of channels in input to be divisible by num_groups, but got "
            f"input of shape {list(x.shape)} and num_groups={num_groups}"
        )
    grouped = x.reshape(n, num_groups, -1)
    out = apply(ops.Normalize((2,), eps), grouped).reshape(x.shape)
    return _affine(out, weight, bias, (channels,) + (1,) * (x.ndim - 2))


def instance_norm(
    input: Tensor,
    running_mean: Tensor | None = None,
    running_var: Tensor | None = None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    use_input_stats: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise each channel of each sample of (N, C, ...) input over its positions. With
    running statistics, they are updated with the mean over the batch of the instance
    statistics (unbiased variance); ``use_input_stats=False`` uses them instead."""
    x = input if isinstance(input, Tensor) else as_tensor(input)
    if x.ndim < 3:
        raise ValueError(f"instance_norm: expected input of shape (N, C, ...), got {x.shape}")
    count = int(np.prod(x.shape[2:], dtype=np.int64))
    if use_input_stats and count == 1:  # PyTorch's order: this, then empty, then the dtype
        raise ValueError(
            f"Expected more than 1 spatial element when training, got input size {list(x.shape)}"
        )
    channels = x.shape[1]
    shape = (channels,) + (1,) * (x.ndim - 2)
    if x.size == 0:  # nothing to normalise: PyTorch returns it, of any dtype
        return _affine(x.clone(), weight, bias, shape) if x.dtype.kind == "f" else x.clone()
    floating_kernel("batch_norm", x)
    axes = tuple(range(2, x.ndim))
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise RuntimeError("Expected running_mean and running_var to be defined when "
                               "use_input_stats is false")  # fmt: skip
        mean = running_mean._data.reshape(shape).astype(x.dtype)
        inverse_std = (1.0 / np.sqrt(running_var._data.reshape(shape) + eps)).astype(x.dtype)
        return _affine((x - mean) * inverse_std, weight, bias, shape)
    op = ops.Normalize(axes, eps)
    out = apply(op, x)
    if running_mean is not None and running_var is not None:
        mean, var, _ = op.saved
        with no_grad():
            batch_mean = mean.reshape(x.shape[0], channels).mean(axis=0)
            unbiased = var.reshape(x.shape[0], channels).mean(axis=0) * (count / (count - 1))
            running_mean.mul_(1.0 - momentum).add_(batch_mean * momentum)
            running_var.mul_(1.0 - momentum).add_(unbiased * momentum)
    return _affine(out, weight, bias, shape)


def rms_norm(
    input: Tensor,
    normalized_shape: Sequence[int],
    weight: Tensor | None = None,
    eps: float | None = None,
) -> Tensor:
    """``x / sqrt(mean(x²) + eps)`` over the trailing ``normalized_shape`` dimensions, times
    ``weight``; ``eps`` defaults to the dtype's machine epsilon, as PyTorch's."""
    x = floating_kernel("rms_norm", input if isinstance(input, Tensor) else as_tensor(input))
    shape = _normalized_shape("rms_norm", normalized_shape)
    if not shape:
        raise RuntimeError(
            "rms_norm: expected normalized_shape to be at least 1-dimensional, got []"
        )
    if len(shape) > x.ndim or x.shape[x.ndim - len(shape) :] != shape:
        raise RuntimeError(
            f"rms_norm: input of shape {x.shape} does not end with normalized_shape {shape}"
        )
    if eps is None:
        eps = float(np.finfo(x.dtype).eps) if x.dtype.kind == "f" else 1.1920928955078125e-07
    dims = tuple(range(x.ndim - len(shape), x.ndim))
    out = x * ((x * x).mean(dims, keepdim=True) + eps).rsqrt()
    return out * weight if weight is not None else out


def local_response_norm(
    input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0
) -> Tensor:
    """Divide each element by ``(k + α · mean of x² over the ``size`` neighbouring channels)^β``
    (zero-padded at the ends, PyTorch's formula)."""
    x = input if isinstance(input, Tensor) else as_tensor(input)
    if x.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {x.ndim} dimensions)")
    if x.numel() == 0:
        return x
    if x.dtype.kind != "f" and x.dtype != np.int64:  # PyTorch's average pool's kernels
        raise NotImplementedError(
            f"local_response_norm: not implemented for {x.dtype} (floating point or int64 only)"
        )
    channels = x.shape[1]
    squares = (x * x).reshape(x.shape[0], channels, -1)
    before, after = size // 2, (size - 1) // 2
    padded = apply(ops.ConstantPad((0, 0, before, after)), squares)
    window = padded[:, 0:channels]
    for offset in range(1, size):
        window = window + padded[:, offset : offset + channels]
    if x.dtype.kind == "f":
        div = (window * (alpha / size) + k) ** beta
    else:  # PyTorch's integer average pool: the window's mean rounded down, then alpha
        div = ((window // size) * alpha + k) ** beta
    return x / div.reshape(x.shape)


def normalize(
    input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out: Any = None
) -> Tensor:
    """``x / max(‖x‖_p, eps)`` along ``dim``."""
    if out is not None:
        raise NotImplementedError("normalize: out= is not supported; use the returned tensor")
    x = input if isinstance(input, Tensor) else as_tensor(input)
    return x / x.norm(p, dim, keepdim=True).clamp_min(eps)
