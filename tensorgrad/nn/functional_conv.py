"""Convolution, pooling, padding and channel dropout on Tensors, as ``torch.nn.functional``
has them: the same names, signatures and defaults.

Inputs are (N, C, H, W), or unbatched (C, H, W) where PyTorch accepts that; ``conv1d`` is
``conv2d`` on (N, C, 1, L). The ops behind them live in ``tensorgrad/ops/conv.py`` and
``tensorgrad/ops/pool.py``; docs/conv.md explains them.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from tensorgrad import backend
from tensorgrad.ops.conv import (
    ConstantPad,
    Conv2d,
    Fold,
    Unfold,
    check_conv,
    conv_padding,
    int_tuple,
    positive,
)
from tensorgrad.ops.pool import AdaptiveAvgPool2d, AvgPool2d, MaxPool2d
from tensorgrad.tensor import Tensor, _apply, as_tensor

IntPair = int | tuple[int, int]


def _tensor(x: Any) -> Tensor:
    return x if isinstance(x, Tensor) else as_tensor(x)


def _groups(groups: Any, op: str) -> int:
    if not isinstance(groups, (int, np.integer)) or isinstance(groups, bool):
        raise TypeError(f"{op}: groups must be an int, got {groups!r}")
    if groups < 1:
        raise ValueError(f"{op}: groups must be a positive integer, got {groups}")
    return int(groups)


def _non_negative(values: tuple[int, ...], what: str, op: str) -> tuple[int, ...]:
    if any(v < 0 for v in values):
        raise ValueError(f"{op}: {what} must be non-negative, got {values}")
    return values


def _batched(x: Tensor, ndim: int, op: str, layout: str) -> tuple[Tensor, bool]:
    """``x`` with a batch axis (added when it has ``ndim - 1`` dimensions), and whether one
    was added."""
    if x.ndim == ndim:
        return x, False
    if x.ndim == ndim - 1:
        return x.reshape((1, *x.shape)), True
    raise ValueError(
        f"{op}: expected a {ndim - 1}-D (unbatched) or {ndim}-D {layout} input, got shape {x.shape}"
    )


def _unbatched(out: Tensor, added: bool) -> Tensor:
    return out.reshape(out.shape[1:]) if added else out


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
) -> Tensor:
    x, weight = _tensor(input), _tensor(weight)
    bias = None if bias is None else _tensor(bias)
    stride = positive(int_tuple(stride, d, "stride", op), "stride", op)
    dilation = positive(int_tuple(dilation, d, "dilation", op), "dilation", op)
    groups = _groups(groups, op)
    kernel = weight.shape[2:] if weight.ndim == d + 2 else (1,) * d
    pads = conv_padding(padding, kernel, stride, dilation, op)
    check_conv(op, x.shape, weight.shape, None if bias is None else bias.shape, stride, pads,
               dilation, groups)  # fmt: skip
    x, added = _batched(x, d + 2, op, "(N, C, H, W)" if d == 2 else "(N, C, L)")
    if d == 1:  # (N, C, L) as (N, C, 1, L)
        x = x.reshape((x.shape[0], x.shape[1], 1, x.shape[2]))
        weight = weight.reshape((weight.shape[0], weight.shape[1], 1, weight.shape[2]))
        stride, dilation, pads = (1, *stride), (1, *dilation), ((0, 0), *pads)
    args = (x, weight) if bias is None else (x, weight, bias)
    out = _apply(Conv2d(stride, pads, dilation, groups), *args)
    if d == 1:
        out = out.reshape((out.shape[0], out.shape[1], out.shape[3]))
    return _unbatched(out, added)


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


def _window_args(op: str, kernel_size: Any, dilation: Any, padding: Any, stride: Any):
    kernel = positive(int_tuple(kernel_size, 2, "kernel_size", op), "kernel_size", op)
    dilation = positive(int_tuple(dilation, 2, "dilation", op), "dilation", op)
    padding = _non_negative(int_tuple(padding, 2, "padding", op), "padding", op)
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
    x, added = _batched(_tensor(input), 4, "unfold", "(N, C, H, W)")
    out = _apply(Unfold(**_window_args("unfold", kernel_size, dilation, padding, stride)), x)
    return _unbatched(out, added)


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
    x, added = _batched(_tensor(input), 3, "fold", "(N, C·kH·kW, L)")
    args = _window_args("fold", kernel_size, dilation, padding, stride)
    return _unbatched(_apply(Fold(size, **args), x), added)


# --------------------------------------------------------------------------- pooling
def _pool_args(op: str, kernel_size: Any, stride: Any, padding: Any) -> tuple:
    kernel = positive(int_tuple(kernel_size, 2, "kernel_size", op), "kernel_size", op)
    if stride is None or (isinstance(stride, Sequence) and len(stride) == 0):
        stride = kernel
    stride = positive(int_tuple(stride, 2, "stride", op), "stride", op)
    padding = _non_negative(int_tuple(padding, 2, "padding", op), "padding", op)
    return kernel, stride, padding


def max_pool2d(
    input: Tensor,
    kernel_size: IntPair,
    stride: IntPair | None = None,
    padding: IntPair = 0,
    dilation: IntPair = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    """The maximum over each window (stride defaults to the kernel size). The gradient goes
    to one element per window, as in PyTorch: the first maximum in row-major order (or the
    last NaN). ``return_indices`` also returns each winner's index h·W + w in its plane."""
    kernel, stride, padding = _pool_args("max_pool2d", kernel_size, stride, padding)
    dilation = positive(int_tuple(dilation, 2, "dilation", "max_pool2d"), "dilation", "max_pool2d")
    x, added = _batched(_tensor(input), 4, "max_pool2d", "(N, C, H, W)")
    op = MaxPool2d(kernel, stride, padding, dilation, ceil_mode, return_indices=return_indices)
    out = _unbatched(_apply(op, x), added)
    if not return_indices:
        return out
    indices = op.indices[0] if added else op.indices
    return out, Tensor(indices)


def avg_pool2d(
    input: Tensor,
    kernel_size: IntPair,
    stride: IntPair | None = None,
    padding: IntPair = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    """The mean over each window (stride defaults to the kernel size). ``count_include_pad``
    counts the zero padding in the divisor; ``divisor_override`` replaces the divisor."""
    kernel, stride, padding = _pool_args("avg_pool2d", kernel_size, stride, padding)
    if divisor_override is not None:
        if not isinstance(divisor_override, (int, np.integer)) or isinstance(
            divisor_override, bool
        ):
            raise TypeError(
                f"avg_pool2d: divisor_override must be an int or None, got {divisor_override!r}"
            )
        if divisor_override == 0:
            raise ValueError("avg_pool2d: divisor_override must not be zero")
    x, added = _batched(_tensor(input), 4, "avg_pool2d", "(N, C, H, W)")
    op = AvgPool2d(kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
    return _unbatched(_apply(op, x), added)


def adaptive_avg_pool2d(input: Tensor, output_size: int | tuple[int | None, ...] | None) -> Tensor:
    """The mean over windows chosen so that the output has ``output_size`` (an int, or a pair
    whose None entries keep the input's size)."""
    x, added = _batched(_tensor(input), 4, "adaptive_avg_pool2d", "(N, C, H, W)")
    if output_size is None or isinstance(output_size, (int, np.integer)):
        sizes = (output_size, output_size)
    elif isinstance(output_size, Sequence) and len(output_size) == 2:
        sizes = tuple(output_size)
    else:
        raise TypeError(
            f"adaptive_avg_pool2d: output_size must be an int or a pair of ints (or None), "
            f"got {output_size!r}"
        )
    resolved = []
    for size, current in zip(sizes, x.shape[2:]):
        if size is None:
            resolved.append(current)
        elif isinstance(size, (int, np.integer)) and not isinstance(size, bool) and size >= 0:
            resolved.append(int(size))
        else:
            raise ValueError(
                f"adaptive_avg_pool2d: output_size must hold non-negative ints or None, "
                f"got {output_size!r}"
            )
    return _unbatched(_apply(AdaptiveAvgPool2d(tuple(resolved)), x), added)


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
    return _apply(ConstantPad(tuple(pad), 0.0 if value is None else value), _tensor(input))


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero whole channels with probability ``p`` (one draw per sample and channel of
    (N, C, H, W) input) and scale the rest by 1/(1 − p); the identity when not training.

    As in PyTorch, a 3-D input is taken as (N, C, L), with a warning (PyTorch plans to read it
    as unbatched (C, H, W) instead), and other shapes are warned about but accepted.
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout2d: probability p must be in [0, 1], got {p}")
    if inplace:
        raise NotImplementedError(
            "dropout2d: inplace=True is not supported in tensorgrad; use the returned tensor"
        )
    x = _tensor(input)
    if x.ndim < 2:
        raise ValueError(f"dropout2d: expected an input of at least 2 dimensions, got {x.shape}")
    if x.ndim == 3:
        warnings.warn(
            "dropout2d: a 3-D input is taken as (N, C, L) and whole channels of it are zeroed "
            "(PyTorch's behaviour, which it plans to change to unbatched (C, H, W)); use a 4-D "
            "input to mean (N, C, H, W)",
            UserWarning,
            stacklevel=2,
        )
    elif x.ndim != 4:
        warnings.warn(
            f"dropout2d: received a {x.ndim}-D input; dropout2d is meant for 4-D (N, C, H, W) "
            "input (PyTorch deprecates other shapes)",
            UserWarning,
            stacklevel=2,
        )
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return x * 0.0
    shape = (*x.shape[:2], *(1,) * (x.ndim - 2))
    keep = backend.rng().random(shape, dtype=np.float32) >= p
    mask = keep.astype(x.dtype)
    mask *= 1.0 / (1.0 - p)
    return x * mask
