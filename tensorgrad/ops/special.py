"""Special functions: erfc, erfinv, lgamma, digamma and polygamma, the Bessel functions i0
and i1, and the normalized sinc. The forwards are SciPy's (imported on first use; SciPy
comes with scikit-learn), the slopes go through ``call`` so second derivatives work."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tensorgrad.ops import object_arrays
from tensorgrad.ops.base import Op, call
from tensorgrad.ops.erf import erf_of_value
from tensorgrad.ops.trig import first_order

_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)


def _scipy_special():
    """SciPy's special functions, returning the input's float dtype: SciPy computes float16
    in float32 or float64, PyTorch's result is float16."""
    import scipy.special

    return _InputDtype(scipy.special)


class _InputDtype:
    """A module's functions, each casting its array result to its array argument's dtype."""

    def __init__(self, module: Any):
        self.module = module

    def __getattr__(self, name: str) -> Any:
        function = getattr(self.module, name)

        def keeping_dtype(*args: Any) -> Any:
            out = function(*args)
            dtype = next((a.dtype for a in args if getattr(a, "dtype", None) is not None), None)
            if dtype is not None and dtype.kind == "f" and getattr(out, "dtype", dtype) != dtype:
                return out.astype(dtype)  # (a 0-d input gives a NumPy scalar)
            return out

        return keeping_dtype


class Erfc(Op):
    """``1 − erf(x)``, accurate where erf is close to 1."""

    dtypes = "float"
    batching = "elementwise"

    def forward(self, x):
        return _scipy_special().erfc(x)

    def backward(self, grad, out, x):
        with np.errstate(over="ignore"):  # x² overflows for |x| > 1.8e19 in float32: slope 0
            return (grad * -_TWO_OVER_SQRT_PI * np.exp(-(x * x)),)

    def scalar_forward(self, x):
        return 1 - object_arrays.elementwise(erf_of_value, x)

    def jvp(self, tangents, out, x):
        with np.errstate(over="ignore"):
            return tangents[0] * -_TWO_OVER_SQRT_PI * np.exp(-(x * x))


class Erfinv(Op):
    """The inverse of erf on (−1, 1); its slope is ``√π/2 · exp(erfinv(x)²)``."""

    batching = "elementwise"

    uses_inputs = False
    uses_output = True

    def forward(self, x):
        return _scipy_special().erfinv(x)

    def backward(self, grad, out, x):
        return (grad * (math.sqrt(math.pi) / 2) * np.exp(out * out),)

    def scalar_forward(self, x):
        erfinv = _scipy_special().erfinv
        return first_order(
            lambda v: float(erfinv(v)),
            lambda v: math.sqrt(math.pi) / 2 * math.exp(float(erfinv(v)) ** 2),
        )(x)

    def jvp(self, tangents, out, x):
        return tangents[0] * (math.sqrt(math.pi) / 2) * np.exp(out * out)


class Lgamma(Op):
    """``log |Γ(x)|``; its slope is digamma. At −inf it is +inf (|Γ| grows without bound
    there; SciPy's gammaln says −inf, PyTorch inf)."""

    batching = "elementwise"

    def forward(self, x):
        out = _scipy_special().gammaln(x)
        return np.where(x == -np.inf, np.inf, out).astype(out.dtype) if out.size else out

    def backward(self, grad, out, x):
        return (grad * call(Polygamma, x, n=0),)

    def scalar_forward(self, x):
        digamma = _scipy_special().digamma
        return first_order(math.lgamma, lambda v: float(digamma(v)))(x)

    def jvp(self, tangents, out, x):
        return tangents[0] * call(Polygamma, x, n=0)


class Polygamma(Op):
    """The n-th derivative of digamma (n = 0: digamma itself); its slope is polygamma n + 1."""

    dtypes = "float"
    batching = "elementwise"

    def __init__(self, n: int = 0):
        self.n = int(n)

    def forward(self, x):
        special = _scipy_special()
        if self.n == 0:
            return special.digamma(x)
        with np.errstate(over="ignore"):  # SciPy's float64, beyond float32's range near a pole
            return special.polygamma(self.n, x).astype(x.dtype, copy=False)

    def backward(self, grad, out, x):
        return (grad * call(Polygamma, x, n=self.n + 1),)

    def scalar_forward(self, x):
        polygamma, n = _scipy_special().polygamma, self.n
        return first_order(lambda v: float(polygamma(n, v)), lambda v: float(polygamma(n + 1, v)))(
            x
        )

    def jvp(self, tangents, out, x):
        with np.errstate(over="ignore", invalid="ignore"):  # (float32 tangents, as forward)
            return tangents[0] * call(Polygamma, x, n=self.n + 1)


class I0(Op):
    """The modified Bessel function of the first kind of order 0; its slope is i1."""

    dtypes = "float"
    batching = "elementwise"

    def forward(self, x):
        return _scipy_special().i0(x)

    def backward(self, grad, out, x):
        return (grad * call(I1, x),)

    def scalar_forward(self, x):
        return object_arrays.elementwise(lambda v: _bessel_series(v, 0), x)

    def jvp(self, tangents, out, x):
        return tangents[0] * call(I1, x)


class I1(Op):
    """The modified Bessel function of order 1 (i0's slope); its own slope is
    ``i0(x) − i1(x)/x``, 1/2 at 0."""

    batching = "elementwise"

    uses_output = True

    def forward(self, x):
        return _scipy_special().i1(x)

    def backward(self, grad, out, x):
        zero = x == 0
        ratio = np.where(zero, 0.5, out / np.where(zero, 1.0, x))
        with np.errstate(invalid="ignore"):  # i0 − i1/x where both overflowed: NaN, as PyTorch
            return (grad * (call(I0, x) - ratio),)

    def scalar_forward(self, x):
        return object_arrays.elementwise(lambda v: _bessel_series(v, 1), x)

    def jvp(self, tangents, out, x):
        zero = x == 0
        ratio = np.where(zero, 0.5, out / np.where(zero, 1.0, x))
        with np.errstate(invalid="ignore"):
            return tangents[0] * (call(I0, x) - ratio)


class Sinc(Op):
    """The normalized sinc, ``sin(πx)/(πx)``, and 1 at 0 (PyTorch's and NumPy's); its slope
    is ``(cos(πx) − sinc(x))/x``, 0 at 0."""

    dtypes = "float"
    batching = "elementwise"

    uses_output = True

    def forward(self, x):
        return np.sinc(x)

    def backward(self, grad, out, x):
        zero = x == 0
        safe = np.where(zero, 1.0, x)
        return (grad * np.where(zero, 0.0, (np.cos(x * math.pi) - out) / safe),)

    def scalar_forward(self, x):
        return np.sin(x * math.pi) / (x * math.pi)  # the samples keep away from 0

    def jvp(self, tangents, out, x):
        zero = x == 0
        safe = np.where(zero, 1.0, x)
        return tangents[0] * np.where(zero, 0.0, (np.cos(x * math.pi) - out) / safe)


def _bessel_series(x: Any, order: int) -> Any:
    """i0 (order 0) or i1 (order 1) of one scalar value by its power series, from the
    values' arithmetic: Σ (x/2)^(2k+order) / (k! (k+order)!)."""
    if isinstance(x, (int, float, np.number)):
        return float(_scipy_special().i0(x) if order == 0 else _scipy_special().i1(x))
    quarter = x * x * 0.25
    term = x * 0.5 if order else x * 0.0 + 1.0
    total = term
    for k in range(1, 80):
        term = term * quarter * (1.0 / (k * (k + order)))
        total = total + term
        if abs(term.data) < 1e-18 * max(abs(total.data), 1e-300):
            break
    return total
