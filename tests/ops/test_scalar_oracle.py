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
from tensorgrad.autograd.finite_differences import GradcheckError
from tensorgrad.autograd.scalar_oracle import SCALAR_FORWARDS, check_with_scalar_engine
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


# --------------------------------------------------------------------------- the op's declaration
def test_an_op_declares_its_scalar_reference_beside_its_forward():
    """A ``scalar_forward`` method on the op is what the oracle replays; no table to edit."""

    class Log1pWithReference(tg.ops.Op):
        def forward(self, x):
            return np.log1p(x)  # not defined on object arrays

        def scalar_forward(self, x):
            return np.log(1 + x)

        def backward(self, grad, out, x):
            return (grad / (1 + x),)

    class WrongReference(Log1pWithReference):
        def scalar_forward(self, x):
            return np.log(1 + 2 * x)  # a reference that disagrees with the VJP: caught

    from tensorgrad.core.engine import apply as _apply

    x = tg.Tensor(np.array([0.5, 1.0, 2.0]), requires_grad=True)
    assert check_with_scalar_engine(lambda t: _apply(Log1pWithReference(), t), x)
    with pytest.raises(GradcheckError, match="scalar engine check failed for input 0"):
        check_with_scalar_engine(lambda t: _apply(WrongReference(), t), x)


def test_the_default_reference_is_the_forward_itself():
    """An op that declares nothing is replayed through its own forward (``Op.scalar_forward``)."""
    assert "scalar_forward" not in vars(tg.ops.Exp)
    values = np.array([Value(0.5), Value(-1.0)], dtype=object)
    out = tg.ops.Exp().scalar_forward(values)
    assert [v.data for v in out] == pytest.approx(np.exp([0.5, -1.0]).tolist(), rel=1e-15)


def test_scalar_forwards_lists_the_ops_own_declarations():
    """SCALAR_FORWARDS (kept for existing code) is read from the ops, not written by hand."""
    declared = {
        cls
        for cls in (getattr(tg.ops, name) for name in tg.ops.__all__)
        if isinstance(cls, type) and cls is not tg.ops.Op and "scalar_forward" in vars(cls)
    }
    assert {tg.ops.Erf, tg.ops.Log1p, tg.ops.Var, tg.ops.SetItem} <= declared
    assert declared <= set(SCALAR_FORWARDS)
    assert all(SCALAR_FORWARDS[cls] is cls.scalar_forward for cls in declared)


def test_ops_know_the_scalar_values_only_by_their_operations():
    """The layering: no module of tensorgrad.ops imports the scalar engine (or the Tensor)."""
    import ast
    from pathlib import Path

    for path in Path(tg.ops.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            assert not any(n.startswith(("tensorgrad.scalar", "tensorgrad.core")) for n in names), (
                f"{path.name} imports {names}"
            )
