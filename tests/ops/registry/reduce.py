"""Registry entries for ``tensorgrad/ops/reduce.py``: sum, mean, var, max/min, logsumexp, and the
index reductions argmax/argmin (no op of their own: forward only).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import scipy.special

import tensorgrad as tg
from tests.ops.registry.core import (
    PIECEWISE_LINEAR,
    ErrorInput,
    OpInfo,
    Sample,
    Shape,
    distinct,
    exempt,
    register,
    uniform,
)


def _logsumexp(x, axis, keepdims):
    result = scipy.special.logsumexp(x, axis=axis, keepdims=keepdims)
    return np.reshape(result, np.sum(x, axis=axis, keepdims=keepdims).shape)  # 0-d: SciPy's (1,)


# ---- reductions --------------------------------------------------------------------------
#: (description, shape, axis, keepdims, layout)
REDUCTION_CASES: list[tuple[str, Shape, Any, bool, str]] = [
    ("all", (2, 3, 4), None, False, "C"),
    ("all_keepdims", (2, 3, 4), None, True, "C"),
    ("axis0", (2, 3, 4), 0, False, "C"),
    ("axis_neg", (2, 3, 4), -1, True, "C"),
    ("axis_tuple", (2, 3, 4), (0, 2), False, "C"),
    ("axis_tuple_keepdims", (2, 3, 4), (2, 0), True, "C"),
    ("0d", (), None, False, "C"),
    ("0d_keepdims", (), None, True, "C"),
    ("size1", (1,), 0, False, "C"),
    ("size1_axis", (3, 1), 1, False, "C"),
    ("vector", (5,), 0, True, "C"),
    ("transposed", (3, 4), 0, False, "T"),
    ("strided", (3, 4), 1, True, "S"),
    ("empty_kept_axis", (0, 3), 1, False, "C"),
]


def reduction_samples(
    make: Callable[[np.random.Generator, Shape], np.ndarray] = uniform,
    extra: Sequence[tuple[str, Shape, Any, bool, str]] = (),
    nan_if: Callable[[Shape, Any], bool] = lambda shape, axis: False,
    **kwargs: Any,
) -> Callable[[np.random.Generator], list[Sample]]:
    def samples(rng: np.random.Generator) -> list[Sample]:
        return [
            Sample(
                (make(rng, shape),),
                {"axis": axis, "keepdims": keepdims, **kwargs},
                desc,
                (layout,),
                grad=not nan_if(shape, axis),
            )
            for desc, shape, axis, keepdims, layout in [*REDUCTION_CASES, *extra]
        ]

    return samples


def _axis_errors(name: str, **kwargs: Any) -> tuple[ErrorInput, ...]:
    return (
        ErrorInput(
            (np.ones((2, 3)),),
            IndexError,
            rf"^{name}: axis 2 is out of range for a tensor of 2 dimensions",
            {"axis": 2, "keepdims": False, **kwargs},
            "axis_out_of_range",
        ),
        ErrorInput(
            (np.ones((2, 3)),),
            IndexError,
            rf"^{name}: axis -3 is out of range for a tensor of 2 dimensions",
            {"axis": -3, "keepdims": False, **kwargs},
            "negative_axis_out_of_range",
        ),
        ErrorInput(
            (np.ones(()),),
            IndexError,
            rf"^{name}: axis 0 is out of range for a tensor of 0 dimensions",
            {"axis": 0, "keepdims": False, **kwargs},
            "axis_of_0d",
        ),
        ErrorInput(
            (np.ones((2, 3)),),
            ValueError,
            rf"^{name}: repeated axis in \(1, -1\)",
            {"axis": (1, -1), "keepdims": False, **kwargs},
            "repeated_axis",
        ),
        ErrorInput(
            (np.ones((2, 3)),),
            TypeError,
            rf"^{name}: axis must be an int or a tuple of ints, got 1.5",
            {"axis": 1.5, "keepdims": False, **kwargs},
            "float_axis",
        ),
    )


def _reduced_size(shape: Shape, axis: Any) -> int:
    axes = range(len(shape)) if axis is None else (axis if isinstance(axis, tuple) else (axis,))
    return int(np.prod([shape[a] for a in axes], dtype=np.int64))


_EMPTY_REDUCED = [("empty_reduced", (0, 3), 0, False, "C")]
register(
    OpInfo(
        "sum",
        lambda x, axis, keepdims: x.sum(axis=axis, keepdims=keepdims),
        lambda x, axis, keepdims: np.sum(x, axis=axis, keepdims=keepdims),
        reduction_samples(extra=_EMPTY_REDUCED),
        errors=_axis_errors("sum"),
    )
)
register(
    OpInfo(
        "mean",
        lambda x, axis, keepdims: tg.mean(x, axis, keepdims),
        lambda x, axis, keepdims: np.mean(x, axis=axis, keepdims=keepdims),
        reduction_samples(
            extra=_EMPTY_REDUCED, nan_if=lambda shape, axis: _reduced_size(shape, axis) == 0
        ),
        errors=_axis_errors("mean"),
    )
)
for _correction in (0, 1):
    register(
        OpInfo(
            f"var_correction{_correction}",
            lambda x, axis, keepdims, correction: x.var(
                dim=axis, keepdim=keepdims, correction=correction
            ),
            lambda x, axis, keepdims, correction: np.var(
                x, axis=axis, keepdims=keepdims, ddof=correction
            ),
            reduction_samples(
                nan_if=lambda shape, axis, c=_correction: _reduced_size(shape, axis) <= c,
                correction=_correction,
            ),
            errors=_axis_errors("var", correction=_correction),
        )
    )
_EMPTY_MAX_ERROR = ErrorInput(
    (np.ones((0, 3)),),
    ValueError,
    "",
    {"axis": 0, "keepdims": False},
    "empty_reduced",
)
register(
    OpInfo(
        "max",
        lambda x, axis, keepdims: x.amax(axis=axis, keepdims=keepdims),
        lambda x, axis, keepdims: np.max(x, axis=axis, keepdims=keepdims),
        reduction_samples(distinct),
        errors=(*_axis_errors("max"), replace(_EMPTY_MAX_ERROR, match=r"^max: zero-size array")),
        second_order=PIECEWISE_LINEAR,
    )
)
register(
    OpInfo(
        "min",
        lambda x, axis, keepdims: tg.amin(x, axis=axis, keepdims=keepdims),
        lambda x, axis, keepdims: np.min(x, axis=axis, keepdims=keepdims),
        reduction_samples(distinct),
        errors=(*_axis_errors("min"), replace(_EMPTY_MAX_ERROR, match=r"^min: zero-size array")),
        second_order=PIECEWISE_LINEAR,
    )
)
register(
    OpInfo(
        "logsumexp",
        lambda x, axis, keepdims: x.logsumexp(axis=axis, keepdims=keepdims),
        _logsumexp,
        lambda rng: [
            *reduction_samples(extra=_EMPTY_REDUCED)(rng),
            Sample(
                (np.array([[1000.0, 1000.5, 999.0], [-1000.0, -1001.0, -999.5]]),),
                {"axis": 1, "keepdims": False},
                "large",
                grad=False,
            ),
        ],
        errors=_axis_errors("logsumexp"),
    )
)


def _arg_samples(rng: np.random.Generator) -> list[Sample]:
    cases = [
        ("all", (3, 4), None, False),
        ("axis0", (3, 4), 0, False),
        ("axis_neg_keepdims", (2, 3, 4), -1, True),
        ("0d", (), None, False),
        ("size1", (1,), 0, False),
        ("empty_kept", (0, 3), 1, False),
    ]
    return [
        Sample((distinct(rng, s),), {"axis": a, "keepdims": k}, d, grad=False)
        for d, s, a, k in cases
    ]


for _name, _np_fn in (("argmax", np.argmax), ("argmin", np.argmin)):
    register(
        OpInfo(
            _name,
            lambda x, axis, keepdims, name=_name: getattr(x, name)(axis=axis, keepdims=keepdims),
            lambda x, axis, keepdims, f=_np_fn: f(x, axis=axis, keepdims=keepdims),
            _arg_samples,
            errors=(
                ErrorInput(
                    (np.ones((2, 3)),),
                    IndexError,
                    rf"^{_name}: axis 2 is out of range for a tensor of 2 dimensions",
                    {"axis": 2, "keepdims": False},
                    "axis_out_of_range",
                ),
            ),
            differentiable=False,
            second_order="not differentiable: integer indices",
            out_dtype=np.int64,
        )
    )


exempt("non-contiguous", "forward only", "argmax", "argmin")
