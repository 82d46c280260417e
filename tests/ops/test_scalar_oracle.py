"""The scalar engine as an oracle: every op's gradients against ``tensorgrad.scalar``.

Each registered sample is run on the tensor engine in float64; its recorded graph is then
replayed on NumPy object arrays of scalar ``Value`` through each op's own forward code, and
every input's gradient is compared with the scalar engine's, element by element.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.autograd.checks import SCALAR_FORWARDS, GradcheckError, check_with_scalar_engine
from tensorgrad.scalar import Value
from tests.ops.registry import REGISTRY, cases

ORACLE_CASES = cases(differentiable=True, grad=True)


@pytest.mark.parametrize(("info", "sample"), ORACLE_CASES)
def test_gradients_match_the_scalar_engine(info, sample):
    assert check_with_scalar_engine(
        lambda *tensors: info.call(tensors, sample),
        sample.tensors(),
        atol=1e-10,
        rtol=info.oracle_rtol,
    )


def test_every_differentiable_op_is_checked():
    checked = {case.values[0].name for case in ORACLE_CASES}
    assert checked == {info.name for info in REGISTRY if info.differentiable}


# --------------------------------------------------------------------------- the scalar references
@pytest.mark.parametrize(
    "x", [-5.0, -3.2, -3.0, -1.0, -1e-3, 0.0, 0.4, 2.0, 2.999, 3.001, 4.5, 8.0]
)
def test_erf_reference_value_and_slope(x):
    """The erf built from Value operations matches math.erf and its derivative 2/√π·e^(−x²)."""
    v = Value(x)
    y = SCALAR_FORWARDS[tg.ops.Erf](None, np.array(v, dtype=object)).item()
    y.backward()
    assert y.data == pytest.approx(math.erf(x), abs=1e-15)
    assert v.grad == pytest.approx(2 / math.sqrt(math.pi) * math.exp(-x * x), rel=1e-10, abs=1e-15)


def test_an_op_without_a_scalar_forward_is_reported_clearly():
    class Log1p(tg.ops.Op):
        def forward(self, x):
            return np.log1p(x)

        def backward(self, grad, out, x):
            return (grad / (1 + x),)

    from tensorgrad.core.engine import apply as _apply

    x = tg.Tensor(np.array([0.5, 1.0]), requires_grad=True)
    with pytest.raises(TypeError, match=r"forward of log1p cannot run on arrays of scalar Values"):
        check_with_scalar_engine(lambda t: _apply(Log1p(), t), x)
    # a reference built from Value operations makes it checkable
    assert check_with_scalar_engine(
        lambda t: _apply(Log1p(), t), x, scalar_forwards={Log1p: lambda op, v: np.log(1 + v)}
    )


def test_the_oracle_catches_a_wrong_vjp():
    class Sin(tg.ops.Sin):
        def backward(self, grad, out, x):
            return (grad * np.cos(x) * (1 + 1e-6),)  # a relative error of 1e-6

    from tensorgrad.core.engine import apply as _apply

    x = tg.Tensor(np.linspace(-1, 1, 5), requires_grad=True)
    with pytest.raises(GradcheckError, match="scalar engine check failed for input 0"):
        check_with_scalar_engine(lambda t: _apply(Sin(), t), x, atol=1e-10, rtol=1e-8)
