"""``F.linear``: ``x @ weight.T + bias`` as one fused op."""

from __future__ import annotations

from tensorgrad import ops
from tensorgrad.core.engine import apply, as_tensor
from tensorgrad.core.math_methods import check_not_bool_product
from tensorgrad.core.tensor import Tensor


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias``; ``weight`` has shape (out_features, in_features)."""
    x = input if isinstance(input, Tensor) else as_tensor(input)
    weight = as_tensor(weight)
    check_not_bool_product("linear", x, weight)
    if weight.ndim == 1:  # PyTorch's: a vector of in_features weights, one output
        if bias is not None and x.ndim == 2:  # PyTorch's addmm path wants a matrix
            raise RuntimeError(f"linear: mat2 must be a matrix, got a 1-D weight {weight.shape}")
        return x @ weight if bias is None else x @ weight + bias
    if bias is None:
        return apply(ops.Linear(), x, as_tensor(weight))
    return apply(ops.Linear(), x, as_tensor(weight), as_tensor(bias))
