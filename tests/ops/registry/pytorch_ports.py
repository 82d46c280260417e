"""Registry entries for the ops and functions ported PyTorch programs use: softplus, elu, silu,
binary cross-entropy of probabilities, cross-entropy and nll_loss with class weights and
``ignore_index``, binary cross-entropy with logits with ``weight``/``pos_weight``, the L1 family
(l1, smooth L1, Huber) and the KL divergence.

The references are written from the definitions, not from the ops' formulas: per-sample loops
for the weighted losses, ``np.logaddexp`` for softplus, ``exp(x) − 1`` for elu. Samples keep
away from the kinks (softplus's switch at ``βx = threshold``, elu at 0, the L1 family at
``d = 0`` and ``|d| = β``) so central differences never straddle one; the values at kinks and
at the extremes are compared with PyTorch in tests/nn/test_port_losses.py and
test_port_activations.py.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.special

from tensorgrad import ops
from tensorgrad.core.engine import apply as _apply
from tensorgrad.nn import functional as F
from tests.ops.registry.core import (
    BINARY_SHAPES,
    PIECEWISE_LINEAR,
    UNARY_SHAPES,
    ErrorInput,
    OpInfo,
    Sample,
    away,
    exempt,
    register,
    uniform,
)
from tests.ops.registry.core import broadcast_error as _broadcast_error

_REDUCTIONS = ("mean", "sum", "none")


def _reduce(losses: np.ndarray, reduction: str) -> np.ndarray:
    if reduction == "mean":
        return np.mean(losses) if losses.size else np.float64(np.nan)
    if reduction == "batchmean":
        return losses.sum() / losses.shape[0] if losses.ndim else losses.sum()
    return losses.sum() if reduction == "sum" else losses


def _grad_ok(shape: tuple[int, ...], reduction: str) -> bool:
    """The mean of nothing is NaN: such samples check the forward only."""
    return not (reduction == "mean" and math.prod(shape) == 0)


# --------------------------------------------------------------------------- activations
def _softplus_ref(x, beta=1.0, threshold=20.0):
    return np.where(x * beta > threshold, x, np.logaddexp(0, x * beta) / beta)


def _softplus_samples(rng: np.random.Generator) -> list[Sample]:
    result = []
    for beta, threshold in ((1.0, 20.0), (2.0, 1.5), (0.5, 0.25)):
        kink = threshold / beta
        for desc, shape, layout in UNARY_SHAPES:
            x = away(rng, shape, (kink,), low=-3.0, high=3.0)
            kwargs = {"beta": beta, "threshold": threshold}
            result.append(Sample((x,), kwargs, f"b{beta}-t{threshold}-{desc}", (layout,)))
    extreme = np.array([-1000.0, -60.0, -1.0, 0.0, 30.0, 1000.0])
    result.append(Sample((extreme,), {"beta": 1.0, "threshold": math.inf}, "extreme", grad=False))
    result.append(Sample((extreme,), {"beta": 3.0, "threshold": 20.0}, "extreme_b3", grad=False))
    return result


def _elu_ref(x, alpha=1.0):
    return np.where(x > 0, x, alpha * (np.exp(x) - 1))


def _elu_samples(rng: np.random.Generator) -> list[Sample]:
    result = [
        Sample((away(rng, shape, (0.0,)),), {"alpha": alpha}, f"a{alpha}-{desc}", (layout,))
        for alpha in (1.0, 0.5)
        for desc, shape, layout in UNARY_SHAPES
    ]
    extreme = np.array([-1000.0, -40.0, 0.0, 1000.0])
    result.append(Sample((extreme,), {"alpha": 1.0}, "extreme", grad=False))
    return result


def _silu_samples(rng: np.random.Generator) -> list[Sample]:
    result = [Sample((uniform(rng, s, -4, 4),), {}, d, (lay,)) for d, s, lay in UNARY_SHAPES]
    result.append(Sample((np.array([-1000.0, 0.0, 1000.0]),), {}, "extreme", grad=False))
    return result


# --------------------------------------------------------------------------- binary cross-entropy
def _bce_ref(p, y):
    with np.errstate(divide="ignore"):
        return -(y * np.maximum(np.log(p), -100) + (1 - y) * np.maximum(np.log(1 - p), -100))


def _bce_samples(rng: np.random.Generator) -> list[Sample]:
    result = [
        Sample((rng.uniform(0.05, 0.95, sx), rng.uniform(0, 1, sy)), {}, desc, tuple(layouts))
        for desc, sx, sy, layouts in BINARY_SHAPES
    ]
    edges = (np.array([0.0, 1.0, 0.0, 1.0, 1e-60, 0.5]), np.array([1.0, 0.0, 0.0, 1.0, 1.0, 0.3]))
    result.append(Sample(edges, {}, "clamped_at_100", grad=False))
    return result


def _bce_weighted_ref(p, y, w, reduction):
    return _reduce(_bce_ref(p, y) * w, reduction)


def _bce_weighted_samples(rng: np.random.Generator) -> list[Sample]:
    cases = [  # (description, input shape, weight shape, layouts)
        ("matrix", (3, 4), (4,), "CCC"),
        ("full_weight", (2, 3), (2, 3), "CCC"),
        ("0d", (), (), "CCC"),
        ("size1", (1,), (1,), "CCC"),
        ("empty", (0, 3), (3,), "CCC"),
        ("transposed", (3, 4), (4,), "TCC"),
    ]
    return [
        Sample(
            (rng.uniform(0.05, 0.95, s), rng.uniform(0, 1, s), rng.uniform(0.5, 2, ws)),
            {"reduction": reduction},
            f"{reduction}-{desc}",
            tuple(layouts),
            grad=_grad_ok(s, reduction),
        )
        for desc, s, ws, layouts in cases
        for reduction in _REDUCTIONS
    ]


def _bce_logits_ref(x, y, w, pw, reduction):
    losses = (1 - y) * x + (1 + (pw - 1) * y) * np.logaddexp(0, -x)
    return _reduce(losses * w, reduction)


def _bce_logits_samples(rng: np.random.Generator) -> list[Sample]:
    cases = [  # (description, input shape, weight shape, pos_weight shape, layouts)
        ("matrix", (3, 4), (4,), (4,), "CCCC"),
        ("full_weight", (2, 3), (2, 3), (3,), "CCCC"),
        ("0d", (), (), (), "CCCC"),
        ("size1", (1, 1), (1,), (1,), "CCCC"),
        ("empty", (0, 3), (3,), (3,), "CCCC"),
        ("transposed", (3, 4), (4,), (4,), "TCCC"),
    ]
    result = [
        Sample(
            (
                uniform(rng, s, -4, 4),
                rng.uniform(0, 1, s),
                rng.uniform(0.5, 2, ws),
                rng.uniform(0.5, 3, ps),
            ),
            {"reduction": reduction},
            f"{reduction}-{desc}",
            tuple(layouts),
            grad=_grad_ok(s, reduction),
        )
        for desc, s, ws, ps, layouts in cases
        for reduction in _REDUCTIONS
    ]
    extreme = (np.array([-1000.0, 1000.0]), np.array([1.0, 0.0]), np.ones(2), np.full(2, 2.0))
    result.append(Sample(extreme, {"reduction": "none"}, "extreme", grad=False))
    return result


# --------------------------------------------------------------------------- class indices
def _weighted_ce_ref(logits, target, reduction, label_smoothing, weight, ignore_index):
    """PyTorch's definition, sample by sample: (1 − ε)·w_y·(−log p_y) + ε/C·Σ_c w_c·(−log p_c),
    ignored samples 0; 'mean' divides by the summed w_y of the counted samples."""
    n, c = logits.shape
    logp = scipy.special.log_softmax(logits, axis=1) if logits.size else logits
    w = np.ones(c) if weight is None else weight
    losses, divisor = np.zeros(n), 0.0
    for i in range(n):
        if target[i] == ignore_index:
            continue
        nll = -w[target[i]] * logp[i, target[i]]
        smooth = -(w * logp[i]).sum()
        losses[i] = (1 - label_smoothing) * nll + label_smoothing / c * smooth
        divisor += w[target[i]]
    if reduction == "none":
        return losses
    if reduction == "sum":
        return losses.sum()
    return losses.sum() / divisor if divisor else np.float64(np.nan)


def _weighted_ce_samples(rng: np.random.Generator) -> list[Sample]:
    result = []
    for reduction in _REDUCTIONS:
        for smoothing in (0.0, 0.1):
            for desc, (n, c), weighted, ignore in (
                ("weight", (4, 5), True, None),
                ("ignore", (5, 4), False, -100),
                ("weight_ignore", (5, 4), True, -100),
                ("ignore_a_class", (5, 3), False, 1),
                ("weight_size1", (1, 1), True, None),
                ("weight_empty", (0, 3), True, None),
            ):
                target = rng.integers(0, c, n)
                if ignore == -100 and n:
                    target[[0, n - 1]] = -100
                kwargs = {
                    "target": target,
                    "reduction": reduction,
                    "label_smoothing": smoothing,
                    "weight": rng.uniform(0.2, 2.0, c) if weighted else None,
                    "ignore_index": -100 if ignore is None else ignore,
                }
                result.append(
                    Sample(
                        (uniform(rng, (n, c), -3, 3),),
                        kwargs,
                        f"{reduction}-ls{smoothing}-{desc}",
                        grad=not (n == 0 and reduction == "mean"),
                    )
                )
    every = {"reduction": "mean", "label_smoothing": 0.0, "ignore_index": -100}
    result.append(
        Sample(
            (uniform(rng, (3, 4)),),
            {**every, "target": np.array([2, -100, 1]), "weight": rng.uniform(0.5, 1, 4)},
            "transposed",
            ("T",),
        )
    )
    result.append(
        Sample(
            (uniform(rng, (2, 3)),),
            {**every, "target": np.array([-100, -100]), "weight": None},
            "all_ignored_mean_is_nan",
            grad=False,
        )
    )
    all_ignored_sum = {**every, "reduction": "sum", "target": np.array([-100, -100])}
    result.append(
        Sample((uniform(rng, (2, 3)),), {**all_ignored_sum, "weight": None}, "all_ignored_sum")
    )
    return result


def _weighted_ce_error(target, error, match, desc, weight=None, ignore_index=-100):
    kwargs = {
        "target": target,
        "reduction": "mean",
        "label_smoothing": 0.0,
        "weight": weight,
        "ignore_index": ignore_index,
    }
    return ErrorInput((np.ones((3, 4)),), error, match, kwargs, desc)


_WEIGHTED_CE_ERRORS = (
    _weighted_ce_error(
        np.array([0, 1, 2]),
        RuntimeError,
        r"^cross_entropy: weight tensor should be defined either for all 4 classes or no "
        r"classes but got weight tensor of shape: \(3,\)",
        "weight_shape",
        weight=np.ones(3),
    ),
    _weighted_ce_error(
        np.array([0, -100, 4]),
        IndexError,
        r"^cross_entropy: target class 4 is out of range for 4 classes",
        "counted_target_too_large",
    ),
    _weighted_ce_error(
        np.array([0, -100, -1]),
        IndexError,
        r"^cross_entropy: target class -1 is out of range for 4 classes",
        "counted_target_negative",
    ),
    _weighted_ce_error(
        np.array([0, 2, -100]),
        IndexError,
        r"^cross_entropy: target class -100 is out of range for 4 classes",
        "not_ignored_when_ignore_index_is_a_class",
        ignore_index=2,
    ),
)


def _nll_ref(log_probs, target, weight, ignore_index, reduction):
    if log_probs.ndim == 1:
        loss = _nll_ref(log_probs[None], np.reshape(target, 1), weight, ignore_index, reduction)
        return loss.reshape(()) if reduction == "none" else loss
    if log_probs.ndim > 2:
        flat = np.moveaxis(log_probs, 1, -1).reshape(-1, log_probs.shape[1])
        loss = _nll_ref(flat, target.reshape(-1), weight, ignore_index, reduction)
        return loss.reshape(target.shape) if reduction == "none" else loss
    n, c = log_probs.shape
    w = np.ones(c) if weight is None else weight
    losses, divisor = np.zeros(n), 0.0
    for i in range(n):
        if target[i] != ignore_index:
            losses[i] = -w[target[i]] * log_probs[i, target[i]]
            divisor += w[target[i]]
    if reduction == "none":
        return losses
    if reduction == "sum":
        return losses.sum()
    return losses.sum() / divisor if divisor else np.float64(np.nan)


def _nll_samples(rng: np.random.Generator) -> list[Sample]:
    result = []
    cases = [  # (description, input shape, target shape, weighted, ignore_index, layout)
        ("plain", (4, 3), (4,), False, -100, "C"),
        ("weight", (4, 3), (4,), True, -100, "C"),
        ("weight_ignore", (5, 3), (5,), True, 0, "C"),
        ("spatial", (2, 3, 4), (2, 4), True, -100, "C"),
        ("single", (3,), (), True, -100, "C"),
        ("size1", (1, 1), (1,), True, -100, "C"),
        ("empty", (0, 3), (0,), True, -100, "C"),
        ("transposed", (3, 4), (3,), True, 1, "T"),
    ]
    for desc, shape, target_shape, weighted, ignore, layout in cases:
        for reduction in _REDUCTIONS:
            c = shape[1] if len(shape) > 1 else shape[0]
            target = rng.integers(0, c, target_shape)
            if desc == "spatial":
                target[0, 1] = -100
            kwargs = {
                "target": target,
                "weight": rng.uniform(0.2, 2.0, c) if weighted else None,
                "ignore_index": ignore,
                "reduction": reduction,
            }
            result.append(
                Sample(
                    (uniform(rng, shape, -3, 0),),
                    kwargs,
                    f"{reduction}-{desc}",
                    (layout,),
                    grad=_grad_ok(target_shape, reduction),
                )
            )
    return result


def _nll_error(shape, target, error, match, desc, weight=None):
    kwargs = {"target": target, "weight": weight, "ignore_index": -100, "reduction": "mean"}
    return ErrorInput((np.zeros(shape),), error, match, kwargs, desc)


_NLL_ERRORS = (
    _nll_error((3, 2), np.array([0, 1]), ValueError,
               r"^nll_loss: Expected input batch_size \(3\) to match target batch_size \(2\)",
               "target_shape"),
    _nll_error((3, 2), np.array([0, 1, 2]), IndexError,
               r"^nll_loss: target class 2 is out of range for 2 classes", "target_too_large"),
    _nll_error((3, 2), np.array([0, -5, 1]), IndexError,
               r"^nll_loss: target class -5 is out of range for 2 classes", "target_negative"),
    _nll_error((3, 2), np.zeros(3), RuntimeError,
               r"^nll_loss: expected target dtype to be Long or Byte \(class indices\), but got "
               r"float64", "float"),
    _nll_error((3, 2), np.array([0, 1, 1]), RuntimeError,
               r"^nll_loss: weight tensor should be defined either for all 2 classes",
               "weight_shape", weight=np.ones(3)),
    _nll_error((), np.array(0), ValueError, r"^nll_loss: input must have 1 or more dimensions",
               "0d_input"),
    _nll_error((2, 3, 4), np.zeros((2, 3), dtype=np.int64), RuntimeError,
               r"^nll_loss: Expected target size \[2, 4\], got \[2, 3\]", "spatial_target_shape"),
)  # fmt: skip


# --------------------------------------------------------------------------- regression
def _l1_family_ref(name: str):
    def ref(x, y, reduction, **params):
        d = np.abs(x - y)
        if name == "l1_loss" or params.get("beta") == 0:
            losses = d
        elif name == "smooth_l1_loss":
            beta = params.get("beta", 1.0)
            losses = np.where(d < beta, 0.5 * d**2 / beta, d - 0.5 * beta)
        else:
            delta = params.get("delta", 1.0)
            losses = np.where(d <= delta, 0.5 * d**2, delta * (d - 0.5 * delta))
        return _reduce(losses, reduction)

    return ref


def _l1_family_samples(param: str | None, values: tuple[float, ...]):
    def samples(rng: np.random.Generator) -> list[Sample]:
        result = []
        for value in values:
            params = {} if param is None else {param: value}
            kinks = (0.0,) if not value else (-value, 0.0, value)
            for i, (desc, shape, layout) in enumerate(UNARY_SHAPES):
                reduction = _REDUCTIONS[i % 3]
                y = uniform(rng, shape)
                x = y + away(rng, shape, kinks, low=-3.0, high=3.0)
                result.append(
                    Sample(
                        (x, y),
                        {"reduction": reduction, **params},
                        f"{param}{value}-{reduction}-{desc}",
                        (layout, "C"),
                        grad=_grad_ok(shape, reduction),
                    )
                )
        return result

    return samples


def _l1_family_errors(name: str, **params: Any) -> tuple[ErrorInput, ...]:
    return (
        ErrorInput(
            (np.ones((4, 1)), np.ones(4)),
            ValueError,
            rf"^{name}: input of shape \(4, 1\) and target of shape \(4,\) differ",
            {"reduction": "mean", **params},
            "shapes_differ",
        ),
        ErrorInput(
            (np.ones(2), np.ones(2)),
            ValueError,
            rf"^{name}: reduction must be 'mean', 'sum' or 'none', got 'avg'",
            {"reduction": "avg", **params},
            "bad_reduction",
        ),
    )


# --------------------------------------------------------------------------- KL divergence
def _kl_ref(x, t, reduction, log_target):
    losses = np.exp(t) * (t - x) if log_target else scipy.special.xlogy(t, t) - t * x
    return _reduce(losses, reduction)


def _kl_samples(rng: np.random.Generator) -> list[Sample]:
    result = []
    for log_target in (False, True):
        for reduction in ("batchmean", "sum", "none"):
            for desc, shape, layout in UNARY_SHAPES:
                t = uniform(rng, shape, -3, 0) if log_target else rng.uniform(0.1, 1, shape)
                result.append(
                    Sample(
                        (uniform(rng, shape, -3, 0), t),
                        {"reduction": reduction, "log_target": log_target},
                        f"{reduction}-log{log_target}-{desc}",
                        (layout, "C"),
                        grad=not (reduction == "batchmean" and shape and shape[0] == 0),
                    )
                )
    zeros = (uniform(rng, (2, 3), -3, 0), np.array([[0.0, 0.5, 0.5], [1.0, 0.0, 0.0]]))
    result.append(
        Sample(zeros, {"reduction": "sum", "log_target": False}, "zero_target", grad=False)
    )
    return result


# --------------------------------------------------------------------------- the entries
def _register_all() -> None:
    register(OpInfo("softplus", F.softplus, _softplus_ref, _softplus_samples))
    register(OpInfo("elu", F.elu, _elu_ref, _elu_samples))
    register(OpInfo("silu", F.silu, lambda x: x * scipy.special.expit(x), _silu_samples))
    register(
        OpInfo(
            "binary_cross_entropy",
            lambda p, y: _apply(ops.BinaryCrossEntropy(), p, y),
            _bce_ref,
            _bce_samples,
            errors=(
                _broadcast_error("binary_cross_entropy"),
                ErrorInput(
                    (np.array([0.5, 1.5]), np.ones(2)),
                    RuntimeError,
                    r"^binary_cross_entropy: all elements of input should be between 0 and 1",
                    desc="above_1",
                ),
                ErrorInput(
                    (np.array([np.nan, 0.5]), np.ones(2)),
                    RuntimeError,
                    r"^binary_cross_entropy: all elements of input should be between 0 and 1",
                    desc="nan",
                ),
            ),
        )
    )
    register(
        OpInfo(
            "binary_cross_entropy_weighted",
            lambda p, y, w, reduction: F.binary_cross_entropy(p, y, w, reduction=reduction),
            _bce_weighted_ref,
            _bce_weighted_samples,
            errors=(
                ErrorInput(
                    (np.full((2, 3), 0.5), np.ones(3), np.ones(3)),
                    ValueError,
                    r"^binary_cross_entropy: using a target size \(3,\) that is different to "
                    r"the input size \(2, 3\)",
                    {"reduction": "mean"},
                    "target_shape",
                ),
                ErrorInput(
                    (np.full((2, 3), 0.5), np.ones((2, 3)), np.ones(2)),
                    RuntimeError,
                    r"^binary_cross_entropy: weight of shape \(2,\) does not broadcast to the "
                    r"input's shape \(2, 3\)",
                    {"reduction": "mean"},
                    "weight_shape",
                ),
            ),
        )
    )
    register(
        OpInfo(
            "binary_cross_entropy_with_logits_weighted",
            lambda x, y, w, pw, reduction: F.binary_cross_entropy_with_logits(
                x, y, w, reduction=reduction, pos_weight=pw
            ),
            _bce_logits_ref,
            _bce_logits_samples,
            errors=(
                ErrorInput(
                    (np.ones((2, 3)), np.ones((2, 3)), np.ones(3), np.ones(2)),
                    RuntimeError,
                    r"^binary_cross_entropy_with_logits: pos_weight of shape \(2,\) does not "
                    r"broadcast to the input's shape \(2, 3\)",
                    {"reduction": "mean"},
                    "pos_weight_shape",
                ),
            ),
        )
    )
    register(
        OpInfo(
            "cross_entropy_weighted",
            lambda x, target, reduction, label_smoothing, weight, ignore_index: _apply(
                ops.CrossEntropy(target, reduction, label_smoothing, weight, ignore_index), x
            ),
            _weighted_ce_ref,
            _weighted_ce_samples,
            errors=_WEIGHTED_CE_ERRORS,
        )
    )
    register(
        OpInfo(
            "nll_loss",
            lambda x, target, weight, ignore_index, reduction: F.nll_loss(
                x, target, weight, ignore_index=ignore_index, reduction=reduction
            ),
            _nll_ref,
            _nll_samples,
            errors=_NLL_ERRORS,
        )
    )
    for name, fn, param, values in (
        ("l1_loss", F.l1_loss, None, (1.0,)),
        ("smooth_l1_loss", F.smooth_l1_loss, "beta", (1.0, 0.5, 0.0)),
        ("huber_loss", F.huber_loss, "delta", (1.0, 0.5)),
    ):
        errors = _l1_family_errors(name)
        if param == "beta":
            errors += (
                ErrorInput(
                    (np.ones(2), np.ones(2)),
                    RuntimeError,
                    r"^smooth_l1_loss does not support negative values for beta",
                    {"reduction": "mean", "beta": -1.0},
                    "negative_beta",
                ),
            )
        if param == "delta":
            errors += (
                ErrorInput(
                    (np.ones(2), np.ones(2)),
                    RuntimeError,
                    r"^huber_loss does not support non-positive values for delta",
                    {"reduction": "mean", "delta": 0.0},
                    "zero_delta",
                ),
            )
        register(
            OpInfo(
                name,
                fn,
                _l1_family_ref(name),
                _l1_family_samples(param, values),
                errors=errors,
                second_order=PIECEWISE_LINEAR if name == "l1_loss" else "",
            )
        )
    register(
        OpInfo(
            "kl_div",
            lambda x, t, reduction, log_target: F.kl_div(
                x, t, reduction=reduction, log_target=log_target
            ),
            _kl_ref,
            _kl_samples,
            errors=(
                ErrorInput(
                    (np.ones(2), np.ones(2)),
                    ValueError,
                    r"^kl_div: reduction must be 'mean', 'batchmean', 'sum' or 'none', got 'avg'",
                    {"reduction": "avg", "log_target": False},
                    "bad_reduction",
                ),
            ),
        )
    )


_register_all()
exempt("0-d", "logits are 2-D", "cross_entropy_weighted")
exempt("0-d", "input has a class axis: at least 1-D (0-d input is an error input)", "nll_loss")
