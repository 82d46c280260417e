"""Whole Jacobians and Hessians: ``jacrev`` (a VJP per output element), ``jacfwd`` (a JVP per
input element, batched by vmap) and ``hessian`` (forward over reverse)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from tensorgrad.autograd.functional import jacobian_rows
from tensorgrad.core import batching
from tensorgrad.core.functions import stack
from tensorgrad.core.pytree import tree_flatten, tree_unflatten
from tensorgrad.core.tensor import Tensor
from tensorgrad.func.common import (
    _argnums,
    _check_randomness,
    _grads,
    _replace,
    _split_aux,
    _tensors,
    _vjp_core,
)
from tensorgrad.func.forward import jvp
from tensorgrad.func.vmap import vmap


def _one_hots(shape: tuple[int, ...], dtype: Any) -> Any:
    """The unit vectors of a tensor's space, one per element, in C order."""
    size = int(np.prod(shape, dtype=np.int64))
    eye = np.eye(size, dtype=dtype)
    return (row.reshape(shape) for row in eye)


def _assemble(columns: list, out_shape: tuple, in_shape: tuple, out_axis_first: bool) -> Any:
    """Stack derivative slices into the Jacobian's shape ``out_shape + in_shape``."""
    if not columns:
        zeros = np.zeros(out_shape + in_shape)
        return Tensor(zeros)
    if out_axis_first:  # rows: one per output element, each of the input's shape
        return stack(columns).reshape(out_shape + in_shape)
    return stack(columns, -1).reshape(out_shape + in_shape)  # columns, one per input element


def jacrev(
    func: Callable,
    argnums: int | tuple[int, ...] = 0,
    *,
    has_aux: bool = False,
    chunk_size: int | None = None,
) -> Callable:
    """A function returning the Jacobian of ``func`` by reverse mode (shape ``output.shape +
    input.shape``): the VJPs of every output element's unit cotangent, as one backward sweep
    vmap-ed over that basis (``chunk_size`` of them at a time, as PyTorch's), or with
    ``BATCHED_JACOBIANS = False`` one backward per output element."""
    if chunk_size is not None and chunk_size < 1:
        raise ValueError("jacrev: chunk_size should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        numbers = _argnums(argnums, len(args), "jacrev")
        flats, specs, output, aux, keep = _vjp_core(
            functools.partial(func, **kwargs), args, numbers, "jacrev", has_aux
        )
        out_leaves, out_spec = _tensors(output, "jacrev", "the outputs of f")
        inputs = [x for flat in flats for x in flat]
        rows = None
        # one sweep per row, on the arrays, inside vmap (the graph holds the batch's arrays,
        # which the sweep on tensors would take for one sample's) and where an outer
        # transform differentiates the Jacobian again (its graph then holds no batched ops)
        if BATCHED_JACOBIANS and not batching.state.levels and not keep:
            rows = jacobian_rows(out_leaves, inputs, chunk_size, keep)
        per_output = []
        for k, o in enumerate(out_leaves):
            if rows is not None:
                blocks = iter(
                    r.reshape(*o.shape, *x.shape) for r, x in zip(rows[k], inputs, strict=True)
                )
            else:
                blocks = iter(_rows_one_by_one(out_leaves, o, inputs, keep))
            per_arg = [
                tree_unflatten([next(blocks) for _ in flat], spec)
                for flat, spec in zip(flats, specs, strict=True)
            ]
            per_output.append(per_arg[0] if isinstance(argnums, int) else tuple(per_arg))
        jac = tree_unflatten(per_output, out_spec)
        return (jac, aux) if has_aux else jac

    return wrapper


def _rows_one_by_one(out_leaves: list, o: Tensor, inputs: list, keep: bool) -> list:
    """The Jacobian blocks of output ``o``, one backward sweep per element of it."""
    rows = []
    for k in range(o.numel()):
        onehot = np.zeros(o.numel(), o.dtype)
        onehot[k] = 1
        cotangents = [
            onehot.reshape(o.shape) if other is o else np.zeros(other.shape, other.dtype)
            for other in out_leaves
        ]
        rows.append(_grads(out_leaves, inputs, cotangents, keep))
    return [
        _assemble([r[j] for r in rows], tuple(o.shape), tuple(x.shape), True)
        for j, x in enumerate(inputs)
    ]


#: jacfwd's columns as one vmap-ed JVP over all the basis directions of an input (one
#: batched forward pass), and jacrev's rows as one vmap-ed VJP over the output's basis,
#: instead of one pass per direction. Off: ``BATCHED_JACOBIANS = False``.
BATCHED_JACOBIANS = True


def _batched_columns(func, args, kwargs, numbers, leaves_per_arg, columns, randomness) -> Any:
    """Fill ``columns[(i, j)]`` with a tuple (the tangents of every output, each stacked
    over the directions) for each differentiated input; return the output."""
    output = None
    for i, (leaves, _) in enumerate(leaves_per_arg):
        for j, x in enumerate(leaves):
            size = int(np.prod(x.shape, dtype=np.int64))
            if not size:
                continue
            basis = Tensor(np.eye(size, dtype=x.dtype).reshape(size, *x.shape))

            def column(direction: Tensor, i: int = i, j: int = j) -> tuple:
                tangents = tuple(
                    tree_unflatten(
                        [
                            direction if (i2, j2) == (i, j) else Tensor(np.zeros_like(y._data))
                            for j2, y in enumerate(lv)
                        ],
                        sp,
                    )
                    for i2, (lv, sp) in enumerate(leaves_per_arg)
                )

                def call(*picked: Any) -> Any:
                    return func(*_replace(args, numbers, picked), **kwargs)

                value, slope = jvp(call, tuple(args[a] for a in numbers), tangents)
                return (*tree_flatten(value)[0], *tree_flatten(slope)[0])

            stacked = vmap(column, randomness=randomness)(basis)
            half = len(stacked) // 2
            columns[(i, j)] = tuple(stacked[half:])
            if output is None:
                value = func(*args, **kwargs)
                output = value
    return output


def _batched_block(stacked: tuple, k: int, out_shape: tuple, in_shape: tuple) -> Tensor:
    """The Jacobian block of output ``k`` from its tangents stacked over the directions."""
    column = stacked[k]  # (directions, *out_shape)
    return column.reshape(-1, *out_shape).movedim(0, -1).reshape(*out_shape, *in_shape)


def jacfwd(
    func: Callable,
    argnums: int | tuple[int, ...] = 0,
    has_aux: bool = False,
    *,
    randomness: str = "error",
) -> Callable:
    """A function returning the Jacobian of ``func`` by forward mode: one JVP per input
    element (shape ``output.shape + input.shape``)."""
    _check_randomness(randomness, "jacfwd")

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        numbers = _argnums(argnums, len(args), "jacfwd")
        leaves_per_arg = [_tensors(args[a], "jacfwd", "the differentiated inputs") for a in numbers]
        columns: dict[tuple[int, int], list] = {}
        output = aux = None
        if BATCHED_JACOBIANS and not has_aux:
            output = _batched_columns(
                func, args, kwargs, numbers, leaves_per_arg, columns, randomness
            )
        for i, (leaves, _) in enumerate(leaves_per_arg):
            for j, x in enumerate(leaves):
                if (i, j) in columns:
                    continue
                cols = columns.setdefault((i, j), [])
                for direction in _one_hots(tuple(x.shape), x.dtype):

                    def call(*picked: Any) -> Any:
                        return func(*_replace(args, numbers, picked), **kwargs)

                    tangents = tuple(
                        tree_unflatten(
                            [
                                Tensor(direction if (i2, j2) == (i, j) else np.zeros_like(y._data))
                                for j2, y in enumerate(lv)
                            ],
                            sp,
                        )
                        for i2, (lv, sp) in enumerate(leaves_per_arg)
                    )
                    picked = tuple(args[a] for a in numbers)
                    result = jvp(call, picked, tangents, has_aux=has_aux)
                    output, slope = result[0], result[1]
                    if has_aux:
                        aux = result[2]
                    cols.append(tree_flatten(slope)[0])
        if output is None:  # no input elements at all: one plain call for the shapes
            result = func(*args, **kwargs)
            output, aux = _split_aux(result, has_aux, "jacfwd")
        out_leaves, out_spec = _tensors(output, "jacfwd", "the outputs of f")
        per_output = []
        for k, o in enumerate(out_leaves):
            per_arg = []
            for i, (leaves, spec) in enumerate(leaves_per_arg):
                blocks = [
                    _batched_block(columns[(i, j)], k, tuple(o.shape), tuple(x.shape))
                    if type(columns.get((i, j))) is tuple
                    else _assemble(
                        [c[k] for c in columns.get((i, j), [])],
                        tuple(o.shape),
                        tuple(x.shape),
                        False,
                    )
                    for j, x in enumerate(leaves)
                ]
                per_arg.append(tree_unflatten(blocks, spec))
            per_output.append(per_arg[0] if isinstance(argnums, int) else tuple(per_arg))
        jac = tree_unflatten(per_output, out_spec)
        return (jac, aux) if has_aux else jac

    return wrapper


def hessian(func: Callable, argnums: int | tuple[int, ...] = 0) -> Callable:
    """The Hessian of ``func``, forward over reverse: ``jacfwd(jacrev(func))``. Each column is
    one backward recorded with tangents: ``H·e_j`` in one forward-and-backward pass."""
    return jacfwd(jacrev(func, argnums), argnums)
