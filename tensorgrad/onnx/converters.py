"""Each tensorgrad op as ONNX nodes: one small function per op, looked up by the op's exact
type (a subclass may compute something else, so it needs its own entry).

A converter takes a :class:`~tensorgrad.onnx.graph.NodeInfo` (the op with its settings, the
raw input and output arrays, the inputs' value names) and returns the name of the value that
holds the op's output. Where ONNX has the same operator the mapping is one node; otherwise
the converter composes exactly what the op's ``forward`` computes (GELU from Erf or Tanh,
normalisation from ReduceMean). Settings with no faithful ONNX form are refused by name.

Fused ops are taken apart again: ``linear_chain`` (runs of Linear and ReLU layers in
``Sequential``) becomes Gemm and Relu nodes, ``conv2d_relu`` and ``conv2d_relu_max_pool2d``
become Conv, Relu and MaxPool.

Shapes that follow a dynamic axis are computed in the graph: each converter also sees its
node's twin from the export's second run, on other sizes (``info.other_arrays``,
``info.other_output``, ``info.other_op``), and ``info.sizes`` gives the graph input's size that
an axis follows; a setting that differs in that run and that the converter does not make
follow a size (``info.explained``) is refused (:mod:`tensorgrad.onnx.second_run`).

Whole modules (``nn.Embedding``, ``nn.LSTM``/``GRU``/``RNN``) are converted in
:mod:`tensorgrad.onnx.modules`. Not mapped (refused by name): losses, ``prod``/``cumprod``,
``unfold``/``fold``, the inverse trigonometric and special functions, scatters, and indexing
with integer arrays or masks (the index is held by the op, not recorded as a graph value, so
it would be frozen into the file).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from tensorgrad import ops
from tensorgrad.onnx.graph import NodeInfo, elem_type
from tensorgrad.ops.fused_conv import Conv2dRelu, Conv2dReluMaxPool

Converter = Callable[[NodeInfo], str]
CONVERTERS: dict[type, Converter] = {}


def converts(*op_types: type) -> Callable[[Converter], Converter]:
    def register(function: Converter) -> Converter:
        for op_type in op_types:
            CONVERTERS[op_type] = function
        return function

    return register


def _same(onnx_type: str) -> Converter:
    """A converter to the one ONNX operator that computes the same, on all the inputs."""

    def convert(info: NodeInfo) -> str:
        return info.add(onnx_type, [info.name(i) for i in range(len(info.arrays))])

    return convert


for _op, _onnx in {
    ops.Add: "Add",
    ops.Sub: "Sub",
    ops.Mul: "Mul",
    ops.Div: "Div",
    ops.Pow: "Pow",
    ops.Maximum: "Max",
    ops.Minimum: "Min",
    ops.Neg: "Neg",
    ops.Exp: "Exp",
    ops.Log: "Log",
    ops.Sqrt: "Sqrt",
    ops.Abs: "Abs",
    ops.Sin: "Sin",
    ops.Cos: "Cos",
    ops.Tanh: "Tanh",
    ops.Erf: "Erf",
    ops.Sigmoid: "Sigmoid",
    ops.Relu: "Relu",
    ops.MatMul: "MatMul",
    ops.Clone: "Identity",
}.items():
    CONVERTERS[_op] = _same(_onnx)


# ----------------------------------------------------------------------------- pointwise
@converts(ops.Log1p)
def _log1p(info: NodeInfo) -> str:
    return info.add("Log", [info.add("Add", [info.name(0), info.constant(1.0)])])


@converts(ops.Expm1)
def _expm1(info: NodeInfo) -> str:
    return info.add("Sub", [info.add("Exp", [info.name(0)]), info.constant(1.0)])


@converts(ops.Clip)
def _clip(info: NodeInfo) -> str:
    """``minimum(maximum(x, low), high)``, as forward computes it (bounds may be tensors)."""
    out = info.name(0)
    if info.arrays[1] is not None:
        out = info.add("Max", [out, info.name(1)])
    if len(info.arrays) > 2 and info.arrays[2] is not None:
        out = info.add("Min", [out, info.name(2)])
    return out


@converts(ops.Where)
def _where(info: NodeInfo) -> str:
    cond = info.name(0)
    if np.asarray(info.arrays[0]).dtype != np.bool_:
        cond = info.add("Cast", [cond], to=elem_type(info.graph.onnx, np.bool_))
    return info.add("Where", [cond, info.name(1), info.name(2)])


@converts(ops.Cast)
def _cast(info: NodeInfo) -> str:
    return info.add("Cast", [info.name(0)], to=elem_type(info.graph.onnx, info.op.dtype))


@converts(ops.LeakyRelu)
def _leaky_relu(info: NodeInfo) -> str:
    return info.add("LeakyRelu", [info.name(0)], alpha=float(info.op.negative_slope))


@converts(ops.Elu)
def _elu(info: NodeInfo) -> str:
    return info.add("Elu", [info.name(0)], alpha=float(info.op.alpha))


@converts(ops.Softplus)
def _softplus(info: NodeInfo) -> str:
    """``x`` where ``βx > threshold``, else ``softplus(βx) / β`` (PyTorch's switch)."""
    x, beta = info.name(0), info.op.beta
    z = x if beta == 1 else info.add("Mul", [x, info.constant(beta)])
    soft = info.add("Softplus", [z])
    if beta != 1:
        soft = info.add("Div", [soft, info.constant(beta)])
    linear = info.add("Greater", [z, info.constant(info.op.threshold)])
    return info.add("Where", [linear, x, soft])


@converts(ops.Silu)
def _silu(info: NodeInfo) -> str:
    x = info.name(0)
    return info.add("Mul", [x, info.add("Sigmoid", [x])])


@converts(ops.Gelu)
def _gelu(info: NodeInfo) -> str:
    """``0.5 x (1 + erf(x / √2))``, or with ``tanh(√(2/π) (x + 0.044715 x³))``: the forward's
    own formula (ONNX's Gelu operator needs opset 20)."""
    x = info.name(0)
    if info.op.approximate == "tanh":
        cube = info.add("Mul", [info.add("Mul", [x, x]), x])
        inner = info.add("Add", [x, info.add("Mul", [cube, info.constant(0.044715)])])
        scaled = info.add("Mul", [inner, info.constant(math.sqrt(2 / math.pi))])
        curve = info.add("Tanh", [scaled])
    else:
        curve = info.add("Erf", [info.add("Mul", [x, info.constant(1 / math.sqrt(2))])])
    half = info.add("Mul", [x, info.constant(0.5)])
    return info.add("Mul", [half, info.add("Add", [curve, info.constant(1.0)])])


@converts(ops.Softmax)
def _softmax(info: NodeInfo) -> str:
    return info.add("Softmax", [info.name(0)], axis=int(info.op.axis))


@converts(ops.LogSoftmax)
def _log_softmax(info: NodeInfo) -> str:
    return info.add("LogSoftmax", [info.name(0)], axis=int(info.op.axis))


# ----------------------------------------------------------------------------- linear layers
def _linear(info: NodeInfo, x: str, x_ndim: int, weight: str, bias: str | None) -> str:
    """``x @ weight.T + bias``: Gemm for a matrix, MatMul (and Add) otherwise."""
    if x_ndim == 2:
        return info.add("Gemm", [x, weight] + ([bias] if bias else []), transB=1)
    out = info.add("MatMul", [x, info.add("Transpose", [weight], perm=[1, 0])])
    return info.add("Add", [out, bias]) if bias else out


@converts(ops.Linear)
def _linear_op(info: NodeInfo) -> str:
    bias = info.name(2) if len(info.arrays) > 2 and info.arrays[2] is not None else None
    return _linear(info, info.name(0), np.ndim(info.arrays[0]), info.name(1), bias)


@converts(ops.LinearChain)
def _linear_chain(info: NodeInfo) -> str:
    x, ndim = info.name(0), np.ndim(info.arrays[0])
    for relu, w, b in info.op.layout:
        if relu:
            x = info.add("Relu", [x])
        else:
            x = _linear(info, x, ndim, info.name(w + 1), None if b is None else info.name(b + 1))
    return x


# ----------------------------------------------------------------------------- convolution
@converts(ops.Conv2d, Conv2dRelu, Conv2dReluMaxPool)
def _conv2d(info: NodeInfo) -> str:
    op = info.op
    weight_shape = np.shape(info.arrays[1])
    (top, bottom), (left, right) = op.padding
    inputs = [info.name(0), info.name(1)]
    if len(info.arrays) > 2 and info.arrays[2] is not None:
        inputs.append(info.name(2))
    out = info.add(
        "Conv",
        inputs,
        kernel_shape=list(weight_shape[2:]),
        strides=list(op.stride),
        dilations=list(op.dilation),
        pads=[top, left, bottom, right],
        group=op.groups,
    )
    if isinstance(op, Conv2dRelu):  # the fused ops: a ReLU, and maybe a tiling max-pool
        out = info.add("Relu", [out])
        if op.pool:
            out = info.add("MaxPool", [out], kernel_shape=list(op.pool), strides=list(op.pool))
    return out


def _pool_attributes(op: Any) -> dict[str, Any]:
    ph, pw = op.padding
    return {
        "kernel_shape": list(op.kernel),
        "strides": list(op.stride),
        "pads": [ph, pw, ph, pw],
        "ceil_mode": int(op.ceil_mode),
    }


@converts(ops.MaxPool2d)
def _max_pool(info: NodeInfo) -> str:
    if info.op.return_indices:
        raise info.refuse("with return_indices=True has no ONNX mapping here")
    attributes = _pool_attributes(info.op)
    if info.op.dilation != (1, 1):
        attributes["dilations"] = list(info.op.dilation)
    return info.add("MaxPool", [info.name(0)], **attributes)


@converts(ops.AvgPool2d)
def _avg_pool(info: NodeInfo) -> str:
    if info.op.divisor_override is not None:
        raise info.refuse("with divisor_override has no ONNX mapping")
    attributes = _pool_attributes(info.op)
    attributes["count_include_pad"] = int(info.op.count_include_pad)
    return info.add("AveragePool", [info.name(0)], **attributes)


@converts(ops.AdaptiveAvgPool2d)
def _adaptive_avg_pool(info: NodeInfo) -> str:
    (h, w), (oh, ow) = np.shape(info.arrays[0])[-2:], np.shape(info.output)[-2:]
    if (oh, ow) == (1, 1):
        return info.add("GlobalAveragePool", [info.name(0)])
    if info.shapes(0)[0][-2:] != info.shapes(0)[1][-2:]:
        raise info.refuse("to a fixed size from a dynamic one has no ONNX mapping here")
    if h % oh or w % ow:
        raise info.refuse(
            f"from {h}x{w} to {oh}x{ow} (sizes that do not divide) has no ONNX mapping"
        )
    kernel = [h // oh, w // ow]
    return info.add("AveragePool", [info.name(0)], kernel_shape=kernel, strides=kernel)


@converts(ops.ConstantPad)
def _pad(info: NodeInfo) -> str:
    ndim = np.ndim(info.arrays[0])
    begins, ends = [0] * ndim, [0] * ndim
    for k in range(len(info.op.pad) // 2):
        begins[ndim - 1 - k], ends[ndim - 1 - k] = info.op.pad[2 * k], info.op.pad[2 * k + 1]
    value = info.constant(np.asarray(info.op.value, info.output.dtype))
    return info.add("Pad", [info.name(0), info.ints(begins + ends), value], mode="constant")


# ----------------------------------------------------------------------------- shapes
def _dims(info: NodeInfo, dims: list[Any], source: str | None = None) -> str:
    """An int64 shape value from per-axis parts: numbers, ``("axis", i)`` (the size of the
    source value's axis i, from its Shape) and value names (dynamic sizes)."""
    if all(isinstance(d, int) for d in dims):
        return info.ints(dims)
    shape = info.add("Shape", [source]) if any(isinstance(d, tuple) for d in dims) else ""
    parts = []
    for d in dims:
        if isinstance(d, int):
            parts.append(info.ints([d]))
        elif isinstance(d, tuple):
            parts.append(info.add("Gather", [shape, info.ints([d[1]])], axis=0))
        else:
            parts.append(d)
    return info.add("Concat", parts, axis=0)


@converts(ops.Reshape)
def _reshape(info: NodeInfo) -> str:
    """The recorded shape where the export's two runs agree on it; an axis that follows a
    dynamic size is copied from the input's axis of the same sizes in both runs (0, ONNX's
    "copy", at the same position), else taken from the graph input's axis of those sizes,
    and one axis left over is left to ONNX (-1): so (B, T, C) → (B, T, h, C/h) and back,
    and the flattening (B·T, C), follow a dynamic batch and sequence length."""
    info.explained.add("shape")
    (target, other_target), (source, other_source) = info.shapes(), info.shapes(0)
    dims: list[Any] = []
    left: list[int] = []
    for j, (a, b) in enumerate(zip(target, other_target)):
        if a == b:
            dims.append(int(a))
            continue
        copies = [i for i, (s, t) in enumerate(zip(source, other_source)) if (s, t) == (a, b)]
        if j in copies:
            dims.append(0)
        elif copies:
            dims.append(("axis", copies[0]))
        elif info.sizes is not None and info.sizes.size(a, b) is not None:
            dims.append(info.sizes.size(a, b))
        else:
            dims.append(-1)
            left.append(j)
    if len(left) > 1:
        raise info.refuse(
            f"from {tuple(source)} to {tuple(target)} (and {tuple(other_source)} to "
            f"{tuple(other_target)} with other sizes): axes {left} follow the dynamic sizes in "
            "a way the graph cannot compute"
        )
    return info.add("Reshape", [info.name(0), _dims(info, dims, info.name(0))])


@converts(ops.Transpose)
def _transpose(info: NodeInfo) -> str:
    ndim = np.ndim(info.arrays[0])
    axes = info.op.axes
    perm = list(range(ndim))[::-1] if axes is None else [a % ndim for a in axes]
    return info.add("Transpose", [info.name(0)], perm=perm)


@converts(ops.BroadcastTo)
def _broadcast_to(info: NodeInfo) -> str:
    """Expand: axes the input already has at full size (in both of the export's runs) are
    given as 1 (ONNX's Expand keeps the input's size there), so that a dynamic batch goes
    through; an axis broadcast to a dynamic size takes it from the graph input."""
    info.explained.add("shape")
    (target, other_target), (source, other_source) = info.shapes(), info.shapes(0)
    pad = len(target) - len(source)
    source, other_source = (1,) * pad + tuple(source), (1,) * pad + tuple(other_source)
    dims: list[Any] = []
    for s, os_, t, ot in zip(source, other_source, target, other_target):
        if s == t and os_ == ot:
            dims.append(1)
        elif t == ot:
            dims.append(int(t))
        elif info.sizes is not None and info.sizes.size(t, ot) is not None:
            dims.append(info.sizes.size(t, ot))
        else:
            raise info.refuse(
                f"to {tuple(target)} (and {tuple(other_target)} with other sizes) broadcasts to "
                "a size that follows the dynamic axes in a way the graph cannot compute"
            )
    return info.add("Expand", [info.name(0), _dims(info, dims)])


@converts(ops.Concatenate)
def _concatenate(info: NodeInfo) -> str:
    return info.add("Concat", [info.name(i) for i in range(len(info.arrays))], axis=info.op.axis)


@converts(ops.Stack)
def _stack(info: NodeInfo) -> str:
    axis = info.ints([info.op.axis])
    parts = [info.add("Unsqueeze", [info.name(i), axis]) for i in range(len(info.arrays))]
    return info.add("Concat", parts, axis=info.op.axis)


_INT64_MAX, _INT64_MIN = np.iinfo(np.int64).max, np.iinfo(np.int64).min


def _index_parts(index: Any, ndim: int) -> tuple[list, list, list]:
    """A basic index as ``(slices, picks, new_axes)``: per sliced input axis ``(axis, start,
    end, step)`` with Python's bounds as ONNX's Slice reads them, per integer ``(axis,
    value)``, and the output's positions of the new (None) axes."""
    parts = list(index) if isinstance(index, tuple) else [index]
    real = sum(1 for p in parts if p is not None and p is not Ellipsis)
    if Ellipsis in parts:
        at = parts.index(Ellipsis)
        parts[at : at + 1] = [slice(None)] * (ndim - real)
    else:
        parts += [slice(None)] * (ndim - real)
    slices, picks, new_axes = [], [], []
    axis = position = 0  # the input's axis, the output's
    for part in parts:
        if part is None:
            new_axes.append(position)
            position += 1
        elif isinstance(part, slice):
            if part != slice(None):
                step = 1 if part.step is None else int(part.step)
                start = (0 if step > 0 else -1) if part.start is None else int(part.start)
                end = _INT64_MAX if step > 0 else _INT64_MIN
                slices.append((axis, start, end if part.stop is None else int(part.stop), step))
            axis, position = axis + 1, position + 1
        else:
            picks.append((axis, int(part)))
            axis += 1
    return slices, picks, new_axes


@converts(ops.GetItem)
def _getitem(info: NodeInfo) -> str:
    """Basic indexing (ints, slices of any step, None, Ellipsis) as Slice, Gather and
    Unsqueeze, with Python's own bounds (negative ones and None kept as such, which ONNX's
    Slice reads as Python does), so that a dynamic batch goes through. A slice bound that
    follows a dynamic size (``mask[:T, :T]`` with T the sequence length) is taken from the
    graph input's shape. Integer-array and mask indices are refused: their index is not a
    graph value (``nn.Embedding``'s lookups are exported as a whole, with their indices)."""
    index = info.op.index
    if not ops.is_basic_index(index):
        raise info.refuse("with an array or mask index has no ONNX mapping yet")
    ndim = np.ndim(info.arrays[0])
    slices, picks, new_axes = _index_parts(index, ndim)
    bounds: list[list[Any]] = [[s[1] for s in slices], [s[2] for s in slices]]
    if "index" in info.changed:
        other = _index_parts(info.other_op.index, ndim)
        same_form = [(s[0], s[3]) for s in slices] == [(s[0], s[3]) for s in other[0]]
        if not same_form or picks != other[1] or new_axes != other[2]:
            raise info.refuse("indexes otherwise in the export's second run (other sizes)")
        for k, (mine, theirs) in enumerate(zip(slices, other[0])):
            for side in (0, 1):
                a, b = mine[1 + side], theirs[1 + side]
                if a != b:
                    size = None if info.sizes is None else info.sizes.size(a, b)
                    if size is None:
                        return _unexplained(info)
                    bounds[side][k] = size
        info.explained.add("index")
    out = info.name(0)
    if slices:
        starts, ends = (_dims(info, list(side)) for side in bounds)
        axes, steps = info.ints([s[0] for s in slices]), info.ints([s[3] for s in slices])
        out = info.add("Slice", [out, starts, ends, axes, steps])
    for axis, pick in reversed(picks):  # the last axis first: the others keep their place
        out = info.add("Gather", [out, info.constant(np.asarray(pick, np.int64))], axis=axis)
    if new_axes:
        out = info.add("Unsqueeze", [out, info.ints(new_axes)])
    return out


def _unexplained(info: NodeInfo) -> str:
    """A placeholder for a converter that leaves a changed setting unexplained: the export
    refuses the node right after, naming the setting."""
    return info.add("Identity", [info.name(0)])


@converts(ops.Gather)
def _gather(info: NodeInfo) -> str:
    index = info.constant(np.asarray(info.op.index, np.int64))
    return info.add("GatherElements", [info.name(0), index], axis=int(info.op.axis))


# ----------------------------------------------------------------------------- reductions
def _reduce(info: NodeInfo, onnx_type: str, x: str, axes: tuple[int, ...], keepdims: bool):
    """A Reduce* node over ``axes`` (as an input from the opset that moved it there)."""
    if not axes:
        return info.add("Identity", [x])
    moved = 13 if onnx_type == "ReduceSum" else 18
    if info.opset >= moved:
        return info.add(onnx_type, [x, info.ints(list(axes))], keepdims=int(keepdims))
    return info.add(onnx_type, [x], axes=list(axes), keepdims=int(keepdims))


def _reduction(onnx_type: str) -> Converter:
    def convert(info: NodeInfo) -> str:
        return _reduce(info, onnx_type, info.name(0), info.op.axes, info.op.keepdims)

    return convert


for _op, _onnx in {
    ops.Sum: "ReduceSum",
    ops.Mean: "ReduceMean",
    ops.Max: "ReduceMax",
    ops.Min: "ReduceMin",
    ops.LogSumExp: "ReduceLogSumExp",
}.items():
    CONVERTERS[_op] = _reduction(_onnx)


@converts(ops.Var, ops.Std)
def _variance(info: NodeInfo) -> str:
    """``sum((x − mean)²) / (n − correction)``, and its square root for ``std``."""
    x, axes, op = info.name(0), info.op.axes, info.op
    count = int(np.prod([np.shape(info.arrays[0])[a] for a in axes], dtype=np.int64))
    source, other_source = info.shapes(0)
    if any(source[a] != other_source[a] for a in axes):
        raise info.refuse("over an axis of dynamic size cannot follow it (its count is a number)")
    centered = info.add("Sub", [x, _reduce(info, "ReduceMean", x, axes, True)])
    total = _reduce(info, "ReduceSum", info.add("Mul", [centered, centered]), axes, op.keepdims)
    out = info.add("Div", [total, info.constant(max(count - op.correction, 0))])
    return info.add("Sqrt", [out]) if isinstance(op, ops.Std) else out


@converts(ops.Normalize)
def _normalize(info: NodeInfo) -> str:
    """``(x − mean) / sqrt(var + eps)`` over the op's axes, in the forward's own steps (ONNX
    Runtime fuses the pattern into its LayerNormalization kernel when the axes trail)."""
    x, axes = info.name(0), info.op.axes
    centered = info.add("Sub", [x, _reduce(info, "ReduceMean", x, axes, True)])
    var = _reduce(info, "ReduceMean", info.add("Mul", [centered, centered]), axes, True)
    std = info.add("Sqrt", [info.add("Add", [var, info.constant(info.op.eps)])])
    return info.add("Mul", [centered, info.add("Reciprocal", [std])])


@converts(ops.Cumsum)
def _cumsum(info: NodeInfo) -> str:
    axis = info.constant(np.asarray(info.op.axis % np.ndim(info.arrays[0]), np.int64))
    return info.add("CumSum", [info.name(0), axis])


@converts(ops.ConvTranspose2d)
def _conv_transpose2d(info: NodeInfo) -> str:
    """ONNX's ConvTranspose, whose output size is PyTorch's: ``(H − 1)·s − 2p + d·(k − 1) +
    output_padding + 1``; the weight is laid out as PyTorch's (in, out/groups, kH, kW)."""
    op = info.op
    (ph, pw), (oh, ow) = op.padding, op.output_padding
    inputs = [info.name(0), info.name(1)]
    if len(info.arrays) > 2 and info.arrays[2] is not None:
        inputs.append(info.name(2))
    return info.add(
        "ConvTranspose",
        inputs,
        kernel_shape=list(np.shape(info.arrays[1])[2:]),
        strides=list(op.stride),
        dilations=list(op.dilation),
        pads=[ph, pw, ph, pw],
        output_padding=[oh, ow],
        group=op.groups,
    )


# ----------------------------------------------------------------------------- sequences
@converts(ops.ScaledDotProductAttention)
def _attention(info: NodeInfo) -> str:
    """``Softmax(q kᵀ · scale + mask) v`` with the forward's own steps. The causal mask is
    built from the scores' shape (``Range`` of the query and key positions), so that the
    sequence length may vary; a dropout mask (``dropout_p > 0``) would be a constant and is
    refused."""
    if len(info.arrays) > 4 and info.arrays[4] is not None:
        raise info.refuse("with dropout_p > 0 (a random mask) has no ONNX mapping; use 0 in eval")
    q, k, v = info.name(0), info.name(1), info.name(2)
    rank = np.ndim(info.arrays[1])
    swapped = [*range(rank - 2), rank - 1, rank - 2]
    scores = info.add("MatMul", [q, info.add("Transpose", [k], perm=swapped)])
    scores = info.add("Mul", [scores, info.constant(info.op.scale)])
    if info.op.causal:
        shape = info.add("Shape", [scores])
        int64 = np.int64

        def size(axis: int) -> str:
            return info.add("Gather", [shape, info.constant(np.asarray(axis, int64))], axis=0)

        zero, one = info.constant(np.asarray(0, int64)), info.constant(np.asarray(1, int64))
        rows = info.add("Range", [zero, size(-2), one])
        cols = info.add("Range", [zero, size(-1), one])
        above = info.add("Greater", [cols, info.add("Unsqueeze", [rows, info.ints([1])])])
        scores = info.add("Where", [above, info.constant(-np.inf), scores])
    if len(info.arrays) > 3 and info.arrays[3] is not None:
        scores = info.add("Add", [scores, info.name(3)])
    return info.add("MatMul", [info.add("Softmax", [scores], axis=-1), v])


def _split_last(info: NodeInfo, value: str, parts: int, size: int) -> list[str]:
    """``value``'s last axis cut into ``parts`` blocks of ``size``."""
    last = info.ints([-1])
    return [
        info.add("Slice", [value, info.ints([k * size]), info.ints([(k + 1) * size]), last])
        for k in range(parts)
    ]


@converts(ops.LSTMCell)
def _lstm_cell(info: NodeInfo) -> str:
    """The fused gates as the forward computes them, ``stack([h', c'])`` on a new first axis
    (a one-step ``nn.LSTMCell``; whole ``nn.LSTM`` layers become ONNX's LSTM instead)."""
    hidden = np.shape(info.arrays[2])[-1]
    a = info.add("Add", [info.name(0), info.name(1)])
    i, f, g, o = _split_last(info, a, 4, hidden)
    i, f, o = (info.add("Sigmoid", [z]) for z in (i, f, o))
    g = info.add("Tanh", [g])
    c = info.add("Add", [info.add("Mul", [f, info.name(2)]), info.add("Mul", [i, g])])
    h = info.add("Mul", [o, info.add("Tanh", [c])])
    first = info.ints([0])
    return info.add("Concat", [info.add("Unsqueeze", [h, first]),
                               info.add("Unsqueeze", [c, first])], axis=0)  # fmt: skip


@converts(ops.GRUCell)
def _gru_cell(info: NodeInfo) -> str:
    """``n + z (h − n)`` with ``r, z = σ(x_rz + h_rz)`` and ``n = tanh(x_n + r h_n)``."""
    hidden = np.shape(info.arrays[2])[-1]
    x_r, x_z, x_n = _split_last(info, info.name(0), 3, hidden)
    h_r, h_z, h_n = _split_last(info, info.name(1), 3, hidden)
    r = info.add("Sigmoid", [info.add("Add", [x_r, h_r])])
    z = info.add("Sigmoid", [info.add("Add", [x_z, h_z])])
    n = info.add("Tanh", [info.add("Add", [x_n, info.add("Mul", [r, h_n])])])
    return info.add("Add", [n, info.add("Mul", [z, info.add("Sub", [info.name(2), n])])])
