"""Activation functions: ``F.relu``, ``F.softmax``, ``F.softplus``, ``F.elu``, ``F.silu`` and
friends."""

from __future__ import annotations

from typing import Any

from tensorgrad import ops
from tensorgrad.core.engine import apply, apply_inplace, as_tensor
from tensorgrad.core.math_methods import floating_kernel
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
