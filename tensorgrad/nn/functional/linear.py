"""``F.linear``: ``x @ weight.T + bias`` as one fused op."""

from __future__ import annotations

from tensorgrad import ops
from tensorgrad.core.engine import apply, as_tensor
from tensorgrad.core.methods.common import no_bool_kernel
from tensorgrad.core.product_dtypes import added_in_place, check_linear_dtypes
from tensorgrad.core.tensor import Tensor


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias``; ``weight`` has shape (out_features, in_features). The
    three share one dtype, as PyTorch asks (``product_dtypes.check_linear_dtypes``)."""
    x = input if isinstance(input, Tensor) else as_tensor(input)
    weight = as_tensor(weight)
    bias = None if bias is None else as_tensor(bias)
    check_linear_dtypes("linear", x, weight, bias)
    no_bool_kernel("linear", x)  # PyTorch's addmm has no bool kernel (matmul neither)
    if weight.ndim == 1:  # PyTorch's: a vector of in_features weights, one output
        out = x @ weight
        return out if bias is None else out + added_in_place("linear", out, bias)
    if bias is None:
        return apply(ops.Linear(), x, weight)
    return apply(ops.Linear(), x, weight, bias)
