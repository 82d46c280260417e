"""Neural-network ops, fused where a hand-written step would fuse them.

Fusing softmax with cross-entropy is both faster and stabler: the gradient is simply
``softmax(x) - onehot(target)``, and log-probabilities never pass through ``log(softmax)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorgrad.ops.base import Op, call, normalize_axis, shape_of, sum_to
from tensorgrad.ops.elementwise import Sigmoid


class Softmax(Op):
    uses_inputs = False
    uses_output = True

    def __init__(self, axis: int = -1):
        self.axis = axis

    def forward(self, x):
        self.axis = normalize_axis(self.axis, len(shape_of(x)), self.name)
        shifted = x - x.max(axis=self.axis, keepdims=True) if x.size else x
        e = np.exp(shifted)
        return e / e.sum(axis=self.axis, keepdims=True)

    def backward(self, grad, out, x):
        return (out * (grad - (grad * out).sum(axis=self.axis, keepdims=True)),)


class LogSoftmax(Op):
    name = "log_softmax"
    uses_inputs = False
    uses_output = True

    def __init__(self, axis: int = -1):
        self.axis = axis

    def forward(self, x):
        self.axis = normalize_axis(self.axis, len(shape_of(x)), self.name)
        if not x.size:
            return x.copy()
        shifted = x - x.max(axis=self.axis, keepdims=True)
        return shifted - np.log(np.exp(shifted).sum(axis=self.axis, keepdims=True))

    def backward(self, grad, out, x):
        return (grad - np.exp(out) * grad.sum(axis=self.axis, keepdims=True),)


class Linear(Op):
    """``x @ weight.T + bias`` in one op, with PyTorch's (out_features, in_features) weight."""

    def forward(self, x, weight, bias=None):
        x_shape, w_shape = shape_of(x), shape_of(weight)
        if len(w_shape) != 2:
            raise ValueError(f"{self.name}: weight must be 2-D (out, in), got shape {w_shape}")
        if x_shape[-1:] != w_shape[1:]:
            raise ValueError(
                f"{self.name}: input of shape {x_shape} does not match weight of shape "
                f"{w_shape} (expected input (..., {w_shape[1]}))"
            )
        if bias is not None and shape_of(bias) != w_shape[:1]:
            raise ValueError(
                f"{self.name}: bias of shape {shape_of(bias)} does not match weight of shape "
                f"{w_shape} (expected ({w_shape[0]},))"
            )
        out = x @ weight.T
        if bias is not None:
            out += bias
        return out

    def backward(self, grad, out, x, weight, bias=None):
        needs = self.needs_input_grad
        features = shape_of(weight)
        flat_grad = grad.reshape(-1, features[0])
        dx = grad @ weight if needs[0] else None
        dw = flat_grad.T @ x.reshape(-1, features[1]) if needs[1] else None
        db = flat_grad.sum(axis=0) if len(needs) > 2 and needs[2] else None
        return dx, dw, db


class LinearRelu(Linear):
    """``relu(x @ weight.T + bias)`` in one op, as a hand-written step computes it: the ReLU
    runs in place on the fresh product, and backward masks the gradient (in place when the
    engine says it is free) before the linear VJP. ``nn.Sequential`` runs a ``Linear``
    followed by a ``ReLU`` as this op."""

    name = "linear_relu"
    uses_output = True  # the mask is ``out > 0``, the same as ``x @ weight.T + bias > 0``

    def forward(self, x, weight, bias=None):
        out = super().forward(x, weight, bias)
        return np.maximum(out, 0, out=out)

    def backward(self, grad, out, x, weight, bias=None):
        if self.grad_is_free:
            grad *= out > 0
        else:
            grad = grad * (out > 0)
        return super().backward(grad, out, x, weight, bias)


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
        if len(shape_of(logits)) != 2:
            raise ValueError(
                f"cross_entropy: logits must be 2-D (batch, classes), got shape {shape_of(logits)}"
            )
        n, c = shape_of(logits)
        if len(shape_of(target)) != 1 or len(target) != n:
            raise ValueError(
                f"cross_entropy: target must have shape ({n},) to match logits of shape "
                f"{shape_of(logits)}, got {shape_of(target)}"
            )
        if target.dtype.kind not in "iu":
            raise TypeError(
                f"cross_entropy: target must hold class indices (integers), got {target.dtype}"
            )
        if n and (target.min() < 0 or target.max() >= c):
            bad = int(target.max() if target.max() >= c else target.min())
            raise IndexError(f"cross_entropy: target class {bad} is out of range for {c} classes")
        logp = LogSoftmax(axis=1).forward(logits)
        self.saved = (logits, logp)  # for the backward on these very arrays
        if self.smoothing:
            losses = -(logp * self._target_weights((n, c), logp.dtype)).sum(axis=1)
        else:
            losses = -logp[np.arange(n), target]
        if self.reduction == "none":
            return losses
        total = losses.sum()
        return total / n if self.reduction == "mean" else total

    def backward(self, grad, out, logits):
        n, c = shape_of(logits)
        scale = grad.reshape(n, 1) if self.reduction == "none" else grad
        if self.reduction == "mean":
            scale = scale / n
        saved_logits, logp = self.saved
        if logits is not saved_logits:  # recording on Tensors: a differentiable log-softmax
            logp = call(LogSoftmax, logits, axis=1)
        probs = np.exp(logp)
        if not isinstance(probs, np.ndarray):
            return ((probs - self._target_weights((n, c), probs.dtype)) * scale,)
        probs[np.arange(n), self.target] -= 1 - self.smoothing  # softmax − target, in place
        if self.smoothing:
            probs -= self.smoothing / c
        probs *= scale
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
