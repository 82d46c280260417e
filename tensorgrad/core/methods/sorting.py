"""The Tensor's sorting and selection by order: ``sort``, ``argsort``, ``topk``, the order
statistics (``median``, ``kthvalue``), distinct values (``unique``, ``unique_consecutive``),
``bincount`` and ``nonzero``. Indices are int64 and carry no gradient; the values chosen
carry it, by a gather."""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorgrad import ops
from tensorgrad.core import engine, functions
from tensorgrad.core.args import numpy_names
from tensorgrad.core.engine import apply, wrap
from tensorgrad.core.methods.common import ValuesIndices, no_bool_kernel


class SortingMethods:
    """Sorting, order statistics, distinct values and counting (mixed into Tensor)."""

    __slots__ = ()

    @engine.reads_values
    def nonzero(self, *, as_tuple: bool = False) -> Any:
        """The indices of the nonzero elements: a (count, ndim) int64 tensor, or with
        ``as_tuple`` one 1-D tensor per dimension (a 0-d tensor counts as 1-D)."""
        if as_tuple:
            return tuple(wrap(i.astype(np.int64)) for i in np.nonzero(np.atleast_1d(self._data)))
        return wrap(np.argwhere(self._data).astype(np.int64))

    @engine.reads_values
    @numpy_names
    def argsort(self, dim: int = -1, descending: bool = False, stable: bool = False) -> Any:
        axis = ops.normalize_axis(dim, max(self.ndim, 1), "argsort")
        data = self._data if self.ndim else self._data.reshape(1)
        if descending and data.dtype.kind == "f" and np.isnan(data).any():
            # PyTorch orders NaN as the largest value: first when descending
            order = np.lexsort((_descending_key(data), ~np.isnan(data)), axis=axis)
        else:
            key = _descending_key(data) if descending else data
            order = np.argsort(key, axis=axis, kind="stable")
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
        no_bool_kernel("topk", self, RuntimeError)
        size = self.shape[axis] if self.ndim else 1
        if not 0 <= k <= size:
            raise RuntimeError(f"topk: k ({k}) is out of range for dimension {axis} of size {size}")
        indices = self.argsort(axis, descending=largest)
        if self.ndim:
            indices = indices[(slice(None),) * axis + (slice(0, k),)]
            return ValuesIndices(self.gather(axis, indices), indices)
        return ValuesIndices(self, indices)

    def msort(self) -> Any:
        """The values sorted along dimension 0 (``sort(dim=0).values``)."""
        return self.sort(0).values

    @engine.reads_values
    def unique(
        self,
        sorted: bool = True,
        return_inverse: bool = False,
        return_counts: bool = False,
        dim: int | None = None,
    ) -> Any:
        """The distinct elements (``dim=None``, flattened) or distinct slices along ``dim``,
        sorted; with ``return_inverse`` also where each element (slice) went, with
        ``return_counts`` how often each occurs. NaNs are not merged, as in PyTorch. The result
        is sorted for ``sorted=False`` too, which PyTorch allows. No gradient."""
        data = self._data
        if dim is None:
            values, inverse, counts = np.unique(
                data.reshape(-1), return_inverse=True, return_counts=True, equal_nan=False
            )
            inverse = inverse.reshape(self.shape)
        else:
            axis = ops.normalize_axis(dim, max(self.ndim, 1), "unique")
            data = data.reshape(1) if not self.ndim else data
            if data.size == 0 and data.shape[axis] != 0:
                raise RuntimeError(
                    "unique: There are 0 sized dimensions, and they aren't selected, so unique "
                    f"cannot be applied (shape {self.shape}, dim {dim})"
                )
            if data.shape[axis] == 0:
                values = data
                inverse = counts = np.zeros(0, dtype=np.int64)
            else:
                values, inverse, counts = np.unique(
                    data, return_inverse=True, return_counts=True, axis=axis
                )
                inverse = inverse.reshape(-1)
        return _unique_result(values, inverse, counts, return_inverse, return_counts)

    @engine.reads_values
    def unique_consecutive(
        self, return_inverse: bool = False, return_counts: bool = False, dim: int | None = None
    ) -> Any:
        """Collapse each run of equal consecutive elements (or slices along ``dim``) to one,
        as ``uniq`` does; ``return_inverse``/``return_counts`` as in :meth:`unique`."""
        if dim is None:
            data = self._data.reshape(-1)
            changes = data[1:] != data[:-1]
        else:
            axis = ops.normalize_axis(dim, max(self.ndim, 1), "unique_consecutive")
            data = np.moveaxis(self._data.reshape(1) if not self.ndim else self._data, axis, 0)
            changes = np.any((data[1:] != data[:-1]).reshape(max(len(data) - 1, 0), -1), axis=1)
        starts = np.concatenate([[True], changes]) if len(data) else np.zeros(0, dtype=bool)
        values = data[starts]
        inverse = np.cumsum(starts) - 1
        counts = np.diff(np.append(np.flatnonzero(starts), len(data)))
        if dim is None:
            inverse = inverse.reshape(self.shape)
        else:
            values = np.moveaxis(values, 0, axis)
        return _unique_result(values, inverse, counts, return_inverse, return_counts)

    @engine.reads_values
    def bincount(self, weights: Any = None, minlength: int = 0) -> Any:
        """How often each value of this 1-D tensor of non-negative integers occurs: int64
        counts in ``max + 1`` bins, or ``minlength`` if that is more. With ``weights`` (one
        per element) each bin holds the sum of its elements' weights instead, float32 for
        float32 weights and float64 for any other. PyTorch's rules throughout, also where
        they surprise: an empty input gives ``minlength`` int64 zeros even with weights, and
        weights that require grad give a result that requires grad, whose backward refuses
        (PyTorch defines no derivative; ``scatter_add`` is the differentiable way)."""
        if isinstance(minlength, bool) or not isinstance(minlength, (int, np.integer)):
            raise TypeError(
                f"bincount(): argument 'minlength' must be int, not {type(minlength).__name__}"
            )
        if self.dtype.kind not in "iu":
            raise NotImplementedError(
                f'"bincount" not implemented for {self.dtype} tensors: it counts non-negative '
                "integers (convert with .long())"
            )
        if minlength < 0:
            raise RuntimeError(f"bincount: minlength should be >= 0, got {minlength}")
        if self.shape == (0,):
            return wrap(np.zeros(int(minlength), dtype=np.int64))
        if self.ndim != 1:
            raise RuntimeError(
                "bincount only supports 1-d non-negative integral inputs: got a tensor of "
                f"{self.ndim} dimensions (shape {self.shape})"
            )
        smallest = self._data.min()
        if smallest < 0:
            raise RuntimeError(
                "bincount only supports 1-d non-negative integral inputs: got the negative "
                f"value {smallest}"
            )
        op = ops.Bincount(int(minlength))
        if weights is None:
            return apply(op, self)
        weights = engine.as_tensor(weights)
        if weights.shape != self.shape:
            raise RuntimeError(
                "bincount: weights should be 1-d and have the same length as input: got "
                f"weights of shape {weights.shape} for an input of shape {self.shape}"
            )
        return apply(op, self, weights)

    @engine.reads_values
    @numpy_names
    def median(self, dim: Any = None, keepdim: bool = False) -> Any:
        """The lower median (of all elements, or ``(values, indices)`` along ``dim``); NaN
        if a NaN is present. Without ``dim``, tied medians share the gradient evenly."""
        no_bool_kernel("median", self)
        if dim is None:
            data = self._data.reshape(-1)
            if not data.size:
                if self.dtype.kind != "f":
                    _empty_reduction("median")
                return self.sum() * np.nan  # (recorded: an empty gradient, as PyTorch's)
            order = _nan_last_order(data)
            picked = data[order[(data.size - 1) // 2]] if not np.isnan(data).any() else np.nan
            mask = np.isnan(data) if np.isnan(picked) else data == picked
            flat = self.reshape(-1)
            return functions.where(mask, flat, _lowest(self.dtype)).amax()
        return _kth(self, dim, keepdim, None, "median")

    @numpy_names
    def kthvalue(self, k: int, dim: int = -1, keepdim: bool = False) -> Any:
        """``(values, indices)`` of the k-th smallest element along ``dim`` (k counts from 1)."""
        no_bool_kernel("kthvalue", self)
        return _kth(self, dim, keepdim, k, "kthvalue")


def _unique_result(values, inverse, counts, return_inverse: bool, return_counts: bool) -> Any:
    """``unique``'s result: the values alone, or a tuple with the inverse and/or the counts
    (int64, as PyTorch's)."""
    result = [wrap(np.ascontiguousarray(values))]
    if return_inverse:
        result.append(wrap(np.asarray(inverse, dtype=np.int64)))
    if return_counts:
        result.append(wrap(np.asarray(counts, dtype=np.int64)))
    return result[0] if len(result) == 1 else tuple(result)


def _descending_key(data: np.ndarray) -> np.ndarray:
    """A key whose ascending order is ``data``'s descending order, ties kept in place."""
    if data.dtype == np.bool_:
        return ~data
    if data.dtype.kind == "u":
        return np.iinfo(data.dtype).max - data
    return ~data if data.dtype.kind == "i" else -data  # ~x = -x - 1: no overflow at the minimum


def _lowest(dtype: np.dtype) -> Any:
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def _empty_reduction(name: str) -> Any:
    raise IndexError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0.")


def _nan_last_order(data: np.ndarray, axis: int = -1) -> np.ndarray:
    """A stable ascending order with NaN last."""
    return np.argsort(data, axis=axis, kind="stable")


@engine.reads_values
def _kth(x: Any, dim: int, keepdim: bool, k: int | None, name: str) -> Any:
    """The k-th smallest along ``dim`` (the lower median when k is None), as (values,
    indices); a slice holding NaN gives its first NaN for the median."""
    axis = ops.normalize_axis(dim, max(x.ndim, 1), name)
    data = x._data if x.ndim else x._data.reshape(1)
    size = data.shape[axis]
    if not size:  # (PyTorch's first check, before k's range)
        raise IndexError(f"{name}(): Expected reduction dim {axis} to have non-zero size.")
    if k is None:
        position = (size - 1) // 2
    else:
        if not 1 <= k <= size:
            raise RuntimeError(
                f"kthvalue(): selected number k out of range for dimension {axis}: k = {k}, "
                f"size {size}"
            )
        position = k - 1
    order = _nan_last_order(data, axis)
    index = np.take(order, [position], axis=axis)
    if k is None and data.dtype.kind == "f":
        nan = np.isnan(data)
        first_nan = np.argmax(nan, axis=axis, keepdims=True)
        index = np.where(nan.any(axis=axis, keepdims=True), first_nan, index)
    index = index.astype(np.int64)
    values = (x if x.ndim else x.reshape(1)).gather(axis, index)
    if not keepdim:
        index = np.squeeze(index, axis)
        values = values.squeeze(axis)
    if not x.ndim:
        index, values = index.reshape(()), values.reshape(())
    return ValuesIndices(values, wrap(index))
