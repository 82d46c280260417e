"""What ``nn.Sequential`` fuses a convolution and the layers after it to: a ``Conv2d``
followed by a ``ReLU`` runs as :class:`Conv2dRelu`, and followed by a ``ReLU`` and a
``MaxPool2d`` whose windows tile its output, as :class:`Conv2dReluMaxPool`
(``nn/modules/conv.py``'s ``conv_relu_chain`` makes the runs).

Speed tricks, each with the same values and gradients as the separate ops: the ReLU (and
the pool) are applied to each chunk of the convolution's output right after its product,
while the chunk is in cache and in the chunk's thread (``im2col.py``), and their VJPs to each
chunk of the gradient before its products, instead of more passes over the whole output in
one thread. docs/conv.md explains them.
"""

from __future__ import annotations

import numpy as np

from tensorgrad.ops.base import constant, replay, shape_of
from tensorgrad.ops.conv import Conv2d
from tensorgrad.ops.im2col import Im2col
from tensorgrad.ops.pool import MaxPool2d, finite, running_max
from tensorgrad.ops.windows import Padding, Pair, new_array, padded


class Conv2dRelu(Conv2d):
    """``relu(conv2d(x, weight, bias))`` as one op (a ``Conv2d`` layer followed by a ``ReLU``
    in ``Sequential`` runs as this). A speed trick: the ReLU is applied to each chunk of the
    output, and its mask to each chunk of the gradient, while the chunk is in cache and in
    the chunk's thread, instead of two more passes over the whole output in one thread."""

    name = "conv2d_relu"
    uses_output = True
    #: the (kH, kW) tiles a max-pool over the ReLU's output takes, fused in
    #: (:class:`Conv2dReluMaxPool`); None: no pooling
    pool: Pair | None = None

    # ---- forward
    def forward(self, x, weight, bias=None):
        oh, ow = self._geometry(x, weight, bias)
        n, o = x.shape[0], weight.shape[0]
        padded_x = padded(x, self.padding, nhwc=True)  # channels-last
        plan = Im2col(padded_x, weight, (oh, ow), self.stride, self.dilation, self.groups)
        wmat = plan.weight_matrix(weight)
        dtype = np.result_type(x, weight) if bias is None else np.result_type(x, weight, bias)
        pool = self.pool
        if pool:  # the pooled output, and which element of each tile won
            ph, pw = oh // pool[0], ow // pool[1]
            out = new_array((n, o, ph, pw), dtype, nhwc=True)
            winners = np.empty((n, ph, pw, o), np.uint8)
        else:
            out = new_array((n, o, oh, ow), dtype, nhwc=True)
        out_nhwc = out.transpose(0, 2, 3, 1)  # contiguous

        def work(chunks):
            cols = plan.columns()
            z = np.empty((min(plan.step, n), oh, ow, o), dtype) if pool else None  # before pooling
            for _, lo, hi in chunks:
                result = (z[: hi - lo] if pool else out_nhwc[lo:hi]).reshape(plan.rows(lo, hi), o)
                plan.multiply(plan.unfold(cols, lo, hi), wmat, result)
                if bias is not None:
                    result += bias
                np.maximum(result, 0, out=result)
                if pool:
                    _pool_tiles(z[: hi - lo], pool, out_nhwc[lo:hi], winners[lo:hi])

        plan.share(work)
        self.saved = (x, padded_x, winners) if pool else (x, padded_x)
        return out

    # ---- backward
    def backward(self, grad, out, x, weight, bias=None):
        if not all(isinstance(v, np.ndarray) for v in (grad, x, weight)):
            return self._recorded_backward(grad * (out > 0), x, weight, bias)
        plan = self._plan(x, weight)  # grad's are the pooled sizes with pooling; plan's not
        n, o = x.shape[0], weight.shape[0]
        oh, ow = plan.out_hw
        pool = self.pool
        # dZ as (N, OH, OW, O): no copy when grad is channels-last, as ours are
        dz = np.ascontiguousarray(grad.transpose(0, 2, 3, 1))
        # the ReLU's (or the pool's) output, to mask each chunk of dZ with (out > 0) in the
        # chunk's thread
        after = np.ascontiguousarray(out.transpose(0, 2, 3, 1))
        winners = self.saved[2] if pool else None
        exact = bool(pool) and not finite(dz)  # ∞ · 0 would be NaN: then masked copies
        grads = plan.gradients(x, weight, dz, self._needs(bias), self.padding)

        def work(claimed):
            scratch = grads.scratch()
            masked = np.empty((min(plan.step, n) * oh * ow, o), dz.dtype)
            for chunk, lo, hi in claimed:
                rows = plan.rows(lo, hi)
                if pool:  # the pooled gradient to each tile's winner, masked by the ReLU's
                    passed = _unpool_tiles(
                        dz[lo:hi], after[lo:hi], winners[lo:hi], pool,
                        masked[:rows].reshape(hi - lo, oh, ow, o), exact,
                    )  # fmt: skip
                    # with pooling, db sums the gradient of the tiles' winners only
                    grads.add_chunk(scratch, chunk, lo, hi, masked[:rows], passed.reshape(-1, o))
                else:  # the ReLU's VJP: dZ where the output is positive, else 0
                    d = np.multiply(
                        dz[lo:hi].reshape(rows, o), after[lo:hi].reshape(rows, o) > 0,
                        out=masked[:rows],
                    )  # fmt: skip
                    grads.add_chunk(scratch, chunk, lo, hi, d)

        plan.share(work)
        return grads.result()

    def jvp(self, tangents, out, x, weight, bias=None):
        """The convolution's JVP, masked where the ReLU is off."""
        t = super().jvp(tangents, out, x, weight, bias)
        return None if t is None else t * (out > 0)


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

    def _parts(self) -> tuple[Conv2dRelu, MaxPool2d]:
        """The two ops this one fuses, as separate ops."""
        conv = Conv2dRelu(*self.settings())
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
        z = replay(conv, x, weight, bias)  # (recorded, on Tensors)
        tz = conv.jvp(tangents, z, x, weight, bias)
        pool.forward(constant(z))  # which element of each tile won
        return pool.jvp((tz,), out, z)


# --------------------------------------------------------------------------- pooled tiles
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
