"""The backward sweep (``tensorgrad/core/sweep.py``) and its public face ``backward`` /
``grad``: accumulation, retained graphs, gradient buffers the sweep may overwrite, higher
order, and graphs freed by reference counting without recursion."""

from __future__ import annotations

import gc
import math
import weakref

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.core.engine import apply as _apply


def leaf(value, dtype=tg.float64):
    return tg.tensor(np.asarray(value, dtype=dtype), requires_grad=True)


# ----------------------------------------------------------------------- worked examples
def test_product_reused_operand():
    a, b = leaf(2.0), leaf(3.0)
    loss = (a * b) * a
    loss.backward()
    assert loss.item() == 12.0
    assert a.grad.item() == 12.0
    assert b.grad.item() == 4.0


def test_log_product_sine_example():
    x1, x2 = leaf(2.0), leaf(5.0)
    y = x1.log() + x1 * x2 - x2.sin()
    y.backward()
    assert y.item() == pytest.approx(11.652, abs=5e-4)
    assert x1.grad.item() == pytest.approx(5.5, rel=1e-12)
    assert x2.grad.item() == pytest.approx(2 - math.cos(5), rel=1e-12)


def test_reused_value_gradients_add_up():
    x = leaf(3.0)
    (x + x + x * x).backward()
    assert x.grad.item() == 8.0


# ----------------------------------------------------------------------- backward()
def test_non_scalar_backward_needs_gradient():
    x = leaf([1.0, 2.0, 3.0])
    y = x * 2
    with pytest.raises(RuntimeError, match=r"one-element tensor.*shape \(3,\).*gradient="):
        y.backward()
    y.backward(gradient=np.array([1.0, 0.0, -1.0]))
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 0.0, -2.0])


def test_gradient_of_wrong_shape_is_refused():
    x = leaf([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"gradient has shape \(2,\).*shape \(3,\)"):
        (x * 2).backward(gradient=np.ones(2))


def test_backward_from_tensor_without_grad():
    x = tg.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="does not require grad"):
        x.sum().backward()


def test_gradients_accumulate_across_calls():
    x = leaf([1.0, -2.0])
    for expected in (1, 2, 3):
        (x * 3).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), [3.0 * expected] * 2)


def test_accumulation_keeps_the_grad_tensor():
    x = leaf([1.0, 2.0])
    (x * 2).sum().backward()
    first = x.grad
    (x * 2).sum().backward()
    assert x.grad is first
    np.testing.assert_array_equal(first.numpy(), [4.0, 4.0])


def test_grad_is_one_tensor_that_later_backwards_accumulate_into():
    x = leaf([1.0, 2.0])
    (x * 3).sum().backward()
    (x * 1).sum().backward()  # accumulates before anyone has looked at .grad
    g = x.grad
    assert isinstance(g, tg.Tensor) and g is x.grad
    (x * 2).sum().backward()
    assert g is x.grad
    np.testing.assert_array_equal(g.numpy(), [6.0, 6.0])


def test_non_leaf_grad_kept_only_with_retain_grad():
    x = leaf([1.0, 2.0])
    hidden = x * 3
    other = x * 4
    hidden.retain_grad()
    (hidden * other).sum().backward()
    np.testing.assert_allclose(hidden.grad.numpy(), other.numpy())
    assert other.grad is None
    assert not other.is_leaf and x.is_leaf


def test_second_backward_without_retain_graph_raises():
    x = leaf([1.0, 2.0])
    y = (x.exp() * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="second time.*retain_graph=True"):
        y.backward()


def test_retain_graph_allows_second_backward_with_same_result():
    x = leaf([0.5, -1.5])
    y = (x.tanh() * x.sin()).sum()
    y.backward(retain_graph=True)
    first = x.grad.numpy().copy()
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), 2 * first)


def test_shared_gradient_arrays_are_not_aliased():
    a, b = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    (a + b).sum().backward()
    assert not np.shares_memory(a.grad.numpy(), b.grad.numpy())
    a.grad.numpy()[...] *= 10
    np.testing.assert_array_equal(b.grad.numpy(), [1.0, 1.0])


def test_failed_backward_leaves_grads_untouched():
    """The sweep writes ``.grad`` only once it has succeeded."""
    x = leaf([1.0, 2.0])
    w = tg.tensor([3.0, 4.0])
    y = (x * 2).sum() + (x * w).sum()  # the stale mul is reached after x's first gradient
    w += 1
    with pytest.raises(RuntimeError, match="modified in place"):
        y.backward()
    assert x.grad is None
    shared = x * 3
    first = shared.sum()
    first.backward()  # frees shared's op
    second = (x * 5).sum() + shared.sum()
    before = x.grad.numpy().copy()
    with pytest.raises(RuntimeError, match="second time"):
        second.backward()
    np.testing.assert_array_equal(x.grad.numpy(), before)


def test_sweep_order_waits_for_every_use_of_a_node():
    """A node used by ops recorded far apart gets its whole gradient before it is expanded."""
    x = leaf([0.5, -1.0])
    a = x.exp()
    b = a * 2
    c = (b + a).tanh()  # a is used early (by b) and late (by c)
    d = (c * a + b).sum()
    d.backward()
    ex = np.exp(x.numpy())
    t = np.tanh(3 * ex)
    # d = tanh(3e)·e + 2e, with e = exp(x)
    expected = (1 - t**2) * 3 * ex * ex + t * ex + 2 * ex
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-12)


def test_retained_and_captured_gradients_are_not_overwritten_by_later_ops():
    """ReLU may mask its incoming gradient in place when nothing else holds it; a gradient
    that is also kept (retain_grad, tg.grad) is not free."""
    x = leaf([-1.0, 2.0, -3.0])
    y = x * 2
    r = y.relu()
    r.retain_grad()
    (r * 3).sum().backward()
    np.testing.assert_array_equal(r.grad.numpy(), [3.0, 3.0, 3.0])
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 6.0, 0.0])
    y = x * 2
    r = y.relu()
    gr, gx = tg.grad((r * 3).sum(), [r, x])
    np.testing.assert_array_equal(gr.numpy(), [3.0, 3.0, 3.0])
    np.testing.assert_array_equal(gx.numpy(), [0.0, 6.0, 0.0])


def test_a_gradient_handed_to_two_ops_is_not_overwritten_by_either():
    a, b = leaf([-1.0, 2.0]), leaf([3.0, -4.0])
    (a.relu() + b.relu()).sum().backward()  # add hands one array to both relus
    np.testing.assert_array_equal(a.grad.numpy(), [0.0, 1.0])
    np.testing.assert_array_equal(b.grad.numpy(), [1.0, 0.0])
    c = leaf([-1.0, 2.0])
    s = c * 1.0
    (s.relu() + s).sum().backward()  # one array for relu and for s itself
    np.testing.assert_array_equal(c.grad.numpy(), [1.0, 2.0])


def test_the_engine_frees_a_gradient_only_when_nothing_else_holds_it():
    seen = []

    class Spy(tg.ops.Op):
        uses_inputs = False

        def forward(self, x):
            return x.copy()

        def backward(self, grad, out, x):
            seen.append(self.grad_is_free)
            return (grad,)

    x = leaf([1.0, 2.0])
    _apply(Spy(), x * 2).sum().backward()  # sum's VJP gives a broadcast view: not free
    (_apply(Spy(), x * 2) * 3).sum().backward()  # mul's VJP gives a fresh array: free
    kept = _apply(Spy(), x * 2)
    kept.retain_grad()  # its gradient also goes to .grad: not free
    (kept * 3).sum().backward()
    assert seen == [False, True, False]
    np.testing.assert_array_equal(kept.grad.numpy(), [3.0, 3.0])


def _pieces_and_gradients(x: tg.Tensor, hooked: list) -> list[tg.Tensor]:
    """Losses reading x through slices, a split, integer picks, a row lookup, a mask and
    other ops, in several orders: each piece's VJP may add into x's gradient so far."""
    q, k, v = x.split(2, dim=1)
    rows = x[tg.tensor(np.array([0, 2, 0, 1]))]  # repeated rows accumulate
    mask = x[x.detach() > 0]
    overlap = x[:, 1:4] * x[:, 0:3]  # overlapping slices
    s = x * 1.0
    s.register_hook(lambda g: hooked.append(g.numpy().copy()))
    first, second = s[0], s[1, 2]  # a row and one element (not a view: the usual VJP)
    return [
        (q * k).sum() + v.exp().sum(),
        rows.sin().sum() + mask.square().sum() + overlap.sum(),
        first.sum() * 3 + second * 5 + (s * s).sum(),
    ]


@pytest.mark.parametrize("add_into", [True, False], ids=["add_into", "zeros_then_add"])
def test_indexing_vjps_added_into_the_gradient_so_far_match_the_plain_sum(monkeypatch, add_into):
    """The ADD_INTO trick (each indexing VJP adds its part in place into the input's
    gradient so far) gives the gradients of the plain way (a zeros array per piece, summed)."""
    from tensorgrad.core import sweep

    monkeypatch.setattr(sweep, "ADD_INTO", add_into)
    rng = np.random.default_rng(0)
    values = rng.standard_normal((3, 6))
    x = leaf(values)
    hooked = []
    losses = _pieces_and_gradients(x, hooked)
    sum(losses).backward()
    q, k, v = values[:, 0:2], values[:, 2:4], values[:, 4:6]
    expected = np.zeros_like(values)
    expected[:, 0:2] += k
    expected[:, 2:4] += q
    expected[:, 4:6] += np.exp(v)
    for r in (0, 2, 0, 1):
        expected[r] += np.cos(values[r])
    expected += np.where(values > 0, 2 * values, 0)
    expected[:, 1:4] += values[:, 0:3]
    expected[:, 0:3] += values[:, 1:4]
    expected[0] += 3
    expected[1, 2] += 5
    expected += 2 * values
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-14, atol=1e-14)
    s_grad = 2 * values
    s_grad[0] += 3
    s_grad[1, 2] += 5
    np.testing.assert_allclose(hooked[0], s_grad, rtol=1e-14)  # the hook saw the whole sum


def test_adding_into_leaves_shared_and_kept_gradients_alone():
    """A gradient so far that something else holds (an Add hands one array to both inputs, a
    retained gradient) is not added into: the pieces go the plain way."""
    x = leaf(np.arange(6.0).reshape(2, 3))
    y = x * 1.0
    y.retain_grad()
    (y[0] * 2).sum().backward(retain_graph=True)
    kept = y.grad.numpy().copy()
    a, b = x * 1.0, x * 2.0
    piece = a[:, :2]  # older than the add: its VJP comes after the add's
    ((a + b).sum() + piece.sum()).backward()  # add's VJP: one array for a and for b
    np.testing.assert_array_equal(kept, [[2, 2, 2], [0, 0, 0]])
    # 2 from the first backward; then a's 1 (+1 where the piece is) and b's 2
    np.testing.assert_array_equal(x.grad.numpy(), [[6, 6, 5], [4, 4, 3]])


def test_gradient_of_leaf_not_a_view_of_an_intermediate():
    x = leaf(np.ones((2, 3)))
    y = x.reshape(3, 2)
    y.retain_grad()
    y.sum().backward()
    assert not np.shares_memory(x.grad.numpy(), y.grad.numpy())


def test_gradient_dtype_and_shape_follow_the_tensor():
    w = tg.tensor(np.ones((3, 1), np.float32), requires_grad=True)
    constant = np.full((2, 3, 4), 0.5)  # float64, broadcasts w
    out = (w * constant).sum() * np.float64(2.0)
    out.backward()
    assert w.grad.dtype == np.float32
    assert w.grad.shape == (3, 1)
    np.testing.assert_allclose(w.grad.numpy(), np.full((3, 1), 8.0))


def test_unused_leaf_gets_no_grad():
    x, unused = leaf(1.0), leaf(2.0)
    (x * 2).backward()
    assert unused.grad is None


def test_multiple_roots_backward():
    x = leaf([1.0, 2.0])
    tg.backward([(x * x).sum(), (x * 3).sum()])
    np.testing.assert_array_equal(x.grad.numpy(), [5.0, 7.0])


# ----------------------------------------------------------------------- grad()
def test_grad_returns_without_touching_dot_grad():
    x, y = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    gx, gy = tg.grad((x * y).sum(), [x, y])
    np.testing.assert_array_equal(gx.numpy(), [3.0, 4.0])
    np.testing.assert_array_equal(gy.numpy(), [1.0, 2.0])
    assert x.grad is None and y.grad is None


def test_grad_with_respect_to_intermediate():
    x = leaf([1.0, 2.0])
    h = x * 3
    (gh,) = tg.grad((h * h).sum(), h)
    np.testing.assert_array_equal(gh.numpy(), 2 * h.numpy())


def test_grad_unused_input():
    x, unused = leaf(1.0), leaf(2.0)
    with pytest.raises(RuntimeError, match="allow_unused=True"):
        tg.grad(x * 2, [x, unused], retain_graph=True)
    gx, gu = tg.grad(x * 2, [x, unused], allow_unused=True)
    assert gx.item() == 2.0 and gu is None


def test_grad_input_must_require_grad():
    x = leaf(1.0)
    with pytest.raises(RuntimeError, match="input 1 is not a tensor that requires grad"):
        tg.grad(x * 2, [x, tg.tensor(1.0)])


# ----------------------------------------------------------------------- higher order
def test_second_derivative_of_cube():
    x = leaf(2.0)
    (g,) = tg.grad(x**3, x, create_graph=True)
    assert g.requires_grad
    (h,) = tg.grad(g, x)
    assert g.item() == pytest.approx(12.0)
    assert h.item() == pytest.approx(12.0)


def test_third_derivative_of_sine():
    x = leaf(0.7)
    (g1,) = tg.grad(x.sin(), x, create_graph=True)
    (g2,) = tg.grad(g1, x, create_graph=True)
    (g3,) = tg.grad(g2, x)
    assert g3.item() == pytest.approx(-math.cos(0.7), rel=1e-12)


def test_hessian_vector_product_matches_explicit_hessian():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(4, 4))
    w = leaf(rng.normal(size=4))
    f = (tg.tensor(a) @ w).tanh().sum() + (w * w * w).sum()
    (gw,) = tg.grad(f, w, create_graph=True)
    v = rng.normal(size=4)
    (hv,) = tg.grad((gw * v).sum(), w)
    # explicit Hessian: d²/dw² [sum tanh(Aw)] + diag(6 w)
    t = np.tanh(a @ w.numpy())
    hessian = a.T @ np.diag(-2 * t * (1 - t * t)) @ a + np.diag(6 * w.numpy())
    np.testing.assert_allclose(hv.numpy(), hessian @ v, rtol=1e-10)


def test_backward_with_create_graph_gives_differentiable_grad():
    x = leaf([1.0, 2.0])
    (x * x * x).sum().backward(create_graph=True)
    assert x.grad.requires_grad
    (gg,) = tg.grad(x.grad.sum(), x)
    np.testing.assert_allclose(gg.numpy(), 6 * x.numpy())


# ----------------------------------------------------------------------- graph structure
def test_a_million_op_chain_backpropagates_without_recursion():
    x = tg.tensor(0.0, requires_grad=True)
    y = x
    for _ in range(1_000_000):
        y = y + 1.0
    y.backward()
    assert y.item() == 1_000_000.0
    assert x.grad.item() == 1.0


def test_graph_freed_by_reference_counting_after_backward():
    gc.disable()
    try:
        x = leaf(np.ones((3, 2)))
        w = tg.tensor(np.ones((2, 4)))
        hidden = (x @ w).tanh()
        loss = (hidden * hidden).sum()
        refs = [weakref.ref(hidden), weakref.ref(loss.grad_fn), weakref.ref(hidden.grad_fn)]
        del hidden
        loss.backward()
        del loss
        assert all(ref() is None for ref in refs)
    finally:
        gc.enable()


def test_graph_freed_without_backward():
    gc.disable()
    try:
        x = leaf(np.ones(3))
        out = (x.exp() * 2).sum()
        refs = [weakref.ref(out), weakref.ref(out.grad_fn), weakref.ref(out.grad_fn.parents[0])]
        del out
        assert all(ref() is None for ref in refs)
    finally:
        gc.enable()
