"""The Tensor's reductions, with PyTorch's names and semantics (``dim``/``keepdim``; NumPy's
``axis``/``keepdims`` accepted, see ``args.numpy_names``): sums, means, products, variance,
norms, maxima and minima (with their indices), truth reductions, the NaN-ignoring ones, and
the running reductions (``cumsum``, ``cumprod``, ``cummax``, ...).

Integers and bools sum and multiply in int64 unless ``dtype=`` says otherwise, as in
PyTorch; ``mean``, ``var``, ``std`` and ``norm`` need a floating tensor."""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from tensorgrad import array_backend, grad_mode, ops
from tensorgrad.core import engine, functions
from tensorgrad.core.args import numpy_names
from tensorgrad.core.engine import apply, wrap
from tensorgrad.core.methods.common import (
    ValuesIndices,
    no_bool_kernel,
    write_back,
)
from tensorgrad.ops.base import reduction_axes


class ReductionMethods:
    """Reductions, and the running ones: the scans (mixed into Tensor)."""

    __slots__ = ()

    @numpy_names
    def sum(self, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Any:
        x = _accumulated(self) if dtype is None else _reduction_input("sum", self, dtype, dim)
        return _in_dtype(apply(ops.Sum(_all_if_empty(dim), keepdim), x), dtype)

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
        x = _accumulated(self) if dtype is None else self.to(dtype)
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
        """Variance; ``correction=1`` (the default, as ``unbiased=True``) divides by N − 1.
        ``var(True)`` is ``var(unbiased=True)``, as in PyTorch."""
        if isinstance(dim, bool):
            dim, unbiased = None, dim
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
        if isinstance(dim, bool):
            dim, unbiased = None, dim
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
    def logsumexp(self, dim: Any, keepdim: bool = False) -> Any:
        """``log(sum(exp(x)))`` over ``dim`` (required, as in PyTorch), computed stably."""
        return apply(ops.LogSumExp(_all_if_empty(dim), keepdim), self)

    @numpy_names
    def amax(self, dim: Any = None, keepdim: bool = False) -> Any:
        """The maximum over ``dim``; tied maxima share the gradient evenly."""
        _nonempty_dims("amax", self, dim)
        return apply(ops.Max(_all_if_empty(dim), keepdim), self)

    @numpy_names
    def amin(self, dim: Any = None, keepdim: bool = False) -> Any:
        """The minimum over ``dim``; tied minima share the gradient evenly."""
        _nonempty_dims("amin", self, dim)
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

    @engine.reads_values
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

    @engine.reads_values
    @numpy_names
    def argmax(self, dim: Any = None, keepdim: bool = False) -> Any:
        """Index of the maximum (int64, no gradient); of the flattened tensor without dim."""
        return _index_reduction(
            np.argmax, no_bool_kernel("argmax", self, RuntimeError), dim, keepdim
        )

    @engine.reads_values
    @numpy_names
    def argmin(self, dim: Any = None, keepdim: bool = False) -> Any:
        return _index_reduction(
            np.argmin, no_bool_kernel("argmin", self, RuntimeError), dim, keepdim
        )

    @engine.reads_values
    @numpy_names
    def any(self, dim: Any = None, keepdim: bool = False) -> Any:
        """Whether any element is nonzero: bool, but uint8 for a uint8 tensor (PyTorch's
        legacy rule, from when masks were uint8)."""
        found = np.any(self._data, axis=_dims(dim, self.ndim, "any"), keepdims=keepdim)
        return wrap(_truth_values(self, found))

    @engine.reads_values
    @numpy_names
    def all(self, dim: Any = None, keepdim: bool = False) -> Any:
        """Whether every element is nonzero (uint8 for a uint8 tensor, as :meth:`any`)."""
        found = np.all(self._data, axis=_dims(dim, self.ndim, "all"), keepdims=keepdim)
        return wrap(_truth_values(self, found))

    @numpy_names
    def cumsum(self, dim: int, *, dtype: Any = None) -> Any:
        x = _accumulated(self) if dtype is None else _reduction_input("cumsum", self, dtype, dim)
        return _in_dtype(apply(ops.Cumsum(dim), x), dtype)

    @numpy_names
    def cumprod(self, dim: int, *, dtype: Any = None) -> Any:
        """Running products along ``dim``; exact gradients also where elements are 0."""
        x = _accumulated(self) if dtype is None else self.to(dtype)
        return apply(ops.Cumprod(dim), x)

    def cumsum_(self, dim: int, *, dtype: Any = None) -> Any:
        if self.dtype == np.bool_ and _bool_scan_is_identity(self, "cumsum"):
            return self
        return write_back(self, "cumsum_", lambda x: x.cumsum(dim, dtype=dtype))

    def cumprod_(self, dim: int, *, dtype: Any = None) -> Any:
        if self.dtype == np.bool_ and _bool_scan_is_identity(self, "cumprod"):
            return self
        return write_back(self, "cumprod_", lambda x: x.cumprod(dim, dtype=dtype))

    @numpy_names
    def logcumsumexp(self, dim: int) -> Any:
        return apply(ops.LogCumSumExp(dim), self)

    @numpy_names
    def cummax(self, dim: int) -> Any:
        """``(values, indices)``: the running maximum along ``dim`` and where it was taken
        (the latest of tied maxima; a NaN, once seen, stays the maximum)."""
        return _running_extreme(self, dim, np.maximum, np.greater_equal, "cummax")

    @numpy_names
    def cummin(self, dim: int) -> Any:
        """As :meth:`cummax`, for the running minimum."""
        return _running_extreme(self, dim, np.minimum, np.less_equal, "cummin")

    @numpy_names
    def aminmax(self, *, dim: Any = None, keepdim: bool = False) -> Any:
        return MinMax(self.amin(dim, keepdim), self.amax(dim, keepdim))

    @engine.reads_values
    @numpy_names
    def count_nonzero(self, dim: Any = None) -> Any:
        axes = None if dim is None else ops.normalize_axes(dim, max(self.ndim, 1), "count_nonzero")
        data = self._data
        if not data.ndim:
            return wrap(np.array(int(data != 0), dtype=np.int64))
        return wrap(np.asarray(np.count_nonzero(data, axis=axes), dtype=np.int64))

    @engine.reads_values
    @numpy_names
    def nansum(self, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Any:
        """The sum with NaN counted as 0 (the gradient at a NaN is 0)."""
        x = self if dtype is None else self.to(dtype)
        if x.dtype.kind == "f":
            x = functions.where(np.isnan(x._data), 0.0, x)
        return x.sum(dim, keepdim)  # integers and bools: in int64, as sum does

    @engine.reads_values
    @numpy_names
    def nanmean(self, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Any:
        """The mean of the elements that are not NaN."""
        x = self if dtype is None else self.to(dtype)
        _floating("nanmean", x)
        present = wrap((~np.isnan(x._data)).astype(x.dtype))
        return x.nansum(dim, keepdim) / present.sum(dim, keepdim)


def _all_if_empty(dim: Any) -> Any:
    """PyTorch's reductions read ``dim=()`` (or ``[]``) as every dimension, as None."""
    return None if isinstance(dim, (tuple, list)) and not dim else dim


def _dims(dim: Any, ndim: int, name: str) -> Any:
    """A ``dim`` argument (None, an int or a sequence) checked against ``ndim``; a 0-d
    tensor takes 0 or -1 (or a tuple of them), as in PyTorch."""
    if dim is None:
        return None
    if not ndim:
        ops.normalize_axes(dim, 1, name)
        return None
    return ops.normalize_axes(dim, ndim, name) if not isinstance(dim, int) else dim


def _truth_values(x: Any, found: Any) -> np.ndarray:
    """``any``/``all``'s result: bool, uint8 for a uint8 ``x`` (PyTorch's legacy masks)."""
    return np.asarray(found, np.uint8 if x.dtype == np.uint8 else np.bool_)


def _accumulated(x: Any) -> Any:
    """``x`` in the dtype that a sum or product without ``dtype=`` accumulates in: int64 for
    bool and integer tensors, PyTorch's rule for ``sum``, ``prod``, ``cumsum``, ``cumprod``,
    ``nansum`` and ``trace`` (NumPy would sum uint8 in uint64)."""
    return x.long() if x.dtype.kind in "biu" and x.dtype != np.int64 else x


def _reduction_input(name: str, x: Any, dtype: Any, dim: Any) -> Any:
    """``x`` in a reduction's ``dtype=``; PyTorch refuses an integer one for a tensor that
    requires grad (the gradient would have nowhere to go)."""
    target = array_backend.as_dtype(dtype)
    if dim is not None:  # PyTorch checks the dims first
        reduction_axes(_all_if_empty(dim), x.ndim, name)
    if x.requires_grad and grad_mode.is_grad_enabled() and not array_backend.is_floating(target):
        raise RuntimeError(f"{name}: autograd does not support dtype {target} (x requires grad)")
    return x.to(target)


def _in_dtype(result: Any, dtype: Any) -> Any:
    """A reduction's result in the ``dtype=`` asked for: NumPy sums small integers in int64."""
    return (
        result
        if dtype is None or result.dtype == array_backend.as_dtype(dtype)
        else result.to(dtype)
    )


def _nonempty_dims(name: str, x: Any, dim: Any) -> None:
    """PyTorch's IndexError for a maximum or minimum over a dimension of size 0 (over all
    of an empty tensor it is a RuntimeError, from the op)."""
    dim = _all_if_empty(dim)
    if dim is None or x.numel() or not x.ndim:
        return
    for d in (dim,) if isinstance(dim, int) else dim:
        if isinstance(d, int) and -x.ndim <= d < x.ndim and x.shape[d] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size")


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


MinMax = namedtuple("MinMax", ["min", "max"])


@engine.reads_values
def _running_extreme(x: Any, dim: int, extreme: Any, better: Any, name: str) -> Any:
    axis = ops.normalize_axis(dim, max(x.ndim, 1), name)
    if not x.ndim:
        return ValuesIndices(x.clone(), wrap(np.zeros((), np.int64)))
    data = x._data
    running = extreme.accumulate(data, axis=axis) if data.size else data.copy()
    positions = np.arange(data.shape[axis]).reshape(
        [-1 if d == axis else 1 for d in range(data.ndim)]
    )
    if data.dtype.kind == "f":
        wins = np.isnan(data) | (~np.isnan(running) & better(data, running))
    else:
        wins = better(data, running)
    candidates = np.where(wins, positions, 0)
    indices = np.maximum.accumulate(candidates, axis=axis) if data.size else candidates
    indices = indices.astype(np.int64)
    return ValuesIndices(x.gather(axis, indices), wrap(indices))


def _bool_scan_is_identity(x: Any, name: str) -> bool:
    """An in-place running sum or product of bools: PyTorch returns a 0-d or empty tensor as
    it is, and has no kernel for the others (its error)."""
    if x.ndim and x.numel():
        raise NotImplementedError(f"{name}_: not implemented for 'Bool' (an in-place scan)")
    return True
