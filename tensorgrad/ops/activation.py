"""Activation functions: sigmoid, ReLU and its leaky and parametric forms, GELU, SiLU,
softplus, ELU, softmax and log-softmax."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tensorgrad import _jit
from tensorgrad.ops import erf
from tensorgrad.ops.base import (
    Op,
    add_tangents,
    call,
    constant,
    normalize_axis,
    reduction_axes,
    shape_of,
    sum_to,
)
from tensorgrad.ops.erf import Erf


class Sigmoid(Op):
    """The logistic function, computed without overflow: exp is only taken of -|x|."""

    batching = "elementwise"

    uses_inputs = False
    uses_output = True

    def forward(self, x):
        e = np.exp(-np.abs(x))
        return np.where(x >= 0, 1 / (1 + e), e / (1 + e))

    def backward(self, grad, out, x):
        return (grad * (out * (1 - out)),)

    def jvp(self, tangents, out, x):
        return tangents[0] * (out * (1 - out))


class Relu(Op):
    """``max(x, 0)``; its derivative at 0 is taken as 0, as in PyTorch, which also refuses
    bool inputs (NumPy would give int64). Its gradient is selected, as PyTorch's: an
    infinite or NaN gradient stays off x ≤ 0 (lp_pool's at a zero window relies on it)."""

    batching = "elementwise"

    def forward(self, x):
        if x.dtype == np.bool_:
            raise RuntimeError("relu: boolean inputs are not supported")
        return np.maximum(x, 0)

    def forward_inplace(self, target):
        np.maximum(target, 0, out=target)

    def backward(self, grad, out, x):
        keep = x > 0  # NaN gets 0 (docs/porting.md; PyTorch passes its gradient)
        if not isinstance(grad, np.ndarray):  # recording on Tensors (create_graph)
            return (grad * keep,)
        if self.grad_is_free:
            grad *= keep  # a multiply: NumPy's masked select is ~10× slower on a random mask
            dx = grad
        else:
            dx = np.asarray(grad * keep)
        if np.isnan(dx.sum()):  # inf · 0 where an infinite gradient met x <= 0: PyTorch's 0
            np.copyto(dx, 0, where=~keep)
        return (dx,)

    def jvp(self, tangents, out, x):
        return np.where(x > 0, tangents[0], 0)


class LeakyRelu(Op):
    name = "leaky_relu"
    batching = "elementwise"

    def __init__(self, negative_slope: float = 0.01):
        self.negative_slope = negative_slope

    def forward(self, x):
        return np.where(x > 0, x, x * self.negative_slope)

    def backward(self, grad, out, x):
        return (np.where(x > 0, grad, grad * self.negative_slope),)

    def jvp(self, tangents, out, x):
        return np.where(x > 0, tangents[0], tangents[0] * self.negative_slope)


class Prelu(Op):
    """PyTorch's ``prelu``: ``x`` where ``x > 0``, else ``weight · x`` (``weight`` broadcast
    against ``x``). One op rather than a ``where`` of a product, so that an infinite weight
    sends no ``inf · 0 = NaN`` into the gradient of the positive side."""

    name = "prelu"
    batching = "elementwise"

    def forward(self, x, weight):
        return np.where(x > 0, x, weight * x)

    def backward(self, grad, out, x, weight):
        needs_x, needs_weight = self.needs_input_grad
        positive = constant(x) > 0
        dx = np.where(positive, grad, grad * weight) if needs_x else None
        dw = sum_to(np.where(positive, 0, grad * x), shape_of(weight)) if needs_weight else None
        return dx, dw

    def jvp(self, tangents, out, x, weight):
        dx, dw = tangents
        negative_side = add_tangents(
            None if dx is None else dx * weight, None if dw is None else dw * x
        )
        if negative_side is None:
            return None
        return np.where(constant(x) > 0, 0 if dx is None else dx, negative_side)


class Hardswish(Op):
    """``x · relu6(x + 3) / 6``, with PyTorch's slope: 0 for ``x ≤ −3``, ``x/3 + 1/2`` below
    3, 1 from 3 on (and at NaN); one op, so ``x = ±inf`` meets no ``inf · 0``."""

    batching = "elementwise"

    def forward(self, x):
        return x * np.clip(x + 3, 0, 6) / 6

    def _slope(self, x):
        v = constant(x)
        return np.where(v <= -3, 0.0, np.where(v < 3, x / 3 + 0.5, 1.0))

    def backward(self, grad, out, x):
        return (grad * self._slope(x),)

    def jvp(self, tangents, out, x):
        return tangents[0] * self._slope(x)


_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
_INV_SQRT_2 = 1 / math.sqrt(2)
_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _normal_cdf(x: Any) -> Any:
    """``Φ(x) = (1 + erf(x / √2)) / 2``: of float32 arrays by :func:`normal_cdf_float32`
    (one function, fewer passes), else through the ``erf`` op (recorded on Tensors)."""
    if erf.FLOAT32_CDF and type(x) is np.ndarray and x.dtype == np.float32:
        return erf.normal_cdf_float32(x)
    return 0.5 * (1 + call(Erf, x * _INV_SQRT_2))


class Gelu(Op):
    """GELU, ``x * Φ(x)``: exact (``approximate="none"``, with erf) or the tanh approximation."""

    batching = "elementwise"

    def __init__(self, approximate: str = "none"):
        if approximate not in ("none", "tanh"):
            raise RuntimeError(
                f"gelu: approximate argument must be either none or tanh, got {approximate!r}"
            )
        self.approximate = approximate

    def forward(self, x):
        fused = _jit.ENABLED and type(x) is np.ndarray and self._fused_forward(x)
        if fused:  # the same formulas in one loop (tensorgrad/_jit)
            out, self.saved = fused[0], (x, fused[1])
            return out
        if self.approximate == "tanh":
            # x³ is beyond float32's range for |x| > 7e12 (the tanh is ±1 there), and GELU(-inf)
            # is -inf · 0, NaN: silently, as PyTorch's
            with np.errstate(over="ignore", invalid="ignore"):
                t = np.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * (x * x * x)))
                self.saved = (x, t)  # backward reuses the tanh on these very arrays
                return 0.5 * x * (1 + t)
        cdf = _normal_cdf(x)
        self.saved = (x, cdf)  # backward reuses Φ(x) on these very arrays: erf is the cost
        with np.errstate(invalid="ignore"):  # GELU(-inf) is -inf · 0, NaN, as PyTorch's
            return x * cdf

    def _fused_forward(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """``(GELU(x), what backward reuses)`` from a kernel of :mod:`tensorgrad._jit`, or
        None (then the NumPy code below runs)."""
        if self.approximate == "tanh":
            return _jit.run("gelu_tanh_forward", x) if x.dtype in _FLOATS else None
        if x.dtype == np.float32 and erf.FLOAT32_CDF:
            return _jit.run("gelu_erf_forward", x, *erf.CDF_COEFFICIENTS)
        return _jit.run("gelu_erf_forward_f64", x) if x.dtype == np.float64 else None

    def scalar_forward(self, x):
        if self.approximate == "tanh":
            return self.forward(x)
        return 0.5 * x * (1 + Erf().scalar_forward(x * _INV_SQRT_2))

    def backward(self, grad, out, x):
        # x² is beyond float32's range for |x| > 1.8e19: the slopes are PyTorch's there, 1 or 0
        # (erf) and NaN (tanh), silently
        with np.errstate(over="ignore", invalid="ignore"):
            return self._vjp(grad, x)

    def _vjp(self, grad, x):
        if self.approximate == "tanh":
            saved_x, t = self.saved if self.saved is not None else (None, None)
            if x is not saved_x:  # recording on Tensors (create_graph): differentiable again
                t = np.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * (x * x * x)))
            elif _jit.ENABLED and type(grad) is np.ndarray and x.dtype == grad.dtype:
                slope = _jit.run("gelu_tanh_backward", grad, x, t)  # the lines below, fused
                if slope is not None:
                    return (slope,)
            dt = _SQRT_2_OVER_PI * (1 + 3 * 0.044715 * x * x)
            return (grad * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * dt),)
        saved_x, cdf = self.saved if self.saved is not None else (None, None)
        if x is not saved_x:  # recording on Tensors (create_graph): differentiable again
            cdf = 0.5 * (1 + call(Erf, x * _INV_SQRT_2))
        if type(x) is not np.ndarray or type(grad) is not np.ndarray:
            pdf = np.exp(-0.5 * x * x) * _INV_SQRT_2PI
            return (grad * (cdf + x * pdf),)
        if _jit.ENABLED and x.dtype in _FLOATS and grad.dtype == x.dtype == cdf.dtype:
            fast = _jit.FAST_EXP and x.dtype == np.float32  # (its exp by the kernels' own)
            kernel = "gelu_erf_backward_fast" if fast else "gelu_erf_backward"
            slope = _jit.run(kernel, grad, x, cdf)  # the lines below, fused
            if slope is not None:
                return (slope,)
        slope = np.multiply(x, x, out=np.empty_like(x))  # Φ(x) + x·φ(x), in place
        slope *= -0.5
        np.exp(slope, out=slope)
        slope *= x
        slope *= _INV_SQRT_2PI
        slope += cdf
        slope *= grad
        return (slope,)

    def jvp(self, tangents, out, x):
        return self.backward(tangents[0], out, x)[0]  # a diagonal Jacobian: J·t = Jᵀ·t


class Silu(Op):
    """``x · σ(x)`` (swish); one op so that ``F.silu(x, inplace=True)`` can be recorded."""

    batching = "elementwise"

    def forward(self, x):
        return x * call(Sigmoid, x)

    def backward(self, grad, out, x):
        s = call(Sigmoid, x)
        return (grad * (s * (1 + x * (1 - s))),)

    def jvp(self, tangents, out, x):
        s = call(Sigmoid, x)
        return tangents[0] * (s * (1 + x * (1 - s)))


class Softplus(Op):
    """``log(1 + exp(βx)) / β``, and ``x`` itself where ``βx > threshold`` (PyTorch's switch to
    the linear part). exp is only taken of ``-|βx|``, so no branch overflows: composed from
    ``where``, the unused branch's ``exp`` would overflow and its gradient become NaN."""

    batching = "elementwise"

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        self.beta, self.threshold = beta, threshold

    def forward(self, x):
        z = x * self.beta
        soft = (np.maximum(z, 0) + np.log1p(np.exp(-np.abs(z)))) / self.beta
        return np.where(z > self.threshold, x, soft)

    def scalar_forward(self, x):
        z = x * self.beta
        return np.where(z > self.threshold, x, np.log(1 + np.exp(z)) / self.beta)

    def backward(self, grad, out, x):
        z = x * self.beta
        return (grad * np.where(z > self.threshold, 1.0, call(Sigmoid, z)),)

    def jvp(self, tangents, out, x):
        return self.backward(tangents[0], out, x)[0]  # a diagonal Jacobian: J·t = Jᵀ·t


class Elu(Op):
    """``x`` for ``x > 0``, else ``α(exp(x) − 1)``; its slope at 0 is α, as in PyTorch. exp is
    taken of ``min(x, 0)`` only, so large inputs do not overflow in the unused branch."""

    name = "elu"
    batching = "elementwise"

    def __init__(self, alpha: float = 1.0):
        self.alpha = alpha

    def forward(self, x):
        return np.where(x > 0, x, self.alpha * np.expm1(np.minimum(x, 0)))

    def scalar_forward(self, x):
        return np.where(x > 0, x, self.alpha * (np.exp(x) - 1))

    def backward(self, grad, out, x):
        return (grad * self._slope(x),)

    def jvp(self, tangents, out, x):
        return tangents[0] * self._slope(x)

    def _slope(self, x):
        """1 except where ``x ≤ 0`` (so a NaN passes its gradient through, as PyTorch's)."""
        return np.where(x <= 0, self.alpha * np.exp(np.minimum(x, 0)), 1.0)


class Softmax(Op):
    batching = "along_axis"
    uses_inputs = False
    uses_output = True

    def __init__(self, axis: int = -1):
        self.axis = axis

    def forward(self, x):
        self.axis = _softmax_axis(self.axis, x, self.name)
        with np.errstate(invalid="ignore"):  # a slice all -inf (masked): NaN, as PyTorch's
            shifted = x - x.max(axis=self.axis, keepdims=True) if x.size else x
            e = np.exp(shifted)
            return e / e.sum(axis=self.axis, keepdims=True)

    def backward(self, grad, out, x):
        return (out * (grad - (grad * out).sum(axis=self.axis, keepdims=True)),)

    def jvp(self, tangents, out, x):
        t = tangents[0]  # J = diag(s) − s sᵀ is symmetric: the same formula as the VJP
        return out * (t - (t * out).sum(axis=self.axis, keepdims=True))


class LogSoftmax(Op):
    name = "log_softmax"
    batching = "along_axis"
    uses_inputs = False
    uses_output = True

    def __init__(self, axis: int = -1):
        self.axis = axis

    def forward(self, x):
        self.axis = _softmax_axis(self.axis, x, self.name)
        return _log_softmax(x, self.axis)

    def backward(self, grad, out, x):
        return (grad - np.exp(out) * grad.sum(axis=self.axis, keepdims=True),)

    def jvp(self, tangents, out, x):
        t = tangents[0]  # J = I − 1 sᵀ: subtract the softmax-weighted mean of the tangent
        return t - (np.exp(out) * t).sum(axis=self.axis, keepdims=True)


def _softmax_axis(axis: int, x: np.ndarray, name: str) -> int | None:
    """The axis as a non-negative int; None (all of it) for a 0-d ``x``, which takes dim 0
    or -1 as PyTorch's."""
    if isinstance(axis, (tuple, list)) or axis is None:
        return normalize_axis(axis, len(shape_of(x)), name)  # the error: one int
    axes = reduction_axes(axis, len(shape_of(x)), name)
    return axes[0] if axes else None


def _log_softmax(x: np.ndarray, axis: int | None) -> np.ndarray:
    """``x − logsumexp(x)`` along ``axis`` (non-negative), shifted by the maximum for stability.
    On arrays only: the reductions call the ufuncs directly, skipping NumPy's Python wrappers."""
    if not x.size:
        return x.copy()
    with np.errstate(invalid="ignore"):  # a slice all -inf (masked): NaN, as PyTorch's
        shifted = x - np.maximum.reduce(x, axis=axis, keepdims=True)
        shifted -= np.log(np.add.reduce(np.exp(shifted), axis=axis, keepdims=True))
    return shifted
