"""Tests of the scalar reference engine: worked examples, every op against a central difference,
deep graphs, memory, errors, NumPy object arrays, the MLP and the doc's examples."""

from __future__ import annotations

import ast
import gc
import itertools
import math
import random
import re
import sys
import weakref
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorgrad.scalar import MLP, Dual, Layer, Neuron, Value, forward_tangents, topological_order

ROOT = Path(__file__).resolve().parents[1]


def grads_of(out: Value, *leaves: Value) -> tuple[float, ...]:
    out.backward()
    return tuple(leaf.grad for leaf in leaves)


# -- the worked examples ---------------------------------------------------------------------


def test_product():
    a, b = Value(2.0), Value(3.0)
    c = a * b
    assert c.data == 6.0
    assert grads_of(c, a, b) == (3.0, 2.0)


def test_a_times_b_times_a_two_paths_add_up():
    a, b = Value(2.0), Value(3.0)
    e = a * b
    L = e * a
    L.backward()
    assert L.data == 12.0
    assert (e.grad, a.grad, b.grad) == (2.0, 12.0, 4.0)


def test_a_plus_a_accumulates_not_overwrites():
    a = Value(3.0)
    b = a + a
    assert grads_of(b, a) == (2.0,)


def test_repeated_backward_accumulates_and_zero_grad_resets():
    x = Value(3.0)
    y = x + x + x * x
    y.backward()
    assert x.grad == 8.0
    y.zero_grad()
    assert all(node.grad == 0.0 for node in topological_order(y))
    y.backward()
    assert x.grad == 8.0
    y.backward()  # no zeroing: each pass adds d(y)/d(node) once more
    assert x.grad == 16.0
    assert y.grad == 2.0


def test_product_times_sum():
    a, b = Value(-2.0), Value(3.0)
    u, v = a * b, a + b
    q = u * v
    assert q.data == -6.0
    assert grads_of(q, a, b) == (-3.0, -8.0)


def test_log_product_sin():
    x1, x2 = Value(2.0), Value(5.0)
    y = x1.log() + x1 * x2 - x2.sin()
    assert y.data == pytest.approx(math.log(2) + 10 - math.sin(5), abs=1e-12)
    assert round(y.data, 3) == 11.652
    g1, g2 = grads_of(y, x1, x2)
    assert g1 == pytest.approx(5.5, abs=1e-12)
    assert g2 == pytest.approx(2 - math.cos(5), abs=1e-12)
    assert round(g2, 3) == 1.716


def softmax_cross_entropy(z: list[float], target: int) -> tuple[Value, list[Value]]:
    zs = [Value(zi) for zi in z]
    exps = [zi.exp() for zi in zs]
    total = sum(exps)
    p = [e / total for e in exps]
    return -p[target].log(), zs


def test_softmax_cross_entropy():
    # The target is index 3 (zero-based), the class with z = 1: L = -log p[3]. The numbers
    # below are p - onehot(3); for the class with z = 3 the loss would be 0.1755.
    L, zs = softmax_cross_entropy([0.0, 3.0, -2.0, 1.0], target=3)
    L.backward()
    assert L.data == pytest.approx(2.175515362617, abs=1e-12)
    expected = (0.041772571, 0.839024507, 0.005653303, -0.886450381)
    assert [z.grad for z in zs] == pytest.approx(expected, abs=1e-9)
    assert sum(z.grad for z in zs) == pytest.approx(0.0, abs=1e-12)
    shifted, zs2 = softmax_cross_entropy([10.0, 13.0, 8.0, 11.0], target=3)
    shifted.backward()
    assert shifted.data == pytest.approx(L.data, abs=1e-12)
    assert [z.grad for z in zs2] == pytest.approx([z.grad for z in zs], abs=1e-12)


@pytest.mark.parametrize("x0", [-2.0, -0.3, 0.0, 0.7, 3.0])
def test_tanh_op_matches_tanh_formula(x0):
    x = Value(x0)
    x.tanh().backward()
    one_op = x.grad
    x.grad = 0.0
    e2x = (2 * x).exp()
    ((e2x - 1) / (e2x + 1)).backward()
    assert x.grad == pytest.approx(one_op, abs=1e-12)
    assert one_op == pytest.approx(1 - math.tanh(x0) ** 2, abs=1e-15)


def test_large_inputs_stay_finite():
    x = Value(1000.0)
    t = x.tanh()
    t.backward()
    assert (t.data, x.grad) == (1.0, 0.0)
    x = Value(-1000.0)
    t = x.tanh()
    t.backward()
    assert (t.data, x.grad) == (-1.0, 0.0)
    for x0, s0 in ((-1000.0, 0.0), (1000.0, 1.0)):
        x = Value(x0)
        s = x.sigmoid()
        s.backward()
        assert (s.data, x.grad) == (s0, 0.0)


def test_kinks():
    for op in (Value.relu, abs):
        x = Value(0.0)
        y = op(x)
        y.backward()
        assert (y.data, x.grad) == (0.0, 0.0)
    x = Value(0.0)
    x.sqrt().backward()
    assert x.grad == math.inf
    x = Value(-2.0)
    abs(x).backward()
    assert x.grad == -1.0


# -- every op against a central difference ---------------------------------------------------

H = 1e-6


def central_difference(f, *xs: float) -> list[float]:
    slopes = []
    for i in range(len(xs)):
        up = [*xs[:i], xs[i] + H, *xs[i + 1 :]]
        down = [*xs[:i], xs[i] - H, *xs[i + 1 :]]
        slopes.append((f(*up) - f(*down)) / (2 * H))
    return slopes


def check_gradient(f, *xs: float) -> None:
    leaves = [Value(x) for x in xs]
    out = f(*leaves)
    out.backward()
    expected = central_difference(lambda *ys: f(*(Value(y) for y in ys)).data, *xs)
    for leaf, slope in zip(leaves, expected, strict=True):
        assert leaf.grad == pytest.approx(slope, rel=1e-5, abs=1e-6), f.__name__


anywhere = st.floats(-3.0, 3.0)
positive = st.floats(0.1, 5.0)
away_from_zero = st.one_of(st.floats(-3.0, -0.01), st.floats(0.01, 3.0))

UNARY = {
    "neg": (lambda x: -x, anywhere),
    "exp": (lambda x: x.exp(), anywhere),
    "log": (lambda x: x.log(), positive),
    "tanh": (lambda x: x.tanh(), anywhere),
    "sigmoid": (lambda x: x.sigmoid(), st.floats(-30.0, 30.0)),
    "relu": (lambda x: x.relu(), away_from_zero),
    "sin": (lambda x: x.sin(), anywhere),
    "cos": (lambda x: x.cos(), anywhere),
    "sqrt": (lambda x: x.sqrt(), positive),
    "abs": (abs, away_from_zero),
    "square": (lambda x: x**2, anywhere),
    "cube": (lambda x: x**3, anywhere),
    "inverse": (lambda x: x**-1, away_from_zero),
    "root": (lambda x: x**0.5, positive),
    "power 2.7": (lambda x: x**2.7, positive),
    "power 0": (lambda x: x**0, anywhere),
    "const + x": (lambda x: 2.5 + x, anywhere),
    "x - const": (lambda x: x - 2.5, anywhere),
    "const - x": (lambda x: 2.5 - x, anywhere),
    "const * x": (lambda x: 2.5 * x, anywhere),
    "x / const": (lambda x: x / 2.5, anywhere),
    "const / x": (lambda x: 2.5 / x, away_from_zero),
}

BINARY = {
    "add": (lambda a, b: a + b, anywhere),
    "sub": (lambda a, b: a - b, anywhere),
    "mul": (lambda a, b: a * b, anywhere),
    "div": (lambda a, b: a / b, away_from_zero),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_unary_gradient_matches_central_difference(name, data):
    f, domain = UNARY[name]
    check_gradient(f, data.draw(domain))


@pytest.mark.parametrize("name", sorted(BINARY))
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_binary_gradient_matches_central_difference(name, data):
    f, domain = BINARY[name]
    check_gradient(f, data.draw(anywhere), data.draw(domain))


@settings(max_examples=30, deadline=None)
@given(st.floats(-2.0, 2.0), st.floats(0.5, 2.0))
def test_composite_gradient_matches_central_difference(x, y):
    def f(a, b):
        h = (a * b + a.sin()).tanh() * (b.log() - a / b) ** 2
        return h.sigmoid() + (a * a + b).sqrt() + abs(a - 3)

    check_gradient(f, x, y)


# -- forward mode: dual numbers and tangents over a graph ------------------------------------


def test_dual_numbers_give_the_lecture_example():
    # y = ln(x1) + x1·x2 − sin(x2) at (2, 5): ∂y/∂x1 = 1/x1 + x2 = 5.5, ∂y/∂x2 = x1 − cos(x2)
    def y(x1, x2):
        return x1.log() + x1 * x2 - x2.sin()

    along_x1 = y(Dual(2.0, 1.0), Dual(5.0, 0.0))
    along_x2 = y(Dual(2.0, 0.0), Dual(5.0, 1.0))
    assert along_x1.value == pytest.approx(math.log(2) + 10 - math.sin(5))
    assert along_x1.tangent == pytest.approx(5.5)
    assert along_x2.tangent == pytest.approx(2 - math.cos(5))
    # the intermediate v̇3 = v̇1 / v1 = 0.5
    assert Dual(2.0, 1.0).log().tangent == 0.5


@pytest.mark.parametrize("name", sorted(UNARY))
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_dual_tangent_equals_the_reverse_mode_gradient_unary(name, data):
    f, domain = UNARY[name]
    x = data.draw(domain)
    v = Value(x)
    f(v).backward()
    d = f(Dual(x, 1.0))
    assert d.value == pytest.approx(f(Value(x)).data)
    assert d.tangent == pytest.approx(v.grad, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("name", sorted(BINARY))
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_dual_tangents_equal_the_reverse_mode_gradients_binary(name, data):
    f, domain = BINARY[name]
    a, b = data.draw(anywhere), data.draw(domain)
    va, vb = Value(a), Value(b)
    f(va, vb).backward()
    assert f(Dual(a, 1.0), Dual(b, 0.0)).tangent == pytest.approx(va.grad, abs=1e-12)
    assert f(Dual(a, 0.0), Dual(b, 1.0)).tangent == pytest.approx(vb.grad, abs=1e-12)
    # a direction (2, -3) at once: the directional derivative, linear in the seed
    both = f(Dual(a, 2.0), Dual(b, -3.0)).tangent
    assert both == pytest.approx(2 * va.grad - 3 * vb.grad, rel=1e-9, abs=1e-9)


@settings(max_examples=20, deadline=None)
@given(st.floats(-2.0, 2.0), st.floats(0.5, 2.0))
def test_forward_tangents_over_a_graph_match_backward(x, y):
    def f(a, b):
        h = (a * b + a.sin()).tanh() * (b.log() - a / b) ** 2
        return h.sigmoid() + (a * a + b).sqrt() + abs(a - 3) + 1 / b

    a, b = Value(x), Value(y)
    out = f(a, b)
    out.backward()
    assert forward_tangents(out, {a: 1.0})[out] == pytest.approx(a.grad, rel=1e-12, abs=1e-12)
    assert forward_tangents(out, {b: 1.0})[out] == pytest.approx(b.grad, rel=1e-12, abs=1e-12)
    assert f(Dual(x, 1.0), Dual(y, 0.0)).tangent == pytest.approx(a.grad, rel=1e-12, abs=1e-12)


def test_dual_errors_are_the_engines():
    with pytest.raises(ValueError, match="must be positive"):
        Dual(-1.0, 1.0).log()
    with pytest.raises(ZeroDivisionError):
        Dual(1.0, 1.0) / Dual(0.0, 1.0)
    with pytest.raises(TypeError, match="real number"):
        Dual("1", 0.0)
    with pytest.raises(TypeError, match="exponent must be a constant"):
        Dual(2.0, 1.0) ** Dual(2.0, 0.0)


# -- deep graphs and memory ------------------------------------------------------------------


def test_million_op_chain_needs_no_recursion():
    # The graph has no reference cycles, so reference counting alone frees it. The cycle
    # collector is switched off here only for speed: its full scans of a heap growing by
    # millions of objects would otherwise take most of this test's time.
    gc.disable()
    try:
        x = Value(1.0)
        v = x
        for _ in range(1_000_000):
            v = v + 1
        v.backward()
        assert v.data == 1_000_001.0
        assert x.grad == 1.0
        node = weakref.ref(v)
        del v  # freeing a chain this deep must not overflow the C stack either
        assert node() is None
    finally:
        gc.enable()


def test_graph_has_no_reference_cycles():
    gc.collect()
    gc.disable()
    try:
        a, b = Value(2.0), Value(3.0)
        e = a * b
        L = (e * a).tanh() + e.exp().log()
        L.backward()
        node, leaf = weakref.ref(e), weakref.ref(a)
        del a, b, e, L
        assert node() is None, "an intermediate node outlived its graph: a reference cycle"
        assert leaf() is None
    finally:
        gc.enable()


def test_topological_order_puts_children_first_once():
    a, b = Value(2.0), Value(3.0)
    c = a * b
    d = c + a
    out = d * c
    order = topological_order(out)
    assert len(order) == len(set(order)) == 5
    position = {node: i for i, node in enumerate(order)}
    for node in order:
        assert all(position[child] < position[node] for child in node._children)
    assert order[-1] is out


def test_values_hash_and_compare_by_identity():
    a, b = Value(1.0), Value(1.0)
    assert a != b
    assert len({a, b}) == 2
    assert a <= b and a >= b and not a < b
    assert Value(2.0) > 1 and Value(2.0) < 3.5


# -- errors ----------------------------------------------------------------------------------


def test_log_of_non_positive_names_op_and_value():
    with pytest.raises(ValueError, match=r"log\(-1\.5\).*positive"):
        Value(-1.5).log()
    with pytest.raises(ValueError, match=r"log\(0\.0\)"):
        Value(0.0).log()
    with pytest.raises(ValueError, match=r"sqrt\(-4\.0\).*non-negative"):
        Value(-4.0).sqrt()


@pytest.mark.parametrize("bad", ["a", None, [1.0], 1j])
def test_non_numeric_operand_names_its_type(bad):
    name = type(bad).__name__
    for op in (
        lambda: Value(2) + bad,
        lambda: Value(2) - bad,
        lambda: Value(2) * bad,
        lambda: Value(2) / bad,
    ):
        with pytest.raises(TypeError, match=name):
            op()
    with pytest.raises(TypeError, match=f"real number, got {name}"):
        Value(bad)


def test_reflected_non_numeric_operand():
    with pytest.raises(TypeError, match="NoneType"):
        None - Value(2)
    with pytest.raises(TypeError, match="NoneType"):
        None / Value(2)
    with pytest.raises(TypeError, match="cannot compare Value with str"):
        Value(2) < "a"  # noqa: B015


def test_power_needs_a_constant_exponent():
    with pytest.raises(TypeError, match="exponent must be a constant"):
        Value(2) ** Value(3)
    with pytest.raises(TypeError, match="exponent must be a constant"):
        2 ** Value(3)
    with pytest.raises(TypeError, match="exponent must be a constant"):
        Value(2) ** "3"


def test_arithmetic_errors_are_clear():
    with pytest.raises(ZeroDivisionError, match=r"0\.0 \*\* -1: zero to a negative power"):
        Value(0.0) ** -1
    with pytest.raises(ValueError, match="negative base needs an integer exponent"):
        Value(-8.0) ** (1 / 3)
    with pytest.raises(ZeroDivisionError, match=r"division by zero: 1\.0 / 0"):
        Value(1.0) / Value(0.0)
    with pytest.raises(ZeroDivisionError, match="division by zero"):
        Value(1.0) / 0
    with pytest.raises(ZeroDivisionError, match=r"division by zero: 2\.0 / 0"):
        2 / Value(0.0)
    with pytest.raises(OverflowError, match=r"exp\(1000\.0\) overflows"):
        Value(1000.0).exp()
    with pytest.raises(OverflowError, match=r"10\.0 \*\* 400 overflows"):
        Value(10.0) ** 400
    with pytest.raises(ValueError, match="one local derivative per child"):
        Value(1.0, (Value(2.0),), "+")


def test_power_edge_cases():
    for p, slope in ((0, 0.0), (1, 1.0), (2, 0.0), (0.5, math.inf)):
        x = Value(0.0)
        (x**p).backward()
        assert x.grad == slope
    x = Value(-2.0)
    y = x**3
    y.backward()
    assert (y.data, x.grad) == (-8.0, 12.0)
    x = Value(1e-200)
    (x**-1).backward()
    assert x.grad == -math.inf  # the true slope, -1e400, is beyond a float


# -- NumPy object arrays ---------------------------------------------------------------------


def test_numpy_ufuncs_call_value_methods():
    xs = np.array([Value(1.0), Value(2.0)], dtype=object)
    for ufunc, f in [
        (np.exp, math.exp),
        (np.log, math.log),
        (np.sin, math.sin),
        (np.cos, math.cos),
        (np.tanh, math.tanh),
        (np.sqrt, math.sqrt),
        (np.abs, abs),
        (np.negative, lambda x: -x),
    ]:
        out = ufunc(xs)
        assert all(isinstance(v, Value) for v in out)
        assert [v.data for v in out] == pytest.approx([f(1.0), f(2.0)], abs=1e-15)


def test_numpy_matmul_and_max_on_object_arrays():
    xs = [Value(1.0), Value(-2.0), Value(0.5)]
    W = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    y = np.array(xs, dtype=object) @ W
    loss = y[0] * y[1] + Value(0.0)
    loss.backward()
    y0, y1 = [1.0 - 6.0 + 2.5, 2.0 - 8.0 + 3.0]
    assert (y[0].data, y[1].data) == (y0, y1)
    assert [x.grad for x in xs] == pytest.approx(list(W @ np.array([y1, y0])), abs=1e-12)
    for x in xs:
        x.grad = 0.0
    best = np.max(np.array(xs, dtype=object))
    assert best is xs[0]
    biggest = np.maximum(np.array(xs, dtype=object), 0.75)
    assert [b if isinstance(b, float) else b.data for b in biggest] == [1.0, 0.75, 0.75]
    assert np.sum(np.array(xs, dtype=object)).data == -0.5


def test_value_plus_array_defers_to_numpy():
    out = Value(1.0) + np.array([1.0, 2.0])
    assert out.dtype == object
    assert [v.data for v in out] == [2.0, 3.0]


# -- the MLP ---------------------------------------------------------------------------------


def test_mlp_forward_backward_and_determinism():
    mlp = MLP(3, [4, 4, 2], rng=random.Random(7))
    again = MLP(3, [4, 4, 2], rng=random.Random(7))
    assert [p.data for p in mlp.parameters()] == [p.data for p in again.parameters()]
    assert len(mlp.parameters()) == (3 + 1) * 4 + (4 + 1) * 4 + (4 + 1) * 2
    assert [n.nonlin for layer in mlp.layers for n in layer.neurons] == [True] * 8 + [False] * 2
    out = mlp([1.0, -2.0, 0.5])
    assert len(out) == 2 and all(isinstance(v, Value) for v in out)
    loss = sum((o - t) ** 2 for o, t in zip(out, [1.0, -1.0], strict=True))
    loss.backward()
    assert any(p.grad != 0.0 for p in mlp.parameters())
    mlp.zero_grad()
    assert all(p.grad == 0.0 for p in mlp.parameters())
    with pytest.raises(ValueError, match="expects 3 inputs, got 2"):
        mlp([1.0, 2.0])
    assert len(Layer(2, 3)([1.0, 2.0])) == 3
    assert len(Neuron(2).parameters()) == 3


def test_mlp_from_weights_matches_hand_computation():
    W1, b1 = [[1.0, -1.0], [0.5, 2.0], [-3.0, 1.0]], [0.0, 0.5, 1.0]
    W2, b2 = [[1.0, 2.0, -1.0]], [0.25]
    mlp = MLP.from_weights([(W1, b1), (W2, b2)])
    x = [2.0, 1.0]
    h = np.maximum(0.0, np.array(W1) @ x + b1)
    expected = (np.array(W2) @ h + b2)[0]
    (y,) = mlp(x)
    assert y.data == pytest.approx(expected, abs=1e-12)
    assert [p.data for p in mlp.layers[0].neurons[1].parameters()] == [0.5, 2.0, 0.5]
    with pytest.raises(ValueError, match="layer 1"):
        MLP.from_weights([(W1, b1), ([[1.0, 2.0]], [0.0])])
    with pytest.raises(ValueError, match="layer 0"):
        MLP.from_weights([(W1, [0.0])])


def test_mlp_gradient_matches_central_difference():
    mlp = MLP(2, [3, 1], rng=random.Random(3))
    x = [0.7, -1.2]
    params = mlp.parameters()

    def loss_at(values: list[float]) -> float:
        for p, v in zip(params, values, strict=True):
            p.data = v
        return (mlp(x)[0] - 0.3).tanh().data ** 2

    start = [p.data for p in params]
    ((mlp(x)[0] - 0.3).tanh() ** 2).backward()
    analytic = [p.grad for p in params]
    numeric = central_difference(lambda *vs: loss_at(list(vs)), *start)
    assert analytic == pytest.approx(numeric, rel=1e-5, abs=1e-7)


def test_mlp_matches_the_tensor_engine_if_available():
    tensor = pytest.importorskip("tensorgrad.core.tensor")
    rng = random.Random(11)
    sizes = [3, 4, 4, 2]
    weights = [
        (
            [[rng.uniform(-1, 1) for _ in range(n_in)] for _ in range(n_out)],
            [rng.uniform(-0.5, 0.5) for _ in range(n_out)],
        )
        for n_in, n_out in itertools.pairwise(sizes)
    ]
    x = [0.3, -1.2, 0.8]
    mlp = MLP.from_weights(weights)
    out = mlp(x)
    loss = sum(o * o * (i + 1) for i, o in enumerate(out))
    loss.backward()

    params = [
        (
            tensor.Tensor(W, dtype=np.float64, requires_grad=True),
            tensor.Tensor(b, dtype=np.float64, requires_grad=True),
        )
        for W, b in weights
    ]
    h = tensor.Tensor([x], dtype=np.float64)
    for k, (W, b) in enumerate(params):
        h = h @ W.T + b
        h = h.relu() if k < len(params) - 1 else h
    t_loss = (h * h * tensor.Tensor([1.0, 2.0], dtype=np.float64)).sum()
    t_loss.backward()

    assert float(t_loss.data) == pytest.approx(loss.data, abs=1e-12)
    for (W, b), layer in zip(params, mlp.layers, strict=True):
        scalar_W = [[w.grad for w in n.w] for n in layer.neurons]
        scalar_b = [n.b.grad for n in layer.neurons]
        np.testing.assert_allclose(W.grad.data, scalar_W, rtol=0, atol=1e-10)
        np.testing.assert_allclose(b.grad.data, scalar_b, rtol=0, atol=1e-10)


# -- the module stays on the standard library; the doc's examples run ------------------------


def test_scalar_imports_only_the_standard_library():
    source = (ROOT / "tensorgrad" / "scalar.py").read_text()
    imported = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "scalar.py must not import from its own package"
            imported.add(node.module.split(".")[0])
    assert imported - {"__future__"} <= sys.stdlib_module_names
    assert not imported & {"numpy", "tensorgrad"}


def expected_output(block: str, text_after: str | None) -> str:
    """What a doc snippet must print: the text block right after it, if there is one, else
    the comments on or just below its print lines (``print(x)  # 1.0``)."""
    if text_after is not None:
        return text_after
    lines, expected = block.splitlines(), []
    for i, line in enumerate(lines):
        if line.lstrip().startswith("print("):
            comment = line.partition(")  # ")[2] or lines[i + 1].strip().removeprefix("# ")
            expected.append(comment + "\n")
    return "".join(expected)


def test_docs_examples_print_what_the_page_shows(capsys):
    text = (ROOT / "docs" / "scalar.md").read_text()
    pattern = r"```python\n(.*?)```\n(?:\n```text\n(.*?)```\n)?"
    snippets = re.findall(pattern, text, flags=re.DOTALL)
    assert len(snippets) >= 10, "docs/scalar.md lost its examples"
    namespace: dict = {"__name__": "docs_scalar"}
    for number, (block, text_after) in enumerate(snippets, 1):
        exec(compile(block, f"scalar.md block {number}", "exec"), namespace)
        printed = capsys.readouterr().out
        assert printed == expected_output(block, text_after or None), f"block {number}"
        assert printed, f"block {number} shows no output to check"
