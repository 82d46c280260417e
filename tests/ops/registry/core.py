"""The registry's framework: :class:`Sample`, :class:`ErrorInput`, :class:`OpInfo`, the value
makers and shape tables samples are built from, :func:`register` and the ``REGISTRY`` the
tests in ``tests/ops`` parametrize over (:func:`cases`, :func:`error_cases`).

The entries themselves live in this package's family modules, which mirror
``tensorgrad/ops/`` (``elementwise``, ``reduce``, ``index``, ...).
"""

from __future__ import annotations

import contextlib
import warnings
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import tensorgrad as tg

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
    checked, else the reason they are not. ``no_derivative`` says why an op that is not
    ``differentiable`` still records itself where an input requires grad, and refuses
    backward (PyTorch defines no derivative for it, and does the same: bincount's weights).
    ``out_dtype`` is the result's dtype when it is not the inputs'. ``eps``/``rtol``/``atol``
    (finite differences) and ``oracle_rtol`` (the scalar engine) are loosened only for ops
    that round to float32 on the way (the casts).
    """

    name: str
    fn: Callable[..., Any]
    ref: Callable[..., Any]
    make_samples: Callable[[np.random.Generator], list[Sample]]
    errors: tuple[ErrorInput, ...] = ()
    differentiable: bool = True
    no_derivative: str = ""
    second_order: str = ""
    out_dtype: Any = None
    eps: float = 1e-6
    rtol: float = 1e-6
    atol: float = 1e-6
    oracle_rtol: float = 1e-8

    @property
    def records(self) -> bool:
        """Whether a result of inputs that require grad requires grad too (a recorded op)."""
        return self.differentiable or bool(self.no_derivative)

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


def shape_samples(
    cases: Sequence[tuple[str, Shape, dict[str, Any], str]],
    make: Callable[[np.random.Generator, Shape], np.ndarray] = uniform,
) -> Callable[[np.random.Generator], list[Sample]]:
    """One sample per (description, shape, keyword arguments, layout)."""
    return lambda rng: [Sample((make(rng, s),), dict(kw), d, (lay,)) for d, s, kw, lay in cases]


def pair(
    make_x: Callable[..., np.ndarray] = uniform, make_y: Callable[..., np.ndarray] = uniform
) -> Callable[[np.random.Generator, Shape, Shape], tuple[np.ndarray, np.ndarray]]:
    return lambda rng, sx, sy: (make_x(rng, sx), make_y(rng, sy))


def nonzero(rng: np.random.Generator, shape: Shape) -> np.ndarray:
    return away(rng, shape, (0.0,), margin=0.5)


def broadcast_error(name: str) -> ErrorInput:
    return ErrorInput(
        (np.ones((2, 3)), np.ones(4)),
        ValueError,
        rf"^{name}: operands could not be broadcast together with shapes \(2,3\) \(4,\)",
        desc="shapes_do_not_broadcast",
    )


# --------------------------------------------------------------------------- the registry
REGISTRY: list[OpInfo] = []


#: entries exempt from a coverage rule of ``test_forward.py`` (feature -> {name: why}); each
#: family module adds its own beside its entries, with :func:`exempt`
COVERAGE_EXEMPT: dict[str, dict[str, str]] = {
    "0-d": {},
    "empty": {},
    "size-1": {},
    "non-contiguous": {},
}


def register(info: OpInfo) -> OpInfo:
    assert all(info.name != other.name for other in REGISTRY), info.name
    REGISTRY.append(info)
    return info


def exempt(feature: str, reason: str, *names: str) -> None:
    """Exempt the entries ``names`` from the coverage rule for ``feature``, saying why."""
    for name in names:
        COVERAGE_EXEMPT[feature][name] = reason


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
