"""Stateless functions behind the layers and losses: ``import tensorgrad.nn.functional as F``.

Losses take ``reduction`` ('mean', 'sum' or 'none') and class-index targets as int Tensors,
arrays or lists. The normalisation layers share one fused op, :class:`Normalize`, whose VJP
is written out by hand (faster than composing eight elementwise ops, and tested against a
directional derivative).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tensorgrad import backend, ops
from tensorgrad.grad_mode import no_grad
from tensorgrad.tensor import Tensor, _apply, as_tensor

_REDUCTIONS = ("mean", "sum", "none")


def _check_reduction(reduction: str, name: str) -> None:
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{name}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def _reduce(losses: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return losses.mean()
    if reduction == "sum":
        return losses.sum()
    return losses


def _indices(target: Any) -> np.ndarray:
    """Class indices as an array (from a Tensor, an array or a list)."""
    if isinstance(target, Tensor):
        return target.data
    return np.asarray(target)


# --------------------------------------------------------------------- activations
def relu(x: Tensor) -> Tensor:
    return as_tensor(x).relu()


def leaky_relu(x: Tensor, negative_slope: float = 0.01) -> Tensor:
    return as_tensor(x).leaky_relu(negative_slope)


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    return as_tensor(x).gelu(approximate)


def tanh(x: Tensor) -> Tensor:
    return as_tensor(x).tanh()


def sigmoid(x: Tensor) -> Tensor:
    return as_tensor(x).sigmoid()


def softmax(x: Tensor, dim: int = -1) -> Tensor:
    return as_tensor(x).softmax(dim)


def log_softmax(x: Tensor, dim: int = -1) -> Tensor:
    return as_tensor(x).log_softmax(dim)


# --------------------------------------------------------------------- layers
def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``x @ weight.T + bias`` as one fused op; ``weight`` has shape (out_features, in_features)."""
    x = x if isinstance(x, Tensor) else as_tensor(x)
    weight = as_tensor(weight)
    if bias is None:
        return _apply(ops.Linear(), x, weight)
    return _apply(ops.Linear(), x, weight, as_tensor(bias))


def dropout(x: Tensor, p: float = 0.5, training: bool = True) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``
    (inverted dropout), so evaluation needs no rescaling; the identity when not training."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: probability p must be in [0, 1], got {p}")
    x = x if isinstance(x, Tensor) else as_tensor(x)
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return x * 0.0
    keep = backend.rng().random(x.shape, dtype=np.float32) >= p
    mask = keep.astype(x.dtype)
    mask *= 1.0 / (1.0 - p)
    return x * mask


class Normalize(ops.Op):
    """``(x − mean) / sqrt(var + eps)`` over ``axes``, with the biased variance: the core of
    batch and layer normalisation (the affine part is ordinary multiply and add).

    With x̂ the output and σ⁻¹ = 1 / sqrt(var + eps), the VJP is
    ``σ⁻¹ · (g − mean(g) − x̂ · mean(g · x̂))``, means over ``axes``. The forward keeps the
    batch ``mean`` and ``var`` (for running statistics) and σ⁻¹ (for the backward).
    """

    name = "normalize"
    uses_output = True

    def __init__(self, axes: tuple[int, ...], eps: float):
        self.axes, self.eps = axes, eps

    def _inverse_std(self, x: Any) -> Any:
        centered = x - x.mean(axis=self.axes, keepdims=True)
        return 1.0 / np.sqrt((centered * centered).mean(axis=self.axes, keepdims=True) + self.eps)

    def forward(self, x):
        self.mean = x.mean(axis=self.axes, keepdims=True)
        centered = x - self.mean
        self.var = (centered * centered).mean(axis=self.axes, keepdims=True)
        self.inverse_std = 1.0 / np.sqrt(self.var + self.eps)
        centered *= self.inverse_std
        return centered

    def backward(self, grad, out, x):
        # On arrays, reuse σ⁻¹ from the forward; on Tensors (create_graph) recompute it from
        # x so that the second derivative sees its dependence on x.
        inverse_std = self.inverse_std if isinstance(x, np.ndarray) else self._inverse_std(x)
        mean_grad = grad.mean(axis=self.axes, keepdims=True)
        mean_grad_out = (grad * out).mean(axis=self.axes, keepdims=True)
        return (inverse_std * (grad - mean_grad - out * mean_grad_out),)


def _channel_shape(x: Tensor, num_features: int) -> tuple[int, ...]:
    """Shape that broadcasts a per-channel (C,) vector against (N, C) or (N, C, L)."""
    return (num_features,) if x.ndim == 2 else (num_features, 1)


def batch_norm(
    x: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Batch normalisation of (N, C) or (N, C, L) input over every axis but the channel axis.

    In training (or without running statistics) the batch statistics are used, and running
    statistics, when given, are updated in place with ``momentum`` and the UNBIASED batch
    variance, as PyTorch does. Otherwise ``running_mean`` and ``running_var`` are used.
    """
    x = x if isinstance(x, Tensor) else as_tensor(x)
    if x.ndim not in (2, 3):
        raise ValueError(f"batch_norm: expected input of shape (N, C) or (N, C, L), got {x.shape}")
    channels = x.shape[1]
    axes = (0,) if x.ndim == 2 else (0, 2)
    shape = _channel_shape(x, channels)
    use_batch_stats = training or running_mean is None or running_var is None
    if use_batch_stats:
        count = x.size // max(channels, 1)
        if count <= 1:
            raise ValueError(
                f"batch_norm: expected more than 1 value per channel when training, got input "
                f"of shape {x.shape}"
            )
        op = Normalize(axes, eps)
        out = _apply(op, x)
        if training and running_mean is not None and running_var is not None:
            with no_grad():
                unbiased = op.var.reshape(channels) * (count / (count - 1))
                running_mean.mul_(1.0 - momentum).add_(op.mean.reshape(channels) * momentum)
                running_var.mul_(1.0 - momentum).add_(unbiased * momentum)
    else:
        mean = running_mean.data.reshape(shape)
        inverse_std = 1.0 / np.sqrt(running_var.data.reshape(shape) + eps)
        out = (x - mean.astype(x.dtype)) * inverse_std.astype(x.dtype)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def layer_norm(
    x: Tensor,
    normalized_shape: int | Sequence[int],
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise each sample over its trailing ``normalized_shape`` axes, then scale, shift."""
    x = x if isinstance(x, Tensor) else as_tensor(x)
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if len(shape) > x.ndim or x.shape[x.ndim - len(shape) :] != shape:
        raise ValueError(
            f"layer_norm: input of shape {x.shape} does not end with normalized_shape {shape}"
        )
    out = _apply(Normalize(tuple(range(x.ndim - len(shape), x.ndim)), eps), x)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


# --------------------------------------------------------------------- losses
def cross_entropy(
    input: Tensor,
    target: Any,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """Softmax cross-entropy of logits against class indices, fused and stable.

    ``input`` is (N, C) with ``target`` (N,); also (C,) with a 0-d target, and (N, C, d1, ...)
    with target (N, d1, ...), where the class axis is axis 1 as in PyTorch.
    """
    input = input if isinstance(input, Tensor) else as_tensor(input)
    target = _indices(target)
    ndim = input._data.ndim
    if ndim == 2:  # the usual case first; the op checks the arguments
        return _apply(ops.CrossEntropy(target, reduction, label_smoothing), input)
    _check_reduction(reduction, "cross_entropy")
    if ndim == 1:
        if target.size != 1:
            raise ValueError(
                f"cross_entropy: for input of shape {input.shape} the target must be a single "
                f"class index, got shape {target.shape}"
            )
        loss = cross_entropy(input.reshape(1, -1), target.reshape(1), reduction, label_smoothing)
        return loss.reshape(()) if reduction == "none" else loss
    if ndim > 2:
        classes = input.shape[1]
        if target.shape != (input.shape[0], *input.shape[2:]):
            raise ValueError(
                f"cross_entropy: target must have shape {(input.shape[0], *input.shape[2:])} "
                f"for input of shape {input.shape}, got {target.shape}"
            )
        order = (0, *range(2, input.ndim), 1)
        flat = input.transpose(order).reshape(-1, classes)
        loss = cross_entropy(flat, target.reshape(-1), reduction, label_smoothing)
        return loss.reshape(target.shape) if reduction == "none" else loss
    return _apply(ops.CrossEntropy(target, reduction, label_smoothing), input)


def nll_loss(log_probs: Tensor, target: Any, reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of class indices given log-probabilities (N, C)."""
    _check_reduction(reduction, "nll_loss")
    log_probs = log_probs if isinstance(log_probs, Tensor) else as_tensor(log_probs)
    target = _indices(target)
    if log_probs.ndim != 2:
        raise ValueError(
            f"nll_loss: input must be 2-D (batch, classes), got shape {log_probs.shape}"
        )
    n, classes = log_probs.shape
    if target.shape != (n,):
        raise ValueError(f"nll_loss: target must have shape ({n},), got {target.shape}")
    if target.dtype.kind not in "iu":
        raise TypeError(f"nll_loss: target must hold class indices (integers), got {target.dtype}")
    if n and (target.min() < 0 or target.max() >= classes):
        bad = int(target.min() if target.min() < 0 else target.max())
        raise IndexError(f"nll_loss: target class {bad} is out of range for {classes} classes")
    return _reduce(-log_probs[np.arange(n), target], reduction)


def mse_loss(input: Tensor, target: Any, reduction: str = "mean") -> Tensor:
    """Mean squared error. Shapes must match exactly: a silent broadcast of (N, 1) against (N,)
    is a classic bug, so it is an error here (PyTorch only warns)."""
    _check_reduction(reduction, "mse_loss")
    input = input if isinstance(input, Tensor) else as_tensor(input)
    target_shape = np.shape(target.data if isinstance(target, Tensor) else target)
    if target_shape != input.shape:
        raise ValueError(
            f"mse_loss: input of shape {input.shape} and target of shape {target_shape} differ"
        )
    if not isinstance(target, Tensor):
        target = backend.as_array(target, input.dtype)
    diff = input - target
    return _reduce(diff * diff, reduction)


def binary_cross_entropy_with_logits(
    input: Tensor,
    target: Any,
    reduction: str = "mean",
) -> Tensor:
    """Sigmoid and binary cross-entropy in one stable op, for targets in [0, 1]."""
    _check_reduction(reduction, "binary_cross_entropy_with_logits")
    input = input if isinstance(input, Tensor) else as_tensor(input)
    target_shape = np.shape(target.data if isinstance(target, Tensor) else target)
    if target_shape != input.shape:
        raise ValueError(
            f"binary_cross_entropy_with_logits: target size {target_shape} must be the same as "
            f"input size {input.shape}"
        )
    if not isinstance(target, Tensor):
        target = backend.as_array(target, input.dtype)
    losses = _apply(ops.BinaryCrossEntropyWithLogits(), input, target)
    return _reduce(losses, reduction)
