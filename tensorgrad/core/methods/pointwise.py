"""The Tensor's pointwise math, with PyTorch's names and semantics: exponentials and logs,
roots, trigonometric and hyperbolic functions and their inverses, special functions (erf,
lgamma, polygamma, ...), activations (relu, gelu, softmax), clamping and rounding, and their
in-place forms.

Integer and bool inputs are computed in the default float dtype, as PyTorch does: the ops'
own declaration (``dtypes = "float"``, ``core/dtype_policy.py``) where a method binds one op,
``common._floating_input`` where it composes several; rounding is piecewise constant, so its
gradient is 0."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tensorgrad import array_backend, ops
from tensorgrad.core import engine, functions
from tensorgrad.core.args import numpy_names
from tensorgrad.core.engine import apply, apply_inplace
from tensorgrad.core.methods.common import (
    _copy_back,
    _floating_input,
    _raw,
    floating_kernel,
    no_bool_kernel,
    write_back,
)


class PointwiseMethods:
    """Pointwise math, rounding, clamping and softmax (mixed into Tensor)."""

    __slots__ = ()

    def exp(self) -> Any:
        return apply(ops.Exp(), self)

    def log(self) -> Any:
        return apply(ops.Log(), self)

    def log1p(self) -> Any:
        return apply(ops.Log1p(), self)

    def expm1(self) -> Any:
        return apply(ops.Expm1(), self)

    def log2(self) -> Any:
        return self.log() * (1 / math.log(2))

    def log10(self) -> Any:
        return self.log() * (1 / math.log(10))

    def sqrt(self) -> Any:
        return apply(ops.Sqrt(), self)

    def rsqrt(self) -> Any:
        return 1 / self.sqrt()

    def abs(self) -> Any:
        return apply(ops.Abs(), self)

    absolute = abs

    def neg(self) -> Any:
        return apply(ops.Neg(), self)

    negative = neg

    def sin(self) -> Any:
        return apply(ops.Sin(), self)

    def cos(self) -> Any:
        return apply(ops.Cos(), self)

    def tan(self) -> Any:
        return self.sin() / self.cos()

    def tanh(self) -> Any:
        return apply(ops.Tanh(), self)

    def sigmoid(self) -> Any:
        return apply(ops.Sigmoid(), _floating_input(self))

    def relu(self) -> Any:
        return apply(ops.Relu(), self)

    def leaky_relu(self, negative_slope: float = 0.01) -> Any:
        return apply(ops.LeakyRelu(negative_slope), floating_kernel("leaky_relu", self))

    def gelu(self, approximate: str = "none") -> Any:
        return apply(ops.Gelu(approximate), floating_kernel("gelu", self))

    def square(self) -> Any:
        return self * self if self.dtype != np.bool_ else self.long() * self.long()

    def reciprocal(self) -> Any:
        return 1 / self

    @numpy_names
    def softmax(self, dim: int = -1, dtype: Any = None) -> Any:
        x = self if dtype is None else self.to(dtype)
        if _valid_dim(dim, x.ndim):  # PyTorch checks dim first (the op words that error)
            floating_kernel("softmax", x)
        return apply(ops.Softmax(dim), x)

    @numpy_names
    def log_softmax(self, dim: int = -1, dtype: Any = None) -> Any:
        x = self if dtype is None else self.to(dtype)
        if _valid_dim(dim, x.ndim):
            floating_kernel("log_softmax", x)
        return apply(ops.LogSoftmax(dim), x)

    def clamp(self, min: Any = None, max: Any = None) -> Any:
        """Clamp into ``[min, max]``; bounds are numbers or tensors (broadcast). The gradient
        passes where ``min <= x <= max``; a tensor bound gets it where it is the result."""
        low, high = _bound(min), _bound(max)
        if low is None and high is None:
            raise ValueError("clamp: at least one of min and max must be given")
        bounds = [_raw(b) for b in (low, high) if b is not None]
        dtype = array_backend.result_type(self._data, *bounds)  # PyTorch's: int with 2.5 is float32
        if dtype != self.dtype or any(getattr(b, "dtype", dtype) != dtype for b in bounds):
            x, low, high = (engine._cast(v, dtype) for v in (self, low, high))
            return apply(ops.Clip(), x, low, high)
        return apply(ops.Clip(), self, low, high)

    clip = clamp

    def clamp_min(self, min: Any) -> Any:
        return self.clamp(min=min)

    def clamp_max(self, max: Any) -> Any:
        return self.clamp(max=max)

    def pow(self, exponent: Any) -> Any:
        return self**exponent

    # piecewise constant: the result requires grad, and the gradient is 0 (PyTorch's)
    def sign(self) -> Any:
        return apply(ops.Rounding("sign", _sign), self)

    def floor(self) -> Any:
        return apply(
            ops.Rounding("floor", _integers_unchanged(np.floor)), no_bool_kernel("floor", self)
        )

    def ceil(self) -> Any:
        return apply(
            ops.Rounding("ceil", _integers_unchanged(np.ceil)), no_bool_kernel("ceil", self)
        )

    def round(self, decimals: int = 0) -> Any:
        if decimals and self.dtype.kind != "f":  # PyTorch rounds integers to digits only whole
            raise NotImplementedError(f'"round" with decimals not implemented for {self.dtype}')

        def round_half_even(x: np.ndarray) -> np.ndarray:
            return x.copy() if x.dtype.kind in "biu" and decimals >= 0 else np.round(x, decimals)

        return apply(ops.Rounding("round", round_half_even), no_bool_kernel("round", self))

    def trunc(self) -> Any:
        return apply(
            ops.Rounding("trunc", _integers_unchanged(np.trunc)), no_bool_kernel("trunc", self)
        )

    def asin(self) -> Any:
        return apply(ops.Asin(), self)

    def acos(self) -> Any:
        return apply(ops.Acos(), self)

    def atan(self) -> Any:
        return apply(ops.Atan(), self)

    def sinh(self) -> Any:
        return apply(ops.Sinh(), self)

    def cosh(self) -> Any:
        return apply(ops.Cosh(), self)

    def asinh(self) -> Any:
        return apply(ops.Asinh(), self)

    def acosh(self) -> Any:
        return apply(ops.Acosh(), self)

    def atanh(self) -> Any:
        return apply(ops.Atanh(), self)

    arcsin, arccos, arctan = asin, acos, atan
    arcsinh, arccosh, arctanh = asinh, acosh, atanh

    def erf(self) -> Any:
        return apply(ops.Erf(), self)

    def erfc(self) -> Any:
        return apply(ops.Erfc(), self)

    def erfinv(self) -> Any:
        return apply(ops.Erfinv(), _floating_input(self))

    def lgamma(self) -> Any:
        return apply(ops.Lgamma(), _floating_input(self))

    def digamma(self) -> Any:
        return apply(ops.Polygamma(0), self)

    def polygamma(self, n: int) -> Any:
        """The n-th derivative of digamma (``x.polygamma(n)``, ``tg.polygamma(n, x)``)."""
        if int(n) < 0:
            raise RuntimeError(f"polygamma(n, x) does not support negative n, got {n}")
        return apply(ops.Polygamma(int(n)), self)

    def i0(self) -> Any:
        return apply(ops.I0(), self)

    def sinc(self) -> Any:
        """The normalized sinc ``sin(πx)/(πx)``, 1 at 0."""
        return apply(ops.Sinc(), self)

    def exp2(self) -> Any:
        return 2.0 ** _floating_input(self)

    def logit(self, eps: float | None = None) -> Any:
        """``log(p / (1 − p))``, with p clamped into ``[eps, 1 − eps]`` when ``eps`` is given.
        Composed as ``2 log √p − 2 log √(1 − p)``: its slope ``1/p + 1/(1 − p)`` is PyTorch's,
        inf at 0 and 1 (the quotient's chain rule gives ∞ · 0 there: NaN), and NaN outside
        [0, 1] as PyTorch's (the slope of √ of a negative number); with ``eps``, 0 outside."""
        p = _floating_input(self)
        if eps is not None:
            p = p.clamp(eps, 1 - eps)
        return (p.sqrt().log() - (1 - p).sqrt().log()) * 2

    def deg2rad(self) -> Any:
        return _floating_input(self) * (math.pi / 180)

    def rad2deg(self) -> Any:
        return _floating_input(self) * (180 / math.pi)

    def frac(self) -> Any:
        """``x − trunc(x)``: the gradient passes unchanged, as in PyTorch."""
        floating_kernel("frac", self)
        return self - self.trunc()

    def fix(self) -> Any:
        if self.dtype == np.bool_:
            raise NotImplementedError("\"trunc_cpu\" not implemented for 'Bool'")
        return self.trunc()

    def sgn(self) -> Any:
        return self.clone() if self.dtype == np.bool_ else self.sign()

    @engine.reads_values
    def nan_to_num(
        self, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None
    ):
        """NaN, +inf and −inf replaced (by 0 and the dtype's largest and smallest finite
        values by default); the gradient passes where the input is finite."""
        if self.dtype.kind != "f":
            return self.clone()
        info = np.finfo(self.dtype)
        data = self._data
        finite = np.isfinite(data)
        high = info.max if posinf is None else posinf
        low = info.min if neginf is None else neginf
        fill = np.where(np.isnan(data), nan, np.where(data > 0, high, low)).astype(self.dtype)
        return functions.where(finite, self, fill)

    # in-place forms of the one-op functions above
    def asin_(self) -> Any:
        return apply_inplace(ops.Asin(), self)

    def acos_(self) -> Any:
        return apply_inplace(ops.Acos(), self)

    def atan_(self) -> Any:
        return apply_inplace(ops.Atan(), self)

    def sinh_(self) -> Any:
        return apply_inplace(ops.Sinh(), self)

    def cosh_(self) -> Any:
        return apply_inplace(ops.Cosh(), self)

    def asinh_(self) -> Any:
        return apply_inplace(ops.Asinh(), self)

    def acosh_(self) -> Any:
        return apply_inplace(ops.Acosh(), self)

    def atanh_(self) -> Any:
        return apply_inplace(ops.Atanh(), self)

    def erf_(self) -> Any:
        return apply_inplace(ops.Erf(), self)

    def erfc_(self) -> Any:
        return apply_inplace(ops.Erfc(), self)

    def erfinv_(self) -> Any:
        return apply_inplace(ops.Erfinv(), self)

    def lgamma_(self) -> Any:
        return apply_inplace(ops.Lgamma(), self)

    def digamma_(self) -> Any:
        return apply_inplace(ops.Polygamma(0), self)

    def i0_(self) -> Any:
        return apply_inplace(ops.I0(), self)

    def sinc_(self) -> Any:
        return apply_inplace(ops.Sinc(), self)

    arcsin_, arccos_, arctan_ = asin_, acos_, atan_
    arcsinh_, arccosh_, arctanh_ = asinh_, acosh_, atanh_

    def nan_to_num_(
        self, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None
    ):
        return write_back(self, "nan_to_num_", lambda x: x.nan_to_num(nan, posinf, neginf))

    def logit_(self, eps: float | None = None) -> Any:
        return write_back(self, "logit_", lambda x: x.logit(eps))

    def frac_(self) -> Any:
        return write_back(self, "frac_", lambda x: x.frac())

    exp2_, deg2rad_, rad2deg_ = _copy_back("exp2"), _copy_back("deg2rad"), _copy_back("rad2deg")
    fix_, sgn_ = _copy_back("fix"), _copy_back("sgn")


def _integers_unchanged(function: Any) -> Any:
    """``function`` (floor, ceil, trunc) for floats; integers are already whole (NumPy would
    return them as float64)."""

    def rounded(x: np.ndarray) -> np.ndarray:
        return x.copy() if x.dtype.kind in "biu" else function(x)

    rounded.__name__ = function.__name__
    return rounded


def _sign(x: np.ndarray) -> np.ndarray:
    """PyTorch's sign: 0 for NaN, a bool tensor unchanged (NumPy has no bool loop)."""
    if x.dtype == np.bool_:
        return x.copy()
    out = np.sign(x)
    return np.where(np.isnan(out), 0, out) if out.dtype.kind == "f" else out


def _bound(value: Any) -> Any:
    """A clamp bound: None, a tensor, or a number (kept as a weak Python scalar)."""
    if value is None or isinstance(value, engine.Tensor):
        return value
    if isinstance(value, np.ndarray):
        return value
    return array_backend.scalar_operand(value)


def _valid_dim(dim: Any, ndim: int) -> bool:
    return isinstance(dim, int) and -max(ndim, 1) <= dim < max(ndim, 1)
