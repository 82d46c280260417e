"""Module-level spellings of the Tensor methods: ``tg.exp(x)`` is ``x.exp()``.

Each accepts anything ``tg.as_tensor`` does, so ``tg.exp(2.0)`` works too.
"""

from __future__ import annotations

import builtins
from typing import Any

from tensorgrad.tensor import Tensor, as_tensor


def exp(x: Any) -> Tensor:
    return as_tensor(x).exp()


def log(x: Any) -> Tensor:
    return as_tensor(x).log()


def sqrt(x: Any) -> Tensor:
    return as_tensor(x).sqrt()


def abs(x: Any) -> Tensor:
    return as_tensor(x).abs()


def sin(x: Any) -> Tensor:
    return as_tensor(x).sin()


def cos(x: Any) -> Tensor:
    return as_tensor(x).cos()


def tanh(x: Any) -> Tensor:
    return as_tensor(x).tanh()


def sigmoid(x: Any) -> Tensor:
    return as_tensor(x).sigmoid()


def relu(x: Any) -> Tensor:
    return as_tensor(x).relu()


def leaky_relu(x: Any, negative_slope: float = 0.01) -> Tensor:
    return as_tensor(x).leaky_relu(negative_slope)


def gelu(x: Any, approximate: str = "none") -> Tensor:
    return as_tensor(x).gelu(approximate)


def clip(x: Any, min: Any = None, max: Any = None) -> Tensor:
    return as_tensor(x).clip(min, max)


def sum(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:
    return as_tensor(x).sum(axis, keepdims)


def mean(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:
    return as_tensor(x).mean(axis, keepdims)


def var(x: Any, axis: Any = None, keepdims: bool = False, correction: int = 1) -> Tensor:
    return as_tensor(x).var(axis, keepdims, correction)


def max(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:
    return as_tensor(x).max(axis, keepdims)


def min(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:
    return as_tensor(x).min(axis, keepdims)


def logsumexp(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:
    return as_tensor(x).logsumexp(axis, keepdims)


def softmax(x: Any, axis: int = -1) -> Tensor:
    return as_tensor(x).softmax(axis)


def log_softmax(x: Any, axis: int = -1) -> Tensor:
    return as_tensor(x).log_softmax(axis)


del builtins
