"""``LayerNorm``, ``GroupNorm``, ``RMSNorm``, ``LocalResponseNorm`` and
``InstanceNorm1d``/``2d``/``3d``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tensorgrad import array_backend
from tensorgrad.core.tensor import Tensor
from tensorgrad.nn import functional as F
from tensorgrad.nn.modules.module import Module
from tensorgrad.nn.parameter import Parameter


class LayerNorm(Module):
    """Normalise each sample over its trailing ``normalized_shape`` dimensions, then apply an
    elementwise scale (ones) and shift (zeros) when ``elementwise_affine``."""

    def __init__(
        self,
        normalized_shape: int | Sequence[int],
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        if device is not None:
            array_backend.as_device(device)
        dtype = array_backend.as_dtype(dtype) or array_backend.DEFAULT_FLOAT
        shape = (
            (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        )
        self.normalized_shape, self.eps = shape, eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(array_backend.ones(shape, dtype))
            self.bias = Parameter(array_backend.zeros(shape, dtype)) if bias else None
        else:
            self.weight = self.bias = None

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
        )


# --------------------------------------------------------------------------- more normalisations
# (group, RMS, local response and instance norm)
class GroupNorm(Module):
    """Normalise over groups of ``num_channels / num_groups`` channels, then scale and shift
    per channel (ones and zeros at first) when ``affine``."""

    def __init__(
        self,
        num_groups: int,
        num_channels: int,
        eps: float = 1e-5,
        affine: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        if num_channels % num_groups:
            raise ValueError("num_channels must be divisible by num_groups")
        if device is not None:
            array_backend.as_device(device)
        dtype = array_backend.as_dtype(dtype) or array_backend.DEFAULT_FLOAT
        self.num_groups, self.num_channels, self.eps, self.affine = (
            num_groups, num_channels, eps, affine)  # fmt: skip
        if affine:
            self.weight = Parameter(array_backend.ones((num_channels,), dtype))
            self.bias = Parameter(array_backend.zeros((num_channels,), dtype))
        else:
            self.weight = self.bias = None

    def forward(self, input: Tensor) -> Tensor:
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"


class RMSNorm(Module):
    """``x / sqrt(mean(x²) + eps)`` over the trailing ``normalized_shape`` dimensions, times
    a learnable scale (ones at first) when ``elementwise_affine``."""

    def __init__(
        self,
        normalized_shape: int | Sequence[int],
        eps: float | None = None,
        elementwise_affine: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        if device is not None:
            array_backend.as_device(device)
        dtype = array_backend.as_dtype(dtype) or array_backend.DEFAULT_FLOAT
        shape = (
            (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        )
        self.normalized_shape, self.eps = shape, eps
        self.elementwise_affine = elementwise_affine
        self.weight = Parameter(array_backend.ones(shape, dtype)) if elementwise_affine else None

    def forward(self, input: Tensor) -> Tensor:
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
        )


class LocalResponseNorm(Module):
    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class _InstanceNorm(Module):
    """Instance normalisation: each channel of each sample over its positions; with
    ``affine`` a per-channel scale and shift, with ``track_running_stats`` running statistics
    used in eval mode (both off by default, as PyTorch's)."""

    _ndim = 0  #: the input's dimensions with the batch one

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float = 0.1,
        affine: bool = False,
        track_running_stats: bool = False,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        if device is not None:
            array_backend.as_device(device)
        dtype = array_backend.as_dtype(dtype) or array_backend.DEFAULT_FLOAT
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = Parameter(array_backend.ones((num_features,), dtype))
            self.bias = Parameter(array_backend.zeros((num_features,), dtype))
        else:
            self.weight = self.bias = None
        if track_running_stats:
            self.register_buffer(
                "running_mean", Tensor(array_backend.zeros((num_features,), dtype))
            )
            self.register_buffer("running_var", Tensor(array_backend.ones((num_features,), dtype)))
            self.register_buffer("num_batches_tracked", Tensor(np.zeros((), np.int64)))
        else:
            self.running_mean = self.running_var = self.num_batches_tracked = None

    def forward(self, input: Tensor) -> Tensor:
        x = input
        unbatched = x.ndim == self._ndim - 1
        if x.ndim not in (self._ndim - 1, self._ndim):
            raise ValueError(
                f"expected {self._ndim - 1}D or {self._ndim}D input (got {x.ndim}D input)"
            )
        if unbatched:
            x = x.unsqueeze(0)
        use_input_stats = self.training or not self.track_running_stats
        out = F.instance_norm(
            x, self.running_mean, self.running_var, self.weight, self.bias,
            use_input_stats, self.momentum, self.eps,
        )  # fmt: skip
        return out.squeeze(0) if unbatched else out

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
            f"track_running_stats={self.track_running_stats}"
        )


class InstanceNorm1d(_InstanceNorm):
    _ndim = 3


class InstanceNorm2d(_InstanceNorm):
    _ndim = 4


class InstanceNorm3d(_InstanceNorm):
    _ndim = 5
