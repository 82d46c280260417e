"""PyTorch's legacy tensor types: ``torch.FloatTensor``, ``torch.LongTensor``, ...

Old programs (and some current ones: PyTorch's ``word_language_model`` makes its ONNX dummy
input with ``torch.LongTensor(n).zero_()``) call them as constructors and use them in
``isinstance`` and ``x.type(torch.LongTensor)``. Each is a class whose instances are
tensorgrad's Tensors of its dtype:

- ``FloatTensor(2, 3)`` (ints, or one ``tg.Size``): a tensor of that size (zero-filled,
  where PyTorch leaves it uninitialised, as ``tg.empty``); ``FloatTensor()`` is empty (0,);
- ``FloatTensor([1, 2])`` (a list, tuple or array): that data in the dtype;
- ``FloatTensor(t)`` of a float32 tensor is ``t`` itself; another dtype is PyTorch's
  TypeError;
- ``isinstance(t, tg.FloatTensor)`` holds for float32 tensors only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorgrad import array_backend
from tensorgrad.core.args import Size
from tensorgrad.core.creation import tensor, zeros
from tensorgrad.core.tensor import Tensor

__all__ = [
    "BoolTensor",
    "ByteTensor",
    "CharTensor",
    "DoubleTensor",
    "FloatTensor",
    "HalfTensor",
    "IntTensor",
    "LongTensor",
    "ShortTensor",
]


class _LegacyTensorType(type):
    """The metaclass: ``isinstance`` by dtype, and PyTorch's repr."""

    dtype: np.dtype

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor) and obj.dtype == cls.dtype

    def __repr__(cls) -> str:
        return f"<class 'torch.{cls.__name__}'>"


class _LegacyTensor(metaclass=_LegacyTensorType):
    dtype: np.dtype

    def __new__(cls, *args: Any, device: Any = None) -> Any:  # type: ignore[misc]
        if device is not None:
            array_backend.as_device(device)
        name = f"torch.{cls.__name__}"
        if not args:
            return zeros(0, dtype=cls.dtype)
        first = args[0]
        if all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in args):
            return zeros(*args, dtype=cls.dtype)
        if len(args) > 1:
            raise TypeError(f"{name}(): expected sizes as ints or one sequence of data, got {args}")
        if isinstance(first, Size):
            return zeros(tuple(first), dtype=cls.dtype)
        if isinstance(first, Tensor):
            if first.dtype != cls.dtype:
                raise TypeError(
                    f"{name}(): expected a tensor of dtype {cls.dtype}, got {first.dtype} "
                    f"(use .to({cls.dtype}) to convert)"
                )
            return first
        if isinstance(first, (list, tuple, np.ndarray)):
            return tensor(np.asarray(first).astype(cls.dtype), dtype=cls.dtype)
        raise TypeError(f"new(): data must be a sequence (got {type(first).__name__})")


def _legacy(name: str, dtype: np.dtype) -> type:
    return _LegacyTensorType(name, (_LegacyTensor,), {"dtype": dtype, "__module__": "tensorgrad"})


FloatTensor = _legacy("FloatTensor", array_backend.float32)
DoubleTensor = _legacy("DoubleTensor", array_backend.float64)
HalfTensor = _legacy("HalfTensor", array_backend.float16)
LongTensor = _legacy("LongTensor", array_backend.int64)
IntTensor = _legacy("IntTensor", array_backend.int32)
ShortTensor = _legacy("ShortTensor", array_backend.int16)
CharTensor = _legacy("CharTensor", array_backend.int8)
ByteTensor = _legacy("ByteTensor", array_backend.uint8)
BoolTensor = _legacy("BoolTensor", array_backend.bool_)
