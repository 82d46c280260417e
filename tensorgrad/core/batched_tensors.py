"""Batched tensors, vmap's levels and their layouts: what a :class:`BatchedTensor` holds (the
whole batch in one array, its batch axes first), how levels open and close, how a value is
laid out over levels (:func:`lift`), and how inputs enter and outputs leave a level.
``core.batching`` builds the dispatch and the rules on these (the conv rules in
``core.batching_conv``, the index rules in ``core.batching_indices``)."""

from __future__ import annotations

import collections
import copy
import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tensorgrad import ops
from tensorgrad.core import engine, forward
from tensorgrad.core.tensor import Tensor
from tensorgrad.ops.base import normalize_axis

#: level numbers, one per vmap call (nested calls get larger ones: inner levels come later)
_level_numbers = itertools.count(1)


class _State:
    levels: tuple[int, ...] = ()  #: the open vmap levels, outermost first
    sizes: dict[int, int] = {}  # noqa: RUF012 (replaced when the outermost level opens)
    #: the arrays of the batched tensors made so far, by id, with their levels: an array a
    #: method took out of a batched tensor (an index, a target) is recognised by identity
    arrays: dict[int, tuple[np.ndarray, tuple[int, ...]]] = {}  # noqa: RUF012
    #: how many times each op ran by the per-sample loop (no rule, or a case its rule leaves
    #: out): what docs and tests look at to see that a model batches for real
    looped: collections.Counter = collections.Counter()  # noqa: RUF012
    #: the ops whose per-sample loop has been warned about (once each, as PyTorch's)
    warned: set[str] = set()  # noqa: RUF012


state = _State()


# --------------------------------------------------------------------------- the tensors
class BatchedTensor(Tensor):
    """A tensor inside vmap: one array for the batch, its batch axes (``_levels``) in front,
    the rest its logical shape, which is all the function sees."""

    __slots__ = ("_levels",)
    _batched_type = True  #: the engine sends ops on these through :func:`apply`
    _levels: tuple[int, ...]

    @property
    def shape(self) -> tuple[int, ...]:
        # the logical shape while vmap's rules are on; the array's inside a rule or a
        # backward sweep, which work on the arrays as they are
        if not engine.state.vmapping:
            return self._data.shape
        return self._data.shape[len(self._levels) :]

    @property
    def size(self) -> Any:
        from tensorgrad.core.tensor import SizeOrCount

        return SizeOrCount(self.shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def dim(self) -> int:
        return self.ndim

    ndimension = dim

    def numel(self) -> int:
        return math.prod(self.shape)

    nelement = numel

    @property
    def nbytes(self) -> int:
        return self.numel() * self._data.itemsize

    def __len__(self) -> int:
        if not self.ndim:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self) -> Any:
        return (self[i] for i in range(len(self)))

    @property
    def data(self) -> Tensor:
        return like(self, engine.wrap(self._data))

    def detach(self) -> Tensor:
        return like(self, Tensor.detach(self))

    def __repr__(self) -> str:
        return (
            f"BatchedTensor(levels={self._levels}, shape={tuple(self.shape)}, "
            f"batch={self._data.shape[: len(self._levels)]})"
        )

    def _data_dependent(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(
            "vmap: It looks like you're attempting to use a Tensor in some data-dependent "
            "control flow (item(), bool(), numpy(), tolist() of a tensor that differs from "
            "sample to sample). We don't support that yet; use tg.where, or run the function "
            "without vmap"
        )

    item = tolist = numpy = __bool__ = __float__ = __int__ = __index__ = _data_dependent


def batched(t: Tensor, levels: tuple[int, ...]) -> Tensor:
    """``t`` (its array already laid out with ``levels`` in front) as a batched tensor."""
    if not levels:
        return plain(t)
    b = BatchedTensor.__new__(BatchedTensor)
    for slot in _SLOTS:
        setattr(b, slot, getattr(t, slot))
    b._levels = levels
    state.arrays[id(b._data)] = (b._data, levels)
    if b._tangent is not None:  # dropped with the others when the dual level closes
        forward.set_tangent(b, b._tangent)
    return b


def plain(t: Tensor) -> Tensor:
    """The same tensor (node, array, version) as a plain Tensor: what vmap returns, and
    what the engine's sweep is given, as it works on the arrays as they are."""
    if type(t) is not BatchedTensor:
        return t
    p = Tensor.__new__(Tensor)
    for slot in _SLOTS:
        setattr(p, slot, getattr(t, slot))
    return p


def like(template: Any, t: Tensor) -> Tensor:
    """``t`` batched as ``template`` is (``t``'s array laid out as ``template``'s)."""
    levels = levels_of(template)
    return batched(t, levels) if levels else t


_SLOTS = [s for s in Tensor.__slots__ if s != "__weakref__"]


def levels_of(value: Any) -> tuple[int, ...]:
    """The levels a value is batched over: a batched tensor's, or a batched tensor's array
    taken out of it (an index, a target); () for anything else."""
    if type(value) is BatchedTensor:
        return value._levels
    if type(value) is np.ndarray:
        known = state.arrays.get(id(value))
        if known is not None and known[0] is value:
            return known[1]
    return ()


def _union(groups: Sequence[tuple[int, ...]]) -> tuple[int, ...]:
    return tuple(sorted(set().union(*groups)))


def _param_levels(op: ops.Op) -> dict[str, tuple[int, ...]]:
    """The op's settings that are batched arrays (a target, an index), by attribute name."""
    found = {}
    for name, value in vars(op).items():
        if type(value) is np.ndarray:
            levels = levels_of(value)
            if levels:
                found[name] = levels
        elif type(value) is tuple and any(type(v) is np.ndarray for v in value):
            levels = _union([levels_of(v) for v in value])
            if levels:
                found[name] = levels
    return found


# --------------------------------------------------------------------------- levels
def open_level(size: int) -> int:
    """Open a vmap level of ``size`` samples; returns its number."""
    level = next(_level_numbers)
    if not state.levels:
        state.sizes, state.arrays = {}, {}
    state.levels = (*state.levels, level)
    state.sizes[level] = size
    engine.state.vmapping = len(state.levels)
    return level


def close_level(level: int) -> None:
    """Close the innermost level (``level``)."""
    assert state.levels and state.levels[-1] == level
    state.levels = state.levels[:-1]
    engine.state.vmapping = len(state.levels)
    if not state.levels:
        state.sizes, state.arrays = {}, {}


class physical:
    """Ops run on the arrays as they are, not through the rules: inside a rule, and for a
    backward sweep (which works on the arrays the forward recorded)."""

    def __enter__(self) -> None:
        self.saved = engine.state.vmapping
        engine.state.vmapping = 0

    def __exit__(self, *exc: Any) -> None:
        engine.state.vmapping = self.saved


def _run(op: ops.Op, *inputs: Any) -> Tensor:
    """Run ``op`` on the arrays as they are (recorded), inside a rule."""
    with physical():
        return engine.apply(op, *inputs)


def dispatch(op: ops.Op, *inputs: Any) -> Tensor:
    """Run ``op`` as the function's code would, through the rules again (a rule built from
    other ops uses this): the engine's ``apply`` while the levels are open."""
    return engine.apply(op, *inputs)


def _fresh(op: ops.Op, **settings: Any) -> ops.Op:
    """A copy of ``op`` with new ``settings`` (its axes past the batch axes, say) and
    nothing saved from a forward."""
    new = copy.copy(op)
    new.saved = None
    for name, value in settings.items():
        setattr(new, name, value)
    return new


# --------------------------------------------------------------------------- layouts
def _sizes(levels: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(state.sizes[level] for level in levels)


def _logical_ndim(value: Any) -> int:
    return np.ndim(value._data if isinstance(value, Tensor) else value) - len(levels_of(value))


def lift(value: Any, levels: tuple[int, ...], rank: int | None = None, expand: bool = False):
    """``value`` laid out for an op over ``levels``: one leading axis per level (its size
    where ``value`` is batched over it, else 1, or the level's size with ``expand``), then
    its logical axes, padded in front with 1s to ``rank``. An unbatched value is left as it
    is unless ``expand`` (NumPy's broadcasting lines it up under the batch axes)."""
    own = levels_of(value)
    if not own and not expand:
        return value
    array = value._data if isinstance(value, Tensor) else np.asarray(value)
    logical = array.shape[len(own) :]
    pad = (1,) * (max(rank or 0, len(logical)) - len(logical))
    lead = tuple(state.sizes[lv] if lv in own else 1 for lv in levels)
    shape = (*lead, *pad, *logical)
    full = (*_sizes(levels), *pad, *logical) if expand else shape
    if not isinstance(value, Tensor):
        return np.broadcast_to(array.reshape(shape), full)
    if not own and full != shape:  # only new leading axes: one broadcast makes them (NumPy's)
        return _run(ops.BroadcastTo(full), value)
    out = value if array.shape == shape else _run(ops.Reshape(shape), value)
    if full != shape:
        out = _run(ops.BroadcastTo(full), out)
    return out


# --------------------------------------------------------------------------- in and out
def map_input(x: Tensor, dim: int, level: int) -> Tensor:
    """``x`` mapped over its logical dimension ``dim`` at the new (innermost) ``level``."""
    own = levels_of(x)
    k, r = len(own), x.ndim
    d = dim % r
    order = (*range(k), k + d, *(k + i for i in range(r) if i != d))
    if order != tuple(range(k + r)) or x._requires_grad:  # (a leaf stays the outer one's)
        x = _run(ops.Transpose(order), x)
    if order != tuple(range(k + r)) and not x._data.flags.c_contiguous:
        # each sample's slice laid out as a sample on its own is (row-major), so that a
        # reshape is a view where it would be one outside vmap (in-place changes through it)
        x = _run(ops.Clone("C"), x)
    return batched(x, (*own, level))


def map_output(out: Tensor, level: int, out_dim: int | None) -> Tensor:
    """An output of the function at ``level``, its batch axis moved to ``out_dim`` (an
    output that does not vary over the batch is expanded to it, as PyTorch's)."""
    own = levels_of(out)
    k = len(own)
    if level not in own:
        if out_dim is None:
            return out
        d = normalize_axis(out_dim, out.ndim + 1, "vmap")
        shape = out._data.shape
        unit = _run(ops.Reshape((*shape[: k + d], 1, *shape[k + d :])), out)
        full = (*shape[: k + d], state.sizes[level], *shape[k + d :])
        return like(out, _run(ops.BroadcastTo(full), unit))
    if out_dim is None:
        raise ValueError(
            "vmap: the function returned a tensor that varies over the mapped dimension for "
            "an output whose out_dims is None; give it an out_dim"
        )
    j = own.index(level)
    rest = tuple(lv for lv in own if lv != level)
    d = normalize_axis(out_dim, out.ndim + 1, "vmap")
    logical = list(range(k, k + out.ndim))
    order = (*(i for i in range(k) if i != j), *logical[:d], j, *logical[d:])
    moved = out if order == tuple(range(len(order))) else _run(ops.Transpose(order), out)
    return batched(moved, rest)


def run_batched(
    func: Callable[..., Sequence[Any]],
    inputs: Sequence[Any],
    in_dims: Sequence[int | None],
    size: int,
    out_dims: int | Callable[[int], Sequence[int | None]] | None = 0,
) -> list:
    """``func(*inputs)`` once for a batch of ``size`` samples at a new level: each input
    mapped over its dim (None: shared by every sample), ``func`` returning a flat sequence
    of outputs, each handed back with its batch axis at its out_dim (``out_dims`` may be a
    function of the outputs' count). None outputs pass through (an unused input's gradient).
    What ``tg.func.vmap`` runs, and ``autograd.grad(..., is_grads_batched=True)``."""
    level = open_level(size)
    try:
        picked = [
            x if d is None else map_input(x, d, level) for x, d in zip(inputs, in_dims, strict=True)
        ]
        outputs = list(func(*picked))
        dims = out_dims(len(outputs)) if callable(out_dims) else [out_dims] * len(outputs)
        return [
            None if o is None else map_output(o, level, d)
            for o, d in zip(outputs, dims, strict=True)
        ]
    finally:
        close_level(level)


def expand_to_levels(x: Tensor) -> Tensor:
    """``x`` batched over every open level (a broadcast view where it was not): how ``grad``
    inside vmap keeps each sample's derivative apart."""
    if not state.levels or levels_of(x) == state.levels:
        return x
    return batched(lift(x, state.levels, expand=True), state.levels)


def physical_cotangent(out: Tensor, cotangent: Any) -> Any:
    """A cotangent for ``out`` as the sweep takes it: laid out as ``out``'s array."""
    own = levels_of(out)
    if not own:
        return cotangent
    levels = levels_of(cotangent)
    if set(levels) - set(own):
        raise RuntimeError(
            "vmap: a cotangent varies over a mapped dimension that its output does not; "
            "compute the output inside that vmap"
        )
    array = lift(cotangent, own, expand=True)
    if isinstance(array, Tensor) and array._requires_grad:  # differentiated again: recorded
        return plain(_run(ops.BroadcastTo(out._data.shape), array))
    array = array._data if isinstance(array, Tensor) else np.asarray(array)
    return np.array(np.broadcast_to(array, out._data.shape))
