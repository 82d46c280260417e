"""The Tensor's indexing: ``t[index]`` with PyTorch's reading of mixed indices
(``torch_order``), ``gather``, the scatters, ``index_select`` and the other ``index_*``
methods, ``take``, and masked selection and scattering. Each is a get-item, an index-add, a
gather or a scatter op, or a composition of them; their index checks are PyTorch's."""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorgrad import array_backend, ops
from tensorgrad.core import engine, functions
from tensorgrad.core.args import numpy_names
from tensorgrad.core.engine import apply, wrap
from tensorgrad.core.methods.common import write_back


class IndexingMethods:
    """Indexing, gathering, scattering and masked selection (mixed into Tensor)."""

    __slots__ = ()

    @engine.reads_values
    def masked_select(self, mask: Any) -> Any:
        """The elements where ``mask`` (a bool tensor; the two broadcast) is True, as 1-D."""
        flags = mask._data if isinstance(mask, type(self)) else np.asarray(mask)
        if flags.dtype != np.bool_:
            raise RuntimeError(f"masked_select: expected a bool mask, got {flags.dtype}")
        shape = np.broadcast_shapes(self.shape, flags.shape)
        x = self if tuple(self.shape) == shape else self.expand(shape)
        return x[np.broadcast_to(flags, shape)]

    def __getitem__(self, index: Any) -> Any:
        index = raw_index(index)
        split = torch_order(index)
        if split is not None:  # integers first, then the arrays: PyTorch's dimension order
            return apply(ops.GetItem(split[1]), apply(ops.GetItem(split[0]), self))
        return apply(ops.GetItem(index), self)

    @numpy_names
    def gather(self, dim: int, index: Any) -> Any:
        """``out[i][j] = self[index[i][j]][j]`` for ``dim=0`` (and so on): PyTorch's gather."""
        return apply(ops.Gather(dim, _index_array(index, "gather")), self)

    @numpy_names
    def scatter_add(self, dim: int, index: Any, src: Any) -> Any:
        """``self`` with ``src`` added at ``index`` along ``dim`` (repeated indices add up)."""
        src = engine.as_tensor(src)
        _same_dtypes("scatter_add", self, src)
        return apply(ops.ScatterAdd(dim, _index_array(index, "scatter_add")), self, src)

    @numpy_names
    def index_select(self, dim: int, index: Any) -> Any:
        axis = ops.normalize_axis(dim, max(self.ndim, 1), "index_select")
        indices = _index_array(index, "index_select")
        if indices.ndim > 1:
            raise IndexError(f"index_select: index must be 0-D or 1-D, got shape {indices.shape}")
        size = self.shape[axis] if self.ndim else 1
        if not self.ndim and indices.size != 1:
            raise RuntimeError(
                f"index_select(): Index to scalar can have only 1 value, got {indices.size}"
            )
        if indices.size and (indices.min() < 0 or indices.max() >= size):  # no negative ones
            raise array_backend.IndexRangeError(
                f"index_select: index out of range in self: indices {indices.min()}.."
                f"{indices.max()} for dimension {axis} of size {size}"
            )
        if not self.ndim:
            return self.clone()
        return self[(slice(None),) * axis + (indices.reshape(-1),)]

    @numpy_names
    def scatter(self, dim: int, index: Any, src: Any = None, value: Any = None, *,
                reduce: str | None = None) -> Any:  # fmt: skip
        """``self`` with ``src`` (or the number ``value``) written at ``index`` along
        ``dim``: ``out[index[i][j]][j] = src[i][j]`` for dim 0. ``reduce="add"`` or
        ``"multiply"`` combines instead of writing (PyTorch's older spelling)."""
        if src is None:
            src = value
        if src is None:
            raise TypeError("scatter() missing 1 required argument: 'src' or 'value'")
        indices = _scatter_index(index, "scatter")
        if reduce is not None:
            modes = {"add": "sum", "multiply": "prod"}
            if reduce not in modes:
                raise RuntimeError(f"reduce argument must be either add or multiply, got {reduce}")
            if not isinstance(src, engine.Tensor):
                src = engine.as_tensor(np.full(indices.shape, src, dtype=self.dtype))
            return self.scatter_reduce(dim, indices, src, modes[reduce])
        tensor_src = isinstance(src, engine.Tensor)
        _, positions = ops.scatter_positions(
            "scatter", self.shape, dim, indices, src.shape if tensor_src else None
        )
        if tensor_src:
            _same_dtypes("scatter", self, src)
            region = tuple(slice(n) for n in (indices.shape or (1,)))
            src = (src.reshape(1) if not src.ndim else src)[region]
        elif not isinstance(src, (int, float, bool, np.generic)):
            raise TypeError(f"scatter: src must be a tensor or a number, got {type(src).__name__}")
        base = self.reshape(1) if not self.ndim else self
        return apply(ops.SetItem(positions), base, src).reshape(self.shape)

    @numpy_names
    def scatter_(self, dim: int, index: Any, src: Any = None, value: Any = None, *,
                 reduce: str | None = None) -> Any:  # fmt: skip
        return write_back(
            self, "scatter_", lambda x: x.scatter(dim, index, src, value, reduce=reduce)
        )

    @numpy_names
    def scatter_add_(self, dim: int, index: Any, src: Any) -> Any:
        return write_back(self, "scatter_add_", lambda x: x.scatter_add(dim, index, src))

    @engine.reads_values
    @numpy_names
    def scatter_reduce(
        self, dim: int, index: Any, src: Any, reduce: str, *, include_self: bool = True
    ) -> Any:
        """``self`` with ``src`` folded in at ``index`` along ``dim`` by ``reduce``: "sum",
        "prod", "mean", "amax" or "amin"; with ``include_self=False`` the elements of
        ``self`` that something lands on do not take part."""
        if reduce not in ("sum", "prod", "mean", "amax", "amin"):
            raise RuntimeError(
                f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}"
            )
        indices = _scatter_index(index, "scatter_reduce")
        src = engine.as_tensor(src)
        _same_dtypes("scatter_reduce", self, src)
        axis, positions = ops.scatter_positions(
            "scatter_reduce", self.shape, dim, indices, src.shape
        )
        landed = np.zeros(self.shape or (1,), dtype=np.int64)
        np.add.at(landed, positions, 1)
        landed = landed.reshape(self.shape)
        if reduce in ("prod", "amax", "amin"):
            base = self.reshape(1) if not self.ndim else self
            flat_src = src.reshape(1) if not src.ndim else src
            op = ops.ScatterReduce(positions, reduce, include_self)
            return apply(op, base, flat_src).reshape(self.shape)
        base = self if include_self else self.masked_fill(wrap(landed > 0), 0)
        total = base.scatter_add(axis, indices, src)
        if reduce == "sum":
            return total
        count = landed + (1 if include_self else 0)
        divisor = wrap(np.maximum(count, 1).astype(self.dtype))
        mean = (
            total / divisor if self.dtype.kind == "f" else total.div(divisor, rounding_mode="floor")
        )
        return functions.where(count > 0, mean, self)

    @numpy_names
    def scatter_reduce_(
        self, dim: int, index: Any, src: Any, reduce: str, *, include_self: bool = True
    ) -> Any:
        return write_back(
            self,
            "scatter_reduce_",
            lambda x: x.scatter_reduce(dim, index, src, reduce, include_self=include_self),
        )

    @numpy_names
    def index_add(self, dim: int, index: Any, source: Any, *, alpha: float = 1) -> Any:
        """``self`` with ``alpha · source`` added at ``index`` along ``dim`` (repeated indices
        add up): ``out[:, index[i]] += alpha · source[:, i]`` for dim 1."""
        source = engine.as_tensor(source)
        _same_dtypes("index_add", self, source)
        where = _along(self, dim, index, source, "index_add")
        if self.dtype.kind in "biu":  # PyTorch casts alpha to an integer self's dtype
            alpha = _alpha_in(self.dtype, alpha, "index_add")
        scaled = source if alpha == 1 else source * alpha
        if not self.ndim:
            scaled = scaled.reshape(())
        return self + apply(ops.IndexAdd(self.shape, where), scaled)

    @numpy_names
    def index_add_(self, dim: int, index: Any, source: Any, *, alpha: float = 1) -> Any:
        return write_back(
            self, "index_add_", lambda x: x.index_add(dim, index, source, alpha=alpha)
        )

    @numpy_names
    def index_copy(self, dim: int, index: Any, source: Any) -> Any:
        """``self`` with ``source``'s slices copied to the positions ``index`` along ``dim``."""
        source = engine.as_tensor(source)
        _same_dtypes("index_copy", self, source)
        where = _along(self, dim, index, source, "index_copy")
        return apply(ops.SetItem(where), self, source if self.ndim else source.reshape(()))

    @numpy_names
    def index_copy_(self, dim: int, index: Any, source: Any) -> Any:
        return write_back(self, "index_copy_", lambda x: x.index_copy(dim, index, source))

    @numpy_names
    def index_fill(self, dim: int, index: Any, value: Any) -> Any:
        """``self`` with ``value`` (a number or a 0-d tensor) at ``index`` along ``dim``."""
        if isinstance(value, engine.Tensor):
            if value.ndim:
                raise RuntimeError(
                    "index_fill_ only supports a 0-dimensional value tensor, but got tensor "
                    f"with {value.ndim} dimension(s)."
                )
            value = value if value.dtype == self.dtype else value.to(self.dtype)
        where = _along(self, dim, index, None, "index_fill")
        return apply(ops.SetItem(where), self, value)

    @numpy_names
    def index_fill_(self, dim: int, index: Any, value: Any) -> Any:
        return write_back(self, "index_fill_", lambda x: x.index_fill(dim, index, value))

    @engine.reads_values
    def masked_scatter(self, mask: Any, source: Any) -> Any:
        """``self`` with ``source``'s elements, in order, written where ``mask`` is True."""
        flags = mask._data if isinstance(mask, engine.Tensor) else np.asarray(mask)
        if flags.dtype != np.bool_:
            raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with "
                               f"dtype {flags.dtype}")  # fmt: skip
        source = engine.as_tensor(source)
        _same_dtypes("masked_scatter", self, source)
        shape = _broadcast("masked_scatter", self.shape, flags.shape)
        flags = np.broadcast_to(flags, shape)
        count = int(flags.sum())
        if source.numel() < count:
            raise RuntimeError(
                f"masked_scatter: expected source to have at least as many elements as ones "
                f"in mask ({count}), got {source.numel()}"
            )
        base = self if self.shape == shape else self.expand(shape)
        return apply(ops.SetItem(flags), base, source.reshape(-1)[:count])

    def masked_scatter_(self, mask: Any, source: Any) -> Any:
        return write_back(self, "masked_scatter_", lambda x: x.masked_scatter(mask, source))

    def index_put(self, indices: Any, values: Any, accumulate: bool = False) -> Any:
        """``self`` with ``values`` at ``self[indices]`` (a tuple of index tensors), or added
        there with ``accumulate=True`` (repeated indices add up)."""
        where = raw_index(tuple(indices))
        try:  # the index is checked first, as PyTorch checks it
            picked = np.broadcast_to(np.zeros((), np.bool_), self.shape)[where].shape
        except IndexError as exc:
            raise IndexError(f"index_put: {exc}") from exc
        given = values
        values = engine.as_tensor(values)
        if values.dtype != self.dtype:
            if isinstance(given, (engine.Tensor, np.ndarray)):  # a number is cast: no dtype
                raise RuntimeError(
                    "index_put: Index put requires the source and destination dtypes match, "
                    f"got {self.dtype} for the destination and {values.dtype} for the source."
                )
            values = values.to(self.dtype)
        if not accumulate:
            return apply(ops.SetItem(where), self, values)
        values = values if values.shape == picked else values.expand(picked)
        return self + apply(ops.IndexAdd(self.shape, where), values)

    def index_put_(self, indices: Any, values: Any, accumulate: bool = False) -> Any:
        return write_back(self, "index_put_", lambda x: x.index_put(indices, values, accumulate))

    def take(self, index: Any) -> Any:
        """The elements of the flattened tensor at ``index`` (any shape; negative counts from
        the end), in ``index``'s shape."""
        indices = _index_array(index, "take")
        size = self.numel()
        if indices.size and (indices.min() < -size or indices.max() >= size):
            bad = int(indices.max() if indices.max() >= size else indices.min())
            raise IndexError(f"take: out of range: tried to access index {bad} on a tensor of "
                             f"{size} elements.")  # fmt: skip
        return self.reshape(-1)[indices]

    def take_along_dim(self, indices: Any, dim: int | None = None) -> Any:
        """``gather`` where ``indices`` and ``self`` broadcast in the other dimensions; with
        ``dim=None``, along the flattened tensor."""
        indices = engine.as_tensor(indices)
        if indices.dtype.kind not in "iu":
            raise RuntimeError(
                f"torch.take_along_dim(): dtype of indices should be int64 but got {indices.dtype}"
            )
        if dim is None:
            return self.reshape(-1).gather(0, indices.reshape(-1))
        axis = ops.normalize_axis(dim, max(self.ndim, 1), "take_along_dim")
        if self.ndim != indices.ndim:
            raise RuntimeError(
                f"torch.take_along_dim(): input and indices should have the same number of "
                f"dimensions, but got {self.ndim} dimensions for input, and {indices.ndim} "
                "dimensions for indices"
            )
        x_shape, i_shape = list(self.shape), list(indices.shape)
        x_shape[axis] = i_shape[axis] = 1
        common = list(_broadcast("take_along_dim", tuple(x_shape), tuple(i_shape)))
        x = self.expand((*common[:axis], self.shape[axis], *common[axis + 1 :]))
        picked = indices.expand((*common[:axis], indices.shape[axis], *common[axis + 1 :]))
        return x.gather(axis, picked)

    def argwhere(self) -> Any:
        return self.nonzero()


def raw_index(index: Any) -> Any:
    """An index with any Tensors in it replaced by their arrays (an integer tensor indexes
    like an integer array, a bool tensor like a mask; a 0-d one like the integer it holds)."""
    if isinstance(index, (engine.Tensor, np.ndarray)):
        return _raw_part(index)
    if isinstance(index, tuple):
        return tuple(map(_raw_part, index))
    if isinstance(index, list):
        array = np.asarray([i._data if isinstance(i, engine.Tensor) else i for i in index])
        return array.astype(np.int64) if array.size == 0 else array  # t[[]]: no element
    return index


def torch_order(index: Any) -> tuple[tuple, tuple] | None:
    """PyTorch's reading of an index that mixes integers with index arrays separated by a
    slice, None or Ellipsis, as two NumPy indices to apply one after the other; None where
    NumPy's reading is PyTorch's.

    PyTorch selects the integers first, then indexes with the arrays, so ``x[0, :, [0, 1]]``
    of a (2, 3, 4) tensor is (3, 2); NumPy counts the integer as one more index array,
    separated from the other by the slice, and puts the indexed dimensions first: (2, 3).
    Where the integers and arrays stand side by side the two readings agree.
    """
    if not isinstance(index, tuple):
        return None
    kinds = [_index_kind(part) for part in index]
    if "int" not in kinds or "array" not in kinds or "other" in kinds:
        return None
    picked = [i for i, kind in enumerate(kinds) if kind in ("int", "array")]
    if picked[-1] - picked[0] + 1 == len(picked):  # side by side: NumPy's order is PyTorch's
        return None
    select: list[Any] = []
    arrays: list[Any] = []
    for part, kind in zip(index, kinds, strict=True):
        if kind == "array":
            part = np.asarray(part)
            width = part.ndim if part.dtype == np.bool_ else 1
            select.extend([slice(None)] * width)
            arrays.append(part)
        elif kind == "int":
            select.append(part)
        else:  # a slice, None or Ellipsis: applied by the first index, kept whole by the second
            select.append(part)
            arrays.append(Ellipsis if part is Ellipsis else slice(None))
    return tuple(select), tuple(arrays)


def _index_kind(part: Any) -> str:
    """'int', 'array' (an index array or list), 'basic' (slice, None, Ellipsis) or 'other'."""
    if isinstance(part, (bool, np.bool_)):
        return "other"
    if isinstance(part, (int, np.integer)):
        return "int"
    if part is None or part is Ellipsis or isinstance(part, slice):
        return "basic"
    if isinstance(part, (np.ndarray, list)):
        return "array" if np.ndim(part) else "other"
    return "other"


def _raw_part(part: Any) -> Any:
    """One part of an index, a Tensor's array for a Tensor; a 0-d signed-integer tensor or
    array as a Python int, so that it selects a view as in PyTorch (NumPy's advanced
    indexing with a 0-d array copies)."""
    array = part._data if isinstance(part, engine.Tensor) else part
    if isinstance(array, np.ndarray) and array.ndim == 0 and array.dtype.kind == "i":
        return int(array)
    return array


def _index_array(index: Any, name: str) -> np.ndarray:
    """An integer index's array; another dtype raises ``DtypeError`` (PyTorch's RuntimeError
    and a TypeError; PyTorch's IndexError for ``index_fill``)."""
    array = index._data if isinstance(index, engine.Tensor) else np.asarray(index)
    if array.dtype.kind not in "iu":
        error = IndexError if name == "index_fill" else array_backend.DtypeError
        raise error(f"{name}: index must be an integer tensor, got {array.dtype}")
    return array


def _scatter_index(index: Any, name: str) -> np.ndarray:
    """The index of ``scatter``: an integer tensor (int64, or int32 as PyTorch now accepts)."""
    array = index._data if isinstance(index, engine.Tensor) else np.asarray(index)
    if array.dtype.kind not in "iu":
        raise RuntimeError(f"{name}(): Expected dtype int64 for index, got {array.dtype}")
    return array


def _alpha_in(dtype: np.dtype, alpha: Any, name: str) -> Any:
    """``alpha`` as a number of an integer or bool ``dtype`` (truncated toward zero), as
    PyTorch converts it; one out of the dtype's range is PyTorch's RuntimeError."""
    if dtype == np.bool_:
        return bool(alpha)
    value, info = int(alpha), np.iinfo(dtype)
    if not info.min <= value <= info.max:
        raise RuntimeError(f"{name}: alpha {alpha} cannot be converted to {dtype} without overflow")
    return value


def _same_dtypes(name: str, x: Any, src: Any) -> None:
    if src.dtype != x.dtype:
        raise RuntimeError(
            f"{name}(): Expected self.dtype to be equal to src.dtype, got {x.dtype} and {src.dtype}"
        )


def _broadcast(name: str, *shapes: tuple[int, ...]) -> tuple[int, ...]:
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError as exc:
        raise RuntimeError(f"{name}: shapes {list(map(tuple, shapes))} do not broadcast") from exc


#: how PyTorch checks each function's index: (negative indices count from the end, the
#: error type for one out of range)
_INDEX_RULES = {
    "index_add": (False, RuntimeError),
    "index_copy": (False, IndexError),
    "index_fill": (True, IndexError),
}


def _along(x: Any, dim: int, index: Any, source: Any, name: str) -> tuple[Any, ...]:
    """The index ``(:, …, index)`` that ``index_add``/``index_copy``/``index_fill`` address
    along ``dim``, checked as PyTorch checks it: a 0-D or 1-D integer index within the
    dimension (negative ones only for ``index_fill``), and a source of ``x``'s shape with
    ``len(index)`` along ``dim``."""
    axis = ops.normalize_axis(dim, max(x.ndim, 1), name)
    indices = _index_array(index, name)
    if indices.ndim > 1:
        raise IndexError(f"{name}(): Index is supposed to be a vector, got shape {indices.shape}")
    indices = indices.reshape(-1)
    length = x.shape[axis] if x.ndim else 1
    negative, error = _INDEX_RULES[name]
    lowest = -length if negative else 0
    if indices.size and (indices.min() < lowest or indices.max() >= length):
        bad = int(indices.max() if indices.max() >= length else indices.min())
        raise error(
            f"{name}(): index {bad} is out of bounds for dimension {axis} with size {length}"
        )
    if source is not None:
        expected = list(x.shape or (1,))
        expected[axis] = indices.size
        got = list(source.shape or (1,))
        if got != expected and not (x.ndim == 0 and source.numel() == indices.size == 1):
            # PyTorch's index_copy raises IndexError for another rank (neither a scalar), or
            # for another count along dim where the other dimensions match
            slices_match = len(got) == len(expected) and all(
                g == e for d, (g, e) in enumerate(zip(got, expected)) if d != axis
            )
            error = RuntimeError
            ranks_differ = len(got) != len(expected) and x.ndim and source.ndim
            if name == "index_copy" and (ranks_differ or slices_match):
                error = IndexError
            raise error(
                f"{name}(): source of shape {tuple(source.shape)} does not match self of shape "
                f"{x.shape} with {indices.size} indices along dim {axis}"
            )
    if not x.ndim:
        return (Ellipsis,) if indices.size else (np.zeros(0, bool).reshape(()),)
    return (slice(None),) * axis + (indices,)
