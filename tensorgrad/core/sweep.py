"""The backward sweep: gradients from the roots back to the leaves, in one pass.

The sweep visits the graph's nodes in reverse topological order (every node after all the
nodes computed from it), so a node's gradient is complete, summed over every use, before its
op sends it on to the op's inputs. The order comes from the recording clock, one tick per
node, through a heap: no separate traversal, and no recursion, so a chain of a million ops is
fine. ``tensorgrad.autograd`` exposes it as ``backward`` and ``grad``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from heapq import heappop, heappush
from sys import getrefcount
from typing import Any

import numpy as np

from tensorgrad import array_backend
from tensorgrad._native import ieee
from tensorgrad.core import anomaly, engine
from tensorgrad.core.engine import TENSOR_TYPES, node_tensor, state, wrap
from tensorgrad.core.node import Node
from tensorgrad.grad_mode import enable_grad, no_grad

_FREED = (
    "backward: trying to backward through the graph a second time: its saved values were "
    "freed by the first backward. Pass retain_graph=True to the first backward (or tg.grad) "
    "to keep them."
)


# ------------------------------------------------------------------ the free-gradient proof
def _count(array: Any) -> int:
    return getrefcount(array)


def _sole_reference_count() -> int:
    """What ``getrefcount`` says, through a helper like :func:`_is_free`, of an array that
    only one variable of the calling frame refers to (3 up to Python 3.13: the variable, the
    helper's parameter and the call's argument; 3.14 may pass arguments as borrowed
    references and say less). Measured once, at a call shaped like the sweep's, so that
    "nothing else refers to it" is never concluded from a count that means otherwise."""
    probe = np.empty(0)
    return _count(probe)


_SOLE = _sole_reference_count()


def _is_free(grad: Any) -> bool:
    """Whether ``grad`` is a fresh array (not a view) that nothing but the sweep's variable
    refers to: then an op's backward may overwrite it instead of allocating another, as a
    hand-written step does (``d *= mask``). A speed trick that pays in relu and the linear
    chain; reference counting is the proof that no one else sees the array."""
    return getrefcount(grad) == _SOLE and type(grad) is np.ndarray and grad.base is None


#: indexing's VJP added straight into its input's gradient so far (:func:`_add_into`): a
#: split into q, k and v fills one array instead of three zero arrays added up; off: False
ADD_INTO = True


# --------------------------------------------------------------------------- checks
def _check_versions(node: Node) -> None:
    """Refuse to differentiate through values that were changed in place after being saved
    (those that the node's backward reads: see ``Op.reads_input``)."""
    op, seq = node.op, node.seq
    needs = op.needs_input_grad
    if op.uses_inputs:
        for i, versions in enumerate(engine.input_versions(node)):
            if versions is not None and versions.tick > seq and op.reads_input(i, needs):
                _stale(node, f"input {i}", np.shape(node.inputs[i]))
    if node.out_versions.tick > seq and op.reads_output(needs):
        _stale(node, "output", np.shape(node.out))


def _stale(node: Node, what: str, shape: tuple) -> None:
    raise RuntimeError(
        f"backward: the {what} of {node.name} (a tensor of shape {shape}) was modified in "
        f"place after {node.name} saved it; its gradient would be wrong. Make the change out "
        "of place (x = x + 1 instead of x += 1), or after backward."
    )


def _freed(node: Node) -> RuntimeError:
    if node.failed:
        return RuntimeError(
            "backward: an earlier backward through this graph failed after freeing part of "
            f"it ({node.failed}); run the forward again"
        )
    return RuntimeError(_FREED)


def _conform(grad: Any, array: Any, node: Node, create_graph: bool) -> Any:
    """Give an op's gradient its input's dtype, and check the op got the shape right."""
    if type(grad) is engine.GradientPack:
        return grad
    if create_graph and not isinstance(grad, engine.Tensor):
        grad = wrap(np.asarray(grad))
    if grad.shape != array.shape:
        raise RuntimeError(
            f"backward: {node.name} returned a gradient of shape {grad.shape} for an input of "
            f"shape {array.shape} (a bug in that op's VJP)"
        )
    if grad.dtype != array.dtype:
        grad = array_backend.cast(grad, array.dtype)  # (float64 beyond float32's range: inf)
    return grad


# --------------------------------------------------------------------------- gradients stored
def _own(grad: Any, handed_out: set[int]) -> np.ndarray:
    """``grad`` as an array of our own: a copy when it may be shared (a gradient stored in
    ``.grad`` is later changed in place, and an op may hand one array, or views of it, to
    several inputs), or when it is not an array that owns writeable memory (a NumPy scalar,
    a view, a read-only array)."""
    key = id(grad)
    if (
        key in handed_out
        or type(grad) is not np.ndarray
        or grad.base is not None
        or not grad.flags.writeable
    ):
        grad = np.array(grad)
    handed_out.add(key)
    return grad


def _accumulate(tensor: Any, grad: Any, create_graph: bool, handed_out: set[int]) -> None:
    """Add ``grad`` into ``tensor.grad``: gradients accumulate across backward calls."""
    if create_graph:
        grad = grad if isinstance(grad, engine.Tensor) else wrap(grad)
        tensor._grad = grad if tensor._grad is None else tensor._grad + grad
        return
    existing = tensor._grad
    if existing is None:
        tensor._grad = _own(grad, handed_out)  # bare: see engine.grad_array
    elif type(existing) is np.ndarray:  # bare, so ours: owned and writeable
        np.add(existing, grad, out=existing)
    elif existing.requires_grad or not existing._data.flags.writeable:
        tensor._grad = wrap(existing._data + grad)
    else:
        np.add(existing._data, grad, out=existing._data)


# --------------------------------------------------------------------------- hooks
def run_hooks(hooks: list, grad: Any, create_graph: bool) -> Any:
    """Call gradient hooks in turn; one that returns a value replaces the gradient."""
    for hook in hooks:
        value = grad if create_graph or isinstance(grad, engine.Tensor) else wrap(grad)
        result = hook(value)
        if result is not None:
            result = (
                result._data if isinstance(result, engine.Tensor) and not create_graph else result
            )
            if np.shape(result) != np.shape(grad):
                raise RuntimeError(
                    f"backward: a hook returned a gradient of shape {np.shape(result)} for a "
                    f"tensor of shape {np.shape(grad)}"
                )
            grad = result
    return grad


# --------------------------------------------------------------------------- seeds
def seed(root: Any, gradient: Any, create_graph: bool, caller: str) -> Any:
    """The gradient a root starts with: ones for a one-element root, else ``gradient``."""
    if not isinstance(root, engine.Tensor):
        raise TypeError(f"{caller}: expected a Tensor to differentiate, got {type(root).__name__}")
    if not root.requires_grad:  # (which brings a view up to date)
        raise RuntimeError(
            f"{caller}: the tensor does not require grad (no input with requires_grad=True "
            "led to it, or it was computed under no_grad), so there is nothing to differentiate"
        )
    if gradient is None:
        if root._data.size != 1:
            raise RuntimeError(
                f"{caller}: a gradient can be created implicitly only for a one-element tensor; "
                f"this one has shape {root.shape}: pass gradient= of that shape"
            )
        dtype = root.dtype
        ones = np.array(1, dtype) if not root.ndim else np.ones(root.shape, dtype)
        return wrap(ones) if create_graph else ones
    if create_graph and isinstance(gradient, engine.Tensor):
        seed_tensor = gradient
    else:
        array = (
            gradient._data
            if isinstance(gradient, engine.Tensor)
            else array_backend.as_array(gradient)
        )
        seed_tensor = wrap(np.array(array, dtype=root.dtype, copy=True))
    if seed_tensor.shape != root.shape:
        raise ValueError(
            f"{caller}: gradient has shape {seed_tensor.shape}, "
            f"but the tensor has shape {root.shape}"
        )
    return seed_tensor.astype(root.dtype) if create_graph else seed_tensor._data


# --------------------------------------------------------------------------- the sweep
def run(
    roots: Sequence[Any],
    seeds: Sequence[Any],
    retain_graph: bool,
    create_graph: bool,
    capture: dict[Any, Any] | None = None,
) -> None:
    """Propagate ``seeds`` from ``roots`` back through the graph.

    Gradients go into ``.grad`` of leaves (and of tensors that ``retain_grad``), or, when
    ``capture`` is given (keyed by node, or by tensor for leaves), only into ``capture``.
    Nodes are taken newest first from a heap keyed by their tick on the recording clock:
    every node computed from a node is newer than it, so by the time a node comes off the
    heap all of its gradient has arrived (the order PyTorch's engine uses). Nothing is
    written to ``.grad`` until the whole sweep has succeeded.
    """
    grads: dict[Any, Any] = {}
    heap: list[tuple[int, Any]] = []
    for root, root_seed in zip(roots, seeds):
        key = root._node or root
        if key in grads:
            grads[key] = grads[key] + root_seed
        else:
            grads[key] = root_seed
            if root._node is not None:
                heappush(heap, (-key.seq, key))
    retained: list[tuple[Any, Any]] = []
    freed: list[Any] = []
    quiet = ieee.enter()  # the VJPs and the sums of gradients: IEEE's inf and NaN, silently
    try:
        with enable_grad() if create_graph else no_grad():
            while heap:
                node = heappop(heap)[1]
                _visit(node, grads.pop(node), grads, heap, retained, capture, create_graph)
                if not retain_graph:
                    node.parents = node.inputs = node.out = node.op.saved = None
                    freed.append(node)
    except BaseException as exc:
        for node in freed:  # a retry must not blame a "second backward"
            node.failed = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        ieee.leave(quiet)
    _store(grads, retained, capture, create_graph)


def _visit(
    node: Node,
    grad: Any,
    grads: dict[Any, Any],
    heap: list,
    retained: list,
    capture: dict[Any, Any] | None,
    create_graph: bool,
) -> None:
    """Send ``node``'s complete gradient through its op's VJP to the node's inputs."""
    if node.parents is None:
        raise _freed(node)
    if node.hooks is not None:
        grad = run_hooks(node.hooks, grad, create_graph)
    if capture is not None:
        if node in capture:
            capture[node] = grad
    elif node.retained is not None:
        tensor = node.retained()
        if tensor is not None:
            retained.append((tensor, grad))
    if state.latest_change > node.seq:  # something changed in place since node was made
        _check_versions(node)
    op = node.op
    if create_graph:
        values = [
            a if p is None else p if type(p) in TENSOR_TYPES else node_tensor(p, a)
            for p, a in zip(node.parents, node.inputs)
        ]
        input_grads = op.backward(grad, node_tensor(node, node.out), *values)
    else:
        if ADD_INTO and op.adds_into_input and not state.anomaly and _add_into(node, grad, grads):
            return
        free = _is_free(grad)
        op.grad_is_free = free
        input_grads = op.backward(grad, node.out, *node.inputs)
        if free:
            op.grad_is_free = False
    if state.anomaly:
        anomaly.check_backward(node, input_grads)
    for parent, input_grad, needed, array in zip(
        node.parents, input_grads, op.needs_input_grad, node.inputs
    ):
        if needed and input_grad is not None:
            if create_graph or input_grad.shape != array.shape or input_grad.dtype != array.dtype:
                input_grad = _conform(input_grad, array, node, create_graph)
            previous = grads.get(parent)
            if previous is not None:
                grads[parent] = previous + input_grad
            else:
                grads[parent] = input_grad
                if type(parent) not in TENSOR_TYPES:  # a node: its turn will come
                    heappush(heap, (-parent.seq, parent))


def _add_into(node: Node, grad: Any, grads: dict[Any, Any]) -> bool:
    """Speed: hand an op whose VJP touches part of its one input (a slice, a row lookup) the
    input's gradient summed so far, to add its part in place; True when it did. A split into
    q, k and v then fills one array, where each slice's VJP made a zeros array of the whole
    and the sweep added them up. Only for an array that the sweep alone refers to (reference
    counting is the proof, as in :func:`_is_free`)."""
    parent = node.parents[0]
    total = grads.get(parent)
    if (
        total is None
        or type(total) is not np.ndarray
        or type(grad) is not np.ndarray
        or total.base is not None
        or _count(total) != _SOLE + 1  # (the grads dict's reference besides ours)
        or not total.flags.writeable
        or not node.op.needs_input_grad[0]
    ):
        return False
    return node.op.add_into(total, grad)


def _store(
    grads: dict[Any, Any],
    retained: list[tuple[Any, Any]],
    capture: dict[Any, Any] | None,
    create_graph: bool,
) -> None:
    """After the sweep: what is left in ``grads`` is the leaves' gradients, complete."""
    handed_out: set[int] = set()
    if capture is not None:
        for key in capture:
            value = grads.get(key, capture[key])  # a leaf's, or a node's from the sweep
            capture[key] = value if value is None or create_graph else _own(value, handed_out)
        return
    for tensor, grad in retained:
        _accumulate(tensor, grad, create_graph, handed_out)
    posts: list[tuple[Callable[[Any], Any], Any]] = []
    for leaf, grad in grads.items():
        if not leaf._requires_grad:  # no longer (detach_, requires_grad_(False)): PyTorch's rule
            continue
        hooks = leaf._hooks
        if hooks is not None:
            grad = run_hooks([h for kind, h in hooks if kind == "grad"], grad, create_graph)
            posts += [(h, leaf) for kind, h in hooks if kind == "post_accumulate"]
        if leaf._grad is None and not create_graph:  # the usual case of _accumulate
            leaf._grad = _own(grad, handed_out)  # bare: see engine.grad_array
        else:
            _accumulate(leaf, grad, create_graph, handed_out)
    for hook, leaf in posts:
        hook(leaf)
