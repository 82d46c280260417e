"""The Tensor's arithmetic by name (``add`` with ``alpha``, ``div`` with ``rounding_mode``,
``remainder``, ``fmod``) and the other two-operand math (``atan2``, ``hypot``, ``xlogy``,
``logaddexp``, ``lerp``, ...), with PyTorch's dtype promotion and its errors; ``remainder``
and ``rounded_division`` are also what the Tensor's ``%`` and ``//`` call."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from tensorgrad import array_backend, ops
from tensorgrad.core import engine, functions
from tensorgrad.core.engine import apply, apply_inplace, binary, wrap
from tensorgrad.core.methods.common import (
    _copy_back,
    _raw,
    _tensor_argument,
    floating_kernel,
    no_bool_kernel,
    write_back,
)


def _broadcasting(name: str) -> Any:
    """A two-operand method whose operands must broadcast: shapes that do not are
    PyTorch's RuntimeError (a ShapeError, naming the op), not NumPy's ValueError from deep
    inside the composition."""

    def decorate(method: Any) -> Any:
        @functools.wraps(method)
        def checked(self: Any, other: Any) -> Any:
            operand = engine.operand(other)  # (a Tensor's own shape: inside vmap, a sample's)
            other_shape = (
                tuple(operand.shape) if isinstance(operand, engine.Tensor) else np.shape(operand)
            )
            try:
                np.broadcast_shapes(self.shape, other_shape)
            except ValueError:
                shapes = " ".join(
                    "(" + ",".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"
                    for shape in (tuple(self.shape), tuple(other_shape))
                )  # NumPy's spelling, as the ops' broadcast errors
                raise array_backend.ShapeError(
                    f"{name}: operands could not be broadcast together with shapes {shapes}"
                ) from None
            return method(self, other)

        return checked

    return decorate


class ArithmeticMethods:
    """Arithmetic by name and the other two-operand math (mixed into Tensor)."""

    __slots__ = ()

    def maximum(self, other: Any) -> Any:
        return binary(ops.Maximum, self, _tensor_argument("maximum", other))

    def minimum(self, other: Any) -> Any:
        return binary(ops.Minimum, self, _tensor_argument("minimum", other))

    def add(self, other: Any, alpha: float = 1) -> Any:
        alpha = _check_alpha("add", self, other, alpha)
        if alpha is True or alpha == 1:
            return self + other
        out = self + other * alpha  # in PyTorch's dtype for self + other: bool * 2 is int64
        dtype = array_backend.result_type(self._data, _raw(engine.operand(other)))
        return out if out.dtype == dtype else out.to(dtype)

    def sub(self, other: Any, alpha: float = 1) -> Any:
        if alpha != 1:  # other * alpha would make a bool a number that Sub no longer refuses
            ops.Sub.refuse_bools("sub", self, other)
        _check_alpha("sub", self, other, alpha)
        return self - (other if alpha == 1 else other * alpha)

    subtract = sub

    def mul(self, other: Any) -> Any:
        return self * other

    multiply = mul

    def div(self, other: Any, rounding_mode: str | None = None) -> Any:
        if rounding_mode is None:
            return self / other
        if rounding_mode not in ("trunc", "floor"):
            raise ValueError(
                f"div: rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}"
            )
        return rounded_division(self, other, rounding_mode)

    divide = true_divide = div

    @_broadcasting("atan2")
    def atan2(self, other: Any) -> Any:
        """The angle of (other, self): ``atan2(self, other)``, broadcasting, in float."""
        return _float_binary(ops.Atan2, self, other)

    arctan2 = atan2

    def remainder(self, other: Any) -> Any:
        """Python's ``%``: the remainder with the divisor's sign; x's gradient is 1, the
        divisor's ``−floor(x / y)``."""
        return remainder(ops.Remainder, self, other)

    def fmod(self, other: Any) -> Any:
        """C's ``fmod``: the remainder with the dividend's sign; the divisor's gradient is
        ``−trunc(x / y)``."""
        return remainder(ops.Fmod, self, other)

    def floor_divide(self, other: Any) -> Any:
        return self.div(other, rounding_mode="floor")

    @_broadcasting("copysign")
    def copysign(self, other: Any) -> Any:
        """``|self|`` with the sign of ``other`` (its sign bit: −0.0 counts as negative)."""
        return _float_binary(ops.Copysign, self, other)

    @_broadcasting("hypot")
    def hypot(self, other: Any) -> Any:
        """``sqrt(self² + other²)``, without overflow on the way (1e30 stays finite)."""
        floating_kernel("hypot", self, other)
        return _float_binary(ops.Hypot, self, other)

    @_broadcasting("logaddexp")
    def logaddexp(self, other: Any) -> Any:
        """``log(exp(x) + exp(y))``, without overflow on the way."""
        floating_kernel("logaddexp", self, other)
        return _float_binary(ops.LogAddExp, self, other)

    @_broadcasting("logaddexp2")
    def logaddexp2(self, other: Any) -> Any:
        """``log2(2^x + 2^y)``, without overflow on the way."""
        floating_kernel("logaddexp2", self, other)
        return _float_binary(ops.LogAddExp2, self, other)

    @_broadcasting("xlogy")
    @engine.reads_values
    def xlogy(self, other: Any) -> Any:
        """``x · log(y)``, and 0 where x is 0 (unless y is NaN). PyTorch's gradients: x's is
        ``log(y)`` (0 where x is 0 and y ≤ 0), y's ``x / y``."""
        x, y = _float_operands(self, other)
        ax, ay = np.broadcast_arrays(_raw(x), _raw(y))
        cut = (ax == 0) & (ay <= 0)  # log would be -inf or NaN: the product is taken as 0
        log_y = functions.where(cut, 0.0, functions.where(cut, 1.0, y).log())
        out = x * log_y.to(x.dtype)
        overflow = (ax == 0) & (ay == np.inf)  # 0 · inf: 0, as PyTorch
        return functions.where(overflow, 0.0, out).to(x.dtype) if overflow.any() else out

    @_broadcasting("heaviside")
    @engine.reads_values
    def heaviside(self, values: Any) -> Any:
        """0 where x < 0, ``values`` where x == 0, 1 where x > 0 (no gradient, as PyTorch)."""
        other = engine.as_tensor(values)
        if other.dtype != self.dtype:
            raise RuntimeError(
                f"heaviside is not yet implemented for tensors with different dtypes: "
                f"{self.dtype} and {other.dtype}"
            )
        data = self._data  # PyTorch's rule: ``values`` at 0, else ``x > 0`` (0 for NaN)
        return wrap(np.where(data == 0, other._data, data > 0).astype(self.dtype))

    @_broadcasting("nextafter")
    @engine.reads_values
    def nextafter(self, other: Any) -> Any:
        """The next representable float after x towards ``other``; the gradient passes to x
        unchanged where x != other, as PyTorch's."""
        other = engine.as_tensor(other)
        floating_kernel("nextafter", self, other)
        x, y = _same_dtype_operands(self, other)
        return apply(ops.NextAfter(), x, y)

    def float_power(self, exponent: Any) -> Any:
        """``self ** exponent`` in float64 (PyTorch's ``float_power``)."""
        base = self.double()
        if isinstance(exponent, engine.Tensor):
            exponent = exponent.double()
        return base**exponent

    @_broadcasting("fmax")
    @engine.reads_values
    def fmax(self, other: Any) -> Any:
        """The elementwise maximum ignoring NaN; on ties the gradient goes to ``self``."""
        x, y = _same_dtype_operands(self, other)
        ax, ay = _raw(x), _raw(y)
        return functions.where((ax >= ay) | np.isnan(ay), x, y)

    @_broadcasting("fmin")
    @engine.reads_values
    def fmin(self, other: Any) -> Any:
        """The elementwise minimum ignoring NaN; on ties the gradient goes to ``self``."""
        x, y = _same_dtype_operands(self, other)
        ax, ay = _raw(x), _raw(y)
        return functions.where((ax <= ay) | np.isnan(ay), x, y)

    def lerp(self, end: Any, weight: Any) -> Any:
        """``self + weight · (end − self)``, by PyTorch's two formulas (exact at weight 1)."""
        if not isinstance(end, engine.Tensor):
            raise TypeError(f"lerp(): argument 'end' must be Tensor, not {type(end).__name__}")
        for what, other in (("end", end), ("weight", weight)):
            if isinstance(other, engine.Tensor) and other.dtype != self.dtype:
                raise RuntimeError(
                    f"lerp: expected dtype {self.dtype} for `{what}` but got dtype {other.dtype}"
                )
        floating_kernel("lerp_kernel_tensor", self)
        if not isinstance(weight, engine.Tensor):  # a number: a constant of self's dtype
            weight = np.asarray(weight, dtype=self.dtype)
        return apply(ops.Lerp(), self, end, weight)

    def atan2_(self, other: Any) -> Any:
        return apply_inplace(ops.Atan2(), self, engine.operand(other))

    def remainder_(self, other: Any) -> Any:
        _check_remainder(ops.Remainder, self, other)
        return apply_inplace(ops.Remainder(), self, engine.operand(other))

    def fmod_(self, other: Any) -> Any:
        _check_remainder(ops.Fmod, self, other)
        return apply_inplace(ops.Fmod(), self, engine.operand(other))

    arctan2_ = atan2_

    def lerp_(self, end: Any, weight: Any) -> Any:
        return write_back(self, "lerp_", lambda x: x.lerp(end, weight))

    floor_divide_ = _copy_back("floor_divide")
    copysign_, hypot_, xlogy_ = _copy_back("copysign"), _copy_back("hypot"), _copy_back("xlogy")
    heaviside_, nextafter_ = _copy_back("heaviside"), _copy_back("nextafter")

    def float_power_(self, exponent: Any) -> Any:
        if self.dtype != np.float64:
            raise RuntimeError(
                f"the base given to float_power_ has dtype {self.dtype} but the operation's "
                "result requires dtype float64"
            )
        return write_back(self, "float_power_", lambda x: x.float_power(exponent))


def check_integer_divisor(name: str, dtype: np.dtype, divisor: Any, dividend: Any = None) -> None:
    """PyTorch's error for an integer ``//`` or ``%`` by zero (NumPy gives 0 and a warning);
    none where the result has no element (PyTorch computes nothing)."""
    if dtype.kind == "f":
        return
    if dividend is not None:
        try:
            if 0 in np.broadcast_shapes(np.shape(dividend), np.shape(divisor)):
                return
        except ValueError:
            return  # the op itself reports the shapes
    if np.any(np.asarray(_raw(divisor)) == 0):
        raise RuntimeError(f"{name}: ZeroDivisionError (integer division by zero)")


def remainder(op_type: type[ops.Op], x: Any, y: Any) -> Any:
    """``x % y`` (``ops.Remainder``) or ``fmod`` (``ops.Fmod``) with PyTorch's promotion and
    its error for an integer divisor of 0; differentiable (1 with respect to ``x``)."""
    ax, ay = _raw(engine.operand(x)), _raw(engine.operand(y))
    if ax is NotImplemented or ay is NotImplemented:
        return NotImplemented
    _check_remainder(op_type, x, y)
    return binary(op_type, x, y)


def _check_remainder(op_type: type[ops.Op], x: Any, y: Any) -> None:
    """PyTorch's refusals for ``%`` and ``fmod``: bools (no kernel), an integer divisor 0."""
    ax, ay = _raw(engine.operand(x)), _raw(engine.operand(y))
    dtype = array_backend.result_type(ax, ay)
    no_bool_kernel(op_type.name, dtype)
    check_integer_divisor(op_type.name, dtype, ay, ax)


def rounded_division(x: Any, y: Any, rounding_mode: str) -> Any:
    """``x / y`` rounded down (``//``, ``div(rounding_mode="floor")``) or towards zero, in
    PyTorch's result dtype, exact for integers; its gradient is 0, as PyTorch's ``div``."""
    x, y = engine.operand(x), engine.operand(y)
    if x is NotImplemented or y is NotImplemented:
        return NotImplemented
    dtype = array_backend.result_type(_raw(x), _raw(y))
    no_bool_kernel(f"div_{rounding_mode}", dtype)
    check_integer_divisor("div", dtype, _raw(y), _raw(x))
    x, y = engine._cast(x, dtype), engine._cast(y, dtype)
    divide = _floor_divide if rounding_mode == "floor" else _trunc_divide
    return apply(ops.Rounding(f"div_{rounding_mode}", divide), x, y)


def _floor_divide(x: Any, y: Any) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):  # a float 0 divisor: ±inf or NaN
        return np.asarray(np.floor_divide(x, y))


def _trunc_divide(x: Any, y: Any) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        if np.result_type(x, y).kind == "f":
            return np.asarray(np.trunc(np.true_divide(x, y)))
        quotient = np.asarray(np.floor_divide(x, y))  # integers: exact, then towards zero
        inexact = (np.remainder(x, y) != 0) & ((np.asarray(x) < 0) != (np.asarray(y) < 0))
        return quotient + inexact.astype(quotient.dtype)


def _check_alpha(name: str, x: Any, other: Any, alpha: Any) -> Any:
    """``alpha`` by PyTorch's rules: a float alpha needs a floating result, and a bool result
    takes it as a bool (``add(True, True, alpha=2)`` is True, not 3)."""
    if type(alpha) is int and alpha == 1:  # (True is checked: a bool alpha needs a bool result)
        return alpha
    dtype = array_backend.result_type(_raw(x), _raw(engine.operand(other)))
    if isinstance(alpha, bool) and dtype != np.bool_:
        raise RuntimeError(f"{name}: Boolean alpha only supported for Boolean results, got {dtype}")
    if isinstance(alpha, float) and dtype.kind != "f":
        raise RuntimeError(
            f"{name}: for integral input tensors, argument alpha must not be a floating point "
            f"number, got {alpha}"
        )
    return bool(alpha) if dtype == np.bool_ else alpha


def _float_operands(x: Any, y: Any) -> tuple[Any, Any]:
    """Two operands in their PyTorch result type, or the default float where that is an
    integer type (the functions that always compute in float: atan2, hypot, ...)."""
    y = engine.operand(y)
    if y is NotImplemented:
        raise TypeError(f"expected a tensor or a number, got {type(y).__name__}")
    dtype = array_backend.result_type(x._data, _raw(y))
    if dtype.kind != "f":
        dtype = array_backend.DEFAULT_FLOAT
    x = engine._cast(x, dtype)
    y = engine._cast(y, dtype) if isinstance(y, (engine.Tensor, np.ndarray)) else y
    return x, (y if isinstance(y, engine.Tensor) else engine.as_tensor(np.asarray(y, dtype)))


def _float_binary(op_type: Any, x: Any, y: Any) -> Any:
    a, b = _float_operands(x, y)
    return apply(op_type(), a, b)


def _same_dtype_operands(x: Any, y: Any) -> tuple[Any, Any]:
    y = engine.operand(y)
    if y is NotImplemented:
        raise TypeError(f"expected a tensor or a number, got {type(y).__name__}")
    dtype = array_backend.result_type(x._data, _raw(y))
    x = engine._cast(x, dtype)
    y = engine._cast(y, dtype) if isinstance(y, (engine.Tensor, np.ndarray)) else y
    return x, (y if isinstance(y, engine.Tensor) else engine.as_tensor(np.asarray(y, dtype)))
