"""The op registry: one entry per op, in the style of PyTorch's OpInfo.

Each :class:`OpInfo` says how to call the op on Tensors, gives a NumPy reference, sample
inputs (0-d, size-1, empty, broadcast pairs, transposed and strided views) and error inputs
(the expected exception type and a message regex). The tests in this folder run every check
on every entry: forward against NumPy in float32 and float64, backward by a directional
derivative and by the full Jacobian, the scalar engine, second derivatives and errors.

Sample values are drawn away from kinks (relu and abs at 0, clip bounds, ties in max and
maximum) so central differences never straddle one; the conventions at kinks are tested
separately, by value, in ``test_backward.py``.

Ops whose forward cannot run on NumPy object arrays of scalar ``Value`` (SciPy's erf,
``np.isfinite`` in logsumexp, ``np.log1p``, ``ndarray.var``, a tensor exponent, a cast) get
their scalar-engine reference, built from Value operations, in ``tensorgrad.gradcheck``'s
``SCALAR_FORWARDS``, so the public ``check_with_scalar_engine`` handles them too.
"""

from __future__ import annotations

import contextlib
import math
import warnings
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import scipy.special

import tensorgrad as tg
from tensorgrad import ops
from tensorgrad.core.engine import apply as _apply

Shape = tuple[int, ...]


# --------------------------------------------------------------------------- data classes
@dataclass(frozen=True)
class Sample:
    """One call of an op: tensor arguments (float64 values) and constant keyword arguments.

    ``layouts`` gives each argument's memory layout when materialized: "C" (contiguous),
    "T" (a transposed, Fortran-ordered view) or "S" (a strided view, every other element).
    ``grad=False`` keeps the sample out of the gradient checks: its output is NaN, or its
    values are extreme (a forward stability test), too large for finite differences.
    """

    args: tuple[np.ndarray, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    desc: str = ""
    layouts: tuple[str, ...] = ()
    grad: bool = True

    def arrays(self, dtype: Any = np.float64) -> list[np.ndarray]:
        """Fresh copies of the arguments as arrays of ``dtype``, in their layouts."""
        result = []
        for i, value in enumerate(self.args):
            layout = self.layouts[i] if i < len(self.layouts) else "C"
            result.append(_layout(np.array(value, dtype=dtype), layout))
        return result

    def tensors(self, dtype: Any = np.float64, requires_grad: bool = True) -> list[tg.Tensor]:
        """The arguments as tensors (sharing the arrays, so views stay views)."""
        return [tg.Tensor(a, requires_grad=requires_grad) for a in self.arrays(dtype)]

    @property
    def size(self) -> int:
        return sum(int(np.size(a)) for a in self.args)


def _layout(array: np.ndarray, layout: str) -> np.ndarray:
    if layout == "T":
        view = np.asfortranarray(array)  # the same values, stored transposed
        assert array.ndim < 2 or not view.flags.c_contiguous
        return view
    if layout == "S":
        buffer = np.zeros((*array.shape[:-1], 2 * array.shape[-1]), dtype=array.dtype)
        buffer[..., ::2] = array
        view = buffer[..., ::2]
        assert array.size < 2 or not view.flags.c_contiguous
        return view
    return array


@dataclass(frozen=True)
class ErrorInput:
    """A call that must fail with ``error`` and a message matching ``match``."""

    args: tuple[Any, ...]
    error: type[Exception]
    match: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    desc: str = ""


@dataclass(frozen=True)
class OpInfo:
    """One op: how to call it, its NumPy reference, its sample and error inputs.

    ``fn(*tensors, **kwargs)`` returns a Tensor or a list of Tensors; ``ref(*arrays,
    **kwargs)`` the same as arrays. ``second_order`` is empty when second derivatives are
    checked, else the reason they are not. ``out_dtype`` is the result's dtype when it is
    not the inputs'. ``eps``/``rtol``/``atol`` (finite differences) and ``oracle_rtol`` (the
    scalar engine) are loosened only for ops that round to float32 on the way (the casts).
    """

    name: str
    fn: Callable[..., Any]
    ref: Callable[..., Any]
    make_samples: Callable[[np.random.Generator], list[Sample]]
    errors: tuple[ErrorInput, ...] = ()
    differentiable: bool = True
    second_order: str = ""
    out_dtype: Any = None
    eps: float = 1e-6
    rtol: float = 1e-6
    atol: float = 1e-6
    oracle_rtol: float = 1e-8

    def samples(self) -> list[Sample]:
        """The sample inputs, drawn from a generator seeded by the op's name."""
        return self.make_samples(np.random.default_rng(zlib.crc32(self.name.encode())))

    def call(self, tensors: Sequence[Any], sample: Sample) -> Any:
        return self.fn(*tensors, **sample.kwargs)

    def reference(self, arrays: Sequence[np.ndarray], sample: Sample) -> Any:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's "mean of empty slice"
            return self.ref(*arrays, **sample.kwargs)


PIECEWISE_LINEAR = "piecewise linear: the second derivative is 0 wherever it is defined"


@contextlib.contextmanager
def quiet(sample: Sample) -> Iterator[None]:
    """Silence NumPy's RuntimeWarnings for samples whose output is NaN by design."""
    with warnings.catch_warnings():
        if not sample.grad:
            warnings.simplefilter("ignore", RuntimeWarning)
        yield


def outputs(result: Any) -> list[Any]:
    """A result (a Tensor, an array or a sequence of them) as a list."""
    return list(result) if isinstance(result, (list, tuple)) else [result]


# --------------------------------------------------------------------------- value makers
def uniform(rng: np.random.Generator, shape: Shape, low: float = -2.0, high: float = 2.0):
    return rng.uniform(low, high, shape)


def positive(rng: np.random.Generator, shape: Shape, low: float = 0.3, high: float = 2.5):
    return rng.uniform(low, high, shape)


def away(
    rng: np.random.Generator,
    shape: Shape,
    kinks: Sequence[float] = (0.0,),
    margin: float = 0.1,
    low: float = -2.0,
    high: float = 2.0,
) -> np.ndarray:
    """Uniform values at least ``margin`` from every kink (so ±ε never crosses one)."""
    values = rng.uniform(low, high, shape)
    for _ in range(1000):
        near = np.zeros(np.shape(values), dtype=bool)
        for k in kinks:
            near |= np.abs(values - k) < margin
        if not near.any():
            return values
        values = np.where(near, rng.uniform(low, high, np.shape(values)), values)
    raise AssertionError("could not sample away from the kinks")


def distinct(rng: np.random.Generator, shape: Shape, spacing: float = 0.1) -> np.ndarray:
    """Values that differ pairwise by at least ``spacing / 2``: no ties for max and min."""
    n = int(np.prod(shape, dtype=np.int64))
    grid = (np.arange(n) - n / 2) * spacing
    return (rng.permutation(grid) + rng.uniform(-spacing / 4, spacing / 4, n)).reshape(shape)


def separated(rng: np.random.Generator, shape_x: Shape, shape_y: Shape):
    """A pair whose broadcast elements never tie: x on one grid, y on a shifted one."""
    x = 0.2 * rng.integers(-8, 8, shape_x) + 0.05 + rng.uniform(-0.02, 0.02, shape_x)
    y = 0.2 * rng.integers(-8, 8, shape_y) + 0.15 + rng.uniform(-0.02, 0.02, shape_y)
    return x, y


# --------------------------------------------------------------------------- shape tables
#: (description, shape, layout) for elementwise unary ops
UNARY_SHAPES: list[tuple[str, Shape, str]] = [
    ("0d", (), "C"),
    ("size1", (1,), "C"),
    ("vector", (5,), "C"),
    ("matrix", (2, 3), "C"),
    ("3d_size1_axis", (2, 1, 3), "C"),
    ("empty", (0,), "C"),
    ("empty_3d", (2, 0, 3), "C"),
    ("transposed", (3, 4), "T"),
    ("strided", (2, 5), "S"),
]

#: (description, shape x, shape y, layouts) for broadcasting binary ops
BINARY_SHAPES: list[tuple[str, Shape, Shape, str]] = [
    ("same", (2, 3), (2, 3), "CC"),
    ("0d", (), (), "CC"),
    ("bcast_3d", (3, 1, 2), (1, 3, 2), "CC"),
    ("bcast_0d_right", (2, 3, 2), (), "CC"),
    ("bcast_0d_left", (), (2, 3), "CC"),
    ("size1", (1,), (1, 1), "CC"),
    ("bcast_rank", (4, 3), (3,), "CC"),
    ("bcast_both", (2, 1), (1, 3), "CC"),
    ("empty", (0, 3), (3,), "CC"),
    ("empty_bcast", (2, 1), (0,), "CC"),
    ("transposed", (3, 4), (4,), "TC"),
    ("strided_transposed", (2, 4), (2, 4), "ST"),
]


def unary_samples(
    make: Callable[[np.random.Generator, Shape], np.ndarray] = uniform,
    extra: Callable[[np.random.Generator], list[Sample]] | None = None,
    **kwargs: Any,
) -> Callable[[np.random.Generator], list[Sample]]:
    def samples(rng: np.random.Generator) -> list[Sample]:
        result = [
            Sample((make(rng, shape),), dict(kwargs), desc, (layout,))
            for desc, shape, layout in UNARY_SHAPES
        ]
        return result + (extra(rng) if extra else [])

    return samples


def binary_samples(
    make: Callable[[np.random.Generator, Shape, Shape], tuple[np.ndarray, np.ndarray]],
) -> Callable[[np.random.Generator], list[Sample]]:
    def samples(rng: np.random.Generator) -> list[Sample]:
        return [
            Sample(make(rng, sx, sy), {}, desc, tuple(layouts))
            for desc, sx, sy, layouts in BINARY_SHAPES
        ]

    return samples


def _pair(
    make_x: Callable[..., np.ndarray] = uniform, make_y: Callable[..., np.ndarray] = uniform
) -> Callable[[np.random.Generator, Shape, Shape], tuple[np.ndarray, np.ndarray]]:
    return lambda rng, sx, sy: (make_x(rng, sx), make_y(rng, sy))


def _nonzero(rng: np.random.Generator, shape: Shape) -> np.ndarray:
    return away(rng, shape, (0.0,), margin=0.5)


def _broadcast_error(name: str) -> ErrorInput:
    return ErrorInput(
        (np.ones((2, 3)), np.ones(4)),
        ValueError,
        rf"^{name}: operands could not be broadcast together with shapes \(2,3\) \(4,\)",
        desc="shapes_do_not_broadcast",
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


def _cross_entropy(logits, target, reduction, label_smoothing):
    n, c = logits.shape
    logp = _log_softmax(logits, axis=1)
    q = np.full((n, c), label_smoothing / c)
    q[np.arange(n), target] += 1 - label_smoothing
    losses = -(q * logp).sum(axis=1)
    if reduction == "none":
        return losses
    return losses.sum() / n if reduction == "mean" else losses.sum()


def _logsumexp(x, axis, keepdims):
    result = scipy.special.logsumexp(x, axis=axis, keepdims=keepdims)
    return np.reshape(result, np.sum(x, axis=axis, keepdims=keepdims).shape)  # 0-d: SciPy's (1,)


# --------------------------------------------------------------------------- the registry
REGISTRY: list[OpInfo] = []


def register(info: OpInfo) -> OpInfo:
    assert all(info.name != other.name for other in REGISTRY), info.name
    REGISTRY.append(info)
    return info


# ---- arithmetic -----------------------------------------------------------------------
for _name, _fn, _ref, _make in [
    ("add", lambda x, y: x + y, np.add, _pair()),
    ("sub", lambda x, y: x - y, np.subtract, _pair()),
    ("mul", lambda x, y: x * y, np.multiply, _pair()),
    ("div", lambda x, y: x / y, np.divide, _pair(uniform, _nonzero)),
]:
    register(OpInfo(_name, _fn, _ref, binary_samples(_make), errors=(_broadcast_error(_name),)))

# a Python number on either side: the op sees a constant, not a tensor
register(OpInfo("add_scalar", lambda x: 1.5 + x, lambda x: 1.5 + x, unary_samples()))
register(OpInfo("rsub_scalar", lambda x: 1.5 - x, lambda x: 1.5 - x, unary_samples()))
register(OpInfo("mul_scalar", lambda x: x * -2.5, lambda x: x * -2.5, unary_samples()))
register(OpInfo("div_scalar", lambda x: x / 4.0, lambda x: x / 4.0, unary_samples()))
register(OpInfo("rdiv_scalar", lambda x: 2.0 / x, lambda x: 2.0 / x, unary_samples(_nonzero)))
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
        binary_samples(_pair(positive, uniform)),
        errors=(_broadcast_error("pow"),),
    )
)
register(OpInfo("rpow_scalar", lambda x: 2.0**x, lambda x: np.power(2.0, x), unary_samples()))

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
    OpInfo("abs", lambda x: abs(x), np.abs, unary_samples(away), second_order=PIECEWISE_LINEAR)
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
                ValueError,
                r"^gelu: approximate must be 'none' or 'tanh', "
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
        errors=(_broadcast_error("maximum"),),
        second_order=PIECEWISE_LINEAR,
    )
)
register(
    OpInfo(
        "minimum",
        lambda x, y: x.minimum(y),
        np.fmin,
        binary_samples(separated),
        errors=(_broadcast_error("minimum"),),
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


# ---- shape ops ---------------------------------------------------------------------------
def shape_samples(
    cases: Sequence[tuple[str, Shape, dict[str, Any], str]],
) -> Callable[[np.random.Generator], list[Sample]]:
    return lambda rng: [Sample((uniform(rng, s),), dict(kw), d, (lay,)) for d, s, kw, lay in cases]


register(
    OpInfo(
        "reshape",
        lambda x, shape: x.reshape(shape),
        lambda x, shape: np.reshape(x, shape),
        shape_samples(
            [
                ("matrix", (2, 3), {"shape": (3, 2)}, "C"),
                ("infer", (6,), {"shape": (2, -1, 3)}, "C"),
                ("to_0d", (1,), {"shape": ()}, "C"),
                ("from_0d", (), {"shape": (1, 1)}, "C"),
                ("empty", (0, 3), {"shape": (3, 0)}, "C"),
                ("transposed", (3, 4), {"shape": (12,)}, "T"),
                ("strided", (2, 4), {"shape": (4, 2)}, "S"),
                ("same_shape", (2, 3), {"shape": (2, 3)}, "C"),
            ]
        ),
        errors=(
            ErrorInput(
                (np.ones((2, 3)),),
                RuntimeError,
                r"^reshape: shape \(4,\) is invalid for input of size 6",
                {"shape": (4,)},
                "wrong_size",
            ),
        ),
    )
)
register(
    OpInfo(
        "view",
        lambda x, shape: x.view(*shape),
        lambda x, shape: np.reshape(x, shape),
        shape_samples(
            [
                ("matrix", (2, 3), {"shape": (6,)}, "C"),
                ("transposed_rows", (3, 4), {"shape": (3, 1, 4)}, "T"),
            ]
        ),
        errors=(
            ErrorInput(
                (np.asfortranarray(np.ones((3, 4))),),
                RuntimeError,
                r"^view: a tensor of shape \(3, 4\) .* cannot be viewed as \(2, 6\) without "
                r"copying; use \.reshape",
                {"shape": (2, 6)},
                "needs_a_copy",
            ),
        ),
    )
)
register(
    OpInfo(
        "transpose",
        lambda x, axes: _apply(ops.Transpose(axes or None), x),
        lambda x, axes: np.transpose(x, axes or None),
        shape_samples(
            [
                ("reverse", (2, 3, 4), {"axes": ()}, "C"),
                ("permute", (2, 3, 4), {"axes": (1, 0, 2)}, "C"),
                ("negative", (2, 3, 4), {"axes": (-1, 0, 1)}, "C"),
                ("0d", (), {"axes": ()}, "C"),
                ("size1", (1, 1), {"axes": (1, 0)}, "C"),
                ("vector", (5,), {"axes": ()}, "C"),
                ("empty", (0, 3), {"axes": (1, 0)}, "C"),
                ("transposed", (3, 4), {"axes": ()}, "T"),
            ]
        ),
        errors=(
            ErrorInput(
                (np.ones((2, 3)),),
                ValueError,
                r"^transpose: repeated axis in \(0, 0\)",
                {"axes": (0, 0)},
                "repeated_axis",
            ),
            ErrorInput(
                (np.ones((2, 3)),),
                IndexError,
                r"^transpose: axis 2 is out of range for a tensor of 2 dimensions",
                {"axes": (0, 2)},
                "axis_out_of_range",
            ),
            ErrorInput(
                (np.ones((2, 3)),),
                ValueError,
                r"^transpose: axes \(0,\) do not match a tensor of 2 dimensions",
                {"axes": (0,)},
                "too_few_axes",
            ),
        ),
    )
)
register(
    OpInfo(
        "permute",
        lambda x: x.permute(2, 0, 1),
        lambda x: np.transpose(x, (2, 0, 1)),
        shape_samples(
            [
                ("3d", (2, 3, 4), {}, "C"),
                ("size1", (1, 1, 1), {}, "C"),
                ("empty", (2, 0, 3), {}, "C"),
            ]
        ),
    )
)
register(
    OpInfo(
        "T",
        lambda x: x.T,
        lambda x: x.T,
        shape_samples(
            [
                ("matrix", (2, 3), {}, "C"),
                ("vector", (4,), {}, "C"),
                ("0d", (), {}, "C"),
                ("3d", (2, 3, 4), {}, "S"),
            ]
        ),
    )
)
register(
    OpInfo(
        "swapaxes",
        lambda x, a, b: x.swapaxes(a, b),
        lambda x, a, b: np.swapaxes(x, a, b),
        shape_samples(
            [
                ("first_last", (2, 3, 4), {"a": 0, "b": 2}, "C"),
                ("negative", (2, 3, 4), {"a": -1, "b": 0}, "C"),
                ("same_axis", (2, 3), {"a": 1, "b": 1}, "C"),
                ("empty", (0, 3), {"a": 0, "b": 1}, "C"),
                ("size1", (1, 1), {"a": 0, "b": 1}, "C"),
                ("transposed", (3, 4), {"a": 0, "b": 1}, "T"),
            ]
        ),
        errors=(
            ErrorInput(
                (np.ones((2, 3)),),
                IndexError,
                r"^transpose: axis 3 is out of range for a tensor of 2 dimensions",
                {"a": 0, "b": 3},
                "axis_out_of_range",
            ),
        ),
    )
)


def _size1_axes(x: np.ndarray, axis: Any) -> Any:
    """PyTorch's squeeze: of the named axes, only those of size 1."""
    if axis is None:
        return None
    axes = (axis,) if isinstance(axis, int) else axis
    return tuple(a for a in axes if x.shape[a] == 1)


def _flatten_ref(x, start=0, end=-1):
    if x.ndim == 0:
        return x.reshape(1)
    end = end % x.ndim
    return (
        x.reshape(*x.shape[:start], -1, *x.shape[end + 1 :])
        if x.size
        else x.reshape(
            *x.shape[:start], int(np.prod(x.shape[start : end + 1])), *x.shape[end + 1 :]
        )
    )


register(
    OpInfo(
        "flatten",
        lambda x, start=0, end=-1: x.flatten(start, end),
        _flatten_ref,
        shape_samples(
            [
                ("all", (2, 3, 4), {}, "C"),
                ("middle", (2, 3, 4, 2), {"start": 1, "end": 2}, "C"),
                ("from1", (2, 3, 4), {"start": 1}, "C"),
                ("size1", (1, 1, 1), {"start": 1}, "C"),
                ("0d", (), {}, "C"),
                ("empty", (2, 0, 3), {"start": 1}, "C"),
                ("transposed", (3, 4), {}, "T"),
            ]
        ),
        errors=(
            ErrorInput(
                (np.ones((2, 3, 4)),),
                ValueError,
                r"^flatten: start_dim 2 comes after end_dim 1",
                {"start": 2, "end": 1},
                "start_after_end",
            ),
        ),
    )
)
register(
    OpInfo(
        "squeeze",
        lambda x, axis=None: x.squeeze(axis),
        lambda x, axis=None: np.squeeze(x, _size1_axes(x, axis)),
        shape_samples(
            [
                ("all", (1, 3, 1), {}, "C"),
                ("axis0", (1, 3, 1), {"axis": 0}, "C"),
                ("axis_tuple", (1, 3, 1), {"axis": (0, -1)}, "C"),
                ("0d", (), {}, "C"),
                ("size1", (1,), {}, "C"),
                ("nothing", (2, 3), {}, "C"),
                ("empty", (0, 1), {"axis": 1}, "C"),
                ("transposed", (2, 1, 3), {"axis": 1}, "T"),
                ("not_size1_stays", (2, 3), {"axis": 0}, "C"),  # PyTorch's rule: no error
            ]
        ),
    )
)
register(
    OpInfo(
        "unsqueeze",
        lambda x, axis: x.unsqueeze(axis),
        lambda x, axis: np.expand_dims(x, axis),
        shape_samples(
            [
                ("front", (2, 3), {"axis": 0}, "C"),
                ("back", (2, 3), {"axis": -1}, "C"),
                ("middle", (2, 3), {"axis": 1}, "C"),
                ("end", (2, 3), {"axis": 2}, "C"),
                ("0d", (), {"axis": 0}, "C"),
                ("empty", (0,), {"axis": 1}, "C"),
                ("size1", (1,), {"axis": 0}, "C"),
                ("transposed", (3, 4), {"axis": 1}, "T"),
            ]
        ),
        errors=(
            ErrorInput(
                (np.ones((2, 3)),),
                IndexError,
                r"^unsqueeze: dimension 4 is out of range",
                {"axis": 4},
                "axis_out_of_range",
            ),
        ),
    )
)
register(
    OpInfo(
        "broadcast_to",
        lambda x, shape: x.broadcast_to(shape),
        lambda x, shape: np.broadcast_to(x, shape),
        shape_samples(
            [
                ("lead_and_size1", (3, 1), {"shape": (2, 3, 4)}, "C"),
                ("from_0d", (), {"shape": (2, 3)}, "C"),
                ("size1_to_empty", (1,), {"shape": (0,)}, "C"),
                ("to_empty", (2, 1), {"shape": (2, 0)}, "C"),
                ("empty", (0, 1), {"shape": (2, 0, 3)}, "C"),
                ("same", (2, 3), {"shape": (2, 3)}, "C"),
                ("transposed", (3, 4), {"shape": (2, 3, 4)}, "T"),
            ]
        ),
        errors=(
            ErrorInput(
                (np.ones((2, 3)),),
                ValueError,
                r"^broadcast_to: cannot broadcast a tensor of shape \(2, 3\) to \(4, 3\)",
                {"shape": (4, 3)},
                "incompatible",
            ),
        ),
    )
)
register(
    OpInfo(
        "expand",
        lambda x: x.expand(2, 3, 4),
        lambda x: np.broadcast_to(x, (2, 3, 4)),
        shape_samples(
            [("size1_axis", (3, 1), {}, "C"), ("0d", (), {}, "C"), ("size1", (1,), {}, "C")]
        ),
    )
)

_MASK = np.array([[True, False, True, False, True]] * 2 + [[False] * 5] * 2)
#: (description, index) into a (4, 5, 3) array
INDEX_CASES: list[tuple[str, Any]] = [
    ("int", 1),
    ("negative_int", -1),
    ("slice", slice(1, 3)),
    ("step", (slice(None), slice(None, None, 2))),
    ("negative_step", (slice(None, None, -1), 2)),
    ("none", (None, 1)),
    ("ellipsis", (Ellipsis, 0)),
    ("int_ellipsis_none", (1, Ellipsis, None)),
    ("empty_slice", slice(2, 2)),
    ("all_ints", (3, 4, 2)),
    ("bool_mask_full", "full_mask"),
    ("bool_mask_2d", _MASK),
    ("bool_mask_axis0", np.array([True, False, True, True])),
    ("bool_mask_all_false", np.zeros(4, dtype=bool)),
    ("int_array_repeated", np.array([0, 2, 0, 3, 0])),
    ("int_arrays_repeated", (np.array([0, 0, 1, 0]), np.array([1, 1, 2, 1]))),
    ("int_array_2d_repeated", np.array([[1, 1], [2, 1]])),
    ("mixed_slice_array", (slice(None), np.array([4, 4, 0]))),
    ("mixed_int_array", (1, np.array([3, 3]), slice(0, 2))),
    ("empty_int_array", np.array([], dtype=np.int64)),
    ("size1_int_array", np.array([2])),
]


def _index_samples(rng: np.random.Generator) -> list[Sample]:
    result = []
    for desc, index in INDEX_CASES:
        x = uniform(rng, (4, 5, 3))
        if isinstance(index, str):
            index = rng.random((4, 5, 3)) < 0.4
        result.append(Sample((x,), {"index": index}, desc))
    result.append(Sample((uniform(rng, (5,)),), {"index": 2}, "vector_to_0d"))
    result.append(Sample((uniform(rng, ()),), {"index": ()}, "0d_empty_tuple"))
    result.append(Sample((uniform(rng, ()),), {"index": None}, "0d_none"))
    result.append(
        Sample((uniform(rng, (3, 4)),), {"index": (slice(None), 1)}, "transposed", ("T",))
    )
    result.append(
        Sample((uniform(rng, (3, 4)),), {"index": np.array([2, 2, 0])}, "strided", ("S",))
    )
    result.append(Sample((uniform(rng, (0, 3)),), {"index": (slice(None), 1)}, "empty_input"))
    result.append(Sample((uniform(rng, (1,)),), {"index": np.array([0, 0])}, "size1_input"))
    return result


register(
    OpInfo(
        "getitem",
        lambda x, index: x[index],
        lambda x, index: x[index],
        _index_samples,
        errors=(
            ErrorInput(
                (np.ones((2, 3)),),
                IndexError,
                r"^getitem: index 5 is out of bounds for axis 0 with size 2",
                {"index": 5},
                "out_of_bounds",
            ),
            ErrorInput(
                (np.ones((2, 3)),),
                IndexError,
                r"^getitem: too many indices",
                {"index": (0, 0, 0)},
                "too_many_indices",
            ),
            ErrorInput(
                (np.ones((2, 3)),),
                IndexError,
                r"^getitem: boolean index did not match",
                {"index": np.array([True, False, True])},
                "mask_shape",
            ),
            ErrorInput(
                (np.ones((2, 3)),),
                IndexError,
                r"^getitem: index 7 is out of bounds",
                {"index": np.array([0, 7])},
                "int_array_out_of_bounds",
            ),
        ),
    )
)


def _join_samples(cases, rng: np.random.Generator) -> list[Sample]:
    return [
        Sample(tuple(uniform(rng, s) for s in shapes), {"axis": axis}, desc, tuple(layouts))
        for desc, shapes, axis, layouts in cases
    ]


register(
    OpInfo(
        "concatenate",
        lambda *xs, axis: tg.concatenate(xs, axis=axis),
        lambda *xs, axis: np.concatenate(xs, axis=axis),
        lambda rng: _join_samples(
            [
                ("axis0", [(2, 3), (1, 3)], 0, "CC"),
                ("three_negative_axis", [(2, 3), (2, 0), (2, 2)], -1, "CCC"),
                ("vectors", [(3,), (2,)], 0, "CC"),
                ("single", [(2, 2)], 1, "C"),
                ("size1", [(1,), (1,)], 0, "CC"),
                ("empty", [(0, 3), (0, 3)], 0, "CC"),
                ("views", [(3, 4), (3, 4)], 1, "TS"),
            ],
            rng,
        ),
        errors=(
            ErrorInput(
                (np.ones((2, 3)), np.ones((3, 2))),
                ValueError,
                r"^concatenate: shapes \[\(2, 3\), \(3, 2\)\] differ outside axis 0",
                {"axis": 0},
                "shape_mismatch",
            ),
            ErrorInput(
                (np.ones(()), np.ones(())),
                ValueError,
                r"^concatenate: zero-dimensional tensors cannot be concatenated",
                {"axis": 0},
                "0d",
            ),
            ErrorInput(
                (), ValueError, r"^concatenate: needs at least one tensor", {"axis": 0}, "nothing"
            ),
            ErrorInput(
                (np.ones((2, 3)), np.ones((2, 3))),
                IndexError,
                r"^concatenate: axis 2 is out of range for a tensor of 2 dimensions",
                {"axis": 2},
                "axis_out_of_range",
            ),
        ),
    )
)
register(
    OpInfo(
        "cat",
        lambda x, y, axis: tg.cat([x, y], axis=axis),
        lambda x, y, axis: np.concatenate([x, y], axis=axis),
        lambda rng: _join_samples([("pair", [(2, 3), (2, 1)], 1, "CC")], rng),
    )
)
register(
    OpInfo(
        "stack",
        lambda *xs, axis: tg.stack(xs, axis=axis),
        lambda *xs, axis: np.stack(xs, axis=axis),
        lambda rng: _join_samples(
            [
                ("axis0", [(2, 3), (2, 3)], 0, "CC"),
                ("axis1_three", [(2, 3), (2, 3), (2, 3)], 1, "CCC"),
                ("axis_neg", [(2, 3), (2, 3)], -1, "CC"),
                ("0d", [(), ()], 0, "CC"),
                ("size1", [(1,), (1,)], 0, "CC"),
                ("empty", [(0, 2), (0, 2)], 1, "CC"),
                ("views", [(3, 4), (3, 4)], 2, "TS"),
            ],
            rng,
        ),
        errors=(
            ErrorInput(
                (np.ones((2, 3)), np.ones((3, 2))),
                ValueError,
                r"^stack: all tensors must have the same shape, got \[\(2, 3\), \(3, 2\)\]",
                {"axis": 0},
                "shape_mismatch",
            ),
            ErrorInput(
                (), ValueError, r"^stack: needs at least one tensor", {"axis": 0}, "nothing"
            ),
            ErrorInput(
                (np.ones(2), np.ones(2)),
                IndexError,
                r"^stack: axis 2 is out of range for a tensor of 2 dimensions",
                {"axis": 2},
                "axis_out_of_range",
            ),
        ),
    )
)


def _split_ref(x, sections, axis):
    if isinstance(sections, int):
        bounds = list(range(sections, x.shape[axis], sections))
    else:
        bounds = list(np.cumsum(sections)[:-1])
    return np.split(x, bounds, axis=axis)


register(
    OpInfo(
        "split",
        lambda x, sections, axis: tg.split(x, sections, axis=axis),
        _split_ref,
        shape_samples(
            [
                ("size", (5, 3), {"sections": 2, "axis": 0}, "C"),
                ("sections", (2, 3), {"sections": [1, 2], "axis": 1}, "C"),
                ("empty_section", (2, 3), {"sections": [0, 3], "axis": -1}, "C"),
                ("size1", (1,), {"sections": 1, "axis": 0}, "C"),
                ("empty", (2, 0), {"sections": 2, "axis": 1}, "C"),
                ("transposed", (4, 3), {"sections": [3, 1], "axis": 0}, "T"),
            ]
        ),
        errors=(
            ErrorInput(
                (np.ones((2, 3)),),
                ValueError,
                r"^split: section sizes \[1, 1\] do not add up to the length 3 of dim 1",
                {"sections": [1, 1], "axis": 1},
                "sections_do_not_add_up",
            ),
            ErrorInput(
                (np.ones((2, 3)),),
                ValueError,
                r"^split: split size must be positive, got 0",
                {"sections": 0, "axis": 0},
                "zero_size",
            ),
            ErrorInput(
                (np.ones((2, 3)),),
                IndexError,
                r"^split: axis 2 is out of range",
                {"sections": 1, "axis": 2},
                "axis_out_of_range",
            ),
        ),
    )
)


# ---- matmul ------------------------------------------------------------------------------
MATMUL_SHAPES: list[tuple[str, Shape, Shape, str]] = [
    ("1d_1d", (3,), (3,), "CC"),
    ("1d_2d", (3,), (3, 4), "CC"),
    ("2d_1d", (4, 3), (3,), "CC"),
    ("2d_2d", (2, 3), (3, 4), "CC"),
    ("size1", (1, 1), (1, 1), "CC"),
    ("batched", (2, 2, 3), (2, 3, 2), "CC"),
    ("batched_bcast", (2, 1, 3, 4), (5, 4, 2), "CC"),
    ("batched_2d", (2, 3, 4), (4, 2), "CC"),
    ("batched_1d_right", (2, 3, 4), (4,), "CC"),
    ("1d_batched", (3,), (2, 3, 4), "CC"),
    ("empty_rows", (0, 3), (3, 2), "CC"),
    ("empty_inner", (2, 0), (0, 3), "CC"),
    ("transposed", (3, 4), (4, 2), "TS"),
]
register(
    OpInfo(
        "matmul",
        lambda x, y: x @ y,
        np.matmul,
        lambda rng: [
            Sample((uniform(rng, sx), uniform(rng, sy)), {}, d, tuple(lay))
            for d, sx, sy, lay in MATMUL_SHAPES
        ],
        errors=(
            ErrorInput(
                (np.ones((2, 3)), np.ones((4, 5))),
                ValueError,
                r"^matmul: shapes \(2, 3\) and \(4, 5\) cannot be multiplied: inner "
                r"dimensions differ \(3 vs 4\)",
                desc="inner_mismatch",
            ),
            ErrorInput(
                (np.ones((2, 3, 4)), np.ones((3, 4, 5))),
                ValueError,
                r"^matmul: shapes \(2, 3, 4\) and \(3, 4, 5\) cannot be multiplied: batch "
                r"dimensions do not broadcast",
                desc="batch_mismatch",
            ),
            ErrorInput(
                (np.ones(3), np.ones(4)),
                ValueError,
                r"^matmul: shapes \(3,\) and \(4,\) cannot be multiplied",
                desc="vectors",
            ),
            ErrorInput(
                (np.ones(()), np.ones(3)),
                ValueError,
                r"^matmul: both operands need at least 1 dimension, got shapes \(\) and "
                r"\(3,\)",
                desc="0d",
            ),
        ),
    )
)
register(
    OpInfo(
        "tg_matmul",
        lambda x, y: tg.matmul(x, y),
        np.matmul,
        lambda rng: [Sample((uniform(rng, (2, 3)), uniform(rng, (3,))), {}, "2d_1d")],
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
    ("0d", (), -1, r"axis -1 is out of range for a tensor of 0 dimensions"),
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


# ---- fused neural-network ops --------------------------------------------------------------
def _linear_samples(bias: bool) -> Callable[[np.random.Generator], list[Sample]]:
    """Samples for linear."""
    cases = [  # (description, input shape, out_features, layouts)
        ("2d", (4, 3), 2, "CCC"),
        ("batched", (2, 4, 3), 2, "CCC"),
        ("1d", (3,), 2, "CCC"),
        ("batch1", (1, 3), 2, "CCC"),
        ("size1", (1, 1), 1, "CCC"),
        ("empty_batch", (0, 3), 2, "CCC"),
        ("views", (3, 3), 2, "TSS"),
    ]

    def samples(rng: np.random.Generator) -> list[Sample]:
        result = []
        for desc, shape, n_out, layouts in cases:
            args = (uniform(rng, shape), uniform(rng, (n_out, shape[-1])))
            args += (uniform(rng, (n_out,)),) if bias else ()
            result.append(Sample(args, {}, desc, tuple(layouts[: len(args)])))
        return result

    return samples


_LINEAR_ERROR = ErrorInput(
    (np.ones((4, 5)), np.ones((2, 3))),
    ValueError,
    r"^linear: input of shape \(4, 5\) does not match weight of shape \(2, 3\)",
    desc="mismatch",
)
register(
    OpInfo(
        "linear",
        lambda x, w, b: _apply(ops.Linear(), x, w, b),
        lambda x, w, b: x @ w.T + b,
        _linear_samples(bias=True),
        errors=(
            replace(_LINEAR_ERROR, args=(*_LINEAR_ERROR.args, np.ones(2))),
            ErrorInput(
                (np.ones((4, 3)), np.ones(3), np.ones(2)),
                ValueError,
                r"^linear: weight must be 2-D \(out, in\), got shape \(3,\)",
                desc="weight_1d",
            ),
            ErrorInput(  # would broadcast into a (2, 2) output if not refused
                (np.ones((2, 2)), np.ones((2, 2)), np.ones((2, 1))),
                ValueError,
                r"^linear: bias of shape \(2, 1\) does not match weight of shape \(2, 2\)",
                desc="bias_shape",
            ),
        ),
    )
)
register(
    OpInfo(
        "linear_nobias",
        lambda x, w: _apply(ops.Linear(), x, w),
        lambda x, w: x @ w.T,
        _linear_samples(bias=False),
        errors=(_LINEAR_ERROR,),
    )
)


def _chain_reference(args: Sequence[np.ndarray], steps: tuple[str, ...]) -> np.ndarray:
    x, params = args[0], list(args[1:])
    for step in steps:
        if step == "relu":
            x = np.maximum(x, 0)
        else:
            x = x @ params.pop(0).T
            if step == "linear+bias":
                x = x + params.pop(0)
    return x


#: (steps, the features after each linear step) for linear_chain's samples
_CHAINS = (
    (("linear+bias", "relu"), (1,)),
    (("linear+bias", "relu", "linear", "relu", "linear+bias"), (3, 3, 2)),
    (("relu", "linear+bias", "relu", "relu"), (2,)),  # starts with, and repeats, a ReLU
    (("linear",), (2,)),
)


def _chain_samples(rng: np.random.Generator) -> list[Sample]:
    """Samples for linear_chain: every ReLU's input at least 0.05 away from its kink at 0,
    where finite differences would straddle it."""
    cases = [  # (description, input shape, layout: of the input; a view's parameters are strided)
        ("2d", (4, 3), "C"),
        ("batched", (2, 4, 3), "C"),
        ("1d", (3,), "C"),
        ("size1", (1, 1), "C"),
        ("empty_batch", (0, 3), "C"),
        ("views", (3, 3), "T"),
    ]

    def draw(shape: Shape, steps: tuple[str, ...], widths: tuple[int, ...]) -> tuple:
        for _ in range(1000):
            args, n_in, outs = [uniform(rng, shape)], shape[-1], iter(widths)
            x, clear = args[0], True
            for step in steps:
                if step == "relu":
                    clear = clear and bool(np.all(np.abs(x) > 0.05))
                    x = np.maximum(x, 0)
                    continue
                n_out = next(outs)
                args.append(uniform(rng, (n_out, n_in)))
                if step == "linear+bias":
                    args.append(uniform(rng, (n_out,)))
                x, n_in = (
                    _chain_reference([x, *args[-1 - (step == "linear+bias") :]], (step,)),
                    n_out,
                )
            if clear:
                return tuple(args)
        raise AssertionError("no sample away from the kinks")

    result = []
    for steps, widths in _CHAINS:
        for desc, shape, layout in cases:
            args = draw(shape, steps, widths)
            name = "_".join(s.replace("+", "_") for s in steps)
            layouts = (layout, *(layout if layout == "C" else "S") * (len(args) - 1))
            result.append(Sample(args, {"steps": steps}, f"{name}-{desc}", layouts))
    return result


register(
    OpInfo(
        "linear_chain",
        lambda *args, steps: _apply(ops.LinearChain(steps), *args),
        lambda *args, steps: _chain_reference(args, steps),
        _chain_samples,
        errors=(
            ErrorInput(
                (np.ones((4, 5)), np.ones((3, 5)), np.ones(3), np.ones((2, 4))),
                ValueError,
                r"^linear_chain: step 2 \(linear\): input of shape \(4, 3\) does not match "
                r"weight of shape \(2, 4\) \(expected input \(\.\.\., 4\)\)",
                {"steps": ("linear+bias", "relu", "linear")},
                "mismatch",
            ),
            ErrorInput(
                (np.ones((4, 3)), np.ones((2, 3)), np.ones((2, 1))),
                ValueError,
                r"^linear_chain: step 0 \(linear\+bias\): bias of shape \(2, 1\) does not "
                r"match weight of shape \(2, 3\)",
                {"steps": ("linear+bias", "relu")},
                "bias_shape",
            ),
            ErrorInput(
                (np.ones((4, 3)), np.ones((2, 3)), np.ones(2)),
                TypeError,
                r"^linear_chain: steps \('linear', 'relu'\) take 1 weights and biases after "
                r"the input, got 2",
                {"steps": ("linear", "relu")},
                "too_many_params",
            ),
            ErrorInput(
                (np.ones((4, 3)),),
                TypeError,
                r"^linear_chain: steps \('linear\+bias',\) take 2 weights and biases after "
                r"the input, got 0",
                {"steps": ("linear+bias",)},
                "too_few_params",
            ),
            ErrorInput(
                (np.ones((4, 3)),),
                ValueError,
                r"^linear_chain: a step must be 'linear', 'linear\+bias' or 'relu', got 'tanh'",
                {"steps": ("relu", "tanh")},
                "unknown_step",
            ),
            ErrorInput(
                (np.ones((4, 3)),),
                ValueError,
                r"^linear_chain: needs at least one step",
                {"steps": ()},
                "no_steps",
            ),
        ),
    )
)


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
                ValueError,
                r"^cross_entropy: label_smoothing must be in \[0, 1\], got 1.5",
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
                TypeError,
                r"^cross_entropy: target must hold class indices \(integers\), got float64",
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
                r"^cross_entropy: target must have shape \(2,\) to match logits of shape "
                r"\(2, 3\), got \(3,\)",
                "target_shape",
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
        errors=(_broadcast_error("binary_cross_entropy_with_logits"),),
    )
)

REGISTRY_BY_NAME: dict[str, OpInfo] = {info.name: info for info in REGISTRY}


def cases(
    *, differentiable: bool | None = None, grad: bool | None = None, max_size: int | None = None
) -> list[Any]:
    """``pytest.param(info, sample, id=...)`` for every registered (op, sample) pair."""
    import pytest

    result = []
    for info in REGISTRY:
        if differentiable is not None and info.differentiable != differentiable:
            continue
        for sample in info.samples():
            if grad is not None and sample.grad != grad:
                continue
            if max_size is not None and sample.size > max_size:
                continue
            result.append(pytest.param(info, sample, id=f"{info.name}-{sample.desc}"))
    return result


def error_cases() -> list[Any]:
    import pytest

    return [
        pytest.param(info, error, id=f"{info.name}-{error.desc}")
        for info in REGISTRY
        for error in info.errors
    ]


# convolution, pooling and padding (tests/ops/registry_conv.py) and the functions PyTorch
# programs use (tests/ops/registry_port.py, issue 15) register their entries here
from tests.ops import registry_conv, registry_port  # noqa: E402, F401
