"""``backward`` and ``grad``: the public entry points to the backward sweep.

They seed the outputs' gradients and hand them to ``tensorgrad.core.sweep``, which does the
work. A module of its own so that the gradient checks (``finite_differences``,
``scalar_oracle``) can call ``grad`` without importing the package that lazily imports them.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from tensorgrad import array_backend
from tensorgrad.core import batching, engine, sweep

__all__ = ["backward", "grad"]


def _as_list(value: Any) -> list[Any]:
    return [value] if isinstance(value, engine.Tensor) else list(value)


def backward(
    tensors: Any,
    grad_tensors: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: Any = None,
) -> None:
    """Accumulate the gradients of ``tensors`` (weighted by ``grad_tensors``) into leaves."""
    if inputs is not None:
        raise NotImplementedError("backward: inputs= is not supported; use tg.autograd.grad")
    tensors = _as_list(tensors)
    grad_tensors = _gradient_list(grad_tensors, len(tensors), "backward", "grad_tensors")
    if retain_graph is None:
        retain_graph = create_graph
    seeds = [sweep.seed(t, g, create_graph, "backward") for t, g in zip(tensors, grad_tensors)]
    sweep.run(tensors, seeds, retain_graph, create_graph)


def grad(
    outputs: Any,
    inputs: Any,
    grad_outputs: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    only_inputs: bool = True,
    allow_unused: bool | None = None,
    is_grads_batched: bool = False,
    materialize_grads: bool = False,
) -> tuple[Any, ...]:
    """The gradients of ``outputs`` with respect to ``inputs``, returned, not stored.

    ``.grad`` is left untouched. With ``create_graph=True`` the returned gradients are
    themselves differentiable (for second derivatives and Hessian-vector products).
    PyTorch's signature: ``only_inputs`` is deprecated and ignored (a FutureWarning when
    False, as PyTorch's; WGAN-GP's gradient penalty passes it). With
    ``is_grads_batched=True`` the first axis of each ``grad_outputs`` tensor is a batch of
    cotangents, and each result gets that axis in front: a batch of VJPs in one sweep.
    """
    if materialize_grads and allow_unused is False:
        raise ValueError(
            "Expected allow_unused to be True or not passed when materialize_grads=True, "
            "but got: allow_unused=False."
        )
    if not only_inputs:
        warnings.warn(
            "only_inputs argument is deprecated and is ignored now (defaults to True). To "
            "accumulate gradient for other parts of the graph, please use "
            "torch.autograd.backward.",
            FutureWarning,
            stacklevel=2,
        )
    outputs = _as_list(outputs)
    inputs = _as_list(inputs)
    grad_outputs = _gradient_list(grad_outputs, len(outputs), "grad", "grad_outputs")
    for i, tensor in enumerate(inputs):
        if not isinstance(tensor, engine.Tensor) or not tensor.requires_grad:
            raise RuntimeError(f"grad: input {i} is not a tensor that requires grad")
    if retain_graph is None:
        retain_graph = create_graph
    allow_unused = materialize_grads if allow_unused is None else allow_unused
    if is_grads_batched:
        return _batched_grads(
            outputs,
            inputs,
            grad_outputs,
            retain_graph,
            create_graph,
            allow_unused,
            materialize_grads,
        )
    if engine.state.vmapping:  # called by the function vmap runs: on the batch's arrays
        return _grad_in_vmap(
            outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
            materialize_grads,
        )  # fmt: skip
    return _sweep(
        outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused, materialize_grads
    )


def _sweep(
    outputs: list,
    inputs: list,
    grad_outputs: list,
    retain_graph: bool,
    create_graph: bool,
    allow_unused: bool,
    materialize_grads: bool,
) -> tuple[Any, ...]:
    """The backward sweep from ``outputs`` to ``inputs``, their gradients captured."""
    seeds = [sweep.seed(t, g, create_graph, "grad") for t, g in zip(outputs, grad_outputs)]
    keys = [t._node or t for t in inputs]
    capture: dict[Any, Any] = dict.fromkeys(keys)
    sweep.run(outputs, seeds, retain_graph, create_graph, capture)
    results: list[Any] = []
    for i, (tensor, key) in enumerate(zip(inputs, keys)):
        value = capture[key]
        if value is None and materialize_grads:
            value = engine.wrap(tensor._data * 0)
        if value is None and not allow_unused:
            raise RuntimeError(
                f"grad: input {i} was not used to compute the outputs; pass allow_unused=True "
                "to get None for it"
            )
        results.append(
            None
            if value is None
            else value
            if isinstance(value, engine.Tensor)
            else engine.wrap(value)
        )
    return tuple(results)


def _batched_grads(
    outputs: list,
    inputs: list,
    grad_outputs: list,
    retain_graph: bool,
    create_graph: bool,
    allow_unused: bool,
    materialize_grads: bool,
) -> tuple[Any, ...]:
    """``is_grads_batched=True``: ``grad`` vmap-ed over the first axis of the cotangents,
    as PyTorch does it. The sweep runs on the graph recorded outside, its VJPs as ops, so
    each batches by its rule: one sweep for the whole batch (``_grad_in_vmap``)."""
    sizes = set()
    for i, (o, g) in enumerate(zip(outputs, grad_outputs, strict=True)):
        if g is None:
            if o.requires_grad:
                raise RuntimeError(
                    "grad: with is_grads_batched=True every output that requires grad needs a "
                    f"batch of gradients in grad_outputs; grad_outputs[{i}] is None"
                )
            continue
        if not isinstance(g, engine.Tensor):
            g = grad_outputs[i] = engine.wrap(array_backend.as_array(g))
        if g.ndim == 0 or tuple(g.shape[1:]) != tuple(o.shape):
            raise RuntimeError(
                "If `is_grads_batched=True`, we interpret the first dimension of each "
                "grad_output as the batch dimension. The sizes of the remaining dimensions "
                "are expected to match the shape of corresponding output, but a mismatch was "
                f"detected: grad_output[{i}] has a shape of {_size(g.shape[1:])} and "
                f"output[{i}] has a shape of {_size(o.shape)}. If you only want some tensors "
                "in `grad_output` to be considered batched, consider using vmap."
            )
        sizes.add(g.shape[0])
    if len(sizes) > 1:
        raise RuntimeError(
            "grad: with is_grads_batched=True every grad_output needs the same batch size "
            f"(its first dimension), got {sorted(sizes)}"
        )
    mapped = [k for k, g in enumerate(grad_outputs) if g is not None]
    if not mapped:  # nothing requires grad: what grad itself says then
        return grad(outputs, inputs, None, retain_graph, create_graph, allow_unused=allow_unused)

    def one_sample(*cotangents: Any) -> tuple[Any, ...]:
        seeds = list(grad_outputs)
        for k, c in zip(mapped, cotangents, strict=True):
            seeds[k] = c
        return grad(
            outputs,
            inputs,
            seeds,
            retain_graph=retain_graph,
            create_graph=create_graph,
            allow_unused=allow_unused,
        )

    cotangents = [grad_outputs[k] for k in mapped]
    results = batching.run_batched(one_sample, cotangents, [0] * len(mapped), sizes.pop(), 0)
    if materialize_grads:  # as PyTorch's: an unused input's zeros are not batched
        results = [
            engine.wrap(x._data * 0) if r is None else r
            for r, x in zip(results, inputs, strict=True)
        ]
    return tuple(results)


def _size(shape: tuple[int, ...]) -> str:
    return str(tuple(shape))


def _grad_in_vmap(
    outputs: list,
    inputs: list,
    grad_outputs: list,
    retain_graph: bool,
    create_graph: bool,
    allow_unused: bool,
    materialize_grads: bool,
) -> tuple[Any, ...]:
    """``grad`` inside ``tg.func.vmap`` (a gradient penalty in a vmapped loss, a ``vjp_fn``
    made outside vmap and called inside): the sweep runs on the batch's arrays, as vmap's
    own ``grad`` does, when every input is mapped over every level the outputs and their
    gradients are; where only the gradients are mapped (a graph recorded outside vmap), the
    sweep's VJPs run as batched ops. (Another mix would sum the samples' gradients, or mix
    them: it is refused.)"""
    options = {
        "retain_graph": True,
        "create_graph": create_graph,
        "allow_unused": allow_unused,
        "materialize_grads": materialize_grads,
    }
    grad_outputs = [  # an array taken out of a batched tensor: that tensor again
        batching.batched(engine.wrap(g), batching.levels_of(g))
        if type(g) is np.ndarray and batching.levels_of(g)
        else g
        for g in grad_outputs
    ]
    out_levels = {lv for o in outputs for lv in batching.levels_of(o)}
    levels = out_levels | {lv for g in grad_outputs for lv in batching.levels_of(g)}
    if not levels:
        with batching.physical():
            return grad(outputs, inputs, grad_outputs, **options)
    if all(set(batching.levels_of(x)) >= levels for x in inputs):
        seeds = []
        for o, g in zip(outputs, grad_outputs, strict=True):
            if g is None:
                if o.numel() != 1:
                    raise RuntimeError(
                        "grad: a gradient can be created implicitly only for a one-element "
                        f"tensor; this one has shape {tuple(o.shape)}: pass grad_outputs"
                    )
                g = np.ones(o.shape, o.dtype)
            seeds.append(batching.physical_cotangent(o, g))
        with batching.physical():
            results = grad([batching.plain(o) for o in outputs], inputs, seeds, **options)
        return tuple(None if r is None else batching.like(x, r) for r, x in zip(results, inputs))
    if not out_levels and not any(batching.levels_of(x) for x in inputs):
        # only the gradients are mapped: the sweep is recorded on tensors (as for
        # create_graph), so that each VJP runs as an op, batched by its rule, the whole batch
        # in one sweep (PyTorch's jacrev, a vjp_fn called inside vmap)
        results = _sweep(
            outputs, inputs, grad_outputs, retain_graph, True, allow_unused, materialize_grads
        )
        return (
            results if create_graph else tuple(None if r is None else r.detach() for r in results)
        )
    raise NotImplementedError(
        "grad inside vmap: the gradient of a mapped output with respect to a tensor that is "
        "not mapped would add up the samples' gradients; differentiate with tg.func.grad or "
        "tg.func.vjp inside the vmap instead, which keeps each sample's gradient apart"
    )


def _gradient_list(value: Any, n: int, caller: str, name: str) -> list[Any]:
    """One gradient per output: None, a tensor or an array stand for one output."""
    if value is None:
        return [None] * n
    if isinstance(value, engine.Tensor) or (
        hasattr(value, "__array__") and not isinstance(value, (list, tuple))
    ):
        value = [value]
    value = list(value)
    if len(value) != n:
        raise ValueError(f"{caller}: got {len(value)} {name} for {n} outputs")
    return value
