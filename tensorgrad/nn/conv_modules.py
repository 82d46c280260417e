"""Convolution, pooling, 2-D batch normalisation and channel dropout layers, with PyTorch's
names, arguments, parameter shapes, initialisation and reprs: a ``state_dict`` moves between
these and ``torch.nn`` unchanged.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tensorgrad import backend
from tensorgrad.grad_mode import no_grad
from tensorgrad.nn import functional_conv as F
from tensorgrad.nn import init
from tensorgrad.nn.functional import Normalize
from tensorgrad.nn.layers import BatchNorm1d
from tensorgrad.nn.module import Module
from tensorgrad.nn.parameter import Parameter
from tensorgrad.ops.conv import conv_padding, int_tuple, positive
from tensorgrad.tensor import Tensor, _apply, as_tensor

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(Module):
    """What ``Conv1d`` and ``Conv2d`` share: arguments, parameters, initialisation, repr."""

    _dims = 2

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        padding: Any = 0,
        dilation: Any = 1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        dtype: Any = None,
    ) -> None:
        super().__init__()
        name, d = type(self).__name__, self._dims
        if not isinstance(groups, int) or isinstance(groups, bool) or groups <= 0:
            raise ValueError(f"{name}: groups must be a positive integer, got {groups!r}")
        if in_channels % groups:
            raise ValueError(
                f"{name}: in_channels ({in_channels}) must be divisible by groups ({groups})"
            )
        if out_channels % groups:
            raise ValueError(
                f"{name}: out_channels ({out_channels}) must be divisible by groups ({groups})"
            )
        if padding_mode not in _PADDING_MODES:
            raise ValueError(
                f"{name}: padding_mode must be one of {_PADDING_MODES}, got {padding_mode!r}"
            )
        if padding_mode != "zeros":
            raise NotImplementedError(
                f"{name}: padding_mode={padding_mode!r} is not supported in tensorgrad; only "
                "'zeros' is"
            )
        self.kernel_size = positive(
            int_tuple(kernel_size, d, "kernel_size", name), "kernel_size", name
        )
        self.stride = positive(int_tuple(stride, d, "stride", name), "stride", name)
        self.dilation = positive(int_tuple(dilation, d, "dilation", name), "dilation", name)
        if isinstance(padding, str):
            if padding not in ("valid", "same"):
                raise ValueError(
                    f"{name}: invalid padding string {padding!r}, should be 'valid' or 'same'"
                )
            conv_padding(padding, self.kernel_size, self.stride, self.dilation, name)
            self.padding: Any = padding
        else:
            conv_padding(padding, self.kernel_size, self.stride, self.dilation, name)
            self.padding = int_tuple(padding, d, "padding", name)
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.padding_mode = padding_mode
        dtype = backend.as_dtype(dtype) or backend.DEFAULT_FLOAT
        shape = (out_channels, in_channels // groups, *self.kernel_size)
        self.weight = Parameter(backend.zeros(shape, dtype))
        self.bias = Parameter(backend.zeros((out_channels,), dtype)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's default: weight U(−b, b) with b = 1/√fan_in (Kaiming uniform with a = √5),
        bias U(−1/√fan_in, 1/√fan_in), fan_in = in_channels/groups · kernel elements."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1] * math.prod(self.kernel_size)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0.0
            init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        d = self._dims
        text = (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}"
        )
        if self.padding != (0,) * d:
            text += f", padding={self.padding}"
        if self.dilation != (1,) * d:
            text += f", dilation={self.dilation}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        if self.padding_mode != "zeros":
            text += f", padding_mode={self.padding_mode}"
        return text


class Conv2d(_ConvNd):
    """2-D convolution: weight (out_channels, in_channels/groups, kH, kW), bias
    (out_channels,); input (N, C, H, W) or (C, H, W)."""

    def forward(self, x: Tensor) -> Tensor:
        return F.conv2d(
            x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups
        )


class Conv1d(_ConvNd):
    """1-D convolution: weight (out_channels, in_channels/groups, k); input (N, C, L)."""

    _dims = 1

    def forward(self, x: Tensor) -> Tensor:
        return F.conv1d(
            x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups
        )


class MaxPool2d(Module):
    """The maximum over each kernel-sized window (stride defaults to the kernel size)."""

    def __init__(
        self,
        kernel_size: Any,
        stride: Any = None,
        padding: Any = 0,
        dilation: Any = 1,
        return_indices: bool = False,
        ceil_mode: bool = False,
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, x: Tensor) -> Any:
        return F.max_pool2d(
            x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
            self.return_indices,
        )  # fmt: skip

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
            f"dilation={self.dilation}, ceil_mode={self.ceil_mode}"
        )


class AvgPool2d(Module):
    """The mean over each kernel-sized window (stride defaults to the kernel size)."""

    def __init__(
        self,
        kernel_size: Any,
        stride: Any = None,
        padding: Any = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override: int | None = None,
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, x: Tensor) -> Tensor:
        return F.avg_pool2d(
            x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
            self.count_include_pad, self.divisor_override,
        )  # fmt: skip

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool2d(Module):
    """The mean over windows sized so that the output is ``output_size``."""

    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, x: Tensor) -> Tensor:
        return F.adaptive_avg_pool2d(x, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class Dropout2d(Module):
    """Zeroes whole channels with probability ``p`` while training, scaling the rest by
    1/(1 − p); the identity in eval mode. Masks come from the global generator."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout2d: probability p must be in [0, 1], got {p}")
        if inplace:
            raise NotImplementedError(
                "Dropout2d: inplace=True is not supported in tensorgrad; use the returned tensor"
            )
        self.p, self.inplace = p, inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.dropout2d(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


# --------------------------------------------------------------------------- batch norm
def batch_norm_2d(
    x: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Batch normalisation of (N, C, H, W) input per channel, over N, H and W: the batch
    statistics in training (or without running statistics), which then update the running
    ones in place with ``momentum`` and the UNBIASED variance, as PyTorch does; otherwise the
    running statistics. (``F.batch_norm`` does this for (N, C) and (N, C, L).)"""
    x = x if isinstance(x, Tensor) else as_tensor(x)
    if x.ndim != 4:
        raise ValueError(f"batch_norm: expected a 4-D (N, C, H, W) input, got shape {x.shape}")
    channels = x.shape[1]
    shape = (channels, 1, 1)
    if training or running_mean is None or running_var is None:
        count = x.size // max(channels, 1)
        if count <= 1:
            raise ValueError(
                f"batch_norm: expected more than 1 value per channel when training, got input "
                f"of shape {x.shape}"
            )
        op = Normalize((0, 2, 3), eps)
        out = _apply(op, x)
        if training and running_mean is not None and running_var is not None:
            with no_grad():
                unbiased = op.var.reshape(channels) * (count / (count - 1))
                running_mean.mul_(1.0 - momentum).add_(op.mean.reshape(channels) * momentum)
                running_var.mul_(1.0 - momentum).add_(unbiased * momentum)
    else:
        mean = running_mean.data.reshape(shape).astype(x.dtype)
        inverse_std = (1.0 / np.sqrt(running_var.data.reshape(shape) + eps)).astype(x.dtype)
        out = (x - mean) * inverse_std
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


class BatchNorm2d(BatchNorm1d):
    """Batch normalisation of (N, C, H, W) input per channel C: ``BatchNorm1d``'s buffers,
    momentum (None: a cumulative average) and eval behaviour, over N, H and W.
    ``bias=False`` (keyword only, as in PyTorch 2.13) keeps the scale but drops the shift."""

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats)
        self.has_bias = bias
        if affine and not bias:
            self.bias = None

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim != 4 or x.shape[1] != self.num_features:
            raise ValueError(
                f"BatchNorm2d: expected input of shape (N, {self.num_features}, H, W), got "
                f"{x.shape}"
            )
        factor = 0.0
        if self.training and self.track_running_stats:
            with no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:  # a cumulative moving average
                factor = 1.0 / int(self.num_batches_tracked.item())
            else:
                factor = self.momentum
        return batch_norm_2d(
            x,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            training=self.training or not self.track_running_stats,
            momentum=factor,
            eps=self.eps,
        )

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={self.affine}, bias={self.has_bias}, "
            f"track_running_stats={self.track_running_stats}"
        )
