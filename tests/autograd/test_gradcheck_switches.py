"""gradcheck's and gradgradcheck's PyTorch switches: each catches a deliberately wrong op
(a custom Function, or a ``tensorgrad.ops.Op`` where the bug is in a batching rule, which a
Function, run once per sample inside vmap, cannot have) and passes a right one; the names
and defaults are PyTorch's."""

from __future__ import annotations

import importlib
import inspect
import warnings

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import ops
from tensorgrad.autograd import Function, GradcheckError, gradcheck, gradgradcheck
from tensorgrad.core.engine import apply

RNG = np.random.default_rng(11)

#: where tensorgrad's defaults differ from PyTorch's on purpose (docs/porting.md)
DIFFERENT_DEFAULTS = {"rtol": (1e-4, 1e-3), "fast_mode": (None, False)}
#: tensorgrad's own options beyond PyTorch's
OWN_OPTIONS = {"params", "mode", "seed", "n_directions"}


def make(*shape):
    return tg.Tensor(RNG.uniform(0.5, 1.5, shape), requires_grad=True)


# --------------------------------------------------------------------------- the signatures
@pytest.mark.parametrize("name", ["gradcheck", "gradgradcheck"])
def test_switch_names_and_defaults_are_pytorch_s(name):
    torch = pytest.importorskip("torch")
    theirs = inspect.signature(getattr(torch.autograd, name)).parameters
    ours = inspect.signature(getattr(tg.autograd, name)).parameters
    assert set(ours) - set(theirs) == OWN_OPTIONS
    for parameter, their in theirs.items():
        our = ours[parameter]
        assert our.kind == their.kind, parameter
        expected = DIFFERENT_DEFAULTS.get(parameter, (their.default, their.default))
        assert (our.default, their.default) == expected, parameter
    assert issubclass(GradcheckError, RuntimeError)
    their_error = importlib.import_module("torch.autograd.gradcheck").GradcheckError
    assert issubclass(their_error, RuntimeError)


# --------------------------------------------------------------------------- fast_mode, masked
class WrongCube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3.3 * x * x


def test_fast_mode_is_the_directional_check_and_slow_mode_the_jacobian():
    x = make(3, 2)
    for fast, check in ((True, "directional"), (False, "jacobian")):
        with pytest.raises(GradcheckError) as info:
            gradcheck(WrongCube.apply, x, fast_mode=fast)
        assert info.value.report.check == check
    assert gradcheck(lambda t: t**3, x, fast_mode=False)
    assert gradcheck(lambda t: t**3, x, fast_mode=True, mode="directional")
    with pytest.raises(ValueError, match="fast_mode=True means mode='directional'"):
        gradcheck(lambda t: t**3, x, fast_mode=True, mode="jacobian")


def test_masked_changes_nothing_on_dense_tensors():
    x = make(4)
    for masked in (None, False, True):
        assert gradcheck(lambda t: t.exp(), x, masked=masked)
        assert not gradcheck(WrongCube.apply, x, masked=masked, raise_exception=False)
    with pytest.raises(TypeError, match="masked"):
        gradcheck(lambda t: t.exp(), x, masked="yes")


def test_switches_that_need_another_are_refused_with_pytorch_s_message():
    x = make(3)
    with pytest.raises(ValueError, match="check_batched_grad=True requires check_backward_ad"):
        gradcheck(
            lambda t: t * 2,
            x,
            check_batched_grad=True,
            check_backward_ad=False,
            check_forward_ad=True,
        )
    with pytest.raises(ValueError, match="check_batched_forward_grad=True requires"):
        gradcheck(lambda t: t * 2, x, check_batched_forward_grad=True)
    with pytest.raises(ValueError, match="at least one of check_fwd_over_rev or check_rev"):
        gradgradcheck(lambda t: t * 2, x, check_rev_over_rev=False)
    with pytest.raises(ValueError, match="check_undefined_grad=True requires check_rev_over"):
        gradgradcheck(lambda t: t * 2, x, check_rev_over_rev=False, check_fwd_over_rev=True)
    with pytest.raises(ValueError, match="nondet_tol"):
        gradcheck(lambda t: t * 2, x, nondet_tol=-1.0)


# --------------------------------------------------------------------------- forward AD
class CubeWithoutJvp(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x * x


def test_forward_ad_of_a_function_without_jvp_raises_pytorch_s_error():
    x = make(3)
    assert gradcheck(CubeWithoutJvp.apply, x)
    with pytest.raises(NotImplementedError, match="You must implement the jvp function"):
        gradcheck(CubeWithoutJvp.apply, x, check_forward_ad=True)


def test_pytorch_raises_the_same_for_a_function_without_jvp():
    torch = pytest.importorskip("torch")

    class TorchCube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**3

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 3 * x * x

    x = torch.rand(3, dtype=torch.float64, requires_grad=True)
    with pytest.raises(NotImplementedError, match="You must implement the jvp function"):
        torch.autograd.gradcheck(TorchCube.apply, (x,), check_forward_ad=True)


# --------------------------------------------------------------------------- undefined grads
def two_outputs_function(handles_none: bool):
    """(2x, x²) with ``set_materialize_grads(False)``: backward gets None for an output that
    received no gradient; the wrong one does arithmetic on it anyway."""

    class TwoOutputs(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            ctx.save_for_backward(x)
            return x * 2, x * x

        @staticmethod
        def backward(ctx, grad_double, grad_square):
            (x,) = ctx.saved_tensors
            if handles_none:
                parts = [grad_double * 2 if grad_double is not None else None]
                parts.append(grad_square * 2 * x if grad_square is not None else None)
                parts = [p for p in parts if p is not None]
                return parts[0] + parts[1] if len(parts) == 2 else parts[0]
            return grad_double * 2 + grad_square * 2 * x

    return TwoOutputs


def test_undefined_output_grad_catches_a_backward_that_fails_on_none():
    x = make(4)
    with pytest.raises(GradcheckError, match="handle undefined output grads") as info:
        gradcheck(two_outputs_function(handles_none=False).apply, x)
    assert info.value.report.check == "undefined grad"
    assert "TypeError" in str(info.value)
    assert gradcheck(two_outputs_function(handles_none=False).apply, x, check_undefined_grad=False)
    assert gradcheck(two_outputs_function(handles_none=True).apply, x)


def products_function(handles_none: bool):
    """x·y as a custom Function whose jvp, in the wrong version, assumes both tangents."""

    class Product(Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_forward(x, y)
            return x * y

        @staticmethod
        def backward(ctx, grad):
            x, y = ctx.saved_tensors
            return grad * y, grad * x

        @staticmethod
        def jvp(ctx, tx, ty):
            x, y = ctx.saved_tensors
            if handles_none:
                return (0 if tx is None else tx * y) + (0 if ty is None else x * ty)
            return tx * y + x * ty

    return Product


def test_undefined_tangent_catches_a_jvp_that_fails_on_none():
    x, y = make(3), make(3)
    wrong = products_function(handles_none=False).apply
    with pytest.raises(GradcheckError, match="no tangent for input 0") as info:
        gradcheck(wrong, [x, y], check_forward_ad=True)
    assert info.value.report.check == "undefined tangent"
    assert gradcheck(wrong, [x, y], check_forward_ad=True, check_undefined_grad=False)
    assert gradcheck(products_function(handles_none=True).apply, [x, y], check_forward_ad=True)


# --------------------------------------------------------------------------- batched
def scaled_op(right: bool):
    """x · sum(x) as an Op. The wrong one claims an elementwise batching rule: inside vmap
    its VJP and JVP then get the whole batch's arrays, and their sums mix the samples. The
    right one declares no rule, so vmap runs it once per sample."""

    class Scaled(ops.Op):
        def forward(self, x):
            return x * x.sum()

        def backward(self, grad, out, x):
            return (grad * x.sum() + (grad * x).sum(),)

        def jvp(self, tangents, out, x):
            (t,) = tangents
            return t * x.sum() + x * t.sum()

    if not right:
        Scaled.batching = "elementwise"
    return lambda t: apply(Scaled(), t)


class Cube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x * x

    @staticmethod
    def jvp(ctx, tangent):
        (x,) = ctx.saved_tensors
        return tangent * 3 * x * x


def first_cotangent_op(right: bool):
    """x · sum(x) as an Op whose VJP reads its cotangent's array. The wrong one takes the
    array's first ``x.size`` entries: one cotangent's, right for one cotangent, but a stack
    of them (``is_grads_batched``, vmap over the sweep) gives every sample the first one."""

    class Scaled(ops.Op):
        def forward(self, x):
            return x * x.sum()

        def backward(self, grad, out, x):
            if not right:
                grad = np.asarray(grad).reshape(-1)[: np.size(out)].reshape(np.shape(out))
            return (grad * x.sum() + (grad * x).sum(),)

    return lambda t: apply(Scaled(), t)


def test_batched_grad_catches_a_vjp_that_mixes_the_samples():
    x = make(3, 4)
    wrong = first_cotangent_op(right=False)
    assert gradcheck(wrong, x)  # one cotangent at a time it is right
    with pytest.raises(GradcheckError, match="vmap of the VJPs") as info:
        gradcheck(wrong, x, check_batched_grad=True)
    assert info.value.report.check == "batched grad" and info.value.report.worst
    assert gradcheck(first_cotangent_op(right=True), x, check_batched_grad=True)
    assert gradcheck(Cube.apply, x, check_batched_grad=True)
    assert gradcheck(
        lambda a, b: ((a @ b).tanh(), a.sin()), [x, make(4, 2)], check_batched_grad=True
    )


def test_batched_forward_grad_catches_a_jvp_that_mixes_the_samples():
    x = make(3, 4)
    wrong = scaled_op(right=False)
    assert gradcheck(wrong, x, check_forward_ad=True)
    with pytest.raises(GradcheckError, match="vmap of the JVPs") as info:
        gradcheck(wrong, x, check_forward_ad=True, check_batched_forward_grad=True)
    assert info.value.report.check == "batched forward grad"
    assert gradcheck(
        scaled_op(right=True), x, check_forward_ad=True, check_batched_forward_grad=True
    )
    assert gradcheck(Cube.apply, x, check_forward_ad=True, check_batched_forward_grad=True)


# --------------------------------------------------------------------------- nondet, dtypes
def noisy_function(noise: float):
    class Noisy(Function):
        """sin with a backward that adds noise far below gradcheck's tolerances."""

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            jitter = 1 + tg.Tensor(np.random.default_rng().uniform(-noise, noise, x.shape))
            return grad * x.cos() * jitter

    return Noisy


@pytest.mark.parametrize("mode", ["directional", "jacobian"])
def test_nondet_tol_bounds_how_much_two_backward_runs_may_differ(mode):
    x = make(3)
    with pytest.raises(GradcheckError, match="Backward is not reentrant") as info:
        gradcheck(noisy_function(1e-9).apply, x, mode=mode)
    assert info.value.report.check == "reentrant backward"
    assert gradcheck(noisy_function(1e-9).apply, x, mode=mode, nondet_tol=1e-7)
    assert gradcheck(noisy_function(0.0).apply, x, mode=mode)


def test_check_grad_dtypes_holds_because_the_engine_casts():
    """An op's VJP or JVP that returns float32 for a float64 tensor: the engine gives the
    gradient (and the tangent) its tensor's dtype, so the check passes."""

    class Float32Rules(ops.Op):
        batching = "elementwise"

        def forward(self, x):
            return x * 2

        def backward(self, grad, out, x):
            return ((grad * 2).astype(np.float32),)

        def jvp(self, tangents, out, x):
            return (tangents[0] * 2).astype(np.float32)

    x = make(3)
    (g,) = tg.autograd.grad([apply(Float32Rules(), x)], [x], grad_outputs=[tg.ones(3)])
    assert g.dtype == tg.float64
    assert gradcheck(
        lambda t: apply(Float32Rules(), t), x, check_grad_dtypes=True, check_forward_ad=True
    )


# --------------------------------------------------------------------------- gradgradcheck
class CubeDerivative(Function):
    """3x² with a right backward (6x) and, on purpose, a wrong jvp."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 3 * x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 6 * x

    @staticmethod
    def jvp(ctx, tangent):
        (x,) = ctx.saved_tensors
        return tangent * 6.6 * x


class CubeThroughDerivative(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * CubeDerivative.apply(x)

    @staticmethod
    def jvp(ctx, tangent):
        (x,) = ctx.saved_tensors
        return tangent * 3 * x * x


def test_fwd_over_rev_catches_a_wrong_jvp_inside_a_backward():
    x = make(3, 2)
    assert gradgradcheck(CubeThroughDerivative.apply, x)  # reverse over reverse: right
    with pytest.raises(GradcheckError, match="second derivative, forward-mode"):
        gradgradcheck(CubeThroughDerivative.apply, x, check_fwd_over_rev=True)
    with pytest.raises(GradcheckError, match="second derivative, forward-mode"):
        gradgradcheck(
            CubeThroughDerivative.apply,
            x,
            check_fwd_over_rev=True,
            check_rev_over_rev=False,
            check_undefined_grad=False,
        )
    assert gradgradcheck(Cube.apply, x, check_fwd_over_rev=True)
    assert gradgradcheck(lambda t: (t.sin() * t).sum(), x, check_fwd_over_rev=True)


class SquareDetached(Function):
    """x² whose backward leaves the graph: its second derivative is lost."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * tg.Tensor(2 * x.numpy())


def test_rev_over_rev_catches_a_backward_that_leaves_the_graph():
    x = make(4)
    assert gradcheck(SquareDetached.apply, x)
    with pytest.raises(GradcheckError, match="second derivative"):
        gradgradcheck(SquareDetached.apply, x)


def test_gradgradcheck_batched_grad_passes_right_functions():
    x = make(3, 4)
    assert gradgradcheck(scaled_op(right=True), x, check_batched_grad=True)
    assert gradgradcheck(Cube.apply, x, check_batched_grad=True)
    assert gradgradcheck(lambda t: (t.sin() * t).tanh(), x, check_batched_grad=True)


class CubeDetachingItsGrad(Function):
    """x³ whose backward takes its incoming gradient out of the graph: the derivative of
    the gradient with respect to the upstream gradient is lost."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return tg.Tensor(grad.numpy()) * 3 * x * x


def test_gradgradcheck_checks_the_grad_outputs_too():
    x = make(3)
    v = tg.Tensor(RNG.standard_normal(3), requires_grad=True)
    assert gradgradcheck(lambda t: t.sin() * t, x, v)
    assert gradgradcheck(lambda t: t.sin() * t, x, (v.detach(),))  # a constant upstream
    for grad_outputs in (None, (v,)):  # drawn (requiring grad, as PyTorch's) or given
        with pytest.raises(GradcheckError, match="second derivative") as info:
            gradgradcheck(CubeDetachingItsGrad.apply, x, grad_outputs)
        assert info.value.report.input_name == "grad_outputs[0]"
    assert gradgradcheck(CubeDetachingItsGrad.apply, x, (v.detach(),))


def test_gen_non_contig_grad_outputs_reaches_backward_non_contiguous():
    seen = []

    def sine(t):
        out = t.sin()
        out.register_hook(lambda g: seen.append(g.numpy().flags.c_contiguous))
        return out

    x = make(3, 4)
    assert gradgradcheck(sine, x, gen_non_contig_grad_outputs=True)
    assert seen and not any(seen)
    seen.clear()
    assert gradgradcheck(sine, x)
    assert seen and all(seen)


def test_non_contiguous_inputs_stay_non_contiguous():
    layouts = []

    def record(t):
        layouts.append(t.numpy().flags.c_contiguous)
        return t.exp()

    x = tg.Tensor(RNG.standard_normal((4, 6))[:, ::2], requires_grad=True)
    assert not x.numpy().flags.c_contiguous
    assert gradcheck(record, x)
    assert layouts and not any(layouts)


def test_the_switches_reach_module_checks():
    model = tg.nn.Linear(3, 2)
    batch = tg.Tensor(RNG.standard_normal((4, 3)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # float32 parameters are checked as float64 copies
        assert tg.autograd.gradcheck_module(
            model, batch, check_inputs=True, fast_mode=False, check_batched_grad=True
        )
        assert tg.autograd.gradcheck_module(
            model, batch, check_inputs=True, check_forward_ad=True, check_batched_forward_grad=True
        )
