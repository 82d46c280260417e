"""Losses. Each takes ``reduction`` ('mean', 'sum' or 'none'), and class-index targets as
int Tensors, arrays or lists. PyTorch's deprecated ``size_average``/``reduce`` arguments are
accepted and mapped to ``reduction`` as PyTorch maps them."""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorgrad import backend, ops
from tensorgrad.core.engine import apply, as_tensor
from tensorgrad.core.tensor import Tensor

_REDUCTIONS = ("mean", "sum", "none")


def _check_reduction(reduction: str, name: str) -> None:
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{name}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def _legacy(size_average: Any, reduce: Any, reduction: str) -> str:
    """PyTorch's mapping of the deprecated ``size_average``/``reduce`` to ``reduction``."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def _reduce(losses: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return losses.mean()
    if reduction == "sum":
        return losses.sum()
    return losses


def _indices(target: Any) -> np.ndarray:
    """Class indices as an array (from a Tensor, an array or a list)."""
    if isinstance(target, Tensor):
        return target._data
    return np.asarray(target)


def _unsupported_weight(name: str, weight: Any) -> None:
    if weight is not None:
        raise NotImplementedError(f"{name}: weight= is not supported yet (see docs/porting.md)")


def cross_entropy(
    input: Tensor,
    target: Any,
    weight: Tensor | None = None,
    size_average: Any = None,
    ignore_index: int = -100,
    reduce: Any = None,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """Softmax cross-entropy of logits against class indices, fused and stable.

    ``input`` is (N, C) with ``target`` (N,); also (C,) with a 0-d target, and (N, C, d1, ...)
    with target (N, d1, ...), where the class axis is axis 1 as in PyTorch.
    """
    _unsupported_weight("cross_entropy", weight)
    reduction = _legacy(size_average, reduce, reduction)
    input = input if isinstance(input, Tensor) else as_tensor(input)
    target = _indices(target)
    if target.dtype.kind in "iu" and target.size and (target == ignore_index).any():
        raise NotImplementedError("cross_entropy: ignore_index is not supported yet")
    ndim = input._data.ndim
    if ndim == 2:  # the usual case first; the op checks the arguments
        return apply(ops.CrossEntropy(target, reduction, label_smoothing), input)
    _check_reduction(reduction, "cross_entropy")
    if ndim == 1:
        if target.size != 1:
            raise ValueError(
                f"cross_entropy: for input of shape {input.shape} the target must be a single "
                f"class index, got shape {target.shape}"
            )
        loss = cross_entropy(
            input.reshape(1, -1), target.reshape(1), reduction=reduction,
            label_smoothing=label_smoothing,
        )  # fmt: skip
        return loss.reshape(()) if reduction == "none" else loss
    if ndim > 2:
        classes = input.shape[1]
        if target.shape != (input.shape[0], *input.shape[2:]):
            raise ValueError(
                f"cross_entropy: target must have shape {(input.shape[0], *input.shape[2:])} "
                f"for input of shape {input.shape}, got {target.shape}"
            )
        order = (0, *range(2, input.ndim), 1)
        flat = input.permute(order).reshape(-1, classes)
        loss = cross_entropy(
            flat, target.reshape(-1), reduction=reduction, label_smoothing=label_smoothing
        )
        return loss.reshape(target.shape) if reduction == "none" else loss
    return apply(ops.CrossEntropy(target, reduction, label_smoothing), input)


def nll_loss(
    input: Tensor,
    target: Any,
    weight: Tensor | None = None,
    size_average: Any = None,
    ignore_index: int = -100,
    reduce: Any = None,
    reduction: str = "mean",
) -> Tensor:
    """Negative log-likelihood of class indices given log-probabilities (N, C)."""
    _unsupported_weight("nll_loss", weight)
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction, "nll_loss")
    log_probs = input
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


def mse_loss(
    input: Tensor,
    target: Any,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
) -> Tensor:
    """Mean squared error. Shapes must match exactly: a silent broadcast of (N, 1) against (N,)
    is a classic bug, so it is an error here (PyTorch only warns)."""
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction, "mse_loss")
    input = input if isinstance(input, Tensor) else as_tensor(input)
    target_shape = np.shape(target._data if isinstance(target, Tensor) else target)
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
    weight: Tensor | None = None,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
    pos_weight: Tensor | None = None,
) -> Tensor:
    """Sigmoid and binary cross-entropy in one stable op, for targets in [0, 1]."""
    _unsupported_weight("binary_cross_entropy_with_logits", weight)
    _unsupported_weight("binary_cross_entropy_with_logits", pos_weight)
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction, "binary_cross_entropy_with_logits")
    input = input if isinstance(input, Tensor) else as_tensor(input)
    target_shape = np.shape(target._data if isinstance(target, Tensor) else target)
    if target_shape != input.shape:
        raise ValueError(
            f"binary_cross_entropy_with_logits: target size {target_shape} must be the same as "
            f"input size {input.shape}"
        )
    if not isinstance(target, Tensor):
        target = backend.as_array(target, input.dtype)
    losses = apply(ops.BinaryCrossEntropyWithLogits(), input, target)
    return _reduce(losses, reduction)
