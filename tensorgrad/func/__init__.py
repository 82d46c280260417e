"""Derivatives as functions, as PyTorch's ``torch.func`` (and JAX) write them.

    from tensorgrad import func
    func.grad(loss)(w, x, y)                  # ∇_w loss, a function of the same arguments
    func.jvp(f, (x,), (v,))                   # f(x) and J·v, in one forward pass
    func.vjp(f, x)                            # f(x) and a function u ↦ Jᵀ·u
    func.jacfwd(f)(x), func.jacrev(f)(x)      # the Jacobian, column by column or row by row
    func.hessian(f)(x)                        # forward over reverse: jacfwd(jacrev(f))
    func.vmap(func.grad(loss), in_dims=(None, 0, 0))(w, xs, ys)    # per-sample gradients

Reverse mode (``grad``, ``vjp``, ``jacrev``) is one backward sweep per output element;
forward mode (``jvp``, ``jacfwd``) one forward pass per input element, carrying tangents
(``tensorgrad.core.forward``). So ``jacfwd`` wins for few inputs and many outputs,
``jacrev`` for many inputs and few outputs, as the lecture predicts.

Transforms compose: each makes fresh inputs for the function it wraps and, when an outer
transform is watching (an input that requires grad, or an open dual level), records its own
derivative so the outer one can differentiate it again. ``vmap`` maps a function over a
batch dimension by calling it on each slice in turn and stacking the results (no batching
rules yet: docs/forward-mode.md says what that costs).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tensorgrad import array_backend, autograd, ops
from tensorgrad.autograd import forward_ad
from tensorgrad.core import batching, engine, forward
from tensorgrad.core.functions import cat, stack
from tensorgrad.core.pytree import tree_flatten, tree_unflatten
from tensorgrad.core.tensor import Tensor
from tensorgrad.grad_mode import enable_grad

__all__ = [
    "functional_call",
    "grad",
    "grad_and_value",
    "hessian",
    "jacfwd",
    "jacrev",
    "jvp",
    "linearize",
    "vjp",
    "vmap",
]


# --------------------------------------------------------------------------- helpers
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
    else:  # (inside vmap: on the batch's arrays, as the sweep works)
        seeds = [batching.physical_cotangent(o, c) for o, c in live]
        with batching.physical():
            grads = autograd.grad(
                [batching.plain(o) for o, _ in live],
                inputs,
                seeds,
                retain_graph=True,
                create_graph=keep,
                allow_unused=True,
            )
    return [
        batching.like(x, Tensor(np.zeros_like(x._data)) if g is None else _result(g, keep))
        for g, x in zip(grads, inputs, strict=True)
    ]


# --------------------------------------------------------------------------- reverse mode
def grad_and_value(
    func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False
) -> Callable:
    """A function returning ``(gradient, value)`` of ``func`` (whose output is a one-element
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
        if output.numel() != 1:
            raise RuntimeError(
                "grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got "
                f"tensor with {output.ndim} dims. Maybe you wanted to use the vjp or jacrev "
                "APIs instead?"
            )
        ones = np.ones(output.shape, output.dtype)
        grads = [
            tree_unflatten(_grads([output], flat, [ones], keep), spec)
            for flat, spec in zip(flats, specs, strict=True)
        ]
        gradient = grads[0] if isinstance(argnums, int) else tuple(grads)
        value = _result(output, keep)
        return (gradient, (value, aux)) if has_aux else (gradient, value)

    return wrapper


def grad(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable:
    """A function returning the gradient of ``func`` (a one-element output) with respect to
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
        arrays = [c if keep else c._data for c in leaves]
        return tuple(
            tree_unflatten(_grads(out_leaves, flat, arrays, keep), s)
            for flat, s in zip(flats, specs, strict=True)
        )

    result = tree_unflatten([_result(o, keep) for o in out_leaves], out_spec)
    return (result, vjp_fn, aux) if has_aux else (result, vjp_fn)


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
    """A function returning the Jacobian of ``func`` by reverse mode: one VJP per output
    element (shape ``output.shape + input.shape``)."""
    if chunk_size is not None and chunk_size < 1:
        raise ValueError("jacrev: chunk_size should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        numbers = _argnums(argnums, len(args), "jacrev")
        flats, specs, output, aux, keep = _vjp_core(
            functools.partial(func, **kwargs), args, numbers, "jacrev", has_aux
        )
        out_leaves, out_spec = _tensors(output, "jacrev", "the outputs of f")
        per_output = []
        for o in out_leaves:
            rows = [[] for _ in numbers]
            for k in range(o.numel()):
                onehot = np.zeros(o.numel(), o.dtype)
                onehot[k] = 1
                cotangents = [
                    onehot.reshape(o.shape) if other is o else np.zeros(other.shape, other.dtype)
                    for other in out_leaves
                ]
                for i, flat in enumerate(flats):
                    rows[i].append(_grads(out_leaves, flat, cotangents, keep))
            per_arg = []
            for i, flat in enumerate(flats):
                blocks = [
                    _assemble([r[j] for r in rows[i]], tuple(o.shape), tuple(x.shape), True)
                    for j, x in enumerate(flat)
                ]
                per_arg.append(tree_unflatten(blocks, specs[i]))
            per_output.append(per_arg[0] if isinstance(argnums, int) else tuple(per_arg))
        jac = tree_unflatten(per_output, out_spec)
        return (jac, aux) if has_aux else jac

    return wrapper


# --------------------------------------------------------------------------- forward mode
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
    with forward_ad.dual_level():
        duals = [_dual(p, t) for p, t in zip(p_leaves, t_leaves, strict=True)]
        result = func(*tree_unflatten(duals, p_spec))
        output, aux = _split_aux(result, has_aux, "jvp")
        out_leaves, out_spec = _tensors(output, "jvp", "the outputs of f")
        values, slopes = [], []
        for o in out_leaves:
            primal, tangent = forward_ad.unpack_dual(o)
            values.append(primal)
            slopes.append(
                batching.like(o, Tensor(np.zeros_like(o._data)) if tangent is None else tangent)
            )
    outs = (tree_unflatten(values, out_spec), tree_unflatten(slopes, out_spec))
    return (*outs, aux) if has_aux else outs


def _dual(primal: Tensor, tangent: Tensor) -> Tensor:
    """``make_dual``; inside vmap, the primal and the tangent laid out over the same levels
    first (a tangent per sample for a shared primal: jacfwd's basis, batched)."""
    levels = batching.levels_of(primal) + batching.levels_of(tangent)
    if not levels:
        return forward_ad.make_dual(primal, tangent)
    levels = tuple(sorted(set(levels)))
    p, t = (batching.plain(batching.lift(x, levels, expand=True)) for x in (primal, tangent))
    dual = batching.batched(forward_ad.make_dual(p, t), levels)
    forward.set_tangent(dual, dual._tangent)
    return dual


def linearize(func: Callable, *primals: Any) -> tuple:
    """``(func(*primals), jvp_fn)``, ``jvp_fn(*tangents)`` giving ``J·tangents`` at the
    primals. Each call is one forward pass with tangents (PyTorch traces the linear map
    once instead: the same values)."""
    output = func(*primals)

    def jvp_fn(*tangents: Any) -> Any:
        return jvp(func, primals, tangents)[1]

    return output, jvp_fn


#: jacfwd's columns as one vmap-ed JVP over all the basis directions of an input (one
#: batched forward pass), instead of one JVP per direction. Off: ``BATCHED_JACOBIANS = False``.
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


# --------------------------------------------------------------------------- modules, vmap
def functional_call(
    module: Any,
    parameter_and_buffer_dicts: Any,
    args: Any = None,
    kwargs: dict | None = None,
    *,
    tie_weights: bool = True,
    strict: bool = False,
) -> Any:
    """Call ``module`` with some of its parameters and buffers replaced by the tensors in
    ``parameter_and_buffer_dicts`` (a dict of names as ``named_parameters`` gives them, or
    a sequence of such dicts), then put the originals back."""
    dicts = (
        [parameter_and_buffer_dicts]
        if isinstance(parameter_and_buffer_dicts, dict)
        else list(parameter_and_buffer_dicts)
    )
    replacements: dict[str, Any] = {}
    for d in dicts:
        for name in d:
            if name in replacements:
                raise ValueError(
                    f"functional_call: {name} appeared in multiple dictionaries; behavior of "
                    "functional call is ambiguous"
                )
        replacements.update(d)
    known = dict(module.named_parameters(remove_duplicate=False))
    known.update(dict(module.named_buffers(remove_duplicate=False)))
    if tie_weights:  # a tied parameter replaced under one name is replaced under all
        by_id: dict[int, list[str]] = {}
        for name, tensor in known.items():
            by_id.setdefault(id(tensor), []).append(name)
        for name in list(replacements):
            if name in known:
                for alias in by_id[id(known[name])]:
                    replacements.setdefault(alias, replacements[name])
    if strict:
        missing = sorted(set(known) - set(replacements))
        unexpected = sorted(set(replacements) - set(known))
        if missing or unexpected:
            raise RuntimeError(
                "functional_call: Error(s) in reparametrizing for "
                f"{type(module).__name__}: missing keys {missing}, unexpected keys {unexpected}"
            )
    modules = dict(module.named_modules(remove_duplicate=False))
    swapped = []
    try:
        for name, value in replacements.items():
            owner_name, _, attr = name.rpartition(".")
            owner = modules.get(owner_name)
            if owner is None or not hasattr(owner, attr):
                raise AttributeError(
                    f"functional_call: {type(module).__name__} has no parameter or buffer {name!r}"
                )
            swapped.append((owner, attr, owner.__dict__.get(attr)))
            object.__setattr__(owner, attr, value)
        args = () if args is None else args if isinstance(args, tuple) else (args,)
        return module(*args, **(kwargs or {}))
    finally:
        for owner, attr, original in reversed(swapped):
            object.__setattr__(owner, attr, original)


def _check_randomness(randomness: str, api: str) -> None:
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(
            f"{api}: Only allowed values for randomness are 'error', 'different', or 'same'. "
            f"Got {randomness}"
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
    level = batching.open_level(batch)
    try:
        picked = [
            leaf if d is None else batching.map_input(leaf, d, level)
            for leaf, d in zip(leaves, dims, strict=True)
        ]
        with _random_guard(randomness):
            result = func(*tree_unflatten(picked, spec), **kwargs)
        out_leaves, out_spec = tree_flatten(result)
        _only_tensors(out_leaves)
        odims = _out_dims(out_dims, len(out_leaves))
        outs = [batching.map_output(o, level, d) for o, d in zip(out_leaves, odims, strict=True)]
    finally:
        batching.close_level(level)
    return tree_unflatten(outs, out_spec)


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
