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
            rf"^{name}: axis 1 is out of range for a tensor of 0 dimensions",
            {"axis": 1, "keepdims": False, **kwargs},  # 0 and -1 are PyTorch's for 0-d
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


# ---- prod --------------------------------------------------------------------------------
def _prod_values(rng: np.random.Generator, shape: Shape) -> np.ndarray:
    """Magnitudes in [0.5, 1.5] of either sign: products of many stay of order one."""
    return np.array(rng.uniform(0.5, 1.5, shape) * rng.choice([-1.0, 1.0], shape))


def _with_zeros(rng: np.random.Generator, shape: Shape, zeros: Sequence[Any]) -> np.ndarray:
    x = _prod_values(rng, shape)
    for index in zeros:
        x[index] = 0.0
    return x


def _prod_samples(rng: np.random.Generator) -> list[Sample]:
    """The reductions over one dim or all (PyTorch's prod takes no tuple of dims), and zeros:
    one in a slice (its gradient is the product of the others), two or three (0)."""
    result = [
        Sample((_prod_values(rng, shape),), {"dim": axis, "keepdim": keepdims}, desc, (layout,))
        for desc, shape, axis, keepdims, layout in [*REDUCTION_CASES, *_EMPTY_REDUCED]
        if not isinstance(axis, tuple)
    ]
    zero_cases = [
        # (description, shape, dim, keepdim, where the zeros are)
        ("zeros_one_two_none_per_row", (3, 4), 1, False, [(0, 1), (1, 0), (1, 3)]),
        ("zeros_one_and_three_per_column", (4, 2), 0, True, [(2, 0), (0, 1), (1, 1), (3, 1)]),
        ("zero_one_of_all", (2, 3), None, False, [(1, 2)]),
        ("zeros_two_of_all", (2, 3), None, False, [(0, 0), (1, 1)]),
        ("zero_0d", (), None, False, [()]),
        ("zero_0d_dim", (), 0, True, [()]),
        ("zero_size1", (1,), 0, False, [(0,)]),
    ]
    for desc, shape, axis, keepdims, zeros in zero_cases:
        x = _with_zeros(rng, shape, zeros)
        result.append(Sample((x,), {"dim": axis, "keepdim": keepdims}, desc))
    return result


def _prod_ref(x: np.ndarray, dim: Any, keepdim: bool) -> np.ndarray:
    if dim is None:
        return np.prod(x, keepdims=keepdim)
    return np.prod(x, axis=dim, keepdims=keepdim) if x.ndim else x.copy()


register(
    OpInfo(
        "prod",
        lambda x, dim, keepdim: x.prod(dim, keepdim),
        _prod_ref,
        _prod_samples,
        errors=(
            ErrorInput(
                (np.ones((2, 3)),),
                IndexError,
                r"^prod: axis 2 is out of range for a tensor of 2 dimensions",
                {"dim": 2, "keepdim": False},
                "dim_out_of_range",
            ),
            ErrorInput(
                (np.ones(()),),
                IndexError,
                r"^prod: axis 1 is out of range for a tensor of 0 dimensions",
                {"dim": 1, "keepdim": False},  # 0 and -1 are PyTorch's for 0-d
                "dim_of_0d",
            ),
            ErrorInput(
                (np.ones((2, 3)),),
                TypeError,
                r"^prod: dim must be an int, got \(0, 1\)",
                {"dim": (0, 1), "keepdim": False},
                "tuple_dim",
            ),
            ErrorInput(
                (np.ones((2, 3)),),
                TypeError,
                r"^prod: dim must be an int, got 1.5",
                {"dim": 1.5, "keepdim": False},
                "float_dim",
            ),
        ),
    )
)


# ---- std ---------------------------------------------------------------------------------
def _constant_slices(rng: np.random.Generator) -> list[Sample]:
    """A constant column and a constant matrix: std 0, not differentiable there (its
    gradient is 0 by PyTorch's convention, tested by value in test_backward.py)."""
    x = uniform(rng, (3, 4))
    x[:, 1] = 0.75  # a mean computed exactly: the variance is 0, not a rounding error
    return [
        Sample((x,), {"axis": 0, "keepdims": False}, "constant_column", grad=False),
        Sample((np.full((2, 3), -1.5),), {"axis": None, "keepdims": True}, "constant", grad=False),
    ]


for _correction in (0, 1):
    register(
        OpInfo(
            f"std_correction{_correction}",
            lambda x, axis, keepdims, correction, **more: x.std(
                dim=axis, keepdim=keepdims, correction=correction, **more
            ),
            lambda x, axis, keepdims, correction: np.std(
                x, axis=axis, keepdims=keepdims, ddof=correction
            ),
            lambda rng, c=_correction: [
                *reduction_samples(
                    nan_if=lambda shape, axis: _reduced_size(shape, axis) <= c, correction=c
                )(rng),
                *[replace(s, kwargs={**s.kwargs, "correction": c}) for s in _constant_slices(rng)],
            ],
            errors=(
                *_axis_errors("std", correction=_correction),
                ErrorInput(
                    (np.ones(3),),
                    TypeError,
                    r"^var/std: pass unbiased or correction, not both",
                    {"axis": 0, "keepdims": False, "correction": _correction, "unbiased": True},
                    "unbiased_and_correction",
                ),
            ),
        )
    )


# ---- norm --------------------------------------------------------------------------------
def _norm_values(rng: np.random.Generator, shape: Shape) -> np.ndarray:
    """Magnitudes distinct (no ties for ±inf) and at least 0.2 from 0 (the kink of |x|)."""
    magnitudes = 0.2 + np.abs(distinct(rng, shape))
    return magnitudes * rng.choice([-1.0, 1.0], shape)


#: the reduction cases each p runs on (p = 2 runs on all of them)
_NORM_CASES = ("axis_tuple_keepdims", "0d", "strided")


def _norm_samples(rng: np.random.Generator) -> list[Sample]:
    inf = float("inf")
    result = []
    for p in (2.0, 1.0, 3.0, inf, -inf, 0.0, 0.5):
        for desc, shape, axis, keepdims, layout in REDUCTION_CASES:
            if p != 2.0 and desc not in _NORM_CASES:
                continue
            kwargs = {"p": p, "axis": axis, "keepdims": keepdims}
            x = _norm_values(rng, shape)
            result.append(Sample((x,), kwargs, f"p={p:g}-{desc}", (layout,)))
        # a zero vector (and a zero row): the norm is 0, where no p-norm with p > 0 is
        # differentiable; the gradient there is 0 by convention (test_backward.py)
        zeros = np.zeros((2, 3))
        zeros[1] = _norm_values(rng, (3,))
        kwargs = {"p": p, "axis": 1, "keepdims": False}
        result.append(Sample((zeros,), kwargs, f"p={p:g}-zero_row", grad=p == 0.0))
    for p in (2.0, 0.0):  # p > 0 or 0: the norm of nothing is 0
        kwargs = {"p": p, "axis": 0, "keepdims": False}
        result.append(Sample((np.zeros((0, 3)),), kwargs, f"p={p:g}-empty_reduced"))
    return result


def _norm_ref(x, p, axis, keepdims):
    a = np.abs(x)
    if p == float("inf"):
        return np.max(a, axis=axis, keepdims=keepdims, initial=0.0)
    if p == -float("inf"):
        return np.min(a, axis=axis, keepdims=keepdims)
    if p == 0:
        return np.sum(a != 0, axis=axis, keepdims=keepdims).astype(x.dtype)
    return np.sum(a**p, axis=axis, keepdims=keepdims) ** (1 / p)


register(
    OpInfo(
        "norm",
        lambda x, p, axis, keepdims: x.norm(p, dim=axis, keepdim=keepdims),
        _norm_ref,
        _norm_samples,
        errors=(
            *_axis_errors("norm", p=2.0),
            ErrorInput(
                (np.ones(3),),
                ValueError,
                r"^norm: p must be a number or 'fro', got 'nuc'",
                {"p": "nuc", "axis": None, "keepdims": False},
                "matrix_norm",
            ),
            ErrorInput(
                (np.ones((0, 3)),),
                RuntimeError,
                r"^norm: cannot compute the inf norm over no elements",
                {"p": float("inf"), "axis": 0, "keepdims": False},
                "inf_of_nothing",
            ),
        ),
    )
)


# ---- cumsum ------------------------------------------------------------------------------
register(
    OpInfo(
        "cumsum",
        lambda x, dim: x.cumsum(dim),
        lambda x, dim: np.cumsum(x, axis=dim) if x.ndim else x.copy(),
        lambda rng: [
            Sample((uniform(rng, s),), {"dim": d}, desc, (lay,))
            for desc, s, d, lay in [
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
        ],
        errors=(
            ErrorInput(
                (np.ones((2, 3)),),
                IndexError,
                r"^cumsum: axis 2 is out of range for a tensor of 2 dimensions",
                {"dim": 2},
                "dim_out_of_range",
            ),
            ErrorInput(
                (np.ones(()),),
                IndexError,
                r"^cumsum: axis 1 is out of range for a tensor of 1 dimension",
                {"dim": 1},
                "dim_of_0d",
            ),
            ErrorInput(
                (np.ones((2, 3)),),
                TypeError,
                r"^cumsum: axis must be an int, got None",
                {"dim": None},
                "dim_none",
            ),
        ),
    )
)
