"""Pooling as ``torch.nn.functional`` has it: ``max_pool2d``, ``avg_pool2d`` and
``adaptive_avg_pool2d``; the ops live in ``tensorgrad/ops/pool.py``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tensorgrad.array_backend import ShapeError
from tensorgrad.core import batching
from tensorgrad.core.engine import apply, wrap
from tensorgrad.core.methods.common import floating_kernel, no_bool_kernel
from tensorgrad.core.tensor import Tensor
from tensorgrad.nn.functional._conv_args import (
    IntPair,
    batched,
    int_tuple,
    non_negative,
    positive,
    tensor_of,
    unbatched,
)
from tensorgrad.ops.pool import AdaptiveAvgPool2d, AvgPool2d, MaxPool2d


# --------------------------------------------------------------------------- pooling
def _pool_args(op: str, kernel_size: Any, stride: Any, padding: Any) -> tuple:
    kernel = positive(int_tuple(kernel_size, 2, "kernel_size", op), "kernel_size", op)
    if stride is None or (isinstance(stride, Sequence) and len(stride) == 0):
        stride = kernel
    stride = positive(int_tuple(stride, 2, "stride", op), "stride", op)
    padding = non_negative(int_tuple(padding, 2, "padding", op), "padding", op)
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
    x, added = batched(
        no_bool_kernel("max_pool2d", tensor_of(input)), 4, "max_pool2d", "(N, C, H, W)"
    )
    op = MaxPool2d(kernel, stride, padding, dilation, ceil_mode, return_indices=return_indices)
    pooled = apply(op, x)
    out = unbatched(pooled, added)
    if not return_indices:
        return out
    # (inside vmap the op ran on every sample at once: its indices take the output's layout)
    indices = batching.like(pooled, wrap(np.reshape(op.indices, pooled._data.shape)))
    return out, unbatched(indices, added)


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
    x, added = batched(tensor_of(input), 4, "avg_pool2d", "(N, C, H, W)")
    op = AvgPool2d(kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
    if x.dtype.kind != "f":  # PyTorch: int64 windows average to int64, truncated; no others
        if x.dtype != np.int64:
            raise NotImplementedError(f'"avg_pool2d" not implemented for {x.dtype}')
        return unbatched(apply(op, x.double()).trunc().long(), added)
    return unbatched(apply(op, x), added)


def adaptive_avg_pool2d(input: Tensor, output_size: int | tuple[int | None, ...] | None) -> Tensor:
    """The mean over windows chosen so that the output has ``output_size`` (an int, or a pair
    whose None entries keep the input's size; a 2-D input is one (H, W) plane, as PyTorch
    pools it)."""
    if tensor_of(input).ndim == 2:
        return adaptive_avg_pool2d(tensor_of(input).unsqueeze(0), output_size).squeeze(0)
    x, added = batched(tensor_of(input), 4, "adaptive_avg_pool2d", "(N, C, H, W)")
    if x.dtype.kind != "f":  # PyTorch: a mean of integers has no dtype to infer
        raise RuntimeError(
            f"adaptive_avg_pool2d: could not infer output dtype: input dtype must be a floating "
            f"point dtype, got {x.dtype}"
        )
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
    return unbatched(apply(AdaptiveAvgPool2d(tuple(resolved)), x), added)


# --------------------------------------------------------------------------- more pooling
# the 1-D pools as 2-D ones over a height of 1, and compositions
def _one(value: Any, name: str, what: str) -> int:
    if isinstance(value, Sequence):
        if len(value) != 1:
            raise RuntimeError(f"{name}: {what} must be a single int, got {value!r}")
        value = value[0]
    return int(value)


def max_pool1d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Any:
    """The maximum over each window of (N, C, L) or (C, L) input."""
    x = tensor_of(input)
    if x.ndim not in (2, 3):
        raise RuntimeError(f"max_pool1d() Expected 2D or 3D input tensor, but got {list(x.shape)}")
    floating_kernel("max_pool1d_impl", x)
    k = _one(kernel_size, "max_pool1d", "kernel_size")
    s = k if stride is None or (isinstance(stride, Sequence) and not stride) else _one(
        stride, "max_pool1d", "stride")  # fmt: skip
    p, d = _one(padding, "max_pool1d", "padding"), _one(dilation, "max_pool1d", "dilation")
    result = max_pool2d(x.unsqueeze(-2), (1, k), (1, s), (0, p), (1, d), ceil_mode, return_indices)
    if return_indices:
        out, indices = result
        return out.squeeze(-2), indices.squeeze(-2)
    return result.squeeze(-2)


def avg_pool1d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Tensor:
    """The mean over each window of (N, C, L) or (C, L) input."""
    x = tensor_of(input)
    if x.ndim not in (2, 3):
        raise RuntimeError(f"avg_pool1d() Expected 2D or 3D input tensor, but got {list(x.shape)}")
    k = _one(kernel_size, "avg_pool1d", "kernel_size")
    s = k if stride is None or (isinstance(stride, Sequence) and not stride) else _one(
        stride, "avg_pool1d", "stride")  # fmt: skip
    p = _one(padding, "avg_pool1d", "padding")
    out = avg_pool2d(x.unsqueeze(-2), (1, k), (1, s), (0, p), ceil_mode, count_include_pad)
    return out.squeeze(-2)


def _adaptive_bounds(size: int, out: int) -> list[tuple[int, int]]:
    """PyTorch's adaptive windows: ``[floor(i·size/out), ceil((i+1)·size/out))``."""
    return [((i * size) // out, -(-((i + 1) * size) // out)) for i in range(out)]


def adaptive_max_pool2d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """The maximum over windows chosen so that the output has ``output_size``; the gradient
    goes to the first maximum of each window, or to its last NaN (a gather at its flat index
    h·W + w, which ``return_indices`` returns, as PyTorch's)."""
    x, added = batched(tensor_of(input), 4, "adaptive_max_pool2d", "(N, C, H, W)")
    if 0 in x.shape[1:]:
        raise ShapeError(
            "adaptive_max_pool2d(): Expected input to have non-zero size for non-batch "
            f"dimensions, but input has sizes {list(tensor_of(input).shape)}"
        )
    floating_kernel("adaptive_max_pool2d", x)
    sizes = (output_size, output_size) if isinstance(output_size, (int, np.integer)) else tuple(
        output_size)  # fmt: skip
    if len(sizes) != 2:
        raise TypeError(
            f"adaptive_max_pool2d: output_size must be an int or a pair, got {output_size!r}"
        )
    n, c, h, w = x.shape
    oh, ow = (h if sizes[0] is None else int(sizes[0])), (w if sizes[1] is None else int(sizes[1]))
    data = x._data
    lead = data.shape[:-2]  # (N, C), and inside vmap the batch axes before them
    index = np.zeros((*lead, oh, ow), dtype=np.int64)
    for i, (r0, r1) in enumerate(_adaptive_bounds(h, oh)):
        for j, (c0, c1) in enumerate(_adaptive_bounds(w, ow)):
            window = data[..., r0:r1, c0:c1].reshape(*lead, -1)
            if not window.shape[-1]:
                continue
            nan = np.isnan(window)
            # PyTorch's kernel keeps the first maximum but the last NaN (``val > max || isnan``)
            last_nan = window.shape[-1] - 1 - np.argmax(nan[..., ::-1], -1)
            best = np.where(nan.any(-1), last_nan, np.argmax(window, -1))
            rows, cols = np.divmod(best, c1 - c0)
            index[..., i, j] = (rows + r0) * w + cols + c0
    flat = x.reshape(n, c, h * w)
    picks = batching.like(x, wrap(index.reshape(*lead, oh * ow)))
    out = unbatched(flat.gather(2, picks).reshape(n, c, oh, ow), added)
    if return_indices:
        return out, unbatched(batching.like(x, wrap(index)), added)
    return out


def _power(norm_type: Any) -> int | float:
    """The lp pools' ``p`` as given: an integer power keeps an integer input's dtype, so the
    average pool then accepts or refuses it as PyTorch's does (int64 yes, int32 no)."""
    if isinstance(norm_type, bool) or not isinstance(norm_type, int):
        return float(norm_type)
    return norm_type


def lp_pool2d(
    input: Tensor, norm_type: float, kernel_size: IntPair, stride: Any = None,
    ceil_mode: bool = False,
) -> Tensor:  # fmt: skip
    """``(Σ x^p)^(1/p)`` over each window (PyTorch's formula: an average pool of ``x^p``
    times the window size, then the ``1/p`` power of its positive part)."""
    kernel = int_tuple(kernel_size, 2, "kernel_size", "lp_pool2d")
    p = _power(norm_type)
    x = tensor_of(input)
    out = avg_pool2d(x**p, kernel, stride, 0, ceil_mode)
    return ((out.sign() * out.abs().relu()) * (kernel[0] * kernel[1])) ** (1.0 / p)


def lp_pool1d(
    input: Tensor, norm_type: float, kernel_size: int, stride: Any = None, ceil_mode: bool = False
) -> Tensor:
    p = _power(norm_type)
    k = _one(kernel_size, "lp_pool1d", "kernel_size")
    out = avg_pool1d(tensor_of(input) ** p, k, stride, 0, ceil_mode)
    return ((out.sign() * out.abs().relu()) * k) ** (1.0 / p)
