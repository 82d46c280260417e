"""Convolution layers: ``Conv1d`` and ``Conv2d``, with PyTorch's names, arguments, parameter
shapes, initialisation and reprs, so a ``state_dict`` moves between these and ``torch.nn``
unchanged."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from tensorgrad import array_backend
from tensorgrad.core.tensor import Tensor
from tensorgrad.nn import functional as F
from tensorgrad.nn import init
from tensorgrad.nn.functional._conv_args import conv_padding, int_tuple, positive
from tensorgrad.nn.functional.conv import conv2d_relu, conv2d_relu_max_pool2d
from tensorgrad.nn.modules.activation import ReLU
from tensorgrad.nn.modules.container import FUSERS
from tensorgrad.nn.modules.module import Module
from tensorgrad.nn.modules.pooling import MaxPool2d
from tensorgrad.nn.parameter import Parameter

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
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        if device is not None:
            array_backend.as_device(device)
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
        dtype = array_backend.as_dtype(dtype) or array_backend.DEFAULT_FLOAT
        shape = (out_channels, in_channels // groups, *self.kernel_size)
        self.weight = Parameter(array_backend.zeros(shape, dtype))
        self.bias = Parameter(array_backend.zeros((out_channels,), dtype)) if bias else None
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


def conv_relu_chain(layers: tuple[Module, ...]) -> Callable[[Any], Tensor]:
    """A run of ``Conv2d``, ``ReLU`` and ``MaxPool2d`` layers (in ``Sequential``) as a
    function: each ``Conv2d`` directly followed by a ``ReLU`` runs as the one op
    ``conv2d_relu``, or with a ``MaxPool2d`` after them as ``conv2d_relu_max_pool2d`` when
    its windows tile; the others run as themselves. The layers' parameters and settings are
    read at each call."""
    steps: list[Callable[[Any], Any]] = []
    i = 0
    while i < len(layers):
        layer = layers[i]
        follower = layers[i + 1] if i + 1 < len(layers) else None
        if type(layer) is Conv2d and type(follower) is ReLU:
            pool = layers[i + 2] if i + 2 < len(layers) else None
            if type(pool) is MaxPool2d:
                steps.append(_fused_with_pool(layer, pool))
                i += 3
            else:
                steps.append(_fused(layer))
                i += 2
        else:
            steps.append(layer)
            i += 1

    def run(x: Any) -> Tensor:
        for step in steps:
            x = step(x)
        return x

    return run


def _fused(conv: Conv2d) -> Callable[[Any], Tensor]:
    def run(x: Any) -> Tensor:
        return conv2d_relu(
            x, conv.weight, conv.bias, conv.stride, conv.padding, conv.dilation, conv.groups
        )

    return run


def _tiles(pool: MaxPool2d) -> tuple[int, int] | None:
    """The (kH, kW) tiles of a max-pool whose windows tile its input (stride = kernel, no
    padding or dilation, no ceil_mode or indices), else None."""
    try:
        kernel = int_tuple(pool.kernel_size, 2, "kernel_size", "max_pool2d")
        stride = int_tuple(pool.stride, 2, "stride", "max_pool2d")
        padding = int_tuple(pool.padding, 2, "padding", "max_pool2d")
        dilation = int_tuple(pool.dilation, 2, "dilation", "max_pool2d")
    except TypeError:  # the pool's own call says what is wrong
        return None
    if kernel != stride or any(padding) or dilation != (1, 1) or min(kernel) < 1:
        return None
    return None if pool.ceil_mode or pool.return_indices else kernel


def _fused_with_pool(conv: Conv2d, pool: MaxPool2d) -> Callable[[Any], Tensor]:
    relu = _fused(conv)

    def run(x: Any) -> Tensor:
        tiles = _tiles(pool)
        if tiles is None:
            return pool(relu(x))
        return conv2d_relu_max_pool2d(
            x, conv.weight, conv.bias, conv.stride, conv.padding, conv.dilation, conv.groups,
            tiles,
        )  # fmt: skip

    return run


FUSERS[Conv2d] = (conv_relu_chain, frozenset((Conv2d, ReLU, MaxPool2d)))
