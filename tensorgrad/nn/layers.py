"""Layers, with PyTorch's names, arguments, initialisation and reprs."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from tensorgrad import backend, ops
from tensorgrad.grad_mode import no_grad
from tensorgrad.nn import functional as F
from tensorgrad.nn import init
from tensorgrad.nn.module import FUSERS, Module
from tensorgrad.nn.parameter import Parameter
from tensorgrad.tensor import Tensor, _apply, as_tensor


class Identity(Module):
    """Returns its input unchanged (a placeholder, e.g. for a removed layer)."""

    def forward(self, x: Any) -> Any:
        return x


class Linear(Module):
    """``y = x @ weight.T + bias`` with weight (out_features, in_features), as in PyTorch.

    Weight and bias start in U(−1/√in_features, 1/√in_features), PyTorch's default (Kaiming
    uniform with a = √5). The forward is one fused op.
    """

    def __init__(
        self, in_features: int, out_features: int, bias: bool = True, dtype: Any = None
    ) -> None:
        super().__init__()
        if in_features < 0 or out_features < 0:
            raise ValueError(
                f"Linear: features must be non-negative, got ({in_features}, {out_features})"
            )
        dtype = backend.as_dtype(dtype) or backend.DEFAULT_FLOAT
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(backend.zeros((out_features, in_features), dtype))
        self.bias = Parameter(backend.zeros((out_features,), dtype)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_features) if self.in_features > 0 else 0.0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, x: Tensor) -> Tensor:
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


class ReLU(Module):
    def forward(self, x: Tensor) -> Tensor:
        return F.relu(x)


def _linear_chain(layers: tuple[Module, ...]) -> Callable[[Any], Tensor]:
    """A run of ``Linear`` and ``ReLU`` layers (in ``Sequential``) as a function that runs
    them as the one op ``linear_chain``."""
    steps: list[str] = []
    params: list[Tensor] = []
    for layer in layers:
        if type(layer) is ReLU:
            steps.append("relu")
        elif layer.bias is None:
            steps.append("linear")
            params.append(layer.weight)
        else:
            steps.append("linear+bias")
            params += (layer.weight, layer.bias)
    chain = tuple(steps)

    def run(x: Any) -> Tensor:
        return _apply(ops.LinearChain(chain), as_tensor(x), *params)

    return run


FUSERS[Linear] = FUSERS[ReLU] = _linear_chain


class LeakyReLU(Module):
    def __init__(self, negative_slope: float = 0.01) -> None:
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: Tensor) -> Tensor:
        return F.leaky_relu(x, self.negative_slope)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}"


class Tanh(Module):
    def forward(self, x: Tensor) -> Tensor:
        return F.tanh(x)


class Sigmoid(Module):
    def forward(self, x: Tensor) -> Tensor:
        return F.sigmoid(x)


class GELU(Module):
    """GELU, exact (``approximate='none'``) or with the tanh approximation."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, x: Tensor) -> Tensor:
        return F.gelu(x, self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Softmax(Module):
    """Softmax over ``dim`` (the last axis by default; PyTorch guesses one when dim is None)."""

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        return F.softmax(x, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    """Log-softmax over ``dim``, computed stably (shifted by the maximum)."""

    def forward(self, x: Tensor) -> Tensor:
        return F.log_softmax(x, self.dim)


class Flatten(Module):
    """Merge axes ``start_dim..end_dim`` (by default all but the batch axis) into one."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x: Tensor) -> Tensor:
        return x.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Dropout(Module):
    """Inverted dropout: zeroes elements with probability ``p`` while training and scales the
    rest by 1/(1−p); the identity in eval mode. Masks come from the global generator."""

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: probability p must be in [0, 1], got {p}")
        self.p = p

    def forward(self, x: Tensor) -> Tensor:
        return F.dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"


class BatchNorm1d(Module):
    """Batch normalisation over (N, C) or (N, C, L) input, per channel C.

    Training uses the batch statistics and updates ``running_mean`` and ``running_var``
    (with the unbiased batch variance) by ``momentum``, or by a cumulative average when
    ``momentum`` is None; eval uses the running statistics. Buffers, as in PyTorch:
    ``running_mean``, ``running_var`` and ``num_batches_tracked``.
    """

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
    ) -> None:
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = Parameter(backend.ones((num_features,)))
            self.bias = Parameter(backend.zeros((num_features,)))
        else:
            self.weight = self.bias = None
        if track_running_stats:
            self.register_buffer("running_mean", Tensor(backend.zeros((num_features,))))
            self.register_buffer("running_var", Tensor(backend.ones((num_features,))))
            self.register_buffer("num_batches_tracked", Tensor(backend.zeros((), backend.int64)))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            init.zeros_(self.running_mean)
            init.ones_(self.running_var)
            init.zeros_(self.num_batches_tracked)

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim not in (2, 3) or x.shape[1] != self.num_features:
            raise ValueError(
                f"BatchNorm1d: expected input of shape (N, {self.num_features}) or "
                f"(N, {self.num_features}, L), got {x.shape}"
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
            f"affine={self.affine}, track_running_stats={self.track_running_stats}"
        )


class LayerNorm(Module):
    """Normalise each sample over its trailing ``normalized_shape`` axes, then apply an
    elementwise scale (ones) and shift (zeros) when ``elementwise_affine``."""

    def __init__(
        self,
        normalized_shape: int | Sequence[int],
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
    ) -> None:
        super().__init__()
        shape = (
            (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        )
        self.normalized_shape, self.eps = shape, eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(backend.ones(shape))
            self.bias = Parameter(backend.zeros(shape)) if bias else None
        else:
            self.weight = self.bias = None

    def forward(self, x: Tensor) -> Tensor:
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
        )
