"""The Tensor's reorderings of dimensions and elements: ``permute`` (all dimensions) and
``transpose`` (two; NumPy's ``transpose(axes)`` is ``np.transpose(t, axes)``), the
properties ``T``, ``mT``, ``H``, ``mH``, ``movedim``, flips, ``roll``, ``rot90``, and the
diagonals (``diagonal``, ``diag``, ``diag_embed``). Each is a permute, a flip, an index or
a reshape."""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorgrad import ops
from tensorgrad.core import functions
from tensorgrad.core.args import shape_args
from tensorgrad.core.engine import apply
from tensorgrad.core.methods.common import required


class PermutationMethods:
    """Reordering dimensions, flips, rolls and diagonals (mixed into Tensor)."""

    __slots__ = ()

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
