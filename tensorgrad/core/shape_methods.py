"""The Tensor's shape methods: views and reshapes, permutations, joins and splits, and
indexing, with PyTorch's names and semantics.

``transpose(dim0, dim1)`` swaps two dimensions and ``permute(*dims)`` reorders them all (NumPy's
``transpose(axes)`` is ``np.transpose(t, axes)``); ``repeat`` tiles (NumPy's element repeat is
``repeat_interleave``); ``squeeze(dim)`` leaves a dimension that is not 1 alone. Most of these
are one ``reshape``, ``transpose``, ``broadcast_to`` or index op, or compositions of them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tensorgrad import backend, ops
from tensorgrad.core import engine, functions
from tensorgrad.core.args import numpy_names, shape_args
from tensorgrad.core.engine import apply


class ShapeMethods:
    """Reshaping, permuting, joining, splitting and indexing (mixed into Tensor)."""

    __slots__ = ()

    # ----------------------------------------------------------------- reshape and view
    def reshape(self, *shape: Any) -> Any:
        shape = _resolve(
            shape_args(required(shape, "reshape", "shape")), self._data.size, "reshape"
        )
        if shape == self.shape:
            return self
        return apply(ops.Reshape(shape), self)

    def view(self, *shape: Any) -> Any:
        """A view with another shape: the same memory, or an error where the data would have
        to be copied (PyTorch's rule; ``reshape`` copies when it must)."""
        target = _resolve(shape_args(required(shape, "view", "shape")), self._data.size, "view")
        out = self.reshape(target)
        if out is not self and out._data.size and not np.shares_memory(out._data, self._data):
            raise RuntimeError(
                f"view: a tensor of shape {self.shape} with these strides cannot be viewed as "
                f"{target} without copying; use .reshape(...) instead"
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
            raise backend.ShapeError(
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
        target = tuple(
            self.shape[i - lead] if n == -1 and i >= lead else n for i, n in enumerate(sizes)
        )
        if any(n < 0 for n in target):
            raise RuntimeError(f"expand: -1 is not allowed in a new leading dimension: {sizes}")
        return self.broadcast_to(target)

    def expand_as(self, other: Any) -> Any:
        return self.expand(other.shape)

    def broadcast_to(self, *shape: Any) -> Any:
        """PyTorch's ``broadcast_to``: ``expand``, -1 keeping a dimension."""
        shape = shape_args(required(shape, "broadcast_to", "size"))
        if -1 in shape:
            return self.expand(shape)
        if shape == self.shape:
            return self
        return apply(ops.BroadcastTo(shape), self)

    def repeat(self, *sizes: Any) -> Any:
        """Tile the tensor ``sizes[i]`` times along each dimension (PyTorch's ``repeat``,
        NumPy's ``tile``), composed of a reshape, a broadcast and a reshape."""
        sizes = shape_args(required(sizes, "repeat", "repeats"))
        if any(n < 0 for n in sizes):
            raise RuntimeError(f"repeat: repeats cannot be negative, got {list(sizes)}")
        if len(sizes) < self.ndim:
            raise RuntimeError(
                f"repeat: the number of repeats ({len(sizes)}) must be at least the tensor's "
                f"number of dimensions ({self.ndim})"
            )
        shape = (1,) * (len(sizes) - self.ndim) + self.shape
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
        x = self.permute(*rest, a, b)
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

    def masked_select(self, mask: Any) -> Any:
        """The elements where ``mask`` (a bool tensor; the two broadcast) is True, as 1-D."""
        flags = mask._data if isinstance(mask, type(self)) else np.asarray(mask)
        if flags.dtype != np.bool_:
            raise RuntimeError(f"masked_select: expected a bool mask, got {flags.dtype}")
        shape = np.broadcast_shapes(self.shape, flags.shape)
        x = self if tuple(self.shape) == shape else self.expand(*shape)
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
            raise backend.IndexRangeError(
                f"index_select: index out of range in self: indices {indices.min()}.."
                f"{indices.max()} for dimension {axis} of size {size}"
            )
        if not self.ndim:
            return self.clone()
        return self[(slice(None),) * axis + (indices.reshape(-1),)]


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
