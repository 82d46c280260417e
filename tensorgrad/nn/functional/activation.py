"""Activation functions: ``F.relu``, ``F.softmax`` and friends."""

from __future__ import annotations

from typing import Any

from tensorgrad.core.engine import as_tensor
from tensorgrad.core.tensor import Tensor


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    x = as_tensor(input)
    return x.relu_() if inplace else x.relu()


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    result = as_tensor(input).leaky_relu(negative_slope)
    return as_tensor(input).copy_(result) if inplace else result


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
