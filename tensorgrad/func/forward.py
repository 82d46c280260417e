"""Forward mode as functions: ``jvp`` and ``linearize``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tensorgrad.autograd import forward_ad
from tensorgrad.core import batching, forward
from tensorgrad.core.pytree import tree_flatten, tree_unflatten
from tensorgrad.core.tensor import Tensor
from tensorgrad.func.common import (
    _grads,
    _result,
    _split_aux,
    _tensors,
)
from tensorgrad.func.reverse import vjp


def jvp(
    func: Callable,
    primals: tuple,
    tangents: tuple,
    *,
    strict: bool = False,
    has_aux: bool = False,
) -> tuple:
    """``(func(*primals), J·tangents)`` in one forward pass, carrying each tangent beside
    its primal (forward mode). ``primals`` and ``tangents`` are tuples of the same
    structure."""
    if not isinstance(primals, tuple):
        raise RuntimeError(
            "jvp(f, primals, tangents): Expected primals to be a tuple. E.g. it should be "
            "valid to call f(*primals)."
        )
    if not isinstance(tangents, tuple):
        raise RuntimeError(
            "jvp(f, primals, tangents): Expected tangents to be a tuple of the same "
            "structure as primals"
        )
    p_leaves, p_spec = _tensors(primals, "jvp", "primals")
    t_leaves, t_spec = _tensors(tangents, "jvp", "tangents")
    if len(p_leaves) != len(t_leaves) or p_spec != t_spec:
        raise RuntimeError(
            "jvp(f, primals, tangents): Expected primals and tangents to have the same "
            f"python structure, got {len(p_leaves)} primals and {len(t_leaves)} tangents"
        )
    for p, t in zip(p_leaves, t_leaves, strict=True):
        if p.shape != t.shape:
            raise RuntimeError(
                "jvp(f, primals, tangents): Expected primals and tangents to have the same "
                f"shape, got a primal of shape {tuple(p.shape)} and a tangent of shape "
                f"{tuple(t.shape)}"
            )
    if forward.state.level:  # inside another jvp (jacfwd of jacfwd): one level at a time
        return _jvp_by_double_vjp(func, primals, t_leaves, has_aux)
    # an outer reverse transform differentiates the outputs only through the primals or the
    # tangents; otherwise what the function's own transforms recorded inside stays inside
    keep = any(x._requires_grad for x in (*p_leaves, *t_leaves))
    with forward_ad.dual_level():
        duals = [forward_ad.make_dual(p, t) for p, t in zip(p_leaves, t_leaves, strict=True)]
        result = func(*tree_unflatten(duals, p_spec))
        output, aux = _split_aux(result, has_aux, "jvp")
        out_leaves, out_spec = _tensors(output, "jvp", "the outputs of f")
        values, slopes = [], []
        for o in out_leaves:
            primal, tangent = forward_ad.unpack_dual(o)
            values.append(_result(primal, keep))
            slopes.append(
                batching.like(
                    o, Tensor(np.zeros_like(o._data)) if tangent is None else _result(tangent, keep)
                )
            )
    outs = (tree_unflatten(values, out_spec), tree_unflatten(slopes, out_spec))
    return (*outs, aux) if has_aux else outs


def _jvp_by_double_vjp(func: Callable, primals: tuple, t_leaves: list, has_aux: bool) -> tuple:
    """``jvp`` while a dual level is already open (forward mode carries one tangent per
    value, the outer one's): ``J·t`` as the VJP of the VJP. ``u ↦ Jᵀu`` is linear in ``u``,
    so the gradient of ``⟨Jᵀu, t⟩`` with respect to ``u`` is ``J·t``, whatever ``u`` is
    (zeros here). Both backward sweeps are recorded, so the outer level's tangents flow
    through them: two sweeps instead of one forward pass (PyTorch's double-backward trick,
    as ``autograd.functional.jvp`` uses it)."""
    result = vjp(func, *primals, has_aux=has_aux)
    output, pullback = result[0], result[1]
    out_leaves, out_spec = _tensors(output, "jvp", "the outputs of f")
    # the seeds are made in the graph (not leaves): inside vmap a leaf's batch layout would
    # be a copy of the leaf, and the gradient would go to the copy
    seeds = [
        batching.like(o, Tensor(np.zeros_like(o._data), requires_grad=True)) * 1.0
        for o in out_leaves
    ]
    pulled, _ = tree_flatten(pullback(tree_unflatten(seeds, out_spec)))
    total = None
    for g, t in zip(pulled, t_leaves, strict=True):
        term = (g * t).sum()
        total = term if total is None else total + term
    if total is None:  # no primals with elements: J·t is zeros
        jvps = [batching.like(o, Tensor(np.zeros_like(o._data))) for o in out_leaves]
    else:
        jvps = _grads([total], seeds, [np.ones(total.shape, total.dtype)], True)
    outs = (output, tree_unflatten(jvps, out_spec))
    return (*outs, result[2]) if has_aux else outs


def linearize(func: Callable, *primals: Any) -> tuple:
    """``(func(*primals), jvp_fn)``, ``jvp_fn(*tangents)`` giving ``J·tangents`` at the
    primals. Each call is one forward pass with tangents (PyTorch traces the linear map
    once instead: the same values)."""
    output = func(*primals)

    def jvp_fn(*tangents: Any) -> Any:
        return jvp(func, primals, tangents)[1]

    return output, jvp_fn
