"""Registry entries for ``tensorgrad/ops/activation.py``: sigmoid, relu, leaky relu, gelu and
the softmax family.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.special

import tensorgrad as tg
from tests.ops.registry.core import (
    PIECEWISE_LINEAR,
    ErrorInput,
    OpInfo,
    Sample,
    away,
    exempt,
    register,
    unary_samples,
    uniform,
)


# --------------------------------------------------------------------------- references
def _sigmoid(x):
    return 0.5 * (1 + np.tanh(0.5 * x))  # stable, and not the formula the op uses


def _erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def _gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def _softmax(x, axis=-1):
    return scipy.special.softmax(x, axis=axis) if np.size(x) else x.copy()


def _log_softmax(x, axis=-1):
    return scipy.special.log_softmax(x, axis=axis) if np.size(x) else x.copy()


# --------------------------------------------------------------------------- entries
register(
    OpInfo(
        "sigmoid",
        lambda x: tg.sigmoid(x),
        _sigmoid,
        unary_samples(
            lambda r, s: uniform(r, s, -5, 5),
            extra=lambda r: [
                Sample(
                    (np.array([-1000.0, -100.0, -30.0, 0.0, 30.0, 100.0, 1000.0]),),
                    desc="extreme",
                    grad=False,
                )
            ],
        ),
    )
)
register(
    OpInfo(
        "relu",
        lambda x: x.relu(),
        lambda x: x * (x > 0),
        unary_samples(away),
        second_order=PIECEWISE_LINEAR,
    )
)
for _slope in (0.01, 0.2):
    register(
        OpInfo(
            f"leaky_relu_{_slope}",
            lambda x, slope: tg.leaky_relu(x, slope),
            lambda x, slope: np.where(x > 0, x, slope * x),
            unary_samples(away, slope=_slope),
            second_order=PIECEWISE_LINEAR,
        )
    )
register(
    OpInfo(
        "gelu_none",
        lambda x, approximate="none": x.gelu(approximate),
        lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2))),
        unary_samples(lambda r, s: uniform(r, s, -4, 4)),
        errors=(
            ErrorInput(
                (np.ones(3),),
                RuntimeError,
                r"^gelu: approximate argument must be either none or tanh, "
                r"got 'erf'",
                {"approximate": "erf"},
                "bad_approximation",
            ),
        ),
    )
)
register(
    OpInfo(
        "gelu_tanh",
        lambda x: tg.gelu(x, approximate="tanh"),
        _gelu_tanh,
        unary_samples(lambda r, s: uniform(r, s, -4, 4)),
    )
)

register(
    OpInfo(
        "hardswish",
        lambda x: tg.nn.functional.hardswish(x),
        lambda x: x * np.clip(x + 3, 0, 6) / 6,
        unary_samples(lambda r, s: away(r, s, kinks=(-3.0, 3.0), low=-5.0, high=5.0)),
    )
)


def _prelu_samples(rng: np.random.Generator) -> list[Sample]:
    """An input away from the kink with one slope (0-d weight) or one per channel (dim 1)."""
    cases = [
        ("images", (2, 3, 4, 2), (3,), "CC"),
        ("matrix", (2, 3), (3,), "CC"),
        ("one_slope", (2, 5), (), "CC"),
        ("0d", (), (), "CC"),
        ("size1", (2, 1), (1,), "CC"),
        ("vector", (5,), (1,), "CC"),
        ("empty", (0, 3), (3,), "CC"),
        ("transposed", (4, 3), (), "TC"),
    ]
    return [
        Sample((away(rng, sx), uniform(rng, sw, -1, 1)), {}, desc, tuple(layouts))
        for desc, sx, sw, layouts in cases
    ]


register(
    OpInfo(
        "prelu",
        lambda x, w: tg.nn.functional.prelu(x, w),
        lambda x, w: (
            np.where(x > 0, x, w.reshape(-1, *[1] * (x.ndim - 2)) * x)
            if w.ndim and x.ndim >= 2
            else np.where(x > 0, x, w * x)
        ),
        _prelu_samples,
        second_order=PIECEWISE_LINEAR,
        errors=(
            ErrorInput(
                (np.ones((2, 3)), np.ones((3, 1))),
                RuntimeError,
                r"^prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = 2",
                {},
                "matrix_weight",
            ),
            ErrorInput(
                (np.ones((2, 3)), np.ones(2)),
                RuntimeError,
                r"^Mismatch of parameter numbers and input channel size",
                {},
                "channel_count",
            ),
        ),
    )
)


# ---- softmax family ----------------------------------------------------------------------
def _softmax_samples(rng: np.random.Generator) -> list[Sample]:
    cases = [
        ("last", (2, 3, 4), -1, "C"),
        ("first", (2, 3, 4), 0, "C"),
        ("middle", (2, 3, 4), 1, "C"),
        ("vector", (5,), 0, "C"),
        ("size1", (1,), 0, "C"),
        ("size1_axis", (3, 1), 1, "C"),
        ("empty_batch", (0, 3), -1, "C"),
        ("empty_axis", (3, 0), 1, "C"),
        ("transposed", (3, 4), 0, "T"),
        ("strided", (3, 4), -1, "S"),
    ]
    result = [Sample((uniform(rng, s, -3, 3),), {"axis": a}, d, (lay,)) for d, s, a, lay in cases]
    result.append(
        Sample(
            (np.array([[1000.0, 999.0, -1000.0], [-1e4, -1e4, -1e4 + 1]]),),
            {"axis": -1},
            "large",
            grad=False,
        )
    )
    return result


_SOFTMAX_ERRORS = [
    ("axis_out_of_range", (2, 3), 2, r"axis 2 is out of range for a tensor of 2 dimensions"),
    ("0d", (), -2, r"axis -2 is out of range for a tensor of 0 dimensions"),  # 0, -1: PyTorch's
]
for _name, _fn, _ref in (
    ("softmax", lambda x, axis: x.softmax(axis), _softmax),
    ("log_softmax", lambda x, axis: tg.log_softmax(x, axis), _log_softmax),
):
    register(
        OpInfo(
            _name,
            _fn,
            _ref,
            _softmax_samples,
            errors=tuple(
                ErrorInput((np.ones(s),), IndexError, rf"^{_name}: {m}", {"axis": a}, d)
                for d, s, a, m in _SOFTMAX_ERRORS
            ),
        )
    )


exempt("0-d", "needs an axis (an error input)", "softmax", "log_softmax")
