"""The Tensor's math: pointwise functions, arithmetic by name, comparisons, reductions and
casts, with PyTorch's names and semantics (``dim``/``keepdim``; NumPy's ``axis``/``keepdims``
accepted, see ``args.numpy_names``).

Most methods are one op; the rest are composed from other methods (``std`` aside, which needs
PyTorch's rule at zero), so they need no VJP of their own and are checked for free.
"""

from __future__ import annotations

import math
from collections import namedtuple
from typing import Any

import numpy as np

from tensorgrad import array_backend, ops
from tensorgrad.core import engine, functions
from tensorgrad.core.args import numpy_names
from tensorgrad.core.engine import apply, binary, wrap

#: what ``max(dim)``, ``min(dim)``, ``sort`` and ``topk`` return, as PyTorch's return types
ValuesIndices = namedtuple("ValuesIndices", ["values", "indices"])


def _all_if_empty(dim: Any) -> Any:
    """PyTorch's reductions read ``dim=()`` (or ``[]``) as every dimension, as None."""
    return None if isinstance(dim, (tuple, list)) and not dim else dim


def _dims(dim: Any, ndim: int, name: str) -> Any:
    """A ``dim`` argument (None, an int or a sequence) checked against ``ndim``."""
    if dim is None:
        return None
    return ops.normalize_axes(dim, ndim, name) if not isinstance(dim, int) else dim


class MathMethods:
    """Pointwise math, arithmetic, comparisons, reductions and casts (mixed into Tensor)."""

    __slots__ = ()

    # ----------------------------------------------------------------- pointwise
    def exp(self) -> Any:
        return apply(ops.Exp(), _floating_input(self))

    def log(self) -> Any:
        return apply(ops.Log(), _floating_input(self))

    def log1p(self) -> Any:
        return apply(ops.Log1p(), _floating_input(self))

    def expm1(self) -> Any:
        return apply(ops.Expm1(), _floating_input(self))

    def log2(self) -> Any:
        return self.log() * (1 / math.log(2))

    def log10(self) -> Any:
        return self.log() * (1 / math.log(10))

    def sqrt(self) -> Any:
        return apply(ops.Sqrt(), _floating_input(self))

    def rsqrt(self) -> Any:
        return 1 / self.sqrt()

    def abs(self) -> Any:
        return apply(ops.Abs(), self)

    absolute = abs

    def neg(self) -> Any:
        return apply(ops.Neg(), self)

    negative = neg

    def sin(self) -> Any:
        return apply(ops.Sin(), _floating_input(self))

    def cos(self) -> Any:
        return apply(ops.Cos(), _floating_input(self))

    def tan(self) -> Any:
        return self.sin() / self.cos()

    def tanh(self) -> Any:
        return apply(ops.Tanh(), _floating_input(self))

    def sigmoid(self) -> Any:
        return apply(ops.Sigmoid(), _floating_input(self))

    def relu(self) -> Any:
        return apply(ops.Relu(), self)

    def leaky_relu(self, negative_slope: float = 0.01) -> Any:
        return apply(ops.LeakyRelu(negative_slope), self)

    def gelu(self, approximate: str = "none") -> Any:
        return apply(ops.Gelu(approximate), self)

    def square(self) -> Any:
        return self * self

    def reciprocal(self) -> Any:
        return 1 / self

    @numpy_names
    def softmax(self, dim: int = -1, dtype: Any = None) -> Any:
        x = _floating_input(self if dtype is None else self.to(dtype))
        return apply(ops.Softmax(dim), x)

    @numpy_names
    def log_softmax(self, dim: int = -1, dtype: Any = None) -> Any:
        x = _floating_input(self if dtype is None else self.to(dtype))
        return apply(ops.LogSoftmax(dim), x)

    def clamp(self, min: Any = None, max: Any = None) -> Any:
        """Clamp into ``[min, max]``; bounds are numbers or tensors (broadcast). The gradient
        passes where ``min <= x <= max``; a tensor bound gets it where it is the result."""
        low, high = _bound(min), _bound(max)
        if low is None and high is None:
            raise ValueError("clamp: at least one of min and max must be given")
        bounds = [_raw(b) for b in (low, high) if b is not None]
        dtype = array_backend.result_type(self._data, *bounds)  # PyTorch's: int with 2.5 is float32
        if dtype != self.dtype or any(getattr(b, "dtype", dtype) != dtype for b in bounds):
            x, low, high = (engine._cast(v, dtype) for v in (self, low, high))
            return apply(ops.Clip(), x, low, high)
        return apply(ops.Clip(), self, low, high)

    clip = clamp

    def clamp_min(self, min: Any) -> Any:
        return self.clamp(min=min)

    def clamp_max(self, max: Any) -> Any:
        return self.clamp(max=max)

    def pow(self, exponent: Any) -> Any:
        return self**exponent

    def maximum(self, other: Any) -> Any:
        return binary(ops.Maximum, self, other)

    def minimum(self, other: Any) -> Any:
        return binary(ops.Minimum, self, other)

    def where(self, condition: Any, other: Any) -> Any:
        """``self`` where ``condition`` holds, else ``other`` (PyTorch's ``x.where(c, y)``)."""
        return functions.where(condition, self, other)

    def masked_fill(self, mask: Any, value: Any) -> Any:
        """``value`` where ``mask`` (a bool tensor, broadcast) is True, else ``self``."""
        mask_array = mask._data if isinstance(mask, engine.Tensor) else np.asarray(mask)
        if mask_array.dtype != np.bool_:
            raise TypeError(f"masked_fill: mask must be a bool tensor, got {mask_array.dtype}")
        if isinstance(value, engine.Tensor) and value.ndim:
            raise RuntimeError(
                f"masked_fill: value must be a number or a 0-d tensor, got shape {value.shape}"
            )
        result = functions.where(mask_array, value, self)
        return result if result.dtype == self.dtype else result.to(self.dtype)

    # ----------------------------------------------------------------- arithmetic by name
    def add(self, other: Any, alpha: float = 1) -> Any:
        return self + (other if alpha == 1 else other * alpha)

    def sub(self, other: Any, alpha: float = 1) -> Any:
        if alpha != 1:  # other * alpha would make a bool a number that Sub no longer refuses
            ops.Sub.refuse_bools("sub", self, other)
        return self - (other if alpha == 1 else other * alpha)

    subtract = sub

    def mul(self, other: Any) -> Any:
        return self * other

    multiply = mul

    def div(self, other: Any, rounding_mode: str | None = None) -> Any:
        if rounding_mode is None:
            return self / other
        if rounding_mode not in ("trunc", "floor"):
            raise ValueError(
                f"div: rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}"
            )
        dtype = array_backend.result_type(self._data, _raw(other))
        check_integer_divisor("div", dtype, other)
        quotient = (self / other).detach()
        rounded = np.floor(quotient._data) if rounding_mode == "floor" else np.trunc(quotient._data)
        return wrap(rounded.astype(dtype))

    divide = true_divide = div

    def matmul(self, other: Any) -> Any:
        return self @ other

    def mm(self, mat2: Any) -> Any:
        """Matrix product of two 2-D tensors (no broadcasting, as PyTorch's ``mm``)."""
        _check_ndim("mm", self, 2, "self")
        _check_ndim("mm", mat2, 2, "mat2")
        return self @ mat2

    def bmm(self, mat2: Any) -> Any:
        """Batched matrix product of two 3-D tensors with the same batch size."""
        _check_ndim("bmm", self, 3, "self")
        _check_ndim("bmm", mat2, 3, "mat2")
        if self.shape[0] != mat2.shape[0]:
            raise RuntimeError(f"bmm: batch sizes differ: {self.shape} and {tuple(mat2.shape)}")
        return self @ mat2

    def dot(self, other: Any) -> Any:
        _check_ndim("dot", self, 1, "self")
        _check_ndim("dot", other, 1, "other")
        return self @ other

    # ----------------------------------------------------------------- comparisons
    def eq(self, other: Any) -> Any:
        return self == other

    def ne(self, other: Any) -> Any:
        return self != other

    def lt(self, other: Any) -> Any:
        return self < other

    def le(self, other: Any) -> Any:
        return self <= other

    def gt(self, other: Any) -> Any:
        return self > other

    def ge(self, other: Any) -> Any:
        return self >= other

    def isnan(self) -> Any:
        return wrap(np.isnan(self._data))

    def isinf(self) -> Any:
        return wrap(np.isinf(self._data))

    def isfinite(self) -> Any:
        return wrap(np.isfinite(self._data))

    def logical_not(self) -> Any:
        return wrap(np.logical_not(self._data))

    def logical_and(self, other: Any) -> Any:
        return wrap(np.logical_and(self._data, _raw(other)))

    def logical_or(self, other: Any) -> Any:
        return wrap(np.logical_or(self._data, _raw(other)))

    def logical_xor(self, other: Any) -> Any:
        return wrap(np.logical_xor(self._data, _raw(other)))

    def sign(self) -> Any:
        return wrap(np.sign(self._data))

    def floor(self) -> Any:
        return wrap(np.floor(self._data))

    def ceil(self) -> Any:
        return wrap(np.ceil(self._data))

    def round(self, decimals: int = 0) -> Any:
        return wrap(np.round(self._data, decimals))

    def trunc(self) -> Any:
        return wrap(np.trunc(self._data))

    def equal(self, other: Any) -> bool:
        """True when ``other`` has the same shape and elements (PyTorch's ``equal``)."""
        other_array = _raw(other)
        return bool(np.shape(other_array) == self.shape and np.array_equal(self._data, other_array))

    def allclose(
        self, other: Any, rtol: float = 1e-5, atol: float = 1e-8, equal_nan: bool = False
    ) -> bool:
        return bool(np.allclose(self._data, _raw(other), rtol, atol, equal_nan))

    def isclose(
        self, other: Any, rtol: float = 1e-5, atol: float = 1e-8, equal_nan: bool = False
    ) -> Any:
        """Elementwise ``|self − other| ≤ atol + rtol·|other|`` (a bool tensor, no gradient)."""
        return wrap(np.isclose(self._data, _raw(other), rtol, atol, equal_nan))

    def nonzero(self, *, as_tuple: bool = False) -> Any:
        """The indices of the nonzero elements: a (count, ndim) int64 tensor, or with
        ``as_tuple`` one 1-D tensor per dimension (a 0-d tensor counts as 1-D)."""
        if as_tuple:
            return tuple(wrap(i.astype(np.int64)) for i in np.nonzero(np.atleast_1d(self._data)))
        return wrap(np.argwhere(self._data).astype(np.int64))

    def outer(self, vec2: Any) -> Any:
        """The outer product of two 1-D tensors: ``self[i] · vec2[j]``."""
        other = engine.as_tensor(vec2)
        for name, t in (("self", self), ("vec2", other)):
            if t.ndim != 1:
                raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {t.ndim}-D")
        return self.reshape(-1, 1) * other.reshape(1, -1)

    def tril(self, diagonal: int = 0) -> Any:
        """The lower triangle of the last two dimensions (elements at or below the
        ``diagonal``-th diagonal), the rest 0."""
        return self.masked_fill(~_triangle(self, np.tril, "tril", diagonal), 0)

    def triu(self, diagonal: int = 0) -> Any:
        """The upper triangle of the last two dimensions, the rest 0."""
        return self.masked_fill(~_triangle(self, np.triu, "triu", diagonal), 0)

    # ----------------------------------------------------------------- reductions
    @numpy_names
    def sum(self, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Any:
        x = self if dtype is None else self.to(dtype)
        return apply(ops.Sum(_all_if_empty(dim), keepdim), x)

    @numpy_names
    def mean(self, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Any:
        x = self if dtype is None else self.to(dtype)
        _floating("mean", x)
        return apply(ops.Mean(_all_if_empty(dim), keepdim), x)

    @numpy_names
    def prod(self, dim: int | None = None, keepdim: bool = False, *, dtype: Any = None) -> Any:
        """The product of all elements, or over one dimension ``dim`` (an int, as PyTorch's);
        integers and bools multiply in int64 unless ``dtype`` says otherwise. The gradient
        is exact where elements are 0 (one zero: the product of the others; more: 0)."""
        if dim is not None and (not isinstance(dim, (int, np.integer)) or isinstance(dim, bool)):
            raise TypeError(f"prod: dim must be an int, got {dim!r}")
        x = self if dtype is None else self.to(dtype)
        if dtype is None and x.dtype.kind in "biu":
            x = x.astype(array_backend.int64)
        return apply(ops.Prod(dim, keepdim), x)

    @numpy_names
    def var(
        self,
        dim: Any = None,
        unbiased: bool | None = None,
        keepdim: bool = False,
        *,
        correction: int | None = None,
    ) -> Any:
        """Variance; ``correction=1`` (the default, as ``unbiased=True``) divides by N − 1."""
        _floating("var", self)
        correction = _correction(unbiased, correction)
        return apply(ops.Var(_all_if_empty(dim), keepdim, correction), self)

    @numpy_names
    def std(
        self,
        dim: Any = None,
        unbiased: bool | None = None,
        keepdim: bool = False,
        *,
        correction: int | None = None,
    ) -> Any:
        """Standard deviation; its gradient is 0 where it is 0 (a constant slice)."""
        _floating("std", self)
        correction = _correction(unbiased, correction)
        return apply(ops.Std(_all_if_empty(dim), keepdim, correction), self)

    @numpy_names
    def norm(self, p: Any = "fro", dim: Any = None, keepdim: bool = False) -> Any:
        """The vector p-norm over ``dim`` (all elements by default; ``"fro"`` is p = 2)."""
        _floating("norm", self)
        if p == "fro" or p is None:
            p = 2.0
        if isinstance(p, str):
            raise ValueError(f"norm: p must be a number or 'fro', got {p!r}")
        return apply(ops.Norm(p, _all_if_empty(dim), keepdim), self)

    @numpy_names
    def logsumexp(self, dim: Any = None, keepdim: bool = False) -> Any:
        return apply(ops.LogSumExp(dim, keepdim), _floating_input(self))

    @numpy_names
    def amax(self, dim: Any = None, keepdim: bool = False) -> Any:
        """The maximum over ``dim``; tied maxima share the gradient evenly."""
        return apply(ops.Max(_all_if_empty(dim), keepdim), self)

    @numpy_names
    def amin(self, dim: Any = None, keepdim: bool = False) -> Any:
        """The minimum over ``dim``; tied minima share the gradient evenly."""
        return apply(ops.Min(_all_if_empty(dim), keepdim), self)

    @numpy_names
    def max(self, dim: Any = None, keepdim: bool = False) -> Any:
        """PyTorch's three ``max``: of all elements (ties share the gradient); with ``dim``,
        ``(values, indices)`` (the gradient goes to the first maximum, at the index); with a
        tensor, the elementwise maximum."""
        if dim is None:
            return self.amax()
        if isinstance(dim, engine.Tensor):
            return self.maximum(dim)
        return self._select(np.argmax, dim, keepdim)

    @numpy_names
    def min(self, dim: Any = None, keepdim: bool = False) -> Any:
        """As :meth:`max`, for the minimum."""
        if dim is None:
            return self.amin()
        if isinstance(dim, engine.Tensor):
            return self.minimum(dim)
        return self._select(np.argmin, dim, keepdim)

    def _select(self, argfunction: Any, dim: int, keepdim: bool) -> Any:
        axis = ops.normalize_axis(dim, max(self.ndim, 1), argfunction.__name__[3:])
        if not self.ndim:
            return ValuesIndices(self, wrap(np.zeros((), np.int64)))
        if self.shape[axis] == 0:
            raise IndexError(
                f"{argfunction.__name__[3:]}: cannot reduce over dimension {axis} of size 0"
            )
        index = argfunction(self._data, axis=axis, keepdims=True)
        values = self.gather(axis, wrap(index))
        if not keepdim:
            values, index = values.squeeze(axis), np.squeeze(index, axis)
        return ValuesIndices(values, wrap(index))

    @numpy_names
    def argmax(self, dim: Any = None, keepdim: bool = False) -> Any:
        """Index of the maximum (int64, no gradient); of the flattened tensor without dim."""
        return _index_reduction(np.argmax, self, dim, keepdim)

    @numpy_names
    def argmin(self, dim: Any = None, keepdim: bool = False) -> Any:
        return _index_reduction(np.argmin, self, dim, keepdim)

    @numpy_names
    def any(self, dim: Any = None, keepdim: bool = False) -> Any:
        return wrap(np.any(self._data, axis=_dims(dim, self.ndim, "any"), keepdims=keepdim))

    @numpy_names
    def all(self, dim: Any = None, keepdim: bool = False) -> Any:
        return wrap(np.all(self._data, axis=_dims(dim, self.ndim, "all"), keepdims=keepdim))

    @numpy_names
    def cumsum(self, dim: int, *, dtype: Any = None) -> Any:
        x = self if dtype is None else self.to(dtype)
        return apply(ops.Cumsum(dim), x)

    @numpy_names
    def argsort(self, dim: int = -1, descending: bool = False, stable: bool = False) -> Any:
        axis = ops.normalize_axis(dim, max(self.ndim, 1), "argsort")
        data = self._data if self.ndim else self._data.reshape(1)
        order = np.argsort(_descending_key(data) if descending else data, axis=axis, kind="stable")
        return wrap(order.reshape(self.shape))

    @numpy_names
    def sort(self, dim: int = -1, descending: bool = False, stable: bool = False) -> Any:
        """``(values, indices)`` sorted along ``dim``; ties keep their order (stable)."""
        indices = self.argsort(dim, descending)
        if not self.ndim:
            return ValuesIndices(self, indices)
        return ValuesIndices(self.gather(dim, indices), indices)

    @numpy_names
    def topk(self, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> Any:
        """The ``k`` largest (or smallest) elements along ``dim``, and their indices."""
        axis = ops.normalize_axis(dim, max(self.ndim, 1), "topk")
        size = self.shape[axis] if self.ndim else 1
        if not 0 <= k <= size:
            raise RuntimeError(f"topk: k ({k}) is out of range for dimension {axis} of size {size}")
        indices = self.argsort(axis, descending=largest)
        if self.ndim:
            indices = indices[(slice(None),) * axis + (slice(0, k),)]
            return ValuesIndices(self.gather(axis, indices), indices)
        return ValuesIndices(self, indices)

    # ----------------------------------------------------------------- casts
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
        except TypeError as exc:
            raise engine.named_error("to", exc) from exc
        if dtype == self.dtype:
            return self
        if self.requires_grad and not array_backend.is_floating(dtype):
            return wrap(self._data.astype(dtype))
        return apply(ops.Cast(dtype), self)

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


# --------------------------------------------------------------------------- helpers
def _floating_input(x: Any) -> Any:
    """``x`` itself when floating; an integer or bool tensor in the default float dtype, in
    which PyTorch computes exp, log, sin, ... of it (NumPy would pick float64 or float16)."""
    return x if x.dtype.kind == "f" else x.astype(array_backend.DEFAULT_FLOAT)


def check_integer_divisor(name: str, dtype: np.dtype, divisor: Any) -> None:
    """PyTorch's error for an integer ``//`` or ``%`` by zero (NumPy gives 0 and a warning)."""
    if dtype.kind != "f" and np.any(np.asarray(_raw(divisor)) == 0):
        raise RuntimeError(f"{name}: ZeroDivisionError (integer division by zero)")


def _triangle(x: Any, keep: Any, name: str, diagonal: int) -> np.ndarray:
    """Where a triangle of ``x``'s last two dimensions is (``keep``: np.tril or np.triu)."""
    if x.ndim < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
    return keep(np.ones(x.shape[-2:], dtype=bool), diagonal)


def _raw(value: Any) -> Any:
    return value._data if isinstance(value, engine.Tensor) else value


def _bound(value: Any) -> Any:
    """A clamp bound: None, a tensor, or a number (kept as a weak Python scalar)."""
    if value is None or isinstance(value, engine.Tensor):
        return value
    if isinstance(value, np.ndarray):
        return value
    return array_backend.scalar_operand(value)


def _check_ndim(name: str, x: Any, ndim: int, what: str) -> None:
    shape = np.shape(_raw(x))
    if len(shape) != ndim:
        raise RuntimeError(f"{name}: {what} must be a {ndim}-D tensor, got shape {shape}")


def _floating(name: str, x: Any) -> None:
    if x.dtype.kind != "f":
        raise RuntimeError(
            f"{name}(): could not infer output dtype. Input dtype must be a floating point "
            f"dtype, got {x.dtype} (pass dtype=, or convert with .float())"
        )


def _correction(unbiased: bool | None, correction: int | None) -> int:
    if unbiased is not None and correction is not None:
        raise TypeError("var/std: pass unbiased or correction, not both")
    if correction is not None:
        return correction
    return 0 if unbiased is False else 1


def _descending_key(data: np.ndarray) -> np.ndarray:
    """A key whose ascending order is ``data``'s descending order, ties kept in place."""
    if data.dtype == np.bool_:
        return ~data
    if data.dtype.kind == "u":
        return np.iinfo(data.dtype).max - data
    return -data.astype(np.float64) if data.dtype.kind == "i" else -data


def _is_dtype_name(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        array_backend.as_dtype(value)
    except TypeError:
        return False
    return True


def _index_reduction(function: Any, x: Any, dim: Any, keepdim: bool) -> Any:
    name = function.__name__
    if dim is not None:
        dim = ops.normalize_axis(dim, max(x.ndim, 1), name)
    data = x._data
    if data.size == 0 and (dim is None or not data.ndim or data.shape[dim] == 0):
        raise IndexError(f"{name}: cannot take the {name[3:]} of an empty tensor")
    if dim is None and keepdim:
        return wrap(np.reshape(function(data), (1,) * data.ndim))
    return wrap(function(data, axis=dim if data.ndim else None, keepdims=keepdim))
