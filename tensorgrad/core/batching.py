"""vmap's batching: a function written for one sample runs once, on the whole batch.

Inside ``tg.func.vmap`` the function sees *batched tensors*: a :class:`BatchedTensor` holds
the whole batch in one array, its batch axes first (one per open vmap level it is mapped
over, outermost first), and shows the function only the rest, its *logical* shape: a batch
of 64 images of (784,) is a tensor of shape (784,) to the function and an array of
(64, 784) to NumPy.

Every op the function calls reaches :func:`apply` (the engine hands over any op with a
batched operand). The op was made for the logical shapes — ``Sum(axis=0)`` of a (784,)
tensor — and its *batching rule* turns it into the op to run on the arrays as they are:
``Sum(axis=1)`` of the (64, 784) array. Most rules are free on NumPy's broadcasting (an
elementwise op runs unchanged once the operands' ranks line up); reductions and softmax
shift their axes past the batch axes; reshapes and transposes keep the batch axes in front;
a matmul of a batched vector becomes a stack of row vectors. An op declares its rule by name
(``Op.batching``, beside its forward, VJP and JVP); the rules are here. An op without one
runs once per sample in a loop (:func:`_loop`), still recorded, so gradients and errors stay
right, only slower: docs/forward-mode.md lists those ops.

The physical op is recorded by the engine like any other, on the batch arrays, so reverse
mode needs nothing new: ``vmap(grad(loss))`` is one backward sweep over the batch. For
per-sample gradients, ``grad`` inside ``vmap`` expands the inputs it differentiates to the
open levels first (:func:`expand_to_levels`, a broadcast view, no copy), so that each
sample's gradient is kept apart instead of summed; ``ops.MatMul`` multiplies by one slice of
such a broadcast operand instead of one product per sample.

The batched tensors, the levels and the layouts are in ``core.batched_tensors``; this module
re-exports them, so ``batching.like`` and the rest are where they have always been.
"""

from __future__ import annotations

import copy
import functools
import math
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tensorgrad import ops
from tensorgrad.core import batching_conv, batching_indices, batching_methods, engine
from tensorgrad.core.batched_tensors import (  # noqa: F401 - the room's names, from one place
    BatchedTensor,
    _fresh,
    _logical_ndim,
    _param_levels,
    _run,
    _sizes,
    _union,
    batched,
    close_level,
    dispatch,
    expand_to_levels,
    levels_of,
    lift,
    like,
    map_input,
    map_output,
    open_level,
    physical,
    physical_cotangent,
    plain,
    run_batched,
    state,
)
from tensorgrad.core.pytree import tree_flatten, tree_unflatten
from tensorgrad.core.tensor import Tensor
from tensorgrad.ops.base import normalize_axis, reduction_axes

#: warn (once per op) when an op runs once per sample for want of a batching rule, as
#: PyTorch's vmap does; ``tensorgrad.core.batching.FALLBACK_WARNINGS = False`` silences it
FALLBACK_WARNINGS = True


def _warn_fallback(name: str) -> None:
    """Count a per-sample loop of ``name`` and, the first time, say that it is slow."""
    state.looped[name] += 1
    if FALLBACK_WARNINGS and name not in state.warned:
        state.warned.add(name)
        warnings.warn(
            "There is a performance drop because we have not yet implemented the batching "
            f"rule for {name}: vmap runs it once per sample and stacks the results",
            UserWarning,
            stacklevel=_callers_level(),
        )


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _callers_level() -> int:
    """The stack level of the first frame outside tensorgrad: the user's line that reached
    the op, for a warning to name."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


# --------------------------------------------------------------------------- dispatch
def apply(op: ops.Op, inputs: Sequence[Any]) -> Any:
    """Run ``op`` (made for the logical shapes) on batched operands, by its batching rule
    or, without one, once per sample; None when nothing about the call is batched."""
    params = _param_levels(op)
    levels = _union([levels_of(x) for x in inputs] + list(params.values()))
    if not levels:
        return None
    rule = RULES.get(op.batching)
    out = NotImplemented
    if rule is not None and (not params or op.batching in _TAKES_BATCHED_SETTINGS):
        out = rule(op, list(inputs), levels)
    if out is NotImplemented:
        out = _loop(op, list(inputs), levels)
    return out


def apply_inplace(op: ops.Op, target: Tensor, others: Sequence[Any]) -> Tensor | None:
    """An in-place op inside vmap: on a batched ``target``, the physical op in place; on an
    unbatched one with batched operands, PyTorch's refusal. None when nothing is batched."""
    levels_t = levels_of(target)
    levels = _union([levels_t] + [levels_of(x) for x in others])
    if not levels:
        return None
    name = f"{op.name}_"
    if set(levels) - set(levels_t):
        raise RuntimeError(
            f"vmap: {name}(self, *extra_args) is not possible because there exists a Tensor "
            "`other` in extra_args that has more elements than `self`. This happened due to "
            "`other` being vmapped over but `self` not being vmapped over in a vmap. Please "
            "try to use out-of-place operators instead of "
            f"{name}."
        )
    if op.batching == "elementwise":
        rank = max(_logical_ndim(x) for x in (target, *others))
        if rank > _logical_ndim(target):
            return None  # the engine's own check refuses the broadcast, naming the shapes
        lined_up = [lift(x, levels, rank) for x in others]
    elif isinstance(op, ops.SetItem) and batching_indices.prefixable(op.index):
        region = np.ndim(np.broadcast_to(0, target.shape)[op.index])
        op = copy.copy(op)
        op.index = batching_indices.prefixed(op.index, len(levels))
        lined_up = list(others)
        if others and levels_of(others[0]):
            value = others[0]
            extra = value.ndim - region  # leading 1s beyond the region's rank: dropped
            if extra > 0 and all(n == 1 for n in value.shape[:extra]):
                value = dispatch(ops.Reshape(value.shape[extra:]), value)
            lined_up = [lift(value, levels, region)]
    else:
        raise RuntimeError(
            f"vmap: {name} has no batching rule for in-place use on a batched tensor; "
            "write it out of place"
        )
    with physical():
        engine.apply_inplace(op, target, *lined_up)
    return target


# --------------------------------------------------------------------------- the rules
def _elementwise(op: ops.Op, inputs: list, levels: tuple[int, ...]) -> Tensor:
    rank = max(_logical_ndim(x) for x in inputs if x is not None)
    return batched(_run(op, *(lift(x, levels, rank) for x in inputs)), levels)


def _reduction(op: ops.Op, inputs: list, levels: tuple[int, ...]) -> Tensor:
    (x,) = inputs
    k, axes = len(levels), reduction_axes(op.axis, _logical_ndim(x), op.name)
    new = _fresh(op, axis=tuple(a + k for a in axes))
    return batched(_run(new, lift(x, levels)), levels)


def _along_axis(op: ops.Op, inputs: list, levels: tuple[int, ...]) -> Tensor:
    """One axis (a softmax, a cumulative sum); a 0-d sample is taken as one of one."""
    (x,) = inputs
    k, r = len(levels), _logical_ndim(x)
    x = lift(x, levels)
    axis = normalize_axis(op.axis, max(r, 1), op.name)
    if r:
        return batched(_run(_fresh(op, axis=axis + k), x), levels)
    out = _run(_fresh(op, axis=k), _run(ops.Reshape((*_sizes(levels), 1)), x))
    return batched(_run(ops.Reshape(_sizes(levels)), out), levels)


def _normalize(op: ops.Op, inputs: list, levels: tuple[int, ...]) -> Tensor:
    (x,) = inputs
    k, r = len(levels), _logical_ndim(x)
    axes = tuple(a % r + k for a in op.axes) if r else ()
    return batched(_run(_fresh(op, axes=axes), lift(x, levels)), levels)


def _reshape(op: ops.Op, inputs: list, levels: tuple[int, ...]) -> Tensor:
    new = _fresh(op, shape=(*_sizes(levels), *op.shape))
    return batched(_run(new, lift(inputs[0], levels, expand=True)), levels)


def _transpose(op: ops.Op, inputs: list, levels: tuple[int, ...]) -> Tensor:
    (x,) = inputs
    k, r = len(levels), _logical_ndim(x)
    if op.axes is None:
        axes = tuple(range(k + r - 1, k - 1, -1))
    elif len(op.axes) != r:
        return NotImplemented  # the op's own error, from one sample
    else:
        axes = tuple(a % r + k for a in op.axes)
    return batched(_run(_fresh(op, axes=(*range(k), *axes)), lift(x, levels, expand=True)), levels)


def _broadcast_to(op: ops.Op, inputs: list, levels: tuple[int, ...]) -> Tensor:
    x = lift(inputs[0], levels, rank=len(op.shape), expand=True)
    return batched(_run(_fresh(op, shape=(*_sizes(levels), *op.shape)), x), levels)


def _join(op: ops.Op, inputs: list, levels: tuple[int, ...]) -> Tensor:
    """Concatenate or stack: every operand batched, the axis past the batch axes."""
    k, r = len(levels), _logical_ndim(inputs[0])
    if isinstance(op, ops.Concatenate):
        if not r or any(_logical_ndim(x) != r for x in inputs):
            return NotImplemented  # the op's own error, from one sample
        axis = normalize_axis(op.axis, r, op.name)
    else:
        axis = normalize_axis(op.axis, r + 1, op.name)
    return batched(
        _run(_fresh(op, axis=axis + k), *(lift(x, levels, expand=True) for x in inputs)), levels
    )


def _matmul(op: ops.Op, inputs: list, levels: tuple[int, ...]) -> Tensor:
    """A batched vector becomes a matrix (a row on the left, a column on the right) whose
    unit axis goes again after the product; batched operands pad their ranks to the same, so
    their batch axes line up. Unbatched operands stay as they are (NumPy's broadcasting)."""
    x, y = inputs
    rx, ry = _logical_ndim(x), _logical_ndim(y)
    if not rx or not ry:
        return NotImplemented  # the op's own error, from one sample
    k = len(levels)
    row, column = rx == 1 and bool(levels_of(x)), ry == 1 and bool(levels_of(y))
    rank = max(rx + row, ry + column)
    if levels_of(x):
        x = lift(x, levels)
        if row:
            x = _run(ops.Reshape((*x._data.shape[:k], 1, -1)), x)
        x = _pad_rank(x, k, rank)
    if levels_of(y):
        y = lift(y, levels)
        if column:
            y = _run(ops.Reshape((*y._data.shape[:k], -1, 1)), y)
        y = _pad_rank(y, k, rank)
    out = _run(ops.MatMul(), x, y)
    if row or column:
        shape = out._data.shape
        if row and column:
            kept = shape[:-2]
        elif row and ry > 1:
            kept = (*shape[:-2], shape[-1])
        else:  # a column, or a row times a shared vector: the unit axis is the last
            kept = shape[:-1]
        out = _run(ops.Reshape(kept), out)
    return batched(out, levels)


def _pad_rank(x: Tensor, k: int, rank: int) -> Tensor:
    """Insert 1s after the ``k`` batch axes until the logical rank is ``rank``."""
    shape = x._data.shape
    missing = rank - (len(shape) - k)
    if missing <= 0:
        return x
    return _run(ops.Reshape((*shape[:k], *(1,) * missing, *shape[k:])), x)


def _linear(op: ops.Op, inputs: list, levels: tuple[int, ...]) -> Tensor:
    """``x @ weight.T + bias``: as it is for a batched input and shared weights (the batch
    axes are more rows); with batched weights (per-sample gradients), as a matmul."""
    x, weight, *rest = inputs
    bias = rest[0] if rest else None
    if not levels_of(weight) and not levels_of(bias):
        if _logical_ndim(x) == 0:
            return NotImplemented
        return batched(_run(op, lift(x, levels), *inputs[1:]), levels)
    # as weight @ xᵀ: each sample's weight gradient is then an outer product in the weight's
    # own layout (a fresh array, which the sweep hands out without a copy)
    if _logical_ndim(x) == 2 and _logical_ndim(weight) == 2 and x.shape[1] == weight.shape[1]:
        k = len(levels)  # the usual case, as the physical ops the rules below would run
        rows = _run(ops.Transpose((*range(k), k + 1, k)), lift(x, levels, expand=True))
        product = _run(ops.MatMul(), lift(weight, levels, expand=True), rows)
        out = _run(ops.Transpose((*range(k), k + 1, k)), product)
        if bias is not None:
            out = _run(ops.Add(), out, lift(bias, levels, 2, expand=True))
        return batched(out, levels)
    if _logical_ndim(x) == 1:
        out = dispatch(ops.MatMul(), weight, x)
    else:
        flipped = dispatch(ops.Transpose((*range(_logical_ndim(x) - 2), -1, -2)), x)
        product = dispatch(ops.MatMul(), weight, flipped)
        out = dispatch(ops.Transpose((*range(_logical_ndim(x) - 2), -1, -2)), product)
    return out if bias is None else dispatch(ops.Add(), out, bias)


def _linear_chain(op: ops.Op, inputs: list, levels: tuple[int, ...]) -> Tensor:
    """Linear layers and ReLUs as one op: with shared weights, the batch axes are more rows;
    with batched weights, step by step."""
    x, *params = inputs
    if not any(levels_of(p) for p in params) and _logical_ndim(x) in (1, 2):
        rows = _run(ops.Reshape((-1, x.shape[-1])), lift(x, levels, expand=True))
        out = _run(op, rows, *params)
        shape = (*_sizes(levels), *x.shape[:-1], out._data.shape[-1])
        return batched(_run(ops.Reshape(shape), out), levels)
    out = x
    for relu, w, b in op.layout:
        if relu:
            out = dispatch(ops.Relu(), out)
        else:
            out = dispatch(ops.Linear(), out, params[w], *([] if b is None else [params[b]]))
    return out


def _cross_entropy(op: ops.Op, inputs: list, levels: tuple[int, ...]) -> Tensor:
    """Each sample's (N, C) logits against its (N,) targets: one (B·N, C) call without
    reduction, then each sample's reduction over its own N."""
    (x,) = inputs
    if _logical_ndim(x) != 2:
        return NotImplemented
    sizes = _sizes(levels)
    n, c = x.shape
    target = np.asarray(lift(op.target, levels, expand=True)).reshape(-1)
    flat = _run(ops.Reshape((-1, c)), lift(x, levels, expand=True))
    losses = _run(_fresh(op, target=target, reduction="none"), flat)
    losses = _run(ops.Reshape((*sizes, n)), losses)
    k = len(levels)
    if op.reduction == "none":
        return batched(losses, levels)
    total = _run(ops.Sum(axis=k), losses)
    if op.reduction == "mean":
        counted = (target != op.ignore_index).astype(losses.dtype)
        if op.weight is not None:
            counted = counted * op.weight[np.where(counted > 0, target, 0)]
        total = _run(ops.Div(), total, counted.reshape(*sizes, n).sum(axis=k))
    return batched(total, levels)


def _leading(op: ops.Op, inputs: list, levels: tuple[int, ...]) -> Tensor:
    """An op on the last axes, whatever leads them (attention): every operand batched."""
    rank = max(_logical_ndim(x) for x in inputs if isinstance(x, Tensor))
    ranks = {_logical_ndim(x) for x in inputs if isinstance(x, Tensor)}
    if len(ranks) != 1 and not isinstance(op, ops.ScaledDotProductAttention):
        return NotImplemented  # (attention broadcasts its leading axes: a mask of any rank)
    lifted = [
        lift(x, levels, rank, expand=True) if isinstance(x, Tensor) or levels_of(x) else x
        for x in inputs
    ]
    return batched(_run(op, *lifted), levels)


def _stacked_gates(op: ops.Op, inputs: list, levels: tuple[int, ...]) -> Tensor:
    """The LSTM cell: as :func:`_leading`, its output's stacking axis (h', c') then moved
    behind the batch axes."""
    out = _leading(op, inputs, levels)
    if out is NotImplemented:
        return out
    k = len(levels)
    array = out._data
    order = (*range(1, k + 1), 0, *range(k + 1, array.ndim))
    return batched(_run(ops.Transpose(order), plain(out)), levels)


def _recurrent_layer(op: ops.Op, inputs: list, levels: tuple[int, ...]) -> Any:
    """A fused LSTM or GRU layer (x (steps, N, input), the states (N, hidden)) with shared
    weights: the batch joins N, one layer op for every sample's sequences; the output
    (steps + 2 or + 1, N, hidden) is taken apart again. Weights per sample: a loop (under
    vmap, ``nn.LSTM``/``nn.GRU`` then run per-step cells, which batch)."""
    states = 2 if isinstance(op, ops.LSTMLayer) else 1
    x, hidden_states, weights = inputs[0], inputs[1 : 1 + states], inputs[1 + states :]
    if any(levels_of(w) for w in weights) or _logical_ndim(x) != 3:
        return NotImplemented
    if any(_logical_ndim(s) != 2 for s in hidden_states):
        return NotImplemented  # the op's own error, from one sample
    k, sizes = len(levels), _sizes(levels)
    (steps, n, size), count = x.shape, math.prod(sizes)
    time_major = _run(ops.Transpose((k, *range(k), k + 1, k + 2)), lift(x, levels, expand=True))
    flat = [_run(ops.Reshape((steps, count * n, size)), time_major)]
    for s in hidden_states:
        flat.append(_run(ops.Reshape((count * n, s.shape[-1])), lift(s, levels, expand=True)))
    out = _run(op, *flat, *weights)  # (steps + states, count·N, hidden)
    rows, hidden = out._data.shape[0], out._data.shape[-1]
    out = _run(ops.Reshape((rows, *sizes, n, hidden)), out)
    out = _run(ops.Transpose((*range(1, k + 1), 0, k + 1, k + 2)), out)
    return batched(out, levels)


def _trailing(op: ops.Op, inputs: list, levels: tuple[int, ...]) -> Tensor:
    """An op on an input's last axes (a fused layer norm's ``dims``, a padding's pairs) whose
    other operands are shared (the layer norm's weight and bias): the batch axes lead."""
    x, *others = inputs
    trailing = op.dims if isinstance(op, ops.LayerNorm) else len(op.pad) // 2
    if any(levels_of(o) for o in others) or trailing > _logical_ndim(x):
        return NotImplemented  # per-sample weights, or the op's own error from one sample
    return batched(_run(op, lift(x, levels), *others), levels)


#: weights per sample (per-sample gradients) run as one ``Conv2dPerSample`` (ops/batched_conv.py:
#: the windows built once, kept for the VJP, channels-last products, 1.3× faster on the
#: benchmark's CNN) rather than the composition of unfold and a batched matmul
#: (``batching_conv.conv``). Off: ``PER_SAMPLE_CONV = False``.
PER_SAMPLE_CONV = True


def _conv(op: ops.Op, inputs: list, levels: tuple[int, ...]) -> Any:
    """The convolution rule (``batching_conv``), with the switch read where it is set."""
    return batching_conv.conv(op, inputs, levels, PER_SAMPLE_CONV)


#: the batching rules, by the name an op declares as its ``batching``
RULES: dict[str, Callable[[ops.Op, list, tuple[int, ...]], Any]] = {
    "elementwise": _elementwise,
    "reduction": _reduction,
    "along_axis": _along_axis,
    "normalize": _normalize,
    "reshape": _reshape,
    "transpose": _transpose,
    "broadcast_to": _broadcast_to,
    "join": _join,
    "getitem": batching_indices.getitem,
    "matmul": _matmul,
    "linear": _linear,
    "linear_chain": _linear_chain,
    "cross_entropy": _cross_entropy,
    "fold_batch": batching_conv.fold_batch,
    "leading": _leading,
    "stacked_gates": _stacked_gates,
    "trailing": _trailing,
    "recurrent_layer": _recurrent_layer,
    "gather": batching_indices.gather,
    "positions": batching_indices.positions,
    "conv": _conv,
    "per_sample_conv": batching_conv.per_sample_conv,
    "index_add": batching_indices.index_add,
}


#: the rules that handle an op whose settings hold batched arrays (others loop)
_TAKES_BATCHED_SETTINGS = {"getitem", "cross_entropy", "gather", "positions", "index_add"}


# --------------------------------------------------------------------------- the fallback
def _loop(op: ops.Op, inputs: list, levels: tuple[int, ...]) -> Tensor:
    """An op without a rule (or a case its rule leaves out), once per sample: each sample's
    operands picked out, the op run on them, the results stacked. Recorded op by op, so
    gradients flow as through any other ops."""
    sizes = _sizes(levels)
    count = math.prod(sizes)
    _warn_fallback(op.name)
    if not count:
        raise RuntimeError(
            f"vmap: {op.name} has no batching rule, and over an empty batch there is no "
            "sample to run it on"
        )
    flat = [_samples(x, levels, count) for x in inputs]
    per_sample = {name: _per_sample(getattr(op, name), levels, count) for name in _param_levels(op)}
    outs = []
    for i in range(count):
        picked = [
            x if f is None else (_run(ops.GetItem(i), f) if isinstance(f, Tensor) else f[i])
            for x, f in zip(inputs, flat, strict=True)
        ]
        settings = {name: values[i] for name, values in per_sample.items()}
        outs.append(_run(_fresh(op, **settings), *picked))
    return _stacked(outs, sizes, levels, op.name)


def _samples(x: Any, levels: tuple[int, ...], count: int) -> Any:
    """A batched operand as (count, *its logical shape), for picking sample i out (a
    recorded reshape for a tensor); None for an unbatched one."""
    if not levels_of(x):
        return None
    expanded = lift(x, levels, expand=True)
    if isinstance(x, Tensor):
        return _run(ops.Reshape((count, *expanded._data.shape[len(levels) :])), expanded)
    expanded = np.asarray(expanded)
    return expanded.reshape(count, *expanded.shape[len(levels) :])


def _per_sample(value: Any, levels: tuple[int, ...], count: int) -> list:
    """A batched setting of an op (an array, or a tuple holding some) for each sample."""
    if type(value) is tuple:
        columns = [_per_sample(v, levels, count) if levels_of(v) else None for v in value]
        return [
            tuple(
                v if column is None else column[i] for v, column in zip(value, columns, strict=True)
            )
            for i in range(count)
        ]
    return list(_samples(value, levels, count))


# --------------------------------------------------------------------------- methods
def call_per_sample(method: Callable, args: tuple, kwargs: dict) -> Any:
    """A method that reads values (``engine.reads_values``): by its batched form
    (``batching_methods``) where it has one for the call, else once per sample of its
    batched tensors, the results stacked as batched tensors (a named tuple of them field by
    field)."""
    leaves, spec = tree_flatten((args, kwargs))
    levels = _union([levels_of(x) for x in leaves if isinstance(x, Tensor)])
    if not levels:
        return method(*args, **kwargs)
    form = batching_methods.BATCHED_METHODS.get(method.__name__)
    if form is not None:
        out = form(method, args, kwargs, levels)
        if out is not NotImplemented:
            return out
    sizes = _sizes(levels)
    count = math.prod(sizes)
    name = method.__name__
    if args and isinstance(args[0], type):  # a class's method: a custom Function's apply
        name = f"{args[0].__name__}.{name}"
    _warn_fallback(name)
    flat = [_samples(x, levels, count) if isinstance(x, Tensor) else None for x in leaves]
    results = []
    for i in range(count):
        picked = [
            x if f is None else plain(_run(ops.GetItem(i), f))
            for x, f in zip(leaves, flat, strict=True)
        ]
        a, kw = tree_unflatten(picked, spec)
        results.append(method(*a, **kw))
    if not results:
        raise RuntimeError(f"vmap: {name} reads values, and the batch is empty")
    return _stacked(results, sizes, levels, name)


def _stacked(results: list, sizes: tuple[int, ...], levels: tuple[int, ...], name: str) -> Any:
    """The per-sample results as batched tensors (a named tuple of them field by field)."""
    first = results[0]
    if isinstance(first, Tensor):
        shapes = {tuple(r._data.shape) for r in results}
        if len(shapes) > 1:
            raise RuntimeError(
                f"vmap: {name} gives results of different shapes for different samples "
                f"({', '.join(map(str, sorted(shapes)))}), which one batched tensor cannot "
                "hold: a shape that depends on the values (as indexing with a boolean mask "
                "does) is not supported inside vmap, as in PyTorch; run it outside vmap"
            )
        stacked = _run(ops.Stack(0), *results)
        return batched(_run(ops.Reshape((*sizes, *stacked._data.shape[1:])), stacked), levels)
    if isinstance(first, tuple):
        fields = [
            _stacked(list(column), sizes, levels, name) for column in zip(*results, strict=True)
        ]
        return type(first)(*fields) if hasattr(first, "_fields") else type(first)(fields)
    if all(r == first for r in results):
        return first
    raise RuntimeError(
        f"vmap: {name} gives a value that differs from sample to sample ({first!r}, ...), "
        "which a batched tensor cannot hold; run it outside vmap"
    )


def values_of(ufunc: Callable, operands: Sequence[Any], arrays: Sequence[Any]) -> Any:
    """``ufunc`` of the ``arrays`` of ``operands`` (a comparison, a logical op: a function
    of values, elementwise), their batch axes lined up; None when no operand is batched."""
    owns = [levels_of(x) for x in operands]
    levels = _union(owns)
    if not levels:
        return None
    rank = max(np.ndim(a) - len(own) for a, own in zip(arrays, owns, strict=True))
    lined_up = []
    for a, own in zip(arrays, owns, strict=True):
        if not own:
            lined_up.append(a)
            continue
        logical = np.shape(a)[len(own) :]
        lead = tuple(state.sizes[lv] if lv in own else 1 for lv in levels)
        lined_up.append(np.reshape(a, (*lead, *(1,) * (rank - len(logical)), *logical)))
    return batched(engine.wrap(np.asarray(ufunc(*lined_up))), levels)


def _per_sample_when_indices_batched(method: Callable) -> Callable:
    """``method`` (a Tensor method that reads its index argument's values to check them and
    to shape its result), when its index is batched: by its batched form in
    ``BATCHED_INDEX_METHODS`` where it has one for the call, else once per sample (a
    batch's array is not one sample's index). With a shared index it runs as it is, its
    ops batched by their rules (a batched source or value among them)."""
    batched_form = batching_indices.BATCHED_INDEX_METHODS.get(method.__name__)
    index_name = "indices" if method.__name__ == "index_put" else "index"
    index_position = 0 if method.__name__ == "index_put" else 1

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        if engine.state.vmapping:
            index = kwargs.get(
                index_name, args[index_position] if len(args) > index_position else None
            )
            if any(levels_of(a) for a in tree_flatten(index)[0]):
                out = (
                    NotImplemented if batched_form is None else batched_form(self, *args, **kwargs)
                )
                if out is NotImplemented:
                    return call_per_sample(method, (self, *args), kwargs)
                return out
        return method(self, *args, **kwargs)

    return wrapper


#: the Tensor methods (``core/methods/indexing.py``) that read an index's values in Python
#: before their ops; with a batched index they run per sample (with the fallback warning)
PER_SAMPLE_WITH_BATCHED_INDICES = (
    "index_select", "scatter", "index_add", "index_copy", "index_fill", "index_put",
)  # fmt: skip
for _name in PER_SAMPLE_WITH_BATCHED_INDICES:
    setattr(Tensor, _name, _per_sample_when_indices_batched(getattr(Tensor, _name)))

engine.batched_apply, engine.batched_apply_inplace = apply, apply_inplace
engine.batched_method, engine.batched_values = call_per_sample, values_of
