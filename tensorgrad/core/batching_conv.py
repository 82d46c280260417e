"""vmap's rules for the image ops: an op on (N, …) samples with shared weights (a
convolution, a pool, unfold) takes the batch into N; a convolution with a weight per sample
(per-sample gradients) runs as one ``Conv2dPerSample`` (ops/batched_conv.py) or as the
composition a learner reads first, each sample's windows times its own weight matrix; a
transposed one as one grouped transposed convolution. ``core.batching`` dispatches to these.
"""

from __future__ import annotations

import math
from typing import Any

from tensorgrad import ops
from tensorgrad.core.batched_tensors import (
    _fresh,
    _logical_ndim,
    _run,
    _sizes,
    batched,
    dispatch,
    levels_of,
    lift,
)
from tensorgrad.core.tensor import Tensor
from tensorgrad.ops.batched_conv import Conv2dPerSample
from tensorgrad.ops.conv import check_conv
from tensorgrad.ops.fused_conv import Conv2dRelu, Conv2dReluMaxPool


def fold_batch(op: ops.Op, inputs: list, levels: tuple[int, ...]) -> Tensor:
    """An op on (N, …) samples with shared weights (a convolution, a pool): the batch axes
    join N."""
    x, *others = inputs
    if any(levels_of(o) for o in others) or _logical_ndim(x) != op.batching_rank:
        return NotImplemented
    sizes = _sizes(levels)
    flat = _run(ops.Reshape((-1, *x.shape[1:])), lift(x, levels, expand=True))
    out = _run(op, flat, *others)
    n = x.shape[0]
    return batched(_run(ops.Reshape((*sizes, n, *out._data.shape[1:])), out), levels)


def conv(op: ops.Op, inputs: list, levels: tuple[int, ...], per_sample_op: bool = True) -> Any:
    """A convolution: with shared weights the batch joins N (:func:`fold_batch`); with
    weights per sample (per-sample gradients), one ``Conv2dPerSample`` (``per_sample_op``,
    ``batching.PER_SAMPLE_CONV``), or each sample's windows (``unfold``) times its own
    weight matrix, one batched matrix product."""
    out = fold_batch(op, inputs, levels)
    if out is not NotImplemented:
        return out
    if isinstance(op, ops.ConvTranspose2d):
        return _conv_transpose_per_sample(op, inputs, levels)
    if not isinstance(op, ops.Conv2d):
        return out
    if isinstance(op, Conv2dRelu):  # the fused ops, as the ops they fuse
        plain_conv = ops.Conv2d(*op.settings())
        out = conv(plain_conv, inputs, levels, per_sample_op)
        if out is NotImplemented:
            return out
        out = dispatch(ops.Relu(), out)
        if isinstance(op, Conv2dReluMaxPool):
            out = dispatch(ops.MaxPool2d(op.pool, op.pool, (0, 0)), out)
        return out
    x, weight, *rest = inputs
    bias = rest[0] if rest else None
    if _logical_ndim(x) != 4 or _logical_ndim(weight) != 4:
        return NotImplemented
    if per_sample_op:
        return _conv_per_sample(op, x, weight, bias, levels)
    (n, c, h, w), (o, cw, kh, kw) = x.shape, weight.shape
    if cw != c or op.groups != 1:
        return NotImplemented  # the op's own error from one sample, or groups: a loop
    sizes = _sizes(levels)
    count = math.prod(sizes)
    out_h, out_w = check_conv(
        op.name, (n, c, h, w), (o, cw, kh, kw), None if bias is None else tuple(bias.shape),
        op.stride, op.padding, op.dilation, 1,
    )  # fmt: skip
    window = {"kernel_size": (kh, kw), "dilation": op.dilation, "padding": op.padding}
    window["stride"] = op.stride
    images = _run(ops.Reshape((count * n, c, h, w)), lift(x, levels, expand=True))
    columns = _run(ops.Unfold(**window), images)  # (count·n, c·kh·kw, L)
    length, depth = out_h * out_w, c * kh * kw
    columns = _run(ops.Reshape((count, n, depth, length)), columns)
    if n > 1:  # each sample's windows side by side: (count, c·kh·kw, n·L)
        columns = _run(ops.Transpose((0, 2, 1, 3)), columns)
    columns = _run(ops.Reshape((count, depth, n * length)), columns)
    matrices = _run(ops.Reshape((count, o, depth)), lift(weight, levels, expand=True))
    product = _run(ops.MatMul(), matrices, columns)  # (count, o, n·L)
    if bias is not None:
        shifts = _run(ops.Reshape((count, o, 1)), lift(bias, levels, expand=True))
        product = _run(ops.Add(), product, shifts)
    product = _run(ops.Reshape((count, o, n, out_h, out_w)), product)
    if n > 1:
        product = _run(ops.Transpose((0, 2, 1, 3, 4)), product)
    return batched(_run(ops.Reshape((*sizes, n, o, out_h, out_w)), product), levels)


def _conv_per_sample(op: ops.Op, x: Any, weight: Any, bias: Any, levels: tuple[int, ...]) -> Any:
    """Every operand as (B, ...) over the flattened levels, one ``Conv2dPerSample``."""
    c = x.shape[1]
    if c != weight.shape[1] * op.groups or (bias is not None and _logical_ndim(bias) != 1):
        return NotImplemented  # the op's own error, from one sample
    sizes = _sizes(levels)
    count = math.prod(sizes)
    flat = [
        _run(ops.Reshape((count, *v.shape)), lift(v, levels, expand=True))
        for v in (x, weight, bias)
        if v is not None
    ]  # (a plain tensor each, as the op's recorded VJP reads their shapes)
    new = Conv2dPerSample(*op.settings())
    out = _run(new, *flat)
    return batched(_reshaped(out, (*sizes, *out._data.shape[1:])), levels)


def _reshaped(t: Tensor, shape: tuple[int, ...]) -> Tensor:
    """A physical op's plain output reshaped (recorded), or itself when it has the shape
    already (one level)."""
    return t if t._data.shape == shape else _run(ops.Reshape(shape), t)


def _conv_transpose_per_sample(op: ops.Op, inputs: list, levels: tuple[int, ...]) -> Any:
    """A transposed convolution with per-sample weights as one grouped transposed
    convolution (PyTorch's way): the samples' channels side by side, each sample's groups
    its own, then the output's channels apart again."""
    x, weight, *rest = inputs
    bias = rest[0] if rest else None
    if _logical_ndim(x) != 4 or _logical_ndim(weight) != 4 or x.shape[1] != weight.shape[0]:
        return NotImplemented  # the op's own error, from one sample
    if bias is not None and _logical_ndim(bias) != 1:
        return NotImplemented
    sizes = _sizes(levels)
    count = math.prod(sizes)
    (n, c, h, w), (_, og, kh, kw) = x.shape, weight.shape
    images = _run(ops.Reshape((count, n, c, h, w)), lift(x, levels, expand=True))
    images = _run(ops.Transpose((1, 0, 2, 3, 4)), images)
    images = _run(ops.Reshape((n, count * c, h, w)), images)
    weights = _run(ops.Reshape((count * c, og, kh, kw)), lift(weight, levels, expand=True))
    flat = [images, weights]
    if bias is not None:
        flat.append(_run(ops.Reshape((-1,)), lift(bias, levels, expand=True)))
    grouped = _fresh(op, groups=op.groups * count)
    out = _run(grouped, *flat)  # (N, count·O, OH, OW)
    o, (oh, ow) = og * op.groups, out._data.shape[2:]
    out = _run(ops.Reshape((n, count, o, oh, ow)), out)
    out = _run(ops.Transpose((1, 0, 2, 3, 4)), out)
    return batched(_run(ops.Reshape((*sizes, n, o, oh, ow)), out), levels)


def per_sample_conv(op: ops.Op, inputs: list, levels: tuple[int, ...]) -> Tensor:
    """``Conv2dPerSample`` itself under a further vmap (a vmap of per-sample gradients):
    the levels join its B axis."""
    ranks = (5, 5, 2)
    if any(_logical_ndim(v) != r for v, r in zip(inputs, ranks)):
        return NotImplemented  # the op's own error, from one sample
    sizes = _sizes(levels)
    count = math.prod(sizes) * inputs[0].shape[0]
    flat = [_run(ops.Reshape((count, *v.shape[1:])), lift(v, levels, expand=True)) for v in inputs]
    out = _run(op, *flat)
    return batched(_reshaped(out, (*sizes, inputs[0].shape[0], *out._data.shape[1:])), levels)
