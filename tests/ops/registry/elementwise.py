"""Registry entries for ``tensorgrad/ops/elementwise.py``: arithmetic (with tensors and Python
numbers on either side), pointwise math, clamp, maximum/minimum, where and casts.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

import tensorgrad as tg
from tensorgrad import ops
from tensorgrad.core.engine import apply as _apply
from tests.ops.registry.core import (
    PIECEWISE_LINEAR,
    UNARY_SHAPES,
    ErrorInput,
    OpInfo,
    Sample,
    Shape,
    away,
    binary_samples,
    broadcast_error,
    nonzero,
    pair,
    positive,
    register,
    separated,
    unary_samples,
    uniform,
)

# ---- arithmetic -----------------------------------------------------------------------
for _name, _fn, _ref, _make in [
    ("add", lambda x, y: x + y, np.add, pair()),
    ("sub", lambda x, y: x - y, np.subtract, pair()),
    ("mul", lambda x, y: x * y, np.multiply, pair()),
    ("div", lambda x, y: x / y, np.divide, pair(uniform, nonzero)),
]:
    register(OpInfo(_name, _fn, _ref, binary_samples(_make), errors=(broadcast_error(_name),)))

# a Python number on either side: the op sees a constant, not a tensor
register(OpInfo("add_scalar", lambda x: 1.5 + x, lambda x: 1.5 + x, unary_samples()))
register(OpInfo("rsub_scalar", lambda x: 1.5 - x, lambda x: 1.5 - x, unary_samples()))
register(OpInfo("mul_scalar", lambda x: x * -2.5, lambda x: x * -2.5, unary_samples()))
register(OpInfo("div_scalar", lambda x: x / 4.0, lambda x: x / 4.0, unary_samples()))
register(OpInfo("rdiv_scalar", lambda x: 2.0 / x, lambda x: 2.0 / x, unary_samples(nonzero)))
register(OpInfo("neg", lambda x: -x, np.negative, unary_samples()))


def _pow_scalar_samples(rng: np.random.Generator) -> list[Sample]:
    result = []
    for p in (2, 3, -1, 0, 1, 0.5, -1.5, 2.7):
        make = positive if not float(p).is_integer() or p < 0 else uniform
        for desc, shape, layout in UNARY_SHAPES:
            if desc in ("0d", "matrix", "empty", "transposed") or p == 2:
                result.append(Sample((make(rng, shape),), {"p": p}, f"p={p}-{desc}", (layout,)))
    return result


register(OpInfo("pow_scalar", lambda x, p: x**p, lambda x, p: np.power(x, p), _pow_scalar_samples))
register(
    OpInfo(
        "pow_tensor",
        lambda x, y: x**y,
        np.power,
        binary_samples(pair(positive, uniform)),
        errors=(broadcast_error("pow"),),
    )
)
register(OpInfo("rpow_scalar", lambda x: 2.0**x, lambda x: np.power(2.0, x), unary_samples()))


# ---- remainders and rounding: samples away from their jumps ------------------------------
def _dividend(rng: np.random.Generator, shape: Shape, scale: float = 1.0) -> np.ndarray:
    """Values ``scale·(m + u)``, integer m, u in [0.2, 0.8]: quotients by a divisor within 5% of
    ±scale stay at least 0.1 from a whole number, where remainder and floor jump."""
    return scale * (rng.integers(-2, 2, shape) + rng.uniform(0.2, 0.8, shape))


def _divisor(rng: np.random.Generator, shape: Shape) -> np.ndarray:
    return rng.uniform(0.95, 1.05, shape) * rng.choice([-1.0, 1.0], shape)


for _name, _op, _fn, _ref in [
    ("mod_operator", "remainder", lambda x, y: x % y, np.mod),  # with PyTorch's promotion
    ("div_floor", "div_floor", lambda x, y: x // y, np.floor_divide),
    ("div_trunc", "div_trunc", lambda x, y: x.div(y, rounding_mode="trunc"),
     lambda x, y: np.trunc(x / y)),
]:  # fmt: skip
    register(
        OpInfo(
            _name,
            _fn,
            _ref,
            binary_samples(pair(_dividend, _divisor)),
            errors=(broadcast_error(_op),),
            second_order=PIECEWISE_LINEAR,
        )
    )
register(
    OpInfo(
        "remainder_scalar",
        lambda x: x % 0.7,
        lambda x: np.mod(x, 0.7),
        unary_samples(lambda r, s: _dividend(r, s, 0.7)),
        second_order=PIECEWISE_LINEAR,
    )
)
register(
    OpInfo(
        "rremainder_scalar",
        lambda x: 2.5 % x,
        lambda x: np.mod(2.5, x),
        unary_samples(_divisor),
        second_order=PIECEWISE_LINEAR,
    )
)
for _name, _fn, _ref in [
    ("floor", lambda x: x.floor(), np.floor),
    ("ceil", lambda x: x.ceil(), np.ceil),
    ("round", lambda x: x.round(), np.round),
    ("trunc", lambda x: x.trunc(), np.trunc),
    ("sign", lambda x: x.sign(), np.sign),
]:
    _kinks = (0.0,) if _name == "sign" else tuple(k / 2 for k in range(-5, 6))
    register(
        OpInfo(
            _name,
            _fn,
            _ref,
            unary_samples(lambda r, s, k=_kinks: away(r, s, k, margin=0.05)),
            second_order=PIECEWISE_LINEAR,
        )
    )

# ---- elementwise functions ---------------------------------------------------------------
register(OpInfo("exp", lambda x: x.exp(), np.exp, unary_samples()))
register(OpInfo("log", lambda x: tg.log(x), np.log, unary_samples(positive)))
register(OpInfo("sqrt", lambda x: x.sqrt(), np.sqrt, unary_samples(positive)))
register(
    OpInfo("sin", lambda x: tg.sin(x), np.sin, unary_samples(lambda r, s: uniform(r, s, -3, 3)))
)
register(OpInfo("cos", lambda x: x.cos(), np.cos, unary_samples(lambda r, s: uniform(r, s, -3, 3))))
register(
    OpInfo("tanh", lambda x: x.tanh(), np.tanh, unary_samples(lambda r, s: uniform(r, s, -3, 3)))
)
register(
    OpInfo("abs", lambda x: abs(x), np.abs, unary_samples(away), second_order=PIECEWISE_LINEAR)
)


def _clip_samples(rng: np.random.Generator) -> list[Sample]:
    result = []
    for low, high in ((-0.5, 0.5), (None, 0.3), (-0.2, None), (1.0, 1.0)):
        kinks = [b for b in (low, high) if b is not None]
        for desc, shape, layout in UNARY_SHAPES:
            x = away(rng, shape, kinks, margin=0.1)
            result.append(
                Sample((x,), {"low": low, "high": high}, f"{low},{high}-{desc}", (layout,))
            )
    return result


_clip_error = ErrorInput(
    (np.ones(3),),
    ValueError,
    r"^clamp: at least one of min and max must be given",
    {"low": None, "high": None},
    "no_bounds",
)
register(
    OpInfo(
        "clip",
        lambda x, low, high: x.clip(low, high),
        lambda x, low, high: np.clip(x, low, high),
        _clip_samples,
        errors=(_clip_error,),
        second_order=PIECEWISE_LINEAR,
    )
)
register(
    OpInfo(
        "clamp",
        lambda x, low, high: tg.clamp(x, min=low, max=high),
        lambda x, low, high: np.minimum(
            np.maximum(x, -np.inf if low is None else low), np.inf if high is None else high
        ),
        _clip_samples,
        errors=(_clip_error,),
        second_order=PIECEWISE_LINEAR,
    )
)
register(
    OpInfo(
        "maximum",
        lambda x, y: tg.maximum(x, y),
        np.fmax,
        binary_samples(separated),
        errors=(broadcast_error("maximum"),),
        second_order=PIECEWISE_LINEAR,
    )
)
register(
    OpInfo(
        "minimum",
        lambda x, y: x.minimum(y),
        np.fmin,
        binary_samples(separated),
        errors=(broadcast_error("minimum"),),
        second_order=PIECEWISE_LINEAR,
    )
)


def _where_samples(rng: np.random.Generator) -> list[Sample]:
    cases = [
        ("same", (2, 3), (2, 3), (2, 3), "CC"),
        ("0d", (), (), (), "CC"),
        ("bcast_3d", (3, 1, 2), (1, 3, 2), (3, 3, 1), "CC"),
        ("bcast_0d_y", (2, 3, 2), (), (2, 1, 2), "CC"),
        ("cond_0d", (2, 3), (3,), (), "CC"),
        ("size1", (1,), (1, 1), (1,), "CC"),
        ("empty", (0, 3), (3,), (0, 1), "CC"),
        ("transposed", (3, 4), (4,), (3, 4), "TC"),
    ]
    return [
        Sample(
            (uniform(rng, sx), uniform(rng, sy)), {"cond": rng.random(sc) < 0.5}, desc, tuple(lay)
        )
        for desc, sx, sy, sc, lay in cases
    ]


register(
    OpInfo(
        "where",
        lambda x, y, cond: tg.where(cond, x, y),
        lambda x, y, cond: np.where(cond, x, y),
        _where_samples,
        errors=(
            ErrorInput(
                (np.ones(3), np.ones(3)),
                TypeError,
                r"^where: condition must be a bool tensor, got float64",
                {"cond": np.ones(3)},
                "float_condition",
            ),
            ErrorInput(
                (np.ones((2, 3)), np.ones(4)),
                ValueError,
                r"^where: operands could not be broadcast",
                {"cond": np.ones((2, 3), dtype=bool)},
                "shapes_do_not_broadcast",
            ),
        ),
    )
)

# ---- casts -------------------------------------------------------------------------------
# float64 → float32 rounds the values, so finite differences need a wider step and tolerance
register(
    OpInfo(
        "astype_float32",
        lambda x, dtype=tg.float32: x.astype(dtype),
        lambda x: x.astype(np.float32),
        unary_samples(),
        out_dtype=np.float32,
        eps=1e-2,
        rtol=1e-4,
        atol=1e-4,
        oracle_rtol=1e-6,  # the gradient passes through float32: rounded to about 6e-8
        errors=(
            ErrorInput(
                (np.ones(3),),
                TypeError,
                r"^to: not a dtype: 'float17'",
                {"dtype": "float17"},
                "bad_dtype",
            ),
        ),
    )
)
# through float32 and back: on float32 inputs only the cast up runs (a float64 result whose
# gradient must come back as float32); on float64 inputs both casts run
register(
    OpInfo(
        "astype_float32_float64",
        lambda x: x.astype(tg.float32).astype(tg.float64),
        lambda x: x.astype(np.float32).astype(np.float64),
        unary_samples(),
        out_dtype=np.float64,
        eps=1e-2,
        rtol=1e-4,
        atol=1e-4,
        oracle_rtol=1e-6,  # the gradient passes through float32: rounded to about 6e-8
    )
)


# ---- log1p, expm1, erf -------------------------------------------------------------------
def _tiny(values: list[float]) -> Callable[[np.random.Generator], list[Sample]]:
    """A sample of values near 0, where log1p and expm1 are more accurate than log and exp."""
    return lambda rng: [Sample((np.array(values),), desc="tiny")]


register(
    OpInfo(
        "log1p",
        lambda x: x.log1p(),
        np.log1p,
        unary_samples(
            lambda r, s: uniform(r, s, -0.7, 2.0), extra=_tiny([1e-12, -3e-9, 5e-17, 0.0])
        ),
    )
)
register(
    OpInfo(
        "expm1",
        lambda x: tg.expm1(x),
        np.expm1,
        unary_samples(lambda r, s: uniform(r, s, -3, 3), extra=_tiny([1e-12, -3e-9, 5e-17, 0.0])),
    )
)
register(
    OpInfo(
        "erf",  # gelu's building block (its forward and, recorded, its VJP): no method of its own
        lambda x: _apply(ops.Erf(), x),
        lambda x: np.vectorize(math.erf, otypes=[np.float64])(x),
        unary_samples(lambda r, s: uniform(r, s, -3, 3)),
    )
)


# ---- clone -------------------------------------------------------------------------------
register(OpInfo("clone", lambda x: x.clone(), np.copy, unary_samples()))
register(  # Clone("C"): a row-major copy of a non-contiguous input (the input itself otherwise)
    OpInfo(
        "contiguous", lambda x: x.contiguous(), lambda x: np.array(x, order="C"), unary_samples()
    )
)


# ---- clamp with tensor bounds ------------------------------------------------------------
#: (description, shape of x, of min, of max (None: a number or no bound), layouts)
_CLAMP_TENSOR_CASES: list[tuple[str, Shape, Shape | None, Shape | None, str]] = [
    ("same", (2, 3), (2, 3), (2, 3), "CCC"),
    ("0d", (), (), (), "CCC"),
    ("bcast_bounds", (2, 3), (3,), (2, 1), "CCC"),
    ("bounds_larger", (3,), (2, 3), (), "CCC"),  # the bounds broadcast x up
    ("size1", (1,), (1, 1), (1,), "CCC"),
    ("empty", (0, 3), (3,), (0, 1), "CCC"),
    ("min_only", (2, 3), (2, 1), None, "CC"),
    ("max_only", (2, 3), None, (3,), "CC"),
    ("min_number_max_tensor", (4,), None, (4,), "CC"),
    ("views", (3, 4), (3, 4), (4,), "TSC"),
]


def _clamp_tensor_samples(rng: np.random.Generator) -> list[Sample]:
    """x on odd tenths, min on even tenths below 0, max on even tenths above: no ties
    between x and a bound (kinks), and min < max everywhere."""
    result = []
    for desc, sx, slow, shigh, layouts in _CLAMP_TENSOR_CASES:

        def grid(shape: Shape, low: int, high: int, offset: float) -> np.ndarray:
            jitter = rng.uniform(-0.02, 0.02, shape)
            return 0.2 * rng.integers(low, high, shape) + offset + jitter

        args = [grid(sx, -8, 8, 0.1)]
        kwargs: dict[str, Any] = {"which": ""}
        if slow is not None:
            args.append(grid(slow, -5, 0, 0.0))
            kwargs["which"] += "min"
        if shigh is not None:
            args.append(grid(shigh, 1, 6, 0.0))
            kwargs["which"] += "max"
        if desc == "min_number_max_tensor":
            kwargs["number"] = -0.5
        result.append(Sample(tuple(args), kwargs, desc, tuple(layouts)))
    # min > max: the result is max everywhere (PyTorch's rule), and only max gets a gradient
    x, low, high = uniform(rng, (2, 3)), np.full(3, 0.5), np.full((2, 1), -0.5)
    result.append(Sample((x, low, high), {"which": "minmax"}, "min_above_max"))
    return result


def _clamp_tensor(x, *bounds, which, number=None):
    low = bounds[0] if which.startswith("min") else number
    high = bounds[-1] if which.endswith("max") else number
    return x.clamp(low, high)


def _clamp_tensor_ref(x, *bounds, which, number=None):
    low = bounds[0] if which.startswith("min") else number
    high = bounds[-1] if which.endswith("max") else number
    out = x if low is None else np.maximum(x, low)
    return out if high is None else np.minimum(out, high)


register(
    OpInfo(
        "clamp_tensor_bounds",
        _clamp_tensor,
        _clamp_tensor_ref,
        _clamp_tensor_samples,
        errors=(
            ErrorInput(
                (np.ones((2, 3)), np.ones(4)),
                ValueError,
                r"^clip: operands could not be broadcast together with shapes \(2,3\) \(4,\)",
                {"which": "min"},
                "min_does_not_broadcast",
            ),
            ErrorInput(
                (np.ones((2, 3)), np.zeros(3), np.ones((3, 1))),
                ValueError,
                r"^clip: operands could not be broadcast together with shapes \(2,3\) \(3,1\)",
                {"which": "minmax"},
                "max_does_not_broadcast",
            ),
        ),
        second_order=PIECEWISE_LINEAR,
    )
)


# ---- casts between the other dtypes ------------------------------------------------------
register(
    OpInfo(
        "astype_float64",  # up from float32 inputs (a no-op on float64 ones): exact
        lambda x: x.double(),
        lambda x: x.astype(np.float64),
        unary_samples(),
        out_dtype=np.float64,
    )
)
for _name, _dtype in (("long", np.int64), ("int", np.int32), ("bool", np.bool_)):
    register(
        OpInfo(
            f"astype_{_name}",  # to an integer or bool dtype: truncated, no gradient
            lambda x, name=_name: getattr(x, name)(),
            lambda x, dtype=_dtype: x.astype(dtype),
            unary_samples(lambda r, s: uniform(r, s, -4, 4)),
            differentiable=False,
            second_order="not differentiable: an integer or bool result",
            out_dtype=_dtype,
        )
    )
