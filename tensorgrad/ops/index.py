"""Indexing: reading (``x[i]``, ``gather``), scattering (their VJPs) and writing in place
(``x[i] = v``, and the write-back of an in-place change made through a view)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorgrad import _jit
from tensorgrad.array_backend import DtypeError
from tensorgrad.ops import object_arrays
from tensorgrad.ops.base import Op, call, linear_jvp, normalize_axis, replay, shape_of, sum_to
from tensorgrad.ops.norm import _fusable


def is_basic_index(index: Any) -> bool:
    """True for indices made of ints, slices, None and Ellipsis: each element is hit once."""
    parts = index if isinstance(index, tuple) else (index,)
    return all(
        isinstance(p, (int, np.integer, slice)) or p is None or p is Ellipsis for p in parts
    ) and not any(isinstance(p, (bool, np.bool_)) for p in parts)


class GetItem(Op):
    """``x[index]`` for ints, slices, None, Ellipsis, boolean masks and integer arrays."""

    name = "getitem"
    batching = "getitem"
    uses_inputs = False

    def __init__(self, index: Any):
        self.index = index

    def forward(self, x):
        out = x[self.index]
        if not isinstance(out, np.ndarray) and is_basic_index(self.index):
            # integers picked one element: NumPy gives a scalar (a copy), PyTorch a 0-d view,
            # which NumPy gives too once the index ends with an Ellipsis
            out = x[(*self.index, ...) if isinstance(self.index, tuple) else (self.index, ...)]
        return out

    def backward(self, grad, out, x):
        return (call(IndexAdd, grad, shape=shape_of(x), index=self.index),)

    adds_into_input = True

    def add_into(self, total: np.ndarray, grad: np.ndarray) -> bool:
        """The VJP added into ``total``, x's gradient so far (the sweep's own array), in
        place: no zeros array of x's shape per slice. False, doing nothing, where it cannot."""
        if total.dtype != grad.dtype:
            return False
        index = self.index
        if is_basic_index(index):
            part = total[index]
            if type(part) is not np.ndarray:  # integers picked one element: not a view
                return False
            part += grad
        else:
            IndexAdd(total.shape, index).add(total, grad)
        return True

    jvp = linear_jvp  # linear in its inputs: the op itself maps the tangents


#: ``result[index] += values`` for one integer array index by sorting it and summing runs of
#: equal rows (``np.add.reduceat``), not ``np.add.at``: 20× faster for a GPT's embedding VJP
#: (with the JIT, one loop in add.at's order instead: tensorgrad/_jit's add_rows)
SORTED_SCATTER = True


def _rows_index(index: Any, result: np.ndarray) -> bool:
    """Whether ``index`` is one integer array picking rows of a non-empty numeric ``result``."""
    return (
        type(index) is np.ndarray
        and index.dtype.kind in "iu"
        and result.ndim >= 1
        and result.size > 0
        and result.dtype != object
        and index.size > 0
    )


def _add_rows(result: np.ndarray, index: np.ndarray, values: Any) -> None:
    """``np.add.at(result, index, values)`` for an integer array ``index`` along axis 0 (the
    sums may round differently: ``reduceat`` need not add in ``add.at``'s order)."""
    rows = index.reshape(-1)
    if rows.min() < 0:
        rows = np.where(rows < 0, rows + len(result), rows)
    try:
        values = np.broadcast_to(values, index.shape + result.shape[1:]).reshape(rows.size, -1)
    except ValueError:  # add.at's own error for values that do not fit
        np.add.at(result, index, values)
        return
    if (
        _jit.ENABLED
        and result.flags.c_contiguous
        and _fusable(result, values)
        and _jit.run("add_rows", result.reshape(len(result), -1), rows, values)
    ):
        return  # the lines below as one loop in add.at's order (tensorgrad/_jit)
    order = np.argsort(rows, kind="stable")
    ordered = rows[order]
    starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    sums = np.add.reduceat(values[order], starts, axis=0)
    result.reshape(len(result), -1)[ordered[starts]] += sums


class IndexAdd(Op):
    """Scatter ``values`` into zeros of ``shape`` at ``index``: the VJP of indexing.

    Repeated integer indices accumulate (``np.add.at``), so ``x[[0, 0]]`` gives x[0] a
    gradient of 2; indices that cannot repeat use a plain, faster assignment.
    """

    name = "index_add"
    batching = "index_add"
    uses_inputs = False

    def __init__(self, shape: tuple[int, ...], index: Any):
        self.shape, self.index = tuple(shape), index

    def forward(self, values):
        return self._scatter(np.zeros(self.shape, dtype=values.dtype), values)

    def scalar_forward(self, values):
        return self._scatter(np.zeros(self.shape, dtype=object), object_arrays.element(values))

    def _scatter(self, result, values):
        index = self.index
        single_mask = isinstance(index, np.ndarray) and index.dtype == np.bool_
        if is_basic_index(index) or single_mask:
            result[index] = values
        else:
            self.add(result, values)
        return result

    def add(self, result: np.ndarray, values: Any) -> None:
        """``result[index] += values`` in place, repeated indices accumulating."""
        index = self.index
        if isinstance(index, np.ndarray) and index.dtype == np.bool_:
            result[index] += values
        elif SORTED_SCATTER and _rows_index(index, result):
            _add_rows(result, index, values)
        else:
            np.add.at(result, index, values)

    def backward(self, grad, out, values):
        return (grad[self.index],)

    jvp = linear_jvp  # linear in its inputs: the op itself maps the tangents


class SetItem(Op):
    """``x[index] = value`` as an op: the result is ``x`` with the indexed elements replaced
    by ``value`` (broadcast to them). Recorded when a tensor in a graph is written to, so
    that ``x[0] = y * 2`` carries y's gradient: ``x``'s old value gets the gradient outside
    the index, ``value`` the gradient at it (summed back to its shape)."""

    name = "setitem"
    batching = "index_add"
    uses_inputs = False

    def __init__(self, index: Any):
        self.index = index

    def forward(self, x, value):
        out = np.array(x, copy=True)
        out[self.index] = value
        return out

    def scalar_forward(self, x, value):
        return self.forward(x, object_arrays.element(value))

    def forward_inplace(self, target, value):
        target[self.index] = value

    def backward(self, grad, out, x, value):
        nx, nvalue = self.needs_input_grad
        dx = dvalue = None
        if nx:
            keep = np.ones(shape_of(x), dtype=bool)
            keep[self.index] = False
            dx = grad * keep
        if nvalue:
            picked = grad[self.index]
            extra = len(shape_of(value)) - len(shape_of(picked))
            if extra > 0:  # a value with leading 1s, which NumPy's assignment drops
                picked = picked.reshape((1,) * extra + shape_of(picked))
            dvalue = sum_to(picked, shape_of(value))
        return dx, dvalue

    jvp = linear_jvp  # linear in its inputs: the op itself maps the tangents


class CopyIntoView(Op):
    """A base tensor after an in-place change made through one of its views: ``base`` with
    the region the ``view_ops`` select replaced by ``value``. The engine records it (without
    running forward: the memory already holds the result) so that the base's gradient
    accounts for the change, PyTorch's ``CopySlices``."""

    name = "copy_into_view"
    uses_inputs = False

    def __init__(self, view_ops: tuple[Op, ...]):
        self.view_ops = view_ops

    def _view(self, x: Any) -> Any:
        for op in self.view_ops:
            x = replay(op, x)
        return x

    def _write(self, target: np.ndarray, value: Any) -> None:
        """``target``'s region ← ``value``. The view ops were a view of the base's memory,
        but replayed on an array of another layout a reshape among them copies (a flattened
        transpose is a view only of memory that is transposed too): then the region is
        written by its elements' positions, which no layout changes."""
        region = self._view(target)
        if np.may_share_memory(region, target) or not region.size:
            region[...] = value
            return
        positions = self._view(np.arange(target.size).reshape(target.shape))
        target.flat[positions.ravel()] = np.broadcast_to(value, positions.shape).ravel()

    def forward(self, base, value):
        out = np.array(base, copy=True)
        self._write(out, value)
        return out

    def backward(self, grad, out, base, value):
        nbase, nvalue = self.needs_input_grad
        dbase = dvalue = None
        if nbase:
            keep = np.ones(shape_of(base), dtype=bool)
            self._write(keep, False)
            dbase = grad * keep
        if nvalue:
            dvalue = self._view(grad)
        return dbase, dvalue

    jvp = linear_jvp  # linear in its inputs: the op itself maps the tangents


def _full_index(index: np.ndarray, axis: int) -> tuple[Any, ...]:
    """The index that ``gather``/``scatter_add`` address: for every position of ``index``,
    its own coordinates, with ``index``'s value along ``axis`` (PyTorch's rule, where the
    other dimensions of ``index`` may be smaller than the input's)."""
    grid = list(np.ogrid[tuple(slice(n) for n in index.shape)])
    grid[axis] = index
    return tuple(grid)


def _at_least_1d(a: Any) -> Any:
    """A 0-d array as a 1-element 1-D one: PyTorch's gather and scatter_add treat 0-d inputs,
    indices and sources as having one dimension of size 1."""
    return a.reshape(1) if not np.ndim(a) else a


def _check_index(name: str, x: Any, axis: int, index: np.ndarray) -> None:
    """``index`` (already at least 1-D) against ``x``'s shape (a 0-d input counts as (1,))."""
    shape = shape_of(x) or (1,)
    if index.dtype.kind not in "iu":
        raise DtypeError(f"{name}: index must be an integer tensor, got {index.dtype}")
    if index.ndim != len(shape) and index.size:  # an empty one of any rank: PyTorch's
        raise RuntimeError(
            f"{name}: index has {index.ndim} dimensions, the input {len(shape)} (they must match)"
        )
    for d, (i, n) in enumerate(zip(index.shape, shape)):
        if d != axis and i > n and index.size:  # an empty index addresses nothing (PyTorch's)
            raise RuntimeError(
                f"{name}: index of shape {index.shape} is larger than the input of shape "
                f"{shape} in dimension {d}"
            )
    if index.size and (index.min() < 0 or index.max() >= shape[axis]):  # no wrap-around
        raise RuntimeError(
            f"{name}: index {int(index.max() if index.max() >= shape[axis] else index.min())} "
            f"is out of bounds for dimension {axis} with size {shape[axis]}"
        )


class Gather(Op):
    """``out[i][j][k] = x[index[i][j][k]][j][k]`` along ``axis`` (PyTorch's ``gather``); the
    VJP scatters the gradient back, adding where an index repeats."""

    batching = "gather"
    uses_inputs = False

    def __init__(self, axis: int, index: np.ndarray):
        self.axis, self.index = axis, index

    def forward(self, x):
        self.axis = normalize_axis(self.axis, max(len(shape_of(x)), 1), self.name)
        index = _at_least_1d(self.index)
        _check_index(self.name, x, self.axis, index)
        if not index.size:
            return np.zeros(self.index.shape, dtype=np.asarray(x).dtype)
        return _at_least_1d(x)[_full_index(index, self.axis)].reshape(self.index.shape)

    def backward(self, grad, out, x):
        zeros = np.zeros(shape_of(x), dtype=grad.dtype)
        return (call(ScatterAdd, zeros, grad, axis=self.axis, index=self.index),)

    jvp = linear_jvp  # linear in its inputs: the op itself maps the tangents


class ScatterAdd(Op):
    """``x`` with ``src`` added at ``index`` along ``axis`` (PyTorch's ``scatter_add``):
    ``out[index[i][j]][j] += src[i][j]``, repeated indices adding up. The VJP passes the
    gradient to ``x`` and gathers it for ``src``."""

    name = "scatter_add"
    batching = "gather"
    uses_inputs = False

    def __init__(self, axis: int, index: np.ndarray):
        self.axis, self.index = axis, index

    def forward(self, x, src):
        self.axis = normalize_axis(self.axis, max(len(shape_of(x)), 1), self.name)
        index, src = _at_least_1d(self.index), _at_least_1d(src)
        _check_index(self.name, x, self.axis, index)
        if not index.size:  # adds nothing, whatever the ranks (PyTorch's)
            return np.array(x, copy=True)
        if any(i > n for i, n in zip(index.shape, shape_of(src))):
            raise RuntimeError(
                f"{self.name}: index of shape {self.index.shape} is larger than src of shape "
                f"{shape_of(src)}"
            )
        out = _at_least_1d(np.array(x, copy=True))
        picked = src[tuple(slice(n) for n in index.shape)]
        np.add.at(out, _full_index(index, self.axis), picked)
        return out.reshape(shape_of(x))

    def backward(self, grad, out, x, src):
        nx, nsrc = self.needs_input_grad
        dsrc = None
        if nsrc:
            dsrc = call(Gather, grad, axis=self.axis, index=self.index)
            if shape_of(dsrc) != shape_of(src):  # src is larger than index: zeros beyond it
                region = tuple(slice(n) for n in self.index.shape or (1,))
                dsrc = call(IndexAdd, dsrc, shape=shape_of(src), index=region)
        return (grad if nx else None), dsrc

    jvp = linear_jvp  # linear in its inputs: the op itself maps the tangents
