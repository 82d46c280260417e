"""The Tensor's reshapes and views: ``reshape``, ``view`` (PyTorch's rule: no copy),
``flatten``, ``squeeze``, ``unsqueeze``, ``expand``, ``broadcast_to``, ``repeat`` (which
tiles; NumPy's element repeat is ``repeat_interleave``) and ``tile``."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tensorgrad import array_backend, ops
from tensorgrad.core import engine
from tensorgrad.core.args import numpy_names, shape_args
from tensorgrad.core.engine import apply
from tensorgrad.core.methods.common import required


class ViewMethods:
    """Reshapes, views, squeezes, expansions and repeats (mixed into Tensor)."""

    __slots__ = ()

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

    def tile(self, *dims: Any) -> Any:
        """Repeat the tensor ``dims[i]`` times along each dimension; fewer ``dims`` than
        dimensions are padded with 1s in front (unlike ``repeat``)."""
        dims = shape_args(dims, "dims")
        dims = (1,) * (self.ndim - len(dims)) + tuple(dims)
        return self.repeat(dims)

    def ravel(self) -> Any:
        return self.reshape(-1)


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
