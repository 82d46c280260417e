"""What the transforms share: argument numbers, fresh inputs for the wrapped function, the
VJP that reverse mode and the Jacobians are built on, and the randomness argument."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tensorgrad import autograd, ops
from tensorgrad.core import batching, engine, forward
from tensorgrad.core.pytree import tree_flatten, tree_unflatten
from tensorgrad.core.tensor import Tensor
from tensorgrad.grad_mode import enable_grad


def _argnums(argnums: int | tuple[int, ...], n_args: int, api: str) -> tuple[int, ...]:
    numbers = argnums if isinstance(argnums, tuple) else (argnums,)
    if not numbers or not all(isinstance(a, int) and not isinstance(a, bool) for a in numbers):
        raise RuntimeError(
            f"{api}: argnums must be an int or a non-empty tuple of ints, got {argnums!r}"
        )
    for a in numbers:
        if not -n_args <= a < n_args:
            raise RuntimeError(f"{api}: Got argnums={a} but only {n_args} positional inputs")
    return tuple(a % n_args for a in numbers)


def _tensors(tree: Any, api: str, what: str) -> tuple[list, Any]:
    leaves, spec = tree_flatten(tree)
    for leaf in leaves:
        if not isinstance(leaf, Tensor):
            raise ValueError(
                f"{api}: expected {what} to be Tensors (or tuples, lists and dicts of them), "
                f"got {type(leaf).__name__}"
            )
    return leaves, spec


def _watched() -> bool:
    """Whether an outer derivative may differentiate what the current transform computes."""
    return bool(forward.state.level)


def _input(x: Tensor) -> Tensor:
    """A fresh input for the wrapped function: differentiable with respect to itself, and
    still tied to ``x`` for an outer transform (its graph, its tangent). Inside vmap, one
    copy per sample (a broadcast view), so that each sample's derivative is its own."""
    x = batching.expand_to_levels(x)
    if x._requires_grad:  # an outer grad is watching x: a view of it, in its graph
        return engine.apply(ops.Reshape(x.shape), x)
    leaf = batching.like(x, engine.wrap(x._data))
    leaf._versions = x._versions
    if x._tangent is not None and forward.state.level:
        forward.set_tangent(leaf, x._tangent)
    if leaf.dtype.kind == "f":
        leaf.requires_grad_(True)
    return leaf


def _result(t: Any, keep: bool) -> Any:
    """An output handed back: still in the graph when an outer transform watches."""
    if not isinstance(t, Tensor) or keep:
        return t
    return t.detach()


def _replace(args: tuple, numbers: tuple[int, ...], new: Sequence[Any]) -> tuple:
    args = list(args)
    for a, value in zip(numbers, new, strict=True):
        args[a] = value
    return tuple(args)


def _split_aux(result: Any, has_aux: bool, api: str) -> tuple[Any, Any]:
    if not has_aux:
        return result, None
    if not (isinstance(result, tuple) and len(result) == 2):
        raise RuntimeError(
            f"{api}(f, ...)(*args): output of function f should be a tuple: (output, aux) "
            "if has_aux is True"
        )
    return result


def _vjp_core(func: Callable, args: tuple, numbers: tuple[int, ...], api: str, has_aux: bool):
    """Run ``func`` on fresh inputs for the arguments ``numbers``; return what the
    transforms need: the fresh inputs (flat), their specs, the output and aux."""
    keep = (
        any(
            leaf._requires_grad
            for a in numbers
            for leaf in _tensors(args[a], api, "the differentiated inputs")[0]
        )
        or _watched()
    )
    flats, specs, new = [], [], []
    for a in numbers:
        leaves, spec = _tensors(args[a], api, "the differentiated inputs")
        fresh = [_input(x) for x in leaves]
        flats.append(fresh)
        specs.append(spec)
        new.append(tree_unflatten(fresh, spec))
    with enable_grad():
        result = func(*_replace(args, numbers, new))
    output, aux = _split_aux(result, has_aux, api)
    return flats, specs, output, aux, keep


def _grads(outputs: list, inputs: list, cotangents: list, keep: bool) -> list:
    """The VJP: d(Σ ⟨cotangent, output⟩)/d input, zeros for inputs that do not matter."""
    live = [(o, c) for o, c in zip(outputs, cotangents, strict=True) if o.requires_grad]
    if not live:
        grads = [None] * len(inputs)
    else:  # (inside vmap, autograd.grad runs the sweep on the batch's arrays)
        grads = autograd.grad(
            [o for o, _ in live],
            inputs,
            [c for _, c in live],
            retain_graph=True,
            create_graph=keep,
            allow_unused=True,
        )
    return [
        batching.like(x, Tensor(np.zeros_like(x._data)) if g is None else _result(g, keep))
        for g, x in zip(grads, inputs, strict=True)
    ]


def _grads_by_argument(
    outputs: list, flats: list, specs: list, cotangents: list, keep: bool
) -> tuple:
    """The VJP for each differentiated argument (its tree of tensors), from one backward
    sweep over all their leaves: a sweep per argument would walk the graph once each."""
    leaves = [x for flat in flats for x in flat]
    grads = iter(_grads(outputs, leaves, cotangents, keep))
    return tuple(
        tree_unflatten([next(grads) for _ in flat], spec)
        for flat, spec in zip(flats, specs, strict=True)
    )


def _check_randomness(randomness: str, api: str) -> None:
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(
            f"{api}: Only allowed values for randomness are 'error', 'different', or 'same'. "
            f"Got {randomness}"
        )
