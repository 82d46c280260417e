"""``vmap``: a function mapped over a batch dimension of its inputs, by the batching rules of
``tensorgrad.core.batching`` (or once per sample where randomness must differ)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from tensorgrad import array_backend
from tensorgrad.core import batching
from tensorgrad.core.functions import cat, stack
from tensorgrad.core.pytree import tree_flatten, tree_unflatten
from tensorgrad.core.tensor import Tensor
from tensorgrad.func.common import (
    _check_randomness,
)


def _in_dims(in_dims: Any, args: tuple) -> list:
    """``in_dims`` spread over the flattened arguments: one dim (or None) per leaf."""
    if isinstance(in_dims, int) or in_dims is None:
        return [in_dims] * len(tree_flatten(args)[0])
    if not isinstance(in_dims, tuple) or len(in_dims) != len(args):
        raise ValueError(
            f"vmap(f, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the "
            f"structure of `inputs`. in_dims has structure {in_dims!r} but inputs has "
            f"{len(args)} arguments"
        )
    dims = []
    for d, a in zip(in_dims, args, strict=True):
        n = len(tree_flatten(a)[0])
        if isinstance(d, (tuple, list, dict)):
            sub = tree_flatten(d)[0]
            if len(sub) != n:
                raise ValueError(f"vmap: in_dims {d!r} does not match the structure of {a!r}")
            dims += sub
        else:
            dims += [d] * n
    return dims


def vmap(
    func: Callable,
    in_dims: Any = 0,
    out_dims: Any = 0,
    randomness: str = "error",
    *,
    chunk_size: int | None = None,
) -> Callable:
    """``func`` mapped over a dimension of its inputs (``in_dims``: one per argument, None
    for an argument shared by every slice), its outputs stacked along ``out_dims``.
    Composes with ``grad`` and the other transforms: ``vmap(grad(loss), in_dims=(None, 0,
    0))`` gives per-sample gradients.

    ``func`` runs once, on the whole batch: each op it calls runs on the batch's arrays by
    its batching rule (``tensorgrad.core.batching``), an op without one once per sample.
    With ``randomness="different"`` (a fresh draw for every sample) the whole function runs
    once per sample instead."""
    _check_randomness(randomness, "vmap")
    if chunk_size is not None and chunk_size < 1:
        raise ValueError("vmap: chunk_size should be None or greater than 0.")

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        leaves, spec = tree_flatten(args)
        dims = _in_dims(in_dims, args)
        batch = _batch_size(leaves, dims)
        run = _vmap_by_loop if randomness == "different" else _vmap_batched
        step = chunk_size or max(batch, 1)
        if step >= batch:
            return run(func, leaves, spec, dims, batch, out_dims, randomness, kwargs)
        chunks = []
        for start in range(0, batch, step):
            part = slice(start, min(start + step, batch))
            picked = [
                leaf if d is None else leaf[(slice(None),) * (d % leaf.ndim) + (part,)]
                for leaf, d in zip(leaves, dims, strict=True)
            ]
            size = part.stop - part.start
            chunks.append(run(func, picked, spec, dims, size, out_dims, randomness, kwargs))
        flat = [tree_flatten(c) for c in chunks]
        odims = _out_dims(out_dims, len(flat[0][0]))
        joined = [
            column[0] if d is None else cat(column, d)
            for column, d in zip(zip(*(f[0] for f in flat), strict=True), odims, strict=True)
        ]
        return tree_unflatten(joined, flat[0][1])

    return wrapper


def _batch_size(leaves: list, dims: list) -> int:
    """The size of the mapped dimension, checked to be one size for every mapped input."""
    sizes = set()
    for leaf, d in zip(leaves, dims, strict=True):
        if d is None:
            continue
        if not isinstance(leaf, Tensor):
            raise ValueError(
                f"vmap: in_dims {d} is given for an input that is not a Tensor "
                f"({type(leaf).__name__}); use None for it"
            )
        if not -max(leaf.ndim, 1) <= d < max(leaf.ndim, 1) or leaf.ndim == 0:
            raise ValueError(
                f"vmap: Tried to map over dim {d} of an input of shape {tuple(leaf.shape)}, "
                "which has no such dimension"
            )
        sizes.add(leaf.shape[d])
    if not sizes:
        raise ValueError(
            "vmap: at least one input must be a Tensor mapped over a dimension (in_dims not None)"
        )
    if len(sizes) > 1:
        raise ValueError(
            "vmap: Expected all tensors to have the same size in the mapped dimension, "
            f"got sizes {sorted(sizes)} for the mapped dimension"
        )
    return sizes.pop()


def _out_dims(out_dims: Any, n_out: int) -> list:
    odims = (
        [out_dims] * n_out
        if isinstance(out_dims, int) or out_dims is None
        else tree_flatten(out_dims)[0]
    )
    if len(odims) != n_out:
        raise ValueError(
            f"vmap(f, ..., out_dims={out_dims}): out_dims is not compatible with the "
            f"structure of the outputs ({n_out} outputs)"
        )
    return odims


def _only_tensors(outputs: list) -> None:
    for o in outputs:
        if not isinstance(o, Tensor):
            raise ValueError(
                "vmap: `f` must return only Tensors (or tuples, lists and dicts of them), "
                f"got {type(o).__name__}"
            )


def _vmap_batched(func, leaves, spec, dims, batch, out_dims, randomness, kwargs) -> Any:
    """One call of ``func`` on batched inputs (see ``core.batching``)."""
    structure = []

    def flat_call(*picked: Any) -> list:
        with _random_guard(randomness):
            result = func(*tree_unflatten(list(picked), spec), **kwargs)
        out_leaves, out_spec = tree_flatten(result)
        _only_tensors(out_leaves)
        structure.append(out_spec)
        return out_leaves

    outs = batching.run_batched(flat_call, leaves, dims, batch, lambda n: _out_dims(out_dims, n))
    return tree_unflatten(outs, structure[0])


def _vmap_by_loop(func, leaves, spec, dims, batch, out_dims, randomness, kwargs) -> Any:
    """``func`` called once per slice, the results stacked: for ``randomness="different"``,
    where every sample draws its own random numbers."""
    results = []
    with _random_guard(randomness):
        for b in range(batch):
            picked = [
                leaf if d is None else leaf[(slice(None),) * (d % leaf.ndim) + (b,)]
                for leaf, d in zip(leaves, dims, strict=True)
            ]
            results.append(func(*tree_unflatten(picked, spec), **kwargs))
    if not results:
        raise ValueError("vmap: randomness='different' over an empty batch: nothing to run")
    out_leaves_per = [tree_flatten(r) for r in results]
    out_spec = out_leaves_per[0][1]
    n_out = len(out_leaves_per[0][0])
    odims = _out_dims(out_dims, n_out)
    stacked = []
    for k in range(n_out):
        column = [leaves_k[0][k] for leaves_k in out_leaves_per]
        if odims[k] is None:
            stacked.append(column[0])
            continue
        _only_tensors(column)
        stacked.append(stack(column, odims[k]))
    return tree_unflatten(stacked, out_spec)


class _random_guard:
    """Under ``randomness="error"``, a random draw inside vmap raises, as in PyTorch."""

    def __init__(self, randomness: str) -> None:
        self.randomness = randomness

    def __enter__(self) -> None:
        self._previous = array_backend.random_refusal
        if self.randomness == "error":
            array_backend.random_refusal = (
                "vmap: called random operation while in randomness error mode. Please either "
                "use the 'same' or 'different' randomness flags on vmap or perform the "
                "randomness operation out of vmap"
            )

    def __exit__(self, *exc: object) -> None:
        array_backend.random_refusal = self._previous
