"""The Tensor's casts: ``to`` (a dtype, a device, or another tensor's), ``astype``, ``type``
with PyTorch's type names (``'torch.FloatTensor'``), ``type_as``, and ``float``, ``long``,
... A cast between float types is differentiable; one to an integer or bool type gives a
tensor without gradient."""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorgrad import array_backend, ops
from tensorgrad.core import engine
from tensorgrad.core.engine import apply


class CastMethods:
    """Casts to other dtypes and PyTorch's type names (mixed into Tensor)."""

    __slots__ = ()

    def to(self, *args: Any, **kwargs: Any) -> Any:
        """PyTorch's ``to``: a dtype, a device, another tensor (its dtype and device), or
        both as keywords. The CPU is the only device; any other is refused by name."""
        dtype = kwargs.pop("dtype", None)
        device = kwargs.pop("device", None)
        kwargs.pop("non_blocking", None)
        copy = kwargs.pop("copy", False)
        kwargs.pop("memory_format", None)
        if kwargs:
            raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
        for arg in args:
            if isinstance(arg, engine.Tensor):
                dtype = arg.dtype
            elif (isinstance(arg, (str, array_backend.device)) and not _is_dtype_name(arg)) or (
                isinstance(arg, int) and not isinstance(arg, bool)
            ):
                device = arg
            else:
                dtype = arg
        if device is not None:
            array_backend.as_device(device)
        result = self.astype(dtype) if dtype is not None else self
        return result.clone() if copy and result is self else result

    def astype(self, dtype: Any) -> Any:
        """This tensor converted to ``dtype`` (differentiable between float types; a cast to
        an integer or bool type gives a tensor without gradient)."""
        try:
            dtype = array_backend.as_dtype(dtype)
        except array_backend.UnsupportedError:
            raise  # it names the dtype and the porting guide already, and stays catchable
        except TypeError as exc:
            raise engine.named_error("to", exc) from exc
        if dtype == self.dtype:
            return self
        if self.requires_grad and not array_backend.is_floating(dtype):
            return apply(ops.Cast(dtype), self.detach())
        return apply(ops.Cast(dtype), self)

    def type(self, dtype: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
        """Without ``dtype``, PyTorch's type string (``'torch.FloatTensor'`` for float32,
        so ported comparisons hold); with one (a dtype, or such a string), this tensor cast
        to it, as ``to(dtype)``."""
        if dtype is None:
            return _TYPE_NAMES.get(self.dtype, f"torch.{self.dtype}")
        if isinstance(dtype, type) and isinstance(getattr(dtype, "dtype", None), np.dtype):
            dtype = dtype.dtype  # a legacy type: x.type(torch.LongTensor) (core/legacy_types.py)
        if isinstance(dtype, str) and dtype.endswith("Tensor"):
            module, _, name = dtype.rpartition(".")
            if module.endswith("cuda"):
                raise array_backend.UnsupportedError(
                    f"type({dtype!r}): tensorgrad runs on the CPU only (see docs/porting.md)"
                )
            if module not in ("torch", "tensorgrad") or name not in _TYPE_DTYPES:
                raise ValueError(f"invalid type: {dtype!r}")
            dtype = _TYPE_DTYPES[name]
        return self.astype(dtype)

    def type_as(self, other: Any) -> Any:
        """This tensor in ``other``'s dtype (``other`` must be a tensor, as in PyTorch)."""
        if not isinstance(other, engine.Tensor):
            raise TypeError(f"type_as: other must be a Tensor, got {type(other).__name__}")
        return self.astype(other.dtype)

    def float(self) -> Any:
        return self.astype(array_backend.float32)

    def double(self) -> Any:
        return self.astype(array_backend.float64)

    def half(self) -> Any:
        return self.astype(array_backend.float16)

    def long(self) -> Any:
        return self.astype(array_backend.int64)

    def int(self) -> Any:
        return self.astype(array_backend.int32)

    def short(self) -> Any:
        return self.astype(array_backend.int16)

    def byte(self) -> Any:
        return self.astype(array_backend.uint8)

    def bool(self) -> Any:
        return self.astype(array_backend.bool_)


#: PyTorch's legacy tensor type names by dtype (``Tensor.type()``)
_TYPE_DTYPES: dict[str, Any] = {
    "FloatTensor": array_backend.float32,
    "DoubleTensor": array_backend.float64,
    "HalfTensor": array_backend.float16,
    "LongTensor": array_backend.int64,
    "IntTensor": array_backend.int32,
    "ShortTensor": array_backend.int16,
    "CharTensor": array_backend.int8,
    "ByteTensor": array_backend.uint8,
    "BoolTensor": array_backend.bool_,
}


_TYPE_NAMES = {array_backend.as_dtype(d): f"torch.{name}" for name, d in _TYPE_DTYPES.items()}


def _is_dtype_name(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        array_backend.as_dtype(value)
    except TypeError:
        return False
    return True
