"""The dtype policy an op declares (``ops.Op.dtypes``), enforced once by the engine: every
declaring op, applied to integer and bool tensors, computes in the default float, refuses
them with PyTorch's NotImplementedError naming the op, or refuses bools only; and the
registry's dtype table says the same of the methods that bind those ops."""

from __future__ import annotations

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import ops
from tensorgrad.core import dtype_policy
from tensorgrad.core.engine import apply
from tests.ops.test_registry import defined_ops

#: settings for the declaring ops whose constructor needs some
SETTINGS = {ops.LogSumExp: {"axis": None}, ops.LogCumSumExp: {"axis": 0}}

DECLARING = sorted((c for c in defined_ops() if c.dtypes), key=lambda c: c.__name__)


def test_every_declared_policy_is_known():
    assert DECLARING, "no op declares a dtype policy"
    for cls in DECLARING:
        assert cls.dtypes in dtype_policy.POLICIES, (cls, cls.dtypes)


@pytest.mark.parametrize("dtype", ["bool", "int64", "uint8", "float16", "float64"])
@pytest.mark.parametrize("cls", DECLARING, ids=lambda c: c.__name__)
def test_the_engine_enforces_the_declaration(cls, dtype):
    x = tg.tensor(np.ones(3, dtype=dtype))
    op = cls(**SETTINGS.get(cls, {}))
    refused = (cls.dtypes == "floating" and dtype[0] in "biu") or (
        cls.dtypes == "no_bool" and dtype == "bool"
    )
    if refused:
        with pytest.raises(NotImplementedError, match=rf'^"{op.name}" not implemented for'):
            apply(op, x)
        return
    out = apply(op, x)
    if cls.dtypes == "float" and dtype[0] in "biu":
        assert out.dtype == tg.float32  # PyTorch's default float
    elif dtype.startswith("float"):
        assert out.dtype == np.dtype(dtype)


def test_a_refusal_records_nothing():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(NotImplementedError):
        apply(ops.LogCumSumExp(axis=0), x.long())
    assert x.grad is None and x.grad_fn is None


@pytest.mark.parametrize(
    ("method", "policy"),
    [("exp", "float"), ("sin", "float"), ("abs", "no_bool"), ("logcumsumexp", "floating")],
)
def test_methods_follow_their_ops_declaration(method, policy):
    call = {"logcumsumexp": lambda t: t.logcumsumexp(0)}.get(method, lambda t: getattr(t, method)())
    ints, bools = tg.tensor([1, 2]), tg.tensor([True, False])
    if policy == "float":
        assert call(ints).dtype == call(bools).dtype == tg.float32
    elif policy == "no_bool":
        assert call(ints).dtype == tg.int64
        with pytest.raises(NotImplementedError, match=f'"{method}" not implemented for bool'):
            call(bools)
    else:
        with pytest.raises(NotImplementedError, match=f'"{method}" not implemented for int64'):
            call(ints)
