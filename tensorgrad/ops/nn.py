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
        return _log_softmax(x, self.axis)

    def backward(self, grad, out, x):
        return (grad - np.exp(out) * grad.sum(axis=self.axis, keepdims=True),)


def _log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    """``x − logsumexp(x)`` along ``axis`` (non-negative), shifted by the maximum for stability.
    On arrays only: the reductions call the ufuncs directly, skipping NumPy's Python wrappers."""
    if not x.size:
        return x.copy()
    shifted = x - np.maximum.reduce(x, axis=axis, keepdims=True)
    shifted -= np.log(np.add.reduce(np.exp(shifted), axis=axis, keepdims=True))
    return shifted


class Linear(Op):
    """``x @ weight.T + bias`` in one op, with PyTorch's (out_features, in_features) weight."""

    def forward(self, x, weight, bias=None):
        x_shape, w_shape = x.shape, weight.shape
        if len(w_shape) != 2:
            raise ValueError(f"{self.name}: weight must be 2-D (out, in), got shape {w_shape}")
        if x_shape[-1:] != w_shape[1:]:
            raise ValueError(
                f"{self.name}: input of shape {x_shape} does not match weight of shape "
                f"{w_shape} (expected input (..., {w_shape[1]}))"
            )
        if bias is not None and bias.shape != w_shape[:1]:
            raise ValueError(
                f"{self.name}: bias of shape {bias.shape} does not match weight of shape "
                f"{w_shape} (expected ({w_shape[0]},))"
            )
        out = x @ weight.T
        if bias is not None:
            out += bias
        return out

    def backward(self, grad, out, x, weight, bias=None):
        needs = self.needs_input_grad
        dx = grad @ weight if needs[0] else None
        if grad.ndim != 2:  # (..., out) and (..., in): the batch axes flattened into one
            out_features, in_features = weight.shape
            grad, x = grad.reshape(-1, out_features), x.reshape(-1, in_features)
        dw = grad.T @ x if needs[1] else None
        db = grad.sum(axis=0) if bias is not None and needs[2] else None
        return dx, dw, db


class LinearRelu(Linear):
    """``relu(x @ weight.T + bias)`` in one op, as a hand-written step computes it: the ReLU
    runs in place on the fresh product, and backward masks the gradient (in place when the
    engine says it is free) before the linear VJP. ``nn.Sequential`` runs a ``Linear``
    followed by a ``ReLU`` as this op."""

    name = "linear_relu"
    uses_output = True  # the mask is ``out > 0``, the same as ``x @ weight.T + bias > 0``

    def forward(self, x, weight, bias=None):
        out = Linear.forward(self, x, weight, bias)
        return np.maximum(out, 0, out=out)

    def backward(self, grad, out, x, weight, bias=None):
        if self.grad_is_free:
            grad *= out > 0
        else:
            grad = grad * (out > 0)
        return Linear.backward(self, grad, out, x, weight, bias)


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
        shape = shape_of(logits)
        if len(shape) != 2:
            raise ValueError(
                f"cross_entropy: logits must be 2-D (batch, classes), got shape {shape}"
            )
        n, c = shape
        if shape_of(target) != (n,):
            raise ValueError(
                f"cross_entropy: target must have shape ({n},) to match logits of shape "
                f"{shape}, got {shape_of(target)}"
            )
        if target.dtype.kind not in "iu":
            raise TypeError(
                f"cross_entropy: target must hold class indices (integers), got {target.dtype}"
            )
        # one pass finds negatives too: seen as unsigned, they are larger than any class
        if n and target.view(_UNSIGNED[target.itemsize]).max() >= c:
            bad = int(target.max() if target.max() >= c else target.min())
            raise IndexError(f"cross_entropy: target class {bad} is out of range for {c} classes")
        logp = _log_softmax(logits, 1)
        self.saved = (logits, logp)  # for the backward on these very arrays
        if self.smoothing:
            losses = -np.add.reduce(logp * self._target_weights((n, c), logp.dtype), axis=1)
        else:
            losses = -logp[np.arange(n), target]
        if self.reduction == "none":
            return losses
        total = np.add.reduce(losses)
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
