"""The backward sweep, and ``grad`` for gradients that do not touch ``.grad``.

One sweep visits the graph's tensors in reverse topological order (every tensor after all
the tensors computed from it), so a tensor's gradient is complete, summed over every use,
before its op sends it on to the op's inputs. The order comes from the recording clock, one
tick per recorded tensor, through a heap: no separate traversal, and no recursion, so a
chain of a million ops is fine.
"""

from __future__ import annotations

from collections.abc import Sequence
from heapq import heappop, heappush
from sys import getrefcount
from typing import Any

import numpy as np

from tensorgrad import backend
from tensorgrad.grad_mode import enable_grad, no_grad
from tensorgrad.tensor import (
    Tensor,
    _Changes,
    _PostAccumulateGradHooks,  # TEMPORARY (dist branch)
    _wrap,
)

_FREED = (
    "backward: trying to backward through the graph a second time: its saved values were "
    "freed by the first backward. Pass retain_graph=True to the first backward (or tg.grad) "
    "to keep them."
)


def _sole_reference_count() -> int:
    """What ``getrefcount`` says of an array that only one local variable refers to: 2 (the
    variable and the call's argument) up to Python 3.13; 3.14 may pass the argument as a
    borrowed reference, and say 1. Measured here, at a call site shaped like the sweep's, so
    that "nothing else refers to it" is never concluded from a count that means otherwise."""
    probe = np.empty(0)
    return getrefcount(probe)


_SOLE = _sole_reference_count()


def _check_versions(node: Tensor, ctx: Any) -> None:
    """Refuse to differentiate through values that were changed in place after being saved."""
    if ctx.uses_inputs:
        for i, parent in enumerate(ctx.parents):
            if parent is not None and parent._version > node._seq:
                _stale(ctx, f"input {i}", parent)
    if ctx.uses_output and node._version > node._seq:
        _stale(ctx, "output", node)


def _stale(ctx: Any, what: str, tensor: Tensor) -> None:
    raise RuntimeError(
        f"backward: the {what} of {ctx.name} (a tensor of shape {tensor.shape}) was modified "
        f"in place after {ctx.name} saved it; its gradient would be wrong. Make the change "
        "out of place (x = x + 1 instead of x += 1), or after backward."
    )


def _conform(grad: Any, parent: Tensor, ctx: Any, create_graph: bool) -> Any:
    """Give an op's gradient its input's dtype, and check the op got the shape right."""
    if create_graph and not isinstance(grad, Tensor):
        grad = _wrap(np.asarray(grad))
    if grad.shape != parent.shape:
        raise RuntimeError(
            f"backward: {ctx.name} returned a gradient of shape {grad.shape} for an input of "
            f"shape {parent.shape} (a bug in that op's VJP)"
        )
    if grad.dtype != parent.dtype:
        grad = grad.astype(parent.dtype)
    return grad


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


def _accumulate(tensor: Tensor, grad: Any, create_graph: bool, handed_out: set[int]) -> None:
    """Add ``grad`` into ``tensor.grad``: gradients accumulate across backward calls."""
    if create_graph:
        grad = grad if isinstance(grad, Tensor) else _wrap(grad)
        tensor._grad = grad if tensor._grad is None else tensor._grad + grad
        return
    existing = tensor._grad
    if existing is None:
        tensor._grad = _own(grad, handed_out)  # bare: see tensor._grad_array
    elif type(existing) is np.ndarray:  # bare, so ours: owned and writeable
        np.add(existing, grad, out=existing)
    elif existing.requires_grad or not existing._data.flags.writeable:
        tensor._grad = _wrap(existing._data + grad)
    else:
        np.add(existing._data, grad, out=existing._data)


def _seed(root: Tensor, gradient: Any, create_graph: bool, caller: str) -> Any:
    if not isinstance(root, Tensor):
        raise TypeError(f"{caller}: expected a Tensor to differentiate, got {type(root).__name__}")
    if not root.requires_grad:
        raise RuntimeError(
            f"{caller}: the tensor does not require grad (no input with requires_grad=True "
            "led to it, or it was computed under no_grad), so there is nothing to differentiate"
        )
    if gradient is None:
        if root.size != 1:
            raise RuntimeError(
                f"{caller}: a gradient can be created implicitly only for a one-element tensor; "
                f"this one has shape {root.shape}: pass gradient= of that shape"
            )
        dtype = root.dtype
        seed = np.array(1, dtype) if not root.ndim else np.ones(root.shape, dtype)
        return _wrap(seed) if create_graph else seed
    if create_graph and isinstance(gradient, Tensor):
        seed_tensor = gradient
    else:
        array = gradient._data if isinstance(gradient, Tensor) else backend.as_array(gradient)
        seed_tensor = _wrap(np.array(array, dtype=root.dtype, copy=True))
    if seed_tensor.shape != root.shape:
        raise ValueError(
            f"{caller}: gradient has shape {seed_tensor.shape}, "
            f"but the tensor has shape {root.shape}"
        )
    return seed_tensor.astype(root.dtype) if create_graph else seed_tensor._data


def _sweep(
    roots: Sequence[Tensor],
    seeds: Sequence[Any],
    retain_graph: bool,
    create_graph: bool,
    capture: dict[Tensor, Any] | None = None,
) -> None:
    """Propagate ``seeds`` from ``roots`` back through the graph.

    Gradients go into ``.grad`` of leaves (and of tensors that ``retain_grad``), or, when
    ``capture`` is given, only into ``capture`` for the tensors it lists.

    Nodes are taken newest first from a heap keyed by their tick on the recording clock:
    every tensor computed from a node is newer than it, so by the time a node comes off the
    heap all of its gradient has arrived (the order PyTorch's engine uses). Nothing is
    written to ``.grad`` until the whole sweep has succeeded.
    """
    grads: dict[Tensor, Any] = {}
    heap: list[tuple[int, Tensor]] = []
    for root, seed in zip(roots, seeds):
        if root in grads:
            grads[root] = grads[root] + seed
        else:
            grads[root] = seed
            if root._ctx is not None:
                heappush(heap, (-root._seq, root))
    retained: list[tuple[Tensor, Any]] = []
    with enable_grad() if create_graph else no_grad():
        while heap:
            node = heappop(heap)[1]
            grad = grads.pop(node)
            ctx = node._ctx
            if ctx.parents is None:
                raise RuntimeError(_FREED)
            if capture is not None:
                if node in capture:
                    capture[node] = grad
            elif node._retains_grad:
                retained.append((node, grad))
            if _Changes.latest > node._seq:  # something changed in place since node was made
                _check_versions(node, ctx)
            if create_graph:
                values = [p if p is not None else v for p, v in zip(ctx.parents, ctx.inputs)]
                input_grads = ctx.backward(grad, node, *values)
            else:
                # nothing but our ``grad`` refers to it: backward may reuse it
                free = getrefcount(grad) == _SOLE and type(grad) is np.ndarray and grad.base is None
                ctx.grad_is_free = free
                input_grads = ctx.backward(grad, node._data, *ctx.inputs)
                if free:
                    ctx.grad_is_free = False
            for parent, input_grad, needed in zip(ctx.parents, input_grads, ctx.needs_input_grad):
                if needed and input_grad is not None:
                    data = parent._data
                    if (
                        create_graph
                        or input_grad.shape != data.shape
                        or input_grad.dtype != data.dtype
                    ):
                        input_grad = _conform(input_grad, parent, ctx, create_graph)
                    previous = grads.get(parent)
                    if previous is not None:
                        grads[parent] = previous + input_grad
                    else:
                        grads[parent] = input_grad
                        if parent._ctx is not None:  # its first gradient: its turn will come
                            heappush(heap, (-parent._seq, parent))
            grad = input_grads = input_grad = previous = None  # keep the reference counts exact
            if not retain_graph:
                ctx.parents = ctx.inputs = ctx.saved = None
    # what is left in ``grads`` is the leaves' gradients, complete
    handed_out: set[int] = set()
    if capture is not None:
        for tensor in capture:
            grad = grads.get(tensor, capture[tensor])  # a leaf's, or an inner node's from above
            capture[tensor] = grad if grad is None or create_graph else _own(grad, handed_out)
        return
    for node, grad in retained:
        _accumulate(node, grad, create_graph, handed_out)
    for leaf, grad in grads.items():
        if leaf._grad is None and not create_graph:  # the usual case of _accumulate
            leaf._grad = _own(grad, handed_out)  # bare: see tensor._grad_array
        else:
            _accumulate(leaf, grad, create_graph, handed_out)
    # TEMPORARY (dist branch): the lead's engine replaces this call
    if _PostAccumulateGradHooks.registered:
        _run_post_accumulate_grad_hooks(grads, create_graph)


def _run_post_accumulate_grad_hooks(leaves: Any, create_graph: bool) -> None:
    """TEMPORARY (dist branch): call each leaf's post-accumulate-grad hooks, in the order the
    leaves got their gradients, once all ``.grad`` are written (PyTorch calls them during the
    sweep; under no_grad unless ``create_graph``)."""
    with enable_grad() if create_graph else no_grad():
        for leaf in leaves:
            hooks = getattr(leaf, "_post_accumulate_grad_hooks", None)
            if hooks:
                for hook in list(hooks.values()):
                    hook(leaf)


def backward(
    tensors: Sequence[Tensor],
    grad_tensors: Sequence[Any] | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
) -> None:
    """Accumulate the gradients of ``tensors`` (weighted by ``grad_tensors``) into leaves."""
    tensors = list(tensors)
    grad_tensors = list(grad_tensors) if grad_tensors is not None else [None] * len(tensors)
    if len(grad_tensors) != len(tensors):
        raise ValueError(f"backward: got {len(grad_tensors)} gradients for {len(tensors)} tensors")
    if retain_graph is None:
        retain_graph = create_graph
    seeds = [_seed(t, g, create_graph, "backward") for t, g in zip(tensors, grad_tensors)]
    _sweep(tensors, seeds, retain_graph, create_graph)


def grad(
    outputs: Tensor | Sequence[Tensor],
    inputs: Tensor | Sequence[Tensor],
    grad_outputs: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    allow_unused: bool = False,
) -> tuple[Tensor | None, ...]:
    """The gradients of ``outputs`` with respect to ``inputs``, returned, not stored.

    ``.grad`` is left untouched. With ``create_graph=True`` the returned gradients are
    themselves differentiable (for second derivatives and Hessian-vector products).
    """
    outputs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    if grad_outputs is None or isinstance(grad_outputs, Tensor):
        grad_outputs = [grad_outputs] * len(outputs)
    grad_outputs = list(grad_outputs)
    if len(grad_outputs) != len(outputs):
        raise ValueError(f"grad: got {len(grad_outputs)} grad_outputs for {len(outputs)} outputs")
    for i, tensor in enumerate(inputs):
        if not isinstance(tensor, Tensor) or not tensor.requires_grad:
            raise RuntimeError(f"grad: input {i} is not a tensor that requires grad")
    if retain_graph is None:
        retain_graph = create_graph
    seeds = [_seed(t, g, create_graph, "grad") for t, g in zip(outputs, grad_outputs)]
    capture: dict[Tensor, Any] = dict.fromkeys(inputs)
    _sweep(outputs, seeds, retain_graph, create_graph, capture)
    results: list[Tensor | None] = []
    for i, tensor in enumerate(inputs):
        value = capture[tensor]
        if value is None and not allow_unused:
            raise RuntimeError(
                f"grad: input {i} was not used to compute the outputs; pass allow_unused=True "
                "to get None for it"
            )
        results.append(
            None if value is None else value if isinstance(value, Tensor) else _wrap(value)
        )
    return tuple(results)
