"""Forward mode: a tangent carried beside each value, pushed through every op by its JVP.

Inside a dual level (``tg.autograd.forward_ad.dual_level``) a tensor may carry a *tangent*
``ṫ``, an array of its shape: the directional derivative of the tensor along the direction
that the inputs' tangents chose. When an op runs on inputs of which some carry one, the
engine asks the op for its Jacobian-vector product, ``ȯut = J · (ṫ₁, ṫ₂, …)``, and hangs it
on the output: value and derivative travel together, as the lecture's forward table has
them (``v̇3 = v̇1 / v1``). One sweep forward gives one directional derivative of every
output, for the cost of about one more forward pass.

Tangents are raw arrays, like the values the JVP rules work on. A node recorded for reverse
mode keeps its output's tangent too, so that a backward recorded with ``create_graph=True``
carries tangents through the VJPs: that is forward-over-reverse, how ``tg.func.hessian``
gets ``H · v`` from one backward.

Reverse over forward is the other way round: a tangent that reverse mode will differentiate
(``grad`` of a ``jvp``, ``backward()`` of ``unpack_dual(y).tangent``). When grad mode is on
and a primal or a tangent requires grad, the op's JVP rule runs on Tensors instead of arrays,
so that the engine records it as it records a backward with ``create_graph``: the same
formula, written with operators and methods both understand. Such a tangent is a Tensor in a
graph; every other tangent stays an array.

This module reads tensors by duck typing (``_tangent``, ``_data``, ``_view``): the engine
imports it, not the other way round.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from tensorgrad import array_backend, ops
from tensorgrad.core.node import Node
from tensorgrad.grad_mode import state as grad_state


class _State:
    level = 0  #: the open dual level's number (1, 2, …), 0 when none is open
    opened = 0  #: how many levels have been opened so far
    #: weak references to the tensors and nodes given a tangent in the open level: leaving
    #: the level takes their tangents away
    duals: list = []  # noqa: RUF012 (replaced per level)
    #: the op whose JVP rule is running on Tensors (reverse over forward), or "": turning a
    #: tensor that requires grad into an array then would lose its derivative, so it raises
    recorded_rule = ""


state = _State()


def enter_dual_level() -> int:
    """Open a dual level and return its index (PyTorch's numbering starts at 0)."""
    if state.level:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    state.opened += 1
    state.level = state.opened
    state.duals = []
    return state.opened - 1


def exit_dual_level(*, level: int | None = None) -> None:
    """Close the open dual level: every tangent made in it is dropped."""
    if not state.level or (level is not None and level != state.level - 1):
        raise RuntimeError(
            "exit_dual_level: trying to exit a forward AD level that was not the last one "
            "entered (or none is open)"
        )
    for ref in state.duals:
        holder = ref()
        if type(holder) is Node:
            holder.tangent = None
        elif holder is not None:
            holder._tangent = None
    state.duals = []
    state.level = 0


def set_tangent(holder: Any, tangent: Any) -> None:
    """Give a tensor its tangent (None: none) for the rest of the open level."""
    holder._tangent = tangent
    if tangent is not None:
        state.duals.append(weakref.ref(holder))


def laid_out_like(tangent: np.ndarray, primal: np.ndarray) -> np.ndarray:
    """``tangent``, or a copy of it in ``primal``'s memory layout where the two differ (as
    PyTorch's forward AD keeps them): a view's tangent is the same view of its base's, and
    a view that is a view of the primal's memory (a flattened transpose) is a view of the
    tangent's only if the two are laid out alike; otherwise a change made in place through
    the view would not reach the base's tangent."""
    if tangent.strides == primal.strides or tangent.size <= 1:
        return tangent
    relaid = np.empty_like(primal, dtype=tangent.dtype)
    relaid[...] = tangent
    return relaid


def keep_on_node(node: Any, tangent: Any) -> None:
    """A recorded node keeps its output's tangent, for backward with ``create_graph``."""
    node.tangent = tangent
    state.duals.append(weakref.ref(node))


def tangents_of(inputs: Sequence[Any]) -> list | None:
    """The inputs' tangents (None for an input without one), or None when no input has one."""
    tangents = [getattr(x, "_tangent", None) for x in inputs]
    for t in tangents:
        if t is not None:
            return tangents
    return None


def is_recorded(tangent: Any) -> bool:
    """Whether ``tangent`` is a Tensor in a graph (reverse mode may differentiate it)."""
    return getattr(tangent, "_requires_grad", False)


def as_array(tangent: Any) -> Any:
    """A tangent as the array the JVP rules work on (a Tensor's array; None stays None)."""
    return tangent if type(tangent) is np.ndarray else getattr(tangent, "_data", tangent)


def _rule(op: ops.Op) -> Any:
    rule = op.jvp
    if rule is None:
        reason = f" ({op.no_jvp})" if op.no_jvp else ""
        raise RuntimeError(
            f"{op.name}: forward-mode AD is not supported by this op: it has no JVP rule"
            f"{reason}. Compute this derivative in reverse mode (backward, tg.func.vjp or "
            "jacrev), or outside the dual level"
        )
    return rule


def jvp_of(op: ops.Op, tangents: list, out: Any, arrays: Sequence[Any]) -> Any:
    """The tangent of ``op``'s output ``out``, from its inputs' ``arrays`` and ``tangents``;
    None for an output that is not floating point (indices, masks have no tangent)."""
    if getattr(out, "dtype", None) is None or out.dtype.kind not in "fc":
        return None
    tangent = _rule(op)(tangents, out, *arrays)
    return None if tangent is None else _conform(tangent, out, tangents)


def _conform(tangent: Any, out: Any, tangents: Sequence[Any]) -> Any:
    """An array tangent as ``out``'s own: its shape, its dtype, its memory layout."""
    tangent = np.asarray(tangent)
    if tangent.shape != out.shape:
        tangent = np.array(np.broadcast_to(tangent, out.shape))
    elif out.base is None and (tangent.base is not None or any(tangent is t for t in tangents)):
        tangent = np.array(tangent, copy=True)  # a new value gets a tangent of its own
    if out.base is None:
        tangent = laid_out_like(tangent, out)
    if tangent.dtype != out.dtype:
        tangent = array_backend.cast(tangent, out.dtype)  # (float64 beyond float32's: inf)
    return tangent


def needs_recording(inputs: Sequence[Any], tangents: Sequence[Any]) -> bool:
    """Whether an op's tangent must be recorded for reverse mode: grad mode is on and a
    primal or a tangent requires grad."""
    if not grad_state.enabled:
        return False
    return any(getattr(x, "_requires_grad", False) for x in inputs) or any(
        map(is_recorded, tangents)
    )


def recorded_jvp(op: ops.Op, tangents: list, out: Any, values: Sequence[Any]) -> Any:
    """The tangent of ``op``'s output as a Tensor in a graph (reverse over forward): the
    op's JVP rule run on the output and input Tensors (constants stay as they are) and on
    the tangents (Tensors or arrays), recorded by the engine like any other computation.
    Forward mode is suspended meanwhile: the tangent's own ops carry no tangents."""
    if out._data.dtype.kind not in "fc":
        return None
    rule = _rule(op)
    previous, state.recorded_rule = state.recorded_rule, op.name
    try:
        with suspended():
            tangent = rule(tangents, out, *values)
    except (AttributeError, TypeError, ValueError) as exc:
        raise RuntimeError(
            f"{op.name}: its forward-mode rule (JVP) cannot run on Tensors, so its tangent "
            f"cannot be differentiated (reverse mode over forward mode): {exc}"
        ) from exc
    finally:
        state.recorded_rule = previous
    if tangent is None:
        return None
    if not is_recorded(tangent):  # a constant after all: an array, as any other tangent
        return _conform(as_array(tangent), out._data, [as_array(t) for t in tangents])
    if tangent.shape != out.shape:
        tangent = tangent.broadcast_to(out.shape)
    if tangent.dtype != out.dtype:
        tangent = tangent.to(out.dtype)
    return tangent


def propagate(op: ops.Op, out: Any, inputs: Sequence[Any], arrays: Sequence[Any]) -> Any:
    """After ``op`` ran (and was recorded, if it was): give ``out`` its tangent if an input
    has one. Returns it (or None)."""
    tangents = tangents_of(inputs)
    if tangents is None:
        return None
    if needs_recording(inputs, tangents):
        tangent = recorded_jvp(op, tangents, out, inputs)
    else:
        tangent = jvp_of(op, [as_array(t) for t in tangents], out._data, arrays)
    if tangent is not None:
        set_tangent(out, tangent)
    return tangent


def propagate_inplace(
    op: ops.Op, target: Any, old: Any, others: Sequence[Any], arrays: Sequence[Any]
) -> None:
    """After an in-place op changed ``target`` (whose value before was ``old``): its new
    tangent is written into its tangent's memory, so views of it (and the tensor it is a
    view of) see the change, as their values do."""
    tangents = [target._tangent, *(getattr(x, "_tangent", None) for x in others)]
    tangents = [as_array(t) for t in tangents]
    new = jvp_of(op, tangents, target._data, [old, *arrays])
    if new is None and target._tangent is None:
        return
    current = as_array(target._tangent)
    if current is None and target._view is not None:
        current = _view_tangent(target)
    if current is not None and current.flags.writeable:
        if new is None:
            current[...] = 0
        else:
            np.copyto(current, new)
        return
    set_tangent(target, None if new is None else laid_out_like(np.array(new), target._data))


def propagate_inplace_recorded(op: ops.Op, target: Any, old: Any, others: Sequence[Any]) -> None:
    """As :func:`propagate_inplace`, when the new tangent is recorded for reverse mode (see
    :func:`recorded_jvp`); ``old`` stands for ``target``'s value before the change, in the
    graph. The tangent is a new Tensor, not written into the old one's memory: a change
    through a view gives the root a recorded tangent of its own (``engine._write_back``), and
    views made again from a changed root make their tangents again too (``engine.refresh``)."""
    tangents = [target._tangent, *(getattr(x, "_tangent", None) for x in others)]
    set_tangent(target, recorded_jvp(op, tangents, target, [old, *others]))


def _view_tangent(view: Any) -> Any:
    """A tangent for ``view`` that is a view of its root's (a zero one given to the root if
    it had none): an in-place change through the view then reaches the root's tangent."""
    root = view._view.root
    if root._tangent is None:
        set_tangent(root, np.zeros_like(root._data))
    tangent = root._tangent
    for view_op in view._view.ops:
        tangent = ops.replay(view_op, tangent)
    set_tangent(view, tangent)
    return tangent


class suspended:
    """Run without forward mode (a custom Function's forward, whose tangent is its ``jvp``)."""

    def __enter__(self) -> None:
        self._level, state.level = state.level, 0

    def __exit__(self, *exc: object) -> None:
        state.level = self._level
