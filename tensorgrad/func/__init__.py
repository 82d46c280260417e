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
derivative so the outer one can differentiate it again. ``vmap`` runs a function once on a
whole batch, each op by its batching rule (``tensorgrad.core.batching``).

One module per family: ``reverse`` (grad, grad_and_value, vjp), ``forward`` (jvp,
linearize), ``jacobians`` (jacrev, jacfwd, hessian), ``vmap``, ``functional_call``; what
they share (fresh inputs, the VJP under every reverse transform) is in ``common``.
"""

from tensorgrad.func.forward import jvp, linearize
from tensorgrad.func.functional_call import functional_call
from tensorgrad.func.jacobians import hessian, jacfwd, jacrev
from tensorgrad.func.reverse import grad, grad_and_value, vjp
from tensorgrad.func.vmap import vmap

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
