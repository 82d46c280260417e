"""``F.linear``: ``x @ weight.T + bias`` as one fused op."""

from __future__ import annotations

from tensorgrad import ops
from tensorgrad.core.engine import apply, require_tensors
from tensorgrad.core.methods.common import no_bool_kernel
from tensorgrad.core.product_dtypes import added_in_place, check_linear_dtypes
from tensorgrad.core.tensor import Tensor


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias``; ``weight`` has shape (out_features, in_features). The
    three share one dtype, as PyTorch asks (``product_dtypes.check_linear_dtypes``)."""
    require_tensors("linear", input=input, weight=weight, bias=bias)
    x = input
    fused = check_linear_dtypes("linear", x, weight, bias)
    no_bool_kernel("linear", x)  # PyTorch's addmm has no bool kernel (matmul neither)
    if weight.ndim == 1:  # PyTorch's: a vector of in_features weights, one output
        out = x @ weight
        return out if bias is None else out + added_in_place("linear", out, bias)
    if bias is None:
        return apply(ops.Linear(), x, weight)
    if bias.shape == weight.shape[:1]:
        return apply(ops.Linear(), x, weight, bias)
    # any other bias PyTorch expands to the output's shape (a (1, out) row, a 0-d number, a
    # (N, 1) column); expand's RuntimeError where it cannot
    out = apply(ops.Linear(), x, weight)
    expanded = bias.expand(*out.shape)
    return out + (expanded if fused else added_in_place("linear", out, expanded))
