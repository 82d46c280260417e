"""Forward-mode AD (``tg.autograd.forward_ad``): the lecture's example, tangents through
modules, views and in-place changes, custom Functions, errors, and PyTorch's values."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tensorgrad as tg
import tensorgrad.autograd.forward_ad as fwAD
from tensorgrad import nn


def jvp_of(fn, *pairs):
    """``fn``'s output value and tangent for (primal, tangent) array pairs."""
    with fwAD.dual_level():
        duals = [fwAD.make_dual(tg.tensor(p), tg.tensor(t)) for p, t in pairs]
        primal, tangent = fwAD.unpack_dual(fn(*duals))
        return primal.numpy(), None if tangent is None else tangent.numpy()


def test_the_lectures_forward_table():
    """y = ln(x1) + x1·x2 − sin(x2) at (2, 5), seeded with ẋ1 = 1: ẏ = ∂y/∂x1 = 1/2 + 5 = 5.5."""

    def f(x1, x2):
        return tg.log(x1) + x1 * x2 - tg.sin(x2)

    value, dy_dx1 = jvp_of(f, (2.0, 1.0), (5.0, 0.0))
    assert value == pytest.approx(math.log(2) + 10 - math.sin(5))
    assert dy_dx1 == pytest.approx(5.5)
    _, dy_dx2 = jvp_of(f, (2.0, 0.0), (5.0, 1.0))
    assert dy_dx2 == pytest.approx(2 - math.cos(5))


def test_unpack_dual_outside_and_after_the_level():
    x = tg.tensor([1.0, 2.0])
    assert fwAD.unpack_dual(x).tangent is None and fwAD.unpack_dual(x).primal is x
    with fwAD.dual_level():
        y = fwAD.make_dual(x, tg.tensor([1.0, 1.0])) * 3
        assert "tangent=" in repr(y)
        assert fwAD.unpack_dual(y).primal._tangent is None  # the primal carries none
    assert fwAD.unpack_dual(y).tangent is None  # leaving the level drops every tangent
    assert "tangent=" not in repr(y)


def test_a_module_and_reverse_mode_at_once():
    tg.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).double()
    x = tg.randn(5, 3, dtype=tg.float64, requires_grad=True)
    v = tg.randn(5, 3, dtype=tg.float64)
    with fwAD.dual_level():
        out = model(fwAD.make_dual(x, v))
        _, tangent = fwAD.unpack_dual(out)
        out.sum().backward()  # reverse mode still works through the dual tensor
    eps = 1e-6
    numeric = (model(x.detach() + eps * v) - model(x.detach() - eps * v)).numpy() / (2 * eps)
    np.testing.assert_allclose(tangent.numpy(), numeric, rtol=1e-6, atol=1e-8)
    assert x.grad is not None and x.grad.shape == (5, 3)


def test_relu_chain_fused_by_sequential_carries_tangents():
    tg.manual_seed(1)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2), nn.ReLU()).double()
    x, v = tg.randn(6, 3, dtype=tg.float64), tg.randn(6, 3, dtype=tg.float64)
    with fwAD.dual_level():
        tangent = fwAD.unpack_dual(model(fwAD.make_dual(x, v))).tangent.numpy()
    eps = 1e-6
    numeric = (model(x + eps * v) - model(x - eps * v)).numpy() / (2 * eps)
    np.testing.assert_allclose(tangent, numeric, rtol=1e-6, atol=1e-8)


def test_in_place_change_through_a_view_reaches_the_base():
    base = tg.zeros(4, dtype=tg.float64)
    with fwAD.dual_level():
        d = fwAD.make_dual(tg.tensor([1.0, 2.0], dtype=tg.float64), tg.tensor([10.0, 20.0]))
        base[1:3] = d * 2  # the base had no tangent: it gets one, zero outside the view
        _, tangent = fwAD.unpack_dual(base)
        np.testing.assert_array_equal(tangent.numpy(), [0, 20, 40, 0])
        view = base[2:]
        view.mul_(d)  # in place on a view with a tangent: the product rule, into the base's
        _, tangent = fwAD.unpack_dual(base)
        np.testing.assert_allclose(tangent.numpy(), [0, 20, 40 * 1 + 4 * 10, 0 * 2 + 0 * 20])


@pytest.mark.parametrize("through", ["the dual", "a product"])
def test_a_change_through_a_view_of_transposed_memory_reaches_the_tangent(through):
    # a flattened transpose is a view of transposed memory only: a tangent laid out
    # otherwise than its primal (here the C-ordered one given to make_dual) must be re-laid
    # as PyTorch does, or the view's tangent is a copy that the change never leaves
    primal = tg.tensor(np.arange(6.0).reshape(3, 2)).T  # (2, 3), transposed memory
    with fwAD.dual_level():
        x = fwAD.make_dual(primal, tg.ones(2, 3, dtype=tg.float64))
        y = x if through == "the dual" else x * 1.0
        view = y.T.reshape(-1)
        assert view._view is not None  # a view, as in NumPy and PyTorch
        view.add_(fwAD.make_dual(tg.zeros(6, dtype=tg.float64), tg.arange(6.0, dtype=tg.float64)))
        expected = 1.0 + np.arange(6.0).reshape(3, 2).T
        np.testing.assert_array_equal(fwAD.unpack_dual(y).tangent.numpy(), expected)


def test_integer_results_carry_no_tangent():
    with fwAD.dual_level():
        d = fwAD.make_dual(tg.tensor([1.0, 3.0, 2.0]), tg.ones(3))
        assert fwAD.unpack_dual(d.argmax()).tangent is None
        assert fwAD.unpack_dual(d > 1).tangent is None


def test_custom_function_jvp_and_its_absence():
    class Cube(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_forward(x)
            return x**3

        @staticmethod
        def backward(ctx, grad):
            raise AssertionError("not used here")

        @staticmethod
        def jvp(ctx, tangent):
            (x,) = ctx.saved_tensors
            return 3 * x * x * tangent

    class NoRule(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, grad):
            return grad

    with fwAD.dual_level():
        d = fwAD.make_dual(tg.tensor([1.0, 2.0]), tg.tensor([1.0, 0.5]))
        np.testing.assert_allclose(fwAD.unpack_dual(Cube.apply(d)).tangent.numpy(), [3, 6])
        with pytest.raises(RuntimeError, match="NoRule: You must implement the jvp function"):
            NoRule.apply(d)


def test_errors_are_pytorchs():
    x = tg.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="no level exists"):
        fwAD.make_dual(x, tg.ones(2))
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match=r"Tensor is of size \[2\] .* of size \[3\]"):
            fwAD.make_dual(x, tg.ones(3))
        with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported"):
            fwAD.enter_dual_level()
        with pytest.raises(ValueError, match="primal to be floating point"):
            fwAD.make_dual(tg.tensor([1, 2]), tg.ones(2))
    assert not tg.core.forward.state.level  # the failed nesting left the level as it was


def test_an_op_without_a_rule_is_refused_by_name_leaving_nothing_set(monkeypatch):
    from tensorgrad import ops

    monkeypatch.setattr(ops.Sin, "jvp", None)
    monkeypatch.setattr(ops.Sin, "no_jvp", "a test removed it")
    with fwAD.dual_level():
        d = fwAD.make_dual(tg.tensor([1.0]), tg.ones(1))
        with pytest.raises(RuntimeError, match=r"sin: forward-mode AD .* \(a test removed it\)"):
            d.sin()
        assert fwAD.unpack_dual(d).tangent is not None  # the input keeps its tangent


def test_forward_over_reverse_gives_hessian_vector_products():
    x = tg.tensor([1.0, 2.0, 3.0], dtype=tg.float64, requires_grad=True)
    v = np.array([1.0, -1.0, 0.5])
    with fwAD.dual_level():
        d = fwAD.make_dual(x, tg.tensor(v))
        y = (d**3).sum() + (d[0] * d[1])
        (g,) = tg.autograd.grad(y, d, create_graph=True)
        hv = fwAD.unpack_dual(g).tangent.numpy()
    hessian = np.diag(6 * x.numpy()) + np.array([[0, 1, 0], [1, 0, 0], [0, 0, 0]])
    np.testing.assert_allclose(hv, hessian @ v)


TORCH_CALLS = [
    ("exp", lambda m, x: m.exp(x)),
    ("tanh", lambda m, x: m.tanh(x)),
    ("softmax", lambda m, x: m.softmax(x, dim=-1)),
    ("log_softmax", lambda m, x: m.log_softmax(x, dim=0)),
    ("norm", lambda m, x: m.norm(x)),
    ("std", lambda m, x: x.std(dim=1)),
    ("logsumexp", lambda m, x: m.logsumexp(x, dim=1)),
    ("amax", lambda m, x: m.amax(x, dim=0)),
    ("matmul", lambda m, x: x @ x.T),
    ("pow", lambda m, x: (x * x + 1) ** 1.5),
    ("transpose-index", lambda m, x: x.T[1:, ::2] * 3),
    ("cumsum", lambda m, x: m.cumsum(x, dim=1)),
    ("where", lambda m, x: m.where(x > 0, x, -x * 2)),
]


@pytest.mark.parametrize(("name", "call"), TORCH_CALLS, ids=[n for n, _ in TORCH_CALLS])
def test_tangents_equal_pytorchs_forward_ad(name, call):
    torch = pytest.importorskip("torch")
    import torch.autograd.forward_ad as tfwAD

    rng = np.random.default_rng(0)
    x, v = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    with tfwAD.dual_level():
        want = tfwAD.unpack_dual(call(torch, tfwAD.make_dual(torch.tensor(x), torch.tensor(v))))
    with fwAD.dual_level():
        got = fwAD.unpack_dual(call(tg, fwAD.make_dual(tg.tensor(x), tg.tensor(v))))
    np.testing.assert_allclose(got.primal.numpy(), want.primal.numpy(), rtol=1e-12)
    np.testing.assert_allclose(got.tangent.numpy(), want.tangent.numpy(), rtol=1e-10, atol=1e-12)
