"""The Tensor's shape methods: views and reshapes, permutations, joins and splits, and
indexing, with PyTorch's names and semantics.

``transpose(dim0, dim1)`` swaps two dimensions and ``permute(*dims)`` reorders them all (NumPy's
``transpose(axes)`` is ``np.transpose(t, axes)``); ``repeat`` tiles (NumPy's element repeat is
``repeat_interleave``); ``squeeze(dim)`` leaves a dimension that is not 1 alone. Most of these
are one ``reshape``, ``transpose``, ``broadcast_to`` or index op, or compositions of them.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from tensorgrad import array_backend, ops
from tensorgrad.core import engine, functions
from tensorgrad.core.args import numpy_names, shape_args
from tensorgrad.core.engine import apply, wrap


class ShapeMethods:
    """Reshaping, permuting, joining, splitting and indexing (mixed into Tensor)."""

    __slots__ = ()

    # ----------------------------------------------------------------- reshape and view
    def reshape(self, *shape: Any) -> Any:
        shape = _resolve(shape_args(required(shape, "reshape", "shape")), self.numel(), "reshape")
        if shape == self.shape:
            return self
        return apply(ops.Reshape(shape), self)

    def view(self, *shape: Any) -> Any:
        """A view with another shape: the same memory, or an error where the data would have
        to be copied (PyTorch's rule; ``reshape`` copies when it must)."""
        target = _resolve(shape_args(required(shape, "view", "shape")), self.numel(), "view")
        out = self.reshape(target)
        if (
            out is not self
            and out._data.size
            and not np.shares_memory(out._data, self._data)
            and not _internally_channels_last(self)
        ):
            raise RuntimeError(
                "view: view size is not compatible with input tensor's size and stride (at "
                "least one dimension spans across two contiguous subspaces). Use .reshape(...) "
                f"instead. (shape {self.shape} with strides "
                f"{tuple(s // self._data.itemsize for s in self._data.strides)} as {target})"
            )
        return out

    def view_as(self, other: Any) -> Any:
        return self.view(other.shape)

    def reshape_as(self, other: Any) -> Any:
        return self.reshape(other.shape)

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Any:
        """Merge dimensions ``start_dim..end_dim`` (inclusive) into one."""
        start = ops.normalize_axis(start_dim, max(self.ndim, 1), "flatten")
        end = ops.normalize_axis(end_dim, max(self.ndim, 1), "flatten")
        if self.ndim == 0:  # dims 0 and -1 only, as PyTorch's
            return self.reshape(1)
        if start > end:
            raise array_backend.ShapeError(
                f"flatten: start_dim {start_dim} comes after end_dim {end_dim}"
            )
        shape = self.shape
        merged = math.prod(shape[start : end + 1])
        return self.reshape((*shape[:start], merged, *shape[end + 1 :]))

    def unflatten(self, dim: int, sizes: Any) -> Any:
        """Split dimension ``dim`` into ``sizes`` (one of which may be -1)."""
        ops.normalize_axis(dim, max(self.ndim, 1), "unflatten")  # PyTorch checks dim first
        if not self.ndim:
            raise RuntimeError("unflatten: cannot unflatten a 0-d tensor")
        axis = ops.normalize_axis(dim, self.ndim, "unflatten")
        sizes = _resolve(shape_args((sizes,)), self.shape[axis], "unflatten")
        return self.reshape((*self.shape[:axis], *sizes, *self.shape[axis + 1 :]))

    @numpy_names
    def squeeze(self, dim: Any = None) -> Any:
        """Remove dimensions of size 1: all of them, or those among ``dim`` (an int or a
        tuple); a named dimension that is not 1 is left as it is (PyTorch's rule)."""
        if dim is None:
            axes = tuple(i for i, n in enumerate(self.shape) if n == 1)
        else:
            axes = ops.normalize_axes(dim, max(self.ndim, 1), "squeeze")  # 0-d: 0 or -1
        return self.reshape(
            tuple(n for i, n in enumerate(self.shape) if not (i in axes and n == 1))
        )

    @numpy_names
    def unsqueeze(self, dim: int) -> Any:
        """Insert a dimension of size 1 at ``dim`` (which may be ``ndim``, or negative)."""
        ndim = self.ndim
        if not -ndim - 1 <= dim <= ndim:
            raise IndexError(
                f"unsqueeze: dimension {dim} is out of range for a tensor of {ndim} dimensions "
                f"(a new dimension goes at {-ndim - 1}..{ndim})"
            )
        shape = list(self.shape)
        shape.insert(dim % (ndim + 1), 1)
        return self.reshape(tuple(shape))

    def expand(self, *sizes: Any) -> Any:
        """A broadcast view with ``sizes`` (-1 keeps a dimension), PyTorch's ``expand``."""
        sizes = shape_args(required(sizes, "expand", "size"))
        lead = len(sizes) - self.ndim
        if lead < 0:
            raise RuntimeError(
                f"expand: the number of sizes ({len(sizes)}) must be at least the tensor's "
                f"number of dimensions ({self.ndim})"
            )
        target = []
        for i, n in enumerate(sizes):
            if i < lead and n == -1:
                raise RuntimeError(
                    f"expand: the expanded size of the tensor (-1) isn't allowed in a leading, "
                    f"non-existing dimension {i} (sizes {list(sizes)}, shape {list(self.shape)})"
                )
            if i >= lead and n == -1:
                n = self.shape[i - lead]
            elif n < 0:
                # PyTorch builds a tensor of negative size here when another size is 0
                raise RuntimeError(
                    f"expand: the expanded size of the tensor ({n}) at dimension {i} is "
                    f"negative (sizes {list(sizes)}, shape {list(self.shape)})"
                )
            target.append(n)
        return self.broadcast_to(tuple(target))

    def expand_as(self, other: Any) -> Any:
        return self.expand(other.shape)

    def broadcast_to(self, *shape: Any) -> Any:
        """PyTorch's ``broadcast_to``: ``expand``, -1 keeping a dimension."""
        shape = shape_args(required(shape, "broadcast_to", "size"))
        if any(n < 0 for n in shape):
            return self.expand(shape)
        if shape == self.shape:
            return self
        return apply(ops.BroadcastTo(shape), self)

    def repeat(self, *sizes: Any) -> Any:
        """Tile the tensor ``sizes[i]`` times along each dimension (PyTorch's ``repeat``,
        NumPy's ``tile``), composed of a reshape, a broadcast and a reshape."""
        sizes = shape_args(required(sizes, "repeat", "repeats"))
        if len(sizes) < self.ndim:
            raise RuntimeError(
                f"repeat: the number of repeats ({len(sizes)}) must be at least the tensor's "
                f"number of dimensions ({self.ndim})"
            )
        shape = (1,) * (len(sizes) - self.ndim) + self.shape
        result = [r * n for r, n in zip(sizes, shape)]
        if any(m < 0 for m in result):  # PyTorch checks the result: -1 times a 0 size is 0
            raise RuntimeError(
                f"repeat: trying to create a tensor with negative dimension "
                f"{min(result)}: {result} (repeats {list(sizes)} of shape {list(self.shape)})"
            )
        sizes = tuple(max(r, 0) for r in sizes)  # a negative repeat only of a 0 size
        x = self.reshape(tuple(d for n in shape for d in (1, n)))
        x = x.broadcast_to(tuple(d for r, n in zip(sizes, shape) for d in (r, n)))
        return x.reshape(tuple(r * n for r, n in zip(sizes, shape)))

    def repeat_interleave(
        self, repeats: Any = None, dim: int | None = None, *, output_size: int | None = None
    ) -> Any:
        """Repeat each element ``repeats`` times (NumPy's ``repeat``): an int, or a tensor of
        one count per element along ``dim``. Without ``repeats``, this tensor holds the
        counts, and the result repeats their indices (``tg.repeat_interleave(counts)``)."""
        if repeats is None:
            counts = _repeat_counts(self, None)
            return engine.wrap(np.repeat(np.arange(counts.size, dtype=np.int64), counts))
        x = self.flatten() if dim is None else self
        axis = 0 if dim is None else ops.normalize_axis(dim, max(x.ndim, 1), "repeat_interleave")
        if not isinstance(repeats, (int, np.integer)):
            counts = _repeat_counts(repeats, x.shape[axis] if x.ndim else 1)
            if counts.ndim == 0:
                repeats = int(counts)
            else:
                picks = np.repeat(np.arange(counts.size), counts)
                return x.reshape(1) if not x.ndim else x[(slice(None),) * axis + (picks,)]
        x = x.unsqueeze(axis + 1)
        target = (*x.shape[: axis + 1], repeats, *x.shape[axis + 2 :])
        return x.broadcast_to(target).flatten(axis, axis + 1)

    # ----------------------------------------------------------------- permutations
    def permute(self, *dims: Any) -> Any:
        """Reorder all dimensions: ``x.permute(2, 0, 1)``."""
        dims = shape_args(required(dims, "permute", "dims"), "dims")
        if len(dims) != self.ndim:
            raise RuntimeError(
                f"permute: {len(dims)} dims given for a tensor of {self.ndim} dimensions"
            )
        return apply(ops.Transpose(dims), self)

    def transpose(self, dim0: int, dim1: int) -> Any:
        """Swap dimensions ``dim0`` and ``dim1`` (PyTorch's meaning; for NumPy's permutation
        use ``permute`` or ``np.transpose(x, axes)``)."""
        ndim = max(self.ndim, 1)
        a = ops.normalize_axis(dim0, ndim, "transpose")
        b = ops.normalize_axis(dim1, ndim, "transpose")
        if not self.ndim or a == b:
            return self
        order = list(range(self.ndim))
        order[a], order[b] = order[b], order[a]
        return apply(ops.Transpose(tuple(order)), self)

    swapaxes = swapdims = transpose

    def t(self) -> Any:
        """The transpose of a tensor of at most 2 dimensions."""
        if self.ndim > 2:
            raise RuntimeError(f"t: expects a tensor with <= 2 dimensions, got shape {self.shape}")
        return self.transpose(0, 1) if self.ndim == 2 else self

    @property
    def T(self) -> Any:
        """All dimensions reversed (the transpose, for a matrix)."""
        if self.ndim < 2:
            return self
        return apply(ops.Transpose(tuple(range(self.ndim - 1, -1, -1))), self)

    @property
    def mT(self) -> Any:
        """The last two dimensions swapped (a batch of matrices transposed)."""
        if self.ndim < 2:
            raise RuntimeError(f"mT: needs at least 2 dimensions, got shape {self.shape}")
        return self.transpose(-2, -1)

    def flip(self, *dims: Any) -> Any:
        dims = shape_args(required(dims, "flip", "dims"), "dims")
        axes = ops.normalize_axes(dims, max(self.ndim, 1), "flip")  # a 0-d tensor: 0 or -1
        return self[tuple(slice(None, None, -1) if i in axes else slice(None)
                          for i in range(self.ndim))]  # fmt: skip

    def roll(self, shifts: Any, dims: Any = None) -> Any:
        """Elements moved ``shifts`` places along ``dims`` (wrapping around); without
        ``dims``, along the flattened tensor, keeping the shape."""
        if dims is None:
            if not isinstance(shifts, (int, np.integer)):
                shifts = tuple(shifts)
                if len(shifts) != 1:
                    raise RuntimeError(
                        f"roll: shifts and dimensions must align. shifts: {len(shifts)}, dims: 0"
                    )
                shifts = shifts[0]
            return self.flatten().roll(int(shifts), 0).reshape(self.shape)
        shifts = (shifts,) if isinstance(shifts, (int, np.integer)) else tuple(shifts)
        dims = (dims,) if isinstance(dims, (int, np.integer)) else tuple(dims)
        if len(shifts) != len(dims):
            raise RuntimeError(
                f"roll: shifts and dimensions must align. shifts: {len(shifts)}, dims: {len(dims)}"
            )
        if not self.ndim and dims:
            raise IndexError(f"roll: dimension specified as {dims[0]} but tensor has no dimensions")
        x = self
        for shift, dim in zip(shifts, dims):
            axis = ops.normalize_axis(dim, max(x.ndim, 1), "roll")
            length = x.shape[axis] if x.ndim else 1
            if length:
                order = np.roll(np.arange(length), int(shift))
                x = x[(slice(None),) * axis + (order,)] if x.ndim else x
        return x

    def diagonal(self, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Any:
        """The ``offset``-th diagonal of the planes of ``dim1`` and ``dim2``, as the last
        dimension (a copy: PyTorch's is a view)."""
        a = ops.normalize_axis(dim1, self.ndim, "diagonal")
        b = ops.normalize_axis(dim2, self.ndim, "diagonal")
        if a == b:
            raise RuntimeError(f"diagonal: dimensions cannot be identical {dim1}, {dim2}")
        rest = [d for d in range(self.ndim) if d not in (a, b)]
        x = self.permute((*rest, a, b))
        first, second = max(-offset, 0), max(offset, 0)
        length = max(0, min(x.shape[-2] - first, x.shape[-1] - second))
        steps = np.arange(length)
        return x[(Ellipsis, steps + first, steps + second)]

    def diag(self, diagonal: int = 0) -> Any:
        """A 1-D tensor as the ``diagonal``-th diagonal of a square matrix of zeros, or a 2-D
        tensor's ``diagonal``-th diagonal."""
        if self.ndim == 2:
            return self.diagonal(diagonal)
        if self.ndim != 1:
            raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {self.ndim}D")
        n, k = self.shape[0], abs(int(diagonal))
        square = functions.where(np.eye(n, dtype=bool), self.unsqueeze(0).expand(n, n), 0)
        square = square if square.dtype == self.dtype else square.to(self.dtype)
        if not k:
            return square
        # above the main diagonal: k columns on the left, k rows below; under it, the mirror
        sides = (k, 0, 0, k) if diagonal > 0 else (0, k, k, 0)
        return apply(ops.ConstantPad(sides), square)

    @engine.reads_values
    def masked_select(self, mask: Any) -> Any:
        """The elements where ``mask`` (a bool tensor; the two broadcast) is True, as 1-D."""
        flags = mask._data if isinstance(mask, type(self)) else np.asarray(mask)
        if flags.dtype != np.bool_:
            raise RuntimeError(f"masked_select: expected a bool mask, got {flags.dtype}")
        shape = np.broadcast_shapes(self.shape, flags.shape)
        x = self if tuple(self.shape) == shape else self.expand(shape)
        return x[np.broadcast_to(flags, shape)]

    # ----------------------------------------------------------------- splitting
    @numpy_names
    def split(self, split_size_or_sections: Any, dim: int = 0) -> list:
        """Chunks of ``split_size`` (the last may be smaller) or of the listed sizes."""
        return functions.split(self, split_size_or_sections, dim)

    @numpy_names
    def chunk(self, chunks: int, dim: int = 0) -> list:
        """At most ``chunks`` pieces of equal size (the last may be smaller)."""
        return functions.chunk(self, chunks, dim)

    @numpy_names
    def unbind(self, dim: int = 0) -> tuple:
        """The slices along ``dim``, with ``dim`` removed."""
        axis = ops.normalize_axis(dim, self.ndim, "unbind")
        lead = (slice(None),) * axis
        return tuple(self[(*lead, i)] for i in range(self.shape[axis]))

    def narrow(self, dim: int, start: int, length: int) -> Any:
        """Elements ``start .. start + length`` along ``dim``; a negative ``start`` counts
        from the end (PyTorch's checks: the whole range must lie inside the dimension)."""
        if not self.ndim:
            raise RuntimeError("narrow: cannot be applied to a 0-d tensor")
        axis = ops.normalize_axis(dim, self.ndim, "narrow")
        size = self.shape[axis]
        if not -size <= start <= size:
            raise IndexError(
                f"narrow: start {start} is out of range for dimension {axis} of size {size}"
            )
        start = start + size if start < 0 else start
        if length < 0 or start + length > size:
            raise RuntimeError(
                f"narrow: start ({start}) + length ({length}) exceeds dimension {axis} of "
                f"size {size}"
            )
        return self[(slice(None),) * axis + (slice(start, start + length),)]

    # ----------------------------------------------------------------- indexing
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

    # ----------------------------------------------------------------- more of PyTorch's
    # scattering, indexing and rearranging (issue 22's missing names; none needs an op of
    # its own: each is a set-item, an index-add, a gather, a permute, a flip or a reshape)
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
        return self.copy_(self.scatter(dim, index, src, value, reduce=reduce))

    @numpy_names
    def scatter_add_(self, dim: int, index: Any, src: Any) -> Any:
        return self.copy_(self.scatter_add(dim, index, src))

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
        return self.copy_(self.scatter_reduce(dim, index, src, reduce, include_self=include_self))

    @numpy_names
    def index_add(self, dim: int, index: Any, source: Any, *, alpha: float = 1) -> Any:
        """``self`` with ``alpha · source`` added at ``index`` along ``dim`` (repeated indices
        add up): ``out[:, index[i]] += alpha · source[:, i]`` for dim 1."""
        source = engine.as_tensor(source)
        _same_dtypes("index_add", self, source)
        where = _along(self, dim, index, source, "index_add")
        scaled = source if alpha == 1 else source * alpha
        if not self.ndim:
            scaled = scaled.reshape(())
        return self + apply(ops.IndexAdd(self.shape, where), scaled)

    @numpy_names
    def index_add_(self, dim: int, index: Any, source: Any, *, alpha: float = 1) -> Any:
        return self.copy_(self.index_add(dim, index, source, alpha=alpha))

    @numpy_names
    def index_copy(self, dim: int, index: Any, source: Any) -> Any:
        """``self`` with ``source``'s slices copied to the positions ``index`` along ``dim``."""
        source = engine.as_tensor(source)
        _same_dtypes("index_copy", self, source)
        where = _along(self, dim, index, source, "index_copy")
        return apply(ops.SetItem(where), self, source if self.ndim else source.reshape(()))

    @numpy_names
    def index_copy_(self, dim: int, index: Any, source: Any) -> Any:
        return self.copy_(self.index_copy(dim, index, source))

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
        return self.copy_(self.index_fill(dim, index, value))

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
        return self.copy_(self.masked_scatter(mask, source))

    def index_put(self, indices: Any, values: Any, accumulate: bool = False) -> Any:
        """``self`` with ``values`` at ``self[indices]`` (a tuple of index tensors), or added
        there with ``accumulate=True`` (repeated indices add up)."""
        where = raw_index(tuple(indices))
        values = engine.as_tensor(values)
        if values.dtype != self.dtype:
            values = values.to(self.dtype)
        if not accumulate:
            return apply(ops.SetItem(where), self, values)
        picked = np.broadcast_to(np.zeros((), np.bool_), self.shape)[where].shape
        values = values if values.shape == picked else values.expand(picked)
        return self + apply(ops.IndexAdd(self.shape, where), values)

    def index_put_(self, indices: Any, values: Any, accumulate: bool = False) -> Any:
        return self.copy_(self.index_put(indices, values, accumulate))

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

    def tile(self, *dims: Any) -> Any:
        """Repeat the tensor ``dims[i]`` times along each dimension; fewer ``dims`` than
        dimensions are padded with 1s in front (unlike ``repeat``)."""
        dims = shape_args(dims, "dims")
        dims = (1,) * (self.ndim - len(dims)) + tuple(dims)
        return self.repeat(dims)

    def movedim(self, source: Any, destination: Any) -> Any:
        """Move the dimensions ``source`` to the positions ``destination``, the others keeping
        their order."""
        sources = (source,) if isinstance(source, (int, np.integer)) else tuple(source)
        targets = (
            (destination,) if isinstance(destination, (int, np.integer)) else tuple(destination)
        )
        if len(sources) != len(targets):
            raise RuntimeError(
                f"movedim: Invalid source or destination dims: source ({list(sources)} dims) "
                f"should contain the same number of dims as destination ({list(targets)} dims)"
            )
        ndim = max(self.ndim, 1)
        src = [ops.normalize_axis(d, ndim, "movedim") for d in sources]
        dst = [ops.normalize_axis(d, ndim, "movedim") for d in targets]
        if len(set(src)) != len(src) or len(set(dst)) != len(dst):
            raise RuntimeError(
                f"movedim: repeated dim in source {sources} or destination {targets}"
            )
        if not self.ndim:
            return self
        order = [d for d in range(self.ndim) if d not in src]
        for d, s in sorted(zip(dst, src)):
            order.insert(d, s)
        return self.permute(order)

    moveaxis = movedim

    def rot90(self, k: int = 1, dims: Any = (0, 1)) -> Any:
        """Rotate by 90° ``k`` times in the plane of ``dims``, from the first towards the
        second."""
        dims = tuple(dims)
        if len(dims) != 2:
            raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
        if self.ndim < 2:
            raise RuntimeError(f"expected total dims >= 2, but got total dims = {self.ndim}")
        a, b = (ops.normalize_axis(d, self.ndim, "rot90") for d in dims)
        if a == b:
            raise RuntimeError(
                f"expected rotation dims to be different, but got dim0 = {a} and dim1 = {b}"
            )
        k %= 4
        if k == 1:
            return self.flip(b).transpose(a, b)
        if k == 2:
            return self.flip(a, b)
        if k == 3:
            return self.flip(a).transpose(a, b)
        return self.clone()

    def fliplr(self) -> Any:
        if self.ndim < 2:
            raise RuntimeError("Input must be >= 2-d.")
        return self.flip(1)

    def flipud(self) -> Any:
        if self.ndim < 1:
            raise RuntimeError("Input must be >= 1-d.")
        return self.flip(0)

    @engine.reads_values
    @numpy_names
    def tensor_split(self, indices_or_sections: Any, dim: int = 0) -> tuple:
        """Split into ``n`` nearly equal pieces (the first ``size % n`` one longer) or at the
        listed indices, as NumPy's ``array_split``; pieces may be empty."""
        if self.ndim == 0:
            raise RuntimeError(
                "tensor_split expected at least a 1-dimensional tensor, but got a tensor with "
                "0 dims"
            )
        axis = ops.normalize_axis(dim, self.ndim, "tensor_split")
        length = self.shape[axis]
        split = indices_or_sections
        if isinstance(split, engine.Tensor):
            split = split._data.item() if split.ndim == 0 else split._data.tolist()
        if isinstance(split, (int, np.integer)):
            n = int(split)
            if n <= 0:
                raise RuntimeError(f"number of sections must be larger than 0, got {n}")
            small, extra = divmod(length, n)
            bounds = np.cumsum([0] + [small + 1] * extra + [small] * (n - extra)).tolist()
        else:
            points = [int(i) for i in split]
            bounds = [0, *points, length]
        lead = (slice(None),) * axis
        pieces = []
        for start, stop in itertools.pairwise(bounds):
            start = min(max(start + length if start < 0 else start, 0), length)
            stop = min(max(stop + length if stop < 0 else stop, 0), length)
            pieces.append(self[(*lead, slice(start, max(start, stop)))])
        return tuple(pieces)

    def diag_embed(self, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Any:
        """A tensor whose planes of ``dim1`` and ``dim2`` hold the last dimension of this one
        on their ``offset``-th diagonal, zeros elsewhere."""
        ndim = self.ndim + 1
        a = ops.normalize_axis(dim1, ndim, "diag_embed")
        b = ops.normalize_axis(dim2, ndim, "diag_embed")
        if a == b:
            raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
        x = self.reshape(1) if not self.ndim else self
        n = x.shape[-1]
        size = n + abs(int(offset))
        steps = np.arange(n)
        rows, cols = steps + max(-offset, 0), steps + max(offset, 0)
        plane = apply(ops.IndexAdd((*x.shape[:-1], size, size), (Ellipsis, rows, cols)), x)
        return plane.movedim((-2, -1), (a, b))

    def diagflat(self, offset: int = 0) -> Any:
        return self.reshape(-1).diag(offset)

    def ravel(self) -> Any:
        return self.reshape(-1)

    @property
    def H(self) -> Any:
        """The conjugate transpose of a matrix (the transpose: tensors here are real)."""
        if self.ndim not in (0, 2):
            raise RuntimeError(
                f"tensor.H is only supported on matrices (2-D tensors). Got {self.ndim}-D tensor."
            )
        return self.transpose(0, 1) if self.ndim == 2 else self

    @property
    def mH(self) -> Any:
        return self.mT


# --------------------------------------------------------------------------- helpers
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


def required(args: tuple, name: str, what: str) -> tuple:
    """``args`` (a method's ``*sizes``), refusing none at all as PyTorch does:
    ``x.reshape()`` is a TypeError, not a reshape to ``()`` (that is ``x.reshape(())``)."""
    if not args:
        raise TypeError(f'{name}() missing 1 required positional arguments: "{what}"')
    return args


def _repeat_counts(repeats: Any, length: int | None) -> np.ndarray:
    """``repeat_interleave``'s counts: a 0-d or 1-D integer tensor (one per element, or one
    for all), non-negative."""
    counts = repeats._data if isinstance(repeats, engine.Tensor) else np.asarray(repeats)
    if counts.dtype.kind not in "iu" or counts.ndim > 1:
        raise RuntimeError(
            f"repeat_interleave: repeats must be a 0-d or 1-D integer tensor, got "
            f"{counts.dtype} of shape {counts.shape}"
        )
    if length is not None and counts.ndim == 1 and counts.size not in (1, length):
        raise RuntimeError(
            f"repeat_interleave: repeats must have the same size as input along dim, got "
            f"{counts.size} for a dimension of size {length}"
        )
    if counts.size and counts.min() < 0:
        raise RuntimeError("repeat_interleave: repeats can not be negative")
    return counts.reshape(()) if counts.size == 1 and length is not None else counts


def _index_array(index: Any, name: str) -> np.ndarray:
    array = index._data if isinstance(index, engine.Tensor) else np.asarray(index)
    if array.dtype.kind not in "iu":
        raise TypeError(f"{name}: index must be an integer tensor, got {array.dtype}")
    return array


def _resolve(shape: tuple[int, ...], size: int, name: str) -> tuple[int, ...]:
    """``shape`` with its one -1 (if any) worked out for ``size`` elements, with a clear error
    when the sizes do not match."""
    unknown = [i for i, n in enumerate(shape) if n == -1]
    if len(unknown) > 1 or any(n < -1 for n in shape):
        raise RuntimeError(f"{name}: invalid shape {shape} (only one dimension can be -1)")
    known = math.prod(n for n in shape if n != -1)
    if unknown:
        if known == 0 or size % known:
            raise RuntimeError(f"{name}: shape {shape} is invalid for input of size {size}")
        shape = tuple(size // known if n == -1 else n for n in shape)
    elif known != size:
        raise RuntimeError(f"{name}: shape {shape} is invalid for input of size {size}")
    return shape


def _scatter_index(index: Any, name: str) -> np.ndarray:
    """The index of ``scatter``: an integer tensor (int64, or int32 as PyTorch now accepts)."""
    array = index._data if isinstance(index, engine.Tensor) else np.asarray(index)
    if array.dtype.kind not in "iu":
        raise RuntimeError(f"{name}(): Expected dtype int64 for index, got {array.dtype}")
    return array


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
            raise RuntimeError(
                f"{name}(): source of shape {tuple(source.shape)} does not match self of shape "
                f"{x.shape} with {indices.size} indices along dim {axis}"
            )
    if not x.ndim:
        return (Ellipsis,) if indices.size else (np.zeros(0, bool).reshape(()),)
    return (slice(None),) * axis + (indices,)


def _internally_channels_last(tensor: Any) -> bool:
    """Whether ``tensor`` is (N, C, H, W) kept channels-last in memory by tensorgrad itself:
    a convolution's output, and what ReLU, pooling and batch norm make of it (docs/conv.md).
    PyTorch's would be contiguous, so ``x.view(x.size(0), -1)`` after a convolution works
    there; here it gives the reshaped copy (docs/porting.md). A channels-last view the user
    made (``permute``) is a recorded view and keeps PyTorch's error."""
    data = tensor._data
    return (
        data.ndim == 4
        and tensor._view is None
        and not data.flags.c_contiguous
        and data.transpose(0, 2, 3, 1).flags.c_contiguous
    )
