"""Weight initialisation, in place and with PyTorch's formulas.

Every function fills its tensor under ``no_grad`` from the global generator, so
``tg.manual_seed(0)`` makes a model's initial weights reproducible. Fans follow PyTorch: for a
weight of shape (out, in, *kernel), ``fan_in = in · prod(kernel)`` and
``fan_out = out · prod(kernel)``.
"""

from __future__ import annotations

import math

import numpy as np

from tensorgrad.core.tensor import Tensor
from tensorgrad.grad_mode import no_grad

_LINEAR = (
    "linear",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "sigmoid",
)


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity: 1 for linear and sigmoid, 5/3 for tanh,
    √2 for relu, √(2 / (1 + slope²)) for leaky_relu (slope 0.01 unless ``param``), 3/4 for selu."""
    if nonlinearity in _LINEAR:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = float(param)
        else:
            raise ValueError(f"calculate_gain: negative_slope {param!r} is not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    if tensor.ndim < 2:
        raise ValueError(
            f"fan in and fan out cannot be computed for a tensor with fewer than 2 dimensions "
            f"(shape {tensor.shape})"
        )
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan(tensor: Tensor, mode: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _check_random_fill(name: str, tensor: Tensor, **numbers: float) -> dict[str, float]:
    """Refuse what PyTorch refuses before drawing: a non-Tensor, an integer or bool tensor
    (PyTorch has no random fill for them; NumPy would round silently), a bound that is not
    a number. Returns the numbers as floats."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{name}: expected a Tensor, got {type(tensor).__name__}")
    if tensor.dtype.kind != "f":
        raise NotImplementedError(
            f"{name}: random fill not implemented for {tensor.dtype} tensors; initialise a "
            "floating-point tensor (or use constant_)"
        )
    values = {}
    for key, value in numbers.items():
        if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)):
            raise TypeError(f"{name}: {key} must be a number, got {type(value).__name__} {value!r}")
        values[key] = float(value)
    return values


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0) -> Tensor:
    """Fill with values drawn from U(a, b); ``a ≤ b`` and both finite, as PyTorch requires."""
    bounds = _check_random_fill("uniform_", tensor, a=a, b=b)
    a, b = bounds["a"], bounds["b"]
    for key, value in bounds.items():
        if not math.isfinite(value):
            raise RuntimeError(f"uniform_: {key}={value} is out of bounds for {tensor.dtype}")
    if a > b:
        raise RuntimeError(
            f"uniform_ expects to return a [from, to) range, but found from={a:g} > to={b:g}"
        )
    with no_grad():
        return tensor.uniform_(a, b)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0) -> Tensor:
    """Fill with values drawn from N(mean, std²); ``std ≥ 0``, as PyTorch requires."""
    std = _check_random_fill("normal_", tensor, mean=mean, std=std)["std"]
    if not std >= 0.0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    with no_grad():
        return tensor.normal_(mean, std)


def constant_(tensor: Tensor, val: float) -> Tensor:
    with no_grad():
        return tensor.fill_(val)


def zeros_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 0.0)


def ones_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 1.0)


def kaiming_uniform_(
    tensor: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu"
) -> Tensor:
    """He initialisation: U(−bound, bound) with ``bound = gain · √(3 / fan)``."""
    if tensor.numel() == 0:
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound)


def kaiming_normal_(
    tensor: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu"
) -> Tensor:
    """He initialisation: N(0, std²) with ``std = gain / √fan``."""
    if tensor.numel() == 0:
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    return normal_(tensor, 0.0, std)


def xavier_uniform_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """Glorot initialisation: U(−a, a) with ``a = gain · √(6 / (fan_in + fan_out))``."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = math.sqrt(3.0) * gain * math.sqrt(2.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound)


def xavier_normal_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """Glorot initialisation: N(0, std²) with ``std = gain · √(2 / (fan_in + fan_out))``."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)))
