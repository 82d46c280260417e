"""The error function and the standard normal CDF: ``ops.Erf``, and the float32 rational
approximations that GELU and erf use instead of SciPy's scalar loop (docs/performance.md)."""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

from tensorgrad.ops import object_arrays
from tensorgrad.ops.base import Op

#: float32 erf from a rational function in float64, not SciPy's scalar loop: SciPy's was 40 % of
#: a small GPT's step (its GELU); off with ``TENSORGRAD_SCIPY_ERF=1`` (docs/performance.md)
FAST_ERF = not os.environ.get("TENSORGRAD_SCIPY_ERF")

#: ``erf(z) ≈ z · P(z²) / Q(z²)`` for |z| ≤ 3.92 (beyond, erf is ±1 in float32): numerator and
#: denominator coefficients, lowest degree first, fitted for relative error on [0, 3.92]
#: (weighted least squares, reweighted towards minimax; relative error 1.9e-8 in float64)
_ERF_P = (
    1.1283791461386552, 0.1904065574165393, 0.05274868075827126,
    0.0037656084022857595, 0.00028488044268699594, 2.0500581309479404e-06,
)  # fmt: skip
_ERF_Q = (
    1.0, 0.5020761589026206, 0.11410910077111183,
    0.014969197844980912, 0.0011625297142827578, 3.8091295108462486e-05,
)  # fmt: skip
_ERF_CLAMP = 3.92


def erf_float32(x: np.ndarray) -> np.ndarray:
    """erf of a float32 array, as a new float32 array: the rational function above evaluated
    in float64 by whole-array passes (Horner's rule), then rounded once. Within 0.82 ulp of
    the exact erf (86 % of values correctly rounded; tested in tests/ops/test_erf.py)."""
    z = np.clip(x, -_ERF_CLAMP, _ERF_CLAMP, out=np.empty(np.shape(x), np.float64))  # NaN stays
    t = z * z
    num = t * _ERF_P[-1]
    num += _ERF_P[-2]
    for c in _ERF_P[-3::-1]:
        num *= t
        num += c
    den = t * _ERF_Q[-1]
    den += _ERF_Q[-2]
    for c in _ERF_Q[-3::-1]:
        den *= t
        den += c
    num *= z
    out = np.empty(np.shape(x), np.float32)
    np.divide(num, den, out=out, casting="same_kind")
    return out


#: GELU's Φ(x) of float32 evaluated in float32, not through the float64 passes of
#: :func:`erf_float32`: twice as fast, and GELU's forward was a small GPT's largest cost after
#: the matrix products (docs/performance.md); False: Φ = (1 + erf(x/√2))/2 with that erf
FLOAT32_CDF = FAST_ERF


def _cdf_coefficients() -> tuple[list[np.float32], list[np.float32], np.float32]:
    """Φ(x) − ½ = x · P(s)/Q(s) with s = x²: erf's rational function above with z = x/√2,
    its ½/√2 folded into P and Q made monic (one multiplication fewer), in float32; and the
    s beyond which the evaluated odd part is past ½ (erf's fit ends at z = 3.92; by z = 4.1
    the rational function overshoots 1 by 6e-7, more than float32 rounding takes away)."""
    powers = 2.0 ** -np.arange(len(_ERF_P))
    p = np.array(_ERF_P) * powers / (2 * math.sqrt(2))
    q = np.array(_ERF_Q) * powers
    p, q = p / q[-1], q / q[-1]
    return [np.float32(c) for c in p], [np.float32(c) for c in q], np.float32(2 * 4.1**2)


_CDF_P, _CDF_Q, _CDF_SATURATION = _cdf_coefficients()
#: the same, as the arrays a fused kernel takes (tensorgrad/_jit: GELU's forward)
CDF_COEFFICIENTS = (np.array(_CDF_P), np.array(_CDF_Q), float(_CDF_SATURATION))


def normal_cdf_float32(x: np.ndarray) -> np.ndarray:
    """The standard normal CDF Φ(x) of a float32 array, as a new float32 array, from erf's
    rational function in s = x², evaluated in float32 (Horner's rule): within 3.7 ulp for x ≥ 0,
    4.9 ulp for x ≥ −1 and 2.2e-7 absolute everywhere, so GELU, x·Φ(x), within 3.8 and 5.0 ulp
    (PyTorch 2.13's GELU kernel: 7.9 and 9.4); exactly 0 and 1 once |x| ≥ 5.8, so that
    GELU(−1e30) is 0, not −1e30 times a rounding error."""
    with np.errstate(over="ignore", invalid="ignore"):  # |x| > 1.8e19 squares to inf: Φ is 0 or 1
        s = np.multiply(x, x, out=np.empty(np.shape(x), np.float32))  # (arrays, also 0-d)
        np.minimum(s, _CDF_SATURATION, out=s)  # (NaN stays NaN)
        num = np.multiply(s, _CDF_P[-1], out=np.empty_like(s))
        num += _CDF_P[-2]
        for c in _CDF_P[-3::-1]:
            num *= s
            num += c
        den = np.add(s, _CDF_Q[-2], out=np.empty_like(s))
        for c in _CDF_Q[-3::-1]:
            den *= s
            den += c
        num *= x
        num /= den
    np.clip(num, -0.5, 0.5, out=num)
    num += np.float32(0.5)
    return num


class Erf(Op):
    """The error function: SciPy's (imported on first use: SciPy comes with scikit-learn),
    or for float32 :func:`erf_float32` (:data:`FAST_ERF`)."""

    dtypes = "float"
    batching = "elementwise"

    def forward(self, x):
        if FAST_ERF and type(x) is np.ndarray and x.dtype == np.float32:
            return erf_float32(x)
        from scipy.special import erf

        if getattr(x, "dtype", None) == np.float16:  # SciPy computes it in float32 or 64
            return erf(x).astype(np.float16)
        return erf(x)

    def scalar_forward(self, x):
        return object_arrays.elementwise(erf_of_value, x)

    def backward(self, grad, out, x):
        with np.errstate(over="ignore"):  # x² overflows for |x| > 1.8e19 in float32: slope 0
            return (grad * (2 / math.sqrt(math.pi)) * np.exp(-(x * x)),)

    def jvp(self, tangents, out, x):
        with np.errstate(over="ignore"):
            return tangents[0] * (2 / math.sqrt(math.pi)) * np.exp(-(x * x))


def erf_of_value(x: Any) -> Any:
    """erf of one scalar value from its operations: the Maclaurin series for |x| <= 2, the
    continued fraction of erfc beyond (both accurate to about 1e-15). Numbers go to
    ``math.erf``."""
    if isinstance(x, (int, float, np.number)):
        return math.erf(x)
    if abs(x.data) <= 2.0:
        x2, term, total = x * x, x, x
        for n in range(1, 200):
            term = term * x2 * (-1.0 / n)
            total = total + term * (1.0 / (2 * n + 1))
            if abs(term.data) < 1e-17:
                break
        return total * (2 / math.sqrt(math.pi))
    sign = 1.0 if x.data > 0 else -1.0
    a = abs(x)
    t = a
    for k in range(80, 0, -1):
        t = a + (k / 2) / t
    erfc = (-(a * a)).exp() * (1 / math.sqrt(math.pi)) / t
    return (1 - erfc) * sign
