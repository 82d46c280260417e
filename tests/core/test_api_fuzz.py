"""A hypothesis fuzz of the public tensor API: random shapes (0-d, size 1, empty,
broadcastable or not), dtypes (bool, int32, int64, float32, float64) and arguments, valid
and invalid, for each entry point in a table.

Every call must do one of two things:

* give the right result: the value and the dtype of a reference written here on NumPy,
  independently of the library, with PyTorch's dtype promotion (docs/design.md,
  "Conventions"); and, where the result is differentiable, a backward pass that gives every
  input a ``.grad`` of the input's shape and dtype, finite where the op is smooth, and (in
  float64) equal to a central finite difference along a random direction;
* or raise one of the documented exception types (``TypeError``, ``ValueError``,
  ``IndexError``, ``RuntimeError``, ``NotImplementedError``) with a message that names the
  op or the problem: never ``AttributeError``, ``KeyError``, ``ZeroDivisionError``,
  ``np.linalg.LinAlgError`` or a bare NumPy message.

The reference says which calls are invalid (PyTorch's rules, tensorgrad's where
docs/porting.md says it differs on purpose); a call the reference accepts must succeed, and
one it refuses must raise. Where tensorgrad is knowingly more permissive than PyTorch (``abs``
of bools, mixed-dtype ``matmul``, negative slice steps) the reference allows either.

Seven fuzz tests (unary ops, binary operators with broadcasting, reductions, shape methods,
cat/stack/where, indexing, creation functions) run 400 examples each in the default suite,
derandomized so CI is reproducible, and 4000 each under ``-m slow``;
``--hypothesis-show-statistics`` shows the mix of valid and invalid calls and how many
gradients and finite differences were checked. A table of 45 entry points is called with
wrong argument types. Bugs the fuzz found are kept as named regression tests below.
"""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import tensorgrad as tg
import tensorgrad.nn.functional as F

ALLOWED = (TypeError, ValueError, IndexError, RuntimeError, NotImplementedError)
DTYPES = ("bool", "int32", "int64", "float32", "float64")
FLOATS = ("float32", "float64")

FAST = settings(
    max_examples=400,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
SLOW = settings(FAST, max_examples=4000)

#: The fuzz feeds ops inputs outside their domain on purpose (log(-1), 0 ** -1, sqrt(-2), the
#: mean or variance of nothing); the values, NaN and inf included, are compared with NumPy's,
#: so NumPy's warnings about them say nothing the assertions do not check.
pytestmark = [
    pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning"),
    pytest.mark.filterwarnings("ignore:Mean of empty slice:RuntimeWarning"),
    pytest.mark.filterwarnings("ignore:Degrees of freedom <= 0:RuntimeWarning"),
]


class Invalid(Exception):
    """Raised by a reference: PyTorch (or tensorgrad's documented rule) refuses the call."""


class Either(Exception):
    """Raised by a reference: the call may raise, or give ``value`` (tensorgrad is more
    permissive than PyTorch here, e.g. ``abs`` of a bool tensor)."""

    def __init__(self, value: Any = None) -> None:
        super().__init__()
        self.value = value


# --------------------------------------------------------------------------- strategies
shapes = st.lists(st.integers(0, 4), min_size=0, max_size=3).map(tuple)
nonempty_shapes = st.lists(st.integers(1, 4), min_size=0, max_size=3).map(tuple)
dtypes = st.sampled_from(DTYPES)
# wrong types and bad values for a dim argument
bad_things = st.sampled_from([None, "0", 1.5, [0, [1]], object(), -100, 100])


def make_array(seed: int, shape: tuple, dtype: str, positive: bool = False) -> np.ndarray:
    """Random values of ``dtype``: floats away from 0 and ties (distinct almost surely),
    small integers, random bools."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return np.asarray(rng.random(shape) < 0.5)
    if dtype.startswith("int"):
        low = 0 if positive else -4
        return rng.integers(low, 5, shape).astype(dtype)
    values = rng.uniform(0.2, 2.0, shape) * (1 if positive else rng.choice([-1, 1], shape))
    return np.asarray(values, dtype=dtype)


@st.composite
def arrays(draw: Any, shape: Any = shapes, dtype: Any = dtypes, positive: bool = False) -> Any:
    s = draw(shape) if not isinstance(shape, tuple) else shape
    d = draw(dtype) if not isinstance(dtype, str) else dtype
    return make_array(draw(st.integers(0, 2**32 - 1)), s, d, positive)


def leaf(array: np.ndarray) -> tg.Tensor:
    """A tensor of ``array`` (a copy); floating ones require grad."""
    return tg.tensor(array.copy(), requires_grad=array.dtype.kind == "f")


# --------------------------------------------------------------------------- references
_CATEGORY = {"b": 0, "i": 1, "u": 1, "f": 2}


def _tier_max(dtypes_: list) -> np.dtype:
    return max(dtypes_, key=lambda d: (_CATEGORY[d.kind], d.itemsize))


def promote(*operands: Any) -> np.dtype:
    """PyTorch's result type, written out: tensors with dimensions, then 0-d tensors, then
    Python numbers; a later tier counts only when it brings a higher category."""
    tiers: list[list] = [[], [], []]
    for v in operands:
        if isinstance(v, np.ndarray):
            tiers[0 if v.ndim else 1].append(v.dtype)
        elif isinstance(v, bool):
            tiers[2].append(np.dtype(bool))
        elif isinstance(v, int):
            tiers[2].append(np.dtype("int64"))
        else:
            tiers[2].append(np.dtype("float32"))
    result = None
    for tier in tiers:
        if tier:
            best = _tier_max(tier)
            if result is None or _CATEGORY[best.kind] > _CATEGORY[result.kind]:
                result = best
    return result


def floating(a: np.ndarray) -> np.ndarray:
    """Integer and bool inputs of exp, log, ... are computed in float32 (PyTorch)."""
    return a if a.dtype.kind == "f" else a.astype(np.float32)


def ref_sigmoid(a: np.ndarray) -> np.ndarray:
    a = floating(a)
    return (1 / (1 + np.exp(-a.astype(np.float64)))).astype(a.dtype)


# --------------------------------------------------------------------------- checking
def check_error(exc: BaseException, name: str) -> None:
    """``exc`` is a documented exception type, with a message naming the op or the problem."""
    assert isinstance(exc, ALLOWED), f"{name}: {type(exc).__name__}: {exc}"
    assert not isinstance(exc, (KeyError, np.linalg.LinAlgError)), (name, exc)
    message = str(exc).strip()
    assert len(message) >= 8, f"{name}: uninformative message {message!r}"
    words = (name.lower(), "dim", "shape", "size", "index", "dtype", "axis", "range", "bool",
             "int", "float", "tensor", "must", "expected", "invalid", "cannot", "not ",
             "only", "argument", "got")  # fmt: skip
    assert any(w in message.lower() for w in words), f"{name}: message {message!r}"


def assert_same(result: Any, expected: np.ndarray, name: str) -> None:
    """``result`` (a Tensor) has ``expected``'s shape, dtype and values."""
    assert isinstance(result, tg.Tensor), f"{name}: got {type(result).__name__}"
    got, expected = result.numpy(), np.asarray(expected)
    assert got.shape == expected.shape, f"{name}: shape {got.shape} != {expected.shape}"
    assert got.dtype == expected.dtype, f"{name}: dtype {got.dtype} != {expected.dtype}"
    if expected.dtype.kind == "f":
        tol = 1e-5 if expected.dtype == np.float32 else 1e-10
        np.testing.assert_allclose(got, expected, rtol=tol, atol=tol, equal_nan=True, err_msg=name)
    else:
        np.testing.assert_array_equal(got, expected, err_msg=name)


def outcome(call: Callable[[], Any], reference: Callable[[], Any], name: str) -> Any:
    """Run the reference, then the call: an Invalid reference wants an error, an Either
    reference an error or its value; otherwise the call must succeed and match. Returns the
    call's result (None when it raised)."""
    try:
        with np.errstate(all="ignore"):
            expected = reference()
        mode = "value"
    except Invalid:
        mode, expected = "error", None
    except Either as e:
        mode, expected = "either", e.value
    event(f"{name}: reference {mode}")  # --hypothesis-show-statistics shows the mix
    try:
        result = call()
    except Exception as exc:  # the point is to see what it raises
        if mode == "value":
            raise AssertionError(f"{name}: raised {type(exc).__name__}: {exc}") from exc
        check_error(exc, name)
        return None
    assert mode != "error", f"{name}: accepted an invalid call, gave {result!r}"
    if expected is not None:
        if isinstance(expected, (list, tuple)):
            assert isinstance(result, (list, tuple)) and len(result) == len(expected), name
            for r, e in zip(result, expected):
                assert_same(r, e, name)
        else:
            assert_same(result, expected, name)
    return result


def check_grads(fn: Callable[..., Any], arrays_: list[np.ndarray], smooth: bool, name: str) -> None:
    """Backward through ``fn`` (on fresh leaves): each floating input's gradient has its
    shape and dtype, is finite when the forward is finite and the op smooth there, and in
    float64 matches a central difference along a random direction."""
    tensors = [leaf(a) for a in arrays_]
    out = fn(*tensors)
    outs = [o for o in (out if isinstance(out, (list, tuple)) else [out])
            if isinstance(o, tg.Tensor) and o.requires_grad]  # fmt: skip
    if not outs:
        return
    total = sum((o.sum() for o in outs), start=tg.tensor(0.0, dtype=tg.float64))
    total.backward()
    forward_finite = all(np.isfinite(o.numpy()).all() for o in outs)
    event("gradient checked")
    for t, a in zip(tensors, arrays_):
        if a.dtype.kind != "f":
            assert t.grad is None, f"{name}: an integer input got a gradient"
            continue
        g = t.grad
        if g is None:  # the output did not depend on it (e.g. an empty result)
            continue
        assert g.shape == a.shape, f"{name}: grad shape {g.shape} != input shape {a.shape}"
        assert g.dtype == a.dtype, f"{name}: grad dtype {g.dtype} != input dtype {a.dtype}"
        if smooth and forward_finite:
            assert np.isfinite(g.numpy()).all(), f"{name}: non-finite gradient {g}"
    if not (smooth and forward_finite) or any(a.dtype != np.float64 for a in arrays_
                                              if a.dtype.kind == "f"):  # fmt: skip
        return
    rng = np.random.default_rng(0)
    directions = [rng.standard_normal(a.shape) if a.dtype.kind == "f" else None for a in arrays_]
    eps = 1e-6

    def total_at(sign: float) -> float:
        moved = [tg.tensor(a + sign * eps * d) if d is not None else tg.tensor(a)
                 for a, d in zip(arrays_, directions)]  # fmt: skip
        with tg.no_grad():
            o = fn(*moved)
        parts = o if isinstance(o, (list, tuple)) else [o]
        return sum(float(p.numpy().astype(np.float64).sum()) for p in parts
                   if isinstance(p, tg.Tensor) and p.dtype.kind == "f")  # fmt: skip

    event("finite difference checked")
    numeric = (total_at(1) - total_at(-1)) / (2 * eps)
    analytic = sum(float((t.grad.numpy() * d).sum()) for t, d in zip(tensors, directions)
                   if d is not None and t.grad is not None)  # fmt: skip
    assert math.isclose(numeric, analytic, rel_tol=1e-4, abs_tol=1e-5), (
        f"{name}: finite difference {numeric} != gradient {analytic}"
    )


def fuzz(body: Callable[..., None]) -> tuple[Any, Any]:
    """The default-suite test of ``body`` and its slow variant with many more examples."""
    fast = FAST(given(data=st.data())(body))
    slow = pytest.mark.slow(SLOW(given(data=st.data())(body)))
    return fast, slow


# --------------------------------------------------------------------------- unary
def _unary_ref(name: str, a: np.ndarray, arg: Any) -> np.ndarray:
    if name in ("exp", "log", "sqrt", "tanh"):
        return getattr(np, name)(floating(a))
    if name == "sigmoid":
        return ref_sigmoid(a)
    if name == "relu":
        if a.dtype == bool:
            raise Invalid  # PyTorch: "Boolean inputs not supported for relu"
        return np.maximum(a, a.dtype.type(0))
    if name == "abs":
        if a.dtype == bool:
            raise Either(a)  # PyTorch: not implemented for bool; tensorgrad: the same bools
        return np.abs(a)
    if name == "neg":
        if a.dtype == bool:
            raise Invalid
        return -a
    if name in ("clamp", "clip"):
        lo, hi = arg
        if lo is None and hi is None:
            raise Invalid
        bounds = [b for b in (lo, hi) if b is not None]
        if any(isinstance(b, str) for b in bounds):
            raise Invalid
        dtype = promote(a, *bounds)
        x = a.astype(dtype)
        if lo is not None:
            x = np.maximum(x, np.asarray(lo).astype(dtype))
        if hi is not None:
            x = np.minimum(x, np.asarray(hi).astype(dtype))
        return x
    if name == "pow":
        if isinstance(arg, str) or arg is None:
            raise Invalid
        dtype = promote(a, arg)
        if dtype.kind != "f" and arg < 0:
            raise Invalid  # integers to negative integer powers
        if a.dtype == bool and isinstance(arg, bool):
            raise Either()  # PyTorch: pow not implemented for bool
        return np.power(a.astype(dtype), np.asarray(arg).astype(dtype))
    raise AssertionError(name)


_UNARY_CALLS = {
    "exp": lambda x, arg: x.exp(),
    "log": lambda x, arg: tg.log(x),
    "sqrt": lambda x, arg: x.sqrt(),
    "tanh": lambda x, arg: tg.tanh(x),
    "sigmoid": lambda x, arg: x.sigmoid(),
    "relu": lambda x, arg: x.relu(),
    "abs": lambda x, arg: abs(x),
    "neg": lambda x, arg: -x,
    "clamp": lambda x, arg: x.clamp(*arg),
    "clip": lambda x, arg: tg.clip(x, *arg),
    "pow": lambda x, arg: x**arg,
}


def _smooth_unary(name: str, a: np.ndarray, arg: Any) -> bool:
    """Whether the op is differentiable at every element (no kinks, inside its domain)."""
    if name in ("log", "sqrt"):
        return bool((a > 0.05).all())
    if name in ("relu", "abs"):
        return bool((np.abs(a) > 1e-3).all())
    if name in ("clamp", "clip"):
        bounds = [b for b in arg if isinstance(b, (int, float))]
        return all(bool((np.abs(a - b) > 1e-3).all()) for b in bounds)
    if name == "pow":
        if isinstance(arg, float) and arg != int(arg):
            return bool((a > 0.05).all())
        return arg is not None and (arg >= 1 or bool((np.abs(a) > 0.05).all()))
    return True


def _unary(data: Any) -> None:
    name = data.draw(st.sampled_from(sorted(_UNARY_CALLS)), label="op")
    a = data.draw(arrays(), label="x")
    arg = None
    if name in ("clamp", "clip"):
        bound = st.one_of(st.none(), st.integers(-3, 3), st.floats(-2.5, 2.5), st.just("1"))
        arg = (data.draw(bound, label="min"), data.draw(bound, label="max"))
    elif name == "pow":
        arg = data.draw(
            st.one_of(
                st.integers(-2, 3),
                st.sampled_from([0.5, 2.0, -1.0, 1.5]),
                st.booleans(),
                st.just("2"),
                st.none(),
            ),
            label="exponent",
        )
    call = _UNARY_CALLS[name]
    result = outcome(lambda: call(leaf(a), arg), lambda: _unary_ref(name, a, arg), name)
    if result is not None and result.dtype.kind == "f" and a.dtype.kind == "f":
        check_grads(lambda x: call(x, arg), [a], _smooth_unary(name, a, arg), name)


test_unary, test_unary_slow = fuzz(_unary)


# --------------------------------------------------------------------------- binary
def broadcast_shape(s1: tuple, s2: tuple) -> tuple:
    """NumPy's (and PyTorch's) broadcasting, written out."""
    out = []
    for i in range(1, max(len(s1), len(s2)) + 1):
        a = s1[-i] if i <= len(s1) else 1
        b = s2[-i] if i <= len(s2) else 1
        if a != b and 1 not in (a, b):
            raise Invalid
        out.append(b if a == 1 else a)
    return tuple(reversed(out))


def _binary_ref(name: str, a: Any, b: Any) -> np.ndarray:
    sa, sb = np.shape(a), np.shape(b)
    if name == "@":
        return _matmul_ref(a, b)
    broadcast_shape(sa, sb)
    dtype = promote(a, b)
    if name in ("==", "!=", "<", "<=", ">", ">="):
        ops = {"==": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal,
               ">": np.greater, ">=": np.greater_equal}  # fmt: skip
        return ops[name](np.asarray(a).astype(dtype), np.asarray(b).astype(dtype))
    if name == "-" and any(np.asarray(v).dtype == bool for v in (a, b)):
        raise Invalid  # PyTorch: subtraction with a bool operand is not supported
    if name == "/":
        dtype = dtype if dtype.kind == "f" else np.dtype("float32")
    x, y = np.asarray(a).astype(dtype), np.asarray(b).astype(dtype)
    if name == "**":
        if dtype.kind == "b":
            raise Either()
        if dtype.kind != "f" and (y < 0).any():
            raise Either()  # PyTorch computes it for tensor exponents; tensorgrad refuses
        return np.power(x, y)
    return {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide}[name](x, y)


def _matmul_ref(a: Any, b: Any) -> np.ndarray:
    if not isinstance(a, np.ndarray) or not isinstance(b, np.ndarray):
        raise Invalid
    if a.ndim == 0 or b.ndim == 0:
        raise Invalid
    k1 = a.shape[-1]
    k2 = b.shape[0] if b.ndim == 1 else b.shape[-2]
    if k1 != k2:
        raise Invalid
    broadcast_shape(a.shape[:-2], b.shape[:-2])
    if a.dtype != b.dtype:
        # PyTorch refuses mixed dtypes; tensorgrad promotes
        dtype = promote(a, b)
        raise Either(np.matmul(a.astype(dtype), b.astype(dtype)))
    if a.dtype == bool:
        raise Either(np.matmul(a, b))
    return np.matmul(a, b)


_BINARY = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "**": operator.pow, "@": operator.matmul, "==": operator.eq, "!=": operator.ne,
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
}  # fmt: skip


@st.composite
def operand_pairs(draw: Any) -> tuple:
    """Two shapes: often broadcastable (a trailing part of one, with 1s), sometimes not."""
    s1 = draw(shapes)
    kind = draw(st.sampled_from(["same", "broadcast", "random", "scalar", "matmul"]))
    if kind == "same":
        s2 = s1
    elif kind == "broadcast":
        tail = s1[len(s1) - draw(st.integers(0, len(s1))) :]
        s2 = tuple(draw(st.sampled_from([n, 1])) for n in tail)
        if draw(st.booleans()):
            s1, s2 = s2, s1
    elif kind == "matmul":
        k = draw(st.integers(0, 3))
        s1 = (*draw(st.lists(st.integers(1, 3), max_size=2)), k)
        s2 = (k, *draw(st.lists(st.integers(1, 3), max_size=1)))
        s1, s2 = s1[draw(st.integers(0, len(s1) - 1)) :], s2
    else:
        s2 = draw(shapes)
    d1 = draw(dtypes)
    d2 = draw(st.one_of(st.just(d1), dtypes))
    a = draw(arrays(st.just(s1), st.just(d1)))
    if kind == "matmul":
        return a, draw(arrays(st.just(s2), st.just(d2)))
    if kind == "scalar":
        b = draw(st.one_of(st.integers(-3, 3), st.floats(-2, 2).filter(lambda v: abs(v) > 0.1),
                           st.booleans()))  # fmt: skip
    else:
        b = draw(arrays(st.just(s2), st.just(d2)))
    if draw(st.booleans()):
        a, b = b, a
    return a, b


def _as_operand(v: Any) -> Any:
    return leaf(v) if isinstance(v, np.ndarray) else v


def _binary(data: Any) -> None:
    name = data.draw(st.sampled_from(sorted(_BINARY)), label="op")
    a, b = data.draw(operand_pairs(), label="operands")
    fn = _BINARY[name]
    result = outcome(
        lambda: fn(_as_operand(a), _as_operand(b)), lambda: _binary_ref(name, a, b), name
    )
    if result is None or result.dtype.kind != "f":
        return
    tensors = [v for v in (a, b) if isinstance(v, np.ndarray)]
    values = [np.asarray(v) for v in (a, b)]
    smooth = True
    if name == "/":
        smooth = bool((np.abs(values[1]) > 0.05).all())
    if name == "**":
        base, exponent = values
        smooth = bool((base > 0.05).all()) or (
            exponent.dtype.kind != "f" and bool((exponent >= 1).all())
        )

    def fn_tensors(*ts: Any) -> Any:
        it = iter(ts)
        x = next(it) if isinstance(a, np.ndarray) else a
        y = next(it) if isinstance(b, np.ndarray) else b
        return fn(x, y)

    check_grads(fn_tensors, tensors, smooth, name)


test_binary, test_binary_slow = fuzz(_binary)


@pytest.mark.parametrize("dtype", ["int32", "int64", "bool"])
def test_integer_division_by_zero_raises(dtype: str) -> None:
    """Found by the fuzz: ``int_tensor // 0`` (and ``% 0``) gave NumPy's 0 with a warning;
    PyTorch raises, as integer arithmetic has no inf (and has no bool kernel at all)."""
    if dtype == "bool":
        x = tg.tensor([True, False])
        for divide in (lambda: x // x, lambda: x % x, lambda: x.div(x, rounding_mode="trunc")):
            with pytest.raises(NotImplementedError, match="not implemented for bool"):
                divide()
        return
    x = tg.tensor(np.array([1, 2, 0]).astype(dtype))
    zero = tg.tensor(np.array([1, 0, 1]).astype(dtype))
    for divide in (lambda: x // 0, lambda: x // zero, lambda: x % 0, lambda: x % zero,
                   lambda: x.div(zero, rounding_mode="trunc")):  # fmt: skip
        with pytest.raises(RuntimeError, match="division by zero"):
            divide()
    assert (x.float() // 0).isinf().any()  # floats: inf, as PyTorch
    if dtype != "bool":
        assert (x // 2).dtype == x.dtype and (x // 2).tolist() == [0, 1, 0]


def test_bool_tensor_to_an_int_power_is_int64() -> None:
    """Found by the fuzz: ``bool_tensor ** 2`` was int8 (NumPy's power has no bool loop);
    PyTorch's promotion gives int64."""
    x = tg.tensor([True, False])
    assert (x**2).dtype == np.int64 and (x**2).tolist() == [1, 0]
    assert x.pow(3).dtype == np.int64
    assert (x**2.0).dtype == np.float32
    with pytest.raises(ValueError, match="negative integer powers"):
        tg.zeros(0, dtype=tg.int64) ** -1  # empty: NumPy has no element to refuse


@pytest.mark.parametrize("other", [2.5, 1, "float_tensor"])
def test_subtraction_with_a_bool_tensor_is_refused(other: Any) -> None:
    """Found before the fuzz and left as an xfail (engine.binary cast the bool tensor to the
    result type, so ops.Sub never saw it); PyTorch refuses ``-`` with any bool operand."""
    x = tg.tensor([True, False])
    y = tg.tensor([1.5, 2.0]) if other == "float_tensor" else other
    for subtract in (lambda: x - y, lambda: y - x):
        with pytest.raises(RuntimeError, match="bool"):
            subtract()


def test_relu_refuses_bool() -> None:
    """Found by the fuzz: ``relu`` of a bool tensor gave int64 (NumPy's maximum with 0);
    PyTorch refuses bool inputs."""
    with pytest.raises(RuntimeError, match="relu"):
        tg.tensor([True, False]).relu()
    with pytest.raises(RuntimeError, match="relu"):
        F.relu(tg.tensor([True]))
    assert tg.tensor([-1, 2]).relu().tolist() == [0, 2]


# --------------------------------------------------------------------------- reductions
def ref_axes(dim: Any, ndim: int, tuples: bool) -> tuple:
    """PyTorch's dim argument: None (all), an int in range (-1 and 0 for a 0-d tensor), or,
    where ``tuples``, a tuple of distinct ones; anything else is refused."""
    if dim is None:
        return tuple(range(ndim))
    items = dim if isinstance(dim, tuple) and tuples else (dim,)
    axes = []
    for d in items:
        if type(d) is not int or not -max(ndim, 1) <= d < max(ndim, 1):
            raise Invalid
        axes.append(d % max(ndim, 1))
    if len(set(axes)) != len(axes):
        raise Invalid
    return tuple(axes) if ndim else ()


def _reduce_ref(name: str, a: np.ndarray, dim: Any, keepdim: bool) -> Any:
    single = name in ("argmax", "max_dim", "min_dim", "softmax", "log_softmax")
    if name == "softmax" and dim is None:
        dim = -1  # F.softmax without dim: the last dimension (docs/porting.md)
    if name == "log_softmax" and dim is None:
        raise Invalid
    axes = ref_axes(dim, a.ndim, tuples=not single)
    if isinstance(dim, tuple) and not dim:
        raise Either()  # dim=(): PyTorch reduces everything (see the xfail below)
    count = math.prod(a.shape[i] for i in axes)
    if name == "sum":
        dtype = a.dtype if a.dtype.kind == "f" else np.dtype("int64")
        return np.sum(a.astype(dtype), axis=axes, keepdims=keepdim)
    if name in ("mean", "var", "std"):
        if a.dtype.kind != "f":
            raise Invalid
        if name == "mean":
            return np.mean(a, axis=axes, keepdims=keepdim)
        fn = np.var if name == "var" else np.std
        return fn(a, axis=axes, keepdims=keepdim, ddof=1).astype(a.dtype)
    if name == "logsumexp":
        x = floating(a).astype(np.float64)
        with np.errstate(divide="ignore"):
            out = np.log(np.sum(np.exp(x), axis=axes, keepdims=keepdim))
        return out.astype(floating(a).dtype)
    if name in ("softmax", "log_softmax"):
        x = floating(a).astype(np.float64)
        e = np.exp(x - (np.max(x, axis=axes, keepdims=True) if x.size else 0))
        out = e / np.sum(e, axis=axes, keepdims=True)
        out = (np.log(out) if name == "log_softmax" else out).astype(floating(a).dtype)
        if a.dtype.kind != "f":
            raise Invalid  # PyTorch has no integer or bool kernel (NotImplementedError)
        return out
    if count == 0 and (a.size == 0 or axes):
        raise Invalid  # the maximum of nothing
    if name in ("amax", "max"):
        return np.max(a, axis=axes, keepdims=keepdim)
    if name == "amin":
        return np.min(a, axis=axes, keepdims=keepdim)
    if name == "argmax":
        if a.dtype == np.bool_:
            raise Invalid  # PyTorch: argmax does not support bool input
        if dim is None:
            out = np.asarray(np.argmax(a)).astype(np.int64)
            return out.reshape((1,) * a.ndim) if keepdim else out
        if not a.ndim:
            return np.asarray(0, np.int64)
        return np.argmax(a, axis=axes[0], keepdims=keepdim).astype(np.int64)
    if name in ("max_dim", "min_dim"):
        arg = np.argmax if name == "max_dim" else np.argmin
        if not a.ndim:
            return [a, np.asarray(0, np.int64)]
        index = arg(a, axis=axes[0], keepdims=True)
        values = np.take_along_axis(a, index, axes[0])
        if not keepdim:
            index, values = np.squeeze(index, axes[0]), np.squeeze(values, axes[0])
        return [values, index.astype(np.int64)]
    raise AssertionError(name)


_REDUCE_CALLS = {
    "sum": lambda x, dim, k: x.sum(dim, keepdim=k),
    "mean": lambda x, dim, k: x.mean(dim=dim, keepdim=k),
    "var": lambda x, dim, k: x.var(dim, keepdim=k),
    "std": lambda x, dim, k: tg.std(x, dim=dim, keepdim=k),
    "logsumexp": lambda x, dim, k: x.logsumexp(dim, keepdim=k),
    "amax": lambda x, dim, k: x.amax(dim, keepdim=k),
    "amin": lambda x, dim, k: tg.amin(x, dim, keepdim=k),
    "max": lambda x, dim, k: x.max(),
    "max_dim": lambda x, dim, k: x.max(dim, keepdim=k),
    "min_dim": lambda x, dim, k: tg.min(x, dim=dim, keepdim=k),
    "argmax": lambda x, dim, k: x.argmax(dim, keepdim=k),
    "softmax": lambda x, dim, k: F.softmax(x, dim=dim),
    "log_softmax": lambda x, dim, k: x.log_softmax(dim),
}


def _reduce(data: Any) -> None:
    name = data.draw(st.sampled_from(sorted(_REDUCE_CALLS)), label="op")
    a = data.draw(arrays(), label="x")
    ndim = a.ndim
    dim = data.draw(
        st.one_of(
            st.none(),
            st.integers(-ndim - 1, ndim),
            st.lists(st.integers(-ndim, max(ndim - 1, 0)), max_size=3).map(tuple),
            bad_things,
        ),
        label="dim",
    )
    if name == "max":
        dim = None
    if name in ("max_dim", "min_dim") and dim is None:
        dim = 0  # max(None) is the plain max, tested as "max"
    keepdim = data.draw(st.booleans(), label="keepdim")
    call = _REDUCE_CALLS[name]
    reference = (
        (lambda: _reduce_ref("amax", a, None, False))
        if name == "max"
        else (lambda: _reduce_ref(name, a, dim, keepdim))
    )
    result = outcome(lambda: call(leaf(a), dim, keepdim), reference, name)
    if result is not None and a.dtype.kind == "f":
        smooth = name not in ("var", "std") or bool(a.size > 1)
        check_grads(lambda x: call(x, dim, keepdim), [a], smooth, name)


test_reductions, test_reductions_slow = fuzz(_reduce)


def test_empty_dim_tuple_reduces_everything() -> None:
    """PyTorch reads ``dim=()`` as every dimension in sum, mean, amax, amin, var, std and
    norm (``any`` and ``all`` reduce nothing); NumPy's ``axis=()`` reduces nothing, and
    ``np.sum(t, axis=())`` keeps NumPy's meaning."""
    x = tg.arange(6.0, dtype=tg.float64).reshape(2, 3)
    for name in ("sum", "mean", "amax", "amin", "var", "std", "norm"):
        assert getattr(x, name)(dim=()).shape == (), name
        assert getattr(x, name)(dim=[]).item() == getattr(x, name)().item(), name
    assert x.any(dim=()).shape == (2, 3) and x.all(dim=()).shape == (2, 3)
    for function in (np.sum, np.mean, np.max, np.min):
        out = function(x, axis=())
        assert out.shape == (2, 3) and np.array_equal(out.numpy(), function(x.numpy(), axis=()))
    y = tg.tensor([1.0, 2.0], requires_grad=True)
    np.sum(y, axis=()).sum().backward()
    assert y.grad.tolist() == [1.0, 1.0]


def test_reductions_of_a_0d_tensor_take_dim_0() -> None:
    """Found by the fuzz: ``amax``, ``sum``, ``softmax``, ... of a 0-d tensor with ``dim=0``
    (or -1) raised IndexError; PyTorch treats a 0-d tensor's dim as 0 or -1."""
    x = tg.tensor(1.5, requires_grad=True)
    for out in (x.amax(0), x.sum(-1), x.mean(0, keepdim=True), x.logsumexp(0)):
        assert out.shape == () and out.item() == 1.5
    assert F.softmax(x, dim=0).item() == 1.0 and x.log_softmax(-1).item() == 0.0
    x.softmax(0).backward()
    assert x.grad.shape == () and x.grad.item() == 0.0
    with pytest.raises(IndexError, match="out of range"):
        x.sum(1)


@pytest.mark.parametrize("shape, dim", [((0,), None), ((1,), None), ((2, 1), 1), ((0, 3), 0)])
def test_std_without_degrees_of_freedom_has_an_input_shaped_gradient(shape, dim) -> None:
    """Found by the fuzz: the backward of ``std`` over N <= 1 elements returned the output's
    shape instead of the input's (ops/reduce.py, Std.backward)."""
    x = tg.zeros(*shape, dtype=tg.float64, requires_grad=True)
    x.std(dim).sum().backward()
    assert x.grad.shape == x.shape and x.grad.dtype == x.dtype


def test_integer_logsumexp_is_float32_and_softmax_refuses_integers() -> None:
    """Found by the fuzz: logsumexp of an integer tensor was float64 (NumPy's exp of int64);
    PyTorch computes it in the default float dtype. softmax and log_softmax have no integer
    kernel in PyTorch (NotImplementedError), unless ``dtype=`` asks for a float."""
    x = tg.tensor([1, 2, 3])
    assert x.logsumexp(0).dtype == np.float32
    assert tg.tensor([True, False]).logsumexp(0).dtype == np.float32
    for call in (lambda: F.softmax(x, dim=0), lambda: x.log_softmax(0)):
        with pytest.raises(NotImplementedError, match="not implemented for int64"):
            call()
    assert F.softmax(x, dim=0, dtype=tg.float32).dtype == np.float32
    np.testing.assert_allclose(x.softmax(0, dtype=tg.float64).sum().item(), 1.0, rtol=1e-12)


# --------------------------------------------------------------------------- shape methods
def ref_dim(d: Any, ndim: int) -> int:
    """One dim of a tensor with ``ndim`` dimensions (0 or -1 for a 0-d tensor)."""
    if type(d) is not int or not -max(ndim, 1) <= d < max(ndim, 1):
        raise Invalid
    return d % max(ndim, 1)


def ref_sizes(sizes: Any) -> tuple:
    if not isinstance(sizes, tuple) or any(type(n) is not int for n in sizes):
        raise Invalid
    return sizes


def _reshape_ref(a: np.ndarray, shape: Any, star: bool = False) -> np.ndarray:
    if star:
        _no_args(shape)
    shape = ref_sizes(shape)
    if sum(n == -1 for n in shape) > 1 or any(n < -1 for n in shape):
        raise Invalid
    known = math.prod(n for n in shape if n != -1)
    if -1 in shape:
        if known == 0 or a.size % known:
            raise Invalid
        shape = tuple(a.size // known if n == -1 else n for n in shape)
    if math.prod(shape) != a.size:
        raise Invalid
    return a.reshape(shape)


def _no_args(args: Any) -> None:
    """``x.permute()``, ``x.reshape()``: no sizes at all is PyTorch's TypeError."""
    if isinstance(args, tuple) and not args:
        raise Invalid


def _permute_ref(a: np.ndarray, dims: Any) -> np.ndarray:
    dims = ref_sizes(dims)
    if len(dims) != a.ndim:
        raise Invalid
    axes = [ref_dim(d, a.ndim) for d in dims]
    if len(set(axes)) != len(axes):
        raise Invalid
    return np.transpose(a, axes) if a.ndim else a


def _squeeze_ref(a: np.ndarray, dim: Any) -> np.ndarray:
    if dim is None:
        axes: tuple = tuple(i for i, n in enumerate(a.shape) if n == 1)
    else:
        items = dim if isinstance(dim, tuple) else (dim,)
        axes = tuple(ref_dim(d, a.ndim) for d in items)
        if len(set(axes)) != len(axes):
            raise Invalid
    if not a.ndim:
        return a
    return a.reshape([n for i, n in enumerate(a.shape) if not (i in axes and n == 1)])


def _unsqueeze_ref(a: np.ndarray, dim: Any) -> np.ndarray:
    if type(dim) is not int or not -a.ndim - 1 <= dim <= a.ndim:
        raise Invalid
    return np.expand_dims(a, dim % (a.ndim + 1))


def _flatten_ref(a: np.ndarray, start: Any, end: Any) -> np.ndarray:
    s, e = ref_dim(start, a.ndim), ref_dim(end, a.ndim)
    if not a.ndim:
        return a.reshape(1)
    if s > e:
        raise Invalid
    return a.reshape((*a.shape[:s], math.prod(a.shape[s : e + 1]), *a.shape[e + 1 :]))


def _expand_ref(a: np.ndarray, sizes: Any) -> np.ndarray:
    sizes = ref_sizes(sizes)
    lead = len(sizes) - a.ndim
    if lead < 0:
        raise Invalid
    target = []
    for i, n in enumerate(sizes):
        if i < lead:
            if n < 0:
                raise Invalid
            target.append(n)
            continue
        have = a.shape[i - lead]
        if n == -1:
            n = have
        if n < 0 or (have != 1 and n != have):
            raise Invalid
        target.append(n)
    return np.broadcast_to(a, tuple(target)).copy()


def _repeat_ref(a: np.ndarray, sizes: Any) -> np.ndarray:
    sizes = ref_sizes(sizes)
    if not sizes or len(sizes) < a.ndim:
        raise Invalid  # x.repeat() with no sizes is PyTorch's TypeError
    shape = (1,) * (len(sizes) - a.ndim) + a.shape
    if any(r * n < 0 for r, n in zip(sizes, shape)):
        raise Invalid  # PyTorch checks the sizes made: a negative repeat of a 0 size is 0
    return np.tile(a, [max(r, 0) for r in sizes])


def _narrow_ref(a: np.ndarray, dim: Any, start: Any, length: Any) -> np.ndarray:
    if not a.ndim or type(start) is not int or type(length) is not int:
        raise Invalid
    axis = ref_dim(dim, a.ndim)
    n = a.shape[axis]
    if not -n <= start <= n:
        raise Invalid
    start %= max(n, 1) if start < 0 else n + 1
    if length < 0 or start + length > n:
        raise Invalid
    return a[(slice(None),) * axis + (slice(start, start + length),)]


def _split_ref(a: np.ndarray, size: Any, dim: Any, chunks: bool) -> list:
    if not a.ndim:
        raise Invalid
    axis = ref_dim(dim, a.ndim)
    n = a.shape[axis]
    if chunks:
        if type(size) is not int or size <= 0:
            raise Invalid
        if n == 0:
            return [a] * size  # PyTorch: ``chunks`` empty pieces
        size = -(-n // size)
    if type(size) is int:
        if size < 0 or (size == 0 and n):
            raise Invalid
        sizes = [min(size, n - s) for s in range(0, n, size)] if n else [0]
    else:
        if not isinstance(size, (list, tuple)) or any(type(k) is not int for k in size):
            raise Invalid
        sizes = list(size)
        if sum(sizes) != n or any(k < 0 for k in sizes):
            raise Invalid
    bounds = np.cumsum([0, *sizes])
    return [a[(slice(None),) * axis + (slice(lo, hi),)] for lo, hi in itertools.pairwise(bounds)]


def _shape_case(data: Any, a: np.ndarray) -> tuple[str, Callable, Callable]:
    """An op name, the call on a tensor, and the reference on ``a``."""
    name = data.draw(
        st.sampled_from(["reshape", "view", "transpose", "permute", "squeeze", "unsqueeze",
                         "flatten", "expand", "repeat", "narrow", "chunk", "split"]),
        label="op",
    )  # fmt: skip
    nd = a.ndim
    dim = st.integers(-nd - 2, nd + 1)
    sizes = st.lists(st.integers(-2, 4), max_size=4).map(tuple)
    if name in ("reshape", "view"):
        shape = data.draw(
            st.one_of(
                sizes,
                st.just(tuple(a.shape)),
                st.permutations(a.shape).map(tuple),
                st.just((-1,)),
                st.just(("2",)),
                st.just((1.5,)),
            ),
            label="shape",
        )
        star = data.draw(st.booleans(), label="star")
        call = (lambda x: getattr(x, name)(*shape)) if star else (lambda x: getattr(x, name)(shape))
        return name, call, lambda: _reshape_ref(a, shape, star)
    if name == "transpose":
        d0, d1 = data.draw(st.one_of(dim, bad_things)), data.draw(dim)
        return (
            name,
            lambda x: x.transpose(d0, d1),
            lambda: _permute_ref(a, _swap(nd, ref_dim(d0, nd), ref_dim(d1, nd))),
        )
    if name == "permute":
        dims = data.draw(st.one_of(st.permutations(range(nd)).map(tuple), sizes), label="dims")
        return name, lambda x: x.permute(*dims), lambda: _no_args(dims) or _permute_ref(a, dims)
    if name == "squeeze":
        d = data.draw(st.one_of(st.none(), dim, st.lists(dim, max_size=2).map(tuple)))
        return name, lambda x: x.squeeze(d), lambda: _squeeze_ref(a, d)
    if name == "unsqueeze":
        d = data.draw(st.one_of(dim, bad_things), label="dim")
        return name, lambda x: x.unsqueeze(d), lambda: _unsqueeze_ref(a, d)
    if name == "flatten":
        s, e = data.draw(dim, label="start"), data.draw(dim, label="end")
        return name, lambda x: tg.flatten(x, s, e), lambda: _flatten_ref(a, s, e)
    if name == "expand":
        target = data.draw(
            st.one_of(sizes, st.lists(st.integers(-1, 3), max_size=2).map(
                lambda lead: (*lead, *(data.draw(st.sampled_from([n, -1, 3])) for n in a.shape)))),
            label="sizes",
        )  # fmt: skip
        return name, lambda x: x.expand(*target), lambda: _no_args(target) or _expand_ref(a, target)
    if name == "repeat":
        reps = data.draw(st.lists(st.integers(-1, 3), min_size=max(nd - 1, 0), max_size=nd + 1))
        reps = tuple(reps)
        return name, lambda x: x.repeat(*reps), lambda: _repeat_ref(a, reps)
    if name == "narrow":
        d = data.draw(dim, label="dim")
        start = data.draw(st.integers(-5, 5), label="start")
        length = data.draw(st.integers(-1, 5), label="length")
        return name, lambda x: x.narrow(d, start, length), lambda: _narrow_ref(a, d, start, length)
    d = data.draw(dim, label="dim")
    if name == "chunk":
        k = data.draw(st.integers(-1, 5), label="chunks")
        return name, lambda x: x.chunk(k, d), lambda: _split_ref(a, k, d, chunks=True)
    size = data.draw(st.one_of(st.integers(-1, 4), st.lists(st.integers(-1, 3), max_size=3)))
    return name, lambda x: tg.split(x, size, dim=d), lambda: _split_ref(a, size, d, chunks=False)


def _swap(ndim: int, i: int, j: int) -> tuple:
    order = list(range(ndim))
    if ndim:
        order[i], order[j] = order[j], order[i]
    return tuple(order)


def _shape(data: Any) -> None:
    a = data.draw(arrays(), label="x")
    name, call, reference = _shape_case(data, a)
    result = outcome(lambda: call(leaf(a)), reference, name)
    if result is not None and a.dtype.kind == "f":
        check_grads(call, [a], True, name)


test_shape_methods, test_shape_methods_slow = fuzz(_shape)


def test_narrow_with_a_negative_start() -> None:
    """Found by the fuzz: ``narrow(0, -1, 1)`` sliced ``[-1:0]`` and gave nothing; PyTorch
    counts a negative start from the end, and refuses a range outside the dimension."""
    x = tg.arange(4.0, requires_grad=True)
    assert x.narrow(0, -1, 1).tolist() == [3.0] and x.narrow(0, -4, 2).tolist() == [0.0, 1.0]
    x.narrow(0, -2, 2).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 1.0, 1.0]
    assert x.narrow(0, 4, 0).shape == (0,)
    for start, length in ((-5, 1), (5, 0), (3, 2), (0, -1)):
        with pytest.raises((IndexError, RuntimeError), match="narrow"):
            x.narrow(0, start, length)
    with pytest.raises(RuntimeError, match="narrow"):
        tg.tensor(1.0).narrow(0, 0, 1)


def test_chunk_of_an_empty_dimension_gives_chunks_pieces() -> None:
    """Found by the fuzz: ``chunk(3)`` of a dimension of size 0 gave one piece; PyTorch
    gives ``chunks`` empty pieces."""
    pieces = tg.zeros(2, 0).chunk(3, dim=1)
    assert len(pieces) == 3 and all(p.shape == (2, 0) for p in pieces)
    assert [p.shape for p in tg.zeros(5).chunk(3)] == [(2,), (2,), (1,)]
    # and split size 0 is allowed there (found by the fuzz too)
    assert [p.shape for p in tg.zeros(2, 0).split(0, dim=1)] == [(2, 0)]
    with pytest.raises(ValueError, match="split"):
        tg.zeros(3).split(0)


def test_0d_tensor_dims_are_checked_by_flatten_and_squeeze() -> None:
    """Found by the fuzz: ``flatten(0, 1)`` and ``squeeze(1)`` of a 0-d tensor ignored the
    out-of-range dim; PyTorch allows only 0 and -1 there."""
    x = tg.tensor(2.0)
    assert x.flatten(-1, 0).shape == (1,) and x.squeeze(0).shape == ()
    with pytest.raises(IndexError, match="flatten"):
        x.flatten(0, 1)
    with pytest.raises(IndexError, match="squeeze"):
        x.squeeze(1)


# --------------------------------------------------------------------------- cat, stack, where
@st.composite
def broadcastable(draw: Any, base: tuple) -> tuple:
    """A shape that broadcasts with ``base``: a trailing part of it, some sizes set to 1."""
    tail = base[len(base) - draw(st.integers(0, len(base))) :]
    return tuple(draw(st.sampled_from([n, 1])) for n in tail)


def _cat_ref(arrays_: list, dim: Any, stack: bool) -> np.ndarray:
    if not arrays_ or type(dim) is not int:
        raise Invalid
    dtype = promote(*arrays_)
    if not stack:
        # PyTorch's legacy rule: 1-D empty tensors are left out (their dtype still counts);
        # with nothing else, the result is 1-D and empty, whatever ``dim`` is
        kept = [a for a in arrays_ if a.shape != (0,)]
        if not kept:
            return np.zeros(0, dtype)
        arrays_ = kept
    ndims = {a.ndim for a in arrays_}
    if len(ndims) > 1:
        raise Invalid
    ndim = ndims.pop()
    if not stack and ndim == 0:
        raise Invalid  # zero-dimensional tensors cannot be concatenated
    if stack:
        if type(dim) is not int or not -ndim - 1 <= dim <= ndim:
            raise Invalid
        if len({a.shape for a in arrays_}) > 1:
            raise Invalid
        axis = dim % (ndim + 1)
    else:
        axis = ref_dim(dim, ndim)
        rest = {a.shape[:axis] + a.shape[axis + 1 :] for a in arrays_}
        if len(rest) > 1:
            raise Invalid
    join = np.stack if stack else np.concatenate
    return join([a.astype(dtype) for a in arrays_], axis=axis)


def _where_ref(cond: np.ndarray, x: Any, y: Any) -> np.ndarray:
    if cond.dtype != bool:
        raise Invalid
    shape = broadcast_shape(cond.shape, np.shape(x))
    broadcast_shape(shape, np.shape(y))
    dtype = promote(x, y)
    return np.where(cond, np.asarray(x).astype(dtype), np.asarray(y).astype(dtype))


def _joins(data: Any) -> None:
    name = data.draw(st.sampled_from(["cat", "stack", "where"]), label="op")
    base = data.draw(shapes, label="shape")
    if name == "where":
        cond = data.draw(arrays(st.just(base), st.sampled_from(["bool", "bool", "int64"])))
        x = data.draw(st.one_of(arrays(broadcastable(base)), arrays(), st.floats(-2, 2)))
        y = data.draw(st.one_of(arrays(broadcastable(base)), st.integers(-3, 3)))
        result = outcome(
            lambda: tg.where(leaf(cond), _as_operand(x), _as_operand(y)),
            lambda: _where_ref(cond, x, y),
            name,
        )
        tensors = [v for v in (x, y) if isinstance(v, np.ndarray)]

        def fn(*ts: Any) -> Any:
            it = iter(ts)
            xx = next(it) if isinstance(x, np.ndarray) else x
            yy = next(it) if isinstance(y, np.ndarray) else y
            return tg.where(tg.tensor(cond), xx, yy)

        if result is not None and result.dtype.kind == "f":
            check_grads(fn, tensors, True, name)
        return
    nd = len(base)
    in_range = (
        st.integers(-nd - 1, nd) if name == "stack" else st.integers(-max(nd, 1), max(nd - 1, 0))
    )
    dim = data.draw(st.one_of(in_range, in_range, st.integers(-nd - 2, nd + 1), bad_things))
    count = data.draw(st.integers(0, 3), label="count")
    parts = []
    for _ in range(count):
        shape = list(base)
        roll = data.draw(st.integers(0, 9))
        if shape and roll < 5 and name == "cat" and type(dim) is int and -nd <= dim < nd:
            shape[dim] = data.draw(st.integers(0, 3))  # the joined dim: any length
        elif shape and roll == 5:
            shape[data.draw(st.integers(0, nd - 1))] = data.draw(st.integers(0, 3))
        elif roll == 6:
            shape = shape[1:]
        parts.append(data.draw(arrays(st.just(tuple(shape)))))
    as_tuple = data.draw(st.booleans(), label="tuple")
    fn = tg.cat if name == "cat" else tg.stack

    def call(*ts: Any) -> Any:
        return fn(tuple(ts) if as_tuple else list(ts), dim=dim)

    result = outcome(
        lambda: call(*(leaf(p) for p in parts)),
        lambda: _cat_ref(parts, dim, stack=name == "stack"),
        name,
    )
    if result is not None and result.dtype.kind == "f":
        check_grads(call, parts, True, name)


test_joins, test_joins_slow = fuzz(_joins)


def test_cat_refuses_what_is_not_a_sequence_of_tensors() -> None:
    x = tg.ones(2)
    for bad in (x, None, "ab", 3):
        with pytest.raises(TypeError, match="cat"):
            tg.cat(bad)


# --------------------------------------------------------------------------- indexing
@st.composite
def indices(draw: Any, shape: tuple) -> Any:
    """An index for an array of ``shape``: ints (some out of range), slices (some with
    negative steps), None, Ellipsis, integer lists, bool masks, or a bad object."""
    kind = draw(st.sampled_from(["basic", "basic", "mask", "bad"]))
    if kind == "mask":
        mask_shape = shape if draw(st.booleans()) else draw(shapes)
        return make_array(draw(st.integers(0, 99)), mask_shape, "bool")
    if kind == "bad":
        return draw(st.sampled_from([1.5, "a", {1: 2}, (0.5, 1), [[0, 1], [1]]]))
    n = draw(st.integers(0, len(shape) + 1))
    parts: list = []
    for i in range(n):
        size = shape[i] if i < len(shape) else 1
        parts.append(
            draw(
                st.one_of(
                    st.integers(-size - 1, size),
                    st.builds(
                        slice,
                        st.sampled_from([None, 0, 1, -1, 5]),
                        st.sampled_from([None, 0, 2, -1, 5]),
                        st.sampled_from([None, 1, 2, -1]),
                    ),
                    st.none(),
                    st.just(Ellipsis),
                    st.lists(st.integers(-size, max(size - 1, 0)), max_size=3),
                )
            )
        )
    return tuple(parts) if draw(st.booleans()) or n != 1 else parts[0]


def _torch_reading(items: tuple) -> tuple[tuple, tuple]:
    """PyTorch's reading of an index tuple as two NumPy indices, one after the other.

    PyTorch (``applySlicing``) walks the index: an integer selects (its dimension goes),
    slices, None and Ellipsis are basic, and each index array is put aside for the
    dimension it stands at once the integers are gone; then it indexes with the arrays,
    NumPy's advanced indexing over what is left. NumPy instead counts an integer as one more
    index array, so ``x[0, :, [0, 1]]`` of a (2, 3, 4) array is (3, 2) in PyTorch and (2, 3)
    in NumPy."""
    first: list[Any] = []
    then: list[Any] = []
    for item in items:
        if isinstance(item, np.ndarray) and item.ndim:
            first.extend([slice(None)] * (item.ndim if item.dtype == np.bool_ else 1))
            then.append(item)
        elif isinstance(item, (int, np.integer)):
            first.append(item)
        else:
            first.append(item)
            then.append(Ellipsis if item is Ellipsis else slice(None))
    return tuple(first), tuple(then)


def _index_ref(a: np.ndarray, index: Any) -> np.ndarray:
    items = index if isinstance(index, tuple) else (index,)
    if any(isinstance(i, dict) for i in items):
        raise Invalid
    try:
        np_index = tuple(
            np.asarray(i, dtype=np.int64 if not i else None) if isinstance(i, list) else i
            for i in items
        )
        if any(isinstance(i, np.ndarray) and i.dtype.kind == "f" for i in np_index):
            raise Invalid
        if isinstance(index, tuple):
            first, then = _torch_reading(np_index)
            out = np.asarray(a[first][then])
        else:
            out = np.asarray(a[np_index[0]])
    except (IndexError, ValueError, TypeError):
        raise Invalid from None
    if any(isinstance(i, slice) and i.step is not None and i.step < 0 for i in items):
        raise Either(out.copy())  # PyTorch refuses negative steps; tensorgrad gives NumPy's
    if any(isinstance(i, list) and not i for i in items):
        raise Either(out.copy())  # an empty list: PyTorch reads it as an int64 index too
    return out.copy()


def _as_tensor_index(part: Any) -> Any:
    """A mask or an integer list as a tensor (an empty list as an int64 one)."""
    if isinstance(part, np.ndarray):
        return tg.tensor(part)
    if isinstance(part, list) and all(type(i) is int for i in part):
        return tg.tensor(part, dtype=tg.int64)
    return part


def _index(data: Any) -> None:
    a = data.draw(arrays(), label="x")
    index = data.draw(indices(a.shape), label="index")
    name = "index"
    tg_index = index
    if data.draw(st.booleans(), label="tensor indices"):
        tg_index = (
            tuple(_as_tensor_index(i) for i in index)
            if isinstance(index, tuple)
            else _as_tensor_index(index)
        )
    result = outcome(lambda: leaf(a)[tg_index], lambda: _index_ref(a, index), name)
    if result is not None and a.dtype.kind == "f":
        check_grads(lambda x: x[tg_index], [a], True, name)


test_indexing, test_indexing_slow = fuzz(_index)


# --------------------------------------------------------------------------- creation
def _creation_ref(name: str, args: tuple, kwargs: dict) -> np.ndarray:
    dtype = kwargs.get("dtype")
    if name in ("zeros", "ones", "full"):
        size = args[0]
        if not isinstance(size, tuple) or any(type(n) is not int or n < 0 for n in size):
            raise Invalid
        if kwargs.get("star") and not size:
            raise Invalid  # zeros() with no size at all is PyTorch's TypeError
        if name == "full":
            fill = args[1]
            if isinstance(fill, str) or fill is None:
                raise Invalid
            inferred = promote(fill) if dtype is None else np.dtype(dtype)
            return np.full(size, fill, dtype=inferred)
        return (np.zeros if name == "zeros" else np.ones)(size, dtype or np.float32)
    if name == "arange":
        start, end, step = args
        if any(not isinstance(v, (int, float)) or isinstance(v, bool) for v in args):
            raise Invalid
        if step == 0 or (end - start) * step < 0:
            raise Invalid
        inferred = np.dtype(dtype) if dtype else promote(start, end, step)
        n = max(math.ceil((end - start) / step), 0)
        out = (start + step * np.arange(n, dtype=np.float64)).astype(inferred)
        if inferred.kind != "f" and promote(start, end, step).kind == "f":
            raise Either()  # PyTorch (and NumPy) cast start and step first: 0.5 steps of 0
        return out
    if name == "linspace":
        start, end, steps = args
        if type(steps) is not int or steps < 0:
            raise Invalid
        return np.linspace(start, end, steps).astype(dtype or np.float32)
    if name == "eye":
        n, m = args
        if type(n) is not int or n < 0 or (m is not None and (type(m) is not int or m < 0)):
            raise Invalid
        return np.eye(n, m, dtype=dtype or np.float32)
    if name == "tensor":
        (value,) = args
        try:
            array = np.array(value)
        except ValueError:
            raise Invalid from None
        if array.dtype == object or array.dtype.kind not in "bif":
            raise Invalid
        inferred = {"b": np.bool_, "i": np.int64, "f": np.float32}[array.dtype.kind]
        return np.array(value, dtype=dtype or inferred)
    raise AssertionError(name)


nested = st.recursive(
    st.one_of(st.integers(-3, 3), st.floats(-2, 2, width=32), st.booleans()),
    lambda inner: st.lists(inner, max_size=3),
    max_leaves=8,
)


def _creation(data: Any) -> None:
    name = data.draw(st.sampled_from(["zeros", "ones", "full", "arange", "linspace", "eye",
                                      "tensor"]), label="op")  # fmt: skip
    dtype = data.draw(st.sampled_from([None, "float64", "int32", "bool"]), label="dtype")
    size = st.lists(st.integers(-1, 3), max_size=3).map(tuple)
    if name in ("zeros", "ones"):
        args: tuple = (data.draw(size),)
        star = data.draw(st.booleans())

        def call() -> Any:
            make = getattr(tg, name)
            return make(*args[0], dtype=dtype) if star else make(args[0], dtype=dtype)

    elif name == "full":
        fill = data.draw(st.one_of(st.integers(-3, 3), st.floats(-2, 2), st.booleans(),
                                   st.just("x")))  # fmt: skip
        args = (data.draw(size), fill)
        call = lambda: tg.full(args[0], args[1], dtype=dtype)  # noqa: E731
    elif name == "arange":
        number = st.one_of(st.integers(-4, 4), st.sampled_from([0.5, -1.5, 2.25]))
        args = (data.draw(number), data.draw(number), data.draw(number))
        dtype = None if dtype == "bool" else dtype
        call = lambda: tg.arange(*args, dtype=dtype)  # noqa: E731
    elif name == "linspace":
        args = (data.draw(st.integers(-3, 3)), data.draw(st.floats(-3, 3)),
                data.draw(st.integers(-1, 6)))  # fmt: skip
        dtype = None if dtype in ("bool", "int32") else dtype
        call = lambda: tg.linspace(*args, dtype=dtype)  # noqa: E731
    elif name == "eye":
        args = (data.draw(st.integers(-1, 3)), data.draw(st.one_of(st.none(), st.integers(-1, 3))))
        call = lambda: tg.eye(*args, dtype=dtype)  # noqa: E731
    else:
        args = (data.draw(nested),)
        call = lambda: tg.tensor(args[0], dtype=dtype)  # noqa: E731
    star = name in ("zeros", "ones") and star
    outcome(call, lambda: _creation_ref(name, args, {"dtype": dtype, "star": star}), name)


test_creation, test_creation_slow = fuzz(_creation)


def test_where_of_two_numbers_promotes_as_pytorch() -> None:
    """Found by the fuzz: ``tg.where(cond, 0.0, 0)`` was float64 (NumPy's where of two
    Python numbers); PyTorch's promotion gives the default float dtype."""
    cond = tg.tensor([True, False])
    assert tg.where(cond, 0.0, 0).dtype == np.float32
    assert tg.where(cond, 1, 2).dtype == np.int64 and tg.where(cond, 1, 2).tolist() == [1, 2]
    assert tg.where(cond, True, 2.5).tolist() == [1.0, 2.5]


def test_arange_refuses_a_step_of_the_wrong_sign() -> None:
    """Found by the fuzz: ``arange(0, 1, -1)`` gave an empty tensor; PyTorch raises."""
    with pytest.raises(RuntimeError, match="arange"):
        tg.arange(0, 1, -1)
    with pytest.raises(RuntimeError, match="arange"):
        tg.arange(-2.0, step=0.5)
    assert tg.arange(1, 1, -1).shape == (0,) and tg.arange(3, 0, -1).tolist() == [3, 2, 1]


# --------------------------------------------------------------------------- wrong types
BAD_VALUES = ["abc", b"x", object(), [1, [2, 3]], {"a": 1}, 1 + 2j, None]
#: entry points, each called with one bad value in one argument; the None-takers take None
WRONG_TYPE_CALLS: dict[str, tuple[Callable[[Any], Any], bool]] = {
    "exp": (tg.exp, False),
    "log": (tg.log, False),
    "sqrt": (tg.sqrt, False),
    "tanh": (tg.tanh, False),
    "sigmoid": (tg.sigmoid, False),
    "relu": (tg.relu, False),
    "abs": (tg.abs, False),
    "neg": (tg.neg, False),
    "sum": (tg.sum, False),
    "mean": (tg.mean, False),
    "amax": (tg.amax, False),
    "softmax": (lambda v: F.softmax(v, 0), False),
    "reshape": (lambda v: tg.reshape(v, (1,)), False),
    "transpose": (lambda v: tg.transpose(v, 0, 0), False),
    "cat": (lambda v: tg.cat([tg.ones(1), v]), False),
    "stack": (lambda v: tg.stack([v]), False),
    "where": (lambda v: tg.where(v, 1, 2), False),
    "clamp": (lambda v: tg.clamp(v, 0, 1), False),
    "tensor": (tg.tensor, False),
    "zeros": (tg.zeros, False),
    "full": (lambda v: tg.full((2,), v), False),
    "arange": (tg.arange, False),
    "linspace": (lambda v: tg.linspace(0, 1, v), False),
    "eye": (tg.eye, False),
    "add": (lambda v: tg.ones(2) + v, False),
    "mul": (lambda v: v * tg.ones(2), False),
    "matmul": (lambda v: tg.ones(2) @ v, False),
    "pow": (lambda v: tg.ones(2) ** v, False),
    "lt": (lambda v: tg.ones(2) < v, False),
    "getitem": (lambda v: tg.ones(2)[v], True),
    "expand": (lambda v: tg.ones(2).expand(v), False),
    "repeat": (lambda v: tg.ones(2).repeat(v), False),
    "narrow": (lambda v: tg.ones(2).narrow(0, v, 1), False),
    "chunk": (lambda v: tg.ones(2).chunk(v), False),
    "split": (lambda v: tg.ones(2).split(v), False),
    "unsqueeze": (lambda v: tg.ones(2).unsqueeze(v), False),
    "permute": (lambda v: tg.ones(2).permute(v), False),
    "view": (lambda v: tg.ones(2).view(v), False),
    "flatten": (lambda v: tg.ones(2).flatten(v), False),
    "sum_dim": (lambda v: tg.ones(2).sum(v), True),
    "max_dim": (lambda v: tg.ones(2).max(v), True),
    "argmax_dim": (lambda v: tg.ones(2).argmax(v), True),
    "squeeze_dim": (lambda v: tg.ones(2).squeeze(v), True),
    "std_dim": (lambda v: tg.ones(2).std(v), True),
    "softmax_dim": (lambda v: F.softmax(tg.ones(2), v), True),
}


@pytest.mark.parametrize("name", sorted(WRONG_TYPE_CALLS))
def test_wrong_types_are_refused(name: str) -> None:
    """Strings, bytes, objects, ragged lists, dicts, complex numbers (and None, where it
    is no default) give one of the documented errors, never a tensor of objects. Found
    this way: ``tg.stack([None])`` made an object tensor; ``tg.arange(None)`` an empty one."""
    call, takes_none = WRONG_TYPE_CALLS[name]
    for value in BAD_VALUES:
        if value is None and takes_none:
            continue
        try:
            result = call(value)
        except BaseException as exc:
            check_error(exc, name)
        else:
            raise AssertionError(f"{name}({value!r}) gave {result!r}")
