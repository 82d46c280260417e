"""Weight initialisation, in place and with PyTorch's formulas, names and defaults.

Every function fills its tensor under ``no_grad`` from ``generator`` (a ``tg.Generator``)
or else the global generator, so ``tg.manual_seed(0)`` makes a model's initial weights
reproducible. Fans follow PyTorch: for a
weight of shape (out, in, *kernel), ``fan_in = in · prod(kernel)`` and
``fan_out = out · prod(kernel)``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from tensorgrad import array_backend
from tensorgrad.core.generator import numpy_generator
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


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: Any = None) -> Tensor:
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
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator: Any = None) -> Tensor:
    """Fill with values drawn from N(mean, std²); ``std ≥ 0``, as PyTorch requires."""
    std = _check_random_fill("normal_", tensor, mean=mean, std=std)["std"]
    if not std >= 0.0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def constant_(tensor: Tensor, val: float) -> Tensor:
    with no_grad():
        return tensor.fill_(val)


def zeros_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 0.0)


def ones_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 1.0)


def kaiming_uniform_(
    tensor: Tensor,
    a: float = 0.0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator: Any = None,
) -> Tensor:
    """He initialisation: U(−bound, bound) with ``bound = gain · √(3 / fan)``."""
    if tensor.numel() == 0:
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(
    tensor: Tensor,
    a: float = 0.0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator: Any = None,
) -> Tensor:
    """He initialisation: N(0, std²) with ``std = gain / √fan``."""
    if tensor.numel() == 0:
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    return normal_(tensor, 0.0, std, generator)


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """Glorot initialisation: U(−a, a) with ``a = gain · √(6 / (fan_in + fan_out))``."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = math.sqrt(3.0) * gain * math.sqrt(2.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """Glorot initialisation: N(0, std²) with ``std = gain · √(2 / (fan_in + fan_out))``."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator)


def _rng(generator: Any, what: str) -> np.random.Generator:
    return numpy_generator(generator, what) or array_backend.rng()


def _fill(tensor: Tensor, values: np.ndarray) -> Tensor:
    with no_grad():
        return tensor.copy_(values.astype(tensor.dtype, copy=False))


def trunc_normal_(
    tensor: Tensor,
    mean: float = 0.0,
    std: float = 1.0,
    a: float = -2.0,
    b: float = 2.0,
    generator: Any = None,
) -> Tensor:
    """Fill with N(mean, std²) truncated to [a, b] (the bounds are absolute, as PyTorch's).

    PyTorch's method: uniform draws between the bounds' normal CDF values, mapped back
    through the inverse CDF (SciPy's ``erfinv``) and clamped to [a, b] against rounding.
    PyTorch warns, as here, when ``mean`` is more than 2 std from the interval, where the
    inverse CDF loses precision."""
    numbers = _check_random_fill("trunc_normal_", tensor, mean=mean, std=std, a=a, b=b)
    mean, std, a, b = numbers["mean"], numbers["std"], numbers["a"], numbers["b"]
    if not std >= 0.0:
        raise RuntimeError(f"trunc_normal_: std must be >= 0, got {std:g}")
    if a > b:
        raise RuntimeError(f"trunc_normal_: expects a <= b, got a={a:g} > b={b:g}")
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn(
            "mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution "
            "of values may be incorrect.",
            stacklevel=2,
        )
    if std == 0:
        return _fill(tensor, np.full(tensor.shape, min(max(mean, a), b)))
    from scipy.special import erfinv  # SciPy comes with scikit-learn; loaded on first use

    def cdf(x: float) -> float:
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    low, high = 2 * cdf((a - mean) / std) - 1, 2 * cdf((b - mean) / std) - 1
    draws = _rng(generator, "trunc_normal_").uniform(low, high, tensor.shape)
    values = np.clip(erfinv(draws) * (std * math.sqrt(2.0)) + mean, a, b)
    return _fill(tensor, values)


def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-D tensor with the identity (ones on the diagonal of a rectangle too)."""
    if not isinstance(tensor, Tensor) or tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _fill(tensor, np.eye(*tensor.shape))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fill a 3-, 4- or 5-D convolution weight with the Dirac delta, so the convolution
    passes its input through: in each of ``groups`` groups, output channel d sees input
    channel d at the kernel's centre."""
    if not isinstance(tensor, Tensor) or tensor.ndim not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    out_channels = tensor.shape[0]
    if out_channels % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    per_group = out_channels // groups
    values = np.zeros(tensor.shape)
    centre = tuple(n // 2 for n in tensor.shape[2:])
    for g in range(groups):
        for d in range(min(per_group, tensor.shape[1])):
            values[(g * per_group + d, d, *centre)] = 1
    return _fill(tensor, values)


def orthogonal_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """Fill with a (semi-)orthogonal matrix (Saxe et al., 2013), the tensor seen as
    (shape[0], rest): the Q of a QR factorisation of a normal matrix, its signs made unique
    by R's diagonal (PyTorch's method), times ``gain``."""
    if not isinstance(tensor, Tensor) or tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    _check_random_fill("orthogonal_", tensor)
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = _rng(generator, "orthogonal_").standard_normal((rows, cols))
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q *= np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _fill(tensor, (q * gain).reshape(tensor.shape))


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator: Any = None) -> Tensor:
    """Fill a 2-D tensor with N(0, std²) values and, in each column, zeros in
    ``ceil(sparsity · rows)`` rows picked at random (Martens, 2010)."""
    if not isinstance(tensor, Tensor) or tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    _check_random_fill("sparse_", tensor, sparsity=sparsity, std=std)
    rows, cols = tensor.shape
    zeros = math.ceil(sparsity * rows)
    rng = _rng(generator, "sparse_")
    values = rng.normal(0.0, std, (rows, cols))
    for col in range(cols):
        values[rng.permutation(rows)[:zeros], col] = 0
    return _fill(tensor, values)


def _deprecated(new: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """PyTorch's old names without the trailing underscore: they warn and call the new one."""
    old_name = new.__name__[:-1]

    def old(*args: Any, **kwargs: Any) -> Tensor:
        warnings.warn(
            f"`nn.init.{old_name}` is now deprecated in favor of `nn.init.{new.__name__}`.",
            FutureWarning,
            stacklevel=2,
        )
        return new(*args, **kwargs)

    old.__name__ = old.__qualname__ = old_name
    old.__doc__ = f"Deprecated: use :func:`{new.__name__}`."
    return old


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
eye = _deprecated(eye_)
dirac = _deprecated(dirac_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_)
