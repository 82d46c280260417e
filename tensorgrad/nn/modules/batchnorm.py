"""Batch normalisation layers: ``BatchNorm1d`` and ``BatchNorm2d``."""

from __future__ import annotations

from typing import Any

from tensorgrad import array_backend
from tensorgrad.core.tensor import Tensor
from tensorgrad.grad_mode import no_grad
from tensorgrad.nn import functional as F
from tensorgrad.nn import init
from tensorgrad.nn.modules.module import Module
from tensorgrad.nn.parameter import Parameter

_LAYOUTS = {2: "(N, {})", 3: "(N, {}, L)", 4: "(N, {}, H, W)"}


class _BatchNorm(Module):
    """Batch normalisation per channel C (dimension 1), PyTorch's layer.

    Training uses the batch statistics and updates ``running_mean`` and ``running_var``
    (with the unbiased batch variance) by ``momentum``, or by a cumulative average when
    ``momentum`` is None; eval uses the running statistics. Buffers, as in PyTorch:
    ``running_mean``, ``running_var`` and ``num_batches_tracked``. ``bias=False`` (keyword
    only, PyTorch 2.13's) keeps the scale and drops the shift.
    """

    _input_dims: tuple[int, ...] = ()  #: the input dimensions the layer accepts

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        device: Any = None,
        dtype: Any = None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__()
        if device is not None:
            array_backend.as_device(device)
        dtype = array_backend.as_dtype(dtype) or array_backend.DEFAULT_FLOAT
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self.has_bias = bias
        if affine:
            self.weight = Parameter(array_backend.ones((num_features,), dtype))
            self.bias = Parameter(array_backend.zeros((num_features,), dtype)) if bias else None
        else:
            self.weight = self.bias = None
        if track_running_stats:
            self.register_buffer(
                "running_mean", Tensor(array_backend.zeros((num_features,), dtype))
            )
            self.register_buffer("running_var", Tensor(array_backend.ones((num_features,), dtype)))
            self.register_buffer(
                "num_batches_tracked", Tensor(array_backend.zeros((), array_backend.int64))
            )
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            init.zeros_(self.running_mean)
            init.ones_(self.running_var)
            with no_grad():
                self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim not in self._input_dims or input.shape[1] != self.num_features:
            shapes = " or ".join(_LAYOUTS[n].format(self.num_features) for n in self._input_dims)
            raise ValueError(
                f"{type(self).__name__}: expected input of shape {shapes}, got {input.shape}"
            )
        factor = 0.0
        if self.training and self.track_running_stats:
            with no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:  # a cumulative moving average
                factor = 1.0 / int(self.num_batches_tracked.item())
            else:
                factor = self.momentum
        return F.batch_norm(
            input,
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


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of (N, C) or (N, C, L) input."""

    _input_dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of (N, C, H, W) input, per channel."""

    _input_dims = (4,)
