"""Reverse mode as functions: ``grad``, ``grad_and_value`` and ``vjp``."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from tensorgrad.core.pytree import tree_unflatten
from tensorgrad.core.tensor import Tensor
from tensorgrad.func.common import (
    _argnums,
    _grads_by_argument,
    _result,
    _tensors,
    _vjp_core,
)


def grad_and_value(
    func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False
) -> Callable:
    """A function returning ``(gradient, value)`` of ``func`` (whose output is a 0-d
    tensor) with respect to the arguments ``argnums``; with ``has_aux``, ``func`` returns
    ``(output, aux)`` and this ``(gradient, (value, aux))``."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        numbers = _argnums(argnums, len(args), "grad_and_value")
        flats, specs, output, aux, keep = _vjp_core(
            functools.partial(func, **kwargs), args, numbers, "grad_and_value", has_aux
        )
        if not isinstance(output, Tensor):
            raise RuntimeError(
                "grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got "
                f"{type(output).__name__}"
            )
        if output.ndim != 0:  # PyTorch: a one-element tensor of one dimension is refused too
            raise RuntimeError(
                "grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got "
                f"tensor with {output.ndim} dims. Maybe you wanted to use the vjp or jacrev "
                "APIs instead?"
            )
        ones = np.ones(output.shape, output.dtype)
        grads = _grads_by_argument([output], flats, specs, [ones], keep)
        gradient = grads[0] if isinstance(argnums, int) else grads
        value = _result(output, keep)
        return (gradient, (value, aux)) if has_aux else (gradient, value)

    return wrapper


def grad(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable:
    """A function returning the gradient of ``func`` (a 0-d output) with respect to
    the arguments ``argnums`` (with ``has_aux``: ``(gradient, aux)``)."""
    both = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        gradient, value = both(*args, **kwargs)
        return (gradient, value[1]) if has_aux else gradient

    return wrapper


def vjp(func: Callable, *primals: Any, has_aux: bool = False) -> tuple:
    """``(func(*primals), vjp_fn)``, where ``vjp_fn(cotangents)`` returns ``Jᵀ·cotangents``
    for each primal (a tuple); with ``has_aux`` also ``aux`` after them."""
    numbers = tuple(range(len(primals)))
    flats, specs, output, aux, keep = _vjp_core(func, primals, numbers, "vjp", has_aux)
    out_leaves, out_spec = _tensors(output, "vjp", "the outputs of f")

    def vjp_fn(cotangents: Any) -> tuple:
        leaves, _ = _tensors(cotangents, "vjp_fn", "the cotangents")
        if len(leaves) != len(out_leaves):
            raise RuntimeError(
                f"vjp_fn: expected {len(out_leaves)} cotangents (one per output), got {len(leaves)}"
            )
        for c, o in zip(leaves, out_leaves, strict=True):
            if c.shape != o.shape:
                raise RuntimeError(
                    f"vjp_fn: a cotangent of shape {tuple(c.shape)} for an output of shape "
                    f"{tuple(o.shape)}"
                )
        # Jᵀ·u is differentiable in u too (vjp of vjp): recorded when a cotangent requires grad
        recorded = keep or any(c._requires_grad for c in leaves)
        arrays = [c if recorded else c._data for c in leaves]
        return _grads_by_argument(out_leaves, flats, specs, arrays, recorded)

    result = tree_unflatten([_result(o, keep) for o in out_leaves], out_spec)
    return (result, vjp_fn, aux) if has_aux else (result, vjp_fn)
