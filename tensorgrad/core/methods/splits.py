"""The Tensor's splits: ``split``, ``chunk``, ``tensor_split``, ``unbind`` and ``narrow``,
each a set of slices (the joins, ``tg.cat`` and ``tg.stack``, are in ``core/functions.py``)."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from tensorgrad import ops
from tensorgrad.core import engine, functions
from tensorgrad.core.args import numpy_names


class SplitMethods:
    """Splitting a tensor into pieces (mixed into Tensor)."""

    __slots__ = ()

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
