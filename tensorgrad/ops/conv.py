"""Convolution as im2col followed by a matrix product, its adjoint col2im, and constant padding.

``Unfold`` (im2col) copies every kernel-sized window of the input into a column; ``Fold``
(col2im) is its adjoint: it adds each column back onto the window it came from, so
overlapping windows sum. A convolution is ``W · unfold(x)``, so its VJPs are a matrix
product's (dW = dZ · colsᵀ, dcols = Wᵀ · dZ) followed by ``Fold``. docs/conv.md derives it.

``Conv2d`` on arrays computes the same sums through its fast path (``im2col.py``:
channels-last im2col of cache-sized chunks, shared among threads); when the engine records
the backward pass (``create_graph=True``) its VJP is composed of ``Unfold``, ``Fold`` and
matrix products on Tensors, so second derivatives work. What ``nn.Sequential`` fuses a
convolution and the layers after it to lives in ``fused_conv.py``; the window geometry and
memory layout that convolution and pooling share, in ``windows.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorgrad.array_backend import ShapeError
from tensorgrad.ops.base import Op, add_tangents, call, linear_jvp, replay, shape_of
from tensorgrad.ops.im2col import Im2col
from tensorgrad.ops.windows import (
    Padding,
    Pair,
    cropped,
    new_array,
    offset_view,
    output_length,
    padded,
    window_view,
)


# --------------------------------------------------------------------------- shapes
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
        raise ShapeError(  # PyTorch's RuntimeError
            f"{op}: weight must be {d + 2}-D (out_channels, in_channels/groups, {kernel}), "
            f"got shape {w_shape}"
        )
    if len(x_shape) not in (d + 1, d + 2):
        dims = ", ".join(spatial)
        raise ShapeError(
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
        raise ShapeError(  # PyTorch's RuntimeError
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
    batching, batching_rank = "fold_batch", 4

    def forward(self, x):
        if len(shape_of(x)) != 4:
            raise ShapeError(f"unfold: expected a 4-D (N, C, H, W) input, got shape {shape_of(x)}")
        n, c, h, w = x.shape
        blocks = self._blocks((h, w))
        if min(blocks) < 1:
            raise ValueError(
                f"unfold: {self._describe((h, w))} gives {blocks} sliding blocks; each must be "
                "at least 1 (the input is smaller than the dilated kernel)"
            )
        padded_x = padded(x, self.padding, nhwc=False)
        windows = window_view(padded_x, blocks, self.kernel, self.stride, self.dilation)
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
    batching, batching_rank = "fold_batch", 3

    def __init__(
        self, output_size: Pair, kernel_size: Pair, dilation: Pair, padding: Padding, stride: Pair
    ):
        super().__init__(kernel_size, dilation, padding, stride)
        self.output_size = tuple(output_size)

    def forward(self, cols):
        shape = shape_of(cols)
        kh, kw = self.kernel
        if len(shape) != 3:
            raise ShapeError(f"fold: expected a 3-D (N, C·kH·kW, L) input, got shape {shape}")
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
class _ConvSettings(Op):
    """What the 2-D convolutions share (``Conv2d``, its fused forms, ``Conv2dPerSample``):
    the stride, the per-side padding, the dilation and the groups."""

    def __init__(
        self,
        stride: Pair = (1, 1),
        padding: Padding = ((0, 0), (0, 0)),
        dilation: Pair = (1, 1),
        groups: int = 1,
    ):
        self.stride, self.dilation, self.groups = tuple(stride), tuple(dilation), int(groups)
        self.padding = tuple(tuple(p) for p in padding)

    def settings(self) -> tuple[Pair, Padding, Pair, int]:
        """(stride, padding, dilation, groups): the arguments that make the same op again."""
        return self.stride, self.padding, self.dilation, self.groups


class Conv2d(_ConvSettings):
    """2-D cross-correlation (PyTorch's ``conv2d``) of x (N, C, H, W) with weight
    (O, C/groups, kH, kW) and an optional bias (O,): out (N, O, OH, OW).

    For Z = W · unfold(x) + b the VJPs are dW = dZ · colsᵀ, dcols = Wᵀ · dZ folded back onto
    the input's windows, and db = dZ summed over the positions; on arrays they, like the
    forward product, run chunk by chunk (``im2col.py``)."""

    name = "conv2d"
    batching, batching_rank = "conv", 4

    def _geometry(self, x: Any, weight: Any, bias: Any) -> Pair:
        """Check the shapes; return the output's (OH, OW)."""
        b = None if bias is None else shape_of(bias)
        return check_conv(
            self.name, shape_of(x), shape_of(weight), b, self.stride, self.padding,
            self.dilation, self.groups,
        )  # fmt: skip

    def forward(self, x, weight, bias=None):
        out_hw = self._geometry(x, weight, bias)
        padded_x = padded(x, self.padding, nhwc=True)  # channels-last
        plan = Im2col(padded_x, weight, out_hw, self.stride, self.dilation, self.groups)
        wmat = plan.weight_matrix(weight)
        o = weight.shape[0]
        dtype = np.result_type(x, weight) if bias is None else np.result_type(x, weight, bias)
        out = new_array((x.shape[0], o, *out_hw), dtype, nhwc=True)
        out_nhwc = out.transpose(0, 2, 3, 1)  # contiguous: each chunk's (rows, O) product

        def work(chunks):
            cols = plan.columns()
            for _, lo, hi in chunks:
                result = out_nhwc[lo:hi].reshape(plan.rows(lo, hi), o)
                plan.multiply(plan.unfold(cols, lo, hi), wmat, result)
                if bias is not None:
                    result += bias

        plan.share(work)
        self.saved = (x, padded_x)
        return out

    def backward(self, grad, out, x, weight, bias=None):
        if not all(isinstance(v, np.ndarray) for v in (grad, x, weight)):
            return self._recorded_backward(grad, x, weight, bias)
        plan = self._plan(x, weight)
        o = weight.shape[0]
        # dZ as (N, OH, OW, O): no copy when grad is channels-last, as ours are
        dz = np.ascontiguousarray(grad.transpose(0, 2, 3, 1))
        grads = plan.gradients(x, weight, dz, self._needs(bias), self.padding)

        def work(claimed):
            scratch = grads.scratch()
            for chunk, lo, hi in claimed:
                grads.add_chunk(scratch, chunk, lo, hi, dz[lo:hi].reshape(plan.rows(lo, hi), o))

        plan.share(work)
        return grads.result()

    def _needs(self, bias: Any) -> tuple[bool, bool, bool]:
        """Which of dx, dW and db to compute."""
        needs = self.needs_input_grad
        return needs[0], needs[1], bias is not None and needs[2]

    def _plan(self, x: np.ndarray, weight: np.ndarray) -> Im2col:
        """Backward's fast path, on forward's padded input (padded again if forward has run
        since on other values: the scalar engine's)."""
        saved_x, padded_x = self.saved[:2]
        if saved_x is not x:
            padded_x = padded(x, self.padding, nhwc=True)
        out_hw = self._geometry(x, weight, None)
        return Im2col(padded_x, weight, out_hw, self.stride, self.dilation, self.groups)

    def jvp(self, tangents, out, x, weight, bias=None):
        """Bilinear in (x, weight), plus the bias: conv(ẋ, W) + conv(x, Ẇ) + ḃ."""
        tx, tw, tb = (*tangents, None, None)[:3]
        plain = Conv2d(*self.settings())
        return add_tangents(
            None if tx is None else replay(plain, tx, weight),
            None if tw is None else replay(plain, x, tw),
            None if tb is None else tb.reshape(1, -1, 1, 1),
        )

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


# --------------------------------------------------------------------------- constant padding
class ConstantPad(Op):
    """PyTorch's ``pad(x, pad, mode='constant', value)``: ``pad`` lists (before, after) pairs
    from the last axis backwards; a negative amount crops. Its VJP is the same op with every
    amount negated (crop what was added, add zeros where it cropped)."""

    name = "pad"
    batching = "trailing"
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


# --------------------------------------------------------------------------- transposed
def transposed_output_size(
    hw: Pair,
    kernel: Pair,
    stride: Pair,
    padding: Pair,
    output_padding: Pair,
    dilation: Pair,
) -> Pair:
    """(H − 1)·s − 2p + d·(k − 1) + output_padding + 1 along each axis (PyTorch's)."""
    return tuple(  # type: ignore[return-value]
        (n - 1) * s - 2 * p + d * (k - 1) + op + 1
        for n, k, s, p, op, d in zip(hw, kernel, stride, padding, output_padding, dilation)
    )


class ConvTranspose2d(Op):
    """Transposed convolution (PyTorch's ``conv_transpose2d``), the adjoint of ``Conv2d``
    with respect to its input: x (N, Cin, H, W), weight (Cin, Cout/groups, kH, kW), bias
    (Cout,) → (N, Cout, OH, OW), OH = (H − 1)·s − 2p + d·(kH − 1) + output_padding + 1.

    Forward is col2im of Wᵀ · x: each input pixel adds its kernel-sized, weighted patch onto
    the output at stride s, overlapping patches summing; then ``padding`` is cropped from
    each side and ``output_padding`` rows and columns are kept at the bottom and right. As a
    convolution's input gradient, its VJPs are convolutions: dx = conv2d(dout, W) with the
    same stride, padding, dilation and groups; dW pairs x with the windows of dout (an
    im2col), and db sums dout. They are written once, with operations arrays and Tensors
    share, so second derivatives work.
    """

    name = "conv_transpose2d"
    batching, batching_rank = "conv", 4  # shared weights: fold_batch; per sample: grouped

    def __init__(
        self,
        stride: Pair = (1, 1),
        padding: Pair = (0, 0),
        output_padding: Pair = (0, 0),
        dilation: Pair = (1, 1),
        groups: int = 1,
    ):
        self.stride, self.padding = tuple(stride), tuple(padding)
        self.output_padding, self.dilation, self.groups = (
            tuple(output_padding),
            tuple(dilation),
            int(groups),
        )

    def _geometry(self, x: Any, weight: Any, bias: Any) -> tuple[Pair, Padding, Pair]:
        """Check the shapes; return the output's (OH, OW), the padding per side that makes
        the convolution with the output give x's size back, and the rows and columns beyond
        (always 0 before the bias: ``output_padding`` larger than ``padding``)."""
        op, g = self.name, self.groups
        x_shape, w_shape = shape_of(x), shape_of(weight)
        if len(w_shape) != 4:
            raise ValueError(
                f"{op}: weight must be 4-D (in_channels, out_channels/groups, kH, kW), got "
                f"shape {w_shape}"
            )
        if len(x_shape) != 4:
            raise ValueError(f"{op}: expected a 4-D (N, C, H, W) input, got shape {x_shape}")
        if w_shape[0] % g:
            raise ValueError(
                f"{op}: groups={g} must divide the weight's {w_shape[0]} input channels "
                f"(weight of shape {w_shape})"
            )
        if x_shape[1] != w_shape[0]:
            raise ShapeError(
                f"{op}: input of shape {x_shape} has {x_shape[1]} channels, but weight of "
                f"shape {w_shape} expects {w_shape[0]}"
            )
        out_channels = w_shape[1] * g
        if bias is not None and shape_of(bias) != (out_channels,):
            raise ValueError(
                f"{op}: bias of shape {shape_of(bias)} does not match weight of shape "
                f"{w_shape} with groups={g} (expected ({out_channels},))"
            )
        for o, s, d in zip(self.output_padding, self.stride, self.dilation):
            if o >= max(s, d) or o < 0:
                raise RuntimeError(
                    f"{op}: output padding must be smaller than either stride or dilation, "
                    f"but got output_padding={self.output_padding}, stride={self.stride}, "
                    f"dilation={self.dilation}"
                )
        out_hw = transposed_output_size(
            x_shape[2:], w_shape[2:], self.stride, self.padding, self.output_padding,
            self.dilation,
        )  # fmt: skip
        if min(out_hw) < 1:
            raise ValueError(
                f"{op}: the output's spatial size {out_hw} is not positive (input {x_shape}, "
                f"weight {w_shape}, stride {self.stride}, padding {self.padding}, dilation "
                f"{self.dilation}, output_padding {self.output_padding})"
            )
        pads = tuple((p, max(p - o, 0)) for p, o in zip(self.padding, self.output_padding))
        beyond = tuple(max(o - p, 0) for p, o in zip(self.padding, self.output_padding))
        return out_hw, pads, beyond  # type: ignore[return-value]

    def _window(self, pads: Padding, kernel: Pair) -> dict[str, Any]:
        return {
            "kernel_size": kernel,
            "dilation": self.dilation,
            "padding": pads,
            "stride": self.stride,
        }

    def forward(self, x, weight, bias=None):
        (oh, ow), pads, (eh, ew) = self._geometry(x, weight, bias)
        n, cin, h, w = x.shape
        _, cog, kh, kw = weight.shape
        g = self.groups
        # per group, Wᵀ (C_out/G·kH·kW, C_in/G) times x (C_in/G, H·W): the columns to fold
        wmat = weight.reshape(g, cin // g, cog * kh * kw).transpose(0, 2, 1)
        cols = np.matmul(wmat, x.reshape(n, g, cin // g, h * w))
        cols = cols.reshape(n, g * cog * kh * kw, h * w)
        folded = Fold((oh - eh, ow - ew), **self._window(pads, (kh, kw))).forward(cols)
        dtype = folded.dtype if bias is None else np.result_type(folded, bias)
        out = np.zeros((n, g * cog, oh, ow), dtype=dtype)
        out[:, :, : oh - eh, : ow - ew] = folded
        if bias is not None:
            out += bias.reshape(-1, 1, 1)
        return out

    def backward(self, grad, out, x, weight, bias=None):
        need_x, need_w = self.needs_input_grad[:2]
        need_b = bias is not None and self.needs_input_grad[2]
        (oh, ow), pads, (eh, ew) = self._geometry(x, weight, None)
        n, cin, h, w = shape_of(x)
        _, cog, kh, kw = shape_of(weight)
        g = self.groups
        reached = grad[:, :, : oh - eh, : ow - ew] if eh or ew else grad  # the rest is bias only
        dx = dw = db = None
        if need_x:  # the convolution whose input gradient the forward is
            dx = call(
                Conv2d, reached, weight, stride=self.stride, padding=pads,
                dilation=self.dilation, groups=g,
            )  # fmt: skip
        if need_w:  # dW[ci, co, i, j] = Σ x[n, ci, l] · windows(dout)[n, (co, i, j), l]
            windows = call(Unfold, reached, **self._window(pads, (kh, kw)))
            windows = windows.reshape((n, g, cog * kh * kw, h * w))
            xs = x.reshape((n, g, cin // g, h * w))
            dw = np.sum(xs @ np.swapaxes(windows, 2, 3), axis=0).reshape((cin, cog, kh, kw))
        if need_b:
            db = np.sum(grad, axis=(0, 2, 3))
        return dx, dw, db

    def jvp(self, tangents, out, x, weight, bias=None):
        """Bilinear in (x, weight), plus the bias: convT(ẋ, W) + convT(x, Ẇ) + ḃ."""
        tx, tw, tb = (*tangents, None, None)[:3]
        plain = ConvTranspose2d(
            self.stride, self.padding, self.output_padding, self.dilation, self.groups
        )
        return add_tangents(
            None if tx is None else replay(plain, tx, weight),
            None if tw is None else replay(plain, x, tw),
            None if tb is None else tb.reshape(1, -1, 1, 1),
        )
