"""vmap's rules for indexing: ``x[index]`` and its VJP (``IndexAdd``), setting an indexed
region out of place (``SetItem``), ``gather``/``scatter_add`` and ``scatter_reduce``'s
positions, and the batched forms of the index methods (``index_select``, ``index_add``,
``index_copy``, ``index_fill``, ``scatter``) for an index that differs from sample to sample.

An index that means the same behind the batch axes (slices, a shared array) gets full slices
in front (:func:`prefixed`). An index holding per-sample arrays gets each level's sample
numbers in front of them (:func:`sample_coordinates`), so that sample ``b`` reads its own
slice with its own index: NumPy's advanced indexing then puts the batch axes first, where
they belong. ``core.batching`` dispatches to these.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tensorgrad import ops
from tensorgrad.core import engine
from tensorgrad.core.batched_tensors import (
    _fresh,
    _logical_ndim,
    _run,
    _sizes,
    batched,
    dispatch,
    levels_of,
    lift,
)
from tensorgrad.core.tensor import Tensor
from tensorgrad.ops.base import normalize_axis


# --------------------------------------------------------------------------- indexing
def prefixable(index: Any) -> bool:
    """Whether ``index`` means the same after ``k`` full slices in front: no batched arrays
    in it, and its advanced parts (arrays, and ints beside them) side by side, which NumPy
    then leaves in place."""
    parts = index if isinstance(index, tuple) else (index,)
    arrays = [p for p in parts if isinstance(p, (np.ndarray, list))]
    if not arrays:
        return True
    if any(type(p) is np.ndarray and levels_of(p) for p in arrays):
        return False
    advanced = [
        i
        for i, p in enumerate(parts)
        if isinstance(p, (np.ndarray, list, int, np.integer)) and p is not Ellipsis
    ]
    return advanced == list(range(advanced[0], advanced[-1] + 1))


def prefixed(index: Any, k: int) -> tuple:
    return (slice(None),) * k + (index if isinstance(index, tuple) else (index,))


def getitem(op: ops.Op, inputs: list, levels: tuple[int, ...]) -> Tensor:
    """Basic indexing keeps the batch axes in front; an unbatched tensor indexed by one
    batched array (an embedding lookup) needs nothing at all."""
    (x,) = inputs
    k = len(levels)
    if levels_of(x) and prefixable(op.index):
        return batched(_run(_fresh(op, index=prefixed(op.index, k)), lift(x, levels)), levels)
    index = op.index
    if not levels_of(x) and type(index) is np.ndarray and index.dtype.kind in "iu":
        return batched(_run(op, x), levels)  # (the index is what is batched)
    out = _advanced_first(op, x, levels)
    return _advanced_after_slices(op, x, levels) if out is NotImplemented else out


def index_add(op: ops.Op, inputs: list, levels: tuple[int, ...]) -> Tensor:
    """Indexing's VJP (values scattered into zeros of ``shape`` at ``index``), and setting
    an indexed region out of place: with an index that means the same behind the batch
    axes, the batch axes lead the shape and the index."""
    if not prefixable(op.index):
        return _index_add_advanced(op, inputs, levels)
    k = len(levels)
    if isinstance(op, ops.IndexAdd):
        (values,) = inputs
        region = np.ndim(np.broadcast_to(0, op.shape)[op.index])
        if _logical_ndim(values) > region:
            return NotImplemented  # the op's own error, from one sample
        new = _fresh(op, shape=(*_sizes(levels), *op.shape), index=prefixed(op.index, k))
        return batched(_run(new, lift(values, levels, region, expand=True)), levels)
    x, value = inputs
    region = np.ndim(np.broadcast_to(0, x.shape)[op.index])
    if _logical_ndim(value) > region:
        return NotImplemented
    new = _fresh(op, index=prefixed(op.index, k))
    lifted = lift(value, levels, region) if levels_of(value) else value
    return batched(_run(new, lift(x, levels, expand=True), lifted), levels)


def _advanced_parts(index: Any) -> tuple[int, tuple, tuple] | None:
    """An index of full slices, then integer arrays and ints side by side (an array among
    them), then the rest: (the number of full slices, the arrays and ints, the rest); None
    when no array follows the full slices."""
    parts = index if isinstance(index, tuple) else (index,)
    lead = 0
    while lead < len(parts) and isinstance(parts[lead], slice) and parts[lead] == slice(None):
        lead += 1
    end = lead
    while end < len(parts) and (
        (type(parts[end]) is np.ndarray and parts[end].dtype.kind in "iu")
        or isinstance(parts[end], (int, np.integer))
    ):
        end += 1
    advanced, rest = parts[lead:end], parts[end:]
    if not any(type(p) is np.ndarray for p in advanced):
        return None
    return lead, advanced, rest


def _slices_only(rest: tuple, new_axes: bool = False) -> bool:
    """Whether the index's rest is slices and Ellipsis (and None with ``new_axes``)."""
    return all(isinstance(p, slice) or p is Ellipsis or (new_axes and p is None) for p in rest)


def _lifted_index(advanced: tuple, levels: tuple[int, ...]) -> tuple[list, int]:
    """The arrays and ints of an advanced index laid out over ``levels`` (a batched array
    with its batch axes, a shared one with 1s in front), and the rank of the index's
    broadcast block (of one sample)."""
    k = len(levels)
    rank = max(_logical_ndim(p) for p in advanced if type(p) is np.ndarray)
    moved = [
        np.asarray(lift(p, levels, rank)) if type(p) is np.ndarray and levels_of(p)
        else np.reshape(p, (1,) * k + np.shape(p)) if type(p) is np.ndarray else p
        for p in advanced
    ]  # fmt: skip
    return moved, rank


def sample_coordinates(sizes: tuple[int, ...], rank: int) -> list[np.ndarray]:
    """Each level's sample numbers, shaped to broadcast in front of an index block of
    ``rank`` axes: the index arrays that pick sample ``b``'s own slice."""
    k = len(sizes)
    return [
        np.arange(n).reshape((1,) * i + (n,) + (1,) * (k - i - 1 + rank))
        for i, n in enumerate(sizes)
    ]


def _index_add_advanced(op: ops.Op, inputs: list, levels: tuple[int, ...]) -> Any:
    """Indexing's VJP (``IndexAdd``) and out-of-place setitem (``SetItem``: index_copy,
    index_fill) at an index of per-sample arrays (:func:`_advanced_parts`): each sample's
    coordinates in front of the arrays, the full slices between. NumPy then puts the batch
    and the index's dimensions first, so the values' leading (sliced) axes go behind them."""
    parsed = _advanced_parts(op.index)
    if parsed is None or not _slices_only(parsed[2]):
        return NotImplemented
    lead, advanced, rest = parsed
    k, sizes = len(levels), _sizes(levels)
    shape = op.shape if isinstance(op, ops.IndexAdd) else tuple(inputs[0].shape)
    trailing = len(shape) - lead - len(advanced)
    if trailing < 0 or sum(p is Ellipsis for p in rest) > 1:
        return NotImplemented  # the op's own error, from one sample
    moved, rank = _lifted_index(advanced, levels)
    index = (*sample_coordinates(sizes, rank), *(slice(None),) * lead, *moved, *rest)
    region = lead + rank + trailing  # the values' logical rank: (sliced, index, rest)

    def arranged(values: Any) -> Any:
        """Values of the region's logical shape as NumPy's assignment takes them: (batch,
        index, sliced, rest)."""
        v = lift(values, levels, region, expand=True)
        if not lead:
            return v
        order = (*range(k), *range(k + lead, k + lead + rank), *range(k, k + lead))
        return _run(ops.Transpose((*order, *range(k + lead + rank, k + region))), v)

    if isinstance(op, ops.IndexAdd):
        (values,) = inputs
        if _logical_ndim(values) != region:
            return NotImplemented
        new = _fresh(op, shape=(*sizes, *op.shape), index=index)
        return batched(_run(new, arranged(values)), levels)
    x, value = inputs
    if isinstance(value, Tensor) or type(value) is np.ndarray:
        if _logical_ndim(value) > region:
            return NotImplemented
        value = arranged(value) if (levels_of(value) or _logical_ndim(value)) else value
    new = _fresh(op, index=index)
    return batched(_run(new, lift(x, levels, expand=True), value), levels)


def _advanced_first(op: ops.Op, x: Any, levels: tuple[int, ...]) -> Any:
    """An index whose integer arrays (some batched) and ints lead, side by side (``x[i]``,
    ``x[i, j]``, ``x[i, :, 1:]``): each array laid out over the levels and, for a batched
    ``x``, each sample's coordinates in front, so that sample ``b`` reads ``x[b][i[b]]``.
    NumPy puts the broadcast block first, where the batch axes belong."""
    parsed = _advanced_parts(op.index)
    if parsed is None or parsed[0] or not _slices_only(parsed[2], new_axes=True):
        return NotImplemented
    _, advanced, rest = parsed
    moved, rank = _lifted_index(advanced, levels)
    coordinates = []
    if levels_of(x):
        coordinates = sample_coordinates(_sizes(levels), rank)
        x = lift(x, levels, expand=True)
    return batched(_run(_fresh(op, index=(*coordinates, *moved, *rest)), x), levels)


def _advanced_after_slices(op: ops.Op, x: Any, levels: tuple[int, ...]) -> Any:
    """``x[:, i]``: full slices, then integer arrays (some batched) and ints side by side,
    then slices. The indexed axes are moved to the front, indexed as by
    :func:`_advanced_first`, and the result's axes put back where NumPy puts them (the
    broadcast index's in place of the indexed axes)."""
    parsed = _advanced_parts(op.index)
    rank = _logical_ndim(x)
    if parsed is None or not parsed[0] or not _slices_only(parsed[2]):
        return NotImplemented
    lead, parts, rest = parsed
    advanced = lead + len(parts)
    if advanced > rank:
        return NotImplemented
    order = (*range(lead, advanced), *range(lead), *range(advanced, rank))
    moved = dispatch(ops.Transpose(order), x)
    index = (*parts, *(slice(None),) * lead, *rest)
    out = _advanced_first(_fresh(op, index=index), moved, levels)
    if out is NotImplemented:
        return out
    m = max(_logical_ndim(p) for p in parts if type(p) is np.ndarray)
    r = _logical_ndim(out)
    return dispatch(ops.Transpose((*range(m, m + lead), *range(m), *range(m + lead, r))), out)


# --------------------------------------------------------------------------- gathers
def gather(op: ops.Op, inputs: list, levels: tuple[int, ...]) -> Tensor:
    """``gather`` (and ``scatter_add``, whose second operand is the source): the input, the
    source and the index each laid out over every level, the axis past the batch axes, so
    each sample's index addresses its own slice."""
    k, r = len(levels), _logical_ndim(inputs[0])
    if _logical_ndim(op.index) != r or any(_logical_ndim(x) != r for x in inputs):
        return NotImplemented  # the op's own error, from one sample
    if not r:  # 0-d samples: one element along axis 0, as the op takes them
        if op.axis not in (0, -1):
            return NotImplemented
        sizes = _sizes(levels)
        index = np.asarray(lift(op.index, levels, expand=True)).reshape(*sizes, 1)
        lifted = [_run(ops.Reshape((*sizes, 1)), lift(x, levels, expand=True)) for x in inputs]
        out = _run(_fresh(op, axis=k, index=index), *lifted)
        return batched(_run(ops.Reshape(sizes), out), levels)
    axis = normalize_axis(op.axis, r, op.name)
    index = np.asarray(lift(op.index, levels, expand=True))
    lifted = [lift(x, levels, expand=True) for x in inputs]
    return batched(_run(_fresh(op, axis=axis + k, index=index), *lifted), levels)


def positions(op: ops.Op, inputs: list, levels: tuple[int, ...]) -> Tensor:
    """An op addressing its input by a tuple of index arrays (``scatter_reduce``'s
    positions): each array laid out over the levels, with the batch coordinates in front."""
    x, src = inputs
    r = len(op.positions)
    if _logical_ndim(x) != r or not r:
        return NotImplemented
    rank = max(_logical_ndim(p) for p in op.positions)
    moved = [np.asarray(lift(p, levels, rank, expand=True)) for p in op.positions]
    new = _fresh(op, positions=(*sample_coordinates(_sizes(levels), rank), *moved))
    return batched(_run(new, lift(x, levels, expand=True), lift(src, levels, expand=True)), levels)


# --------------------------------------------------------------------------- methods
def _index_select(self: Tensor, dim: int, index: Any) -> Any:
    """``index_select`` with a batched index: each sample's 1-D index as an index array
    along ``dim`` (``x[:, i]``, batched by :func:`_advanced_after_slices`). A 0-d input or
    index, or an index the checks would refuse, goes the per-sample way (its errors)."""
    if not isinstance(index, Tensor) or not levels_of(index) or index.ndim != 1 or not self.ndim:
        return NotImplemented
    values = index._data
    if values.dtype.kind not in "iu" or not -self.ndim <= dim < self.ndim:
        return NotImplemented
    axis = dim % self.ndim
    if values.size and (values.min() < 0 or values.max() >= self.shape[axis]):
        return NotImplemented  # one sample's error, from the loop
    return self[(slice(None),) * axis + (index,)]


def _along(self: Tensor, dim: int, index: Any, source: Any, negative: bool = False) -> tuple | None:
    """For ``index_add``/``index_copy``/``index_fill`` with a batched 1-D index within the
    dimension (negative ones too with ``negative``, as ``index_fill`` takes them; NumPy
    reads them alike) and a source of the exact shape and dtype: the index (``(:, …,
    index)``, its array batched) they address. None for anything else, which goes the
    per-sample way (with each method's own checks and errors)."""
    if not isinstance(index, Tensor) or not levels_of(index) or index.ndim != 1:
        return None
    values = index._data
    if not self.ndim or values.dtype.kind not in "iu":
        return None
    if not -self.ndim <= dim < self.ndim:
        return None
    axis = dim % self.ndim
    lowest = -self.shape[axis] if negative else 0
    if values.size and (values.min() < lowest or values.max() >= self.shape[axis]):
        return None
    if source is not None:
        expected = (*self.shape[:axis], index.shape[0], *self.shape[axis + 1 :])
        if not isinstance(source, Tensor) or tuple(source.shape) != expected:
            return None
        if source.dtype != self.dtype:
            return None
    return (slice(None),) * axis + (values,)


def _index_add_method(self: Tensor, dim: int, index: Any, source: Any, *, alpha: float = 1) -> Any:
    """``index_add`` with a batched index: ``self`` plus the (alpha-scaled) source added
    into zeros at each sample's index (``IndexAdd``, batched by :func:`_index_add_advanced`)."""
    where = _along(self, dim, index, source)
    if where is None or (self.dtype.kind != "f" and alpha != 1):
        return NotImplemented  # (an integer's alpha: the method's conversion, per sample)
    scaled = source if alpha == 1 else source * alpha
    return self + engine.apply(ops.IndexAdd(tuple(self.shape), where), scaled)


def _index_copy(self: Tensor, dim: int, index: Any, source: Any) -> Any:
    """``index_copy`` with a batched index: one out-of-place setitem (``SetItem``)."""
    where = _along(self, dim, index, source)
    return NotImplemented if where is None else engine.apply(ops.SetItem(where), self, source)


def _index_fill(self: Tensor, dim: int, index: Any, value: Any) -> Any:
    """``index_fill`` of a number with a batched index: one out-of-place setitem."""
    where = _along(self, dim, index, None, negative=True)
    if where is None or not isinstance(value, (int, float)) or isinstance(value, bool):
        return NotImplemented
    if self.dtype.kind != "f" and not isinstance(value, int):
        return NotImplemented  # a float into integers: the method's cast, per sample
    return engine.apply(ops.SetItem(where), self, value)


def _scatter_method(
    self: Tensor, dim: int, index: Any, src: Any = None, value: Any = None, **kw: Any
) -> Any:
    """``scatter`` with a batched index: one out-of-place setitem at the positions each
    sample's index names (along ``dim`` its values, along the other dimensions their own
    coordinates), of the source's part of the index's shape; with a reduction, as the
    ``scatter_reduce`` it means (``batching_methods``)."""
    src = value if src is None else src
    reduce = kw.pop("reduce", None)
    if kw or not isinstance(index, Tensor) or not levels_of(index) or not self.ndim:
        return NotImplemented
    if reduce is not None:
        return _scatter_reducing(self, dim, index, src, reduce)
    values, r = index._data, self.ndim
    if values.dtype.kind not in "iu" or index.ndim != r:
        return NotImplemented
    if not -r <= dim < r:
        return NotImplemented
    axis, shape = dim % r, tuple(index.shape)
    if any(shape[d] > self.shape[d] for d in range(r) if d != axis):
        return NotImplemented
    if values.size and (values.min() < 0 or values.max() >= self.shape[axis]):
        return NotImplemented
    if isinstance(src, Tensor):
        if src.ndim != r or src.dtype != self.dtype or any(a > b for a, b in zip(shape, src.shape)):
            return NotImplemented
        src = src[tuple(slice(n) for n in shape)]
    elif not isinstance(src, (int, float)) or isinstance(src, bool):
        return NotImplemented
    positions = tuple(
        values if d == axis else np.arange(n).reshape((1,) * d + (n,) + (1,) * (r - d - 1))
        for d, n in enumerate(shape)
    )
    return engine.apply(ops.SetItem(positions), self, src)


def _scatter_reducing(self: Tensor, dim: int, index: Tensor, src: Any, reduce: str) -> Any:
    """``scatter(..., reduce="add"/"multiply")``: ``scatter_reduce`` by "sum"/"prod", a
    number as a source of the index's shape."""
    modes = {"add": "sum", "multiply": "prod"}
    if reduce not in modes:
        return NotImplemented
    if not isinstance(src, Tensor):
        if not isinstance(src, (int, float)) or isinstance(src, bool):
            return NotImplemented
        src = engine.wrap(np.full(tuple(index.shape), src, dtype=self.dtype))
    return self.scatter_reduce(dim, index, src, modes[reduce])


def _index_put(self: Tensor, indices: Any, values: Any, accumulate: bool = False) -> Any:
    """``index_put`` with batched index tensors (integers, within range; negative ones
    count from the end, as NumPy reads them) or values: one out-of-place setitem, or with
    ``accumulate`` one index-add, at each sample's index (batched by
    :func:`_index_add_advanced`)."""
    if not isinstance(indices, (tuple, list)) or not 0 < len(indices) <= self.ndim:
        return NotImplemented
    if not all(isinstance(i, Tensor) and i.dtype.kind in "iu" for i in indices):
        return NotImplemented  # masks, numbers: the per-sample way
    for i, size in zip(indices, self.shape, strict=False):
        data = i._data
        if data.size and (data.min() < -size or data.max() >= size):
            return NotImplemented  # one sample's error, from the loop
    try:
        block = np.broadcast_shapes(*(tuple(i.shape) for i in indices))
    except ValueError:
        return NotImplemented
    given = values
    values = engine.as_tensor(values)
    if values.dtype != self.dtype:
        if isinstance(given, (Tensor, np.ndarray)):
            return NotImplemented  # the method's error, from one sample
        values = values.to(self.dtype)
    picked = (*block, *self.shape[len(indices) :])
    try:
        np.broadcast_shapes(tuple(values.shape), picked)
    except ValueError:
        return NotImplemented
    where = tuple(i._data for i in indices)
    if not accumulate:
        return engine.apply(ops.SetItem(where), self, values)
    values = values if tuple(values.shape) == picked else values.expand(picked)
    return self + engine.apply(ops.IndexAdd(tuple(self.shape), where), values)


#: the batched forms of the methods below, for a batched index (NotImplemented: a loop)
BATCHED_INDEX_METHODS: dict[str, Callable] = {
    "scatter": _scatter_method,
    "index_select": _index_select,
    "index_add": _index_add_method,
    "index_copy": _index_copy,
    "index_fill": _index_fill,
    "index_put": _index_put,
}
