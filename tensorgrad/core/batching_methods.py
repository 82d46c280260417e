"""vmap's batched forms of the Tensor methods that read their tensors' values with NumPy
(``engine.reads_values``: an argmax, a mask of NaNs, a running maximum's positions), which
would otherwise run once per sample (``batching.call_per_sample``).

Most such methods need nothing new, only their operands laid out physically: an elementwise
one (``xlogy``, ``isnan``, ``fmax``) runs once on the operands with their batch axes lined
up (:func:`elementwise`), as the ``elementwise`` rule runs an op; one that works along a
dimension (``argmax``, ``cummax``, ``median``, ``kthvalue``, ``sort``, ``scatter_reduce``)
runs once on the whole batch with the dimension moved past the batch axes (:func:`along_dim`),
the batch axes being more dimensions it leaves alone. A few take a form of their own
(``median`` of all elements, ``bincount``, ``masked_scatter``). Each form returns
NotImplemented for a case it leaves out (a 0-d sample, an argument the method would refuse),
which then goes the per-sample way, with the method's own errors.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from tensorgrad import ops
from tensorgrad.core import engine, functions
from tensorgrad.core.batched_tensors import (
    _logical_ndim,
    _run,
    _sizes,
    batched,
    levels_of,
    lift,
    physical,
)
from tensorgrad.core.pytree import tree_flatten, tree_unflatten
from tensorgrad.core.tensor import Tensor

Levels = tuple[int, ...]


def _batched_result(result: Any, levels: Levels) -> Any:
    """A physical result (a tensor, or a named tuple of them) as batched tensors."""
    if isinstance(result, Tensor):
        return batched(result, levels)
    if isinstance(result, tuple) and all(isinstance(r, Tensor) for r in result):
        fields = [batched(r, levels) for r in result]
        return type(result)(*fields) if hasattr(result, "_fields") else tuple(fields)
    return NotImplemented


def _physical_call(method: Callable, args: tuple, kwargs: dict, levels: Levels) -> Any:
    """``method`` on operands already laid out over ``levels``, its result batched. A call
    the method refuses (an empty dimension to take an argmax of) goes the per-sample way,
    for one sample's error. (The operands stay the objects they are, batched or not: a leaf
    copied by ``plain`` would be another leaf, and get the gradient instead.)"""
    try:
        with physical():
            result = method(*args, **kwargs)
    except (ValueError, IndexError, TypeError, RuntimeError):
        return NotImplemented
    return _batched_result(result, levels)


# --------------------------------------------------------------------------- elementwise
def elementwise(method: Callable, args: tuple, kwargs: dict, levels: Levels) -> Any:
    """A method whose result is elementwise in its tensors (broadcasting them): every
    tensor laid out over the levels at one rank, the method run once."""
    leaves, spec = tree_flatten((args, kwargs))
    tensors = [x for x in leaves if isinstance(x, Tensor)]
    rank = max(_logical_ndim(x) for x in tensors)
    lined_up = [
        lift(x, levels, rank) if isinstance(x, Tensor) and levels_of(x) else x for x in leaves
    ]
    a, kw = tree_unflatten(lined_up, spec)
    return _physical_call(method, a, kw, levels)


# --------------------------------------------------------------------------- along a dim
#: NumPy's names of the arguments, as ``args.numpy_names`` reads them
_NUMPY_NAMES = {"axis": "dim", "keepdims": "keepdim"}


def _bound(method: Callable, args: tuple, kwargs: dict) -> inspect.BoundArguments | None:
    """The call's arguments by name (NumPy's ``axis``/``keepdims`` read as ``dim``/
    ``keepdim``); None for a call the method would refuse."""
    signature = inspect.signature(method)
    kwargs = {
        _NUMPY_NAMES[n] if n in _NUMPY_NAMES and n not in signature.parameters else n: v
        for n, v in kwargs.items()
    }
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:
        return None  # the method's own error, from one sample
    bound.apply_defaults()
    return bound


def _shifted(dim: Any, rank: int, k: int) -> Any:
    """A logical ``dim`` (an int or a sequence of them) past ``k`` batch axes; None where
    the method would refuse it."""
    many = isinstance(dim, (tuple, list))
    dims = tuple(dim) if many else (dim,)
    if not all(isinstance(d, (int, np.integer)) and not isinstance(d, bool) for d in dims):
        return None
    if not dims or any(not -rank <= d < rank for d in dims):
        return None
    axes = tuple(int(d) % rank + k for d in dims)
    if len(set(axes)) != len(axes):
        return None
    return axes if many else axes[0]


#: how each method along a dim reads ``dim=None``: "flatten" (argmax: of all elements, as
#: one flat dimension), "all" (any, nansum: every dimension), or None (not allowed)
ALONG_DIM: dict[str, str | None] = {
    "argmax": "flatten",
    "argmin": "flatten",
    "_select": None,  # max(dim) and min(dim)
    "argsort": None,  # and sort and topk, which call it
    "_running_extreme": None,  # cummax and cummin
    "_kth": None,  # kthvalue, and median(dim)
    "median": "median",
    "any": "all",
    "all": "all",
    "count_nonzero": "all",
    "nansum": "all",
    "nanmean": "all",
    "scatter_reduce": None,
}


def along_dim(method: Callable, args: tuple, kwargs: dict, levels: Levels) -> Any:
    """A method that works along ``dim`` of its first tensor, the other dimensions left
    alone: once on the whole batch, ``dim`` past the batch axes. Its other tensors (a
    scatter's index and source) are laid out over the same levels, so that each sample's
    index addresses its own slice."""
    bound = _bound(method, args, kwargs)
    if bound is None or "dim" not in bound.arguments:
        return NotImplemented
    names = list(bound.arguments)
    x = bound.arguments[names[0]]
    others = [n for n in names[1:] if isinstance(bound.arguments[n], (Tensor, np.ndarray))]
    if not isinstance(x, Tensor) or (others and method.__name__ != "scatter_reduce"):
        return NotImplemented
    k, r = len(levels), _logical_ndim(x)
    if any(_logical_ndim(bound.arguments[n]) != r for n in others):
        return NotImplemented  # the method's own error, from one sample
    dim, none_means = bound.arguments["dim"], ALONG_DIM[method.__name__]
    logical = x.shape
    if not r and not (dim is None and none_means in ("flatten", "median")):
        return _one_of_one(method, bound, [names[0], *others], levels)
    if dim is None:
        if none_means == "flatten" and math.prod(logical):
            return _flattened(method, bound, x, levels)
        if none_means == "median":
            return _median_of_all(x, levels)
        if none_means != "all":
            return NotImplemented
        dim = tuple(range(r))
    axes = _shifted(dim, r, k)
    if axes is None:
        return NotImplemented
    bound.arguments[names[0]] = lift(x, levels, expand=True)
    for n in others:
        bound.arguments[n] = _laid_out(bound.arguments[n], levels)
    bound.arguments["dim"] = axes
    return _physical_call(method, bound.args, bound.kwargs, levels)


def _one_of_one(
    method: Callable, bound: inspect.BoundArguments, tensors: list[str], levels: Levels
) -> Any:
    """0-d samples, which these methods take as one element along dim 0 (or -1, or every
    dim): each laid out as (batch, 1), the method along that unit axis, the results back
    to 0-d samples."""
    dim = bound.arguments["dim"]
    dims = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
    if dim is not None and any(isinstance(d, bool) or d not in (0, -1) for d in dims):
        return NotImplemented  # the method's own error, from one sample
    sizes = _sizes(levels)
    for n in tensors:
        value = lift(bound.arguments[n], levels, expand=True)
        if isinstance(value, Tensor):
            value = _run(ops.Reshape((*sizes, 1)), value)
        bound.arguments[n] = value if isinstance(value, Tensor) else np.reshape(value, (*sizes, 1))
    bound.arguments["dim"] = len(sizes) if dim is None or isinstance(dim, int) else (len(sizes),)
    with physical():
        result = method(*bound.args, **bound.kwargs)
        outputs = (result,) if isinstance(result, Tensor) else tuple(result)
        if not all(isinstance(o, Tensor) for o in outputs):
            return NotImplemented
        reshaped = [o.reshape(*sizes) for o in outputs]
    if isinstance(result, Tensor):
        return batched(reshaped[0], levels)
    return _batched_result(type(result)(*reshaped), levels)


def _laid_out(value: Any, levels: Levels) -> Any:
    """An operand laid out over every level (each sample its own copy, a broadcast view)."""
    lifted = lift(value, levels, expand=True)
    return lifted if isinstance(lifted, Tensor) else np.asarray(lifted)


def _flattened(method: Callable, bound: inspect.BoundArguments, x: Tensor, levels: Levels) -> Any:
    """``argmax()`` of all of a sample's elements: along one flat dimension."""
    sizes = _sizes(levels)
    flat = _run(ops.Reshape((*sizes, -1)), lift(x, levels, expand=True))
    keepdim = bound.arguments.get("keepdim", False)
    with physical():
        out = method(flat, len(sizes))
        if keepdim:
            out = out.reshape(*sizes, *(1,) * _logical_ndim(x))
    return batched(out, levels)


def _median_of_all(x: Tensor, levels: Levels) -> Any:
    """``median()``: each sample's lower median of all its elements (NaN where it has one),
    the gradient shared evenly by tied elements, as the method's own."""
    if x.dtype == np.bool_ or not math.prod(x.shape):
        return NotImplemented
    sizes = _sizes(levels)
    flat = _run(ops.Reshape((*sizes, -1)), lift(x, levels, expand=True))
    data = flat._data
    order = np.argsort(data, axis=-1, kind="stable")
    middle = order[..., (data.shape[-1] - 1) // 2 : (data.shape[-1] - 1) // 2 + 1]
    picked = np.take_along_axis(data, middle, axis=-1)
    if data.dtype.kind == "f":
        nan = np.isnan(data)
        has_nan = nan.any(axis=-1, keepdims=True)
        picked = np.where(has_nan, np.nan, picked)
        mask = np.where(has_nan, nan, data == picked)
        lowest = -np.inf
    else:
        mask, lowest = data == picked, np.iinfo(data.dtype).min
    with physical():
        out = functions.where(mask, flat, lowest).amax(-1)
    return batched(out, levels)


# --------------------------------------------------------------------------- their own
def bincount(method: Callable, args: tuple, kwargs: dict, levels: Levels) -> Any:
    """Each sample's counts in one ``Bincount`` of the whole batch: sample ``b``'s values
    shifted by ``b`` bins' lengths. Every sample must have the same number of bins (else
    the loop's error: a batch cannot hold results of different shapes)."""
    bound = _bound(method, args, kwargs)
    if bound is None:
        return NotImplemented
    x, weights, minlength = (bound.arguments[n] for n in ("self", "weights", "minlength"))
    if not isinstance(x, Tensor) or x.dtype.kind not in "iu" or _logical_ndim(x) != 1:
        return NotImplemented
    if isinstance(minlength, bool) or not isinstance(minlength, (int, np.integer)):
        return NotImplemented
    if weights is not None and (not isinstance(weights, Tensor) or weights.shape != x.shape):
        return NotImplemented
    values = np.asarray(lift(x, levels, expand=True)._data)
    if not values.shape[-1] or values.min() < 0 or minlength < 0:
        return NotImplemented
    sizes, count = _sizes(levels), math.prod(_sizes(levels))
    rows = values.reshape(count, -1)
    lengths = np.maximum(rows.max(axis=1) + 1, minlength)
    if np.any(lengths != lengths[0]):
        return NotImplemented  # results of different lengths: the loop says so
    length = int(lengths[0])
    shifted = engine.wrap((rows + length * np.arange(count)[:, None]).reshape(-1))
    operands = [shifted]
    if weights is not None:
        operands.append(_run(ops.Reshape((-1,)), lift(weights, levels, expand=True)))
    out = _run(ops.Bincount(count * length), *operands)
    return batched(_run(ops.Reshape((*sizes, length)), out), levels)


def masked_scatter(method: Callable, args: tuple, kwargs: dict, levels: Levels) -> Any:
    """Each sample's source elements, in order, where its mask is True: the place of each
    True among its sample's (a running count) picks the source element, one gather of the
    whole batch and one ``where``."""
    bound = _bound(method, args, kwargs)
    if bound is None:
        return NotImplemented
    x, mask, source = (bound.arguments[n] for n in ("self", "mask", "source"))
    if not isinstance(x, Tensor) or not isinstance(source, Tensor) or source.dtype != x.dtype:
        return NotImplemented
    mask_shape = tuple(mask.shape) if isinstance(mask, Tensor) else np.shape(mask)
    try:
        shape = np.broadcast_shapes(tuple(x.shape), mask_shape)
    except ValueError:
        return NotImplemented
    sizes, count = _sizes(levels), math.prod(_sizes(levels))
    flags = lift(mask, levels, len(shape), expand=True)
    flags = np.broadcast_to(flags._data if isinstance(flags, Tensor) else flags, (*sizes, *shape))
    total = math.prod(source.shape)
    if flags.dtype != np.bool_ or not total:
        return NotImplemented
    rows = flags.reshape(count, -1)
    if rows.sum(axis=1).max(initial=0) > total:
        return NotImplemented  # too few source elements: the method's error
    places = np.where(rows, np.cumsum(rows, axis=1) - 1, 0).reshape(*sizes, -1)
    flat_source = _run(ops.Reshape((*sizes, -1)), lift(source, levels, expand=True))
    with physical():
        picked = flat_source.gather(len(sizes), engine.wrap(places)).reshape(*sizes, *shape)
        base = lift(x, levels, len(shape), expand=True)
        out = functions.where(flags, picked, base)
    return batched(out, levels)


#: the methods whose result is elementwise in their tensors
ELEMENTWISE = (
    "xlogy", "heaviside", "nextafter", "fmax", "fmin", "nan_to_num", "isnan", "isinf",
    "isfinite", "isposinf", "isneginf", "signbit", "logical_not", "bitwise_not", "__invert__",
    "isclose", "_bitwise",
)  # fmt: skip

#: the batched forms, by the name of the method (``method.__name__``) that reads values
BATCHED_METHODS: dict[str, Callable[[Callable, tuple, dict, Levels], Any]] = {
    **dict.fromkeys(ELEMENTWISE, elementwise),
    **dict.fromkeys(ALONG_DIM, along_dim),
    "bincount": bincount,
    "masked_scatter": masked_scatter,
}
