"""Registry entries for ``tensorgrad/ops/trig.py``: asin … atanh, sinh, cosh and atan2."""

from __future__ import annotations

import numpy as np

import tensorgrad as tg
from tests.ops.registry.core import (
    OpInfo,
    binary_samples,
    broadcast_error,
    register,
    unary_samples,
    uniform,
)


def _within(low: float, high: float):
    return lambda rng, shape: uniform(rng, shape, low, high)


for _name, _fn, _ref, _make in [
    ("asin", lambda x: x.asin(), np.arcsin, _within(-0.9, 0.9)),
    ("acos", lambda x: tg.acos(x), np.arccos, _within(-0.9, 0.9)),
    ("atan", lambda x: x.arctan(), np.arctan, _within(-3, 3)),
    ("sinh", lambda x: x.sinh(), np.sinh, _within(-3, 3)),
    ("cosh", lambda x: tg.cosh(x), np.cosh, _within(-3, 3)),
    ("asinh", lambda x: x.asinh(), np.arcsinh, _within(-3, 3)),
    ("acosh", lambda x: x.acosh(), np.arccosh, _within(1.2, 4)),
    ("atanh", lambda x: tg.atanh(x), np.arctanh, _within(-0.9, 0.9)),
]:
    register(OpInfo(_name, _fn, _ref, unary_samples(_make)))


def _away_from_origin(rng, shape_y, shape_x):
    """y and x with |x| + |y| >= 0.5: atan2's slope grows like 1/r near the origin."""
    y = uniform(rng, shape_y)
    x = uniform(rng, shape_x)
    return np.where(np.abs(y) < 0.3, 0.7, y), np.where(np.abs(x) < 0.3, -0.8, x)


register(
    OpInfo(
        "atan2",
        lambda y, x: y.atan2(x),
        np.arctan2,
        binary_samples(_away_from_origin),
        errors=(broadcast_error("atan2"),),
    )
)
register(
    OpInfo(
        "atan2_number", lambda y: tg.atan2(y, 0.5), lambda y: np.arctan2(y, 0.5), unary_samples()
    )
)
