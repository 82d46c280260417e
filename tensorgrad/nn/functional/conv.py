"""Convolution as ``torch.nn.functional`` has it: ``conv1d``, ``conv2d``,
``conv_transpose1d``, ``conv_transpose2d``, ``unfold``, ``fold`` and ``pad``, with PyTorch's
names, signatures and defaults.

Inputs are (N, C, H, W), or unbatched (C, H, W) where PyTorch accepts that; ``conv1d`` is
``conv2d`` on (N, C, 1, L). The ops behind them live in ``tensorgrad/ops/conv.py`` (and the
fused ones, ``conv2d_relu`` and ``conv2d_relu_max_pool2d``, in ``tensorgrad/ops/fused_conv.py``);
docs/conv.md explains them.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from tensorgrad.array_backend import ShapeError
from tensorgrad.core.engine import apply
from tensorgrad.core.product_dtypes import added_in_place, check_conv_dtypes
from tensorgrad.core.tensor import Tensor
from tensorgrad.nn.functional._conv_args import (
    IntPair,
    batched,
    conv_padding,
    groups_of,
    int_tuple,
    non_negative,
    positive,
    tensor_of,
    unbatched,
)
from tensorgrad.ops.conv import ConstantPad, Conv2d, ConvTranspose2d, Fold, Unfold, check_conv
from tensorgrad.ops.fused_conv import Conv2dRelu, Conv2dReluMaxPool


# --------------------------------------------------------------------------- convolution
def _conv(
    op: str,
    d: int,
    input: Any,
    weight: Any,
    bias: Any,
    stride: Any,
    padding: Any,
    dilation: Any,
    groups: Any,
    op_type: type[Conv2d] = Conv2d,
) -> Tensor:
    x, weight = tensor_of(input), tensor_of(weight)
    bias = None if bias is None else tensor_of(bias)
    stride = positive(int_tuple(stride, d, "stride", op), "stride", op)
    dilation = positive(int_tuple(dilation, d, "dilation", op), "dilation", op)
    groups = groups_of(groups, op)
    kernel = weight.shape[2:] if weight.ndim == d + 2 else (1,) * d
    pads = conv_padding(padding, kernel, stride, dilation, op)
    check_conv(op, x.shape, weight.shape, None if bias is None else bias.shape, stride, pads,
               dilation, groups)  # fmt: skip
    check_conv_dtypes(op, x, weight, bias)
    x, added = batched(x, d + 2, op, "(N, C, H, W)" if d == 2 else "(N, C, L)")
    if d == 1:  # (N, C, L) as (N, C, 1, L)
        x = x.reshape((x.shape[0], x.shape[1], 1, x.shape[2]))
        weight = weight.reshape((weight.shape[0], weight.shape[1], 1, weight.shape[2]))
        stride, dilation, pads = (1, *stride), (1, *dilation), ((0, 0), *pads)
    args = (x, weight) if bias is None else (x, weight, bias)
    out = apply(op_type(stride, pads, dilation, groups), *args)
    if d == 1:
        out = out.reshape((out.shape[0], out.shape[1], out.shape[3]))
    return unbatched(out, added)


def conv2d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: IntPair = 1,
    padding: IntPair | str = 0,
    dilation: IntPair = 1,
    groups: int = 1,
) -> Tensor:
    """2-D cross-correlation of (N, C, H, W) or (C, H, W) input with weight
    (O, C/groups, kH, kW); padding an int, a pair, ``'valid'`` or ``'same'``."""
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv2d_relu(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: IntPair = 1,
    padding: IntPair | str = 0,
    dilation: IntPair = 1,
    groups: int = 1,
) -> Tensor:
    """``relu(conv2d(...))`` as one op, faster than the two (``ops.fused_conv.Conv2dRelu`` says
    why): what ``Sequential`` runs for a ``Conv2d`` layer followed by a ``ReLU``. Not a
    PyTorch function, so not in ``tensorgrad.nn.functional``'s namespace."""
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups, Conv2dRelu)


def conv2d_relu_max_pool2d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: IntPair = 1,
    padding: IntPair | str = 0,
    dilation: IntPair = 1,
    groups: int = 1,
    pool: IntPair = 2,
) -> Tensor:
    """``max_pool2d(relu(conv2d(...)), pool)`` as one op, for a max-pool whose windows tile
    the convolution's output (stride = kernel = ``pool``, no padding or dilation), faster
    than the three (``ops.fused_conv.Conv2dReluMaxPool`` says why): what ``Sequential`` runs for a
    ``Conv2d``, a ``ReLU`` and such a ``MaxPool2d``. Not a PyTorch function."""
    tiles = positive(int_tuple(pool, 2, "kernel_size", "max_pool2d"), "kernel_size", "max_pool2d")
    op_type = functools.partial(Conv2dReluMaxPool, pool=tiles)
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups, op_type)


def conv1d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: int | tuple[int] = 1,
    padding: int | tuple[int] | str = 0,
    dilation: int | tuple[int] = 1,
    groups: int = 1,
) -> Tensor:
    """1-D cross-correlation of (N, C, L) or (C, L) input with weight (O, C/groups, k)."""
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def _conv_transpose(
    op: str,
    d: int,
    input: Any,
    weight: Any,
    bias: Any,
    stride: Any,
    padding: Any,
    output_padding: Any,
    groups: Any,
    dilation: Any,
) -> Tensor:
    x, weight = tensor_of(input), tensor_of(weight)
    bias = None if bias is None else tensor_of(bias)
    if isinstance(padding, str):
        raise TypeError(f"{op}: padding must be an int or a tuple of ints, got {padding!r}")
    stride = positive(int_tuple(stride, d, "stride", op), "stride", op)
    dilation = positive(int_tuple(dilation, d, "dilation", op), "dilation", op)
    padding = non_negative(int_tuple(padding, d, "padding", op), "padding", op)
    output_padding = int_tuple(output_padding, d, "output_padding", op)
    groups = groups_of(groups, op)
    x, added = batched(x, d + 2, op, "(N, C, H, W)" if d == 2 else "(N, C, L)")
    if weight.ndim != d + 2:
        raise ShapeError(
            f"{op}: weight must be {d + 2}-D (in_channels, out_channels/groups, kernel...), "
            f"got shape {weight.shape}"
        )
    if weight.numel() == 0:
        raise ShapeError(
            f"{op}: non-empty {d + 2}D weight tensor expected, but got: {list(weight.shape)}"
        )
    check_conv_dtypes(op, x, weight, bias, transposed=True)
    if bias is not None:  # PyTorch adds it to the output in place
        bias = added_in_place(op, x, bias)
    if d == 1:  # (N, C, L) as (N, C, 1, L)
        x = x.reshape((x.shape[0], x.shape[1], 1, x.shape[2]))
        weight = weight.reshape((weight.shape[0], weight.shape[1], 1, weight.shape[2]))
        stride, dilation = (1, *stride), (1, *dilation)
        padding, output_padding = (0, *padding), (0, *output_padding)
    args = (x, weight) if bias is None else (x, weight, bias)
    out = apply(ConvTranspose2d(stride, padding, output_padding, dilation, groups), *args)
    if d == 1:
        out = out.reshape((out.shape[0], out.shape[1], out.shape[3]))
    return unbatched(out, added)


def conv_transpose2d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: IntPair = 1,
    padding: IntPair = 0,
    output_padding: IntPair = 0,
    groups: int = 1,
    dilation: IntPair = 1,
) -> Tensor:
    """Transposed 2-D convolution ("deconvolution", a GAN generator's upsampling) of
    (N, C_in, H, W) or (C_in, H, W) input with weight (C_in, C_out/groups, kH, kW): the
    input gradient of ``conv2d`` with the same settings. Note PyTorch's argument order:
    ``groups`` before ``dilation``."""
    return _conv_transpose(
        "conv_transpose2d", 2, input, weight, bias, stride, padding, output_padding, groups,
        dilation,
    )  # fmt: skip


def conv_transpose1d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: int | tuple[int] = 1,
    padding: int | tuple[int] = 0,
    output_padding: int | tuple[int] = 0,
    groups: int = 1,
    dilation: int | tuple[int] = 1,
) -> Tensor:
    """Transposed 1-D convolution of (N, C_in, L) or (C_in, L) input with weight
    (C_in, C_out/groups, k)."""
    return _conv_transpose(
        "conv_transpose1d", 1, input, weight, bias, stride, padding, output_padding, groups,
        dilation,
    )  # fmt: skip


def _window_args(op: str, kernel_size: Any, dilation: Any, padding: Any, stride: Any):
    kernel = positive(int_tuple(kernel_size, 2, "kernel_size", op), "kernel_size", op)
    dilation = positive(int_tuple(dilation, 2, "dilation", op), "dilation", op)
    padding = non_negative(int_tuple(padding, 2, "padding", op), "padding", op)
    stride = positive(int_tuple(stride, 2, "stride", op), "stride", op)
    return {
        "kernel_size": kernel,
        "dilation": dilation,
        "padding": tuple((p, p) for p in padding),
        "stride": stride,
    }


def unfold(
    input: Tensor,
    kernel_size: IntPair,
    dilation: IntPair = 1,
    padding: IntPair = 0,
    stride: IntPair = 1,
) -> Tensor:
    """im2col: every kernel-sized block of (N, C, H, W) input as a column of the
    (N, C·kH·kW, L) result (an unbatched (C, H, W) input gives (C·kH·kW, L))."""
    x, added = batched(tensor_of(input), 4, "unfold", "(N, C, H, W)")
    _no_integer_im2col("unfold", x)
    if 0 in x.shape[1:]:
        raise ShapeError(
            "unfold: Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other "
            f"non-zero dimensions for input, but got: {list(tensor_of(input).shape)}"
        )
    out = apply(Unfold(**_window_args("unfold", kernel_size, dilation, padding, stride)), x)
    return unbatched(out, added)


def _no_integer_im2col(name: str, x: Tensor) -> None:
    """PyTorch's im2col and col2im kernels take floats and bools, not integers."""
    if x.dtype.kind in "iu":
        raise NotImplementedError(f"{name}: not implemented for {x.dtype} (floats and bools only)")


def fold(
    input: Tensor,
    output_size: IntPair,
    kernel_size: IntPair,
    dilation: IntPair = 1,
    padding: IntPair = 0,
    stride: IntPair = 1,
) -> Tensor:
    """col2im, the adjoint of :func:`unfold`: adds the columns of (N, C·kH·kW, L) input back
    onto their blocks of an (N, C, *output_size) result; overlapping blocks sum."""
    size = positive(int_tuple(output_size, 2, "output_size", "fold"), "output_size", "fold")
    x, added = batched(tensor_of(input), 3, "fold", "(N, C·kH·kW, L)")
    _no_integer_im2col("fold", x)
    args = _window_args("fold", kernel_size, dilation, padding, stride)
    return unbatched(apply(Fold(size, **args), x), added)


# --------------------------------------------------------------------------- padding, dropout
_OTHER_PAD_MODES = ("reflect", "replicate", "circular")


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant", value: float | None = None):
    """Pad the last ``len(pad) // 2`` axes: ``pad`` is (before, after) for the last axis, then
    for the one before it, and so on; negative amounts crop. Only ``mode='constant'``."""
    if mode in _OTHER_PAD_MODES:
        raise NotImplementedError(
            f"pad: mode={mode!r} is not supported in tensorgrad; only 'constant' is"
        )
    if mode != "constant":
        raise NotImplementedError(f"pad: unrecognised padding mode {mode!r}")
    if not isinstance(pad, Sequence) or not all(
        isinstance(p, (int, np.integer)) and not isinstance(p, bool) for p in pad
    ):
        raise TypeError(f"pad: pad must be a sequence of ints, got {pad!r}")
    return apply(ConstantPad(tuple(pad), 0.0 if value is None else value), tensor_of(input))
