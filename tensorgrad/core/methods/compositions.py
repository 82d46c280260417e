"""More of PyTorch's Tensor methods, each a composition of the others (no op of its own):
comparison aliases (``greater``, ``less_equal``, ...), ``adjoint``, ``positive``, ``ger``,
``addcmul``/``addcdiv``, ``select``, ``diff``, ``dist``, ``sum_to_size`` and the dtype and
conjugation queries a real-valued framework answers trivially (``is_complex``, ``conj``).

Composed into ``MathMethods`` (``core/math_methods.py``) with the other families.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorgrad import array_backend, ops
from tensorgrad.core import engine
from tensorgrad.core.methods.common import _copy_back, write_back


class CompositionMethods:
    """Compositions of other Tensor methods, under PyTorch's names (mixed into Tensor)."""

    __slots__ = ()

    # ----------------------------------------------------------------- aliases
    def greater(self, other: Any) -> Any:
        return self.gt(other)

    def greater_equal(self, other: Any) -> Any:
        return self.ge(other)

    def less(self, other: Any) -> Any:
        return self.lt(other)

    def less_equal(self, other: Any) -> Any:
        return self.le(other)

    def not_equal(self, other: Any) -> Any:
        return self.ne(other)

    def ger(self, vec2: Any) -> Any:
        """PyTorch's old name of :meth:`outer`."""
        return self.outer(vec2)

    def absolute_(self) -> Any:
        return self.abs_()

    def negative_(self) -> Any:
        return self.neg_()

    def multiply_(self, other: Any) -> Any:
        return self.mul_(other)

    def divide_(self, other: Any, *, rounding_mode: str | None = None) -> Any:
        if rounding_mode is None:
            return self.div_(other)
        return write_back(self, "divide_", lambda x: x.div(other, rounding_mode=rounding_mode))

    def true_divide_(self, other: Any) -> Any:
        return self.div_(other)

    def subtract_(self, other: Any, *, alpha: Any = 1) -> Any:
        return self.sub_(other, alpha=alpha)

    # the in-place forms PyTorch has of pointwise functions, comparisons and scans: each the
    # function's result written back (computed from a copy; see ``write_back``)
    cos_, sin_, tan_ = _copy_back("cos"), _copy_back("sin"), _copy_back("tan")
    floor_, ceil_, round_, trunc_ = (_copy_back(n) for n in ("floor", "ceil", "round", "trunc"))
    sign_, square_, rsqrt_ = _copy_back("sign"), _copy_back("square"), _copy_back("rsqrt")
    reciprocal_, expm1_ = _copy_back("reciprocal"), _copy_back("expm1")
    log10_, log1p_, log2_ = _copy_back("log10"), _copy_back("log1p"), _copy_back("log2")
    polygamma_ = _copy_back("polygamma")
    tril_, triu_ = _copy_back("tril"), _copy_back("triu")
    clamp_min_, clamp_max_ = _copy_back("clamp_min"), _copy_back("clamp_max")
    logical_and_, logical_or_ = _copy_back("logical_and"), _copy_back("logical_or")
    logical_xor_, logical_not_ = _copy_back("logical_xor"), _copy_back("logical_not")
    eq_, ne_, lt_ = _copy_back("eq"), _copy_back("ne"), _copy_back("lt")
    le_, gt_, ge_ = _copy_back("le"), _copy_back("gt"), _copy_back("ge")
    greater_, greater_equal_ = _copy_back("gt"), _copy_back("ge")
    less_, less_equal_, not_equal_ = _copy_back("lt"), _copy_back("le"), _copy_back("ne")

    # ----------------------------------------------------------------- compositions
    def positive(self) -> Any:
        """``+x``: the tensor itself (PyTorch returns the same tensor); refused for bools."""
        if self.dtype == np.bool_:
            raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
        return self

    def adjoint(self) -> Any:
        """The conjugate transpose of the last two dimensions: for real tensors, ``mT``
        (a 0-d tensor is its own adjoint, as in PyTorch, which deprecates it)."""
        if self.ndim == 0:
            return self
        if self.ndim == 1:
            raise RuntimeError(
                "tensor.adjoint() is only supported on matrices or batches of matrices. "
                "Got 1-D tensor."
            )
        return self.transpose(-2, -1)

    def is_nonzero(self) -> bool:
        """Whether the one element is nonzero (a tensor of other sizes is ambiguous)."""
        if self.numel() == 0:
            raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
        if self.numel() > 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self._data.reshape(()))

    def addcmul(self, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Any:
        """``self + value · tensor1 · tensor2`` (the optimizers' update), in the three's
        promoted dtype (a float32 product added to float64 would round first)."""
        t1, t2 = _empty_result_shape(self, *_promoted_with(self, tensor1, tensor2))
        product = t1 * t2
        if product.dtype == np.bool_ or self.dtype == np.bool_:
            raise NotImplementedError('"addcmul" not implemented for bool tensors')
        return self + product * value if value != 1 else self + product

    def addcdiv(self, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Any:
        """``self + value · tensor1 / tensor2``; integer tensors are refused (PyTorch no
        longer divides them here)."""
        t1, t2 = engine.as_tensor(tensor1), engine.as_tensor(tensor2)
        if t1.dtype.kind in "biu" and t2.dtype.kind in "biu":
            raise RuntimeError(
                "Integer division with addcdiv is no longer supported; convert tensor1 or "
                "tensor2 to a floating dtype"
            )
        t1, t2 = _empty_result_shape(self, t1, t2)
        quotient = t1 / t2
        return self + quotient * value if value != 1 else self + quotient

    def addcmul_(self, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Any:
        return write_back(self, "addcmul_", lambda x: x.addcmul(tensor1, tensor2, value=value))

    def addcdiv_(self, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Any:
        return write_back(self, "addcdiv_", lambda x: x.addcdiv(tensor1, tensor2, value=value))

    def select(self, dim: int, index: int) -> Any:
        """The slice at ``index`` along ``dim`` (that dimension removed): ``x[:, index]``."""
        if self.ndim == 0:
            raise IndexError("select() cannot be applied to a 0-dim tensor.")
        axis = dim + self.ndim if dim < 0 else dim
        if not 0 <= axis < self.ndim:
            raise IndexError(
                f"Dimension out of range (expected to be in range of [{-self.ndim}, "
                f"{self.ndim - 1}], but got {dim})"
            )
        size = self.shape[axis]
        if not -size <= index < size:
            raise IndexError(
                f"select(): index {index} out of range for tensor of size {list(self.shape)} "
                f"at dimension {dim}"
            )
        return self[(slice(None),) * axis + (index,)]

    def diff(self, n: int = 1, dim: int = -1, prepend: Any = None, append: Any = None) -> Any:
        """The ``n``-th forward difference along ``dim`` (``prepend``/``append`` joined to
        the ends first); for bools, whether neighbours differ."""
        if self.ndim == 0:
            raise RuntimeError("diff expects input to be at least one-dimensional")
        parts = [engine.as_tensor(p) for p in (prepend,) if p is not None]
        parts += [self] + [engine.as_tensor(a) for a in (append,) if a is not None]
        x = self
        if len(parts) > 1:
            dtype = array_backend.result_type(*(p._data for p in parts))
            x = engine.apply(ops.Concatenate(dim), *(p.to(dtype) for p in parts))
        for _ in range(n):
            count = max(x.shape[dim] - 1, 0)
            later, earlier = x.narrow(dim, min(1, x.shape[dim]), count), x.narrow(dim, 0, count)
            x = later.logical_xor(earlier) if x.dtype == np.bool_ else later - earlier
        return x

    def dist(self, other: Any, p: float = 2) -> Any:
        """``‖self − other‖_p`` over all elements (broadcast)."""
        return (self - other).norm(p)

    def sum_to_size(self, *size: Any) -> Any:
        """Summed down to ``size``, a shape ``self`` broadcasts from (the reverse of
        ``expand``)."""
        if not size:
            raise TypeError('sum_to_size() missing 1 required positional arguments: "size"')
        shape = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
        try:
            np.broadcast_shapes(tuple(shape), self.shape)
            expandable = np.broadcast_shapes(tuple(shape), self.shape) == self.shape
        except ValueError:
            expandable = False
        if not expandable:
            raise RuntimeError(
                f"size {{{list(shape)}}} is not expandable to size {{{list(self.shape)}}}."
            )
        lead = self.ndim - len(shape)
        dims = tuple(range(lead)) + tuple(
            lead + i for i, n in enumerate(shape) if n == 1 and self.shape[lead + i] != 1
        )
        if not shape:  # PyTorch sums a 0-d tensor to () all the same: its ints become int64
            return self.sum()
        out = self.sum(dims, keepdim=True) if dims else self
        return out.reshape(shape)

    # ----------------------------------------------------------------- queries
    def is_signed(self) -> bool:
        return self.dtype not in (np.bool_, np.uint8)

    def is_complex(self) -> bool:
        return False  # tensorgrad's dtypes are real

    def is_conj(self) -> bool:
        return False

    def is_neg(self) -> bool:
        return False

    def is_same_size(self, other: Any) -> bool:
        return tuple(self.shape) == tuple(engine.as_tensor(other).shape)

    def conj(self) -> Any:
        """The complex conjugate: a real tensor itself."""
        return self

    def resolve_conj(self) -> Any:
        return self

    def resolve_neg(self) -> Any:
        return self


def _empty_result_shape(x: Any, *others: Any) -> list:
    """``others`` expanded to the empty shape they broadcast to with ``x``: PyTorch's fused
    addcmul/addcdiv sum their gradients over the (empty) result, so an infinite factor
    gets 0, where the composition's ``0 · inf`` would give NaN. Otherwise as they are."""
    try:
        shape = np.broadcast_shapes(x.shape, *(o.shape for o in others))
    except ValueError:  # the ops that follow raise it, with PyTorch's error type
        return list(others)
    if 0 not in shape:
        return list(others)
    return [o if o.shape == shape else o.expand(shape) for o in others]


def _promoted_with(x: Any, *others: Any) -> list:
    """``others`` as tensors in the dtype ``x`` and they promote to (cast only where one
    differs, so the optimizers' same-dtype calls pay nothing)."""
    tensors = [engine.as_tensor(o) for o in others]
    dtype = array_backend.result_type(x._data, *(t._data for t in tensors))
    return [t if t.dtype == dtype else t.to(dtype) for t in tensors]
