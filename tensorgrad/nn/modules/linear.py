"""``Identity``, ``Linear`` (and ``NonDynamicallyQuantizableLinear``), and the fusion of
Linear/ReLU runs in ``Sequential``."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from tensorgrad import array_backend, ops
from tensorgrad.core.engine import apply, as_tensor
from tensorgrad.core.product_dtypes import check_linear_dtypes
from tensorgrad.core.tensor import Tensor
from tensorgrad.nn import functional as F
from tensorgrad.nn import init
from tensorgrad.nn.modules.module import Module
from tensorgrad.nn.parameter import Parameter


class Identity(Module):
    """Returns its input unchanged (a placeholder, e.g. for a removed layer)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Any) -> Any:
        return input


class Linear(Module):
    """``y = x @ weight.T + bias`` with weight (out_features, in_features), as in PyTorch.

    Weight and bias start in U(−1/√in_features, 1/√in_features), PyTorch's default (Kaiming
    uniform with a = √5). The forward is one fused op.
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        if in_features < 0 or out_features < 0:
            raise ValueError(
                f"Linear: features must be non-negative, got ({in_features}, {out_features})"
            )
        if device is not None:
            array_backend.as_device(device)
        dtype = array_backend.as_dtype(dtype) or array_backend.DEFAULT_FLOAT
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(array_backend.zeros((out_features, in_features), dtype))
        self.bias = Parameter(array_backend.zeros((out_features,), dtype)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_features) if self.in_features > 0 else 0.0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


class NonDynamicallyQuantizableLinear(Linear):
    """A ``Linear`` under the name PyTorch gives ``MultiheadAttention.out_proj``'s class (a
    marker for its quantization tools), so a program that lists
    ``torch.nn.modules.linear.NonDynamicallyQuantizableLinear`` among its
    ``serialization.safe_globals`` finds it."""


def linear_chain(layers: tuple[Module, ...]) -> Callable[[Any], Tensor]:
    """A run of ``Linear`` and ``ReLU`` layers (in ``Sequential``) as a function that runs
    them as the one op ``linear_chain``. The layers' parameters are read at each call, so a
    parameter replaced since (or a bias removed) is seen. (Registered for ``Sequential`` in
    ``nn/modules/__init__.py``, where both layer types are known.)"""

    def run(x: Any) -> Tensor:
        x = as_tensor(x)
        steps: list[str] = []
        params: list[Tensor] = []
        for layer in layers:
            if type(layer) is not Linear:  # the run's other members are ReLUs
                steps.append("relu")
                continue
            step = "linear" if layer.bias is None else "linear+bias"
            # each layer's input has x's dtype and dimensions once the layers before pass
            check_linear_dtypes(
                f"linear_chain: step {len(steps)} ({step})",
                x,
                layer.weight,
                layer.bias,
                shapes_checked=True,  # x stands for each layer's input: its dtype only
            )
            steps.append(step)
            params += (layer.weight,) if layer.bias is None else (layer.weight, layer.bias)
        return apply(ops.LinearChain(tuple(steps)), x, *params)

    return run
