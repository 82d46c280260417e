"""Tests of the gradient checks themselves (``tensorgrad/autograd/finite_differences.py`` and
``scalar_oracle.py``, re-exported by ``checks.py``): they pass correct gradients, catch wrong
ones, say where, warn about float32, and leave parameters exactly as they found them."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import ops
from tensorgrad.autograd.finite_differences import (
    GradcheckError,
    GradcheckWarning,
    gradcheck,
    gradcheck_module,
    gradgradcheck,
)
from tensorgrad.autograd.scalar_oracle import check_with_scalar_engine
from tensorgrad.core.engine import apply as _apply

RNG = np.random.default_rng(0)


@pytest.fixture(autouse=True)
def _values_of_this_test_alone():
    """Each test draws its values from a generator of its own: what a test sees must not
    depend on which tests ran before it in the same process (xdist shares them out)."""
    global RNG
    RNG = np.random.default_rng(20240601)


def leaf(*shape, low=-2.0, high=2.0, dtype=np.float64):
    return tg.Tensor(RNG.uniform(low, high, shape).astype(dtype), requires_grad=True)


# --------------------------------------------------------------------------- deliberately wrong ops
class ScaledSin(ops.Op):
    """sin with a VJP that is off by a factor: wrong everywhere."""

    def __init__(self, factor=1.01):
        self.factor = factor

    def forward(self, x):
        return np.sin(x)

    def backward(self, grad, out, x):
        return (grad * np.cos(x) * self.factor,)


class OneWrongEntry(ops.Op):
    """x * y whose VJP for y is wrong at one flat position only (off by half the upstream)."""

    def __init__(self, position):
        self.position = position

    def forward(self, x, y):
        return x * y

    def backward(self, grad, out, x, y):
        dy = grad * x
        if isinstance(dy, np.ndarray):
            dy = dy.copy()
            dy.flat[self.position] += 0.5 * grad.flat[self.position]
        return grad * y, dy


class DetachedSquare(ops.Op):
    """x²: right first derivative, but its VJP leaves the graph (np.asarray on a Tensor), so
    a second derivative through it is wrong. gradcheck passes; gradgradcheck must not."""

    def forward(self, x):
        return x * x

    def backward(self, grad, out, x):
        return (grad * 2 * np.asarray(x),)


class Square(ops.Op):
    def forward(self, x):
        return x * x

    def backward(self, grad, out, x):
        return (grad * 2 * x,)


def scaled_sin(x, factor=1.01):
    return _apply(ScaledSin(factor), x)


# --------------------------------------------------------------------------- passes on correct code
CORRECT = [
    # (description, fn, inputs)
    ("tanh of a matmul", lambda a, b: (a @ b).tanh(), lambda: [leaf(3, 4), leaf(4, 2)]),
    ("scalar output", lambda a: (a * a).sum(), lambda: [leaf(5)]),
    ("0-d input", lambda a: a.exp() * 3.0, lambda: [leaf()]),
    ("two outputs", lambda a: [a.sin(), a.cos().sum(axis=0)], lambda: [leaf(2, 3)]),
    ("constant input", lambda a, w: a * w, lambda: [leaf(3), tg.Tensor(np.arange(3.0))]),
    ("non-tensor argument", lambda a, k: a**k, lambda: [leaf(4, low=0.5), 3]),
    (
        "softmax cross-entropy",
        lambda z: _apply(ops.CrossEntropy(np.array([0, 2])), z),
        lambda: [leaf(2, 3)],
    ),
    ("view output", lambda a: a.reshape(6)[1:4], lambda: [leaf(2, 3)]),
    ("empty input", lambda a: a.sum(axis=0), lambda: [leaf(0, 3)]),
    ("output independent of the input", lambda a: tg.Tensor(np.ones(2)), lambda: [leaf(2)]),
]


@pytest.mark.parametrize("mode", ["directional", "jacobian"])
@pytest.mark.parametrize(("fn", "make"), [pytest.param(f, m, id=d) for d, f, m in CORRECT])
def test_passes_correct_gradients(fn, make, mode):
    assert gradcheck(fn, make(), mode=mode, n_directions=3) is True


@pytest.mark.parametrize(("fn", "make"), [pytest.param(f, m, id=d) for d, f, m in CORRECT[:7]])
def test_passes_correct_second_derivatives(fn, make):
    assert gradgradcheck(fn, make()) is True


@pytest.mark.parametrize(("fn", "make"), [pytest.param(f, m, id=d) for d, f, m in CORRECT])
def test_scalar_engine_agrees_on_correct_gradients(fn, make):
    assert check_with_scalar_engine(fn, make()) is True


# --------------------------------------------------------------------------- fails on wrong code
@pytest.mark.parametrize("mode", ["directional", "jacobian"])
def test_fails_on_a_wrong_vjp(mode):
    x = leaf(3, 4)
    with pytest.raises(GradcheckError) as excinfo:
        gradcheck(scaled_sin, x, mode=mode)
    report = excinfo.value.report
    assert isinstance(excinfo.value, RuntimeError)  # as PyTorch's GradcheckError
    assert report.check == mode and report.input_name == "input 0" and report.shape == (3, 4)
    assert report.worst, "the report lists the worst entries"
    expected = np.cos(x.numpy())  # the numeric gradient of sum(sin(x) * W) is W * cos(x)
    for entry in report.worst:
        assert entry.abs_error > 0
        assert entry.rel_error == pytest.approx(0.01, rel=1e-4)
        if mode == "jacobian":  # one-hot upstream: the numeric entry is cos(x) itself
            assert entry.numeric == pytest.approx(expected[entry.index], abs=1e-8)


def test_returns_false_instead_of_raising():
    assert gradcheck(scaled_sin, leaf(3), raise_exception=False) is False
    assert gradcheck(scaled_sin, leaf(3), mode="jacobian", raise_exception=False) is False
    assert check_with_scalar_engine(scaled_sin, leaf(3), raise_exception=False) is False


@pytest.mark.parametrize("factor", [1.001, 0.999, 1e-3, -1.0])
def test_detects_small_and_large_errors(factor):
    assert not gradcheck(lambda x: scaled_sin(x, factor), leaf(4, 4), raise_exception=False)


@pytest.mark.parametrize("mode", ["directional", "jacobian"])
def test_report_names_the_input_and_the_wrong_entry(mode):
    x, y = leaf(2, 3), leaf(2, 3)
    with pytest.raises(GradcheckError) as excinfo:
        gradcheck(lambda a, b: _apply(OneWrongEntry(position=4), a, b), [x, y], mode=mode)
    report = excinfo.value.report
    assert report.input_name == "input 1"
    assert report.worst[0].index == (1, 1)  # flat position 4 of a (2, 3) array
    assert len(report.worst) == 1  # every other entry agrees
    text = str(excinfo.value)
    assert "input 1" in text and "[1, 1]" in text and "analytic" in text and "numeric" in text
    if mode == "jacobian":  # a one-hot upstream gradient: off by exactly 0.5
        assert report.worst[0].output == "output [1, 1]"
        assert report.worst[0].analytic - report.worst[0].numeric == pytest.approx(0.5, abs=1e-6)


def test_report_of_a_directional_failure_gives_both_derivatives():
    with pytest.raises(GradcheckError) as excinfo:
        gradcheck(scaled_sin, leaf(5), seed=3)
    report = excinfo.value.report
    assert report.analytic == pytest.approx(report.numeric * 1.01, rel=1e-6)
    assert re.search(r"analytically and .* by central differences", report.summary)


def test_scalar_engine_check_reports_the_input():
    x, y = leaf(2, 3), leaf(2, 3)
    with pytest.raises(GradcheckError, match="scalar engine check failed for input 1") as excinfo:
        check_with_scalar_engine(lambda a, b: _apply(OneWrongEntry(position=0), a, b), [x, y])
    assert excinfo.value.report.worst[0].index == (0, 0)


def test_gradgradcheck_catches_a_vjp_that_leaves_the_graph():
    x = leaf(4)
    assert gradcheck(lambda t: _apply(DetachedSquare(), t), x)
    with pytest.raises(GradcheckError, match="second derivative, directional"):
        gradgradcheck(lambda t: _apply(DetachedSquare(), t), x)
    assert gradgradcheck(lambda t: _apply(Square(), t), x)


# --------------------------------------------------------------------------- float32
def test_float32_inputs_warn_and_are_checked_in_float64():
    x = leaf(3, 4, dtype=np.float32)
    with pytest.warns(GradcheckWarning, match=r"input 0 is float32; the check runs on float64"):
        # in float32 these differences would be rounding noise: the check passes only because
        # it runs on a float64 copy
        assert gradcheck(lambda t: (t.exp() * 10).sum(), x, eps=1e-6, atol=1e-7, rtol=1e-7)
    assert x.dtype == np.float32 and x.grad is None


def test_float32_inputs_are_not_silently_passed_when_wrong():
    with pytest.warns(GradcheckWarning):
        assert not gradcheck(scaled_sin, leaf(3, dtype=np.float32), raise_exception=False)


def test_float32_outputs_from_float64_inputs_warn():
    with pytest.warns(GradcheckWarning, match="float32 outputs"):
        gradcheck(lambda t: t.astype(tg.float32), leaf(3), eps=1e-2, atol=1e-4, rtol=1e-3)


def test_float64_inputs_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert gradcheck(lambda t: t.tanh(), leaf(3))


# --------------------------------------------------------------------------- kinks
def test_a_kink_inside_the_difference_fails_and_sampling_away_passes():
    at_kink = tg.Tensor(np.array([-1.0, 0.0, 1.0]), requires_grad=True)
    assert not gradcheck(lambda t: t.relu(), at_kink, mode="jacobian", raise_exception=False)
    away = tg.Tensor(np.array([-1.0, 0.2, 1.0]), requires_grad=True)
    assert gradcheck(lambda t: t.relu(), away, mode="jacobian")


# --------------------------------------------------------------------------- parameters
class TinyModule:
    """A hand-made "module": parameters() and named_parameters(), nothing else."""

    def __init__(self, dtype=np.float64, wrong=False):
        self.weight = tg.Tensor(RNG.standard_normal((3, 2)).astype(dtype), requires_grad=True)
        self.bias = tg.Tensor(RNG.standard_normal(2).astype(dtype), requires_grad=True)
        self.frozen = tg.Tensor(RNG.standard_normal(2).astype(dtype))
        self.wrong = wrong
        self.calls = 0

    def named_parameters(self):
        return [("weight", self.weight), ("bias", self.bias)]

    def parameters(self):
        return [p for _, p in self.named_parameters()]

    def __call__(self, x):
        self.calls += 1
        h = x @ self.weight
        if self.wrong:
            h = scaled_sin(h)
        return (h + self.bias * self.frozen).tanh()


def snapshot(module):
    return [
        (p, p.numpy(), p.numpy().copy(), p.dtype, p._version, p.grad) for p in module.parameters()
    ]


def assert_restored(saved):
    for p, array, values, dtype, version, grad in saved:
        assert p.numpy() is array, "the very same array is back"
        assert p.dtype == dtype
        np.testing.assert_array_equal(p.numpy(), values)
        assert p._version == version
        assert p.grad is grad
        assert p.requires_grad


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("mode", ["directional", "jacobian"])
def test_module_parameters_are_checked_and_restored(dtype, mode):
    module = TinyModule(dtype)
    saved = snapshot(module)
    x = tg.Tensor(RNG.standard_normal((4, 3)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GradcheckWarning)
        assert gradcheck_module(module, x, mode=mode)
    assert module.calls > 2
    assert_restored(saved)


def test_wrong_parameter_gradient_names_the_parameter():
    module = TinyModule(wrong=True)
    saved = snapshot(module)
    x = tg.Tensor(RNG.standard_normal((4, 3)))
    with pytest.raises(GradcheckError, match="parameter 'weight'"):
        gradcheck_module(module, x)
    assert_restored(saved)


def test_parameters_are_restored_when_fn_raises():
    module = TinyModule()
    saved = snapshot(module)
    x = tg.Tensor(RNG.standard_normal((4, 3)))

    def flaky(t):
        if module.calls == 2:  # in the middle of the finite differences
            raise RuntimeError("boom")
        return module(t)

    with pytest.raises(RuntimeError, match="boom"):
        gradcheck(flaky, x, params=module.parameters())
    assert_restored(saved)


def test_params_as_a_list_a_mapping_and_inputs_together():
    module = TinyModule()
    x = leaf(4, 3)
    assert gradcheck(module, x, params=module.parameters())
    assert gradcheck(module, x, params={"w": module.weight})
    with pytest.raises(GradcheckError, match="parameter 'w'"):
        gradcheck(lambda t: scaled_sin(t @ module.weight), x.detach(), params={"w": module.weight})


def test_module_second_derivatives_and_input_gradients():
    module = TinyModule()
    x = tg.Tensor(RNG.standard_normal((2, 3)))
    assert gradcheck_module(module, x, check_inputs=True)
    assert gradcheck_module(module, x, second_order=True)
    assert check_with_scalar_engine(module, x, params=module)


def test_nn_modules():
    nn = pytest.importorskip("tensorgrad.nn")
    model = nn.Sequential(
        nn.Linear(3, 4, dtype=tg.float64), nn.Tanh(), nn.Linear(4, 2, dtype=tg.float64)
    )
    saved = snapshot(model)
    x = tg.Tensor(RNG.standard_normal((5, 3)))
    assert gradcheck_module(model, x)
    assert gradcheck_module(model, x, mode="jacobian")
    assert check_with_scalar_engine(model, x, params=model)
    assert_restored(saved)


# --------------------------------------------------------------------------- argument checks
def test_argument_errors():
    with pytest.raises(ValueError, match="mode must be 'directional' or 'jacobian'"):
        gradcheck(lambda t: t, leaf(2), mode="full")
    with pytest.raises(ValueError, match="eps must be positive"):
        gradcheck(lambda t: t, leaf(2), eps=0)
    with pytest.raises(ValueError, match="nothing to check"):
        gradcheck(lambda t: t, tg.Tensor(np.ones(2)))
    with pytest.raises(TypeError, match="fn must return a Tensor or a sequence of Tensors"):
        gradcheck(lambda t: t.numpy(), leaf(2))
    with pytest.raises(ValueError, match="use mode='directional'"):
        gradcheck(lambda t: t * 2, leaf(600), mode="jacobian")
    with pytest.raises(ValueError, match="max_elements"):
        check_with_scalar_engine(lambda t: t * 2, leaf(30), max_elements=10)


def test_module_buffers_are_restored():
    nn = pytest.importorskip("tensorgrad.nn")
    model = nn.Sequential(nn.Linear(3, 4, dtype=tg.float64), nn.BatchNorm1d(4))  # train mode
    buffers = [(b, b.numpy().copy()) for _, b in model.named_buffers()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GradcheckWarning)
        assert gradcheck_module(model, tg.Tensor(RNG.standard_normal((6, 3))))
    for buffer, values in buffers:
        np.testing.assert_array_equal(buffer.numpy(), values)


def test_the_public_names_are_the_same_objects_everywhere():
    """tg.gradcheck, tg.autograd.*, and the older tensorgrad.autograd.checks all name one thing."""
    from tensorgrad.autograd import checks, finite_differences, scalar_oracle

    assert tg.gradcheck is tg.autograd.gradcheck is checks.gradcheck is gradcheck
    assert tg.gradgradcheck is tg.autograd.gradgradcheck is checks.gradgradcheck
    for name in ("GradcheckError", "GradcheckReport", "GradcheckWarning", "gradcheck_module"):
        assert getattr(tg.autograd, name) is getattr(checks, name)
        assert getattr(tg.autograd, name) is getattr(finite_differences, name)
    for name in ("SCALAR_FORWARDS", "check_with_scalar_engine"):
        assert getattr(tg.autograd, name) is getattr(checks, name)
        assert getattr(tg.autograd, name) is getattr(scalar_oracle, name)
    assert set(checks.__all__) >= {"SCALAR_FORWARDS", "gradcheck", "check_with_scalar_engine"}
