"""Activation functions: ``F.relu``, ``F.softmax``, ``F.softplus``, ``F.elu``, ``F.silu`` and
friends."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tensorgrad import ops
from tensorgrad.core import batching
from tensorgrad.core.engine import apply, apply_inplace, as_tensor, wrap
from tensorgrad.core.functions import where
from tensorgrad.core.methods.common import floating_kernel, no_bool_kernel
from tensorgrad.core.tensor import Tensor


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    x = as_tensor(input)
    return x.relu_() if inplace else x.relu()


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    x = floating_kernel("leaky_relu", as_tensor(input))
    if inplace:  # recorded as an in-place op: the backward keeps the value it needs
        return apply_inplace(ops.LeakyRelu(negative_slope), x)
    return x.leaky_relu(negative_slope)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    return as_tensor(input).gelu(approximate)


def tanh(input: Tensor) -> Tensor:
    return as_tensor(input).tanh()


def sigmoid(input: Tensor) -> Tensor:
    return as_tensor(input).sigmoid()


def softmax(
    input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None
) -> Tensor:
    """Softmax over ``dim`` (the last dimension when None)."""
    return as_tensor(input).softmax(-1 if dim is None else dim, dtype=dtype)


def log_softmax(
    input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None
) -> Tensor:
    """Log-softmax over ``dim`` (the last dimension when None), computed stably."""
    return as_tensor(input).log_softmax(-1 if dim is None else dim, dtype=dtype)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(βx)) / β``, a smooth ReLU; ``x`` itself where ``βx > threshold``, as in
    PyTorch. One op, stable for any input (see ``tensorgrad.ops.Softplus``)."""
    return apply(ops.Softplus(beta, threshold), floating_kernel("softplus", as_tensor(input)))


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``x`` for ``x > 0``, else ``α(exp(x) − 1)``."""
    x = floating_kernel("elu", as_tensor(input))
    return apply_inplace(ops.Elu(alpha), x) if inplace else apply(ops.Elu(alpha), x)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """``x · σ(x)`` (also called swish)."""
    x = floating_kernel("silu", as_tensor(input))
    return apply_inplace(ops.Silu(), x) if inplace else apply(ops.Silu(), x)


# --------------------------------------------------------------------------- more activations
# composed of existing ops: no VJP of their own
def _between(x: Tensor, low: float, high: float, nan_passes: bool = True) -> Tensor:
    """``x`` clamped into [low, high], with PyTorch's hardtanh gradient: 1 strictly inside
    (and at NaN, unless not ``nan_passes``), 0 at the bounds and outside (``clamp`` passes it
    at the bounds too)."""
    data = x._data
    if data.dtype.kind != "f":  # no gradient to shape: PyTorch keeps the integer dtype
        return batching.like(x, wrap(np.clip(data, low, high).astype(data.dtype)))
    # strictly inside, or NaN (PyTorch's test is "not at or beyond a bound"); comparisons of
    # tensors, so that inside vmap each sample has its own
    inside = (x > low) & (x < high)
    if nan_passes:  # hardtanh's (not hardsigmoid's)
        inside = inside | (x != x)
    return where(inside, x, x.detach().clamp(low, high))


def hardtanh(
    input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False
) -> Tensor:
    """``x`` clamped into ``[min_val, max_val]``."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    x = _no_bool("hardtanh", as_tensor(input))
    return _written_back(x, lambda v: _between(v, min_val, max_val), inplace)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """``min(max(x, 0), 6)``."""
    return hardtanh(input, 0.0, 6.0, inplace)


def logsigmoid(input: Tensor) -> Tensor:
    """``log σ(x) = −softplus(−x)``, stable for any x (no linear cut-off: exact to the last
    bit for large |x| too)."""
    x = floating_kernel("log_sigmoid", as_tensor(input))
    return -apply(ops.Softplus(1.0, math.inf), -x)


def _written_back(x: Tensor, out_of: Any, inplace: bool) -> Tensor:
    """``out_of(x)``, or with ``inplace`` written into ``x``: computed from a copy of x, so
    the ops that keep x for their backward keep the value before the write (PyTorch's
    in-place forms save the input as it was too)."""
    return x.copy_(out_of(x.clone())) if inplace else out_of(x)


def _no_bool(name: str, x: Tensor) -> Tensor:
    """``x``, where PyTorch refuses bool inputs to ``name`` with a RuntimeError."""
    if x.dtype == np.bool_:
        raise RuntimeError(f"Bool inputs not supported for {name}")
    return x


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """``x · tanh(softplus(x))``."""
    x = floating_kernel("mish", as_tensor(input))
    return _written_back(x, lambda v: v * softplus(v).tanh(), inplace)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """``scale · elu(x, alpha)`` with the self-normalising constants."""
    x = floating_kernel("elu", as_tensor(input))
    return _written_back(x, lambda v: elu(v, _SELU_ALPHA) * _SELU_SCALE, inplace)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``max(0, x) + min(0, α(exp(x/α) − 1))``."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    x = floating_kernel("elu", as_tensor(input))
    return _written_back(x, lambda v: elu(v * (1.0 / alpha)) * alpha, inplace)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """The gated linear unit: the first half along ``dim`` times σ(the second half)."""
    x = as_tensor(input)
    if not x.ndim:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    axis = ops.normalize_axis(dim, x.ndim, "glu")
    if x.shape[axis] % 2:
        raise RuntimeError(
            f"Halving dimension must be even, but dimension {axis} is size {x.shape[axis]}"
        )
    floating_kernel("glu", x)
    a, b = x.chunk(2, axis) if x.shape[axis] else (x, x)
    return a * b.sigmoid()


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """``relu6(x + 3) / 6``: 0 below −3, 1 above 3, linear between."""
    x = floating_kernel("hardsigmoid", as_tensor(input))
    return _written_back(x, lambda v: _between(v + 3.0, 0.0, 6.0, nan_passes=False) / 6.0, inplace)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """``x · relu6(x + 3) / 6``."""
    x = floating_kernel("hardswish", as_tensor(input))
    return _written_back(x, lambda v: apply(ops.Hardswish(), v), inplace)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """0 where ``−lambd ≤ x ≤ lambd``, else ``x`` (NaN stays NaN, its gradient passes)."""
    x = floating_kernel("hardshrink", as_tensor(input))
    inside = (x >= -lambd) & (x <= lambd)  # (comparisons of tensors: inside vmap, per sample)
    return where(inside, 0.0, x).to(x.dtype)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``x − lambd`` above lambd, ``x + lambd`` below −lambd, else 0."""
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    x = floating_kernel("softshrink", as_tensor(input))
    inside = (x >= -lambd) & (x <= lambd)
    shift = (x > lambd).to(x.dtype) * (2 * lambd) - lambd  # ±lambd in x's dtype; NaN: −lambd
    return where(inside, 0.0, x - shift).to(x.dtype)


def softsign(input: Tensor) -> Tensor:
    """``x / (1 + |x|)``."""
    x = as_tensor(input)
    return x / (x.abs() + 1)


def tanhshrink(input: Tensor) -> Tensor:
    """``x − tanh(x)``."""
    x = as_tensor(input)
    return x - x.tanh()


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """``value`` where ``x ≤ threshold``, else ``x`` (NaN stays NaN)."""
    x = no_bool_kernel("threshold", as_tensor(input))
    below = x <= threshold
    return _written_back(x, lambda v: where(below, value, v).to(x.dtype), inplace)


def threshold_(input: Tensor, threshold_value: float, value: float) -> Tensor:
    return threshold(input, threshold_value, value, inplace=True)


def softmin(
    input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None
) -> Tensor:
    """``softmax(−x)`` over ``dim``."""
    x = as_tensor(input)
    if dtype is not None:
        x = x.to(dtype)
    return (-x).softmax(-1 if dim is None else dim)


def relu_(input: Tensor) -> Tensor:
    return relu(input, inplace=True)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return elu(input, alpha, inplace=True)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    return leaky_relu(input, negative_slope, inplace=True)


def selu_(input: Tensor) -> Tensor:
    return selu(input, inplace=True)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return celu(input, alpha, inplace=True)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """``x`` where ``x ≥ 0``, else ``weight · x``: one slope, or one per channel (dim 1)."""
    x = floating_kernel("prelu", as_tensor(input))
    w = as_tensor(weight)
    if w.ndim > 1:
        raise RuntimeError(
            f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {w.ndim}"
        )
    if w.dtype != x.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got {x.dtype} and {w.dtype}")
    channels = x.shape[1] if x.ndim >= 2 else 1
    if w.numel() != 1 and w.numel() != channels:
        raise RuntimeError(
            "Mismatch of parameter numbers and input channel size. Found parameter numbers = "
            f"{w.numel()} and channel size = {channels}."
        )
    w = w.reshape(-1, *([1] * (x.ndim - 2))) if w.numel() != 1 else w.reshape(())
    return apply(ops.Prelu(), x, w)


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """``(*, C·r², H, W)`` rearranged to ``(*, C, H·r, W·r)`` (sub-pixel convolution)."""
    x, r = as_tensor(input), int(upscale_factor)
    if x.ndim < 3:
        raise RuntimeError(
            "pixel_shuffle expects input to have at least 3 dimensions, but got input with "
            f"{x.ndim} dimension(s)"
        )
    *lead, c, h, w = x.shape
    if c % (r * r):
        raise RuntimeError(
            "pixel_shuffle expects its input's 'channel' dimension to be divisible by the "
            f"square of upscale_factor, but input.size(-3)={c} is not divisible by {r * r}"
        )
    n = len(lead)
    y = x.reshape(*lead, c // (r * r), r, r, h, w)
    y = y.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return y.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """The inverse of :func:`pixel_shuffle`: ``(*, C, H·r, W·r)`` to ``(*, C·r², H, W)``."""
    x, r = as_tensor(input), int(downscale_factor)
    if x.ndim < 3:
        raise RuntimeError(
            "pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
            f"{x.ndim} dimension(s)"
        )
    *lead, c, h, w = x.shape
    for name, size, at in (("height", h, -2), ("width", w, -1)):
        if size % r:
            raise RuntimeError(
                f"pixel_unshuffle expects {name} to be divisible by downscale_factor, but "
                f"input.size({at})={size} is not divisible by {r}"
            )
    n = len(lead)
    y = x.reshape(*lead, c, h // r, r, w // r, r)
    y = y.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return y.reshape(*lead, c * r * r, h // r, w // r)
