"""Pooling over windows of (N, C, H, W) input: max, average, and adaptive average.

Pooling reads the same windows as a convolution, one kernel offset (i, j) at a time: the
elements at offset (i, j) of every window form a strided view of the padded input
(``windows.offset_view``), so a max or a sum over the window is a running max or sum of kH·kW
views, and the VJP adds the gradient back through the same views. Outputs keep the input's
memory layout (channels-last in, channels-last out). The batch is shared among tensorgrad's
threads (``_native/threads.py``).

Max pooling sends each window's gradient to one element, PyTorch's: the first maximum in the
window's row-major order, or, in a window holding NaN (whose maximum is NaN), the last NaN.
Elements of the padding never receive it. Average pooling spreads it evenly over the window,
divided as the forward divided.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorgrad._native import threads
from tensorgrad.ops.base import Op, call, linear_jvp, shape_of
from tensorgrad.ops.index import IndexAdd
from tensorgrad.ops.windows import (
    Pair,
    channels_last,
    cropped,
    memory_order,
    new_array,
    offset_view,
    padded,
    same_order,
)

#: pooling makes several passes over each chunk of the batch of about this many output
#: elements, so that the later passes find it in cache (``2**62``: the whole batch at once)
CHUNK_ELEMENTS: int = 1 << 15
#: max pooling whose windows tile the input routes gradients with one comparison and one
#: product over the whole input (:func:`_route_tiles`); False: the general offset loop
TILES: bool = True


# --------------------------------------------------------------------------- geometry
def pool_output_length(
    size: int, kernel: int, stride: int, pad: int, dilation: int, ceil_mode: bool
) -> int:
    """PyTorch's pooling output length: with ``ceil_mode`` a last, partial window counts,
    unless it would start in the padding after the input."""
    span = size + 2 * pad - dilation * (kernel - 1) - 1 + (stride - 1 if ceil_mode else 0)
    length = span // stride + 1
    if ceil_mode and (length - 1) * stride >= size + pad:
        length -= 1
    return length


class _Pool(Op):
    """What the pooling ops share: kernel, stride, padding, dilation, ceil_mode, geometry."""

    uses_inputs = False

    def __init__(
        self,
        kernel_size: Pair,
        stride: Pair,
        padding: Pair,
        dilation: Pair = (1, 1),
        ceil_mode: bool = False,
    ):
        self.kernel, self.stride = tuple(kernel_size), tuple(stride)
        self.padding, self.dilation = tuple(padding), tuple(dilation)
        self.ceil_mode = bool(ceil_mode)

    def _geometry(self, shape: tuple[int, ...]) -> tuple[Pair, tuple[Pair, Pair]]:
        """Check the input's shape; return the output's (OH, OW) and the padding per side
        that makes every window fit (a last ``ceil_mode`` window may need more after)."""
        if len(shape) != 4:
            raise ValueError(
                f"{self.name}: expected a 3-D (C, H, W) or 4-D (N, C, H, W) input, got shape "
                f"{shape}"
            )
        if any(p > k // 2 for p, k in zip(self.padding, self.kernel)):
            raise ValueError(
                f"{self.name}: padding {self.padding} must be at most half of kernel_size "
                f"{self.kernel}"
            )
        sizes = shape[2:]
        out = tuple(
            pool_output_length(size, k, s, p, d, self.ceil_mode)
            for size, k, s, p, d in zip(
                sizes, self.kernel, self.stride, self.padding, self.dilation
            )
        )
        if min(out) < 1 or shape[1] == 0:
            raise ValueError(
                f"{self.name}: input of shape {shape} gives an output of spatial size {out}: "
                f"too small for kernel_size {self.kernel} (dilation {self.dilation}, padding "
                f"{self.padding}, stride {self.stride})"
                if shape[1]
                else f"{self.name}: input of shape {shape} has no channels"
            )
        pads = tuple(
            (p, max(p, (o - 1) * s + d * (k - 1) + 1 - size - p))
            for size, k, s, p, d, o in zip(
                sizes, self.kernel, self.stride, self.padding, self.dilation, out
            )
        )
        return out, pads

    def _offsets(self) -> list[Pair]:
        return [(i, j) for i in range(self.kernel[0]) for j in range(self.kernel[1])]

    def _params(self) -> dict[str, Any]:
        return {
            "kernel_size": self.kernel,
            "stride": self.stride,
            "padding": self.padding,
            "dilation": self.dilation,
            "ceil_mode": self.ceil_mode,
        }


def _lowest(dtype: np.dtype) -> Any:
    """The value padding takes in a max: −∞, or the smallest integer."""
    if dtype.kind == "f":
        return -np.inf
    if dtype.kind in "iu":
        return np.iinfo(dtype).min
    return -np.inf  # Python objects (the scalar engine's Values) compare with floats


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


# --------------------------------------------------------------------------- max pooling
class MaxPool2d(_Pool):
    """The maximum over each window; the gradient goes to one element per window (see the
    module's docstring). ``return_indices`` keeps PyTorch's indices (each winner's position
    in its input plane, h·W + w) in ``self.indices``."""

    name = "max_pool2d"
    batching, batching_rank = "fold_batch", 4
    uses_inputs = True
    uses_output = True

    def __init__(self, *args: Any, return_indices: bool = False, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.return_indices = return_indices
        self.indices: np.ndarray | None = None

    def forward(self, x):
        out_hw, pads = self._geometry(shape_of(x))
        padded_x = padded(x, pads, value=_lowest(x.dtype))
        source, axes = memory_order(padded_x)
        views = [self._view(source, i, j, out_hw, axes) for i, j in self._offsets()]
        out = new_array((*x.shape[:2], *out_hw), x.dtype, channels_last(padded_x))
        threads.over_batch(running_max, [same_order(out, axes), *views], CHUNK_ELEMENTS)
        self.saved = (x, padded_x, pads)
        if self.return_indices:
            self.indices = self._winners(padded_x, out, pads, x.shape[2:])
        return out

    def _view(self, array: np.ndarray, i: int, j: int, out_hw: Pair, axes: Pair) -> np.ndarray:
        return offset_view(array, i, j, out_hw, self.stride, self.dilation, axes)

    def backward(self, grad, out, x):
        saved_x, padded_x, pads = self.saved
        hw = shape_of(x)[2:]
        data = x if isinstance(x, np.ndarray) else np.asarray(x)  # a Tensor's array
        if saved_x is not data:  # forward ran again since, on other values (scalar engine's)
            padded_x = padded(data, pads, value=_lowest(data.dtype))
        if not isinstance(grad, np.ndarray):  # on Tensors: a scatter whose VJP is a gather
            winners = self._winners(padded_x, np.asarray(out), pads, hw)
            n, c, h, w = shape_of(x)
            rows = np.arange(n).reshape(n, 1, 1, 1)
            channels = np.arange(c).reshape(1, c, 1, 1)
            dx = call(IndexAdd, grad, shape=(n, c, h * w), index=(rows, channels, winners))
            return (dx.reshape((n, c, h, w)),)
        nhwc = channels_last(padded_x)
        tiles = TILES and self.stride == self.kernel and self.dilation == (1, 1)
        tiles = tiles and not any(sum(pads, ()))
        covered = tiles and all(o * k == size for o, k, size in zip(out.shape[2:], self.kernel, hw))
        dtype = np.result_type(grad, out)
        padded_dx = new_array(padded_x.shape, dtype, nhwc, fill=None if covered else 0)
        source, axes = memory_order(padded_x)
        target, mine, upstream = (same_order(a, axes) for a in (padded_dx, out, grad))
        real = self._real_mask(padded_x.shape[2:], pads, hw)
        if real is not None:
            real = real[None, :, :, None] if axes == (1, 2) else real[None, None]
        disjoint = all(
            s >= d * (k - 1) + 1 for k, s, d in zip(self.kernel, self.stride, self.dilation)
        )

        def route(upstream, mine, source, target):
            if tiles:
                _route_tiles(self, upstream, mine, source, target, axes)
            else:
                _route_to_winners(self, upstream, mine, source, target, axes, real, disjoint)

        threads.over_batch(route, [upstream, mine, source, target], CHUNK_ELEMENTS)
        return (cropped(padded_dx, pads, hw),)

    def jvp(self, tangents, out, x):
        """Each window's tangent is its winner's (the element backward sends it to)."""
        _, padded_x, pads = self.saved
        winners = self._winners(padded_x, out, pads, shape_of(x)[2:])
        n, c, h, w = shape_of(x)
        rows = np.arange(n).reshape(n, 1, 1, 1)
        channels = np.arange(c).reshape(1, c, 1, 1)
        return tangents[0].reshape(n, c, h * w)[rows, channels, winners]

    def _real_mask(self, padded_hw: Pair, pads, hw: Pair) -> np.ndarray | None:
        """Where the padded plane holds input (not padding), or None without padding."""
        (top, _), (left, _) = pads
        if tuple(padded_hw) == tuple(hw):
            return None
        mask = np.zeros(padded_hw, dtype=bool)
        mask[top : top + hw[0], left : left + hw[1]] = True
        return mask

    def _winners(self, padded_x: np.ndarray, out: np.ndarray, pads, hw: Pair) -> np.ndarray:
        """Each window's winner as its position h·W + w in the input plane (int64), by the
        rule of :func:`_route_to_winners`."""
        (top, _), (left, _) = pads
        out_hw = out.shape[2:]
        winners = np.full(out.shape, -1, dtype=np.int64)
        real = self._real_mask(padded_x.shape[2:], pads, hw)
        rows, columns = np.indices(padded_x.shape[2:])
        plane = np.broadcast_to((rows - top) * hw[1] + (columns - left), padded_x.shape)
        for i, j in self._offsets():
            view = self._view(padded_x, i, j, out_hw, (2, 3))
            hit = (view == out) & (winners < 0)
            if real is not None:
                hit &= self._view(real[None, None], i, j, out_hw, (2, 3))
            np.copyto(winners, self._view(plane, i, j, out_hw, (2, 3)), where=hit)
            if view.dtype.kind == "f":  # the last NaN of a NaN window: later ones overwrite
                nan = np.isnan(view)
                np.copyto(winners, self._view(plane, i, j, out_hw, (2, 3)), where=nan)
        return winners


def _route_to_winners(op: MaxPool2d, grad, out, padded_x, padded_dx, axes, real, disjoint) -> None:
    """Add each window's gradient to its winner in ``padded_dx`` (zeros), for a share of the
    batch; all arrays in memory order, spatial axes at ``axes``.

    Offsets are visited in the window's row-major order; the gradient still unclaimed by a
    window goes to the first element equal to the window's maximum, and is then used up. A
    window whose maximum is NaN matches nothing; its gradient goes afterwards to its last
    NaN. Multiplying by the 0/1 mask is exact for finite gradients (and several times faster
    than NumPy's masked ``where=`` loops); infinite or NaN ones take the masked loops, which
    leave the other elements at exactly 0 as PyTorch does.
    """
    out_hw = out.shape[axes[0]], out.shape[axes[1]]
    offsets = op._offsets()
    unclaimed = np.array(grad, copy=True, order="K")
    exact = not finite(unclaimed)
    hit = np.empty_like(out, dtype=bool)
    part = None if disjoint and not exact else np.empty_like(unclaimed)
    last = len(offsets) - 1
    for k, (i, j) in enumerate(offsets):
        view = op._view(padded_x, i, j, out_hw, axes)
        target = op._view(padded_dx, i, j, out_hw, axes)
        np.equal(view, out, out=hit)
        if real is not None:
            hit &= op._view(real, i, j, out_hw, axes)
        if exact:
            np.add(target, unclaimed, out=target, where=hit)
            if k < last:
                np.copyto(unclaimed, 0, where=hit)
        elif disjoint:  # nothing else writes here: the product is the gradient
            np.multiply(unclaimed, hit, out=target)
            if k < last:
                unclaimed -= target
        else:
            np.multiply(unclaimed, hit, out=part)
            target += part
            if k < last:
                unclaimed -= part
    if _has_nan(out):
        _to_last_nan(op, grad, out, padded_x, padded_dx, axes)


def _has_nan(out: np.ndarray) -> bool:
    """Whether a maximum is NaN: its sum is then NaN (or, spuriously, ±∞ minus ∞, after which
    the exact check finds nothing). One cheap pass without a temporary."""
    if out.dtype.kind != "f" or not out.size:
        return False
    with np.errstate(invalid="ignore", over="ignore"):
        return not np.isfinite(np.add.reduce(out, axis=None))


def _to_last_nan(op: MaxPool2d, grad, out, padded_x, padded_dx, axes) -> None:
    """Add the gradient of each window whose maximum is NaN to the window's last NaN."""
    out_hw = out.shape[axes[0]], out.shape[axes[1]]
    pending = np.isnan(out)
    hit = np.empty_like(pending)
    for i, j in reversed(op._offsets()):
        if not pending.any():
            break
        view = op._view(padded_x, i, j, out_hw, axes)
        target = op._view(padded_dx, i, j, out_hw, axes)
        np.logical_and(np.isnan(view), pending, out=hit)
        np.add(target, grad, out=target, where=hit)
        pending &= ~hit


def _route_tiles(op: MaxPool2d, grad, out, x, dx, axes) -> None:
    """:func:`_route_to_winners` for windows that tile the input (stride = kernel, no
    dilation, no padding): each window is a block of a reshaped view, so one comparison and
    one product over the whole input route every window, with the first-maximum rule applied
    on the small boolean array in between."""
    kh, kw = op.kernel
    oh, ow = out.shape[axes[0]], out.shape[axes[1]]
    if axes == (1, 2):  # (N, H, W, C)
        n, c = x.shape[0], x.shape[3]
        blocks, pooled, window = (n, oh, kh, ow, kw, c), (n, oh, 1, ow, 1, c), (2, 4)
        region = (slice(None), slice(0, oh * kh), slice(0, ow * kw))
    else:  # (N, C, H, W)
        n, c = x.shape[:2]
        blocks, pooled, window = (n, c, oh, kh, ow, kw), (n, c, oh, 1, ow, 1), (3, 5)
        region = (slice(None), slice(None), slice(0, oh * kh), slice(0, ow * kw))
    # splitting axes of a slice is always a view: dx's blocks are written in place
    x_blocks, dx_blocks = x[region].reshape(blocks), dx[region].reshape(blocks)
    hit = np.equal(x_blocks, out.reshape(pooled))
    nan = _has_nan(out)
    # one hit per window (no ties, no NaN window): the first-maximum rule has nothing to do
    ties = nan or np.count_nonzero(hit) != out.size
    taken = None
    for a in range(kh if ties else 0):
        for b in range(kw):
            index = [slice(None)] * 6
            index[window[0]], index[window[1]] = a, b
            offset = hit[tuple(index)]
            if taken is None:
                taken = offset.copy()
            else:
                np.greater(offset, taken, out=offset)  # a hit where no earlier offset hit
                taken |= offset
    if axes == (1, 2) and not grad.flags.c_contiguous:  # in x's order: a small copy
        grad = np.ascontiguousarray(grad)  # that the product over the input then runs faster on
    upstream = grad.reshape(pooled)
    if finite(grad):  # exact: x · 1 = x, x · 0 = 0
        np.multiply(hit, upstream, out=dx_blocks)
    else:  # ∞ · 0 would be NaN: a masked copy leaves the losers at exactly 0
        dx_blocks[...] = 0
        np.copyto(dx_blocks, upstream, where=hit)
    if nan:
        _to_last_nan(op, grad, out, x, dx, axes)


# --------------------------------------------------------------------------- average pooling
class _Average(_Pool):
    """The divisor of each window, shared by the average pool and its adjoint."""

    def __init__(
        self,
        kernel_size: Pair,
        stride: Pair,
        padding: Pair,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override: int | None = None,
    ):
        super().__init__(kernel_size, stride, padding, (1, 1), ceil_mode)
        self.count_include_pad = bool(count_include_pad)
        self.divisor_override = divisor_override

    def _average_params(self) -> dict[str, Any]:
        return {
            "kernel_size": self.kernel,
            "stride": self.stride,
            "padding": self.padding,
            "ceil_mode": self.ceil_mode,
            "count_include_pad": self.count_include_pad,
            "divisor_override": self.divisor_override,
        }

    def _scale(self, hw: Pair, out_hw: Pair, dtype: Any) -> Any:
        """1 / divisor for each output position: a number, or an (OH, OW) array.

        As PyTorch: a window is clipped to the padded input; ``count_include_pad`` counts
        its padding, otherwise only the input's elements count.
        """
        if self.divisor_override is not None:
            return 1.0 / self.divisor_override
        factors = []
        for size, k, s, p, o in zip(hw, self.kernel, self.stride, self.padding, out_hw):
            start = np.arange(o) * s - p
            end = np.minimum(start + k, size + p)
            if not self.count_include_pad:
                start, end = np.maximum(start, 0), np.minimum(end, size)
            factors.append(end - start)
        counts = np.multiply.outer(*factors)
        if np.all(counts == counts.flat[0]):
            return 1.0 / float(counts.flat[0])
        return (1.0 / counts).astype(dtype if np.dtype(dtype).kind == "f" else np.float64)


class AvgPool2d(_Average):
    """The mean over each window (PyTorch's ``avg_pool2d``, divisor as it computes it)."""

    name = "avg_pool2d"
    batching, batching_rank = "fold_batch", 4

    def forward(self, x):
        out_hw, pads = self._geometry(shape_of(x))
        padded_x = padded(x, pads, value=0)
        source, axes = memory_order(padded_x)
        views = [
            offset_view(source, i, j, out_hw, self.stride, self.dilation, axes)
            for i, j in self._offsets()
        ]
        dtype = x.dtype if x.dtype.kind in "fO" else np.float64
        out = new_array((*x.shape[:2], *out_hw), dtype, channels_last(padded_x))
        scale = self._scale(x.shape[2:], out_hw, dtype)
        if not np.isscalar(scale) and axes == (1, 2):
            scale = scale[:, :, None]  # (OH, OW, 1) against (N, OH, OW, C)
        threads.over_batch(
            lambda out, *views: _running_sum(out, views, scale), [same_order(out, axes), *views]
        )
        return out

    def backward(self, grad, out, x):
        return (
            call(AvgPool2dBackward, grad, input_size=shape_of(x)[2:], **self._average_params()),
        )

    jvp = linear_jvp  # linear in its input: the op itself maps the tangent


class AvgPool2dBackward(_Average):
    """The adjoint of ``AvgPool2d``: each output's value, divided as the forward divided,
    added to every element of its window. Its own VJP is ``AvgPool2d``."""

    name = "avg_pool2d_backward"
    batching, batching_rank = "fold_batch", 4

    def __init__(self, input_size: Pair, **kwargs: Any):
        super().__init__(**kwargs)
        self.input_size = tuple(input_size)

    def forward(self, grad):
        n, c = shape_of(grad)[:2]
        out_hw, pads = self._geometry((n, c, *self.input_size))
        (top, bottom), (left, right) = pads
        h, w = self.input_size
        shape = (n, c, h + top + bottom, w + left + right)
        padded_dx = new_array(shape, grad.dtype, channels_last(grad), fill=0)
        target, axes = memory_order(padded_dx)
        scaled = same_order(grad * self._scale(self.input_size, out_hw, grad.dtype), axes)
        offsets = self._offsets()

        def spread(target, scaled):
            for i, j in offsets:
                view = offset_view(target, i, j, out_hw, self.stride, self.dilation, axes)
                view += scaled

        threads.over_batch(spread, [target, scaled])
        return cropped(padded_dx, pads, self.input_size)

    def backward(self, grad, out, g):
        return (call(AvgPool2d, grad, **self._average_params()),)

    jvp = linear_jvp  # linear in its input: the op itself maps the tangent


def _running_sum(out: np.ndarray, views, scale: Any) -> None:
    """``out`` = (the sum of the views) · scale."""
    np.copyto(out, views[0])
    for view in views[1:]:
        out += view
    out *= scale


class AdaptiveAvgPool2d(Op):
    """The mean over PyTorch's adaptive windows: output row o averages input rows
    ⌊o·H/OH⌋ to ⌈(o+1)·H/OH⌉ − 1, and likewise for columns. A linear map on each plane,
    ``A_h · x · A_wᵀ`` with averaging matrices, so its VJP is ``A_hᵀ · g · A_w``; when the
    sizes divide evenly it is a reshape and a mean."""

    name = "adaptive_avg_pool2d"
    batching, batching_rank = "fold_batch", 4
    uses_inputs = False

    def __init__(self, output_size: Pair):
        self.output_size = tuple(output_size)

    def _check(self, shape: tuple[int, ...]) -> None:
        if len(shape) != 4:
            raise ValueError(
                f"adaptive_avg_pool2d: expected a 3-D (C, H, W) or 4-D (N, C, H, W) input, "
                f"got shape {shape}"
            )
        if 0 in shape[2:]:  # no channels is fine: nothing to pool (PyTorch's too)
            raise ValueError(
                f"adaptive_avg_pool2d: input of shape {shape} is empty in a non-batch dimension"
            )

    def _even(self, hw: Pair) -> bool:
        return all(size % out == 0 for size, out in zip(hw, self.output_size) if out)

    def _matrices(self, hw: Pair, dtype: Any) -> list[np.ndarray]:
        matrices = []
        for size, out in zip(hw, self.output_size):
            o = np.arange(out)
            start, end = (o * size) // out, -((-(o + 1) * size) // out)
            columns = np.arange(size)
            inside = (columns >= start[:, None]) & (columns < end[:, None])
            matrices.append(inside / (end - start)[:, None])
        kind = np.dtype(dtype).kind
        return [m.astype(dtype if kind == "f" else np.float64) for m in matrices]

    def forward(self, x):
        shape = shape_of(x)
        self._check(shape)
        n, c, h, w = shape
        oh, ow = self.output_size
        if 0 in self.output_size:
            dtype = x.dtype if x.dtype.kind in "fO" else np.float64
            return np.zeros((n, c, oh, ow), dtype=dtype)
        if self._even((h, w)):
            return x.reshape(n, c, oh, h // oh, ow, w // ow).mean(axis=(3, 5))
        rows, columns = self._matrices((h, w), x.dtype)
        return rows @ (x @ columns.T)

    def backward(self, grad, out, x):
        n, c, h, w = shape_of(x)
        oh, ow = self.output_size
        if 0 in self.output_size:
            return (np.zeros((n, c, h, w), dtype=grad.dtype),)
        if self._even((h, w)):
            kh, kw = h // oh, w // ow
            spread = grad.reshape((n, c, oh, 1, ow, 1)) * (1.0 / (kh * kw))
            return (np.broadcast_to(spread, (n, c, oh, kh, ow, kw)).reshape((n, c, h, w)),)
        rows, columns = self._matrices((h, w), grad.dtype)
        return ((rows.T @ grad) @ columns,)

    jvp = linear_jvp  # linear in its input: the op itself maps the tangent
