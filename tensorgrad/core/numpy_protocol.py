"""NumPy's protocols on Tensors: ``np.exp(t)``, ``ndarray + t``, ``np.sum(t, axis=0)``.

NumPy's functions keep NumPy's meaning on Tensors (``np.transpose(t, axes)`` permutes,
``np.max(t, axis=0)`` returns values only), which is what lets one VJP formula run on arrays
and, when backward is recorded, on Tensors. A function or ufunc not in these tables raises a
TypeError that names it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorgrad import ops
from tensorgrad.core import engine, forward, functions
from tensorgrad.core.engine import apply, as_tensor, binary, wrap


class NumpyProtocol:
    """``__array__``, ``__array_ufunc__`` and ``__array_function__`` (mixed into Tensor)."""

    __slots__ = ()

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        if forward.state.recorded_rule and self._requires_grad:
            raise RuntimeError(
                f"{forward.state.recorded_rule}: its forward-mode rule (JVP) turned a tensor "
                "that requires grad into an array, so its tangent cannot be differentiated "
                "(reverse mode over forward mode)"
            )
        if copy:
            return np.array(self._data, dtype=dtype, copy=True)
        return self._data if dtype is None else self._data.astype(dtype)

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """NumPy ufuncs on Tensors: ``np.exp(t)`` and ``ndarray + t`` give Tensors."""
        if method != "__call__" or kwargs:
            what = f".{method}" if method != "__call__" else f" with {sorted(kwargs)}"
            raise unsupported(f"np.{ufunc.__name__}{what}")
        if ufunc in DIFFERENTIABLE_UFUNCS:
            return DIFFERENTIABLE_UFUNCS[ufunc](*inputs)
        if ufunc in CONSTANT_UFUNCS:
            return wrap(ufunc(*(x._data if isinstance(x, engine.Tensor) else x for x in inputs)))
        raise unsupported(f"np.{ufunc.__name__}")

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        """NumPy functions on Tensors: those in :data:`ARRAY_FUNCTIONS` give Tensors (and
        gradients); any other runs on the arrays and returns NumPy's result, as it does for
        PyTorch's tensors, unless a gradient would be lost (a tensor that requires grad)."""
        handler = ARRAY_FUNCTIONS.get(func)
        if handler is not None:
            return handler(*args, **kwargs)
        if _any_requires_grad(args) or _any_requires_grad(kwargs.values()):
            raise unsupported(f"np.{func.__name__}")
        return func(*_unwrap(args), **dict(zip(kwargs, _unwrap(kwargs.values()))))


def unsupported(name: str) -> TypeError:
    return TypeError(
        f"{name} is not supported on tensorgrad Tensors that require grad (the gradient would "
        "be lost); use the Tensor method, or tensor.detach().numpy() to work on the array"
    )


def _any_requires_grad(values: Any) -> bool:
    for value in values:
        if isinstance(value, engine.Tensor) and value.requires_grad:
            return True
        if isinstance(value, (list, tuple)) and _any_requires_grad(value):
            return True
    return False


def _unwrap(values: Any) -> list[Any]:
    """Tensors (also inside lists and tuples) replaced by their arrays."""
    result = []
    for value in values:
        if isinstance(value, engine.Tensor):
            value = value._data
        elif isinstance(value, (list, tuple)):
            value = type(value)(_unwrap(value))
        result.append(value)
    return result


DIFFERENTIABLE_UFUNCS = {
    np.add: lambda x, y: binary(ops.Add, x, y),
    np.subtract: lambda x, y: binary(ops.Sub, x, y),
    np.multiply: lambda x, y: binary(ops.Mul, x, y),
    np.true_divide: lambda x, y: binary(ops.Div, x, y),
    np.power: lambda x, y: binary(ops.Pow, x, y),
    np.matmul: lambda x, y: binary(ops.MatMul, x, y),
    np.maximum: lambda x, y: binary(ops.Maximum, x, y),
    np.minimum: lambda x, y: binary(ops.Minimum, x, y),
    np.negative: lambda x: apply(ops.Neg(), x),
    np.positive: lambda x: x,
    np.exp: lambda x: apply(ops.Exp(), x),
    np.log: lambda x: apply(ops.Log(), x),
    np.log1p: lambda x: apply(ops.Log1p(), x),
    np.expm1: lambda x: apply(ops.Expm1(), x),
    np.sqrt: lambda x: apply(ops.Sqrt(), x),
    np.absolute: lambda x: apply(ops.Abs(), x),
    np.sin: lambda x: apply(ops.Sin(), x),
    np.cos: lambda x: apply(ops.Cos(), x),
    np.tanh: lambda x: apply(ops.Tanh(), x),
    np.square: lambda x: binary(ops.Mul, x, x),
}

#: ufuncs whose result carries no gradient (comparisons, tests, rounding, sign)
CONSTANT_UFUNCS = {
    np.equal,
    np.not_equal,
    np.less,
    np.less_equal,
    np.greater,
    np.greater_equal,
    np.logical_and,
    np.logical_or,
    np.logical_xor,
    np.logical_not,
    np.sign,
    np.isnan,
    np.isinf,
    np.isfinite,
    np.floor,
    np.ceil,
    np.rint,
    np.trunc,
    np.signbit,
}


def _reduction(name: str) -> Any:
    """``np.<name>(t, axis, keepdims)``: NumPy's meaning (for max and min: the values)."""
    method = {"max": "amax", "min": "amin"}.get(name, name)

    def call(x: Any, axis: Any = None, keepdims: bool = False, **kwargs: Any) -> Any:
        if kwargs:
            raise unsupported(f"np.{name} with {sorted(kwargs)}")
        x = as_tensor(x)
        if name == "mean" and x.dtype.kind != "f":  # NumPy's mean of ints and bools
            x = x.double()
        if isinstance(axis, tuple) and not axis:  # NumPy reduces nothing (PyTorch: all)
            return getattr(x.unsqueeze(0), method)(dim=0)  # over a new axis of one
        return getattr(x, method)(dim=axis, keepdim=keepdims)

    return call


def _transpose(x: Any, axes: Any = None) -> Any:
    x = as_tensor(x)
    return x.permute(tuple(axes if axes is not None else range(x.ndim - 1, -1, -1)))


def _flip(x: Any, axis: Any = None) -> Any:
    x = as_tensor(x)
    return x.flip(tuple(range(x.ndim) if axis is None else np.atleast_1d(axis).tolist()))


def _data(x: Any) -> Any:
    return x._data if isinstance(x, engine.Tensor) else x


ARRAY_FUNCTIONS = {
    np.shape: lambda x: np.shape(_data(x)),
    np.ndim: lambda x: np.ndim(_data(x)),
    np.size: lambda x, axis=None: np.size(_data(x), axis),
    np.where: lambda cond, x, y: functions.where(cond, x, y),
    np.broadcast_to: lambda x, shape: as_tensor(x).broadcast_to(shape),
    np.reshape: lambda x, shape: as_tensor(x).reshape(shape),
    np.transpose: _transpose,
    np.swapaxes: lambda x, a, b: as_tensor(x).transpose(a, b),
    np.expand_dims: lambda x, axis: as_tensor(x).unsqueeze(axis),
    np.squeeze: lambda x, axis=None: as_tensor(x).squeeze(axis),
    np.concatenate: lambda xs, axis=0: functions.cat(xs, axis),
    np.stack: lambda xs, axis=0: functions.stack(xs, axis),
    np.flip: _flip,
    np.cumsum: lambda x, axis=None: (
        as_tensor(x).flatten().cumsum(0) if axis is None else as_tensor(x).cumsum(axis)
    ),
    np.sum: _reduction("sum"),
    np.mean: _reduction("mean"),
    np.max: _reduction("max"),
    np.amax: _reduction("max"),
    np.min: _reduction("min"),
    np.amin: _reduction("min"),
    np.clip: lambda x, low, high: as_tensor(x).clamp(low, high),
    np.zeros_like: lambda x, dtype=None: wrap(np.zeros_like(_data(x), dtype=dtype)),
    np.ones_like: lambda x, dtype=None: wrap(np.ones_like(_data(x), dtype=dtype)),
}
