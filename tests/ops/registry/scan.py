"""Registry entries for ``tensorgrad/ops/scan.py`` (cumprod, logcumsumexp) and for the scans
composed of other ops (cummax and cummin: a gather at the running arg-extreme)."""

from __future__ import annotations

import numpy as np

import tensorgrad as tg
from tests.ops.registry.core import ErrorInput, OpInfo, Sample, distinct, register, uniform

#: (description, shape, dim, layout), as cumsum's entry
SCAN_CASES = [
    ("vector", (5,), 0, "C"),
    ("rows", (2, 3, 4), 1, "C"),
    ("negative_dim", (2, 3, 4), -1, "C"),
    ("first", (3, 2), 0, "C"),
    ("0d", (), 0, "C"),
    ("0d_negative_dim", (), -1, "C"),
    ("size1", (1,), 0, "C"),
    ("size1_axis", (3, 1), 1, "C"),
    ("empty", (0, 3), 0, "C"),
    ("empty_other_axis", (0, 3), 1, "C"),
    ("transposed", (3, 4), 1, "T"),
    ("strided", (2, 5), 1, "S"),
]


def scan_samples(make=uniform, extra=()):
    def samples(rng):
        result = [
            Sample((make(rng, s),), {"dim": d}, desc, (lay,)) for desc, s, d, lay in SCAN_CASES
        ]
        return result + [Sample((np.array(a),), {"dim": d}, desc) for desc, a, d in extra]

    return samples


def _along(function):
    return lambda x, dim: function(x, axis=dim) if x.ndim else x.copy()


def _dim_error(name: str) -> ErrorInput:
    return ErrorInput(
        (np.ones((2, 3)),),
        IndexError,
        rf"^{name}: axis 2 is out of range for a tensor of 2 dimensions",
        {"dim": 2},
        "dim_out_of_range",
    )


register(
    OpInfo(
        "cumprod",
        lambda x, dim: x.cumprod(dim),
        _along(np.cumprod),
        scan_samples(
            extra=[
                ("one_zero", [1.5, -2.0, 0.0, 0.5, 3.0], 0),
                ("two_zeros", [[0.0, 2.0, 0.0, -1.5], [1.5, 0.5, 0.0, 2.0]], 1),
                ("zero_first", [[0.0, 1.5], [-2.0, 0.0]], 0),
            ]
        ),
        errors=(_dim_error("cumprod"),),
    )
)
register(
    OpInfo(
        "logcumsumexp",
        lambda x, dim: tg.logcumsumexp(x, dim),
        _along(lambda x, axis: np.logaddexp.accumulate(x, axis=axis)),
        scan_samples(
            lambda rng, s: uniform(rng, s, -5, 5), extra=[("wide", [-30.0, 0.0, 20.0, -5.0], 0)]
        ),
        errors=(_dim_error("logcumsumexp"),),
    )
)


def _running(extreme):
    def reference(x, dim):
        return extreme.accumulate(x, axis=dim) if x.ndim and x.size else x.copy()

    return reference


register(
    OpInfo(
        "cummax",
        lambda x, dim: x.cummax(dim).values,
        _running(np.maximum),
        scan_samples(distinct),
        second_order="piecewise linear: the second derivative is 0 wherever it is defined",
    )
)
register(
    OpInfo(
        "cummin",
        lambda x, dim: tg.cummin(x, dim)[0],
        _running(np.minimum),
        scan_samples(distinct),
        second_order="piecewise linear: the second derivative is 0 wherever it is defined",
    )
)
