"""Derivatives of a whole function at a point, as PyTorch's ``torch.autograd.functional``.

    from tensorgrad.autograd import functional as F
    F.jacobian(f, x)                              # f: one tensor in, one out: a tensor
    F.jacobian(f, (x, y))                         # a tuple per input (per output, if f's is one)
    F.jacobian(f, x, vectorize=True, strategy="forward-mode")   # column by column, forward mode
    F.hessian(f, x), F.vjp(f, x, v), F.jvp(f, x, v), F.hvp(f, x, v), F.vhp(f, x, v)

Signatures, return structures (a tensor where the inputs or outputs were one tensor, a
tuple where they were a tuple), ``strict`` errors and the strategy checks are PyTorch's; the
structure of the code follows ``torch/autograd/functional.py``. Where PyTorch runs the
"double-backward trick" (a JVP as the VJP of a VJP: two backward sweeps) to emulate forward
mode, this module uses tensorgrad's real forward mode instead when it can: ``jvp`` is one
forward pass with tangents (``tg.autograd.forward_ad``) and ``hvp`` one backward recorded
with tangents (forward over reverse). With ``create_graph=True`` (the result must be
differentiable: tangents are raw arrays, not in any graph), with ``strict=True`` (whose
errors speak of the trick's stages) or inside an open dual level (forward levels do not
nest) they fall back to PyTorch's trick, so every flag means what it means in PyTorch.

``vectorize=True`` computes a reverse-mode Jacobian as PyTorch does: one backward sweep
vmap-ed over the outputs' unit cotangents (``tg.func.jacrev``'s path), instead of one sweep
per output element; ``strategy="forward-mode"`` requires it, and ``strict`` refuses it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

from tensorgrad import grad_mode
from tensorgrad.autograd import forward_ad
from tensorgrad.autograd.gradients import grad as _grad
from tensorgrad.core import forward
from tensorgrad.core.functions import cat, stack
from tensorgrad.core.tensor import Tensor

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]


# --------------------------------------------------------------------------- helpers
def _as_tuple_nocheck(x: Any) -> tuple:
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _as_tuple(inp: Any, arg_name: str | None = None, fn_name: str | None = None) -> Any:
    """``(was it a tuple, the tuple of tensors)``; a TypeError naming the bad entry."""
    if arg_name is None and fn_name is None:
        return _as_tuple_nocheck(inp)
    is_inp_tuple = True
    if not isinstance(inp, tuple):
        inp = (inp,)
        is_inp_tuple = False
    for i, el in enumerate(inp):
        if not isinstance(el, Tensor):
            if is_inp_tuple:
                raise TypeError(
                    f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of "
                    f"Tensors but the value at index {i} has type {type(el)}."
                )
            raise TypeError(
                f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of "
                f"Tensors but the given {arg_name} has type {type(el)}."
            )
    return is_inp_tuple, inp


def _tuple_postprocess(res: Any, to_unpack: bool | tuple[bool, bool]) -> Any:
    """Undo :func:`_as_tuple`: a lone tensor where the caller gave (or got) one."""
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _grad_preprocess(inputs: tuple, create_graph: bool, need_graph: bool) -> tuple:
    """Fresh tensor objects for ``func`` to see: views in the caller's graph when it wants
    to differentiate the result (``create_graph``), detached copies otherwise. Always new
    objects, so the inputs are told apart from the same tensors captured by ``func``."""
    res = []
    for inp in inputs:
        if create_graph and inp.requires_grad:
            res.append(inp.view_as(inp))
        else:
            res.append(inp.detach().requires_grad_(need_graph))
    return tuple(res)


def _grad_postprocess(inputs: tuple, create_graph: bool) -> tuple:
    """Hand back results without history unless ``create_graph`` asked for it."""
    if not inputs or isinstance(inputs[0], Tensor):
        return inputs if create_graph else tuple(inp.detach() for inp in inputs)
    return tuple(_grad_postprocess(inp, create_graph) for inp in inputs)


def _validate_v(v: tuple, other: tuple, is_other_tuple: bool) -> None:
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(
                f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}."
            )
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other, strict=True)):
        if el_v.size() != el_other.size():
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(
                f"{prepend}v has invalid size: should be {el_other.size()} but got {el_v.size()}."
            )


def _check_requires_grad(inputs: tuple, input_type: str, strict: bool) -> None:
    """``strict``'s errors: an output that does not require grad, a gradient independent of
    the inputs, a Jacobian or Hessian that is constant."""
    if not strict:
        return
    for i, inp in enumerate(inputs):
        if inp is None:
            raise RuntimeError(
                f"The output of the user-provided function is independent of input {i}."
                " This is not allowed in strict mode."
            )
        if not inp.requires_grad:
            if input_type == "hessian":
                raise RuntimeError(
                    f"The hessian of the user-provided function with respect to input {i}"
                    " is independent of the input. This is not allowed in strict mode."
                    " You should ensure that your function is thrice differentiable and that"
                    " the hessian depends on the inputs."
                )
            if input_type == "jacobian":
                raise RuntimeError(
                    "While computing the hessian, found that the jacobian of the user-provided"
                    f" function with respect to input {i} is independent of the input. This is"
                    " not allowed in strict mode. You should ensure that your function is twice"
                    " differentiable and that the jacobian depends on the inputs (this would be"
                    " violated by a linear function for example)."
                )
            if input_type == "grad_inputs":
                raise RuntimeError(
                    f"The gradient with respect to input {i} is independent of the inputs of "
                    "the user-provided function. This is not allowed in strict mode."
                )
            raise RuntimeError(
                f"Output {i} of the user-provided function does not require gradients."
                " The outputs must be computed in a differentiable manner from the input"
                " when running in strict mode."
            )


def _autograd_grad(
    outputs: tuple,
    inputs: tuple,
    grad_outputs: tuple | None = None,
    create_graph: bool = False,
    retain_graph: bool | None = None,
) -> tuple:
    """``tg.autograd.grad`` that skips outputs which are None or need no grad (their part
    of the VJP is zero), and gives None for inputs nothing depends on."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    live = [
        (out, g)
        for out, g in zip(outputs, grad_outputs, strict=True)
        if out is not None and out.requires_grad
    ]
    if not live:
        return (None,) * len(inputs)
    return _grad(
        [out for out, _ in live],
        list(inputs),
        [g for _, g in live],
        retain_graph=retain_graph,
        create_graph=create_graph,
        allow_unused=True,
    )


def jacobian_rows(outputs: list, inputs: list, chunk_size: int | None, keep: bool) -> list:
    """For each output and each input, the VJPs of the output's unit cotangents stacked,
    shape ``(output.numel(), *input.shape)``: ``grad`` with ``is_grads_batched=True`` over
    that basis, ``chunk_size`` rows at a time, one backward sweep per chunk whose VJPs run
    as batched ops (PyTorch's ``vectorize=True`` and ``jacrev``). ``keep``: the rows stay
    in the graph (an outer transform differentiates them)."""
    sizes = [o.numel() for o in outputs]
    total = sum(sizes)
    offsets = np.cumsum([0, *sizes])
    step = chunk_size or max(total, 1)
    live = [k for k, o in enumerate(outputs) if o.requires_grad]
    chunks = []
    for start in range(0, total, step):
        stop = min(start + step, total)
        bases = []
        for k in live:
            o, lo, hi = outputs[k], offsets[k], offsets[k + 1]
            unit = np.zeros((stop - start, hi - lo), o.dtype)  # this chunk's basis rows
            inside = np.arange(max(start, lo), min(stop, hi))
            unit[inside - start, inside - lo] = 1
            bases.append(Tensor(unit.reshape(stop - start, *o.shape)))
        grads = [None] * len(inputs)
        if live:
            grads = _grad(
                [outputs[k] for k in live],
                inputs,
                bases,
                retain_graph=True,
                create_graph=keep,
                allow_unused=True,
                is_grads_batched=True,
            )
        chunks.append(
            [
                Tensor(np.zeros((stop - start, *x.shape), x.dtype)) if g is None else g
                for g, x in zip(grads, inputs, strict=True)
            ]
        )
    if not chunks:
        return [[Tensor(np.zeros((0, *x.shape), x.dtype)) for x in inputs] for _ in outputs]
    stacked = [
        cat([c[j] for c in chunks]) if len(chunks) > 1 else chunks[0][j] for j in range(len(inputs))
    ]
    return [[s[lo:hi] for s in stacked] for lo, hi in itertools.pairwise(offsets)]


_STAGE_ERRORS = {
    "back": "The output of the user-provided function is independent of input {i}. This is "
    "not allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the "
    "grad_outputs when using the double backward trick to compute forward mode gradients. "
    "This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. "
    "This is not allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry "
    "{i} in the grad_jacobian. This is not allowed in strict mode as it prevents from using "
    "the double backward trick to replace forward mode AD.",
}


def _fill_in_zeros(grads: tuple, refs: tuple, strict: bool, create_graph: bool, stage: str):
    """Zeros (of the reference's shape) for the None gradients, or ``strict``'s error."""
    res = []
    for i, grads_i in enumerate(grads):
        if grads_i is None:
            if strict:
                raise RuntimeError(_STAGE_ERRORS[stage].format(i=i))
            grads_i = Tensor(np.zeros_like(refs[i]._data))
        elif strict and create_graph and not grads_i.requires_grad:
            what = "jacobian" if "double" not in stage else "hessian"
            raise RuntimeError(
                f"The {what} of the user-provided function is independent of input {i}. This "
                "is not allowed in strict mode when create_graph=True."
            )
        res.append(grads_i)
    return tuple(res)


def _ones_for_single(inputs: tuple, api_phrase: str) -> tuple:
    """The default ``v`` where it may be omitted: one ``1`` for a one-element tensor."""
    if len(inputs) != 1 or inputs[0].nelement() != 1:
        raise RuntimeError(
            f"The vector v can only be None if the {api_phrase} is a single Tensor with a "
            "single element."
        )
    return (Tensor(np.ones_like(inputs[0]._data)),)


def _use_forward_mode(create_graph: bool, strict: bool) -> bool:
    """Real forward mode serves unless the caller needs the trick's graph or its errors,
    or a dual level is already open (tensorgrad's levels do not nest)."""
    return not create_graph and not strict and not forward.state.level


def _tangent_or_zeros(tensor: Tensor) -> tuple[Tensor, Tensor]:
    primal, tangent = forward_ad.unpack_dual(tensor)
    if tangent is None:
        tangent = Tensor(np.zeros_like(tensor._data))
    return primal, tangent


# --------------------------------------------------------------------------- vjp, jvp
def vjp(
    func: Callable[..., Any],
    inputs: Any,
    v: Any = None,
    create_graph: bool = False,
    strict: bool = False,
) -> tuple[Any, Any]:
    """``(func(inputs), vᵀ·J)``: the vector-Jacobian product at ``inputs``, one backward.
    ``v`` is shaped like ``func``'s output (may be omitted for a one-element output)."""
    with grad_mode.enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(
            outputs, "outputs of the user-provided function", "vjp"
        )
        _check_requires_grad(outputs, "outputs", strict=strict)
        if v is not None:
            _, v = _as_tuple(v, "v", "vjp")
            v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
            _validate_v(v, outputs, is_outputs_tuple)
        elif len(outputs) != 1 or outputs[0].nelement() != 1:
            raise RuntimeError(
                "The vector v can only be None if the user-provided function returns a single "
                "Tensor with a single element."
            )
    with grad_mode.set_grad_enabled(create_graph or grad_mode.is_grad_enabled()):
        grad_res = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "back")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(
        result, is_inputs_tuple
    )


def jvp(
    func: Callable[..., Any],
    inputs: Any,
    v: Any = None,
    create_graph: bool = False,
    strict: bool = False,
) -> tuple[Any, Any]:
    """``(func(inputs), J·v)``: the Jacobian-vector product at ``inputs``. ``v`` is shaped
    like the inputs (may be omitted for a one-element input). One forward pass with tangents;
    PyTorch's double-backward trick with ``create_graph`` or ``strict`` (see the module)."""
    with grad_mode.enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        if v is not None:
            _, v = _as_tuple(v, "v", "jvp")
            _validate_v(v, inputs, is_inputs_tuple)
        else:
            v = _ones_for_single(inputs, "input to the user-provided function")
        if _use_forward_mode(create_graph, strict):
            with forward_ad.dual_level():
                duals = tuple(
                    forward_ad.make_dual(inp.detach(), t.detach())
                    for inp, t in zip(inputs, v, strict=True)
                )
                outputs = func(*duals)
                is_outputs_tuple, outputs = _as_tuple(
                    outputs, "outputs of the user-provided function", "jvp"
                )
                pairs = [_tangent_or_zeros(out) for out in outputs]
            outputs = tuple(p.detach() for p, _ in pairs)
            result = tuple(t.detach() for _, t in pairs)
            return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(
                result, is_outputs_tuple
            )
        # the double-backward trick: J·v = d/du ⟨Jᵀu, v⟩, the VJP of the (linear) VJP
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(
            outputs, "outputs of the user-provided function", "jvp"
        )
        _check_requires_grad(outputs, "outputs", strict=strict)
        grad_outputs = tuple(
            Tensor(np.zeros_like(out._data), requires_grad=True) for out in outputs
        )
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict=strict)
    with grad_mode.set_grad_enabled(create_graph or grad_mode.is_grad_enabled()):
        grad_res = _autograd_grad(grad_inputs, grad_outputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, outputs, strict, create_graph, "back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(
        result, is_outputs_tuple
    )


# --------------------------------------------------------------------------- jacobian
_BAD_STRATEGY = (
    'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
    'function has more outputs than inputs, "forward-mode" tends to be more performant. '
    'Otherwise, prefer to use "reverse-mode".'
)


def _jacfwd(func: Callable[..., Any], inputs: Any, strict: bool, vectorize: bool) -> Any:
    """The Jacobian by forward mode: one forward pass with tangents per input element."""
    if strict:
        raise RuntimeError(
            "torch.autograd.functional.jacobian: `strict=True` "
            'and `strategy="forward-mode"` are not supported together (yet). '
            "Please either set `strict=False` or "
            '`strategy="reverse-mode"`.'
        )
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    if not vectorize:
        raise NotImplementedError(
            "Computing Jacobian using forward-AD or forward-over-reverse Hessian is"
            "only implemented for `vectorize=True`."
        )
    columns: list[list[list[Tensor]]] = [[] for _ in inputs]  # [input][element][output]
    primal_outs: tuple = ()
    is_outputs_tuple = False
    for j, inp in enumerate(inputs):
        for k in range(inp.nelement()):
            with forward_ad.dual_level():
                duals = []
                for j2, other in enumerate(inputs):
                    direction = np.zeros_like(other._data)
                    if j2 == j:
                        direction.flat[k] = 1
                    duals.append(forward_ad.make_dual(other, direction))
                is_outputs_tuple, dual_outputs = _as_tuple(func(*duals), "outputs")
                pairs = [_tangent_or_zeros(out) for out in dual_outputs]
            primal_outs = tuple(p for p, _ in pairs)
            columns[j].append([t for _, t in pairs])
    if not primal_outs:  # no input element at all: one plain call for the output shapes
        is_outputs_tuple, primal_outs = _as_tuple(func(*inputs), "outputs")
    jacobian_output_input = []
    for i, out in enumerate(primal_outs):
        per_input = []
        for j, inp in enumerate(inputs):
            shape = tuple(out.shape) + tuple(inp.shape)
            if columns[j]:
                jac = stack([column[i] for column in columns[j]], -1).reshape(shape)
            else:
                jac = Tensor(np.zeros(shape, out.dtype))
            per_input.append(jac.detach())
        jacobian_output_input.append(per_input)
    # lists, not tuples, where several inputs or outputs are involved: PyTorch's forward
    # mode returns them so (its reverse mode returns tuples)
    return _tuple_postprocess(jacobian_output_input, (is_outputs_tuple, is_inputs_tuple))


def jacobian(
    func: Callable[..., Any],
    inputs: Any,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    strategy: str = "reverse-mode",
) -> Any:
    """The Jacobian of ``func`` at ``inputs``: for output i and input j a tensor of shape
    ``output_i.shape + input_j.shape``; a lone tensor where both were one tensor, a tuple
    over inputs, or over outputs, or a tuple of tuples (outputs, then inputs).
    ``strategy="reverse-mode"`` (one backward per output element) or ``"forward-mode"``
    (one forward pass with tangents per input element; needs ``vectorize=True``, as in
    PyTorch): forward mode wins when there are fewer inputs than outputs."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError(_BAD_STRATEGY)
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError(
                "torch.autograd.functional.jacobian: `create_graph=True` "
                'and `strategy="forward-mode"` are not supported together (yet). '
                "Please either set `create_graph=False` or "
                '`strategy="reverse-mode"`.'
            )
        return _jacfwd(func, inputs, strict, vectorize)
    with grad_mode.enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(
            outputs, "outputs of the user-provided function", "jacobian"
        )
        _check_requires_grad(outputs, "outputs", strict=strict)
        if vectorize and strict:
            raise RuntimeError(
                "torch.autograd.functional.jacobian: `strict=True` "
                "and `vectorized=True` are not supported together. "
                "Please either set `strict=False` or "
                "`vectorize=False`."
            )
        if vectorize and not create_graph:  # one backward sweep vmap-ed over the basis
            blocks = jacobian_rows(list(outputs), list(inputs), None, False)
            result = tuple(
                tuple(
                    b.reshape(tuple(out.shape) + tuple(x.shape))
                    for b, x in zip(row, inputs, strict=True)
                )
                for row, out in zip(blocks, outputs, strict=True)
            )
            return _tuple_postprocess(result, (is_outputs_tuple, is_inputs_tuple))
        per_output: list[tuple] = []
        for i, out in enumerate(outputs):
            rows: list[list[Tensor]] = [[] for _ in inputs]
            flat = out.reshape(-1)
            for k in range(out.nelement()):
                vj = _autograd_grad(
                    (flat[k],), inputs, retain_graph=True, create_graph=create_graph
                )
                for j, (row, vj_el, inp) in enumerate(zip(rows, vj, inputs, strict=True)):
                    if vj_el is not None:
                        if strict and create_graph and not vj_el.requires_grad:
                            raise RuntimeError(
                                "The jacobian of the user-provided function is independent of "
                                f"input {i}. This is not allowed in strict mode when "
                                "create_graph=True."
                            )
                        row.append(vj_el)
                    else:
                        if strict:
                            raise RuntimeError(
                                f"Output {i} of the user-provided function is independent of "
                                f"input {j}. This is not allowed in strict mode."
                            )
                        row.append(Tensor(np.zeros_like(inp._data)))
            per_output.append(
                tuple(
                    stack(row, 0).reshape(tuple(out.shape) + tuple(inputs[j].shape))
                    if row
                    else Tensor(np.zeros(tuple(out.shape) + tuple(inputs[j].shape), out.dtype))
                    for j, row in enumerate(rows)
                )
            )
        result = _grad_postprocess(tuple(per_output), create_graph)
        return _tuple_postprocess(result, (is_outputs_tuple, is_inputs_tuple))


# --------------------------------------------------------------------------- second order
def _single_output(outputs: Any, fn_name: str, strict: bool) -> tuple:
    is_out_tuple, t_out = _as_tuple(outputs, "outputs of the user-provided function", fn_name)
    _check_requires_grad(t_out, "outputs", strict=strict)
    if is_out_tuple or not isinstance(outputs, Tensor):
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outputs.nelement() != 1:
        raise RuntimeError(
            f"The Tensor returned by the function given to {fn_name} should contain a single "
            "element"
        )
    return t_out


def hessian(
    func: Callable[..., Any],
    inputs: Any,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    outer_jacobian_strategy: str = "reverse-mode",
) -> Any:
    """The Hessian of a one-element ``func``: the Jacobian of its gradient (for inputs i, j a
    tensor of shape ``input_i.shape + input_j.shape``; a tuple of tuples for several
    inputs). ``outer_jacobian_strategy="forward-mode"`` takes that outer Jacobian by forward
    mode over the recorded backward (forward over reverse; needs ``vectorize=True``)."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def ensure_single_output_function(*inp: Tensor) -> Tensor:
        out = func(*inp)
        _single_output(out, "hessian", strict)
        return out.squeeze()

    def jac_func(*inp: Tensor) -> Any:
        if outer_jacobian_strategy == "forward-mode":
            # the inner jacobian must see the duals themselves (a view keeps their tangent)
            inp = tuple(t.requires_grad_(True) for t in inp)
        jac = jacobian(ensure_single_output_function, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        return jac

    res = jacobian(
        jac_func,
        inputs,
        create_graph=create_graph,
        strict=strict,
        vectorize=vectorize,
        strategy=outer_jacobian_strategy,
    )
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


def _hessian_products_prologue(func, inputs, v, create_graph, strict, fn_name):
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
    inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
    if v is not None:
        _, v = _as_tuple(v, "v", fn_name)
        v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
        _validate_v(v, inputs, is_inputs_tuple)
    else:
        v = _ones_for_single(inputs, "input to the user-provided function")
    return is_inputs_tuple, inputs, v


def vhp(
    func: Callable[..., Any],
    inputs: Any,
    v: Any = None,
    create_graph: bool = False,
    strict: bool = False,
) -> tuple[Any, Any]:
    """``(func(inputs), vᵀ·H)`` for a one-element ``func``: the VJP of its gradient (two
    backward sweeps, the second through the first)."""
    with grad_mode.enable_grad():
        is_inputs_tuple, inputs, v = _hessian_products_prologue(
            func, inputs, v, create_graph, strict, "vhp"
        )
        outputs = _single_output(func(*inputs), "vhp", strict)
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
    with grad_mode.set_grad_enabled(create_graph or grad_mode.is_grad_enabled()):
        grad_res = _autograd_grad(jac, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, False), _tuple_postprocess(result, is_inputs_tuple)


def hvp(
    func: Callable[..., Any],
    inputs: Any,
    v: Any = None,
    create_graph: bool = False,
    strict: bool = False,
) -> tuple[Any, Any]:
    """``(func(inputs), H·v)`` for a one-element ``func``. Forward over reverse: the gradient
    is recorded with ``v`` as the inputs' tangent, and ``H·v`` is the gradient's tangent (one
    forward and one backward pass). PyTorch's double-backward trick (three sweeps) with
    ``create_graph`` or ``strict``."""
    with grad_mode.enable_grad():
        if _use_forward_mode(create_graph, strict):
            is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hvp")
            if v is not None:
                _, v = _as_tuple(v, "v", "hvp")
                _validate_v(v, inputs, is_inputs_tuple)
            else:
                v = _ones_for_single(inputs, "input to the user-provided function")
            with forward_ad.dual_level():
                duals = tuple(
                    forward_ad.make_dual(inp.detach().requires_grad_(True), t.detach())
                    for inp, t in zip(inputs, v, strict=True)
                )
                outputs = _single_output(func(*duals), "hvp", strict)
                jac = _autograd_grad(outputs, duals, create_graph=True)
                result = tuple(
                    Tensor(np.zeros_like(inp._data)) if g is None else _tangent_or_zeros(g)[1]
                    for g, inp in zip(jac, inputs, strict=True)
                )
            outputs = tuple(forward_ad.unpack_dual(o)[0].detach() for o in outputs)
            result = tuple(r.detach() for r in result)
            return _tuple_postprocess(outputs, False), _tuple_postprocess(result, is_inputs_tuple)
        is_inputs_tuple, inputs, v = _hessian_products_prologue(
            func, inputs, v, create_graph, strict, "hvp"
        )
        outputs = _single_output(func(*inputs), "hvp", strict)
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        grad_jac = tuple(Tensor(np.zeros_like(inp._data), requires_grad=True) for inp in inputs)
        double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict=strict)
    with grad_mode.set_grad_enabled(create_graph or grad_mode.is_grad_enabled()):
        grad_res = _autograd_grad(double_back, grad_jac, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, False), _tuple_postprocess(result, is_inputs_tuple)
