"""The Tensor's comparisons by name (``eq``, ``lt``, ...), tests of values (``isnan``,
``isclose``, ``equal``, ...), logical and bitwise ops, and choosing elements by a condition
(``where``, ``masked_fill``). Their results are bool tensors without gradient, except
``where`` and ``masked_fill``, whose gradient flows to the elements chosen."""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorgrad import array_backend
from tensorgrad.core import engine, functions
from tensorgrad.core.engine import wrap
from tensorgrad.core.methods.common import _copy_back, _raw, _tensor_argument
from tensorgrad.core.product_dtypes import check_same_dtype


class ComparisonMethods:
    """Comparisons, value tests, logic, bitwise ops and choosing by a mask (mixed into Tensor)."""

    __slots__ = ()

    def where(self, condition: Any, other: Any) -> Any:
        """``self`` where ``condition`` holds, else ``other`` (PyTorch's ``x.where(c, y)``)."""
        return functions.where(condition, self, other)

    def masked_fill(self, mask: Any, value: Any) -> Any:
        """``value`` where ``mask`` (a bool tensor, broadcast) is True, else ``self``."""
        mask_array = mask._data if isinstance(mask, engine.Tensor) else np.asarray(mask)
        if mask_array.dtype != np.bool_:
            raise array_backend.DtypeError(
                f"masked_fill: mask must be a bool tensor, got {mask_array.dtype}"
            )
        if isinstance(value, engine.Tensor) and value.ndim:
            raise RuntimeError(
                f"masked_fill: value must be a number or a 0-d tensor, got shape {value.shape}"
            )
        result = functions.where(mask_array, value, self)
        return result if result.dtype == self.dtype else result.to(self.dtype)

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

    @engine.reads_values
    def isnan(self) -> Any:
        return wrap(np.isnan(self._data))

    @engine.reads_values
    def isinf(self) -> Any:
        return wrap(np.isinf(self._data))

    @engine.reads_values
    def isfinite(self) -> Any:
        return wrap(np.isfinite(self._data))

    @engine.reads_values
    def logical_not(self) -> Any:
        return wrap(np.logical_not(self._data))

    def logical_and(self, other: Any) -> Any:
        return _logical(np.logical_and, self, other)

    def logical_or(self, other: Any) -> Any:
        return _logical(np.logical_or, self, other)

    def logical_xor(self, other: Any) -> Any:
        return _logical(np.logical_xor, self, other)

    @engine.reads_values
    def equal(self, other: Any) -> bool:
        """True when ``other`` has the same shape and elements (PyTorch's ``equal``)."""
        other_array = _raw(_tensor_argument("equal", other))
        return bool(np.shape(other_array) == self.shape and np.array_equal(self._data, other_array))

    @engine.reads_values
    def allclose(
        self, other: Any, rtol: float = 1e-5, atol: float = 1e-8, equal_nan: bool = False
    ) -> bool:
        check_same_dtype("allclose", ("self", self), ("other", _tensor_argument("allclose", other)))
        try:
            return bool(np.allclose(self._data, _raw(other), rtol, atol, equal_nan))
        except ValueError as exc:  # a failed broadcast
            raise engine.named_error("allclose", exc) from exc

    @engine.reads_values
    def isclose(
        self, other: Any, rtol: float = 1e-5, atol: float = 1e-8, equal_nan: bool = False
    ) -> Any:
        """Elementwise ``|self − other| ≤ atol + rtol·|other|`` (a bool tensor, no gradient)."""
        check_same_dtype("isclose", ("self", self), ("other", _tensor_argument("isclose", other)))
        try:
            return wrap(np.isclose(self._data, _raw(other), rtol, atol, equal_nan))
        except ValueError as exc:
            raise engine.named_error("isclose", exc) from exc

    @engine.reads_values
    def signbit(self) -> Any:
        return wrap(np.signbit(self._data))

    @engine.reads_values
    def isposinf(self) -> Any:
        return wrap(np.isposinf(self._data))

    @engine.reads_values
    def isneginf(self) -> Any:
        return wrap(np.isneginf(self._data))

    def isreal(self) -> Any:
        return wrap(np.ones(self.shape, dtype=bool))

    def bitwise_and(self, other: Any) -> Any:
        return _bitwise(np.bitwise_and, "bitwise_and", self, other)

    def bitwise_or(self, other: Any) -> Any:
        return _bitwise(np.bitwise_or, "bitwise_or", self, other)

    def bitwise_xor(self, other: Any) -> Any:
        return _bitwise(np.bitwise_xor, "bitwise_xor", self, other)

    def bitwise_left_shift(self, other: Any) -> Any:
        return _bitwise(np.left_shift, "bitwise_left_shift", self, other)

    def bitwise_right_shift(self, other: Any) -> Any:
        return _bitwise(np.right_shift, "bitwise_right_shift", self, other)

    @engine.reads_values
    def bitwise_not(self) -> Any:
        if self.dtype.kind not in "biu":
            raise NotImplementedError(f'"bitwise_not_cpu" not implemented for {self.dtype}')
        return wrap(np.invert(self._data))

    bitwise_and_, bitwise_or_ = _copy_back("bitwise_and"), _copy_back("bitwise_or")
    bitwise_xor_, bitwise_not_ = _copy_back("bitwise_xor"), _copy_back("bitwise_not")
    bitwise_left_shift_ = _copy_back("bitwise_left_shift")
    bitwise_right_shift_ = _copy_back("bitwise_right_shift")


def _logical(ufunc: Any, x: Any, other: Any) -> Any:
    """``logical_and``/``or``/``xor``: a bool tensor, PyTorch's errors for bad operands."""
    other_operand = _tensor_argument(ufunc.__name__, other)
    other = _raw(other_operand)
    try:
        if engine.state.vmapping:  # inside vmap: the batch axes lined up (core.batching)
            out = engine.batched_values(ufunc, (x, other_operand), (x._data, other))
            if out is not None:
                return out
        return wrap(ufunc(x._data, other))
    except (ValueError, TypeError) as exc:  # a failed broadcast: PyTorch's RuntimeError
        raise engine.named_error(ufunc.__name__, exc) from exc


@engine.reads_values
def _bitwise(ufunc: Any, name: str, x: Any, y: Any) -> Any:
    other = _raw(engine.operand(y))
    dtype = array_backend.result_type(x._data, other)
    if dtype.kind not in "biu":
        raise NotImplementedError(f'"{name}_cpu" not implemented for {dtype}')
    if name.endswith("shift") and dtype == np.bool_:
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for 'Bool'")
    return wrap(np.asarray(ufunc(x._data.astype(dtype, copy=False), np.asarray(other, dtype))))
