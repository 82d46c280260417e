"""``LayerNorm``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

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
