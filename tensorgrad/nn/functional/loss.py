"""Losses. Each takes ``reduction`` ('mean', 'sum' or 'none'; ``kl_div`` also 'batchmean'), and
class-index targets as int Tensors, arrays or lists. PyTorch's deprecated ``size_average`` /
``reduce`` arguments are accepted and mapped to ``reduction`` as PyTorch maps them.

Class weights (``weight=``) and ``ignore_index`` of the classification losses are constants:
like PyTorch, no gradient flows into them.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from tensorgrad import array_backend, ops
from tensorgrad.core import batching
from tensorgrad.core.engine import apply, as_tensor
from tensorgrad.core.functions import where
from tensorgrad.core.methods.common import floating_kernel
from tensorgrad.core.tensor import Tensor
from tensorgrad.grad_mode import is_grad_enabled

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


def _tensor(value: Any) -> Tensor:
    return value if isinstance(value, Tensor) else as_tensor(value)


def _reshaped(given: Any, target: np.ndarray, shape: tuple[int, ...]) -> Any:
    """The target reshaped: as a Tensor when it was given as one (inside vmap, its batch
    stays apart), else its array."""
    return given.reshape(shape) if isinstance(given, Tensor) else target.reshape(shape)


def _indices(target: Any) -> np.ndarray:
    """Class indices as an array (from a Tensor, an array or a list)."""
    if isinstance(target, Tensor):
        return target._data
    return np.asarray(target)


def _class_weights(weight: Any, classes: int, name: str) -> np.ndarray | None:
    """``weight`` as an array of one weight per class (PyTorch's RuntimeError otherwise)."""
    if weight is None:
        return None
    array = weight._data if isinstance(weight, Tensor) else np.asarray(weight)
    if array.shape != (classes,):
        raise RuntimeError(
            f"{name}: weight tensor should be defined either for all {classes} classes or no "
            f"classes but got weight tensor of shape: {array.shape}"
        )
    return array


def _target_like(target: Any, input: Tensor) -> Any:
    """A target that is not a Tensor, as an array of the input's dtype (a constant)."""
    return target if isinstance(target, Tensor) else array_backend.as_array(target, input.dtype)


def _bools_as_numbers(target: Any, input: Tensor) -> Any:
    """A bool target in the input's dtype: PyTorch's mse, smooth L1 and Huber kernels promote
    it (its ``l1_loss`` and the ``-`` operator refuse bools)."""
    if isinstance(target, Tensor) and target.dtype == np.bool_:
        return target.to(input.dtype)
    return target


def _same_shape(input: Tensor, target: Any, name: str) -> None:
    """Elementwise losses refuse a target of another shape (a silent broadcast of (N, 1)
    against (N,) is a classic bug; PyTorch only warns)."""
    target_shape = tuple(target.shape) if isinstance(target, Tensor) else np.shape(target)
    if target_shape != input.shape:
        raise array_backend.ShapeError(
            f"{name}: input of shape {input.shape} and target of shape {target_shape} differ"
        )


def _broadcasts_to(extra: Any, input: Tensor, what: str, name: str) -> Any:
    """A per-element weight that must broadcast to the input's shape (a Tensor as it is,
    other data as an array of the input's dtype)."""
    shape = input.shape
    extra_shape = tuple(extra.shape) if isinstance(extra, Tensor) else np.shape(extra)
    try:
        fits = np.broadcast_shapes(extra_shape, shape) == shape
    except ValueError:
        fits = False
    if not fits:
        raise RuntimeError(
            f"{name}: {what} of shape {extra_shape} does not broadcast to the input's shape {shape}"
        )
    return extra if isinstance(extra, Tensor) else array_backend.as_array(extra, input.dtype)


# --------------------------------------------------------------------------- classification
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
    with target (N, d1, ...), where the class axis is axis 1 as in PyTorch. ``weight`` (C,)
    weighs each class and targets equal to ``ignore_index`` are left out; with either, "mean"
    divides by the summed weight of the counted targets, as PyTorch does. A floating-point
    ``target`` of the input's shape holds class probabilities instead of indices.
    """
    reduction = _legacy(size_average, reduce, reduction)
    input = _tensor(input)
    given, target = target, _indices(target)
    # (a Tensor's own shape: inside vmap its array also holds the batch)
    target_shape = tuple(given.shape) if isinstance(given, Tensor) else target.shape
    if target_shape == input.shape and input.ndim:  # PyTorch's test for class probabilities
        if target.dtype.kind not in "fc":
            raise RuntimeError(
                "cross_entropy: Expected floating point type for target with class "
                f"probabilities, got {target.dtype} (a target of the input's shape "
                f"{input.shape} holds probabilities; class indices have no class axis)"
            )
        if ignore_index >= 0:
            raise RuntimeError(
                "cross_entropy: ignore_index is not supported for floating point target "
                f"(ignore_index={ignore_index})"
            )
        return _cross_entropy_probabilities(input, given, weight, reduction, label_smoothing)
    if input.ndim >= 2 and (target_shape[:1] or (1,))[0] != input.shape[0]:
        raise ValueError(
            f"cross_entropy: Expected input batch_size ({input.shape[0]}) to match target "
            f"batch_size ({(target_shape[:1] or (1,))[0]})"
        )
    if target.dtype.kind not in "iu":
        raise RuntimeError(
            "cross_entropy: expected target dtype to be Long or Byte (class indices), but got "
            f"{target.dtype}; class probabilities need a target of the input's shape "
            f"{input.shape}, got {target_shape}"
        )
    ndim = input.ndim
    if ndim == 2:  # the usual case first; the op checks the arguments
        weights = (
            None if weight is None else _class_weights(weight, input.shape[1], "cross_entropy")
        )
        op = ops.CrossEntropy(target, reduction, label_smoothing, weights, ignore_index)
        return apply(op, input)
    _check_reduction(reduction, "cross_entropy")
    options = {
        "weight": weight,
        "ignore_index": ignore_index,
        "reduction": reduction,
        "label_smoothing": label_smoothing,
    }
    if ndim == 1:
        if int(np.prod(target_shape)) != 1:
            raise ValueError(
                f"cross_entropy: for input of shape {input.shape} the target must be a single "
                f"class index, got shape {target_shape}"
            )
        loss = cross_entropy(input.reshape(1, -1), _reshaped(given, target, (1,)), **options)
        return loss.reshape(()) if reduction == "none" else loss
    if ndim > 2:
        classes = input.shape[1]
        _check_spatial_target(input.shape, target_shape, "cross_entropy")
        order = (0, *range(2, input.ndim), 1)
        flat = input.permute(order).reshape(-1, classes)
        loss = cross_entropy(flat, _reshaped(given, target, (-1,)), **options)
        return loss.reshape(target_shape) if reduction == "none" else loss
    return apply(ops.CrossEntropy(target, reduction, label_smoothing), input)  # 0-d: its error


def _check_spatial_target(input_shape: tuple, target_shape: tuple, name: str) -> None:
    """An (N, C, d1, ...) input needs an (N, d1, ...) target (PyTorch's RuntimeError)."""
    expected = (input_shape[0], *input_shape[2:])
    if tuple(target_shape) != expected:
        raise RuntimeError(
            f"{name}: Expected target size {list(expected)}, got {list(target_shape)} "
            f"(input of shape {input_shape}: (N, C, d1, ...) takes a target (N, d1, ...))"
        )


def _cross_entropy_probabilities(
    input: Tensor, target: Any, weight: Any, reduction: str, label_smoothing: float
) -> Tensor:
    """Cross-entropy against class probabilities (a target of the input's shape):
    ``−Σ_c w_c t_c log softmax(x)_c`` per sample; "mean" divides by the number of samples."""
    _check_reduction(reduction, "cross_entropy")
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(
            f"cross_entropy: label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}"
        )
    target = _target_like(target, input)
    class_dim = 0 if input.ndim == 1 else 1
    classes = input.shape[class_dim] if input.ndim else 1
    if label_smoothing:
        target = target * (1 - label_smoothing) + label_smoothing / classes
    terms = input.log_softmax(class_dim) * target
    if weight is not None:
        weights = _class_weights(weight, classes, "cross_entropy")
        terms = terms * weights.reshape((classes,) + (1,) * (input.ndim - class_dim - 1))
    losses = -terms.sum(class_dim)
    if reduction == "mean" and not classes:  # PyTorch divides by numel / classes: 0 / 0
        return losses.sum() * math.nan
    return _reduce(losses, reduction)


def nll_loss(
    input: Tensor,
    target: Any,
    weight: Tensor | None = None,
    size_average: Any = None,
    ignore_index: int = -100,
    reduce: Any = None,
    reduction: str = "mean",
) -> Tensor:
    """Negative log-likelihood of class indices given log-probabilities.

    ``input`` is (N, C) with ``target`` (N,), (C,) with one target, or (N, C, d1, ...) with
    target (N, d1, ...). ``weight`` (C,) weighs each class and targets equal to
    ``ignore_index`` are left out; "mean" divides by the summed weight of the counted targets.
    """
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction, "nll_loss")
    log_probs = _tensor(input)
    if batching.levels_of(target):  # inside vmap, a target per sample: by batching ops
        return _nll_loss_per_sample(log_probs, target, weight, ignore_index, reduction)
    target = _indices(target)
    if log_probs.ndim == 0:
        raise ValueError(
            "nll_loss: input must have 1 or more dimensions (batch, classes, ...), got 0 "
            "(PyTorch checks this before the target's dtype)"
        )
    if log_probs.dtype.kind != "f":  # PyTorch's kernel: floating point only
        raise NotImplementedError(f"nll_loss: not implemented for {log_probs.dtype} input")
    if target.dtype.kind not in "iu":
        raise RuntimeError(
            "nll_loss: expected target dtype to be Long or Byte (class indices), but got "
            f"{target.dtype}"
        )
    options = {"weight": weight, "ignore_index": ignore_index, "reduction": reduction}
    if log_probs.ndim == 1:
        if target.size != 1:
            raise ValueError(
                f"nll_loss: for input of shape {log_probs.shape} the target must be a single "
                f"class index, got shape {target.shape}"
            )
        loss = nll_loss(log_probs.reshape(1, -1), target.reshape(1), **options)
        return loss.reshape(()) if reduction == "none" else loss
    if log_probs.ndim > 2:
        _check_spatial_target(log_probs.shape, target.shape, "nll_loss")
        order = (0, *range(2, log_probs.ndim), 1)
        flat = log_probs.permute(order).reshape(-1, log_probs.shape[1])
        loss = nll_loss(flat, target.reshape(-1), **options)
        return loss.reshape(target.shape) if reduction == "none" else loss
    if log_probs.ndim != 2:
        raise ValueError(
            f"nll_loss: input must have 1 or more dimensions (batch, classes, ...), got shape "
            f"{log_probs.shape}"
        )
    n, classes = log_probs.shape
    if target.shape != (n,):
        raise ValueError(
            f"nll_loss: Expected input batch_size ({n}) to match target batch_size "
            f"({target.shape[0] if target.ndim else 1}): input of shape {log_probs.shape}, "
            f"target of shape {target.shape}"
        )
    weights = _class_weights(weight, classes, "nll_loss")
    kept = target != ignore_index
    counted = target[kept]
    if counted.size and (counted.min() < 0 or counted.max() >= classes):
        bad = int(counted.min() if counted.min() < 0 else counted.max())
        raise IndexError(f"nll_loss: target class {bad} is out of range for {classes} classes")
    rows = np.arange(n)
    if weights is None and counted.size == n:  # the usual case: plain indexing
        return _reduce(-log_probs[rows, target], reduction)
    safe = np.where(kept, target, 0)
    sample_weights = np.ones(n) if weights is None else weights[safe]
    sample_weights = (sample_weights * kept).astype(log_probs.dtype)
    losses = -log_probs[rows, safe] * sample_weights
    if reduction == "none":
        return losses
    total = losses.sum()
    if reduction == "sum":
        return total
    divisor = float(sample_weights.sum())
    # nothing counted: NaN, as PyTorch, with a zero gradient (0 · total keeps the graph)
    return total / divisor if divisor else total * 0.0 + math.nan


def _nll_loss_per_sample(
    log_probs: Tensor, target: Tensor, weight: Any, ignore_index: int, reduction: str
) -> Tensor:
    """``nll_loss`` inside vmap with a batched target: the same loss written with ops that
    have batching rules (a gather of each row's log-probability, masks, sums), so every
    sample reads its own targets."""
    options = {"weight": weight, "ignore_index": ignore_index, "reduction": reduction}
    if target.dtype.kind not in "iu":
        raise RuntimeError(
            "nll_loss: expected target dtype to be Long or Byte (class indices), but got "
            f"{target.dtype}"
        )
    shape, target_shape = tuple(log_probs.shape), tuple(target.shape)
    if len(shape) == 1:
        if math.prod(target_shape) != 1:
            raise ValueError(
                f"nll_loss: for input of shape {shape} the target must be a single class "
                f"index, got shape {target_shape}"
            )
        loss = nll_loss(log_probs.reshape(1, -1), target.reshape(1), **options)
        return loss.reshape(()) if reduction == "none" else loss
    if len(shape) > 2:
        _check_spatial_target(shape, target_shape, "nll_loss")
        order = (0, *range(2, len(shape)), 1)
        flat = log_probs.permute(order).reshape(-1, shape[1])
        loss = nll_loss(flat, target.reshape(-1), **options)
        return loss.reshape(target_shape) if reduction == "none" else loss
    n, classes = shape if len(shape) == 2 else (0, 0)
    if len(shape) != 2:
        raise ValueError(
            f"nll_loss: input must have 1 or more dimensions (batch, classes, ...), got shape "
            f"{shape}"
        )
    if target_shape != (n,):
        raise ValueError(
            f"nll_loss: Expected input batch_size ({n}) to match target batch_size "
            f"({target_shape[0] if target_shape else 1}): input of shape {shape}, target of "
            f"shape {target_shape}"
        )
    weights = _class_weights(weight, classes, "nll_loss")
    values = target._data  # every sample's targets at once: a range check needs no layout
    counted = values[values != ignore_index]
    if counted.size and (counted.min() < 0 or counted.max() >= classes):
        bad = int(counted.min() if counted.min() < 0 else counted.max())
        raise IndexError(f"nll_loss: target class {bad} is out of range for {classes} classes")
    if weights is None and counted.size == values.size:  # the usual case: every target counts
        return _reduce(-log_probs.gather(1, target.reshape(n, 1)).reshape(n), reduction)
    kept = target != ignore_index
    safe = where(kept, target, 0)
    picked = log_probs.gather(1, safe.reshape(n, 1)).reshape(n)
    sample_weights = kept.to(log_probs.dtype)
    if weights is not None:
        table = as_tensor(weights.astype(log_probs.dtype))
        sample_weights = sample_weights * table[safe]
    losses = -picked * sample_weights
    if reduction == "none":
        return losses
    total = losses.sum()
    if reduction == "sum":
        return total
    divisor = sample_weights.sum()
    # nothing counted: NaN, as PyTorch, with a zero gradient
    some = divisor != 0
    return where(some, total / where(some, divisor, 1.0), math.nan)


def binary_cross_entropy(
    input: Tensor,
    target: Any,
    weight: Tensor | None = None,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
) -> Tensor:
    """Binary cross-entropy of probabilities ``input`` in [0, 1] against ``target``:
    ``−w[y log p + (1 − y) log(1 − p)]``, each log clamped at −100 as PyTorch does. For logits,
    :func:`binary_cross_entropy_with_logits` is stabler."""
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction, "binary_cross_entropy")
    input = floating_kernel("binary_cross_entropy", _tensor(input))
    target_shape = tuple(target.shape) if isinstance(target, Tensor) else np.shape(target)
    if isinstance(target, Tensor) and target.dtype != input.dtype:
        raise RuntimeError(
            f"binary_cross_entropy: Found dtype {target.dtype} but expected {input.dtype}"
        )
    if target_shape != input.shape:
        raise ValueError(
            f"binary_cross_entropy: using a target size {target_shape} that is different to the "
            f"input size {input.shape} is deprecated. Please ensure they have the same size."
        )
    losses = apply(ops.BinaryCrossEntropy(), input, _target_like(target, input))
    if weight is not None:
        losses = losses * _broadcasts_to(weight, input, "weight", "binary_cross_entropy")
    return _reduce(losses, reduction)


def binary_cross_entropy_with_logits(
    input: Tensor,
    target: Any,
    weight: Tensor | None = None,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
    pos_weight: Tensor | None = None,
) -> Tensor:
    """Sigmoid and binary cross-entropy in one stable op, for targets in [0, 1].

    ``weight`` scales each element's loss; ``pos_weight`` (broadcast along the last axis,
    one per class) scales the positive term: ``−w[p_c y log σ(x) + (1 − y) log(1 − σ(x))]``.
    """
    name = "binary_cross_entropy_with_logits"
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction, name)
    input = _tensor(input)
    floating_kernel("binary_cross_entropy_with_logits", input)  # PyTorch has no integer kernel
    target_shape = tuple(target.shape) if isinstance(target, Tensor) else np.shape(target)
    if target_shape != input.shape:
        raise ValueError(
            f"{name}: target size {target_shape} must be the same as input size {input.shape}"
        )
    if isinstance(target, Tensor) and target.dtype == np.bool_:  # PyTorch's error: 1 − target
        raise RuntimeError(
            f"{name}: Subtraction, the `-` operator, with two bool tensors is not supported "
            "(a bool target: convert it with .float())"
        )
    target = _target_like(target, input)
    if pos_weight is None:
        losses = apply(ops.BinaryCrossEntropyWithLogits(), input, target)
    else:
        pos_weight = _broadcasts_to(pos_weight, input, "pos_weight", name)
        # PyTorch's form: (1 − y)x + (1 + (p − 1)y)·softplus(−x), softplus without overflow
        log_weight = (pos_weight - 1) * target + 1
        softplus = apply(ops.Softplus(1.0, math.inf), -input)
        losses = (1 - target) * input + log_weight * softplus
    if weight is not None:
        losses = losses * _broadcasts_to(weight, input, "weight", name)
    return _reduce(losses, reduction)


# --------------------------------------------------------------------------- regression
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
    input = _tensor(input)
    floating_kernel("mse_loss", input)  # PyTorch has no integer kernel
    _same_shape(input, target, "mse_loss")
    diff = input - _target_like(_bools_as_numbers(target, input), input)
    return _reduce(diff * diff, reduction)


def l1_loss(
    input: Tensor,
    target: Any,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
) -> Tensor:
    """Mean absolute error ``|x − y|`` (its gradient at 0 is 0). Shapes must match, as in
    :func:`mse_loss`."""
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction, "l1_loss")
    input = _tensor(input)
    _same_shape(input, target, "l1_loss")
    return _reduce((input - _target_like(target, input)).abs(), reduction)


def smooth_l1_loss(
    input: Tensor,
    target: Any,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
    beta: float = 1.0,
) -> Tensor:
    """``0.5 d²/β`` where ``|d| < β``, else ``|d| − 0.5β``, for ``d = x − y``: quadratic near
    zero, linear beyond (``β = 0`` is :func:`l1_loss`). Shapes must match."""
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction, "smooth_l1_loss")
    input = _tensor(input)
    floating_kernel("smooth_l1_loss", input)  # PyTorch has no integer kernel
    _same_shape(input, target, "smooth_l1_loss")
    diff = input - _target_like(_bools_as_numbers(target, input), input)
    size = diff.abs()
    if beta == 0:  # the quadratic part is empty (and would divide by zero)
        return _reduce(size, reduction)
    losses = where(size < beta, diff * diff * (0.5 / beta), size - 0.5 * beta)
    return _reduce(losses, reduction)


def huber_loss(input: Tensor, target: Any, reduction: str = "mean", delta: float = 1.0) -> Tensor:
    """``0.5 d²`` where ``|d| < δ``, else ``δ(|d| − 0.5δ)``: smooth L1 scaled by δ. Shapes
    must match."""
    if not delta > 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    _check_reduction(reduction, "huber_loss")
    input = _tensor(input)
    floating_kernel("huber_loss", input)  # PyTorch has no integer kernel
    _same_shape(input, target, "huber_loss")
    diff = input - _target_like(_bools_as_numbers(target, input), input)
    size = diff.abs()
    losses = where(size < delta, diff * diff * 0.5, (size - 0.5 * delta) * delta)
    return _reduce(losses, reduction)


# --------------------------------------------------------------------------- distributions
def kl_div(
    input: Tensor,
    target: Any,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
    log_target: bool = False,
) -> Tensor:
    """Kullback-Leibler divergence ``Σ t (log t − x)`` of ``target`` from log-probabilities
    ``input`` (``log_target``: the target is given as log-probabilities too).

    ``reduction='batchmean'`` divides the sum by the batch size, the mathematical KL
    divergence; ``'mean'`` (the default, as in PyTorch) divides by the number of elements and
    warns, as PyTorch does. A zero target contributes 0 (``0 log 0 = 0``).
    """
    reduction = _legacy(size_average, reduce, reduction)
    if reduction not in ("mean", "batchmean", "sum", "none"):
        raise ValueError(
            f"kl_div: reduction must be 'mean', 'batchmean', 'sum' or 'none', got {reduction!r}"
        )
    if reduction == "mean":
        warnings.warn(
            "kl_div: reduction='mean' divides the total loss by both the batch size and the "
            "support size; 'batchmean' divides only by the batch size, and aligns with the KL "
            "divergence's definition (PyTorch's warning: 'mean' will behave as 'batchmean' in "
            "a future release)",
            UserWarning,
            stacklevel=2,
        )
    input = _tensor(input)
    if input.dtype.kind != "f" or getattr(target, "dtype", np.dtype(float)).kind != "f":
        raise RuntimeError("kl_div: Integral inputs not supported.")
    target = _target_like(target, input)
    if log_target:
        losses = (target - input) * np.exp(target)
    else:
        # t·log t with 0·log 0 = 0: the log is taken of 1 where t is 0 (a negative t gives NaN)
        safe = where(target == 0, 1.0, target)
        losses = target * (np.log(safe) - input)
    if reduction == "batchmean":
        total = losses.sum()
        return total / input.shape[0] if input.ndim else total
    return _reduce(losses, reduction)


def soft_margin_loss(
    input: Tensor,
    target: Any,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
) -> Tensor:
    """The two-class logistic loss ``log(1 + exp(−y·x))`` for targets ``y`` of ±1."""
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction, "soft_margin_loss")
    input = _tensor(input)
    if isinstance(target, Tensor) and target.requires_grad and is_grad_enabled():
        raise RuntimeError(
            "The function 'soft_margin_loss' is not differentiable with respect to argument "
            "'target'. This input cannot have requires_grad True."
        )
    _same_shape(input, target, "soft_margin_loss")
    if input.dtype.kind in "iu":  # PyTorch's kernel writes its float loss into input's dtype
        raise RuntimeError(
            f"soft_margin_loss: result type Float can't be cast to the desired output type "
            f"{input.dtype} (an integer input: convert it with .float())"
        )
    target = target.to(input.dtype) if isinstance(target, Tensor) else target  # input's dtype
    margin = -(input * _target_like(target, input))
    return _reduce(apply(ops.Softplus(1.0, math.inf), margin), reduction)  # no overflow
