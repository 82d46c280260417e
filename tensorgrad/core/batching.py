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
from tensorgrad.core import engine
from tensorgrad.core.batched_tensors import (  # noqa: F401 - the room's names, from one place
    BatchedTensor,
    _logical_ndim,
    _param_levels,
    _run,
    _sizes,
    _union,
    batched,
    close_level,
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
from tensorgrad.ops.batched_conv import Conv2dPerSample
from tensorgrad.ops.conv import check_conv
from tensorgrad.ops.fused_conv import Conv2dRelu, Conv2dReluMaxPool

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


def dispatch(op: ops.Op, *inputs: Any) -> Tensor:
    """Run ``op`` as the function's code would (a rule built from other ops uses this)."""
    out = apply(op, inputs)
    return _run(op, *inputs) if out is None else out


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
    elif isinstance(op, ops.SetItem) and _prefixable(op.index):
        region = np.ndim(np.broadcast_to(0, target.shape)[op.index])
        op = copy.copy(op)
        op.index = _prefixed(op.index, len(levels))
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


def _fresh(op: ops.Op, **settings: Any) -> ops.Op:
    new = copy.copy(op)
    new.saved = None
    for name, value in settings.items():
        setattr(new, name, value)
    return new


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


def _prefixable(index: Any) -> bool:
    """Whether ``index`` means the same after ``k`` full slices in front: no batched arrays
    in it, and its advanced parts (arrays, and ints beside them) side by side, which NumPy
    then leaves in place."""
    parts = index if isinstance(index, tuple) else (index,)
    arrays = [p for p in parts if isinstance(p, (np.ndarray, list))]
    if not arrays:
        return True
    if any(type(p) is np.ndarray and levels_of(p) for p in arrays):
        return False
    advanced = [
        i
        for i, p in enumerate(parts)
        if isinstance(p, (np.ndarray, list, int, np.integer)) and p is not Ellipsis
    ]
    return advanced == list(range(advanced[0], advanced[-1] + 1))


def _prefixed(index: Any, k: int) -> tuple:
    return (slice(None),) * k + (index if isinstance(index, tuple) else (index,))


def _getitem(op: ops.Op, inputs: list, levels: tuple[int, ...]) -> Tensor:
    """Basic indexing keeps the batch axes in front; an unbatched tensor indexed by one
    batched array (an embedding lookup) needs nothing at all."""
    (x,) = inputs
    k = len(levels)
    if levels_of(x) and _prefixable(op.index):
        return batched(_run(_fresh(op, index=_prefixed(op.index, k)), lift(x, levels)), levels)
    index = op.index
    if not levels_of(x) and type(index) is np.ndarray and index.dtype.kind in "iu":
        return batched(_run(op, x), levels)  # (the index is what is batched)
    out = _advanced_first(op, x, levels)
    return _advanced_after_slices(op, x, levels) if out is NotImplemented else out


def _index_add(op: ops.Op, inputs: list, levels: tuple[int, ...]) -> Tensor:
    """Indexing's VJP (values scattered into zeros of ``shape`` at ``index``), and setting
    an indexed region out of place: with an index that means the same behind the batch
    axes, the batch axes lead the shape and the index."""
    if not _prefixable(op.index):
        return _index_add_advanced(op, inputs, levels)
    k = len(levels)
    if isinstance(op, ops.IndexAdd):
        (values,) = inputs
        region = np.ndim(np.broadcast_to(0, op.shape)[op.index])
        if _logical_ndim(values) > region:
            return NotImplemented  # the op's own error, from one sample
        new = _fresh(op, shape=(*_sizes(levels), *op.shape), index=_prefixed(op.index, k))
        return batched(_run(new, lift(values, levels, region, expand=True)), levels)
    x, value = inputs
    region = np.ndim(np.broadcast_to(0, x.shape)[op.index])
    if _logical_ndim(value) > region:
        return NotImplemented
    new = _fresh(op, index=_prefixed(op.index, k))
    lifted = lift(value, levels, region) if levels_of(value) else value
    return batched(_run(new, lift(x, levels, expand=True), lifted), levels)


def _advanced_parts(index: Any) -> tuple[int, tuple, tuple] | None:
    """An index of full slices, then integer arrays and ints side by side (an array among
    them), then slices or Ellipsis: (the number of full slices, the arrays and ints, the
    rest); None for any other."""
    parts = index if isinstance(index, tuple) else (index,)
    lead = 0
    while lead < len(parts) and isinstance(parts[lead], slice) and parts[lead] == slice(None):
        lead += 1
    end = lead
    while end < len(parts) and (
        (type(parts[end]) is np.ndarray and parts[end].dtype.kind in "iu")
        or isinstance(parts[end], (int, np.integer))
    ):
        end += 1
    advanced, rest = parts[lead:end], parts[end:]
    if not any(type(p) is np.ndarray for p in advanced) or any(
        not isinstance(p, slice) and p is not Ellipsis for p in rest
    ):
        return None
    return lead, advanced, rest


def _index_add_advanced(op: ops.Op, inputs: list, levels: tuple[int, ...]) -> Any:
    """Indexing's VJP (``IndexAdd``) and out-of-place setitem (``SetItem``: index_copy,
    index_fill) at an index of per-sample arrays (:func:`_advanced_parts`): each sample's
    coordinates in front of the arrays, the full slices between. NumPy then puts the batch
    and the index's dimensions first, so the values' leading (sliced) axes go behind them."""
    parsed = _advanced_parts(op.index)
    if parsed is None:
        return NotImplemented
    lead, advanced, rest = parsed
    k, sizes = len(levels), _sizes(levels)
    shape = op.shape if isinstance(op, ops.IndexAdd) else tuple(inputs[0].shape)
    rank = max(_logical_ndim(p) for p in advanced if type(p) is np.ndarray)
    trailing = len(shape) - lead - len(advanced)
    if trailing < 0 or sum(p is Ellipsis for p in rest) > 1:
        return NotImplemented  # the op's own error, from one sample
    coordinates = [
        np.arange(n).reshape((1,) * i + (n,) + (1,) * (k - i - 1 + rank))
        for i, n in enumerate(sizes)
    ]
    moved = [
        np.asarray(lift(p, levels, rank)) if type(p) is np.ndarray and levels_of(p)
        else np.reshape(p, (1,) * k + np.shape(p)) if type(p) is np.ndarray else p
        for p in advanced
    ]  # fmt: skip
    index = (*coordinates, *(slice(None),) * lead, *moved, *rest)
    region = lead + rank + trailing  # the values' logical rank: (sliced, index, rest)

    def arranged(values: Any) -> Any:
        """Values of the region's logical shape as NumPy's assignment takes them: (batch,
        index, sliced, rest)."""
        v = lift(values, levels, region, expand=True)
        if not lead:
            return v
        order = (*range(k), *range(k + lead, k + lead + rank), *range(k, k + lead))
        return _run(ops.Transpose((*order, *range(k + lead + rank, k + region))), v)

    if isinstance(op, ops.IndexAdd):
        (values,) = inputs
        if _logical_ndim(values) != region:
            return NotImplemented
        new = _fresh(op, shape=(*sizes, *op.shape), index=index)
        return batched(_run(new, arranged(values)), levels)
    x, value = inputs
    if isinstance(value, Tensor) or type(value) is np.ndarray:
        if _logical_ndim(value) > region:
            return NotImplemented
        value = arranged(value) if (levels_of(value) or _logical_ndim(value)) else value
    new = _fresh(op, index=index)
    return batched(_run(new, lift(x, levels, expand=True), value), levels)


def _advanced_first(op: ops.Op, x: Any, levels: tuple[int, ...]) -> Any:
    """An index whose integer arrays (some batched) and ints lead, side by side (``x[i]``,
    ``x[i, j]``, ``x[i, :, 1:]``): each array laid out over the levels and, for a batched
    ``x``, each sample's coordinates in front, so that sample ``b`` reads ``x[b][i[b]]``.
    NumPy puts the broadcast block first, where the batch axes belong."""
    parts = op.index if isinstance(op.index, tuple) else (op.index,)
    lead = 0
    while lead < len(parts) and (
        (type(parts[lead]) is np.ndarray and parts[lead].dtype.kind in "iu")
        or isinstance(parts[lead], (int, np.integer))
    ):
        lead += 1
    rest = parts[lead:]
    if not lead or any(
        not isinstance(p, slice) and p is not Ellipsis and p is not None for p in rest
    ):
        return NotImplemented
    arrays = [p for p in parts[:lead] if type(p) is np.ndarray]
    rank = max(_logical_ndim(p) for p in arrays)
    moved = [
        np.asarray(lift(p, levels, rank)) if type(p) is np.ndarray and levels_of(p)
        else np.reshape(p, (1,) * len(levels) + np.shape(p)) if type(p) is np.ndarray else p
        for p in parts[:lead]
    ]  # fmt: skip
    coordinates = []
    if levels_of(x):
        sizes = _sizes(levels)
        coordinates = [
            np.arange(n).reshape((1,) * i + (n,) + (1,) * (len(sizes) - i - 1 + rank))
            for i, n in enumerate(sizes)
        ]
        x = lift(x, levels, expand=True)
    new = _fresh(op, index=(*coordinates, *moved, *rest))
    return batched(_run(new, x), levels)


def _advanced_after_slices(op: ops.Op, x: Any, levels: tuple[int, ...]) -> Any:
    """``x[:, i]``: full slices, then integer arrays (some batched) and ints side by side,
    then slices. The indexed axes are moved to the front, indexed as by
    :func:`_advanced_first`, and the result's axes put back where NumPy puts them (the
    broadcast index's in place of the indexed axes)."""
    parts = op.index if isinstance(op.index, tuple) else (op.index,)
    lead = 0
    while lead < len(parts) and isinstance(parts[lead], slice) and parts[lead] == slice(None):
        lead += 1
    advanced = lead
    while advanced < len(parts) and (
        (type(parts[advanced]) is np.ndarray and parts[advanced].dtype.kind in "iu")
        or isinstance(parts[advanced], (int, np.integer))
    ):
        advanced += 1
    rank, count = _logical_ndim(x), advanced - lead
    rest = parts[advanced:]
    if (
        not lead
        or not count
        or advanced > rank
        or any(not isinstance(p, slice) and p is not Ellipsis for p in rest)
    ):
        return NotImplemented
    order = (*range(lead, advanced), *range(lead), *range(advanced, rank))
    moved = dispatch(ops.Transpose(order), x)
    index = (*parts[lead:advanced], *(slice(None),) * lead, *rest)
    out = _advanced_first(_fresh(op, index=index), moved, levels)
    if out is NotImplemented:
        return out
    m = max(_logical_ndim(p) for p in parts[lead:advanced] if type(p) is np.ndarray)
    r = _logical_ndim(out)
    return dispatch(ops.Transpose((*range(m, m + lead), *range(m), *range(m + lead, r))), out)


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


def _fold_batch(op: ops.Op, inputs: list, levels: tuple[int, ...]) -> Tensor:
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


def _leading(op: ops.Op, inputs: list, levels: tuple[int, ...]) -> Tensor:
    """An op on the last axes, whatever leads them (attention): every operand batched."""
    rank = max(_logical_ndim(x) for x in inputs if isinstance(x, Tensor))
    ranks = {_logical_ndim(x) for x in inputs if isinstance(x, Tensor)}
    if len(ranks) != 1:
        return NotImplemented
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


def _trailing(op: ops.Op, inputs: list, levels: tuple[int, ...]) -> Tensor:
    """An op on an input's last axes (a fused layer norm's ``dims``, a padding's pairs) whose
    other operands are shared (the layer norm's weight and bias): the batch axes lead."""
    x, *others = inputs
    trailing = op.dims if isinstance(op, ops.LayerNorm) else len(op.pad) // 2
    if any(levels_of(o) for o in others) or trailing > _logical_ndim(x):
        return NotImplemented  # per-sample weights, or the op's own error from one sample
    return batched(_run(op, lift(x, levels), *others), levels)


def _gather(op: ops.Op, inputs: list, levels: tuple[int, ...]) -> Tensor:
    """``gather`` (and ``scatter_add``, whose second operand is the source): the input, the
    source and the index each laid out over every level, the axis past the batch axes, so
    each sample's index addresses its own slice."""
    k, r = len(levels), _logical_ndim(inputs[0])
    if not r or _logical_ndim(op.index) != r or any(_logical_ndim(x) != r for x in inputs):
        return NotImplemented  # 0-d operands, or the op's own error, from one sample
    axis = normalize_axis(op.axis, r, op.name)
    index = np.asarray(lift(op.index, levels, expand=True))
    lifted = [lift(x, levels, expand=True) for x in inputs]
    return batched(_run(_fresh(op, axis=axis + k, index=index), *lifted), levels)


def _positions(op: ops.Op, inputs: list, levels: tuple[int, ...]) -> Tensor:
    """An op addressing its input by a tuple of index arrays (``scatter_reduce``'s
    positions): each array laid out over the levels, with the batch coordinates in front."""
    x, src = inputs
    r = len(op.positions)
    if _logical_ndim(x) != r or not r:
        return NotImplemented
    sizes = _sizes(levels)
    rank = max(_logical_ndim(p) for p in op.positions)
    coordinates = [
        np.arange(n).reshape((1,) * i + (n,) + (1,) * (len(sizes) - i - 1 + rank))
        for i, n in enumerate(sizes)
    ]
    moved = [np.asarray(lift(p, levels, rank, expand=True)) for p in op.positions]
    new = _fresh(op, positions=(*coordinates, *moved))
    return batched(_run(new, lift(x, levels, expand=True), lift(src, levels, expand=True)), levels)


def _conv(op: ops.Op, inputs: list, levels: tuple[int, ...]) -> Tensor:
    """A convolution: with shared weights the batch joins N (:func:`_fold_batch`); with
    weights per sample (per-sample gradients), each sample's windows (``unfold``) times its
    own weight matrix, one batched matrix product."""
    out = _fold_batch(op, inputs, levels)
    if out is not NotImplemented:
        return out
    if isinstance(op, ops.ConvTranspose2d):
        return _conv_transpose_per_sample(op, inputs, levels)
    if not isinstance(op, ops.Conv2d):
        return out
    if isinstance(op, Conv2dRelu):  # the fused ops, as the ops they fuse
        plain_conv = ops.Conv2d(op.stride, op.padding, op.dilation, op.groups)
        out = _conv(plain_conv, inputs, levels)
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
    if PER_SAMPLE_CONV:
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


#: weights per sample (per-sample gradients) run as one ``Conv2dPerSample`` (ops/batched_conv.py:
#: the windows built once, kept for the VJP, channels-last products, 1.3× faster on the
#: benchmark's CNN) rather than the composition of unfold and a batched matmul above.
#: Off: ``PER_SAMPLE_CONV = False``.
PER_SAMPLE_CONV = True


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
    new = Conv2dPerSample(op.stride, op.padding, op.dilation, op.groups)
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


def _per_sample_conv(op: ops.Op, inputs: list, levels: tuple[int, ...]) -> Tensor:
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
    "getitem": _getitem,
    "matmul": _matmul,
    "linear": _linear,
    "linear_chain": _linear_chain,
    "cross_entropy": _cross_entropy,
    "fold_batch": _fold_batch,
    "leading": _leading,
    "stacked_gates": _stacked_gates,
    "trailing": _trailing,
    "gather": _gather,
    "positions": _positions,
    "conv": _conv,
    "per_sample_conv": _per_sample_conv,
    "index_add": _index_add,
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
    """A method that reads values (``engine.reads_values``), once per sample of its batched
    tensors, the results stacked as batched tensors (a named tuple of them field by field)."""
    leaves, spec = tree_flatten((args, kwargs))
    levels = _union([levels_of(x) for x in leaves if isinstance(x, Tensor)])
    if not levels:
        return method(*args, **kwargs)
    sizes = _sizes(levels)
    count = math.prod(sizes)
    _warn_fallback(method.__name__)
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
        raise RuntimeError(f"vmap: {method.__name__} reads values, and the batch is empty")
    return _stacked(results, sizes, levels, method.__name__)


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
    to shape its result), when one of its other arguments is batched: by its batched form
    in ``BATCHED_INDEX_METHODS`` where it has one for the call, else once per sample (a
    batch's array is not one sample's index)."""
    batched_form = BATCHED_INDEX_METHODS.get(method.__name__)

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        if engine.state.vmapping and any(levels_of(a) for a in tree_flatten((args, kwargs))[0]):
            out = NotImplemented if batched_form is None else batched_form(self, *args, **kwargs)
            if out is NotImplemented:
                return call_per_sample(method, (self, *args), kwargs)
            return out
        return method(self, *args, **kwargs)

    return wrapper


def _index_select(self: Tensor, dim: int, index: Any) -> Any:
    """``index_select`` with a batched index: each sample's 1-D index as an index array
    along ``dim`` (``x[:, i]``, batched by :func:`_advanced_after_slices`). A 0-d input or
    index, or an index the checks would refuse, goes the per-sample way (its errors)."""
    if not isinstance(index, Tensor) or not levels_of(index) or index.ndim != 1 or not self.ndim:
        return NotImplemented
    values = index._data
    if values.dtype.kind not in "iu" or not -self.ndim <= dim < self.ndim:
        return NotImplemented
    axis = dim % self.ndim
    if values.size and (values.min() < 0 or values.max() >= self.shape[axis]):
        return NotImplemented  # one sample's error, from the loop
    return self[(slice(None),) * axis + (index,)]


def _along(self: Tensor, dim: int, index: Any, source: Any) -> tuple | None:
    """For ``index_add``/``index_copy``/``index_fill`` of a float tensor with a batched
    1-D index within the dimension and a source of the exact shape and dtype: the index
    (``(:, …, index)``, its array batched) they address. None for anything else, which goes
    the per-sample way (with each method's own checks and errors)."""
    if not isinstance(index, Tensor) or not levels_of(index) or index.ndim != 1:
        return None
    values = index._data
    if self.dtype.kind != "f" or not self.ndim or values.dtype.kind not in "iu":
        return None
    if not -self.ndim <= dim < self.ndim:
        return None
    axis = dim % self.ndim
    if values.size and (values.min() < 0 or values.max() >= self.shape[axis]):
        return None
    if source is not None:
        expected = (*self.shape[:axis], index.shape[0], *self.shape[axis + 1 :])
        if not isinstance(source, Tensor) or tuple(source.shape) != expected:
            return None
        if source.dtype != self.dtype:
            return None
    return (slice(None),) * axis + (values,)


def _index_add(self: Tensor, dim: int, index: Any, source: Any, *, alpha: float = 1) -> Any:
    """``index_add`` with a batched index: ``self`` plus the (alpha-scaled) source added
    into zeros at each sample's index (``IndexAdd``, batched by :func:`_index_add_advanced`)."""
    where = _along(self, dim, index, source)
    if where is None:
        return NotImplemented
    scaled = source if alpha == 1 else source * alpha
    return self + engine.apply(ops.IndexAdd(tuple(self.shape), where), scaled)


def _index_copy(self: Tensor, dim: int, index: Any, source: Any) -> Any:
    """``index_copy`` with a batched index: one out-of-place setitem (``SetItem``)."""
    where = _along(self, dim, index, source)
    return NotImplemented if where is None else engine.apply(ops.SetItem(where), self, source)


def _index_fill(self: Tensor, dim: int, index: Any, value: Any) -> Any:
    """``index_fill`` of a number with a batched index: one out-of-place setitem."""
    where = _along(self, dim, index, None)
    if where is None or not isinstance(value, (int, float)) or isinstance(value, bool):
        return NotImplemented
    return engine.apply(ops.SetItem(where), self, value)


def _scatter(self: Tensor, dim: int, index: Any, src: Any = None, value: Any = None, **kw) -> Any:
    """``scatter`` (no reduction) of a float tensor with a batched index: one out-of-place
    setitem at the positions each sample's index names (along ``dim`` its values, along the
    other dimensions their own coordinates), of the source's part of the index's shape."""
    src = value if src is None else src
    if kw or not isinstance(index, Tensor) or not levels_of(index) or not self.ndim:
        return NotImplemented
    values, r = index._data, self.ndim
    if self.dtype.kind != "f" or values.dtype.kind not in "iu" or index.ndim != r:
        return NotImplemented
    if not -r <= dim < r:
        return NotImplemented
    axis, shape = dim % r, tuple(index.shape)
    if any(shape[d] > self.shape[d] for d in range(r) if d != axis):
        return NotImplemented
    if values.size and (values.min() < 0 or values.max() >= self.shape[axis]):
        return NotImplemented
    if isinstance(src, Tensor):
        if src.ndim != r or src.dtype != self.dtype or any(a > b for a, b in zip(shape, src.shape)):
            return NotImplemented
        src = src[tuple(slice(n) for n in shape)]
    elif not isinstance(src, (int, float)) or isinstance(src, bool):
        return NotImplemented
    positions = tuple(
        values if d == axis else np.arange(n).reshape((1,) * d + (n,) + (1,) * (r - d - 1))
        for d, n in enumerate(shape)
    )
    return engine.apply(ops.SetItem(positions), self, src)


#: the batched forms of the methods below, for a batched index (NotImplemented: a loop)
BATCHED_INDEX_METHODS: dict[str, Callable] = {
    "scatter": _scatter,
    "index_select": _index_select,
    "index_add": _index_add,
    "index_copy": _index_copy,
    "index_fill": _index_fill,
}


#: the Tensor methods (``core/methods/indexing.py``) that read an index's values in Python
#: before their ops; with a batched index they run per sample (with the fallback warning)
PER_SAMPLE_WITH_BATCHED_INDICES = (
    "index_select", "scatter", "index_add", "index_copy", "index_fill", "index_put",
)  # fmt: skip
for _name in PER_SAMPLE_WITH_BATCHED_INDICES:
    setattr(Tensor, _name, _per_sample_when_indices_batched(getattr(Tensor, _name)))

engine.batched_apply, engine.batched_apply_inplace = apply, apply_inplace
engine.batched_method, engine.batched_values = call_per_sample, values_of
