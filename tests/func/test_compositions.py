"""Transforms composed in every pairing a ``torch.func`` user writes, in float64: grad of
jvp and jvp of grad, vjp of jvp (in the primal and in the tangent), vjp of vjp (in the
cotangent), jacrev of jacfwd and the reverse, jvp of jvp and jacfwd of jacfwd, vmap of
each, ``forward_ad`` dual tensors under ``backward()``, ``create_graph`` through a dual, and
``autograd.functional.hvp``/``vhp``. Each is checked against the closed-form derivatives of
a small function and, where PyTorch is installed, against ``torch.func`` computing the same
composition.

The function is ``f(x) = Σ sin(x)·x + Σ exp(x/2)·x²``: its gradient is
``cos(x)·x + sin(x) + exp(x/2)·(x²/2 + 2x)``, its Hessian diagonal with
``−sin(x)·x + 2cos(x) + exp(x/2)·(x²/4 + 2x + 2)``.
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorgrad as tg
import tensorgrad.autograd.forward_ad as fwAD
from tensorgrad import func

X = np.array([0.3, 1.2, -0.7, 0.05])
V = np.array([1.0, 0.5, 2.0, -1.5])
U = np.array([0.25, -1.0, 0.5, 3.0])


def f(x):
    return (x.sin() * x).sum() + ((x / 2).exp() * x * x).sum()


def gradient(x):
    return np.cos(x) * x + np.sin(x) + np.exp(x / 2) * (x * x / 2 + 2 * x)


def hessian_diagonal(x):
    return -np.sin(x) * x + 2 * np.cos(x) + np.exp(x / 2) * (x * x / 4 + 2 * x + 2)


def third_diagonal(x):
    """d/dx of the Hessian's diagonal (the third derivative, also diagonal)."""
    return -np.cos(x) * x - 3 * np.sin(x) + np.exp(x / 2) * (x * x / 8 + 1.5 * x + 3)


def t(a, **kwargs):
    return tg.tensor(a, dtype=tg.float64, **kwargs)


def close(got, want):
    np.testing.assert_allclose(np.asarray(got.detach().numpy()), want, rtol=1e-12, atol=1e-12)


HV = hessian_diagonal(X) * V


def test_the_issue_example_grad_of_jvp_is_the_hvp():
    g = lambda x: (x.sin() * x).sum()  # noqa: E731
    x, v = t([0.3, 1.2, -0.7]), t([1.0, 0.5, 2.0])
    forward_over_reverse = func.jvp(func.grad(g), (x,), (v,))[1]
    reverse_over_forward = func.grad(lambda y: func.jvp(g, (y,), (v,))[1])(x)
    want = (-np.sin(x.numpy()) * x.numpy() + 2 * np.cos(x.numpy())) * v.numpy()
    close(forward_over_reverse, want)
    close(reverse_over_forward, want)
    assert not reverse_over_forward.requires_grad
    assert not forward_over_reverse.requires_grad  # nothing outside asked for a graph


def test_grad_of_jvp_and_jvp_of_grad():
    close(func.grad(lambda y: func.jvp(f, (y,), (t(V),))[1])(t(X)), HV)
    close(func.jvp(func.grad(f), (t(X),), (t(V),))[1], HV)


def test_vjp_of_jvp_in_the_primal_and_in_the_tangent():
    # jvp(f)(x, v) = ⟨∇f(x), v⟩: its gradient in x is H·v, in v is ∇f(x)
    _, pullback = func.vjp(lambda x, v: func.jvp(f, (x,), (v,))[1], t(X), t(V))
    dx, dv = pullback(t(2.0))
    close(dx, 2 * HV)
    close(dv, 2 * gradient(X))


def test_a_vector_function_vjp_of_jvp():
    # h(x) = sin(x)·x elementwise: J = diag(h'), jvp = h'(x)·v, its VJP with u in v: h'(x)·u
    h = lambda x: x.sin() * x  # noqa: E731
    slope = np.cos(X) * X + np.sin(X)
    curvature = -np.sin(X) * X + 2 * np.cos(X)
    _, pullback = func.vjp(lambda x, v: func.jvp(h, (x,), (v,))[1], t(X), t(V))
    dx, dv = pullback(t(U))
    close(dx, curvature * V * U)
    close(dv, slope * U)


@pytest.mark.parametrize(
    "outer, inner", [("jacrev", "jacfwd"), ("jacfwd", "jacrev"), ("jacrev", "jacrev")]
)
def test_hessians_by_every_pairing(outer, inner):
    hess = getattr(func, outer)(getattr(func, inner)(f))(t(X))
    close(hess, np.diag(hessian_diagonal(X)))
    close(func.hessian(f)(t(X)), np.diag(hessian_diagonal(X)))


def test_jacrev_of_jacfwd_of_a_vector_function_is_the_second_derivative_tensor():
    h = lambda x: x.sin() * x  # noqa: E731
    second = func.jacrev(func.jacfwd(h))(t(X))  # [i, j, k] = ∂²hᵢ/∂xⱼ∂xₖ
    want = np.zeros((4, 4, 4))
    want[np.arange(4), np.arange(4), np.arange(4)] = -np.sin(X) * X + 2 * np.cos(X)
    close(second, want)


def test_vmap_of_each_composition_equals_a_loop():
    xs = t(np.stack([X, X * 0.5, -X]))
    vs = t(np.stack([V, U, V * 2]))
    rof = func.vmap(lambda x, v: func.grad(lambda y: func.jvp(f, (y,), (v,))[1])(x))(xs, vs)
    fov = func.vmap(lambda x, v: func.jvp(func.grad(f), (x,), (v,))[1])(xs, vs)
    hess = func.vmap(func.jacrev(func.jacfwd(f)))(xs)
    for k in range(3):
        x, v = xs.numpy()[k], vs.numpy()[k]
        close(rof[k], hessian_diagonal(x) * v)
        close(fov[k], hessian_diagonal(x) * v)
        close(hess[k], np.diag(hessian_diagonal(x)))


def test_jvp_of_jvp_and_jacfwd_of_jacfwd():
    # nested forward mode: the inner jvp runs as the VJP of a VJP while the outer level is open
    close(func.jvp(lambda a: func.jvp(f, (a,), (t(V),))[1], (t(X),), (t(U),))[1], HV @ U)
    close(func.jacfwd(func.jacfwd(f))(t(X)), np.diag(hessian_diagonal(X)))
    close(func.jvp(func.jacfwd(f), (t(X),), (t(V),))[1], HV)
    close(func.jacfwd(lambda a: func.jvp(f, (a,), (t(V),))[1])(t(X)), HV)
    h = lambda x: x.sin() * x  # noqa: E731
    second = func.jacfwd(func.jacfwd(h))(t(X))
    want = np.zeros((4, 4, 4))
    want[np.arange(4), np.arange(4), np.arange(4)] = -np.sin(X) * X + 2 * np.cos(X)
    close(second, want)
    vs = t(np.stack([V, U]))
    nested = func.vmap(lambda v: func.jvp(lambda a: func.jvp(f, (a,), (v,))[1], (t(X),), (v,))[1])
    close(nested(vs), [V @ (hessian_diagonal(X) * V), U @ (hessian_diagonal(X) * U)])


def test_vjp_of_vjp_in_the_cotangent():
    # u ↦ Jᵀu is linear: differentiated in u it gives J back, with and without vmap
    h = lambda x: x.sin() * x  # noqa: E731
    slope = np.cos(X) * X + np.sin(X)
    u = t(U, requires_grad=True)
    (g,) = func.vjp(h, t(X))[1](u)
    (g * g).sum().backward()
    close(u.grad, 2 * slope * slope * U)
    us = t(np.stack([U, V]), requires_grad=True)
    gs = func.vmap(lambda c: func.vjp(h, t(X))[1](c)[0])(us)
    (gs * gs).sum().backward()
    close(us.grad, 2 * slope * slope * np.stack([U, V]))


def test_dual_tensors_under_backward():
    x = t(X, requires_grad=True)
    with fwAD.dual_level():
        y = f(fwAD.make_dual(x, t(V)))
        tangent = fwAD.unpack_dual(y).tangent
    close(tangent, gradient(X) @ V)
    assert tangent.requires_grad
    tangent.backward()
    close(x.grad, HV)


def test_a_tangent_that_requires_grad_keeps_its_graph():
    # d⟨∇f(x), v⟩/dv = ∇f(x): the tangent is differentiated with respect to itself
    x, v = t(X), t(V, requires_grad=True)
    with fwAD.dual_level():
        tangent = fwAD.unpack_dual(f(fwAD.make_dual(x, v))).tangent
    tangent.backward()
    close(v.grad, gradient(X))


def test_create_graph_through_a_dual():
    # a gradient recorded inside the dual level carries H·v as its tangent; both it and the
    # tangent can be differentiated again
    x = t(X, requires_grad=True)
    with fwAD.dual_level():
        dual = fwAD.make_dual(x, t(V))
        (g,) = tg.autograd.grad(f(dual), x, create_graph=True)
        hv = fwAD.unpack_dual(g).tangent
    close(g, gradient(X))
    close(hv, HV)
    (d_g,) = tg.autograd.grad(g.sum(), x, retain_graph=True)  # Σᵢ ∂gᵢ/∂x = H·1
    close(d_g, hessian_diagonal(X))
    (d_hv,) = tg.autograd.grad(hv.sum(), x)  # ∂(H·v)ᵢ/∂x summed: third derivative · v
    close(d_hv, third_diagonal(X) * V)


@pytest.mark.parametrize("create_graph", [False, True])
def test_hvp_and_vhp(create_graph):
    x = t(X, requires_grad=create_graph)
    _, hv = tg.autograd.functional.hvp(f, x, t(V), create_graph=create_graph)
    _, vh = tg.autograd.functional.vhp(f, x, t(V), create_graph=create_graph)
    close(hv, HV)
    close(vh, HV)
    if create_graph:  # differentiable once more: the third derivative
        (d,) = tg.autograd.grad(hv.sum(), x)
        close(d, third_diagonal(X) * V)


def test_an_in_place_change_under_reverse_over_forward():
    def g(x):
        y = x * 1.0
        y.mul_(x)  # y = x², changed in place
        y[1:].add_(x[1:])  # and through a view
        return y.sum()

    want = 2 * np.ones_like(X) * V  # d²/dx² of Σx² + Σx[1:]
    close(func.grad(lambda y: func.jvp(g, (y,), (t(V),))[1])(t(X)), want)
    close(func.jvp(func.grad(g), (t(X),), (t(V),))[1], want)


def test_grad_refuses_a_one_element_output_of_one_dimension():
    with pytest.raises(RuntimeError, match="Expected f\\(\\*args\\) to return a scalar Tensor"):
        func.grad(lambda a: a.sum(0, keepdim=True))(t(X))
    with pytest.raises(RuntimeError, match="got tensor with 1 dims"):
        func.grad_and_value(lambda a: a[:1])(t(X))
    assert func.grad(lambda a: a.sum())(t(X)).shape == (4,)  # a 0-d output is fine


def test_a_rule_that_loses_its_derivative_is_refused_by_name():
    """A JVP rule turning a tensor that requires grad into an array would hand back a
    silent zero for reverse over forward: refused, naming the Function."""

    class Leaky(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_forward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, g):
            return g * ctx.saved_tensors[0].cos()

        @staticmethod
        def jvp(ctx, tangent):
            (x,) = ctx.saved_tensors
            return tangent * tg.tensor(np.cos(np.asarray(x)))  # the array loses x's graph

    class Careful(Leaky):
        @staticmethod
        def jvp(ctx, tangent):
            (x,) = ctx.saved_tensors
            return tangent * x.cos()

    def through(fn):
        return func.grad(lambda y: func.jvp(lambda z: fn.apply(z).sum(), (y,), (t(V),))[1])

    with pytest.raises(RuntimeError, match="Leaky: .*turned a tensor that requires grad into"):
        through(Leaky)(t(X))
    close(through(Careful)(t(X)), -np.sin(X) * V)
    close(func.jvp(lambda z: Leaky.apply(z).sum(), (t(X),), (t(V),))[1], np.cos(X) @ V)


# --------------------------------------------------------------------------- PyTorch
def test_every_pairing_against_torch_func():
    torch = pytest.importorskip("torch")
    tfunc = torch.func

    def torch_f(x):
        return (x.sin() * x).sum() + ((x / 2).exp() * x * x).sum()

    x, v, u = (torch.tensor(a, dtype=torch.float64) for a in (X, V, U))
    theirs = {
        "grad_of_jvp": tfunc.grad(lambda y: tfunc.jvp(torch_f, (y,), (v,))[1])(x),
        "jvp_of_grad": tfunc.jvp(tfunc.grad(torch_f), (x,), (v,))[1],
        "jacrev_jacfwd": tfunc.jacrev(tfunc.jacfwd(torch_f))(x),
        "jacfwd_jacrev": tfunc.jacfwd(tfunc.jacrev(torch_f))(x),
        "vjp_of_jvp": tfunc.vjp(lambda a, b: tfunc.jvp(torch_f, (a,), (b,))[1], x, v)[1](
            torch.tensor(2.0, dtype=torch.float64)
        ),
        "jacfwd_jacfwd": tfunc.jacfwd(tfunc.jacfwd(torch_f))(x),
        "jvp_of_jvp": tfunc.jvp(lambda a: tfunc.jvp(torch_f, (a,), (v,))[1], (x,), (u,))[1],
        "vmap_grad_of_jvp": tfunc.vmap(
            lambda a, b: tfunc.grad(lambda y: tfunc.jvp(torch_f, (y,), (b,))[1])(a)
        )(torch.stack([x, -x]), torch.stack([v, u])),
    }
    xs, vs = t(X), t(V)
    ours = {
        "grad_of_jvp": func.grad(lambda y: func.jvp(f, (y,), (vs,))[1])(xs),
        "jvp_of_grad": func.jvp(func.grad(f), (xs,), (vs,))[1],
        "jacrev_jacfwd": func.jacrev(func.jacfwd(f))(xs),
        "jacfwd_jacrev": func.jacfwd(func.jacrev(f))(xs),
        "vjp_of_jvp": func.vjp(lambda a, b: func.jvp(f, (a,), (b,))[1], xs, vs)[1](t(2.0)),
        "jacfwd_jacfwd": func.jacfwd(func.jacfwd(f))(xs),
        "jvp_of_jvp": func.jvp(lambda a: func.jvp(f, (a,), (vs,))[1], (xs,), (t(U),))[1],
        "vmap_grad_of_jvp": func.vmap(
            lambda a, b: func.grad(lambda y: func.jvp(f, (y,), (b,))[1])(a)
        )(t(np.stack([X, -X])), t(np.stack([V, U]))),
    }
    for name, want in theirs.items():
        got = ours[name]
        pairs = zip(got, want) if isinstance(want, tuple) else [(got, want)]
        for g, w in pairs:
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-12, atol=1e-12, err_msg=name)
    with pytest.raises(RuntimeError, match="scalar Tensor"):
        tfunc.grad(lambda a: a.sum(0, keepdim=True))(x)
