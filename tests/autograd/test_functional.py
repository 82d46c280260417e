"""tg.autograd.functional: PyTorch's jacobian, hessian, vjp, jvp, hvp, vhp.

Without torch: hand values and central differences; with torch: the same calls, flag by
flag, with the same return structures and the same errors.
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.autograd import functional as F

RNG = np.random.default_rng(7)
A = RNG.standard_normal(3)
B = RNG.standard_normal((2, 3))
VA = RNG.standard_normal(3)
VB = RNG.standard_normal((2, 3))


def exp_sum(x):
    return (x.exp() * x).sum()


def two_in_two_out(x, y):
    return (x * y).tanh(), (y**2).sum(0)


def scalar_of_two(x, y):
    return (x * y.sin()).sum() + (x**3).sum()


def numeric_jacobian(fn, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central differences, column by column: shape out.shape + x.shape."""
    cols = []
    for k in range(x.size):
        e = np.zeros_like(x)
        e.flat[k] = eps
        plus = fn(tg.tensor(x + e)).numpy()
        minus = fn(tg.tensor(x - e)).numpy()
        cols.append((plus - minus) / (2 * eps))
    out_shape = cols[0].shape
    return np.stack(cols, -1).reshape(out_shape + x.shape)


# --------------------------------------------------------------------------- hand values
def test_jacobian_of_an_elementwise_square_is_diagonal():
    x = tg.tensor([1.0, 2.0, 3.0])
    for strategy in ("reverse-mode", "forward-mode"):
        jac = F.jacobian(lambda t: t * t, x, vectorize=True, strategy=strategy)
        assert isinstance(jac, tg.Tensor)
        np.testing.assert_array_equal(jac.numpy(), np.diag([2.0, 4.0, 6.0]))


def test_hessian_of_a_cubic_by_hand():
    # f = Σ x³ + x0·x1: H = diag(6x) + [[0, 1], [1, 0]]
    x = tg.tensor([1.0, -2.0])
    expected = np.array([[6.0, 1.0], [1.0, -12.0]])
    for strategy in ("reverse-mode", "forward-mode"):
        h = F.hessian(
            lambda t: (t**3).sum() + t[0] * t[1],
            x,
            vectorize=True,
            outer_jacobian_strategy=strategy,
        )
        np.testing.assert_allclose(h.numpy(), expected)


def test_products_by_hand():
    x = tg.tensor([1.0, -2.0])
    v = tg.tensor([1.0, 1.0])

    def f(t):
        return (t**3).sum() + t[0] * t[1]

    hv = np.array([[6.0, 1.0], [1.0, -12.0]]) @ v.numpy()
    for create_graph in (False, True):
        value, out = F.hvp(f, x, v, create_graph=create_graph)
        assert value.item() == pytest.approx(-9.0)
        np.testing.assert_allclose(out.numpy(), hv)
        _, out = F.vhp(f, x, v, create_graph=create_graph)
        np.testing.assert_allclose(out.numpy(), hv)
    value, jv = F.jvp(lambda t: t * t, x, v)
    np.testing.assert_allclose(jv.numpy(), [2.0, -4.0])
    value, vj = F.vjp(f, x)  # v may be omitted for a one-element output
    np.testing.assert_allclose(vj.numpy(), [3.0 - 2.0, 12.0 + 1.0])


def test_the_lecture_example_jvp():
    # y = ln(x1) + x1·x2 − sin(x2) at (2, 5): ∂y/∂x1 = 1/x1 + x2 = 5.5
    def y(x1, x2):
        return x1.log() + x1 * x2 - x2.sin()

    x1, x2 = tg.tensor(2.0), tg.tensor(5.0)
    value, slope = F.jvp(y, (x1, x2), (tg.tensor(1.0), tg.tensor(0.0)))
    assert value.item() == pytest.approx(np.log(2) + 10 - np.sin(5))
    assert slope.item() == pytest.approx(5.5)
    _, (d1, d2) = F.vjp(y, (x1, x2))
    assert (d1.item(), d2.item()) == pytest.approx((5.5, 2 - np.cos(5)))


# --------------------------------------------------------------------------- central differences
@pytest.mark.parametrize("strategy", ["reverse-mode", "forward-mode"])
def test_jacobian_against_central_differences(strategy):
    def f(x):
        return (x[:, None] * tg.tensor(B.T)).sin().sum(0) / (1 + x.pow(2).sum())

    jac = F.jacobian(f, tg.tensor(A), vectorize=True, strategy=strategy)
    np.testing.assert_allclose(jac.numpy(), numeric_jacobian(f, A), atol=1e-8)


def test_jvp_and_vjp_against_central_differences_and_each_other():
    def f(x):
        return (x.reshape(2, 3) @ tg.tensor(B.T)).tanh()

    x = RNG.standard_normal(6)
    v = RNG.standard_normal(6)
    u = RNG.standard_normal((2, 2))
    numeric = numeric_jacobian(f, x).reshape(4, 6)
    _, jv = F.jvp(f, tg.tensor(x), tg.tensor(v))
    np.testing.assert_allclose(jv.numpy().ravel(), numeric @ v, atol=1e-8)
    _, vj = F.vjp(f, tg.tensor(x), tg.tensor(u))
    np.testing.assert_allclose(vj.numpy(), u.ravel() @ numeric, atol=1e-8)
    # the adjoint identity ⟨u, J v⟩ = ⟨Jᵀ u, v⟩
    assert float(np.vdot(u, jv.numpy())) == pytest.approx(float(np.vdot(vj.numpy(), v)))


def test_hessian_against_central_differences_of_the_gradient():
    def grad_of(x):
        return F.vjp(exp_sum, x)[1]

    h = F.hessian(exp_sum, tg.tensor(A))
    np.testing.assert_allclose(h.numpy(), numeric_jacobian(grad_of, A), atol=1e-7)


# --------------------------------------------------------------------------- structures, flags
def test_return_structures_follow_the_arguments():
    a, b = tg.tensor(A), tg.tensor(B)
    jac = F.jacobian(two_in_two_out, (a, b))
    assert isinstance(jac, tuple) and len(jac) == 2 and all(len(row) == 2 for row in jac)
    assert jac[0][1].shape == (2, 3, 2, 3) and jac[1][0].shape == (3, 3)
    jac = F.jacobian(lambda x: x.sin(), (a,))
    assert isinstance(jac, tuple) and isinstance(jac[0], tg.Tensor)
    jac = F.jacobian(lambda x: (x.sin(), x.cos()), a)
    assert isinstance(jac, tuple) and jac[1].shape == (3, 3)
    h = F.hessian(scalar_of_two, (a, b))
    assert h[0][1].shape == (3, 2, 3) and h[1][1].shape == (2, 3, 2, 3)
    value, (va, vb) = F.vjp(scalar_of_two, (a, b))
    assert isinstance(value, tg.Tensor) and va.shape == (3,) and vb.shape == (2, 3)


def test_forward_mode_jacobian_returns_lists_as_pytorch_does():
    jac = F.jacobian(
        two_in_two_out, (tg.tensor(A), tg.tensor(B)), vectorize=True, strategy="forward-mode"
    )
    assert isinstance(jac, list) and all(isinstance(row, list) for row in jac)


def test_create_graph_makes_results_differentiable():
    x = tg.tensor(A, requires_grad=True)
    _, vj = F.vjp(exp_sum, x)
    assert not vj.requires_grad
    _, vj = F.vjp(exp_sum, x, create_graph=True)
    assert vj.requires_grad
    # d/dx Σ ∂f/∂x = Σ_j H_ij
    (gg,) = tg.autograd.grad(vj.sum(), x)
    np.testing.assert_allclose(gg.numpy(), F.hessian(exp_sum, x).numpy().sum(0))
    _, jv = F.jvp(lambda t: t.exp(), x, tg.tensor(VA), create_graph=True)
    assert jv.requires_grad
    _, hv = F.hvp(exp_sum, x, tg.tensor(VA), create_graph=True)
    assert hv.requires_grad
    jac = F.jacobian(lambda t: t.exp(), x, create_graph=True)
    assert jac.requires_grad


def test_results_do_not_touch_grad_or_the_inputs():
    x = tg.tensor(A, requires_grad=True)
    F.hessian(exp_sum, x)
    F.hvp(exp_sum, x, tg.tensor(VA))
    F.jvp(exp_sum, x, tg.tensor(VA))
    assert x.grad is None
    np.testing.assert_array_equal(x.numpy(), A)


def test_inside_an_open_dual_level_jvp_and_hvp_use_the_double_backward_trick():
    x = tg.tensor(A)
    expected_jv = F.jvp(lambda t: t.sin(), x, tg.tensor(VA))[1].numpy()
    expected_hv = F.hvp(exp_sum, x, tg.tensor(VA))[1].numpy()
    with tg.autograd.forward_ad.dual_level():
        np.testing.assert_allclose(
            F.jvp(lambda t: t.sin(), x, tg.tensor(VA))[1].numpy(), expected_jv
        )
        np.testing.assert_allclose(F.hvp(exp_sum, x, tg.tensor(VA))[1].numpy(), expected_hv)


def test_inputs_nothing_depends_on_get_zeros():
    a, b = tg.tensor(A), tg.tensor(B)
    _, (va, vb) = F.vjp(lambda x, y: x.sum() * 2, (a, b))
    np.testing.assert_array_equal(va.numpy(), np.full(3, 2.0))
    np.testing.assert_array_equal(vb.numpy(), np.zeros((2, 3)))
    _, jv = F.jvp(lambda x, y: x * 2, (a, b), (tg.tensor(VA), tg.tensor(VB)))
    np.testing.assert_allclose(jv.numpy(), 2 * VA)
    jac = F.jacobian(lambda x, y: x * 2, (a, b))
    np.testing.assert_array_equal(jac[1].numpy(), np.zeros((3, 2, 3)))


# --------------------------------------------------------------------------- errors
def test_strict_errors():
    a, b = tg.tensor(A), tg.tensor(B)
    with pytest.raises(RuntimeError, match="independent of input 1"):
        F.vjp(lambda x, y: x.sum(), (a, b), strict=True)
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function does not"):
        F.vjp(lambda x: tg.tensor(1.0), a, strict=True)
    with pytest.raises(RuntimeError, match="independent of input 1"):
        F.jacobian(lambda x, y: x.sin(), (a, b), strict=True)
    with pytest.raises(RuntimeError, match="jacobian of the user-provided function with respect"):
        F.hessian(lambda x: x.sum() * 2, a, strict=True)
    with pytest.raises(RuntimeError, match="independent of input 1"):
        F.jvp(lambda x, y: x.sin(), (a, b), (tg.tensor(VA), tg.tensor(VB)), strict=True)
    with pytest.raises(RuntimeError, match="`strict=True` and `vectorized=True`"):
        F.jacobian(lambda x: x.sin(), a, strict=True, vectorize=True)


def test_strategy_and_argument_errors():
    a = tg.tensor(A)
    with pytest.raises(AssertionError, match='"forward-mode" or "reverse-mode"'):
        F.jacobian(exp_sum, a, strategy="sideways")
    with pytest.raises(AssertionError, match='"forward-mode" or "reverse-mode"'):
        F.hessian(exp_sum, a, outer_jacobian_strategy="sideways")
    with pytest.raises(NotImplementedError, match="only implemented for `vectorize=True`"):
        F.jacobian(exp_sum, a, strategy="forward-mode")
    with pytest.raises(NotImplementedError, match="`create_graph=True`"):
        F.jacobian(exp_sum, a, create_graph=True, vectorize=True, strategy="forward-mode")
    with pytest.raises(RuntimeError, match="`strict=True`"):
        F.jacobian(exp_sum, a, strict=True, vectorize=True, strategy="forward-mode")
    with pytest.raises(TypeError, match="value at index 1 has type"):
        F.jacobian(lambda x, y: x, (a, 3.0))
    with pytest.raises(
        RuntimeError,
        match=r"v has invalid size: should be tg.Size\(\[3\]\) but got tg.Size\(\[2\]\)",
    ):
        F.jvp(lambda x: x, a, tg.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="v is a tuple of invalid length"):
        F.jvp(lambda x, y: x, (a, a), (a,))
    with pytest.raises(RuntimeError, match="v can only be None"):
        F.jvp(lambda x: x, a)
    with pytest.raises(RuntimeError, match="v can only be None"):
        F.vjp(lambda x: x, a)
    with pytest.raises(RuntimeError, match="should return a single Tensor"):
        F.hvp(lambda x: (x.sum(),), a, a)
    with pytest.raises(RuntimeError, match="should contain a single element"):
        F.vhp(lambda x: x, a, a)
    with pytest.raises(RuntimeError, match="should contain a single element"):
        F.hessian(lambda x: x, a)


def test_import_is_lazy():
    import subprocess
    import sys

    code = (
        "import sys, tensorgrad as tg; "
        "assert 'tensorgrad.autograd.functional' not in sys.modules; "
        "tg.autograd.functional.jacobian; "
        "assert 'tensorgrad.autograd.functional' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# --------------------------------------------------------------------------- against torch
def _compare(name, ours, theirs, requires_grad=True):
    if isinstance(theirs, (tuple, list)):
        assert type(ours) is type(theirs) and len(ours) == len(theirs), name
        for o, t in zip(ours, theirs, strict=True):
            _compare(name, o, t, requires_grad)
        return
    assert isinstance(ours, tg.Tensor), name
    assert ours.shape == tuple(theirs.shape), name
    if requires_grad:
        assert ours.requires_grad == theirs.requires_grad, name
    np.testing.assert_allclose(
        ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-10, atol=1e-12, err_msg=name
    )


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("strict", [False, True])
def test_products_against_torch(create_graph, strict):
    torch = pytest.importorskip("torch")
    import torch.autograd.functional as TF

    def T(a, grad=False):
        return torch.tensor(a, requires_grad=grad)

    def G(a, grad=False):
        return tg.tensor(a, requires_grad=grad)

    for grad in (False, True):
        for api in ("jvp", "vjp"):
            v = (VA, VB) if api == "jvp" else (B, VA)
            ours = getattr(F, api)(
                two_in_two_out,
                (G(A, grad), G(B)),
                tuple(G(x) for x in v),
                create_graph=create_graph,
                strict=strict,
            )
            theirs = getattr(TF, api)(
                two_in_two_out,
                (T(A, grad), T(B)),
                tuple(T(x) for x in v),
                create_graph=create_graph,
                strict=strict,
            )
            _compare(f"{api} grad={grad}", ours, theirs)
        for api in ("hvp", "vhp"):
            ours = getattr(F, api)(
                scalar_of_two,
                (G(A, grad), G(B)),
                (G(VA), G(VB)),
                create_graph=create_graph,
                strict=strict,
            )
            theirs = getattr(TF, api)(
                scalar_of_two,
                (T(A, grad), T(B)),
                (T(VA), T(VB)),
                create_graph=create_graph,
                strict=strict,
            )
            _compare(f"{api} grad={grad}", ours, theirs)
            ours = getattr(F, api)(exp_sum, G(A), G(VA), create_graph=create_graph, strict=strict)
            theirs = getattr(TF, api)(
                exp_sum, T(A), T(VA), create_graph=create_graph, strict=strict
            )
            _compare(f"{api} single", ours, theirs)


@pytest.mark.parametrize("strategy", ["reverse-mode", "forward-mode"])
def test_jacobian_and_hessian_against_torch(strategy):
    torch = pytest.importorskip("torch")
    import torch.autograd.functional as TF

    cases = [
        (exp_sum, (A,)),
        (lambda x: (x.exp() * x).sin(), (A,)),
        (two_in_two_out, (A, B)),
        (lambda x, y: ((x * y).tanh(),), (A, B)),
    ]
    for fn, args in cases:
        for as_tuple in (True, False) if len(args) == 1 else (True,):
            ours_in = tuple(tg.tensor(a) for a in args)
            theirs_in = tuple(torch.tensor(a) for a in args)
            if not as_tuple:
                ours_in, theirs_in = ours_in[0], theirs_in[0]
            ours = F.jacobian(fn, ours_in, vectorize=True, strategy=strategy)
            theirs = TF.jacobian(fn, theirs_in, vectorize=True, strategy=strategy)
            _compare(f"jacobian {fn}", ours, theirs)
    for fn, args in [(exp_sum, (A,)), (scalar_of_two, (A, B))]:
        ours = F.hessian(
            fn, tuple(map(tg.tensor, args)), vectorize=True, outer_jacobian_strategy=strategy
        )
        theirs = TF.hessian(
            fn, tuple(map(torch.tensor, args)), vectorize=True, outer_jacobian_strategy=strategy
        )
        # PyTorch's forward-over-reverse Hessian comes back requiring grad (its inputs were
        # set to require grad inside); tensorgrad's is detached, as create_graph=False says
        _compare(f"hessian {fn}", ours, theirs, requires_grad=strategy == "reverse-mode")


def test_errors_match_torch():
    torch = pytest.importorskip("torch")
    import torch.autograd.functional as TF

    calls = [
        lambda M, t: M.jacobian(lambda x: x, t(A), strategy="forward-mode"),
        lambda M, t: M.jacobian(lambda x: x, t(A), strategy="nope"),
        lambda M, t: M.jvp(lambda x: x, t(A), t(B)),
        lambda M, t: M.vjp(lambda x, y: x.sum(), (t(A), t(B)), strict=True),
        lambda M, t: M.hessian(lambda x: x.sum() * 2, t(A), strict=True),
        lambda M, t: M.hvp(lambda x: x, t(A), t(A)),
    ]
    for call in calls:
        with pytest.raises(Exception) as theirs:
            call(TF, torch.tensor)
        with pytest.raises(type(theirs.value)) as ours:
            call(F, tg.tensor)
        first = str(theirs.value).replace("torch.Size", "Size").split(". ")[0]
        assert first in str(ours.value).replace("tg.Size", "Size")
