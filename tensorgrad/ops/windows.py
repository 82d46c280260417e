"""Windows of (N, C, H, W) arrays and their memory layout: what convolution (``conv.py``,
``im2col.py``, ``fused_conv.py``) and pooling (``pool.py``) share. Plain functions on arrays,
no ops.

A window's geometry is the kernel, stride, dilation and padding per side, ``((top, bottom),
(left, right))`` (PyTorch's ``padding='same'`` pads one more at the bottom and right for an
even dilated kernel). Every window of a padded array is one strided view of it
(:func:`window_view`); the elements at one kernel offset of every window are another
(:func:`offset_view`), through which pooling and col2im add values back.

The memory layout: a (N, C, H, W) array may be stored channels-last, as (N, H, W, C), which
is what ``Conv2d`` returns and reads without a copy; pooling keeps whichever layout it is
given. Elementwise work on strided views runs in memory order (:func:`memory_order`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

Pair = tuple[int, int]
Padding = tuple[Pair, Pair]


# --------------------------------------------------------------------------- geometry
def output_length(
    size: int, kernel: int, stride: int, dilation: int, before: int, after: int
) -> int:
    """Windows along one axis: ⌊(size + before + after − dilation·(kernel−1) − 1) / stride⌋ + 1."""
    return (size + before + after - dilation * (kernel - 1) - 1) // stride + 1


def window_view(
    array: np.ndarray, out_hw: Pair, kernel: Pair, stride: Pair, dilation: Pair
) -> np.ndarray:
    """Every window of an (N, C, Hp, Wp)-shaped array as a read-only (N, C, OH, OW, kH, kW)
    view, whatever its memory layout: no copy (this is the one ``as_strided`` in the ops)."""
    sn, sc, sh, sw = array.strides
    return as_strided(
        array,
        (*array.shape[:2], *out_hw, *kernel),
        (sn, sc, sh * stride[0], sw * stride[1], sh * dilation[0], sw * dilation[1]),
        writeable=False,
    )


def offset_view(
    array: np.ndarray,
    i: int,
    j: int,
    out_hw: Pair,
    stride: Pair,
    dilation: Pair,
    axes: Pair = (2, 3),
) -> np.ndarray:
    """The elements at kernel offset (i, j) of every window, array[.., i·d + s·oh, j·d + s·ow,
    ..] for all (oh, ow), with the spatial axes at ``axes``: a basic-slicing view (so it can
    be written to: the scatter-adds of col2im and pooling go through it)."""
    index = [slice(None)] * array.ndim
    for axis, k, s, d, o in zip(axes, (i, j), stride, dilation, out_hw):
        index[axis] = slice(k * d, k * d + s * (o - 1) + 1, s)
    return array[tuple(index)]


# --------------------------------------------------------------------------- memory layout
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


def cropped(array: np.ndarray, padding: Padding, hw: Pair) -> np.ndarray:
    """The inverse of :func:`padded` on shapes: the (H, W) interior of a padded array (a
    view, or the array itself when there is no padding)."""
    (top, _), (left, _) = padding
    if array.shape[2:] == tuple(hw):
        return array
    return array[:, :, top : top + hw[0], left : left + hw[1]]
