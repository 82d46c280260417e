"""``scatter_reduce`` with the reductions that are not sums: ``prod``, ``amax`` and ``amin``
(``sum`` and ``mean`` are compositions of ``scatter_add``; ``scatter`` itself is a ``setitem``
at the scattered positions); and ``bincount``, the counts (or summed weights) scattered into
one bin per value.

The position helpers here (``scatter_positions``) turn PyTorch's ``index`` along ``dim`` into
the NumPy index of the elements it addresses, with PyTorch's checks.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorgrad.ops.base import Op, call, constant, normalize_axis, shape_of
from tensorgrad.ops.index import IndexAdd, _check_index, _full_index


def scatter_positions(
    name: str, shape: tuple[int, ...], axis: int, index: np.ndarray, src_shape: Any = None
) -> tuple[int, tuple[Any, ...]]:
    """``(axis, positions)``: the checked axis and, for every element of ``index``, the
    coordinates in the target it addresses (a 0-d target counts as 1-D, as in PyTorch)."""
    axis = normalize_axis(axis, max(len(shape), 1), name)
    index = index.reshape(1) if not index.ndim else index
    _check_index(name, np.empty(shape or (1,), dtype=np.bool_), axis, index)
    if not index.size and index.ndim != max(len(shape), 1):  # an empty index of another
        # rank addresses nothing, whatever the source (PyTorch's)
        return axis, tuple(np.zeros(0, np.intp) for _ in range(max(len(shape), 1)))
    if src_shape is not None:
        src_shape = tuple(src_shape) or (1,)
        if len(src_shape) != index.ndim or any(i > n for i, n in zip(index.shape, src_shape)):
            raise RuntimeError(
                f"{name}: index of shape {index.shape} is larger than src of shape {src_shape}"
            )
    return axis, _full_index(index, axis)


class ScatterReduce(Op):
    """``x`` with ``src`` folded in at ``index`` along ``axis`` by ``prod``, ``amax`` or
    ``amin`` (``include_self``: whether x's own value takes part where something lands).

    VJPs, PyTorch's: for ``amax``/``amin`` every element equal to the result (x's own, when it
    took part, and each src that landed there) shares the gradient evenly; for ``prod`` each
    factor gets ``g · (product of the others)``, exact also where factors are 0."""

    name = "scatter_reduce"
    batching = "positions"

    def __init__(self, positions: tuple[Any, ...], reduce: str, include_self: bool):
        self.positions, self.reduce, self.include_self = positions, reduce, include_self

    def _landed(self, shape: tuple[int, ...]) -> np.ndarray:
        count = np.zeros(shape or (1,), dtype=np.int64)
        np.add.at(count, self.positions, 1)
        return count.reshape(shape)

    def _src(self, src):
        src = src.reshape(1) if not np.ndim(src) else src
        shape = np.broadcast_shapes(*(np.shape(p) for p in self.positions))
        if len(shape) != np.ndim(src):  # an empty index of another rank: nothing is taken
            return src.reshape(-1)[:0].reshape(shape)
        return src[tuple(slice(n) for n in shape)]

    def forward(self, x, src):
        shape = shape_of(x)
        out = np.array(x, copy=True).reshape(shape or (1,))
        picked = self._src(src)
        ufunc = {"prod": np.multiply, "amax": np.maximum, "amin": np.minimum}[self.reduce]
        if not self.include_self:
            landed = self._landed(shape).reshape(out.shape) > 0
            identity = {"prod": 1, "amax": -np.inf, "amin": np.inf}[self.reduce]
            if out.dtype.kind != "f" and self.reduce != "prod":
                info = np.iinfo(out.dtype) if out.dtype.kind in "iu" else None
                identity = (info.min if self.reduce == "amax" else info.max) if info else identity
            out[landed] = identity
        ufunc.at(out, self.positions, picked)
        return out.reshape(shape)

    def backward(self, grad, out, x, src):
        # which elements took part, and the counts, come from the values (constants); the
        # gradient's arithmetic runs on arrays, or on Tensors when recorded (create_graph)
        nx, nsrc = self.needs_input_grad
        shape = shape_of(x)
        flat_shape = shape or (1,)
        g = grad.reshape(flat_shape)
        result = np.asarray(out).reshape(flat_shape)
        x_values = np.asarray(x).reshape(flat_shape)
        src_values = self._src(np.asarray(src))
        landed = self._landed(shape).reshape(flat_shape)
        self_in = np.ones(flat_shape, bool) if self.include_self else landed == 0
        p = self.positions
        if self.reduce == "prod":
            dx, dsrc = self._product_vjp(g, out, x, src, x_values, src_values, self_in)
        else:
            wins_self = self_in & (x_values == result)
            count = wins_self.astype(np.int64)
            wins_src = src_values == result[p]
            np.add.at(count, p, wins_src.astype(np.int64))
            share = g / np.maximum(count, 1).astype(result.dtype)
            dx = share * wins_self
            dsrc = share[p] * wins_src
        dsrc_full = None
        if nsrc:
            src_shape = shape_of(src) or (1,)
            region = tuple(slice(n) for n in np.shape(src_values))
            dsrc_full = call(IndexAdd, dsrc, shape=src_shape, index=region).reshape(shape_of(src))
        return (dx.reshape(shape) if nx else None), dsrc_full

    def _product_vjp(self, g, out, x, src, x_values, src_values, self_in):
        """Each factor's gradient, ``g ·`` (the product of the others): ``out / factor``
        where the factor is not 0; where it is, the product of the other factors, which is
        the product of the nonzero ones when this is the only zero, else 0."""
        p = self.positions
        flat_shape = x_values.shape
        zeros = np.where(self_in & (x_values == 0), 1, 0)
        np.add.at(zeros, p, (src_values == 0).astype(np.int64))
        if not zeros.any():
            result = out.reshape(flat_shape)
            x1 = x.reshape(flat_shape)
            dx = g * np.where(self_in, result / np.where(self_in, x1, 1), 0)
            picked = (src.reshape(1) if not np.ndim(src) else src)[
                tuple(slice(n) for n in np.shape(src_values))
            ]
            return dx, g[p] * result[p] / picked
        if not isinstance(g, np.ndarray):
            raise RuntimeError(
                "scatter_reduce: second derivatives of reduce='prod' where a factor is 0 are "
                "not supported (create_graph=True); the first derivative is exact there"
            )
        result = np.asarray(out).reshape(flat_shape)
        nonzero = np.where(self_in & (x_values != 0), x_values, 1).astype(result.dtype)
        np.multiply.at(nonzero, p, np.where(src_values == 0, 1, src_values))

        def others(values, zero_count, nonzero_product, total):
            safe = np.where(values == 0, 1, values)
            return np.where(
                values == 0, np.where(zero_count == 1, nonzero_product, 0), total / safe
            )

        dx = g * np.where(self_in, others(x_values, zeros, nonzero, result), 0)
        return dx, g[p] * others(src_values, zeros[p], nonzero[p], result[p])

    def jvp(self, tangents, out, x, src):
        """The output's tangent: for amax/amin the mean tangent of the elements equal to the
        result; for prod Σ over the factors of (their tangent · the product of the others)."""
        tx, tsrc = tangents
        shape = shape_of(x)
        flat_shape = shape or (1,)
        result = constant(out).reshape(flat_shape)
        x_values = constant(x).reshape(flat_shape)
        src_values = self._src(constant(src))
        landed = self._landed(shape).reshape(flat_shape)
        self_in = np.ones(flat_shape, bool) if self.include_self else landed == 0
        p = self.positions
        tx = np.zeros(flat_shape) if tx is None else tx.reshape(flat_shape)
        ts = np.zeros(src_values.shape) if tsrc is None else self._src(tsrc)

        def scattered(values: Any) -> Any:  # np.add.at into zeros, recorded on Tensors
            return call(IndexAdd, values, shape=flat_shape, index=p)

        if self.reduce == "prod":
            # the VJP's weights are ∂out/∂factor: the same numbers carry the tangents
            ones = np.ones(flat_shape, dtype=result.dtype)
            dx, dsrc = self._product_vjp(ones, out, x, src, x_values, src_values, self_in)
            total = tx * dx + scattered(ts * dsrc)
            return np.where(self_in | (landed > 0), total, tx).reshape(shape)
        wins_self = self_in & (x_values == result)
        count = wins_self.astype(np.int64)
        wins_src = src_values == result[p]
        np.add.at(count, p, wins_src.astype(np.int64))
        total = tx * wins_self + scattered(ts * wins_src)
        return (total / np.maximum(count, 1)).reshape(shape)


class Bincount(Op):
    """How often each value of a 1-D tensor of non-negative integers occurs, over at least
    ``minlength`` bins: int64 counts, or with ``weights`` the sum of the weights of each
    value's occurrences, float32 for float32 weights and float64 for any other (PyTorch's
    dtypes). PyTorch defines no derivative for bincount: where the weights require grad its
    result does too, and backward refuses, here as there."""

    name = "bincount"
    uses_inputs = False  # backward reads nothing: it refuses
    no_jvp = "PyTorch defines no derivative for bincount"

    def __init__(self, minlength: int = 0):
        self.minlength = minlength

    def forward(self, input, weights=None):
        if weights is None:
            return np.bincount(input, minlength=self.minlength).astype(np.int64, copy=False)
        dtype = np.float32 if weights.dtype == np.float32 else np.float64
        return np.bincount(input, weights, self.minlength).astype(dtype, copy=False)

    def backward(self, grad, out, input, weights=None):
        raise RuntimeError(
            "bincount: the derivative for 'weights' is not implemented, as in PyTorch "
            '("derivative for aten::bincount is not implemented"); detach the weights, or '
            "sum them with index_add or scatter_add, which are differentiable"
        )
