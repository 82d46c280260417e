"""A convolution of each sample with its own weight: what vmap runs for per-sample gradients.

Inside ``vmap(grad(loss))`` every sample's loss sees its own copy of the weights, so a
convolution's weight is batched: B samples of (N, C, H, W) images, each with its (O, C/G,
kH, kW) weight and (O,) bias. ``Conv2dPerSample`` computes the B convolutions at once, the
same sums as ``Conv2d`` one sample at a time, laid out for BLAS:

* the samples go in chunks whose windows fit in cache (``CHUNK_ELEMENTS``): a chunk's
  windows of its padded, channels-last images are copied into a (samples, N·OH·OW, G,
  kH·kW·C/G) matrix (im2col) and multiplied at once, while they are in cache; backward
  copies them again from the input (a small array, still in cache) rather than keeping
  them (a large one, which would come back from memory: slower, measured), unless they
  were all one chunk, which it keeps;
* the output is each sample's (N·OH·OW, O) product ``cols · Wᵀ``, the (B, N, OH, OW, O)
  memory of a (B, N, O, OH, OW) array stored channels-last, the layout the ReLU and the
  max-pool after it (``pool.py``) run fastest on, and the layout the gradient comes back in;
* the VJPs are, chunk by chunk, dW = dZᵀ · cols per sample and dZ · W added back onto the
  windows (col2im, ``Conv2d``'s scatter: a product per kernel offset, over channels-last
  memory); db sums dZ's rows as a product with ones.

A weight shared by every sample (a broadcast view, as ``vmap`` of a model with shared
weights has) multiplies all B·N·OH·OW rows as one matrix. On Tensors (``create_graph``) the
VJP is composed of ``Unfold``, ``Fold`` and matrix products, as ``Conv2d``'s is.
``core/batching.py`` chooses this op (``PER_SAMPLE_CONV``) over the composition of unfold
and one batched matmul that a learner reads first.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorgrad.ops.base import add_tangents, call, replay, shape_of
from tensorgrad.ops.conv import Fold, Unfold, _ConvSettings, check_conv
from tensorgrad.ops.im2col import conv_windows, scatter_input_grad
from tensorgrad.ops.windows import Pair, padded

#: a tiny (B, N, C, H, W) array stored as (B, N, H, W, C): ``np.empty_like(_CHANNELS_LAST,
#: shape=..., order="K")`` lays out a fresh output so, owning its memory (no ``base``)
_CHANNELS_LAST = np.empty((2, 2, 2, 2, 2), dtype=np.int8).transpose(0, 1, 4, 2, 3)


#: the samples are taken in chunks whose im2col holds about this many elements (2 MB of
#: float32, as ``im2col.py``'s): a chunk's windows stay in cache from their copy to the
#: products that read them (``2**62``: all samples at once; the tests run both)
CHUNK_ELEMENTS: int = 1 << 19


class Conv2dPerSample(_ConvSettings):
    """B convolutions, each sample's images with its own weight: x (B, N, C, H, W), weight
    (B, O, C/G, kH, kW) and an optional bias (B, O) give (B, N, O, OH, OW), stored as (B, N,
    OH, OW, O). Settings as ``Conv2d``'s (per-side padding)."""

    name = "conv2d"
    batching = "per_sample_conv"

    def _geometry(self, x: Any, weight: Any, bias: Any) -> Pair:
        """Check the shapes (one sample's, by ``Conv2d``'s check); return (OH, OW)."""
        xs, ws = shape_of(x), shape_of(weight)
        bs = None if bias is None else shape_of(bias)
        if len(xs) != 5 or len(ws) != 5 or xs[0] != ws[0] or (bs is not None and bs[:1] != ws[:1]):
            raise ValueError(
                f"conv2d per sample: expected x (B, N, C, H, W), weight (B, O, C/G, kH, kW) and "
                f"bias (B, O) of one B, got shapes {xs}, {ws} and {bs}"
            )
        return check_conv(
            self.name, xs[1:], ws[1:], None if bs is None else bs[1:], self.stride,
            self.padding, self.dilation, self.groups,
        )  # fmt: skip

    # ------------------------------------------------------------------ the windows
    def _windows(self, x: np.ndarray, kernel: Pair, out_hw: Pair) -> np.ndarray:
        """Every image's windows as a (B·N, OH, OW, G, kH, kW, C/G) view of the padded,
        channels-last input (a copy of it reads contiguous stretches of kW·C/G)."""
        b, n, c, h, w = x.shape
        images = padded(x.reshape(b * n, c, h, w), self.padding, nhwc=True)
        return conv_windows(images, out_hw, kernel, self.stride, self.dilation, self.groups)

    def _chunks(self, b: int, n: int, windows: np.ndarray):
        """The samples in chunks [lo, hi) whose im2col fits in cache, with a scratch for it."""
        per_sample = max(1, n * int(np.prod(windows.shape[1:])))
        step = max(1, min(b, CHUNK_ELEMENTS // per_sample))
        scratch = np.empty((step * n, *windows.shape[1:]), dtype=windows.dtype)
        return [(lo, min(b, lo + step)) for lo in range(0, b, step)], scratch

    @staticmethod
    def _unfold(windows, scratch, n: int, lo: int, hi: int) -> np.ndarray:
        """im2col of samples [lo, hi): (hi - lo, N·OH·OW, G, kH·kW·C/G), in the scratch."""
        cols = scratch[: (hi - lo) * n]
        np.copyto(cols, windows[lo * n : hi * n])
        per_image, g = int(np.prod(windows.shape[1:3])), windows.shape[3]
        return cols.reshape(hi - lo, n * per_image, g, int(np.prod(windows.shape[4:])))

    def _weight_matrices(self, weight: np.ndarray) -> np.ndarray:
        """Each sample's weight as (G, O/G, kH·kW·C/G), columns ordered as the windows'; a
        weight shared by all samples (batch stride 0) stays one matrix, broadcast."""
        b, o, cg, kh, kw = weight.shape
        g = self.groups
        shared = weight.strides[0] == 0 and b > 0
        source = weight[:1] if shared else weight
        count = len(source)
        matrices = source.reshape(count, g, o // g, cg, kh, kw).transpose(0, 1, 2, 4, 5, 3)
        matrices = matrices.reshape(count, g, o // g, kh * kw * cg)
        return np.broadcast_to(matrices, (b, *matrices.shape[1:])) if shared else matrices

    # ------------------------------------------------------------------ forward
    def forward(self, x, weight, bias=None):
        out_hw = self._geometry(x, weight, bias)
        b, n = x.shape[:2]
        o, kernel = weight.shape[1], weight.shape[3:]
        g, og = self.groups, weight.shape[1] // self.groups
        dtype = np.result_type(x, weight) if bias is None else np.result_type(x, weight, bias)
        windows = self._windows(x, kernel, out_hw)
        matrices = self._weight_matrices(weight)
        rows = n * out_hw[0] * out_hw[1]
        result = np.empty_like(_CHANNELS_LAST, dtype=dtype, order="K", shape=(b, n, o, *out_hw))
        out = result.transpose(0, 1, 3, 4, 2).reshape(b, rows, o)  # a view: (B, N, OH, OW, O)
        shared = b > 0 and matrices.strides[0] == 0
        chunks, scratch = self._chunks(b, n, windows)
        for lo, hi in chunks:
            cols = self._unfold(windows, scratch, n, lo, hi)
            part = out[lo:hi]
            for k in range(g):
                if shared:  # one weight for the chunk's rows: one product
                    flat = cols.reshape((hi - lo) * rows, *cols.shape[2:])[:, k]
                    target = part.reshape((hi - lo) * rows, o)[:, k * og : (k + 1) * og]
                    _product(flat, matrices[0, k].T, target)
                else:
                    weights = matrices[lo:hi, k].transpose(0, 2, 1)
                    _product(cols[:, :, k], weights, part[:, :, k * og : (k + 1) * og])
            if bias is not None:
                part += bias[lo:hi, None, :]
        # all the windows in one chunk (a small im2col): kept for backward, which reuses them
        self.saved = (x, cols) if len(chunks) == 1 else (x, None)
        return result

    # ------------------------------------------------------------------ VJP
    def backward(self, grad, out, x, weight, bias=None):
        if not all(isinstance(v, np.ndarray) for v in (grad, x, weight)):
            return self._recorded_backward(grad, x, weight, bias)
        b, n, _, h, w = x.shape
        o, cg, kh, kw = weight.shape[1:]
        g, og, out_hw = self.groups, o // self.groups, grad.shape[3:]
        rows = n * out_hw[0] * out_hw[1]
        # dZ as each sample's (N·OH·OW, O) rows: no copy when it is channels-last, as ours are
        dz = np.ascontiguousarray(grad.transpose(0, 1, 3, 4, 2)).reshape(b, rows, o)
        dtype = np.result_type(dz, x, weight)
        need_x, need_w, need_b = (*self.needs_input_grad, False, False)[:3]
        windows = self._windows(x, (kh, kw), out_hw)
        chunks, scratch = self._chunks(b, n, windows)
        dw = db = None
        if need_w:
            dwm = np.empty((b, g, og, kh * kw * cg), dtype=dtype)
        if need_x:
            step = chunks[0][1] if chunks else 0
            scatter = _InputGrad(self, weight, x.shape, out_hw, dtype, step)
        saved_x, kept = self.saved if isinstance(self.saved, tuple) else (None, None)
        for lo, hi in chunks:  # each chunk's windows rebuilt from the input, in cache
            if need_w:
                one = kept is not None and saved_x is x and kept.shape[0] == hi - lo
                cols = kept if one else self._unfold(windows, scratch, n, lo, hi)
                for k in range(g):
                    part = dz[lo:hi, :, k * og : (k + 1) * og].transpose(0, 2, 1)
                    _product(part, cols[:, :, k], dwm[lo:hi, k])
            if need_x:
                scatter.add(dz, lo, hi)
        if need_w:
            dw = dwm.reshape(b, g, og, kh, kw, cg).transpose(0, 1, 2, 5, 3, 4)
            dw = np.ascontiguousarray(dw).reshape(b, o, cg, kh, kw)
        if need_b and bias is not None:
            db = np.matmul(np.ones(rows, dtype=dz.dtype), dz)  # sums of rows, by BLAS
        dx = None
        if need_x:
            (top, _), (left, _) = self.padding
            dx = scatter.padded_dx  # without padding, a fresh array the engine may reuse
            if dx.shape[3:] != (h, w):
                dx = dx[..., top : top + h, left : left + w]
        return dx, dw, db

    def _recorded_backward(self, grad, x, weight, bias):
        """The VJP composed of recorded ops (on Tensors, for ``create_graph``): ``Conv2d``'s,
        with a batch axis in front."""
        need_x, need_w, need_b = (*self.needs_input_grad, False, False)[:3]
        b, n, c, h, w = shape_of(x)
        o, cg, kh, kw = shape_of(weight)[1:]
        g, og, depth = self.groups, o // self.groups, cg * kh * kw
        length = shape_of(grad)[3] * shape_of(grad)[4]
        params = {
            "kernel_size": (kh, kw),
            "dilation": self.dilation,
            "padding": self.padding,
            "stride": self.stride,
        }
        dz = grad.reshape((b, n, g, og, length))
        dx = dw = db = None
        if need_x:
            wg = np.swapaxes(weight.reshape((b, 1, g, og, depth)), 3, 4)  # (B, 1, G, K, O/G)
            dcols = (wg @ dz).reshape((b * n, c * kh * kw, length))
            dx = call(Fold, dcols, output_size=(h, w), **params).reshape((b, n, c, h, w))
        if need_w:
            cols = call(Unfold, x.reshape((b * n, c, h, w)), **params)
            cols = cols.reshape((b, n, g, depth, length))
            dw = np.sum(dz @ np.swapaxes(cols, 3, 4), axis=1).reshape((b, o, cg, kh, kw))
        if bias is not None and need_b:
            db = np.sum(grad, axis=(1, 3, 4))
        return dx, dw, db

    # ------------------------------------------------------------------ JVP
    def jvp(self, tangents, out, x, weight, bias=None):
        """Bilinear in (x, weight), plus the bias: conv(ẋ, W) + conv(x, Ẇ) + ḃ."""
        tx, tw, tb = (*tangents, None, None)[:3]
        plain = Conv2dPerSample(*self.settings())
        b, o = shape_of(weight)[:2]
        return add_tangents(
            None if tx is None else replay(plain, tx, weight),
            None if tw is None else replay(plain, x, tw),
            None if tb is None else tb.reshape(b, 1, o, 1, 1),
        )


class _InputGrad:
    """col2im(dZ · W) into padded channels-last memory, chunk by chunk, by ``Conv2d``'s
    scatter (a product per kernel offset, added over long contiguous stretches): a weight
    shared by all samples multiplies a chunk's rows at once, others sample by sample."""

    def __init__(self, op: Conv2dPerSample, weight, x_shape, out_hw: Pair, dtype, step: int):
        b, n, c, h, w = x_shape
        o, cg, kh, kw = weight.shape[1:]
        g, rows = op.groups, n * out_hw[0] * out_hw[1]
        self.op, self.n, self.o, self.out_hw = op, n, o, out_hw
        self.shared = weight.strides[0] == 0 and b > 0
        source = weight[:1] if self.shared else weight
        # each weight by kernel offset: (B or 1, kH, kW, G, O/G, C/G)
        offsets = source.reshape(len(source), g, o // g, cg, kh, kw).transpose(0, 4, 5, 1, 2, 3)
        self.offsets = np.ascontiguousarray(offsets, dtype=dtype)
        (top, bottom), (left, right) = op.padding
        shape = (b, n, c, h + top + bottom, w + left + right)
        # every chunk overwrites its part; a fresh array (no base) that backward hands on
        self.padded_dx = np.empty_like(_CHANNELS_LAST, dtype=dtype, order="K", shape=shape)
        images = self.padded_dx.reshape(b * n, *shape[2:])  # a view: B and N are adjacent
        self.target = images.transpose(0, 2, 3, 1)  # (B·N, Hp, Wp, C) memory
        self.block = np.empty((step * rows if self.shared else rows, c), dtype=dtype)

    def add(self, dz: np.ndarray, lo: int, hi: int) -> None:
        """Samples [lo, hi)'s part of dx."""
        n, stride, dilation = self.n, self.op.stride, self.op.dilation
        if self.shared:
            flat = dz[lo:hi].reshape((hi - lo) * dz.shape[1], self.o)
            images = self.target[lo * n : hi * n]
            block = self.block[: len(flat)]
            scatter_input_grad(flat, self.offsets[0], block, images, self.out_hw, stride, dilation)
            return
        for i in range(lo, hi):
            images = self.target[i * n : (i + 1) * n]
            block = self.block[: dz.shape[1]]
            scatter_input_grad(dz[i], self.offsets[i], block, images, self.out_hw, stride, dilation)


def _product(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """``out = a @ b``; object arrays (the scalar engine's values) by NumPy's loops."""
    if out.dtype == object or a.dtype == object or b.dtype == object:
        out[...] = np.matmul(a, b)
    else:
        np.matmul(a, b, out=out)
