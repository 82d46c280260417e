"""Losses as fused ops.

Fusing softmax with cross-entropy is both faster and stabler: the gradient is simply
``softmax(x) - onehot(target)``, and log-probabilities never pass through ``log(softmax)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorgrad import _jit
from tensorgrad.ops.activation import LogSoftmax, Sigmoid, _log_softmax
from tensorgrad.ops.base import Op, add_tangents, call, shape_of, sum_to
from tensorgrad.ops.sums import row_sums

_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
#: binary cross-entropy's floor for p(1 − p) in the gradient: PyTorch's 1e-12, a float32
_EPSILON = float(np.float32(1e-12))


class CrossEntropy(Op):
    """Softmax cross-entropy of logits (N, C) against class indices (N,), fused and stable.

    ``reduction`` is "mean", "sum" or "none"; with ``label_smoothing`` ε the target puts
    1 − ε on the class and ε/C on every class, as in PyTorch. ``weight`` (C,) scales each
    class's terms, and samples whose target is ``ignore_index`` count for nothing; "mean" then
    divides by the summed weight of the counted samples' classes (PyTorch's normalisation).
    """

    name = "cross_entropy"
    batching = "cross_entropy"

    def __init__(
        self,
        target: np.ndarray,
        reduction: str = "mean",
        label_smoothing: float = 0.0,
        weight: np.ndarray | None = None,
        ignore_index: int = -100,
    ):
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(
                f"cross_entropy: reduction must be 'mean', 'sum' or 'none', got {reduction!r}"
            )
        if not 0.0 <= label_smoothing <= 1.0:
            raise RuntimeError(
                "cross_entropy: label_smoothing must be between 0.0 and 1.0. Got: "
                f"{label_smoothing}"
            )
        self.target, self.reduction, self.smoothing = target, reduction, label_smoothing
        self.weight, self.ignore_index = weight, ignore_index

    def _target_weights(self, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        """The target distribution: one-hot, smoothed by ε."""
        n, c = shape
        weights = np.full(shape, self.smoothing / c, dtype=dtype)
        weights[np.arange(n), self.target] += 1 - self.smoothing
        return weights

    def _kept(self, c: int) -> np.ndarray | None:
        """Which samples count (those whose target is not ``ignore_index``), or None when all
        do; raises for a counted target that is not a class."""
        target, n = self.target, len(self.target)
        # one pass finds negatives too: seen as unsigned, they are larger than any class
        in_range = not n or np.maximum.reduce(target.view(_UNSIGNED[target.itemsize])) < c
        if in_range and not 0 <= self.ignore_index < c:
            return None  # the usual case: nothing to ignore, nothing to check further
        kept = target != self.ignore_index
        counted = target[kept]
        if counted.size and (counted.min() < 0 or counted.max() >= c):
            bad = int(counted.max() if counted.max() >= c else counted.min())
            raise IndexError(f"cross_entropy: target class {bad} is out of range for {c} classes")
        return None if kept.all() else kept

    def _weighted_targets(self, kept: np.ndarray | None, shape: tuple, dtype: Any):
        """The target distribution T (loss_i = −Σ_j T_ij log p_ij) with class weights and
        ignored samples, and the "mean" divisor: the summed weight of the counted targets."""
        n, c = shape
        rows = np.arange(n)
        target = self.target if kept is None else np.where(kept, self.target, 0)
        weight = np.ones(c, dtype=dtype) if self.weight is None else self.weight.astype(dtype)
        targets = np.empty(shape, dtype=dtype)
        targets[...] = weight * (self.smoothing / c)  # PyTorch smooths with each class's weight
        targets[rows, target] += (1 - self.smoothing) * weight[target]
        sample_weights = weight[target]
        if kept is not None:
            targets[~kept] = 0
            sample_weights = sample_weights * kept
        return targets, np.add.reduce(sample_weights)

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
        if target.dtype.kind not in "iu":
            raise RuntimeError(
                "cross_entropy: expected target dtype to be Long or Byte (class indices), but "
                f"got {target.dtype}"
            )
        if len(shape_of(target)) != 1:
            raise RuntimeError(
                "cross_entropy: 0D or 1D target tensor expected, multi-target not supported "
                f"(logits of shape {logits.shape}, target of shape {shape_of(target)})"
            )
        if shape_of(target) != (n,):
            raise ValueError(
                f"cross_entropy: Expected input batch_size ({n}) to match target batch_size "
                f"({shape_of(target)[0] if shape_of(target) else 1}): logits of shape "
                f"{logits.shape}, target of shape {shape_of(target)}"
            )
        if self.weight is not None and shape_of(self.weight) != (c,):
            raise RuntimeError(
                f"cross_entropy: weight tensor should be defined either for all {c} classes or "
                f"no classes but got weight tensor of shape: {shape_of(self.weight)}"
            )
        kept = self._kept(c)
        if self.weight is not None or kept is not None:
            return self._forward_weighted(logits, _log_softmax(logits, 1), kept)
        rows = np.arange(n)
        fast = None if self.smoothing else _target_log_probs(logits, target, rows)
        if fast is not None:  # the lines below without the log-softmax matrix (tensorgrad/_jit)
            picked, exps, sums = fast
            logp = None
        else:
            logp, exps, sums = _log_softmax_rows(logits)
            if self.smoothing:
                picked = np.add.reduce(logp * self._target_weights((n, c), logp.dtype), axis=1)
            else:
                picked = logp[rows, target]  # each sample's log-probability of its class
        self.saved = (logits, logp, rows, exps, sums)  # for the backward on these very arrays
        if self.reduction == "none":
            return -picked
        total = -np.add.reduce(picked)  # negated once, after the sum
        if self.reduction == "sum":
            return total
        return total / n if n else np.full((), np.nan, logits.dtype)  # the mean of nothing

    def _forward_weighted(self, logits, logp, kept):
        """The forward with class weights or ignored samples, through the target matrix T."""
        targets, divisor = self._weighted_targets(kept, logp.shape, logp.dtype)
        self.saved = (logits, logp, targets, divisor)
        losses = 0.0 - np.add.reduce(logp * targets, axis=1)  # an ignored sample: +0, not -0
        if self.reduction == "none":
            return losses
        total = np.add.reduce(losses)
        if self.reduction == "sum":
            return total
        with np.errstate(invalid="ignore", divide="ignore"):  # nothing counted: NaN, as PyTorch
            return total / divisor if divisor else np.full((), np.nan, logp.dtype)

    def backward(self, grad, out, logits):
        if len(self.saved) == 4:
            return self._backward_weighted(grad, logits)
        saved_logits, logp, rows, exps, sums = self.saved
        n, c = saved_logits.shape
        if logits is not saved_logits:  # recording on Tensors: a differentiable log-softmax
            probs = np.exp(call(LogSoftmax, logits, axis=1))
            scale = grad.reshape(n, 1) if self.reduction == "none" else grad
            scale = scale / max(n, 1) if self.reduction == "mean" else scale
            return ((probs - self._target_weights((n, c), probs.dtype)) * scale,)
        if _jit.ENABLED and exps is not None and self.reduction != "none" and n:
            scale = float(grad) / n if self.reduction == "mean" else float(grad)
            fused = _jit.run(
                "cross_entropy_backward", exps, sums, self.target, self.smoothing, scale
            )
            if fused is not None:  # the lines below in one loop (tensorgrad/_jit)
                return (fused,)
        probs = np.exp(logp) if exps is None else exps / sums  # (a division, not another exp)
        probs[rows, self.target] -= 1 - self.smoothing  # softmax − target, in place
        if self.smoothing:
            probs -= self.smoothing / c
        if self.reduction == "none":
            probs *= grad.reshape(n, 1)
        elif n:  # a 0-d gradient: as a Python number, the cheapest operand
            probs *= float(grad) / n if self.reduction == "mean" else float(grad)
        return (probs,)

    def _backward_weighted(self, grad, logits):
        """d loss_i / d x_ij = p_ij Σ_k T_ik − T_ij, scaled by the upstream gradient."""
        saved_logits, logp, targets, divisor = self.saved
        n = logp.shape[0]
        recording = logits is not saved_logits  # on Tensors: a differentiable log-softmax
        probs = np.exp(call(LogSoftmax, logits, axis=1) if recording else logp)
        result = probs * np.add.reduce(targets, axis=1, keepdims=True) - targets
        if self.reduction == "none":
            return (result * grad.reshape(n, 1),)
        scale = grad / divisor if self.reduction == "mean" and divisor else grad
        return (result * scale,)

    def jvp(self, tangents, out, logits):
        """Each sample's loss depends on its own row of logits only, so the VJP of ones gives
        every row's gradient G, and J·t sums G·t per row (then over the batch, as forward)."""
        per_sample = self.reduction == "none"
        ones = np.ones(out.shape, out.dtype)
        (rows,) = self.backward(ones, out, logits)
        t = tangents[0]
        return (rows * t).sum(axis=1 if per_sample else None)  # (t may be a Tensor)


def _target_log_probs(logits: np.ndarray, target: np.ndarray, rows: np.ndarray) -> Any:
    """``(log p[i, target_i] of each row, exps, sums)`` by the JIT's kernel, or None where
    it does not run (then :func:`_log_softmax_rows`). Why: with float32 logits and no label
    smoothing, the exponentials by the JIT's float32 exp (``_jit.FAST_EXP``) and their row
    sums take one pass, and only the targets' log-probabilities are formed, not the whole
    log-softmax matrix (the loss reads no other): a language model's vocabulary-sized rows
    made NumPy's exp a tenth of its step."""
    if not (
        _jit.ENABLED
        and _jit.FAST_EXP
        and type(logits) is np.ndarray
        and logits.dtype == np.float32
        and logits.flags.c_contiguous
        and logits.size
    ):
        return None
    with np.errstate(invalid="ignore"):  # a row all -inf: NaN, as PyTorch's
        maxima = np.maximum.reduce(logits, axis=1, keepdims=True)
        found = _jit.run("softmax_exps_float32", logits, maxima)
        if found is None:
            return None
        exps, sums = found
        picked = (logits[rows, target] - maxima[:, 0]) - np.log(sums[:, 0])
    return picked, exps, sums


def _log_softmax_rows(logits: np.ndarray) -> tuple[np.ndarray, Any, Any]:
    """The log-softmax of each row of float ``logits`` (n, c), and the exponentials of the
    shifted logits with their row sums (n, 1), which make the softmax for backward with a
    division instead of a second exp (NumPy's float32 exp costs some twenty passes of a
    multiplication). None for both where the plain :func:`_log_softmax` serves (an empty
    matrix, objects)."""
    if not logits.size or logits.dtype.kind != "f":
        return _log_softmax(logits, 1), None, None
    with np.errstate(invalid="ignore"):  # a row all -inf: NaN, as PyTorch's
        maxima = np.maximum.reduce(logits, axis=1, keepdims=True)
        # (C order only: BLAS sums the rows of another layout with another kernel)
        fused = (
            _jit.ENABLED
            and logits.flags.c_contiguous
            and _jit.run("log_softmax_rows", logits, maxima, row_sums)
        )
        if fused:  # the broadcast subtractions below as loops (tensorgrad/_jit)
            return fused
        shifted = logits - maxima
        exps = np.exp(shifted)
        sums = row_sums(exps)[:, None]
        shifted -= np.log(sums)
    return shifted, exps, sums


class BinaryCrossEntropy(Op):
    """Elementwise ``−[y log p + (1 − y) log(1 − p)]`` of probabilities ``p`` and targets
    ``y``, with each log clamped at −100 as PyTorch does (``p`` of exactly 0 or 1 gives a finite
    loss). The gradients are PyTorch's: ``(p − y) / max(p(1 − p), ε ≈ 1e-12)`` for ``p`` and
    ``log(1 − p) − log p`` for ``y``."""

    name = "binary_cross_entropy"
    batching = "elementwise"

    def forward(self, p, y):
        inside = (p >= 0) & (p <= 1)  # NaN is outside too
        if not np.all(inside):
            raise RuntimeError(
                "binary_cross_entropy: all elements of input should be between 0 and 1"
            )
        if not np.all((y >= 0) & (y <= 1)):  # a target too (PyTorch's check, NaN outside)
            raise RuntimeError(
                "binary_cross_entropy: all elements of target should be between 0 and 1"
            )
        with np.errstate(divide="ignore"):
            log_p = np.maximum(np.log(p), -100.0)
            log_q = np.maximum(np.log1p(-p), -100.0)
        return -(log_p * y + log_q * (1 - y))

    def scalar_forward(self, p, y):
        return -(y * np.maximum(np.log(p), -100.0) + (1 - y) * np.maximum(np.log(1 - p), -100.0))

    def backward(self, grad, out, p, y):
        np_, ny = self.needs_input_grad
        grad_p = grad_y = None
        if np_:
            grad_p = sum_to(grad * (p - y) / np.maximum((1 - p) * p, _EPSILON), shape_of(p))
        if ny:
            with np.errstate(divide="ignore"):
                grad_y = sum_to(grad * (np.log1p(-p) - np.log(p)), shape_of(y))
        return grad_p, grad_y

    def jvp(self, tangents, out, p, y):
        tp, ty = tangents
        dp = dy = None
        if tp is not None:
            dp = tp * (p - y) / np.maximum((1 - p) * p, _EPSILON)
        if ty is not None:
            with np.errstate(divide="ignore"):
                dy = ty * (np.log1p(-p) - np.log(p))
        return add_tangents(dp, dy)


class BinaryCrossEntropyWithLogits(Op):
    """Elementwise ``-[y log σ(x) + (1 − y) log(1 − σ(x))]``, stable for any logit."""

    name = "binary_cross_entropy_with_logits"
    batching = "elementwise"

    def forward(self, x, y):
        return np.maximum(x, 0) - x * y + np.log1p(np.exp(-np.abs(x)))

    def scalar_forward(self, x, y):
        return np.maximum(x, 0) - x * y + np.log(1 + np.exp(-np.abs(x)))

    def backward(self, grad, out, x, y):
        nx, ny = self.needs_input_grad
        return (
            sum_to(grad * (call(Sigmoid, x) - y), shape_of(x)) if nx else None,
            sum_to(-grad * x, shape_of(y)) if ny else None,
        )

    def jvp(self, tangents, out, x, y):
        tx, ty = tangents
        return add_tangents(
            None if tx is None else tx * (call(Sigmoid, x) - y), None if ty is None else -ty * x
        )
