"""What the Tensor's method families share: raw values of operands, PyTorch's argument and
dtype policy for the methods that compute in float or refuse bools, the in-place form of a
composed method, and the ``(values, indices)`` return type; and the shape methods'
``*sizes`` check."""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from tensorgrad import array_backend
from tensorgrad.core import dtype_policy, engine

#: what ``max(dim)``, ``min(dim)``, ``sort`` and ``topk`` return, as PyTorch's return types
ValuesIndices = namedtuple("ValuesIndices", ["values", "indices"])


_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2}


def write_back(self: Any, name: str, compute: Any) -> Any:
    """``self.copy_(compute(x))``, the in-place form of a composed method: ``x`` is a copy
    of ``self``, so the ops that keep their input for backward keep the value before the
    write (PyTorch's in-place forms save the input as it was); and a result of a higher
    category than ``self`` (a float into an integer or bool tensor) is PyTorch's error, not
    a silent cast."""
    result = compute(self.clone())
    if result.shape != self.shape:  # broadcasting may not grow the tensor written into
        raise RuntimeError(
            f"{name}: output with shape {list(self.shape)} doesn't match the broadcast shape "
            f"{list(result.shape)}"
        )
    if _CATEGORY[result.dtype.kind] > _CATEGORY[self.dtype.kind]:
        raise RuntimeError(
            f"{name}: result type {result.dtype} can't be cast to the desired output type "
            f"{self.dtype}"
        )
    return self.copy_(result)


def _copy_back(name: str) -> Any:
    """The in-place form ``x.<name>_(...)`` of a composed function: its result written back
    with ``copy_`` (recorded as PyTorch records an in-place change; no VJP of its own)."""

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return write_back(self, f"{name}_", lambda x: getattr(x, name)(*args, **kwargs))

    method.__name__ = method.__qualname__ = f"{name}_"
    method.__doc__ = f"``{name}`` in place: ``x.{name}_(...)`` writes ``x.{name}(...)`` into x."
    return method


def _floating_input(x: Any) -> Any:
    """``x`` itself when floating; an integer or bool tensor in the default float dtype, in
    which PyTorch computes exp2, deg2rad, ... of it (NumPy would pick float64 or float16);
    the policy ``dtypes = "float"`` of an op's declaration, for the compositions."""
    return dtype_policy.enforce("float", "", x)


def floating_kernel(name: str, x: Any, *others: Any) -> Any:
    """``x``, where PyTorch computes ``name`` for floating operands only (softmax, gelu, elu,
    hypot, ...): integer or bool operands (promoted together with ``others``, numbers
    included) are its NotImplementedError, not a silent cast."""
    dtype = (
        x.dtype
        if not others
        else array_backend.result_type(*(_raw(engine.operand(v)) for v in (x, *others)))
    )
    if dtype.kind != "f":
        raise dtype_policy.not_floating(name, dtype)
    return x


def no_bool_kernel(name: str, x: Any, error: type[Exception] = NotImplementedError) -> Any:
    """``x`` (a tensor, or the dtype of a result), where PyTorch has no bool kernel for
    ``name`` (abs, floor, argmax, ``//`` and ``%`` of bools, ...)."""
    if getattr(x, "dtype", x) == np.bool_:
        raise dtype_policy.not_bool(name, error)
    return x


def _raw(value: Any) -> Any:
    return value._data if isinstance(value, engine.Tensor) else value


def _tensor_argument(name: str, other: Any, what: str = "other") -> Any:
    """``other`` where PyTorch asks for a Tensor (``maximum``, ``logical_and``, ``isclose``,
    the matrix products): a Python number is its TypeError, not a broadcast constant."""
    if isinstance(other, (bool, int, float, complex, np.generic)):
        raise TypeError(
            f"{name}(): argument '{what}' (position 2) must be Tensor, not {type(other).__name__}"
        )
    return other


def required(args: tuple, name: str, what: str) -> tuple:
    """``args`` (a method's ``*sizes``), refusing none at all as PyTorch does:
    ``x.reshape()`` is a TypeError, not a reshape to ``()`` (that is ``x.reshape(())``)."""
    if not args:
        raise TypeError(f'{name}() missing 1 required positional arguments: "{what}"')
    return args
