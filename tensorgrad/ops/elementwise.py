"""Elementwise ops. Binary ops broadcast, so their VJPs sum back with ``sum_to``."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tensorgrad.array_backend import ShapeError, cast
from tensorgrad.ops import object_arrays
from tensorgrad.ops.base import Op, add_tangents, constant, shape_of, sum_to


class Add(Op):
    batching = "elementwise"
    uses_inputs = False

    def forward(self, x, y):
        return x + y

    def forward_inplace(self, target, y):
        np.add(target, y, out=target)

    def backward(self, grad, out, x, y):
        nx, ny = self.needs_input_grad
        return (
            sum_to(grad, shape_of(x)) if nx else None,
            sum_to(grad, shape_of(y)) if ny else None,
        )

    def jvp(self, tangents, out, x, y):
        tx, ty = tangents
        return add_tangents(tx, ty)


def _is_bool(value: Any) -> bool:
    return value is True or value is False or getattr(value, "dtype", None) == np.bool_


def _refuse_bools(name: str, *operands: Any) -> None:
    """PyTorch refuses ``-`` on bools (NumPy would compute True - uint8 1 as 255), with its
    messages: two bool operands, one, or negation."""
    bools = sum(map(_is_bool, operands))
    if not bools:
        return
    if len(operands) == 1:
        what = "Negation, the `-` operator, on a bool tensor is not supported."
    elif bools == 2:
        what = "Subtraction, the `-` operator, with two bool tensors is not supported."
    else:
        what = "Subtraction, the `-` operator, with a bool tensor is not supported."
    hint = (
        "Use the `^` or `logical_xor()` operator instead."
        if bools == 2
        else "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead."
    )
    raise RuntimeError(f"{name}: {what} {hint}")


class Sub(Op):
    batching = "elementwise"
    uses_inputs = False
    #: for callers that convert the operands first (dtype promotion, ``alpha``), which would
    #: hide a bool from ``forward``
    refuse_bools = staticmethod(_refuse_bools)

    def forward(self, x, y):
        _refuse_bools("sub", x, y)
        return x - y

    def forward_inplace(self, target, y):
        _refuse_bools("sub_", target, y)
        np.subtract(target, y, out=target)

    def backward(self, grad, out, x, y):
        nx, ny = self.needs_input_grad
        return (
            sum_to(grad, shape_of(x)) if nx else None,
            sum_to(-grad, shape_of(y)) if ny else None,
        )

    def jvp(self, tangents, out, x, y):
        tx, ty = tangents
        return add_tangents(tx, None if ty is None else -ty)


class Mul(Op):
    batching = "elementwise"

    def forward(self, x, y):
        return x * y

    def reads_input(self, i, needs):
        return needs[1 - i]  # each factor only for the other's gradient: d(xy)/dx = y

    def forward_inplace(self, target, y):
        np.multiply(target, y, out=target)

    def backward(self, grad, out, x, y):
        nx, ny = self.needs_input_grad
        return (
            sum_to(grad * y, shape_of(x)) if nx else None,
            sum_to(grad * x, shape_of(y)) if ny else None,
        )

    def jvp(self, tangents, out, x, y):
        tx, ty = tangents
        return add_tangents(None if tx is None else tx * y, None if ty is None else x * ty)


def _divides_quietly(y: Any) -> bool:
    """Whether dividing by ``y`` cannot raise a floating-point flag: a Python number with
    1 ≤ |y| < inf (no division by zero, no overflow, no inf / inf). ``x / 2.0`` is common
    enough to skip the ``np.errstate`` that other divisors need."""
    return type(y) in (float, int) and 1 <= abs(y) < math.inf


class Div(Op):
    """``x / y``. A zero divisor gives ±inf or NaN, as IEEE division (and PyTorch) does,
    without NumPy's RuntimeWarning; so do the gradients there."""

    batching = "elementwise"

    def forward(self, x, y):
        if _divides_quietly(y):
            return x / y
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return x / y

    def reads_input(self, i, needs):
        return needs[1] if i == 0 else True  # x only for y's gradient; y always

    def forward_inplace(self, target, y):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            np.true_divide(target, y, out=target)

    def backward(self, grad, out, x, y):
        nx, ny = self.needs_input_grad
        if _divides_quietly(y):  # a constant divisor: x's gradient only
            return (sum_to(grad / y, shape_of(x)) if nx else None), None
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return (
                sum_to(grad / y, shape_of(x)) if nx else None,
                # PyTorch's grouping: x / y / y neither overflows nor underflows where
                # x / (y * y) would (1e30 squared in float32: inf, 1e-45 squared: 0)
                sum_to(-grad * (x / y / y), shape_of(y)) if ny else None,
            )

    def jvp(self, tangents, out, x, y):
        tx, ty = tangents
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return add_tangents(
                None if tx is None else tx / y, None if ty is None else -ty * out / y
            )


class Rounding(Op):
    """A piecewise-constant function of ``x`` (floor, ceil, round, trunc, sign, a rounded
    division): its gradient is 0 wherever it is defined, which is how PyTorch takes it
    (the result requires grad, and backward through it gives zeros)."""

    batching = "elementwise"

    uses_inputs = False

    def __init__(self, name: str, function: Any):
        self.name, self.function = name, function

    def forward(self, *inputs):
        return self.function(*inputs)

    def scalar_forward(self, *inputs):  # constants: the scalar engine sees no slope either
        return self.function(*(object_arrays.values_of(x) for x in inputs))

    def jvp(self, tangents, out, *inputs):
        return None  # a zero tangent

    def backward(self, grad, out, *inputs):
        return tuple(
            np.zeros(shape_of(x), grad.dtype) if needed else None
            for x, needed in zip(inputs, self.needs_input_grad, strict=True)
        )


class Neg(Op):
    batching = "elementwise"
    uses_inputs = False

    def forward(self, x):
        _refuse_bools("neg", x)
        return -x

    def backward(self, grad, out, x):
        return (-grad,)

    def jvp(self, tangents, out, x):
        return -tangents[0]


def _log_of_base(x: Any, y: Any) -> Any:
    """``log x`` as the exponent's slope of ``x ** y`` uses it: where x = 0, 0 for y ≥ 0
    (PyTorch's convention: no slope there) and −inf for y < 0 (x^y is inf there: the slope
    x^y·log x is −inf, PyTorch's too); NaN where x < 0. Picked with np.where, so nothing
    warns of 0·log 0."""
    positive = x > 0
    at_zero = np.where(constant(y) >= 0, 0.0, -np.inf)
    return np.where(positive, np.log(np.where(positive, x, 1.0)), np.where(x == 0, at_zero, np.nan))


def _power(x: Any, y: Any) -> Any:
    """``x ** y``, with small whole exponents of float arrays as products: NumPy's ``power``
    calls ``pow`` per element for them (``x ** 3.0`` takes some 100 times ``x * x * x``; GELU's
    tanh form has one)."""
    if type(x) is np.ndarray and x.dtype.kind == "f" and type(y) in (int, float):
        if y == 2:
            return x * x
        if y == 3:
            return x * x * x
        if y == 4:
            square = x * x
            return square * square
    return x**y


class Pow(Op):
    """``x ** y``. With a constant exponent only the base gets a gradient.

    Conventions (PyTorch's): an exponent of 0 gives the base a zero gradient (even at x = 0,
    where ``y·x^(y−1)`` would be 0·∞); the gradient with respect to the exponent is 0 where
    x = 0 and y ≥ 0, −inf where x = 0 and y < 0, and NaN where x < 0.
    """

    batching = "elementwise"

    uses_output = True

    def reads_output(self, needs):
        return needs[1]  # only the exponent's gradient, x**y · log x, reads it

    def forward(self, x, y):
        x_dtype, y_dtype = np.result_type(x), np.result_type(y)
        if type(y) is int and y < 0 and x_dtype.kind in "biu":  # NumPy checks only elements
            raise ShapeError("pow: Integers to negative integer powers are not allowed.")
        if x_dtype == np.bool_ and y_dtype == np.bool_:  # NumPy has no bool loop: x or not y
            if isinstance(y, np.ndarray):  # PyTorch: a bool tensor exponent has no kernel
                raise NotImplementedError('pow: "pow" not implemented for bool tensors')
            return np.logical_or(x, np.logical_not(y))
        if x_dtype.kind in "iu" and y_dtype.kind in "iu" and np.any(np.asarray(y) < 0):
            # an integer tensor exponent may be negative (PyTorch's): 1 and -1 keep a
            # magnitude of 1, every other base gives 0 (NumPy refuses)
            magnitude = x ** np.abs(y)
            odd = np.asarray(y) % 2 == 1
            small = np.where(x == 1, 1, np.where(x == -1, np.where(odd, -1, 1), 0))
            return np.where(np.asarray(y) < 0, small, magnitude).astype(magnitude.dtype)
        # 0 ** -1 is inf, (-1) ** 0.5 NaN, 10 ** 100 in float32 inf: PyTorch warns of none
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return _power(x, y)

    def scalar_forward(self, x, y):
        if object_arrays.holds_values(y):  # no value ** value: exp(y log x), for x > 0
            return np.exp(y * np.log(x))
        return self.forward(x, y)

    def backward(self, grad, out, x, y):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # as forward
            return self._vjp(grad, out, x, y)

    def _vjp(self, grad, out, x, y):
        nx, ny = self.needs_input_grad
        dx = dy = None
        if nx:
            if isinstance(y, (int, float)):
                dx = grad * 0.0 if y == 0 else grad * (y * _power(x, y - 1))
            else:
                zero = y == 0  # x ** 0 is 1 everywhere: no slope (and no 0 ** -1 to compute)
                base = np.where(zero, 1.0, x)
                dx = sum_to(np.where(zero, 0.0, grad * (y * base ** (y - 1))), shape_of(x))
        if ny:
            # grad 0 times −inf (0 ** -1): NaN, as in PyTorch
            dy = sum_to(grad * (out * _log_of_base(x, y)), shape_of(y))
        return dx, dy

    def jvp(self, tangents, out, x, y):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # as forward
            return self._jvp(tangents, out, x, y)

    def _jvp(self, tangents, out, x, y):
        tx, ty = tangents
        dx = dy = None
        if tx is not None:  # the VJP's slopes, times the tangent instead of the gradient
            if isinstance(y, (int, float)):
                dx = tx * 0.0 if y == 0 else tx * (y * x ** (y - 1))
            else:
                zero = y == 0
                dx = np.where(zero, 0.0, tx * (y * np.where(zero, 1.0, x) ** (y - 1)))
        if ty is not None:
            dy = ty * (out * _log_of_base(x, y))
        return add_tangents(dx, dy)


class Exp(Op):
    """``e ** x``: inf beyond the dtype's range (exp(89) in float32), silently as PyTorch's;
    a zero gradient times that inf is NaN, silently too."""

    dtypes = "float"
    batching = "elementwise"
    uses_inputs = False
    uses_output = True

    def forward(self, x):
        with np.errstate(over="ignore"):
            return np.exp(x)

    def backward(self, grad, out, x):
        with np.errstate(invalid="ignore"):
            return (grad * out,)

    def jvp(self, tangents, out, x):
        with np.errstate(invalid="ignore"):
            return tangents[0] * out


class Log(Op):
    """The natural logarithm: −inf at 0 and NaN below, with the slope 1/x (inf at 0, and
    beyond the dtype's range for subnormal x), all without NumPy's RuntimeWarning, as
    PyTorch's."""

    dtypes = "float"
    batching = "elementwise"

    def forward(self, x):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log(x)

    def backward(self, grad, out, x):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return (grad / x,)

    def jvp(self, tangents, out, x):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return tangents[0] / x


class Log1p(Op):
    """``log(1 + x)``, accurate for small x; −inf at −1 and NaN below, silently (as Log)."""

    dtypes = "float"
    batching = "elementwise"

    def forward(self, x):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log1p(x)

    def scalar_forward(self, x):
        return np.log(1 + x)

    def backward(self, grad, out, x):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return (grad / (1 + x),)

    def jvp(self, tangents, out, x):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return tangents[0] / (1 + x)


class Expm1(Op):
    """``exp(x) − 1``, accurate for small x; inf beyond the dtype's range, silently (as Exp)."""

    dtypes = "float"
    batching = "elementwise"

    uses_inputs = False
    uses_output = True

    def forward(self, x):
        with np.errstate(over="ignore"):
            return np.expm1(x)

    def scalar_forward(self, x):
        return np.exp(x) - 1

    def backward(self, grad, out, x):
        with np.errstate(invalid="ignore"):
            return (grad * (out + 1),)

    def jvp(self, tangents, out, x):
        with np.errstate(invalid="ignore"):
            return tangents[0] * (out + 1)


class Sqrt(Op):
    """The square root: NaN below 0, and the slope 1/(2√x) inf at 0, silently (PyTorch's)."""

    dtypes = "float"
    batching = "elementwise"
    uses_inputs = False
    uses_output = True

    def forward(self, x):
        with np.errstate(invalid="ignore"):
            return np.sqrt(x)

    def backward(self, grad, out, x):
        with np.errstate(divide="ignore", invalid="ignore"):
            return (grad / (out * 2),)

    def jvp(self, tangents, out, x):
        with np.errstate(divide="ignore", invalid="ignore"):
            return tangents[0] / (out * 2)


class Abs(Op):
    """``|x|``; its derivative at 0 is taken as 0 (the subgradient PyTorch uses), and at NaN
    too (PyTorch's sign of NaN)."""

    dtypes = "no_bool"
    batching = "elementwise"

    def forward(self, x):
        return np.abs(x)

    def backward(self, grad, out, x):
        slope = np.sign(x)
        if slope.dtype.kind == "f" and type(slope) is np.ndarray:
            np.nan_to_num(slope, copy=False, nan=0.0)
        return (grad * slope,)

    def jvp(self, tangents, out, x):
        return tangents[0] * np.sign(x)


class Sin(Op):
    dtypes = "float"
    batching = "elementwise"

    def forward(self, x):
        return np.sin(x)

    def backward(self, grad, out, x):
        return (grad * np.cos(x),)

    def jvp(self, tangents, out, x):
        return tangents[0] * np.cos(x)


class Cos(Op):
    dtypes = "float"
    batching = "elementwise"

    def forward(self, x):
        return np.cos(x)

    def backward(self, grad, out, x):
        return (-grad * np.sin(x),)

    def jvp(self, tangents, out, x):
        return -tangents[0] * np.sin(x)


class Tanh(Op):
    dtypes = "float"
    batching = "elementwise"
    uses_inputs = False
    uses_output = True

    def forward(self, x):
        return np.tanh(x)

    def backward(self, grad, out, x):
        return (grad * (1 - out * out),)

    def jvp(self, tangents, out, x):
        return tangents[0] * (1 - out * out)


class Clip(Op):
    """Clamp ``x`` into ``[low, high]``; either bound may be None, a number or a tensor.

    PyTorch's gradients: ``x`` gets it where ``low <= x <= high`` (boundaries included),
    ``low`` where ``x < low``, ``high`` where ``x > high`` (neither where a NaN is). With
    both bounds, as PyTorch: ``low`` only where also ``low < high``, and ``high`` wherever
    ``high < low`` too (every output is then ``high``).
    """

    batching = "elementwise"

    def forward(self, x, low=None, high=None):
        if low is None and high is None:
            raise ValueError("clamp: at least one of min and max must be given")
        if low is None:
            return np.minimum(x, high)
        if high is None:
            return np.maximum(x, low)
        return np.minimum(np.maximum(x, low), high)

    def backward(self, grad, out, x, low=None, high=None):
        nx, nlow, nhigh = self.needs_input_grad
        above = None if low is None else x >= low
        below = None if high is None else x <= high
        inside = below if above is None else (above if below is None else above & below)
        dlow = dhigh = None
        if nlow:  # x < low, not "not x >= low": a NaN on either side sends the bound nothing
            to_low = x < low
            dlow = sum_to(grad * (to_low if high is None else to_low & (low < high)), shape_of(low))
        if nhigh:
            to_high = x > high
            to_high = to_high if low is None else to_high | (high < low)
            dhigh = sum_to(grad * to_high, shape_of(high))
        return (
            sum_to(grad * inside, shape_of(x)) if nx else None,  # tensor bounds may broadcast x
            dlow,
            dhigh,
        )

    def jvp(self, tangents, out, x, low=None, high=None):
        tx, tlow, thigh = (*tangents, None, None)[:3]
        above = None if low is None else x >= low
        below = None if high is None else x <= high
        inside = below if above is None else (above if below is None else above & below)
        terms = [None if tx is None else tx * inside]
        if tlow is not None:
            to_low = x < low
            terms.append(tlow * (to_low if high is None else to_low & (low < high)))
        if thigh is not None:
            to_high = x > high
            terms.append(thigh * (to_high if low is None else to_high | (high < low)))
        return add_tangents(*terms)


class Copysign(Op):
    """``|x|`` with the sign bit of ``y`` (−0.0 counts as negative). Its slope in ``x`` is
    ``sign(x)`` times ``y``'s sign (0 at x = 0, ±1 at infinities); ``y`` gets a zero
    gradient, as PyTorch gives it."""

    batching = "elementwise"

    def forward(self, x, y):
        return np.copysign(x, y)

    def scalar_forward(self, x, y):  # x times a constant sign: the values' own product
        sign_x = np.sign(object_arrays.values_of(x))
        return x * (sign_x * np.where(np.signbit(object_arrays.values_of(y)), -1.0, 1.0))

    def _slope(self, x, y):
        return np.sign(constant(x)) * np.where(np.signbit(constant(y)), -1.0, 1.0)

    def backward(self, grad, out, x, y):
        nx, ny = self.needs_input_grad
        dx = sum_to(grad * self._slope(x, y).astype(out.dtype), shape_of(x)) if nx else None
        dy = np.zeros(shape_of(y), dtype=out.dtype) if ny else None
        return dx, dy

    def jvp(self, tangents, out, x, y):
        tx = tangents[0]
        return None if tx is None else tx * self._slope(x, y).astype(out.dtype)


class NextAfter(Op):
    """The next representable float after ``x`` towards ``y``. PyTorch's gradients: ``x``'s
    passes unchanged where ``x != y`` (the step is below any rounding: locally the identity;
    at ``x == y`` the value is ``y``'s), ``y`` gets zero."""

    batching = "elementwise"

    def forward(self, x, y):
        return np.nextafter(x, y)

    def scalar_forward(self, x, y):  # x·[x ≠ y] plus a constant: the value, with that slope
        vx, vy = object_arrays.values_of(x), object_arrays.values_of(y)
        moves = (vx != vy).astype(np.float64)
        return x * moves + (np.nextafter(vx, vy) - vx * moves)

    def backward(self, grad, out, x, y):
        nx, ny = self.needs_input_grad
        dx = sum_to(np.where(constant(x) != constant(y), grad, 0), shape_of(x)) if nx else None
        dy = np.zeros(shape_of(y), dtype=out.dtype) if ny else None
        return dx, dy

    def jvp(self, tangents, out, x, y):
        tx = tangents[0]
        return None if tx is None else tx * (constant(x) != constant(y)).astype(out.dtype)


class Lerp(Op):
    """``start + weight · (end − start)``, by PyTorch's two formulas (``end − (end − start) ·
    (1 − weight)`` where ``|weight| ≥ 1/2``, exact at weight 1); its slopes are PyTorch's,
    ``1 − weight``, ``weight`` and ``end − start``, without the ``inf · 0`` a composition of
    the two formulas meets at an infinite weight."""

    batching = "elementwise"

    def forward(self, start, end, weight):
        diff = end - start
        small = np.abs(weight) < 0.5
        return np.where(small, start + weight * diff, end - diff * (1 - weight))

    def backward(self, grad, out, start, end, weight):
        ns, ne, nw = self.needs_input_grad
        return (
            sum_to(grad * (1 - weight), shape_of(start)) if ns else None,
            sum_to(grad * weight, shape_of(end)) if ne else None,
            sum_to(grad * (end - start), shape_of(weight)) if nw else None,
        )

    def jvp(self, tangents, out, start, end, weight):
        ts, te, tw = tangents
        return add_tangents(
            None if ts is None else ts * (1 - weight),
            None if te is None else te * weight,
            None if tw is None else tw * (end - start),
        )


def _tie_weights(x: Any, y: Any, grad: Any) -> Any:
    """1 where x wins, 0 where y wins, 1/2 on ties: tied inputs split the gradient evenly."""
    return ((x > y) + (x == y) * 0.5).astype(grad.dtype)


def _tie_jvp(tangents: Any, w: Any) -> Any:
    """``ṫx · w + ṫy · (1 − w)``: the tangent of a maximum or minimum whose winners ``w``
    (1, 0, or 1/2 on ties) the VJP uses too."""
    tx, ty = tangents
    return add_tangents(None if tx is None else tx * w, None if ty is None else ty * (1 - w))


class Maximum(Op):
    """Elementwise maximum; on ties each input gets half the gradient."""

    batching = "elementwise"

    def forward(self, x, y):
        return np.maximum(x, y)

    def backward(self, grad, out, x, y):
        nx, ny = self.needs_input_grad
        w = _tie_weights(x, y, grad)
        return (
            sum_to(grad * w, shape_of(x)) if nx else None,
            sum_to(grad * (1 - w), shape_of(y)) if ny else None,
        )

    def jvp(self, tangents, out, x, y):
        return _tie_jvp(tangents, _tie_weights(x, y, out))


class Minimum(Op):
    """Elementwise minimum; on ties each input gets half the gradient."""

    batching = "elementwise"

    def forward(self, x, y):
        return np.minimum(x, y)

    def backward(self, grad, out, x, y):
        nx, ny = self.needs_input_grad
        w = _tie_weights(y, x, grad)
        return (
            sum_to(grad * w, shape_of(x)) if nx else None,
            sum_to(grad * (1 - w), shape_of(y)) if ny else None,
        )

    def jvp(self, tangents, out, x, y):
        return _tie_jvp(tangents, _tie_weights(y, x, out))


class Where(Op):
    """``cond ? x : y``. ``cond`` is a constant; x and y broadcast against it."""

    batching = "elementwise"

    def forward(self, cond, x, y):
        return np.where(cond, x, y)

    def backward(self, grad, out, cond, x, y):
        _, nx, ny = self.needs_input_grad
        return (
            None,
            sum_to(np.where(cond, grad, 0), shape_of(x)) if nx else None,
            sum_to(np.where(cond, 0, grad), shape_of(y)) if ny else None,
        )

    def jvp(self, tangents, out, cond, x, y):
        _, tx, ty = tangents
        return np.where(cond, 0 if tx is None else tx, 0 if ty is None else ty)


class Clone(Op):
    """A copy of ``x`` (PyTorch's ``clone``): new memory, the same values, gradient passes.

    ``order="K"`` keeps the input's memory layout (PyTorch's ``preserve_format``);
    ``order="C"`` lays the copy out row-major, which ``contiguous()`` needs."""

    name = "clone"
    batching = "elementwise"
    uses_inputs = False

    def __init__(self, order: str = "K"):
        self.order = order

    def forward(self, x):
        return np.array(x, copy=True, order=self.order)

    def backward(self, grad, out, x):
        return (grad,)

    def jvp(self, tangents, out, x):
        return tangents[0]


class Cast(Op):
    """Change the dtype; the gradient is cast back to the input's dtype. NaN and ±inf to an
    integer, or a float beyond a narrower float's range, convert silently, as PyTorch's
    (``array_backend.cast``)."""

    batching = "elementwise"

    uses_inputs = False

    def __init__(self, dtype: Any):
        self.dtype = np.dtype(dtype)

    def forward(self, x):
        return cast(x, self.dtype)

    def scalar_forward(self, x):
        return x  # a cast changes precision, not values: the identity

    def backward(self, grad, out, x):
        return (cast(grad, x.dtype),)

    def jvp(self, tangents, out, x):
        return cast(tangents[0], self.dtype)
