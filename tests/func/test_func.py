"""``tg.func``: derivatives as functions, against hand-derived values, finite differences,
each other (jacfwd = jacrev, hessian = jacobian of the gradient), and ``torch.func``."""

from __future__ import annotations

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import func, nn
from tensorgrad.core.pytree import tree_flatten


def f_vector(x):
    """R^3 → R^2, with every op family on the way."""
    return tg.stack([(x.sin() * x).sum(), (x**2).exp().mean() + x[0] * x[2]])


def numeric_jacobian(fn, x, eps=1e-6):
    cols = []
    for j in range(x.size):
        e = np.zeros(x.size)
        e[j] = eps
        e = e.reshape(x.shape)
        cols.append((fn(tg.tensor(x + e)).numpy() - fn(tg.tensor(x - e)).numpy()) / (2 * eps))
    return np.stack(cols, -1).reshape(np.shape(fn(tg.tensor(x)).numpy()) + x.shape)


X = np.array([0.3, -1.2, 0.8])


def test_grad_of_a_scalar_function_and_its_value():
    def loss(w, x):
        return ((x @ w).tanh() ** 2).sum()

    w, x = tg.tensor([0.5, -0.25], dtype=tg.float64), tg.tensor([[1.0, 2.0], [3.0, -1.0]])
    x = x.double()
    g, value = func.grad_and_value(loss)(w, x)
    assert value.item() == pytest.approx(loss(w, x).item())
    t = np.tanh(x.numpy() @ w.numpy())
    np.testing.assert_allclose(g.numpy(), x.numpy().T @ (2 * t * (1 - t * t)))
    assert not g.requires_grad and not w.requires_grad  # nothing left recorded or changed
    gx = func.grad(loss, argnums=1)(w, x)
    assert gx.shape == (2, 2)
    both = func.grad(loss, argnums=(0, 1))(w, x)
    assert isinstance(both, tuple) and both[0].shape == (2,) and both[1].shape == (2, 2)


def test_grad_with_aux_and_pytrees():
    def loss(params, x):
        out = x @ params["w"] + params["b"]
        return (out**2).sum(), out

    params = {"w": tg.ones(2, 1, dtype=tg.float64), "b": tg.zeros(1, dtype=tg.float64)}
    x = tg.tensor([[1.0, 2.0]], dtype=tg.float64)
    g, aux = func.grad(loss, has_aux=True)(params, x)
    assert set(g) == {"w", "b"} and aux.shape == (1, 1)
    np.testing.assert_allclose(g["w"].numpy(), [[6.0], [12.0]])
    np.testing.assert_allclose(g["b"].numpy(), [6.0])


def test_higher_derivatives_by_nesting_grad():
    d4 = func.grad(func.grad(func.grad(lambda x: x**4)))
    assert d4(tg.tensor(2.0, dtype=tg.float64)).item() == pytest.approx(24 * 2.0)


def test_jacfwd_equals_jacrev_equals_finite_differences():
    x = tg.tensor(X)
    forward, reverse = func.jacfwd(f_vector)(x), func.jacrev(f_vector)(x)
    assert forward.shape == reverse.shape == (2, 3)
    np.testing.assert_allclose(forward.numpy(), reverse.numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(forward.numpy(), numeric_jacobian(f_vector, X), rtol=1e-6)


def test_jacobians_of_matrix_inputs_and_outputs_have_both_shapes():
    def f(m):
        return m.T @ m

    m = tg.tensor(np.arange(6.0).reshape(3, 2) / 5)
    jac = func.jacrev(f)(m)
    assert jac.shape == (2, 2, 3, 2)
    np.testing.assert_allclose(jac.numpy(), func.jacfwd(f)(m).numpy(), atol=1e-14)
    np.testing.assert_allclose(jac.numpy(), numeric_jacobian(f, m.numpy()), rtol=1e-6, atol=1e-9)


def test_hessian_is_forward_over_reverse_and_symmetric():
    def f(x):
        return (x.sin() * x[0]).sum() + (x**3).sum()

    x = tg.tensor(X)
    h = func.hessian(f)(x).numpy()
    np.testing.assert_allclose(h, h.T, atol=1e-12)
    by_reverse = func.jacrev(func.jacrev(f))(x).numpy()
    np.testing.assert_allclose(h, by_reverse, rtol=1e-10, atol=1e-12)
    gradient = func.grad(f)
    np.testing.assert_allclose(h, numeric_jacobian(gradient, X), rtol=1e-6, atol=1e-8)


def test_jvp_and_vjp_are_adjoint():
    rng = np.random.default_rng(3)
    x, v, u = tg.tensor(X), tg.tensor(rng.standard_normal(3)), tg.tensor(rng.standard_normal(2))
    value, jv = func.jvp(f_vector, (x,), (v,))
    out, vjp_fn = func.vjp(f_vector, x)
    (jtu,) = vjp_fn(u)
    np.testing.assert_allclose(value.numpy(), out.numpy())
    assert float((u.numpy() * jv.numpy()).sum()) == pytest.approx(
        float((jtu.numpy() * v.numpy()).sum()), rel=1e-12
    )
    _, jvp_fn = func.linearize(f_vector, x)
    np.testing.assert_allclose(jvp_fn(v).numpy(), jv.numpy())


def test_per_sample_gradients_by_vmap_of_grad():
    tg.manual_seed(0)
    model = nn.Linear(4, 3).double()
    params = {k: v.detach() for k, v in model.named_parameters()}
    xs, ys = tg.randn(6, 4, dtype=tg.float64), tg.randint(0, 3, (6,))

    def loss(p, x, y):
        logits = func.functional_call(model, p, (x.unsqueeze(0),))
        return nn.functional.cross_entropy(logits, y.unsqueeze(0))

    per_sample = func.vmap(func.grad(loss), in_dims=(None, 0, 0))(params, xs, ys)
    assert per_sample["weight"].shape == (6, 3, 4) and per_sample["bias"].shape == (6, 3)
    for i in range(6):
        model.zero_grad()
        nn.functional.cross_entropy(model(xs[i : i + 1]), ys[i : i + 1]).backward()
        np.testing.assert_allclose(per_sample["weight"][i].numpy(), model.weight.grad.numpy())
        np.testing.assert_allclose(per_sample["bias"][i].numpy(), model.bias.grad.numpy())


def test_vmap_dims_nesting_and_randomness():
    x = tg.tensor(np.arange(12.0).reshape(3, 4))
    np.testing.assert_array_equal(func.vmap(lambda r: r.sum())(x).numpy(), [6, 22, 38])
    by_column = func.vmap(lambda c: c.sum(), in_dims=1)(x).numpy()
    np.testing.assert_array_equal(by_column, [12, 15, 18, 21])
    outer = func.vmap(func.vmap(lambda a, b: a * b, in_dims=(0, None)), in_dims=(None, 0))
    table = outer(tg.arange(3.0), tg.arange(2.0)).numpy()
    np.testing.assert_array_equal(table, [[0, 0, 0], [0, 1, 2]])
    assert func.vmap(lambda r: r, out_dims=1)(x).shape == (4, 3)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        func.vmap(lambda r: r + tg.randn(4))(x)
    same = func.vmap(lambda r: tg.randn(2), randomness="same")(x).numpy()
    assert (same == same[0]).all()
    different = func.vmap(lambda r: tg.randn(2), randomness="different")(x).numpy()
    assert not (different == different[0]).all()
    with pytest.raises(ValueError, match="same size in the mapped dimension"):
        func.vmap(lambda a, b: a + b)(tg.ones(2), tg.ones(3))
    with pytest.raises(RuntimeError, match="randomness are 'error', 'different', or 'same'"):
        func.vmap(lambda r: r, randomness="sometimes")


def test_functional_call_swaps_and_restores_parameters():
    model = nn.Linear(2, 1)
    original = model.weight
    out = func.functional_call(model, {"weight": tg.zeros(1, 2), "bias": tg.ones(1)}, tg.ones(3, 2))
    np.testing.assert_array_equal(out.numpy(), np.ones((3, 1)))
    assert model.weight is original
    with pytest.raises(RuntimeError, match="missing keys"):
        func.functional_call(model, {"weight": tg.zeros(1, 2)}, tg.ones(3, 2), strict=True)


def test_errors_name_what_was_wrong():
    with pytest.raises(RuntimeError, match="Expected f\\(\\*args\\) to return a scalar Tensor"):
        func.grad(lambda x: x * 2)(tg.ones(3))
    with pytest.raises(RuntimeError, match="Got argnums=2 but only 1 positional inputs"):
        func.grad(lambda x: x.sum(), argnums=2)(tg.ones(3))
    with pytest.raises(RuntimeError, match="Expected primals to be a tuple"):
        func.jvp(lambda x: x, tg.ones(2), (tg.ones(2),))
    shapes = r"same shape, got a primal of shape \(2,\) and a tangent of shape \(3,\)"
    with pytest.raises(RuntimeError, match=shapes):
        func.jvp(lambda x: x, (tg.ones(2),), (tg.ones(3),))
    shapes = r"cotangent of shape \(3,\) for an output of shape \(2,\)"
    with pytest.raises(RuntimeError, match=shapes):
        func.vjp(lambda x: x * 2, tg.ones(2))[1](tg.ones(3))
    with pytest.raises(RuntimeError, match=r"should be a tuple: \(output, aux\)"):
        func.grad(lambda x: x.sum(), has_aux=True)(tg.ones(2))


def test_against_torch_func():
    torch = pytest.importorskip("torch")
    import torch.func as tfunc

    def f(m, x):
        return (m.tanh(x) * x[..., :1]).sum(-1)

    x = np.random.default_rng(5).standard_normal((3, 4))
    for ours, theirs in [
        (
            func.jacrev(lambda a: f(tg, a))(tg.tensor(x)),
            tfunc.jacrev(lambda a: f(torch, a))(torch.tensor(x)),
        ),
        (
            func.jacfwd(lambda a: f(tg, a))(tg.tensor(x)),
            tfunc.jacfwd(lambda a: f(torch, a))(torch.tensor(x)),
        ),
        (
            func.hessian(lambda a: f(tg, a).sum())(tg.tensor(x)),
            tfunc.hessian(lambda a: f(torch, a).sum())(torch.tensor(x)),
        ),
        (
            func.vmap(func.grad(lambda a: f(tg, a)))(tg.tensor(x)),
            tfunc.vmap(tfunc.grad(lambda a: f(torch, a)))(torch.tensor(x)),
        ),
    ]:
        assert tuple(ours.shape) == tuple(theirs.shape)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("batched", [True, False])
def test_jacfwd_batched_over_directions_or_one_jvp_each(monkeypatch, batched):
    """jacfwd's speed trick (one vmap-ed JVP over every basis direction) on and off."""
    monkeypatch.setattr(func.jacobians, "BATCHED_JACOBIANS", batched)
    rng = np.random.default_rng(4)
    a = tg.tensor(rng.standard_normal((4, 3)))

    def f(x, y):
        return (a @ x.tanh() @ y).sin(), (x * x).sum()

    x, y = tg.tensor(rng.standard_normal((3, 3))), tg.tensor(rng.standard_normal((3, 2)))
    forward_jac = func.jacfwd(f, argnums=(0, 1))(x, y)
    reverse_jac = func.jacrev(f, argnums=(0, 1))(x, y)
    for ours, theirs in zip(
        tree_flatten(forward_jac)[0], tree_flatten(reverse_jac)[0], strict=True
    ):
        assert ours.shape == theirs.shape
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-14)
    h = func.hessian(lambda x: (x.sin() * x[0]).sum())(tg.tensor(X))
    np.testing.assert_allclose(h.numpy(), h.numpy().T, atol=1e-12)


def test_grad_over_several_argnums_walks_the_graph_once():
    """``argnums=(0, 1, 2)`` and ``vjp_fn`` of three primals share one backward sweep (a
    sweep per argument would run every shared node's backward once per argument)."""
    calls = []

    class Counted(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            calls.append(1)
            return g * 2

    def f(a, b, c):
        return Counted.apply(a * b + c).sum()

    a, b, c = (tg.tensor(np.array(v)) for v in ([1.0, 2.0], [3.0, -1.0], [0.5, 0.5]))
    ga, gb, gc = func.grad(f, argnums=(0, 1, 2))(a, b, c)
    assert len(calls) == 1
    np.testing.assert_allclose(ga.numpy(), 2 * b.numpy())
    np.testing.assert_allclose(gb.numpy(), 2 * a.numpy())
    np.testing.assert_allclose(gc.numpy(), [2.0, 2.0])
    calls.clear()
    _, vjp_fn = func.vjp(f, a, b, c)
    grads = vjp_fn(tg.tensor(np.array(1.0)))
    assert len(calls) == 1
    np.testing.assert_allclose(grads[1].numpy(), 2 * a.numpy())
