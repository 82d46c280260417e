"""Convolution as im2col followed by a matrix product, its adjoint col2im, and constant padding.

``Unfold`` (im2col) copies every kernel-sized window of the input into a column; ``Fold``
(col2im) is its adjoint: it adds each column back onto the window it came from, so
overlapping windows sum. A convolution is ``W · unfold(x)``, so its VJPs are a matrix
product's (dW = dZ · colsᵀ, dcols = Wᵀ · dZ) followed by ``Fold``. docs/conv.md derives it.

The fast path of ``Conv2d`` (on arrays) works channels-last: it pads the input into
(N, Hp, Wp, C) memory once (no copy when it is stored so already), and for each cache-sized
chunk of the batch copies the windows into a (rows, kH·kW·C) matrix and multiplies. The
(rows, O) product is the output's (N, OH, OW, O) memory, returned as an (N, O, OH, OW) array
stored channels-last: the next convolution reads it without a copy. The chunks are shared
between two threads (``ops/parallel.py``). When the engine records the backward pass
(``create_graph=True``) the same VJP is composed of ``Unfold``, ``Fold`` and matrix
products on Tensors, so second derivatives work. docs/conv.md explains each speed trick.

Padding is given per side, ``((top, bottom), (left, right))``: PyTorch's ``padding='same'``
pads one more at the bottom and right for an even dilated kernel.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.lib.stride_tricks import as_strided

from tensorgrad.ops import parallel
from tensorgrad.ops.base import Op, add_tangents, call, linear_jvp, shape_of

Pair = tuple[int, int]
Padding = tuple[Pair, Pair]


# --------------------------------------------------------------------------- arguments
def int_tuple(value: Any, n: int, what: str, op: str) -> tuple[int, ...]:
    """An int, or a sequence of ``n`` ints, as a tuple of ``n`` ints (PyTorch's ``_pair``)."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return (int(value),) * n
    if isinstance(value, Sequence) and not isinstance(value, str):
        items = tuple(value)
        if len(items) == n and all(
            isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in items
        ):
            return tuple(int(v) for v in items)
    raise TypeError(
        f"{op}: {what} must be an int or a tuple of {n} ints, got {value!r}"
        if n > 1
        else f"{op}: {what} must be an int or a tuple of one int, got {value!r}"
    )


def positive(values: tuple[int, ...], what: str, op: str) -> tuple[int, ...]:
    if any(v <= 0 for v in values):
        raise ValueError(
            f"{op}: {what} must be positive, got {values if len(values) > 1 else values[0]}"
        )
    return values


def conv_padding(
    padding: Any,
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    dilation: tuple[int, ...],
    op: str,
) -> tuple[Pair, ...]:
    """Padding per side for each spatial axis, from an int, a tuple, ``'valid'`` or ``'same'``.

    ``'same'`` keeps the size: it pads ``dilation · (kernel − 1)`` in all, half of it (rounded
    down) before and the rest after, as PyTorch does; it needs stride 1.
    """
    n = len(kernel)
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0),) * n
        if padding == "same":
            if any(s != 1 for s in stride):
                raise ValueError(f"{op}: padding='same' is not supported for strided convolutions")
            totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
            return tuple((t // 2, t - t // 2) for t in totals)
        raise ValueError(f"{op}: invalid padding string {padding!r}; use 'valid', 'same' or ints")
    pads = int_tuple(padding, n, "padding", op)
    if any(p < 0 for p in pads):
        raise ValueError(f"{op}: negative padding is not supported, got {padding!r}")
    return tuple((p, p) for p in pads)


def check_conv(
    op: str,
    x_shape: tuple[int, ...],
    w_shape: tuple[int, ...],
    b_shape: tuple[int, ...] | None,
    stride: tuple[int, ...],
    padding: tuple[Pair, ...],
    dilation: tuple[int, ...],
    groups: int,
) -> tuple[int, ...]:
    """Check a convolution's shapes, naming what is wrong; return the output's spatial size.

    ``x_shape`` is (N, C, *spatial) or, unbatched, (C, *spatial); ``w_shape`` is
    (O, C/groups, *kernel), with one spatial axis per entry of ``stride``.
    """
    d = len(stride)
    spatial = ("L",) if d == 1 else ("H", "W")
    kernel = ", ".join(f"k{a}" for a in spatial) if d > 1 else "k"
    if len(w_shape) != d + 2:
        raise ValueError(
            f"{op}: weight must be {d + 2}-D (out_channels, in_channels/groups, {kernel}), "
            f"got shape {w_shape}"
        )
    if len(x_shape) not in (d + 1, d + 2):
        dims = ", ".join(spatial)
        raise ValueError(
            f"{op}: expected a {d + 1}-D (C, {dims}) or {d + 2}-D (N, C, {dims}) input, got "
            f"shape {x_shape}"
        )
    if groups < 1:
        raise ValueError(f"{op}: groups must be a positive integer, got {groups}")
    if w_shape[0] < 1:
        raise ValueError(f"{op}: weight of shape {w_shape} has no output channels")
    if w_shape[0] % groups:
        raise ValueError(
            f"{op}: groups={groups} must divide the weight's {w_shape[0]} output channels "
            f"(weight of shape {w_shape})"
        )
    channels = x_shape[len(x_shape) - d - 1]
    if channels != w_shape[1] * groups:
        raise ValueError(
            f"{op}: input of shape {x_shape} has {channels} channels, but weight of shape "
            f"{w_shape} with groups={groups} expects {w_shape[1] * groups}"
        )
    if b_shape is not None and b_shape != w_shape[:1]:
        raise ValueError(
            f"{op}: bias of shape {b_shape} does not match weight of shape {w_shape} "
            f"(expected ({w_shape[0]},))"
        )
    sizes = x_shape[len(x_shape) - d :]
    out = tuple(
        output_length(size, k, s, dl, before, after)
        for size, k, s, dl, (before, after) in zip(sizes, w_shape[2:], stride, dilation, padding)
    )
    if min(out) < 1:
        padded_size = tuple(size + a + b for size, (a, b) in zip(sizes, padding))
        dilated = tuple(dl * (k - 1) + 1 for k, dl in zip(w_shape[2:], dilation))
        raise ValueError(
            f"{op}: padded input of spatial size {padded_size} (input {x_shape}, padding "
            f"{padding}) is smaller than the kernel {dilated} (weight {w_shape}, dilation "
            f"{dilation})"
        )
    return out


def output_length(
    size: int, kernel: int, stride: int, dilation: int, before: int, after: int
) -> int:
    """Windows along one axis: ⌊(size + before + after − dilation·(kernel−1) − 1) / stride⌋ + 1."""
    return (size + before + after - dilation * (kernel - 1) - 1) // stride + 1


def window_view(
    xp: np.ndarray, out_hw: Pair, kernel: Pair, stride: Pair, dilation: Pair
) -> np.ndarray:
    """Every window of an (N, C, Hp, Wp)-shaped array as a read-only (N, C, OH, OW, kH, kW)
    view, whatever xp's memory layout: no copy (this is the one ``as_strided`` in the ops)."""
    sn, sc, sh, sw = xp.strides
    return as_strided(
        xp,
        (*xp.shape[:2], *out_hw, *kernel),
        (sn, sc, sh * stride[0], sw * stride[1], sh * dilation[0], sw * dilation[1]),
        writeable=False,
    )


def offset_view(
    xp: np.ndarray,
    i: int,
    j: int,
    out_hw: Pair,
    stride: Pair,
    dilation: Pair,
    axes: Pair = (2, 3),
) -> np.ndarray:
    """The elements at kernel offset (i, j) of every window, xp[.., i·d + s·oh, j·d + s·ow, ..]
    for all (oh, ow), with the spatial axes at ``axes``: a basic-slicing view (so it can be
    written to: the scatter-adds of col2im and pooling go through it)."""
    index = [slice(None)] * xp.ndim
    for axis, k, s, d, o in zip(axes, (i, j), stride, dilation, out_hw):
        index[axis] = slice(k * d, k * d + s * (o - 1) + 1, s)
    return xp[tuple(index)]


def channels_last(x: np.ndarray) -> bool:
    """Whether an (N, C, H, W)-shaped array is stored as (N, H, W, C): the layout ``Conv2d``
    returns, and the one its fast path reads without copying."""
    return x.transpose(0, 2, 3, 1).flags.c_contiguous


def memory_order(x: np.ndarray) -> tuple[np.ndarray, Pair]:
    """An (N, C, H, W)-shaped array with its axes in the order of its memory, and where its
    spatial axes went: an (N, H, W, C) view and (1, 2) if it is channels-last, else itself
    and (2, 3). Elementwise work on strided views of it runs several times faster in that
    order: NumPy's iterator loops badly over views whose axes are out of memory order."""
    if x.ndim == 4 and channels_last(x) and not x.flags.c_contiguous:
        return x.transpose(0, 2, 3, 1), (1, 2)
    return x, (2, 3)


def same_order(x: np.ndarray, axes: Pair) -> np.ndarray:
    """An (N, C, H, W)-shaped array in the axis order :func:`memory_order` chose for another
    array (its spatial axes at ``axes``), so that the two line up element for element: an
    array whose H and W are 1 is both channels-last and contiguous, and memory_order alone
    may order it otherwise than its input."""
    return x.transpose(0, 2, 3, 1) if tuple(axes) == (1, 2) else x


#: a tiny channels-last array: ``np.empty_like(_CHANNELS_LAST, shape=..., order="K")`` lays
#: out a new array of any (N, C, H, W) shape as it is laid out
_CHANNELS_LAST = np.empty((2, 2, 2, 2), dtype=np.int8).transpose(0, 3, 1, 2)


def new_array(shape: tuple[int, ...], dtype: Any, nhwc: bool, fill: Any = None) -> np.ndarray:
    """A fresh (N, C, H, W) array, channels-last if ``nhwc``, that owns its memory (no
    ``base``, unlike a transposed view: the engine lets an op reuse a gradient only then);
    filled with ``fill`` unless it is None."""
    if nhwc:
        array = np.empty_like(_CHANNELS_LAST, dtype=dtype, order="K", shape=shape)
    else:
        array = np.empty(shape, dtype=dtype)
    if fill is not None:
        array.fill(fill)
    return array


def padded(x: np.ndarray, padding: Padding, value: Any = 0, nhwc: bool | None = None) -> np.ndarray:
    """``x`` (N, C, H, W) with ``padding`` added around H and W, filled with ``value``: a
    fresh array in x's layout (channels-last if x is, or if ``nhwc``), or x itself when
    there is nothing to add and the layout is already right."""
    (top, bottom), (left, right) = padding
    n, c, h, w = x.shape
    nhwc = channels_last(x) if nhwc is None else nhwc
    if not (top or bottom or left or right) and (
        channels_last(x) if nhwc else x.flags.c_contiguous
    ):
        return x
    buffer = new_array((n, c, h + top + bottom, w + left + right), x.dtype, nhwc, value)
    target, axes = memory_order(buffer)
    source = x.transpose(0, 2, 3, 1) if axes == (1, 2) else x
    index = [slice(None)] * 4
    index[axes[0]], index[axes[1]] = slice(top, top + h), slice(left, left + w)
    target[tuple(index)] = source
    return buffer


def cropped(xp: np.ndarray, padding: Padding, hw: Pair) -> np.ndarray:
    """The inverse of :func:`padded` on shapes: the (H, W) interior of a padded array (a view,
    or xp itself when there is no padding)."""
    (top, _), (left, _) = padding
    if xp.shape[2:] == tuple(hw):
        return xp
    return xp[:, :, top : top + hw[0], left : left + hw[1]]


# --------------------------------------------------------------------------- im2col and col2im
class _Window(Op):
    """What ``Unfold`` and ``Fold`` share: the kernel, dilation, per-side padding and stride."""

    uses_inputs = False

    def __init__(self, kernel_size: Pair, dilation: Pair, padding: Padding, stride: Pair):
        self.kernel, self.dilation, self.padding, self.stride = (
            tuple(kernel_size),
            tuple(dilation),
            tuple(tuple(p) for p in padding),
            tuple(stride),
        )

    def _blocks(self, hw: Pair) -> Pair:
        (top, bottom), (left, right) = self.padding
        return (
            output_length(hw[0], self.kernel[0], self.stride[0], self.dilation[0], top, bottom),
            output_length(hw[1], self.kernel[1], self.stride[1], self.dilation[1], left, right),
        )

    def _params(self) -> dict[str, Any]:
        return {
            "kernel_size": self.kernel,
            "dilation": self.dilation,
            "padding": self.padding,
            "stride": self.stride,
        }

    def _describe(self, hw: Pair) -> str:
        (top, _), (left, _) = self.padding
        return (
            f"input with spatial size {hw}, kernel_size={self.kernel}, dilation="
            f"{self.dilation}, padding={(top, left)}, stride={self.stride}"
        )


class Unfold(_Window):
    """im2col: (N, C, H, W) → (N, C·kH·kW, L), one column per window, L windows in row-major
    order, rows ordered (channel, kernel row, kernel column), as PyTorch's ``unfold``."""

    name = "unfold"

    def forward(self, x):
        if len(shape_of(x)) != 4:
            raise ValueError(f"unfold: expected a 4-D (N, C, H, W) input, got shape {shape_of(x)}")
        n, c, h, w = x.shape
        blocks = self._blocks((h, w))
        if min(blocks) < 1:
            raise ValueError(
                f"unfold: {self._describe((h, w))} gives {blocks} sliding blocks; each must be "
                "at least 1 (the input is smaller than the dilated kernel)"
            )
        xp = padded(x, self.padding, nhwc=False)
        windows = window_view(xp, blocks, self.kernel, self.stride, self.dilation)
        kh, kw = self.kernel
        # (N, C, OH, OW, kH, kW) → (N, C, kH, kW, OH, OW): the reshape makes the one copy
        return windows.transpose(0, 1, 4, 5, 2, 3).reshape(n, c * kh * kw, blocks[0] * blocks[1])

    def backward(self, grad, out, x):
        return (call(Fold, grad, output_size=shape_of(x)[2:], **self._params()),)

    jvp = linear_jvp  # linear in its input: the op itself maps the tangent


class Fold(_Window):
    """col2im, the adjoint of ``Unfold``: (N, C·kH·kW, L) → (N, C, H, W), adding every column
    onto the window it stands for; where windows overlap their values sum. Not an inverse:
    ``fold(unfold(x))`` multiplies each pixel by the number of windows that cover it."""

    name = "fold"

    def __init__(
        self, output_size: Pair, kernel_size: Pair, dilation: Pair, padding: Padding, stride: Pair
    ):
        super().__init__(kernel_size, dilation, padding, stride)
        self.output_size = tuple(output_size)

    def forward(self, cols):
        shape = shape_of(cols)
        kh, kw = self.kernel
        if len(shape) != 3:
            raise ValueError(f"fold: expected a 3-D (N, C·kH·kW, L) input, got shape {shape}")
        n, rows, length = shape
        if rows % (kh * kw):
            raise ValueError(
                f"fold: input's dimension 1 ({rows}) must be divisible by the product of "
                f"kernel_size {self.kernel} ({kh * kw}); input shape {shape}"
            )
        blocks = self._blocks(self.output_size)
        if min(blocks) < 1 or blocks[0] * blocks[1] != length:
            raise ValueError(
                f"fold: {self._describe(self.output_size)} gives {blocks} sliding blocks, "
                f"{max(blocks[0], 0) * max(blocks[1], 0)} in all, but the input of shape "
                f"{shape} has {length} in dimension 2"
            )
        c = rows // (kh * kw)
        (top, bottom), (left, right) = self.padding
        h, w = self.output_size
        columns = cols.reshape(n, c, kh, kw, *blocks)
        out = np.zeros((n, c, h + top + bottom, w + left + right), dtype=cols.dtype)
        for i in range(kh):
            for j in range(kw):
                view = offset_view(out, i, j, blocks, self.stride, self.dilation)
                view += columns[:, :, i, j]
        return cropped(out, self.padding, self.output_size)

    def backward(self, grad, out, cols):
        return (call(Unfold, grad, **self._params()),)

    jvp = linear_jvp  # linear in its input: the op itself maps the tangent


# --------------------------------------------------------------------------- convolution

#: im2col works on chunks of the batch of about this many elements (2 MB of float32): a
#: chunk's columns stay in cache from the copy that makes them to the product that reads
#: them, and the products run at their fastest on matrices of this size. ``CHUNK_ELEMENTS =
#: 2**62`` makes every batch one chunk (the tests run both ways).
CHUNK_ELEMENTS: int = 1 << 19


#: a batch is cut into at least this many chunks where it has the samples, so that the
#: threads share small im2cols evenly too (a constant, not the thread count: the chunks,
#: and so the order in which dW's parts are summed, are the same with any number of threads)
MIN_CHUNKS: int = 16


def _chunk_samples(per_sample: int, batch: int) -> int:
    """How many samples of ``per_sample`` im2col elements make one chunk of a batch."""
    return max(1, min(CHUNK_ELEMENTS // max(per_sample, 1), -(-batch // MIN_CHUNKS)))


def _conv_windows(xp, out_hw: Pair, kernel: Pair, stride: Pair, dilation: Pair, groups: int):
    """The windows of a padded (N, C, Hp, Wp) input as an (N, OH, OW, G, kH, kW, C/G) view,
    the channels of each group innermost: copied to an (N·OH·OW, G, kH·kW·C/G) matrix, the
    im2col of a channels-last input reads contiguous stretches of kW·C/G elements."""
    n, c = xp.shape[:2]
    windows = window_view(xp, out_hw, kernel, stride, dilation)
    windows = windows.reshape(n, groups, c // groups, *out_hw, *kernel)
    return windows.transpose(0, 3, 4, 1, 5, 6, 2)


def _scatter_input_grad(dz, w_offsets, block, dxp, out_hw, stride, dilation) -> None:
    """col2im(dZ · W) for one chunk, into its part of the padded, channels-last dx (N, Hp,
    Wp, C), which it overwrites, one kernel offset at a time: dZ · W[:, :, i, j] is an
    (N·OH·OW, C) block whose rows are whole image rows, so its scatter-add runs over long
    contiguous stretches. With stride 1 the first offset's block covers all of dx but two
    strips, so it is copied rather than added to zeros."""
    kh, kw, g, og, cg = w_offsets.shape
    values = block.reshape(dxp.shape[0], *out_hw, g * cg)
    dense = tuple(stride) == (1, 1)
    if dense:  # what offset (0, 0) does not reach
        dxp[:, out_hw[0] :] = 0
        dxp[:, : out_hw[0], out_hw[1] :] = 0
    else:
        dxp[...] = 0
    for i in range(kh):
        for j in range(kw):
            for k in range(g):
                np.matmul(
                    dz[:, k * og : (k + 1) * og],
                    w_offsets[i, j, k],
                    out=block[:, k * cg : (k + 1) * cg],
                )
            view = offset_view(dxp, i, j, out_hw, stride, dilation, axes=(1, 2))
            if dense and i == j == 0:
                np.copyto(view, values)
            else:
                view += values


def finite(array: np.ndarray) -> bool:
    """Whether every element is finite: one cheap pass (a sum) without a temporary."""
    with np.errstate(invalid="ignore", over="ignore"):
        return not array.size or bool(np.isfinite(np.add.reduce(array, axis=None)))


def running_max(out: np.ndarray, *views: np.ndarray) -> None:
    """``out`` = the elementwise maximum of the views (NaN wins, as in PyTorch)."""
    if len(views) == 1:
        np.copyto(out, views[0])
        return
    np.maximum(views[0], views[1], out=out)
    for view in views[2:]:
        np.maximum(out, view, out=out)


def _tiles(z: np.ndarray, pool: Pair, pooled_hw: Pair) -> list[np.ndarray]:
    """The elements at each offset (a, b) of the (kH, kW) tiles of a channels-last chunk
    (s, OH, OW, C), in the tiles' row-major order: (s, PH, PW, C) views (splitting axes of a
    slice is always a view), the rows and columns past the last whole tile left out."""
    (kh, kw), (ph, pw) = pool, pooled_hw
    s, c = z.shape[0], z.shape[3]
    blocks = z[:, : ph * kh, : pw * kw].reshape(s, ph, kh, pw, kw, c)
    return [blocks[:, :, a, :, b] for a in range(kh) for b in range(kw)]


def _pool_tiles(z: np.ndarray, pool: Pair, out: np.ndarray, winners: np.ndarray) -> None:
    """Max-pool a chunk ``z`` (s, OH, OW, C) over its tiles into ``out`` (s, PH, PW, C), NaN
    winning as in PyTorch, and write into ``winners`` which offset of each tile won: the
    first maximum in the tile's row-major order, as PyTorch's max pool picks (a NaN tile's
    winner is never used: its gradient stops at the ReLU, NaN > 0 being false)."""
    views = _tiles(z, pool, out.shape[1:3])
    running_max(out, *views)
    # the winner's offset = how many offsets before it differ from the maximum (sums of
    # masks: several times faster than NumPy's masked copies)
    behind = np.not_equal(views[0], out)
    np.copyto(winners, behind)
    differs = np.empty_like(behind)
    for view in views[1:-1]:
        behind &= np.not_equal(view, out, out=differs)
        winners += behind


def _unpool_tiles(grad, out, winners, pool: Pair, dz: np.ndarray, exact: bool) -> np.ndarray:
    """The VJP of :func:`_pool_tiles` after a ReLU for one chunk: each tile's gradient to its
    winner if the tile's maximum is positive (where the ReLU passed it), 0 elsewhere,
    written into ``dz`` (s, OH, OW, C). Returns the pooled gradient that passed (its sums
    are the bias's gradient). ``exact``: the gradient holds ±∞ or NaN, and the losers must
    still get exactly 0, so masked copies rather than products by the masks."""
    ph, pw = grad.shape[1:3]
    (kh, kw), (oh, ow) = pool, dz.shape[1:3]
    if oh > ph * kh:  # rows and columns no tile covers
        dz[:, ph * kh :] = 0
    if ow > pw * kw:
        dz[:, :, pw * kw :] = 0
    passed = np.where(out > 0, grad, 0) if exact else np.multiply(grad, out > 0)
    for k, view in enumerate(_tiles(dz, pool, (ph, pw))):
        if exact:
            view[...] = 0
            np.copyto(view, passed, where=winners == k)
        else:
            np.multiply(passed, winners == k, out=view)
    return passed


class Conv2d(Op):
    """2-D cross-correlation (PyTorch's ``conv2d``) of x (N, C, H, W) with weight
    (O, C/groups, kH, kW) and an optional bias (O,): out (N, O, OH, OW)."""

    name = "conv2d"
    #: whether a ReLU follows, fused in (:class:`Conv2dRelu`)
    relu: ClassVar[bool] = False
    #: the (kH, kW) tiles a max-pool over the ReLU's output takes, fused in
    #: (:class:`Conv2dReluMaxPool`); None: no pooling
    pool: tuple[int, int] | None = None

    def __init__(
        self,
        stride: Pair = (1, 1),
        padding: Padding = ((0, 0), (0, 0)),
        dilation: Pair = (1, 1),
        groups: int = 1,
    ):
        self.stride, self.dilation, self.groups = tuple(stride), tuple(dilation), int(groups)
        self.padding = tuple(tuple(p) for p in padding)

    def _geometry(self, x: Any, weight: Any, bias: Any) -> Pair:
        """Check the shapes; return the output's (OH, OW)."""
        b = None if bias is None else shape_of(bias)
        return check_conv(
            self.name, shape_of(x), shape_of(weight), b, self.stride, self.padding,
            self.dilation, self.groups,
        )  # fmt: skip

    # ---- forward
    def forward(self, x, weight, bias=None):
        oh, ow = self._geometry(x, weight, bias)
        n = x.shape[0]
        o, cg, kh, kw = weight.shape
        g, og, kg = self.groups, o // self.groups, kh * kw * cg
        # padded, channels-last (an (N, C, Hp, Wp) view of (N, Hp, Wp, C) memory)
        xp = padded(x, self.padding, nhwc=True)
        windows = _conv_windows(xp, (oh, ow), (kh, kw), self.stride, self.dilation, g)
        # the weight as (G, O/G, kH·kW·C/G), columns ordered as the windows' (small: a copy)
        wmat = weight.reshape(g, og, cg, kh, kw).transpose(0, 1, 3, 4, 2).reshape(g, og, kg)
        dtype = np.result_type(x, weight) if bias is None else np.result_type(x, weight, bias)
        pool = self.pool
        if pool:  # the pooled output, and which element of each tile won
            ph, pw = oh // pool[0], ow // pool[1]
            out = new_array((n, o, ph, pw), dtype, nhwc=True)
            winners = np.empty((n, ph, pw, o), np.uint8)
        else:
            out = new_array((n, o, oh, ow), dtype, nhwc=True)
        out_nhwc = out.transpose(0, 2, 3, 1)  # contiguous
        step = _chunk_samples(oh * ow * g * kg, n)

        def work(chunks: Iterator[tuple[int, int, int]]) -> None:
            size = min(step, n)
            cols = np.empty((size, *windows.shape[1:]), dtype=x.dtype)
            z = np.empty((size, oh, ow, o), dtype) if pool else None  # a chunk, before pooling
            for _, lo, hi in chunks:
                rows = (hi - lo) * oh * ow
                np.copyto(cols[: hi - lo], windows[lo:hi])  # im2col of one chunk
                matrix = cols[: hi - lo].reshape(rows, g, kg)
                result = (z[: hi - lo] if pool else out_nhwc[lo:hi]).reshape(rows, o)
                for k in range(g):
                    np.matmul(matrix[:, k], wmat[k].T, out=result[:, k * og : (k + 1) * og])
                if bias is not None:
                    result += bias
                if self.relu:
                    np.maximum(result, 0, out=result)
                if pool:
                    _pool_tiles(z[: hi - lo], pool, out_nhwc[lo:hi], winners[lo:hi])

        elements = 0 if x.dtype == object else n * oh * ow * g * kg  # Values: one thread
        parallel.over_chunks(work, n, step, elements, blas=True)
        self.saved = (x, xp, winners) if pool else (x, xp)
        return out

    # ---- backward
    def backward(self, grad, out, x, weight, bias=None):
        if not all(isinstance(v, np.ndarray) for v in (grad, x, weight)):
            if self.relu:
                grad = grad * (out > 0)
            return self._recorded_backward(grad, x, weight, bias)
        needs = self.needs_input_grad
        need_x, need_w, need_b = needs[0], needs[1], bias is not None and needs[2]
        n, c, h, w = x.shape
        o, cg, kh, kw = weight.shape
        g, og, kg = self.groups, o // self.groups, kh * kw * cg
        saved_x, xp = self.saved[:2]
        if saved_x is not x:  # forward ran again since, on other values (the scalar engine's)
            xp = padded(x, self.padding, nhwc=True)
        oh, ow = self._geometry(x, weight, None)  # grad's are the pooled sizes with pooling
        pool = self.pool
        windows = _conv_windows(xp, (oh, ow), (kh, kw), self.stride, self.dilation, g)
        # dZ as (N, OH, OW, O): no copy when grad is channels-last, as ours are
        dz = np.ascontiguousarray(grad.transpose(0, 2, 3, 1))
        dtype = np.result_type(dz, x, weight)
        # the ReLU's (or the pool's) output, to mask each chunk of dZ with (out > 0) in the
        # chunk's thread
        after = np.ascontiguousarray(out.transpose(0, 2, 3, 1)) if self.relu else None
        winners = self.saved[2] if pool else None
        exact = bool(pool) and not finite(dz)  # ∞ · 0 would be NaN: then masked copies
        # the weight by kernel offset: (kH, kW, G, O/G, C/G)
        w_offsets = np.ascontiguousarray(weight.reshape(g, og, cg, kh, kw).transpose(3, 4, 0, 1, 2))
        (top, bottom), (left, right) = self.padding
        shape = (n, c, h + top + bottom, w + left + right)
        dxp = new_array(shape, dtype, nhwc=True) if need_x else None  # chunks overwrite it
        step = _chunk_samples(oh * ow * g * kg, n)
        chunks = -(-n // step)
        # each chunk's share of dW and db, summed in chunk order at the end
        dw_parts = np.zeros((chunks, g, kg, og), dtype) if need_w else None
        db_parts = np.zeros((chunks, o), dtype) if need_b else None

        def work(claimed: Iterator[tuple[int, int, int]]) -> None:
            size = min(step, n)
            cols = np.empty((size, *windows.shape[1:]), dtype=x.dtype) if need_w else None
            block = np.empty((size * oh * ow, c), dtype) if need_x else None
            masked = np.empty((size * oh * ow, o), dz.dtype) if self.relu else None
            # the bias's gradient sums dZ's rows: as a product with ones (BLAS), it runs
            # several times faster than NumPy's sum over axis 0 of a tall, narrow matrix
            ones = np.ones(size * oh * ow, dtype) if need_b else None
            for chunk, lo, hi in claimed:
                rows = (hi - lo) * oh * ow
                if pool:  # the pooled gradient to each tile's winner, masked by the ReLU's
                    passed = _unpool_tiles(
                        dz[lo:hi], after[lo:hi], winners[lo:hi], pool,
                        masked[:rows].reshape(hi - lo, oh, ow, o), exact,
                    )  # fmt: skip
                    d = masked[:rows]
                elif self.relu:  # the ReLU's VJP: dZ where the output is positive, else 0
                    d = np.multiply(
                        dz[lo:hi].reshape(rows, o), after[lo:hi].reshape(rows, o) > 0,
                        out=masked[:rows],
                    )  # fmt: skip
                else:
                    d = dz[lo:hi].reshape(rows, o)
                if need_w:  # this chunk's colsᵀ · dZ, the columns rebuilt from the input
                    np.copyto(cols[: hi - lo], windows[lo:hi])
                    matrix = cols[: hi - lo].reshape(rows, g, kg)
                    for k in range(g):
                        np.matmul(
                            matrix[:, k].T, d[:, k * og : (k + 1) * og], out=dw_parts[chunk, k]
                        )
                if need_b:  # with pooling, the gradient of the tiles' winners only
                    summed = passed.reshape(-1, o) if pool else d
                    np.matmul(ones[: len(summed)], summed, out=db_parts[chunk])
                if need_x:
                    _scatter_input_grad(
                        d,
                        w_offsets,
                        block[:rows],
                        dxp[lo:hi].transpose(0, 2, 3, 1),
                        (oh, ow),
                        self.stride,
                        self.dilation,
                    )

        elements = 0 if x.dtype == object else n * oh * ow * g * kg  # Values: one thread
        parallel.over_chunks(work, n, step, elements, blas=True)
        dx = dw = db = None
        if need_x:
            dx = cropped(dxp, self.padding, (h, w))
        if need_w:
            total = np.add.reduce(dw_parts, axis=0)  # in chunk order, whoever computed them
            dw = total.reshape(g, kh, kw, cg, og).transpose(0, 4, 3, 1, 2).reshape(o, cg, kh, kw)
        if need_b:
            db = np.add.reduce(db_parts, axis=0)
        return dx, dw, db

    def jvp(self, tangents, out, x, weight, bias=None):
        """Bilinear in (x, weight), plus the bias: conv(ẋ, W) + conv(x, Ẇ) + ḃ; after a
        fused ReLU, masked where it is off."""
        tx, tw, tb = (*tangents, None, None)[:3]
        plain = Conv2d(self.stride, self.padding, self.dilation, self.groups)
        t = add_tangents(
            None if tx is None else plain.forward(tx, weight),
            None if tw is None else plain.forward(x, tw),
            None if tb is None else tb.reshape(1, -1, 1, 1),
        )
        return t * (out > 0) if self.relu and t is not None else t

    def _recorded_backward(self, grad, x, weight, bias):
        """The VJP composed of recorded ops (on Tensors, for ``create_graph``)."""
        needs = self.needs_input_grad
        n, c, h, w = shape_of(x)
        o, cg, kh, kw = shape_of(weight)
        g, og = self.groups, o // self.groups
        length = shape_of(grad)[2] * shape_of(grad)[3]
        params = {
            "kernel_size": (kh, kw),
            "dilation": self.dilation,
            "padding": self.padding,
            "stride": self.stride,
        }
        dz = grad.reshape((n, g, og, length))
        dx = dw = db = None
        if needs[0]:
            wg = np.swapaxes(weight.reshape((g, og, cg * kh * kw)), 1, 2)  # (G, C/G·kH·kW, O/G)
            dcols = (wg @ dz).reshape((n, c * kh * kw, length))
            dx = call(Fold, dcols, output_size=(h, w), **params)
        if needs[1]:
            cols = call(Unfold, x, **params).reshape((n, g, cg * kh * kw, length))
            dw = np.sum(dz @ np.swapaxes(cols, 2, 3), axis=0).reshape((o, cg, kh, kw))
        if bias is not None and needs[2]:
            db = np.sum(grad, axis=(0, 2, 3))
        return dx, dw, db


class Conv2dRelu(Conv2d):
    """``relu(conv2d(x, weight, bias))`` as one op (a ``Conv2d`` layer followed by a ``ReLU``
    in ``Sequential`` runs as this). A speed trick: the ReLU is applied to each chunk of the
    output, and its mask to each chunk of the gradient, while the chunk is in cache and in
    the chunk's thread, instead of two more passes over the whole output in one thread."""

    name = "conv2d_relu"
    relu = True
    uses_output = True


class Conv2dReluMaxPool(Conv2dRelu):
    """``max_pool2d(relu(conv2d(x, weight, bias)), pool)`` as one op, for a max-pool whose
    windows tile the convolution's output (stride = kernel, no padding or dilation): a
    ``Conv2d``, a ``ReLU`` and such a ``MaxPool2d`` in ``Sequential`` run as this.

    A speed trick: each chunk of the convolution's output is pooled while it is in cache,
    and the whole output is never stored; forward notes which element of each tile won (one
    byte per pooled value), and backward routes each chunk's pooled gradient to the winners,
    applying the ReLU's mask on the pooled values (which the winners share), and goes on as
    ``Conv2d``'s. Values and gradients equal the three ops'. Python objects (the scalar
    engine's Values) and the recorded backward (``create_graph``) run the three ops.
    """

    name = "conv2d_relu_max_pool2d"

    def __init__(
        self,
        stride: Pair = (1, 1),
        padding: Padding = ((0, 0), (0, 0)),
        dilation: Pair = (1, 1),
        groups: int = 1,
        pool: Pair = (2, 2),
    ):
        super().__init__(stride, padding, dilation, groups)
        self.pool = tuple(pool)

    def _parts(self) -> tuple[Conv2dRelu, Any]:
        """The two ops this one fuses, as separate ops."""
        from tensorgrad.ops.pool import MaxPool2d

        conv = Conv2dRelu(self.stride, self.padding, self.dilation, self.groups)
        return conv, MaxPool2d(self.pool, self.pool, (0, 0))

    def forward(self, x, weight, bias=None):
        oh, ow = self._geometry(x, weight, bias)
        conv, pool = self._parts()
        pool._geometry((shape_of(x)[0], shape_of(weight)[0], oh, ow))  # its errors, if any
        if x.dtype.kind == "f" and weight.dtype.kind == "f":
            return super().forward(x, weight, bias)
        return pool.forward(conv.forward(x, weight, bias))

    def backward(self, grad, out, x, weight, bias=None):
        arrays = all(isinstance(v, np.ndarray) for v in (grad, x, weight))
        if arrays and x.dtype.kind == "f" and weight.dtype.kind == "f":
            return super().backward(grad, out, x, weight, bias)
        conv, pool = self._parts()  # the three ops' VJPs, in turn, on the recomputed values
        conv.needs_input_grad = self.needs_input_grad
        values = [np.asarray(v) if v is not None else None for v in (x, weight, bias)]
        z = conv.forward(*values)
        pool.forward(z)
        (dz,) = pool.backward(grad, np.asarray(out), z)
        return conv.backward(dz, z, x, weight, bias)

    def jvp(self, tangents, out, x, weight, bias=None):
        conv, pool = self._parts()  # through the fused ops in turn, on recomputed values
        z = conv.forward(x, weight, bias)
        tz = conv.jvp(tangents, z, x, weight, bias)
        pool.forward(z)
        return pool.jvp((tz,), out, z)


# --------------------------------------------------------------------------- constant padding
class ConstantPad(Op):
    """PyTorch's ``pad(x, pad, mode='constant', value)``: ``pad`` lists (before, after) pairs
    from the last axis backwards; a negative amount crops. Its VJP is the same op with every
    amount negated (crop what was added, add zeros where it cropped)."""

    name = "pad"
    uses_inputs = False

    def __init__(self, pad: tuple[int, ...], value: float = 0.0):
        self.pad, self.value = tuple(int(p) for p in pad), value

    def _layout(self, shape: tuple[int, ...]) -> list[Pair]:
        pairs = [(0, 0)] * len(shape)
        for k in range(len(self.pad) // 2):
            pairs[len(shape) - 1 - k] = (self.pad[2 * k], self.pad[2 * k + 1])
        return pairs

    def forward(self, x):
        shape = shape_of(x)
        if len(self.pad) % 2:
            raise ValueError(f"pad: padding length must be divisible by 2, got {len(self.pad)}")
        if len(self.pad) // 2 > len(shape):
            raise ValueError(
                f"pad: padding length {len(self.pad)} is too large for an input of "
                f"{len(shape)} dimensions (shape {shape}): at most {2 * len(shape)}"
            )
        pairs = self._layout(shape)
        new_shape = tuple(size + a + b for size, (a, b) in zip(shape, pairs))
        if any(size < 0 for size in new_shape):
            raise ValueError(
                f"pad: padding {self.pad} of an input of shape {shape} gives a negative size "
                f"{new_shape}"
            )
        out = np.full(new_shape, self.value, dtype=x.dtype)
        source = tuple(slice(max(-a, 0), size - max(-b, 0)) for size, (a, b) in zip(shape, pairs))
        target = tuple(slice(max(a, 0), new - max(b, 0)) for new, (a, b) in zip(new_shape, pairs))
        if all(s.stop > s.start for s in target):
            out[target] = x[source]
        return out

    def backward(self, grad, out, x):
        return (call(ConstantPad, grad, pad=tuple(-p for p in self.pad), value=0.0),)

    def jvp(self, tangents, out, x):
        return call(ConstantPad, tangents[0], pad=self.pad, value=0.0)  # the fill is constant
