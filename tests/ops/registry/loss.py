"""Registry entries for ``tensorgrad/ops/loss.py``: cross-entropy and binary cross-entropy with
logits.
"""

from __future__ import annotations

import numpy as np

from tensorgrad import ops
from tensorgrad.core.engine import apply as _apply
from tests.ops.registry.activation import _log_softmax
from tests.ops.registry.core import (
    ErrorInput,
    OpInfo,
    Sample,
    Shape,
    binary_samples,
    broadcast_error,
    exempt,
    register,
    uniform,
)


def _cross_entropy(logits, target, reduction, label_smoothing):
    n, c = logits.shape
    logp = _log_softmax(logits, axis=1)
    q = np.full((n, c), label_smoothing / c)
    q[np.arange(n), target] += 1 - label_smoothing
    losses = -(q * logp).sum(axis=1)
    if reduction == "none":
        return losses
    return losses.sum() / n if reduction == "mean" else losses.sum()


def _ce_samples(rng: np.random.Generator) -> list[Sample]:
    result = []
    for reduction in ("mean", "sum", "none"):
        for smoothing in (0.0, 0.1):
            for desc, (n, c) in (
                ("batch", (4, 5)),
                ("batch1", (1, 3)),
                ("size1", (1, 1)),
                ("empty", (0, 3)),
            ):
                kwargs = {
                    "target": rng.integers(0, c, n),
                    "reduction": reduction,
                    "label_smoothing": smoothing,
                }
                nan = n == 0 and reduction == "mean"
                result.append(
                    Sample(
                        (uniform(rng, (n, c), -3, 3),),
                        kwargs,
                        f"{reduction}-ls{smoothing}-{desc}",
                        grad=not nan,
                    )
                )
    kwargs = {"target": np.array([2, 0, 1]), "reduction": "mean", "label_smoothing": 0.0}
    result.append(Sample((uniform(rng, (3, 4)),), kwargs, "transposed", ("T",)))
    result.append(
        Sample(
            (np.array([[1000.0, -1000.0, 0.0], [-500.0, 400.0, 450.0]]),),
            {**kwargs, "target": np.array([1, 0])},
            "large",
            grad=False,
        )
    )
    return result


def _ce_error(logits, target, error, match, desc, reduction="mean", smoothing=0.0):
    kwargs = {"target": target, "reduction": reduction, "label_smoothing": smoothing}
    return ErrorInput((logits,), error, match, kwargs, desc)


register(
    OpInfo(
        "cross_entropy",
        lambda x, target, reduction, label_smoothing: _apply(
            ops.CrossEntropy(target, reduction, label_smoothing), x
        ),
        _cross_entropy,
        _ce_samples,
        errors=(
            _ce_error(
                np.ones((2, 3)),
                np.array([0, 1]),
                ValueError,
                r"^cross_entropy: reduction must be 'mean', 'sum' or 'none', got 'avg'",
                "bad_reduction",
                reduction="avg",
            ),
            _ce_error(
                np.ones((2, 3)),
                np.array([0, 1]),
                RuntimeError,
                r"^cross_entropy: label_smoothing must be between 0.0 and 1.0. Got: 1.5",
                "bad_smoothing",
                smoothing=1.5,
            ),
            _ce_error(
                np.ones((2, 3)),
                np.array([0, 3]),
                IndexError,
                r"^cross_entropy: target class 3 is out of range for 3 classes",
                "target_too_large",
            ),
            _ce_error(
                np.ones((2, 3)),
                np.array([-1, 0]),
                IndexError,
                r"^cross_entropy: target class -1 is out of range for 3 classes",
                "target_negative",
            ),
            _ce_error(
                np.ones((2, 3)),
                np.array([0, -128], dtype=np.int8),
                IndexError,
                r"^cross_entropy: target class -128 is out of range for 3 classes",
                "target_negative_int8",
            ),
            _ce_error(
                np.ones((3, 300)),
                np.array([299, 0, 300], dtype=np.uint16)[::-1],  # strided, unsigned
                IndexError,
                r"^cross_entropy: target class 300 is out of range for 300 classes",
                "target_too_large_uint16",
            ),
            _ce_error(
                np.ones((2, 3)),
                np.array([0.0, 1.0]),
                RuntimeError,
                r"^cross_entropy: expected target dtype to be Long or Byte \(class indices\), "
                r"but got float64",
                "float_target",
            ),
            _ce_error(
                np.ones(3),
                np.array([0]),
                ValueError,
                r"^cross_entropy: logits must be 2-D \(batch, classes\), got shape \(3,\)",
                "1d_logits",
            ),
            _ce_error(
                np.ones((2, 3)),
                np.array([0, 1, 2]),
                ValueError,
                r"^cross_entropy: Expected input batch_size \(2\) to match target batch_size "
                r"\(3\): logits of shape \(2, 3\), target of shape \(3,\)",
                "target_shape",
            ),
            _ce_error(
                np.ones((2, 3)),
                np.zeros((2, 3), dtype=np.int64),
                RuntimeError,
                r"^cross_entropy: 0D or 1D target tensor expected, multi-target not supported",
                "target_2d",
            ),
        ),
    )
)


def _bce_pair(rng: np.random.Generator, sx: Shape, sy: Shape):
    return uniform(rng, sx, -4, 4), rng.uniform(0, 1, sy)


register(
    OpInfo(
        "binary_cross_entropy_with_logits",
        lambda x, y: _apply(ops.BinaryCrossEntropyWithLogits(), x, y),
        lambda x, y: np.logaddexp(0, x) - x * y,
        lambda rng: [
            *binary_samples(_bce_pair)(rng),
            Sample(
                (np.array([-1000.0, -50.0, 0.0, 50.0, 1000.0]), np.array([0, 1, 0.5, 0, 1])),
                {},
                "extreme",
                grad=False,
            ),
        ],
        errors=(broadcast_error("binary_cross_entropy_with_logits"),),
    )
)


exempt("0-d", "logits are 2-D (an error input)", "cross_entropy")
