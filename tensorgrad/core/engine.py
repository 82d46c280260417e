"""The recording engine: running ops on tensors, and remembering what ran.

This is the internal API the rest of tensorgrad builds on (``nn``, ``optim`` and ``data``
import it; users need not):

* :func:`apply` runs an op forward on its inputs' arrays and, when a gradient will be
  needed, records it: a *node* of the graph (``core.node.Node``) holds the op, the output
  tensor points to the node, and the node to its inputs' nodes. Edges point backwards
  only, so the graph has no reference cycles and is freed by reference counting.
* :func:`apply_inplace` does the same for an in-place op (``x += y``, ``x[0] = v``), as
  PyTorch does: the tensor's memory is overwritten and the tensor gets a new node whose input
  is its old one, so gradients through both old and new values stay right.
* :func:`wrap` makes a tensor around an array without checks; :func:`grad_array` reads a
  gradient as an array; :func:`mark_changed` tells the engine that arrays were changed in
  place behind its back (an optimizer step).

**Versions.** Every block of memory has one :class:`Version` counter, shared by a tensor, its
views (``x.T``, ``x[0]``) and its ``detach()``-ed copies, as in PyTorch. An in-place change
sets it to the next tick of one clock; a node records the clock's tick when it was made. When
backward reaches a node whose saved inputs (or output) changed after that tick, the gradient
would be computed from wrong values, so it raises instead.

**Views.** A tensor made by an op whose output shares its input's memory (a transpose, a
slice, a reshape) remembers its root tensor and the ops that led there (:class:`ViewOf`).
An in-place change through the view is then written back to the root's graph too (a
``CopyIntoView`` node, PyTorch's ``CopySlices``), and other views of the same root made before
the change are brought up to date before they are next used.
"""

from __future__ import annotations

import functools
import itertools
import operator
import sys
from typing import Any

import numpy as np

from tensorgrad import array_backend, ops
from tensorgrad._native import ieee
from tensorgrad.core import anomaly, dtype_policy, forward
from tensorgrad.core.forward import state as forward_state
from tensorgrad.core.node import Node
from tensorgrad.grad_mode import enable_grad
from tensorgrad.grad_mode import state as grad_state

#: The Tensor class, bound by :func:`register_tensor_type` when ``core.tensor`` is imported
#: (this module is imported first, so it cannot import the class itself).
Tensor: Any = None
#: Tensor and its subclasses: the types whose instances are graph leaves, not nodes
TENSOR_TYPES: set[type] = set()
#: the same, less vmap's batched tensors: an op on these alone runs as it is
UNBATCHED_TYPES: set[type] = set()
#: vmap's batching (``core.batching``, which imports this module, sets them): an op or an
#: in-place op with a batched operand goes there; None back means nothing was batched
batched_apply: Any = None
batched_apply_inplace: Any = None
#: and for a method that reads values (:func:`reads_values`), or a NumPy function of values
batched_method: Any = None
batched_values: Any = None


def reads_values(method: Any) -> Any:
    """Mark a method that computes from its tensors' values with NumPy rather than through
    ops (a sort's indices, a mask of signs, a NaN test): inside vmap it runs once per sample
    (``core.batching``), since a batch's array is not one sample's."""

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if state.vmapping:
            return batched_method(method, args, kwargs)
        return method(*args, **kwargs)

    return wrapper


#: One clock for the order of events: each recorded node and each in-place change takes the
#: next tick. A node's inputs were made before it, so the backward sweep takes nodes newest
#: first; a saved value is stale when its memory's last change is newer than the node.
clock = itertools.count(1)


class Version:
    """The version counter of a block of memory: the tick of its latest in-place change (the
    class attribute's 0 until the first one; no ``__init__``, so making one is cheap)."""

    tick = 0


class _State:
    latest_change = 0  #: the tick of the latest in-place change to any tensor
    #: whether views may need a look before use: an in-place op has given a tensor a new
    #: node, or a view of a tensor that requires grad was made under no_grad
    rebased = False
    anomaly = False  #: anomaly detection (see ``tensorgrad.autograd.anomaly``)
    vmapping = 0  #: how many vmap levels are open (``core.batching``)


state = _State()


class ViewOf:
    """What a view tensor is a view of: its ``root`` (a tensor that is not a view), the
    ``ops`` that make the view from the root, the root's node when the view's own node was
    made, whether gradients were being recorded when the view (or the view it was made
    from) was made, and the memory's version then."""

    __slots__ = ("grad_mode", "ops", "root", "root_node", "tick")

    def __init__(self, root: Any, view_ops: tuple, grad_mode: bool, tick: int) -> None:
        self.root, self.ops, self.grad_mode, self.tick = root, view_ops, grad_mode, tick
        self.root_node = root._node


class GradientPack:
    """The gradients of some outputs of a node with several outputs (a custom Function),
    by output index; packs add up as the sweep collects them."""

    shape: tuple[int, ...] = ()
    dtype = np.dtype(object)

    def __init__(self, grads: dict[int, Any]) -> None:
        self.grads = grads

    def __add__(self, other: GradientPack) -> GradientPack:
        merged = dict(self.grads)
        for index, grad in other.grads.items():
            merged[index] = grad if index not in merged else merged[index] + grad
        return GradientPack(merged)


def register_tensor_type(cls: type) -> None:
    """Tell the engine about the Tensor class (once) and its subclasses (Parameter, ...)."""
    global Tensor
    if Tensor is None:
        Tensor = cls
    TENSOR_TYPES.add(cls)
    if not getattr(cls, "_batched_type", False):
        UNBATCHED_TYPES.add(cls)


# --------------------------------------------------------------------------- tensors
def require_tensors(op: str, **arguments: Any) -> None:
    """PyTorch's functions take tensors, not lists or arrays, as their tensor arguments (its
    TypeError names the argument and its position); None passes (an optional argument)."""
    for position, (name, value) in enumerate(arguments.items(), start=1):
        if value is not None and not isinstance(value, Tensor):
            raise TypeError(
                f"{op}(): argument '{name}' (position {position}) must be Tensor, not "
                f"{type(value).__name__}"
            )


def wrap(data: Any) -> Any:
    """A new leaf tensor around ``data`` (an array), without ``Tensor.__init__``'s checks."""
    t = Tensor.__new__(Tensor)
    t._data = data if type(data) is np.ndarray else np.asarray(data)
    t._grad = None
    t._node = None
    t._versions = Version()
    t._view = None
    t._hooks = None
    t._requires_grad = False
    t._tangent = None
    return t


def node_tensor(node: Node, data: Any) -> Any:
    """A tensor standing for ``node``'s output (or for one of its inputs' nodes): used when
    backward itself is recorded, so that the VJP's graph links to the original one."""
    t = wrap(data)
    t._node = node
    t._versions = node.out_versions
    t._requires_grad = True
    t._tangent = node.tangent  # forward over reverse: VJPs recorded on it carry tangents
    return t


def grad_array(tensor: Any) -> np.ndarray:
    """The array of ``tensor``'s gradient (which must exist). Backward stores a plain
    gradient as the bare array and ``.grad`` wraps it in a Tensor only when someone asks, so
    a training step whose optimizer reads the arrays directly builds no Tensor per
    parameter."""
    grad = tensor._grad
    return grad if type(grad) is np.ndarray else grad._data


#: a tensor's array, as a C-level getter for ``map`` (optimizers read many at once)
data_of = operator.attrgetter("_data")


def mark_changed(tensors: Any) -> None:
    """Note an in-place change to each of ``tensors``, at one tick: graphs that saved their
    old values will refuse to use them."""
    tick = state.latest_change = next(clock)
    for t in tensors:
        t._versions.tick = tick


def named_error(name: str, exc: Exception) -> Exception:
    """The error ``exc`` (from NumPy, usually) with ``name`` in front, as a built-in type
    (a ValueError as ``array_backend.ShapeError``, PyTorch's RuntimeError)."""
    message = str(exc)
    if not message.startswith(f"{name}:"):
        message = f"{name}: {message}"
    for kind in (IndexError, ValueError, RuntimeError):
        if isinstance(exc, kind):  # a ValueError is PyTorch's RuntimeError too
            return (array_backend.ShapeError if kind is ValueError else kind)(message)
    return TypeError(message)


def as_tensor(value: Any) -> Any:
    """``value`` as a Tensor (returned unchanged when it already is one)."""
    return value if isinstance(value, Tensor) else Tensor(array_backend.as_array(value))


# --------------------------------------------------------------------------- operands
def operand(value: Any) -> Any:
    """An operand of an elementwise op: Tensors as they are, numbers as weak Python scalars,
    arrays and lists as arrays; anything else NotImplemented (so Python tries the other
    operand's reflected operator)."""
    if isinstance(value, Tensor) or type(value) in (float, int, bool):
        return value
    if isinstance(value, (np.generic, complex)):
        return array_backend.scalar_operand(value)
    if isinstance(value, int):  # a subclass (an IntEnum, x.size): as a plain number
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, (np.ndarray, list, tuple)):
        return array_backend.as_array(value)
    return NotImplemented


def binary(op_type: type[ops.Op], x: Any, y: Any) -> Any:
    """``op_type()(x, y)`` with PyTorch's dtype promotion: where NumPy would pick another
    dtype (an int tensor times a float, a 0-d float64 tensor with a float32 one), the
    operands are cast to PyTorch's result type first; division of integers is float."""
    x, y = operand(x), operand(y)
    if x is NotImplemented or y is NotImplemented:
        return NotImplemented
    ax = x._data if isinstance(x, Tensor) else x
    ay = y._data if isinstance(y, Tensor) else y
    if array_backend.needs_promotion(ax, ay) or (op_type is ops.Div and _integral(ax, ay)):
        if op_type is ops.Sub:  # before the cast, which would hide a bool from Sub's refusal
            ops.Sub.refuse_bools("sub", ax, ay)
        dtype = array_backend.result_type(ax, ay)
        if op_type is ops.Div and dtype.kind != "f":
            dtype = array_backend.DEFAULT_FLOAT
        # only where NumPy would choose otherwise; its ``power`` has no bool loop and picks
        # int8 for a bool tensor and a Python int, where result_type says int64
        if dtype != np.result_type(ax, ay) or op_type is ops.Pow:
            x, y = _cast(x, dtype), _cast(y, dtype)
    return apply(op_type(), x, y)


def _integral(x: Any, y: Any) -> bool:
    return all(
        (v.dtype.kind != "f") if isinstance(v, np.ndarray) else not isinstance(v, float)
        for v in (x, y)
    )


def _cast(value: Any, dtype: np.dtype) -> Any:
    """An array operand in ``dtype`` (a Python number stays a weak scalar)."""
    if isinstance(value, Tensor):
        return value if value.dtype == dtype else value.astype(dtype)
    if isinstance(value, np.ndarray) and value.dtype != dtype:
        return value.astype(dtype)
    return value


# --------------------------------------------------------------------------- recording
def apply(op: ops.Op, *inputs: Any) -> Any:
    """Run ``op`` forward on the inputs' arrays, then record it if a gradient will be needed.

    Inputs are Tensors or constants (numbers, arrays, None). Recording happens only after
    the forward succeeded, so a failed op leaves no trace. Every op of every model runs
    through here.
    """
    if op.dtypes:  # the op's declared dtype policy, for a first input that is not float
        first = inputs[0]
        if isinstance(first, Tensor) and first._data.dtype.kind != "f":
            inputs = (dtype_policy.enforce(op.dtypes, op.name, first), *inputs[1:])
    if state.vmapping:  # inside vmap: a batched operand or setting makes it another op
        out = batched_apply(op, inputs)  # (core.batching; None: nothing was batched)
        if out is not None:
            return out
    tensors_only = UNBATCHED_TYPES.issuperset(map(type, inputs))  # the usual case: no constants
    if tensors_only:
        arrays = [x._data for x in inputs]
    else:
        arrays = [x._data if isinstance(x, Tensor) else x for x in inputs]
    quiet = ieee.enter()  # IEEE's inf and NaN, without NumPy's RuntimeWarnings (PyTorch's)
    try:
        data = op.forward(*arrays)
    except (ValueError, IndexError, TypeError) as exc:
        raise named_error(op.name, exc) from exc
    finally:
        ieee.leave(quiet)
    out = wrap(data)
    if type(data) is np.ndarray and data.base is not None:
        _adopt_view(out, op, inputs)
    if state.anomaly:
        anomaly.check_forward(op, out, inputs)
    node = None
    if grad_state.enabled:
        if state.rebased:
            refresh_views(inputs)
        if tensors_only:
            needs = [x._requires_grad for x in inputs]
        else:
            needs = [isinstance(x, Tensor) and x._requires_grad for x in inputs]
        if True in needs:
            node = record(op, out, inputs, arrays, needs, tensors_only)
    if forward_state.level:  # after recording: a recorded JVP may read the output's node
        quiet = ieee.enter()  # the JVP's inf and NaN, silently too
        try:
            tangent = forward.propagate(op, out, inputs, arrays)
        finally:
            ieee.leave(quiet)
        if tangent is not None and node is not None:
            forward.keep_on_node(node, tangent)
    return out


def record(
    op: ops.Op, out: Any, inputs: Any, arrays: list, needs: list, tensors_only: bool = False
) -> Node:
    """Make a node of ``op``'s call and give it to ``out``: link it to its inputs' nodes (or
    to leaf tensors; None for constants) and keep the inputs' arrays for backward. (Each
    input's version counter is its parent's: a leaf's own, or the one a node's output had.)

    The node takes the clock's next tick: newer than its inputs' nodes and than every
    in-place change so far.
    """
    if tensors_only:
        parents = [x._node or x for x in inputs]
    else:
        parents = [(x._node or x) if isinstance(x, Tensor) else None for x in inputs]
    op.needs_input_grad = needs
    node = Node(op, parents, arrays, out._data, out._versions, next(clock))
    if state.anomaly:
        node.trace = anomaly.creation_site()
    out._node = node
    out._requires_grad = True
    return node


# --------------------------------------------------------------------------- what is saved
def input_versions(node: Node) -> list:
    """The version counters of ``node``'s inputs, for the check that they did not change
    after it was recorded: each parent's (a leaf's own, a node's output's), unless the node
    keeps its own (an in-place op that copied the value it overwrote)."""
    if node.in_versions is not None:
        return node.in_versions
    return [
        None if p is None else p._versions if type(p) in TENSOR_TYPES else p.out_versions
        for p in node.parents
    ]


def _adopt_view(out: Any, op: ops.Op, inputs: Any) -> None:
    """``out`` shares memory with an input: share that input's version counter and, for a
    one-input op (a transpose, a slice), remember how ``out`` is a view of its root."""
    memory = out._data.base
    for x in inputs:
        if isinstance(x, Tensor):
            array = x._data
            if (array.base if array.base is not None else array) is memory:
                out._versions = x._versions
                if len(inputs) == 1:
                    view = x._view
                    root, chain = (view.root, (*view.ops, op)) if view else (x, (op,))
                    grad_mode = grad_state.enabled and (view is None or view.grad_mode)
                    out._view = ViewOf(root, chain, grad_mode, x._versions.tick)
                    if not grad_mode and root._requires_grad:
                        state.rebased = True  # see refresh: it must be looked at
                return


def refresh(t: Any, strict: bool = True) -> None:
    """Bring view ``t`` up to date if its root got a new node (an in-place change to the
    root or through another view) since the view's own node was made: its node is made
    again from the root's current one, so gradients see the change (PyTorch regenerates a
    view's ``grad_fn`` the same way). Every way into the graph goes through here first: an
    op's inputs, the roots and inputs of backward, ``grad_fn``, ``requires_grad``, hooks.

    A view made under no_grad is not part of the graph; once its memory has changed, it
    cannot be used with grad mode on (``strict``) when its root requires grad, as in
    PyTorch: whether the change should reach the gradient is ambiguous."""
    view = t._view
    if view is None:
        return
    if not view.grad_mode:
        if strict and view.root._requires_grad and t._versions.tick != view.tick:
            raise RuntimeError(
                "a view was created in no_grad mode and its base (or the view) has been "
                "modified in place since; using it with grad mode enabled is ambiguous and "
                "refused: make the view outside no_grad, use it under no_grad, or clone() it"
            )
        return
    if view.root._node is view.root_node:
        return
    with enable_grad():
        fresh = view.root
        for view_op in view.ops:
            fresh = ops.replay(view_op, fresh)
    _move_retained(t, fresh._node)
    t._node, t._requires_grad = fresh._node, fresh._requires_grad
    view.root_node = view.root._node
    if forward.is_recorded(fresh._tangent):  # a recorded tangent is made again the same way
        forward.set_tangent(t, fresh._tangent)


def _move_retained(t: Any, node: Node | None) -> None:
    """``t`` gets ``node`` as its node: if it ``retain_grad()``-ed, its ``.grad`` is from now
    on the gradient of its new value (PyTorch's rule), not the old one's as well."""
    old = t._node
    if old is not None and old.retained is not None and node is not None:
        node.retained, old.retained = old.retained, None


def refresh_views(inputs: Any) -> None:
    """:func:`refresh` each tensor among ``inputs``."""
    for x in inputs:
        if isinstance(x, Tensor) and x._view is not None:
            refresh(x)


# --------------------------------------------------------------------------- in place
def _leaf_error(name: str, what: str) -> RuntimeError:
    return RuntimeError(
        f"{name}: {what} that requires grad is being used in an in-place operation; do it "
        "under tg.no_grad() (as optimizers do), or write it out of place (x = x + y)"
    )


def apply_inplace(op: ops.Op, target: Any, *others: Any) -> Any:
    """``target ← op(target, *others)`` in ``target``'s own memory, recorded as PyTorch does.

    Outside ``no_grad``, a leaf that requires grad (a parameter) and views of one cannot be
    changed in place. When a gradient will be needed, ``target`` gets ``op`` as its new node,
    whose first input is the node ``target`` had (its old value, copied first if ``op``'s
    backward reads it); a change made through a view is written back to its root's graph.
    """
    if state.vmapping:
        done = batched_apply_inplace(op, target, others)
        if done is not None:
            return done
    name = f"{op.name}_"
    view = target._view
    if grad_state.enabled and state.rebased:
        refresh_views((target, *others))
    others_need = any(isinstance(x, Tensor) and x._requires_grad for x in others)
    recording = grad_state.enabled and (target._requires_grad or others_need)
    no_grad_view = view is not None and not view.grad_mode
    if grad_state.enabled and no_grad_view and (view.root._requires_grad or others_need):
        raise RuntimeError(
            f"{name}: a view was created in no_grad mode and is being modified in place "
            "with grad mode enabled; whether the change should be recorded is ambiguous: "
            "make the view and the change both under no_grad, or both outside it"
        )
    if grad_state.enabled and target._requires_grad and target._node is None:
        raise _leaf_error(name, "a leaf Tensor")
    if recording and view is not None:
        root = view.root
        if root._requires_grad and root._node is None:
            raise _leaf_error(name, "a view of a leaf Tensor")
    if not target._data.flags.writeable:
        raise _read_only_error(name, target._data)
    arrays = [x._data if isinstance(x, Tensor) else x for x in others]
    needs = [
        target._requires_grad,
        *(isinstance(x, Tensor) and x._requires_grad for x in others),
    ]
    # the old value, kept for backward: a copy, as the change overwrites it, if it is read
    old = target._data.copy() if recording and op.reads_input(0, needs) else target._data
    dual = forward_state.level and forward.tangents_of((target, *others)) is not None
    if dual and old is target._data:  # the JVP may read it too
        old = target._data.copy()
    recorded_dual = dual and forward.needs_recording(
        (target, *others), forward.tangents_of((target, *others))
    )
    if op.batching == "elementwise":
        _check_not_grown(name, target._data.shape, arrays)
    quiet = ieee.enter()
    try:
        op.forward_inplace(target._data, *arrays)
    except TypeError as exc:
        if "cast" in str(exc):
            try:  # shapes that do not broadcast are PyTorch's first error, before the dtypes'
                np.broadcast_shapes(target._data.shape, *(np.shape(a) for a in arrays))
            except ValueError as shapes:
                raise named_error(name, shapes) from exc
            raise RuntimeError(
                f"{name}: the result type cannot be cast to the tensor's type {target.dtype} "
                "in place"
            ) from exc
        raise named_error(name, exc) from exc
    except (ValueError, IndexError) as exc:
        raise named_error(name, exc) from exc
    finally:
        ieee.leave(quiet)
    mark_changed((target,))
    if dual and not recorded_dual:
        quiet = ieee.enter()
        try:
            forward.propagate_inplace(op, target, old, others, arrays)
        finally:
            ieee.leave(quiet)
    elif recorded_dual and not recording:  # only a tangent requires grad: old is a constant
        forward.propagate_inplace_recorded(op, target, old, others)
    if recording:
        state.rebased = True
        previous = _stand_in(target, old)
        node = record(op, target, (previous, *others), [old, *arrays], needs)
        if recorded_dual:
            forward.propagate_inplace_recorded(op, target, previous, others)
        if dual and target._tangent is not None:
            tangent = target._tangent  # later changes are not this value's: a copy
            forward.keep_on_node(node, tangent if forward.is_recorded(tangent) else tangent.copy())
        if old is not target._data:  # input 0 is a private copy: its own counter, not the node's
            node.in_versions = [
                previous._versions,
                *(x._versions if isinstance(x, Tensor) else None for x in others),
            ]
        if op.uses_inputs:
            _mark_overwritten(node, target, others)
        _move_retained(previous, node)
        if view is not None:
            _write_back(target, view, recorded_dual)
    return target


def _check_not_grown(name: str, shape: tuple[int, ...], operands: list) -> None:
    """An elementwise change in place may broadcast its operands to the target's shape, never
    the target to a larger one (NumPy would let a 0-d target take a 1-element operand)."""
    try:
        broadcast = np.broadcast_shapes(shape, *(np.shape(a) for a in operands))
    except ValueError:
        return  # the op's own error names the shapes
    if broadcast != shape:
        raise RuntimeError(
            f"{name}: output with shape {list(shape)} doesn't match the broadcast shape "
            f"{list(broadcast)}"
        )


#: The version counter of an operand that the in-place change it took part in overwrote
#: (``y.mul_(y)``, ``y.mul_(y[0])``): always newer than any node, so backward refuses to read it.
_OVERWRITTEN = Version()
_OVERWRITTEN.tick = sys.maxsize


def _mark_overwritten(node: Node, target: Any, others: tuple) -> None:
    """An operand in ``target``'s memory (it shares the version counter) was overwritten by
    the in-place op itself, after the op read it and before its backward will: mark it
    stale, as PyTorch's version check does, so that backward raises instead of reading new
    values."""
    for i, x in enumerate(others, 1):
        if isinstance(x, Tensor) and x._versions is target._versions:  # (if read: see sweep)
            if node.in_versions is None:  # derived from the parents until now: keep them
                node.in_versions = input_versions(node)
            node.in_versions[i] = _OVERWRITTEN
            state.latest_change = next(clock)  # newer than node: backward checks its versions


def _read_only_error(name: str, array: np.ndarray) -> RuntimeError:
    if any(s == 0 and n > 1 for n, s in zip(array.shape, array.strides)):
        return RuntimeError(
            f"{name}: more than one element of the tensor refers to the same memory (an "
            "expand()-ed or broadcast tensor), so it cannot be changed in place; clone() it first"
        )
    if 0 in array.strides:
        return RuntimeError(
            f"{name}: the tensor is part of an expand()-ed tensor, which is read-only (NumPy's "
            "broadcast arrays are); change the tensor it was expanded from, or clone() it"
        )
    return RuntimeError(
        f"{name}: the tensor's memory is read-only (it wraps a read-only array); clone() it first"
    )


def _stand_in(t: Any, data: np.ndarray) -> Any:
    """A tensor for ``t``'s value before an in-place change: ``t``'s node, and ``data`` (the
    same memory, or a private copy with a counter of its own)."""
    s = wrap(data)
    s._node, s._requires_grad = t._node, t._requires_grad
    if data is t._data:
        s._versions = t._versions
    return s


def _write_back(target: Any, view: ViewOf, recorded_dual: bool = False) -> None:
    """After an in-place change to ``target``, a view, give its root a ``CopyIntoView`` node:
    the root with the view's region replaced by ``target``'s new value.

    ``target`` itself is then a view of the root's new value, like every other view of the
    root: its next use makes its node again from the root's (:func:`refresh`), so that what
    uses the view afterwards and what uses the root share one path back, as in PyTorch."""
    root = view.root
    op = ops.CopyIntoView(view.ops)
    stand_in = _stand_in(root, root._data)
    node = record(
        op, root, (stand_in, target), [root._data, target._data], [root._requires_grad, True]
    )
    _move_retained(stand_in, node)
    if recorded_dual:  # the root's tangent, recorded too: its region replaced by the view's
        tangents = [root._tangent, target._tangent]
        forward.set_tangent(root, forward.recorded_jvp(op, tangents, root, [stand_in, target]))


def inplace_setitem(target: Any, index: Any, value: Any) -> None:
    """``target[index] = value``, recorded when a gradient will be needed."""
    try:
        apply_inplace(ops.SetItem(index), target, value)
    except RuntimeError:
        # PyTorch indexes before it looks at the target: a bad index is its IndexError
        # even where the change itself would be refused (a view of a leaf, say)
        try:
            target._data[index]
        except IndexError as exc:
            raise named_error("setitem", exc) from exc
        raise
