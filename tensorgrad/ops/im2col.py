"""The fast path of a 2-D convolution on arrays, which ``Conv2d`` and the fused ops
(``fused_conv.py``) share: channels-last im2col of cache-sized chunks of the batch, each
chunk's products in one of tensorgrad's threads.

The input is padded into (N, Hp, Wp, C) memory once (no copy when it is stored so already);
for each chunk of the batch the windows are copied into a (rows, kH·kW·C) matrix and
multiplied by the weight. The (rows, O) product is the output's (N, OH, OW, O) memory: the
op returns it as an (N, O, OH, OW) array stored channels-last, which the next convolution
reads without a copy. Backward rebuilds each chunk's columns from the input (one copy from
cache instead of keeping them), adds the chunk's share of dW and db to a slot of its own
(summed in chunk order at the end: the same bits whichever thread took which chunk), and
scatters dZ · W into dx one kernel offset at a time. docs/conv.md explains each trick.

An op loops over its chunks itself, in ``work(chunks)`` functions that :meth:`Im2col.share`
runs in each thread: :class:`Im2col` and :class:`Im2colGradients` hold what the chunks
share and do one chunk's steps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from tensorgrad._native import threads
from tensorgrad.ops.windows import Padding, Pair, cropped, new_array, offset_view, window_view

#: im2col works on chunks of the batch of about this many elements (2 MB of float32): a
#: chunk's columns stay in cache from the copy that makes them to the product that reads
#: them, and the products run at their fastest on matrices of this size. ``CHUNK_ELEMENTS =
#: 2**62`` makes every batch one chunk (the tests run both ways).
CHUNK_ELEMENTS: int = 1 << 19


#: a batch is cut into at least this many chunks where it has the samples, so that the
#: threads share small im2cols evenly too (a constant, not the thread count: the chunks,
#: and so the order in which dW's parts are summed, are the same with any number of threads)
MIN_CHUNKS: int = 16


def chunk_samples(per_sample: int, batch: int) -> int:
    """How many samples of ``per_sample`` im2col elements make one chunk of a batch."""
    return max(1, min(CHUNK_ELEMENTS // max(per_sample, 1), -(-batch // MIN_CHUNKS)))


def conv_windows(padded_x, out_hw: Pair, kernel: Pair, stride: Pair, dilation: Pair, groups: int):
    """The windows of a padded (N, C, Hp, Wp) input as an (N, OH, OW, G, kH, kW, C/G) view,
    the channels of each group innermost: copied to an (N·OH·OW, G, kH·kW·C/G) matrix, the
    im2col of a channels-last input reads contiguous stretches of kW·C/G elements."""
    n, c = padded_x.shape[:2]
    windows = window_view(padded_x, out_hw, kernel, stride, dilation)
    windows = windows.reshape(n, groups, c // groups, *out_hw, *kernel)
    return windows.transpose(0, 3, 4, 1, 5, 6, 2)


def scatter_input_grad(dz, w_offsets, block, padded_dx, out_hw, stride, dilation) -> None:
    """col2im(dZ · W) for one chunk, into its part of the padded, channels-last dx (N, Hp,
    Wp, C), which it overwrites, one kernel offset at a time: dZ · W[:, :, i, j] is an
    (N·OH·OW, C) block whose rows are whole image rows, so its scatter-add runs over long
    contiguous stretches. With stride 1 the first offset's block covers all of dx but two
    strips, so it is copied rather than added to zeros."""
    kh, kw, g, og, cg = w_offsets.shape
    values = block.reshape(padded_dx.shape[0], *out_hw, g * cg)
    dense = tuple(stride) == (1, 1)
    if dense:  # what offset (0, 0) does not reach
        padded_dx[:, out_hw[0] :] = 0
        padded_dx[:, : out_hw[0], out_hw[1] :] = 0
    else:
        padded_dx[...] = 0
    for i in range(kh):
        for j in range(kw):
            for k in range(g):
                np.matmul(
                    dz[:, k * og : (k + 1) * og],
                    w_offsets[i, j, k],
                    out=block[:, k * cg : (k + 1) * cg],
                )
            view = offset_view(padded_dx, i, j, out_hw, stride, dilation, axes=(1, 2))
            if dense and i == j == 0:
                np.copyto(view, values)
            else:
                view += values


class Im2col:
    """One convolution's fast path: the windows of its padded, channels-last input (an (N, C,
    Hp, Wp) view of (N, Hp, Wp, C) memory), the chunks of the batch (``step`` samples each),
    and one chunk's im2col and forward products."""

    def __init__(
        self,
        padded_x: np.ndarray,
        weight: np.ndarray,
        out_hw: Pair,
        stride: Pair,
        dilation: Pair,
        groups: int,
    ):
        n = padded_x.shape[0]
        o, cg, kh, kw = weight.shape
        oh, ow = self.out_hw = tuple(out_hw)
        self.batch, self.kernel, self.stride, self.dilation = n, (kh, kw), stride, dilation
        self.groups, self.og, self.kg = groups, o // groups, kh * kw * cg
        self.windows = conv_windows(padded_x, self.out_hw, (kh, kw), stride, dilation, groups)
        self.step = chunk_samples(oh * ow * groups * self.kg, n)
        #: the work's size, for the threads; Python objects (the scalar engine's Values) hold
        #: the GIL in their arithmetic, so they stay in one thread
        self.elements = 0 if padded_x.dtype == object else n * oh * ow * groups * self.kg

    def rows(self, lo: int, hi: int) -> int:
        """The rows of the im2col matrix (output positions) of chunk [lo, hi)."""
        return (hi - lo) * self.out_hw[0] * self.out_hw[1]

    def share(self, work: Callable[[Iterator[tuple[int, int, int]]], Any]) -> None:
        """``work(chunks)`` in each of tensorgrad's threads, every ``(k, lo, hi)`` chunk to
        the first thread ready for it (``_native/threads.py``), BLAS held to one thread."""
        threads.over_chunks(work, self.batch, self.step, self.elements, blas=True)

    def columns(self) -> np.ndarray:
        """A thread's scratch for one chunk's im2col."""
        size = min(self.step, self.batch)
        return np.empty((size, *self.windows.shape[1:]), dtype=self.windows.dtype)

    def unfold(self, cols: np.ndarray, lo: int, hi: int) -> np.ndarray:
        """im2col of chunk [lo, hi): its windows copied into ``cols``, as a (rows, G,
        kH·kW·C/G) matrix."""
        np.copyto(cols[: hi - lo], self.windows[lo:hi])
        return cols[: hi - lo].reshape(self.rows(lo, hi), self.groups, self.kg)

    def weight_matrix(self, weight: np.ndarray) -> np.ndarray:
        """The weight as (G, O/G, kH·kW·C/G), columns ordered as the windows' (small: a copy)."""
        g, og, kg = self.groups, self.og, self.kg
        _, cg, kh, kw = weight.shape
        return weight.reshape(g, og, cg, kh, kw).transpose(0, 1, 3, 4, 2).reshape(g, og, kg)

    def multiply(self, matrix: np.ndarray, wmat: np.ndarray, result: np.ndarray) -> None:
        """``result`` (rows, O) = a chunk's im2col ``matrix`` · ``wmat``ᵀ, group by group."""
        og = self.og
        for k in range(self.groups):
            np.matmul(matrix[:, k], wmat[k].T, out=result[:, k * og : (k + 1) * og])

    def gradients(
        self,
        x: np.ndarray,
        weight: np.ndarray,
        dz: np.ndarray,
        needs: tuple[bool, bool, bool],
        padding: Padding,
    ) -> Im2colGradients:
        """The buffers of the VJPs for a (N, OH, OW, O) ``dz``, ``needs`` = (dx, dW, db)."""
        return Im2colGradients(self, x, weight, dz, needs, padding)


class Im2colGradients:
    """A convolution's VJPs on the fast path, chunk by chunk: dx scattered into a padded,
    channels-last array (each chunk overwrites its own samples), and each chunk's share of
    dW and db in a slot of its own, summed in chunk order by :meth:`result`, whoever
    computed them."""

    def __init__(
        self,
        plan: Im2col,
        x: np.ndarray,
        weight: np.ndarray,
        dz: np.ndarray,
        needs: tuple[bool, bool, bool],
        padding: Padding,
    ):
        self.plan, self.padding, self.hw = plan, padding, x.shape[2:]
        self.need_x, self.need_w, self.need_b = needs
        self.weight_shape = weight.shape
        n, c, h, w = x.shape
        o, cg, kh, kw = weight.shape
        g, og, kg = plan.groups, plan.og, plan.kg
        self.channels, self.dtype = c, np.result_type(dz, x, weight)
        # the weight by kernel offset: (kH, kW, G, O/G, C/G)
        self.w_offsets = np.ascontiguousarray(
            weight.reshape(g, og, cg, kh, kw).transpose(3, 4, 0, 1, 2)
        )
        (top, bottom), (left, right) = padding
        shape = (n, c, h + top + bottom, w + left + right)
        # chunks overwrite it
        self.padded_dx = new_array(shape, self.dtype, nhwc=True) if self.need_x else None
        chunks = -(-n // plan.step)
        self.dw_parts = np.zeros((chunks, g, kg, og), self.dtype) if self.need_w else None
        self.db_parts = np.zeros((chunks, o), self.dtype) if self.need_b else None

    def scratch(self) -> tuple[Any, Any, Any]:
        """A thread's scratch: the im2col columns, the (rows, C) block of dZ · W, and ones."""
        plan = self.plan
        size = min(plan.step, plan.batch)
        rows = size * plan.out_hw[0] * plan.out_hw[1]
        cols = plan.columns() if self.need_w else None
        block = np.empty((rows, self.channels), self.dtype) if self.need_x else None
        # the bias's gradient sums dZ's rows: as a product with ones (BLAS), it runs
        # several times faster than NumPy's sum over axis 0 of a tall, narrow matrix
        ones = np.ones(rows, self.dtype) if self.need_b else None
        return cols, block, ones

    def add_chunk(
        self,
        scratch: tuple[Any, Any, Any],
        chunk: int,
        lo: int,
        hi: int,
        d: np.ndarray,
        summed: np.ndarray | None = None,
    ) -> None:
        """Chunk ``chunk`` = [lo, hi)'s share of the gradients from its (rows, O) ``d`` (dZ,
        masked by a fused ReLU); ``summed``: the rows whose sum is db, if not ``d``'s."""
        plan, (cols, block, ones) = self.plan, scratch
        og = plan.og
        if self.need_w:  # this chunk's colsᵀ · dZ, the columns rebuilt from the input
            matrix = plan.unfold(cols, lo, hi)
            for k in range(plan.groups):
                np.matmul(matrix[:, k].T, d[:, k * og : (k + 1) * og], out=self.dw_parts[chunk, k])
        if self.need_b:
            summed = d if summed is None else summed
            np.matmul(ones[: len(summed)], summed, out=self.db_parts[chunk])
        if self.need_x:
            scatter_input_grad(
                d,
                self.w_offsets,
                block[: plan.rows(lo, hi)],
                self.padded_dx[lo:hi].transpose(0, 2, 3, 1),
                plan.out_hw,
                plan.stride,
                plan.dilation,
            )

    def result(self) -> tuple[Any, Any, Any]:
        """(dx, dW, db), None where not needed."""
        dx = dw = db = None
        if self.need_x:
            dx = cropped(self.padded_dx, self.padding, self.hw)
        if self.need_w:
            o, cg, kh, kw = self.weight_shape
            g, og = self.plan.groups, self.plan.og
            total = np.add.reduce(self.dw_parts, axis=0)  # in chunk order
            dw = total.reshape(g, kh, kw, cg, og).transpose(0, 4, 3, 1, 2).reshape(o, cg, kh, kw)
        if self.need_b:
            db = np.add.reduce(self.db_parts, axis=0)
        return dx, dw, db
