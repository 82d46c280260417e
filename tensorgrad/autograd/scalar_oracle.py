"""Check gradients against the scalar engine: every element, against ``tensorgrad.scalar``.

:func:`check_with_scalar_engine` runs ``fn`` once on float64 tensors, then replays the
recorded graph op by op on NumPy object arrays of :class:`tensorgrad.scalar.Value`, through
each op's ``scalar_forward``: by default the op's own ``forward`` (``np.exp`` on an object
array calls ``Value.exp``, ``np.matmul`` uses ``+`` and ``*``), so the scalar engine
differentiates the very forward code whose hand-written VJP is under test. An op whose forward
cannot run on Values declares its reference beside its forward, as a ``scalar_forward``
method built from the values' operations (``Log1p.scalar_forward`` is ``np.log(1 + x)``).

The reports and the float64 preparation of the checked tensors are those of the
finite-difference checks (``tensorgrad.autograd.finite_differences``). See
``docs/gradcheck.md``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from tensorgrad import ops
from tensorgrad.autograd.check_problem import (
    GradcheckError,
    GradcheckReport,
    _close,
    _fail,
    _named,
    _Problem,
    _weights,
    _worst,
)
from tensorgrad.core.engine import TENSOR_TYPES
from tensorgrad.core.tensor import Tensor

__all__ = ["SCALAR_FORWARDS", "check_with_scalar_engine"]


def _declared_scalar_forwards() -> dict[type[ops.Op], Callable[..., Any]]:
    """``op type -> its scalar_forward`` for every op class that declares one of its own."""
    found: dict[type[ops.Op], Callable[..., Any]] = {}
    stack = [ops.Op]
    while stack:
        for sub in stack.pop().__subclasses__():
            if sub not in found:
                stack.append(sub)
                if "scalar_forward" in sub.__dict__:
                    found[sub] = sub.scalar_forward
    return found


#: The built-in ops whose forward cannot run on arrays of ``Value`` (SciPy's erf,
#: ``np.isfinite``, ``np.log1p``, ``conjugate`` inside ``ndarray.var``, a Value exponent,
#: ``sqrt``'s slope at 0, a 0-d value stored into an element), each with its reference:
#: ``op type -> function(op, *inputs)``. Read from the ops' own ``scalar_forward``
#: declarations, where those references live; entries added here are honoured as well.
SCALAR_FORWARDS: dict[type[ops.Op], Callable[..., Any]] = _declared_scalar_forwards()


def check_with_scalar_engine(
    fn: Callable[..., Tensor | Sequence[Tensor]],
    inputs: Tensor | Sequence[Any],
    *,
    params: Iterable[Tensor] | Mapping[str, Tensor] | Any = None,
    atol: float = 1e-9,
    rtol: float = 1e-7,
    seed: int = 0,
    max_elements: int = 20_000,
    scalar_forwards: Mapping[type[ops.Op], Callable[..., Any]] | None = None,
    raise_exception: bool = True,
) -> bool:
    """Compare every gradient of ``fn`` with the scalar engine's, element by element.

    ``fn`` runs once on float64 tensors; its recorded graph is then replayed op by op on
    NumPy object arrays of :class:`tensorgrad.scalar.Value`, through each op's
    ``scalar_forward`` (by default its own ``forward``: ``np.exp`` calls ``Value.exp``,
    ``np.matmul`` uses ``+`` and ``*``), so the scalar engine differentiates the very forward
    code whose hand-written VJP is checked. ``scalar_forwards={OpType: function(op,
    *inputs)}`` overrides an op's reference (for an op you cannot edit). For small inputs
    only (at most ``max_elements`` checked elements): every scalar is a Python object.
    """
    forwards = {**SCALAR_FORWARDS, **(scalar_forwards or {})}
    problem = _Problem(fn, inputs, _named(params), "check_with_scalar_engine")
    total = sum(s.base.size for s in problem.slots)
    if total > max_elements:
        raise ValueError(
            f"check_with_scalar_engine: {total} checked elements, more than max_elements="
            f"{max_elements}; the scalar engine builds one Python object per operation"
        )
    with problem:
        outputs = problem.evaluate()
        weights = _weights(np.random.default_rng(seed), outputs)
        leaves = {id(s.tensor): _values_like(s.base) for s in problem.slots}
        scalar_outputs = _replay(outputs, leaves, forwards)
        try:
            grads = problem.gradients(outputs, weights)
        except GradcheckError as exc:
            return _fail(exc.report, raise_exception)
    from tensorgrad.scalar import Value

    loss = Value(0.0)
    for values, w in zip(scalar_outputs, weights, strict=True):
        for v, wv in zip(np.ravel(values), w.ravel(), strict=True):
            if isinstance(v, Value):
                loss = loss + v * float(wv)
    loss.backward()
    for slot, g in zip(problem.slots, grads, strict=True):
        reference = np.vectorize(lambda v: v.grad, otypes=[float])(leaves[id(slot.tensor)])
        reference = reference.reshape(slot.base.shape)
        if not np.all(_close(g, reference, atol, rtol)):
            summary = (
                f"the tensor engine's gradient differs from the scalar engine's "
                f"(atol={atol:g}, rtol={rtol:g})"
            )
            worst = _worst(np.asarray(g, dtype=np.float64), reference, atol, rtol, "scalar engine")
            report = GradcheckReport(
                "scalar engine", slot.name, slot.base.shape, summary, worst=worst
            )
            return _fail(report, raise_exception)
    return True


def _values_like(array: np.ndarray) -> np.ndarray:
    from tensorgrad.scalar import Value

    values = np.empty(array.size, dtype=object)
    values[:] = [Value(float(v)) for v in array.ravel()]
    return values.reshape(array.shape)


def _as_values(result: Any) -> np.ndarray:
    """An op's result as an object array of Values (numbers become constant Values)."""
    from tensorgrad.scalar import Value

    array = np.asarray(result, dtype=object)
    flat = array.ravel()
    if not all(isinstance(v, Value) for v in flat):
        fixed = np.empty(flat.size, dtype=object)
        fixed[:] = [v if isinstance(v, Value) else Value(float(v)) for v in flat]
        array = fixed.reshape(array.shape)
    return array


def _replay(
    outputs: Sequence[Tensor],
    leaves: dict[int, np.ndarray],
    forwards: Mapping[type[ops.Op], Callable[..., Any]],
) -> list[Any]:
    """Run the graph recorded behind ``outputs`` again, node by node, on object arrays of
    Values. Checked leaves take their Values; other leaves and constants their arrays."""
    values: dict[int, Any] = dict(leaves)
    order: list[Any] = []
    visited: set[int] = set()
    stack: list[tuple[Any, bool]] = [
        (o._node, False) for o in reversed(outputs) if o._node is not None
    ]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in visited:
            continue
        visited.add(id(node))
        stack.append((node, True))
        for parent in node.parents:
            is_node = parent is not None and type(parent) not in TENSOR_TYPES
            if is_node and id(parent) not in visited:
                stack.append((parent, False))
    for node in order:
        args = [
            raw if parent is None else values.get(id(parent), raw)
            for parent, raw in zip(node.parents, node.inputs, strict=True)
        ]
        forward = forwards.get(type(node.op))
        op = copy.copy(node.op)  # a forward may keep things in the op (saved): not the graph's
        try:
            result = forward(op, *args) if forward else op.scalar_forward(*args)
        except (TypeError, AttributeError) as exc:
            name = type(node.op).__name__
            raise TypeError(
                f"check_with_scalar_engine: the forward of {node.name} cannot run on arrays of "
                f"scalar Values ({exc}); give {name} a scalar_forward method built from the "
                f"values' operations, or pass scalar_forwards={{{name}: function(op, *inputs)}}"
            ) from exc
        values[id(node)] = _as_values(result)
    return [
        values[id(o._node)] if o._node is not None else values.get(id(o), o._data) for o in outputs
    ]
