"""Losses as fused ops.

Fusing softmax with cross-entropy is both faster and stabler: the gradient is simply
``softmax(x) - onehot(target)``, and log-probabilities never pass through ``log(softmax)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorgrad.ops.activation import LogSoftmax, Sigmoid, _log_softmax
from tensorgrad.ops.base import Op, call, shape_of, sum_to

_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


class CrossEntropy(Op):
    """Softmax cross-entropy of logits (N, C) against class indices (N,), fused and stable.

    ``reduction`` is "mean", "sum" or "none"; with ``label_smoothing`` ε the target puts
    1 − ε on the class and ε/C on every class, as in PyTorch.
    """

    name = "cross_entropy"

    def __init__(self, target: np.ndarray, reduction: str = "mean", label_smoothing: float = 0.0):
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(
                f"cross_entropy: reduction must be 'mean', 'sum' or 'none', got {reduction!r}"
            )
        if not 0.0 <= label_smoothing <= 1.0:
            raise ValueError(
                f"cross_entropy: label_smoothing must be in [0, 1], got {label_smoothing}"
            )
        self.target, self.reduction, self.smoothing = target, reduction, label_smoothing

    def _target_weights(self, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        """The target distribution: one-hot, smoothed by ε."""
        n, c = shape
        weights = np.full(shape, self.smoothing / c, dtype=dtype)
        weights[np.arange(n), self.target] += 1 - self.smoothing
        return weights

    def forward(self, logits):
        target = self.target
        if logits.ndim != 2:
            raise ValueError(
                f"cross_entropy: logits must be 2-D (batch, classes), got shape {logits.shape}"
            )
        if logits.dtype.kind not in "fO":  # object: the scalar engine's replay
            raise RuntimeError(
                f"cross_entropy: logits must be floating point, got {logits.dtype} "
                "(convert them with .float())"
            )
        n, c = logits.shape
        if shape_of(target) != (n,):
            raise ValueError(
                f"cross_entropy: target must have shape ({n},) to match logits of shape "
                f"{logits.shape}, got {shape_of(target)}"
            )
        if target.dtype.kind not in "iu":
            raise TypeError(
                f"cross_entropy: target must hold class indices (integers), got {target.dtype}"
            )
        # one pass finds negatives too: seen as unsigned, they are larger than any class
        if n and np.maximum.reduce(target.view(_UNSIGNED[target.itemsize])) >= c:
            bad = int(target.max() if target.max() >= c else target.min())
            raise IndexError(f"cross_entropy: target class {bad} is out of range for {c} classes")
        logp = _log_softmax(logits, 1)
        rows = np.arange(n)
        self.saved = (logits, logp, rows)  # for the backward on these very arrays
        if self.smoothing:
            picked = np.add.reduce(logp * self._target_weights((n, c), logp.dtype), axis=1)
        else:
            picked = logp[rows, target]  # each sample's log-probability of its class
        if self.reduction == "none":
            return -picked
        total = -np.add.reduce(picked)  # negated once, after the sum
        if self.reduction == "sum":
            return total
        return total / n if n else np.full((), np.nan, logp.dtype)  # the mean of nothing

    def backward(self, grad, out, logits):
        saved_logits, logp, rows = self.saved
        n, c = logp.shape
        if logits is not saved_logits:  # recording on Tensors: a differentiable log-softmax
            probs = np.exp(call(LogSoftmax, logits, axis=1))
            scale = grad.reshape(n, 1) if self.reduction == "none" else grad
            scale = scale / max(n, 1) if self.reduction == "mean" else scale
            return ((probs - self._target_weights((n, c), probs.dtype)) * scale,)
        probs = np.exp(logp)
        probs[rows, self.target] -= 1 - self.smoothing  # softmax − target, in place
        if self.smoothing:
            probs -= self.smoothing / c
        if self.reduction == "none":
            probs *= grad.reshape(n, 1)
        elif n:  # a 0-d gradient: as a Python number, the cheapest operand
            probs *= float(grad) / n if self.reduction == "mean" else float(grad)
        return (probs,)


class BinaryCrossEntropyWithLogits(Op):
    """Elementwise ``-[y log σ(x) + (1 − y) log(1 − σ(x))]``, stable for any logit."""

    name = "binary_cross_entropy_with_logits"

    def forward(self, x, y):
        return np.maximum(x, 0) - x * y + np.log1p(np.exp(-np.abs(x)))

    def backward(self, grad, out, x, y):
        nx, ny = self.needs_input_grad
        return (
            sum_to(grad * (call(Sigmoid, x) - y), shape_of(x)) if nx else None,
            sum_to(-grad * x, shape_of(y)) if ny else None,
        )
