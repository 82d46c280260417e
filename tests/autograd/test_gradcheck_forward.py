"""gradcheck(check_forward_ad=True), check_backward_ad and check_undefined_grad: forward
mode's J·δ against central differences, reported by input and output."""

from __future__ import annotations

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.autograd import GradcheckError, gradcheck, gradcheck_module

RNG = np.random.default_rng(3)


def make(*shape):
    return tg.Tensor(RNG.standard_normal(shape), requires_grad=True)


def two_outputs(x, w):
    h = (x @ w).tanh()
    return h, (h * h).sum(1).exp()


def cube_function(jvp_factor=3.0, backward_factor=3.0, ignore_grad=False):
    """x³ as a custom Function whose JVP and VJP can be made wrong on purpose."""

    class Cube(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**3

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            if ignore_grad and not grad.numpy().any():  # "no gradient given": assume ones
                return backward_factor * x * x
            return backward_factor * x * x * grad

        @staticmethod
        def jvp(ctx, tangent):
            (x,) = ctx.saved_tensors
            return jvp_factor * x * x * tangent

    return Cube


@pytest.mark.parametrize("mode", ["directional", "jacobian"])
def test_forward_mode_passes_on_correct_rules(mode):
    x, w = make(4, 3), make(3, 2)
    assert gradcheck(two_outputs, [x, w], mode=mode, check_forward_ad=True)
    assert gradcheck(two_outputs, [x, w], mode=mode, check_forward_ad=True, check_backward_ad=False)
    cube = cube_function()
    assert gradcheck(cube.apply, [make(5)], mode=mode, check_forward_ad=True)


@pytest.mark.parametrize("mode", ["directional", "jacobian"])
def test_a_wrong_jvp_fails_naming_the_input_and_the_output(mode):
    cube = cube_function(jvp_factor=3.3)
    x, y = make(4), make(4)
    # the backward is right: without check_forward_ad the check passes
    assert gradcheck(lambda a, b: (a * 2, cube.apply(b)), [x, y], mode=mode)
    with pytest.raises(GradcheckError) as info:
        gradcheck(lambda a, b: (a * 2, cube.apply(b)), [x, y], mode=mode, check_forward_ad=True)
    report = info.value.report
    assert report.check == f"forward-mode {mode}"
    assert report.input_name == "input 1"
    assert "output 1" in report.summary
    assert report.worst and report.worst[0].analytic == pytest.approx(
        1.1 * report.worst[0].numeric, rel=1e-4
    )
    assert "input 1" in str(info.value) and "output 1" in str(info.value)


def test_check_backward_ad_false_skips_reverse_mode():
    cube = cube_function(backward_factor=2.0)
    with pytest.raises(GradcheckError, match="directional check failed"):
        gradcheck(cube.apply, [make(3)])
    assert gradcheck(cube.apply, [make(3)], check_forward_ad=True, check_backward_ad=False)
    with pytest.raises(ValueError, match="at least one of check_forward_ad or check_backward_ad"):
        gradcheck(cube.apply, [make(3)], check_backward_ad=False)


def test_an_op_without_a_jvp_rule_is_named(monkeypatch):
    from tensorgrad import ops

    monkeypatch.setattr(ops.Sin, "jvp", None)
    monkeypatch.setattr(ops.Sin, "no_jvp", "a test removed it")
    assert gradcheck(lambda x: x.sin(), [make(3)])
    with pytest.raises(RuntimeError, match="sin: .*no JVP rule"):
        gradcheck(lambda x: x.sin(), [make(3)], check_forward_ad=True)


def test_a_backward_that_ignores_a_zero_gradient_always_fails():
    ignoring = cube_function(ignore_grad=True)
    x = make(4)
    for undefined in (True, False):  # PyTorch runs this one with every backward check
        with pytest.raises(GradcheckError, match="backward not multiplied by grad_output") as info:
            gradcheck(ignoring.apply, [x], check_undefined_grad=undefined, mode="jacobian")
        assert info.value.report.check == "zero grad_output"
        assert info.value.report.input_name == "input 0"
    # only forward mode checked: nothing runs backward
    assert gradcheck(ignoring.apply, [x], check_forward_ad=True, check_backward_ad=False)


def test_forward_mode_checks_module_parameters():
    layer = tg.nn.Linear(3, 2).double()
    assert gradcheck_module(layer, tg.Tensor(RNG.standard_normal((4, 3))), check_forward_ad=True)
    w = make(3, 2)

    def uses_w(x):
        return x @ w

    assert gradcheck(uses_w, [make(4, 3)], params=[w], check_forward_ad=True)


def test_returns_false_when_asked():
    cube = cube_function(jvp_factor=2.0)
    assert not gradcheck(cube.apply, [make(3)], check_forward_ad=True, raise_exception=False)


def test_torch_gradcheck_agrees_on_a_wrong_jvp():
    torch = pytest.importorskip("torch")

    class TorchCube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            ctx.save_for_forward(x)
            return x**3

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 3 * x * x * grad

        @staticmethod
        def jvp(ctx, tangent):
            (x,) = ctx.saved_tensors
            return 3.3 * x * x * tangent

    x = torch.tensor(RNG.standard_normal(3), requires_grad=True)
    assert torch.autograd.gradcheck(TorchCube.apply, (x,))
    assert not torch.autograd.gradcheck(
        TorchCube.apply, (x,), check_forward_ad=True, raise_exception=False
    )
    ours = cube_function(jvp_factor=3.3)
    t = tg.Tensor(x.detach().numpy(), requires_grad=True)
    assert gradcheck(ours.apply, [t])
    assert not gradcheck(ours.apply, [t], check_forward_ad=True, raise_exception=False)
