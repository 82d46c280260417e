"""Every registered op's derivatives composed, in float64, as PyTorch's OpInfo tests compose
them (``test_ops_fwd_gradients.py``'s forward-over-reverse and reverse-over-forward):

* reverse over forward: the tangent ``J(x)·v`` differentiated by reverse mode, the gradient
  of ``R(x) = ⟨w, J(x)·v⟩`` (``grad`` of a ``jvp``), against forward over reverse, the
  tangent of the gradient ``J(x)ᵀ·w`` along ``v`` (``jvp`` of a ``grad``): both are
  ``Σₖ wₖ Hₖ v``, so the two orders must agree;
* the same gradient against central differences of ``R`` along a random direction;
* the tangent differentiated with respect to the tangent itself: ``∇ᵥ R = J(x)ᵀ·w``, the
  op's VJP.

An op whose JVP rule cannot be differentiated must say so with an error that names it (its
entry's ``second_order`` gives the reason), never hand back a silent zero.
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorgrad as tg
import tensorgrad.autograd.forward_ad as fwAD
from tests.ops.registry import cases, outputs


def _sliced(params, per_op=2):
    """The first ``per_op`` samples of each op by default; the rest under ``-m slow``."""
    seen: dict[str, int] = {}
    result = []
    for param in params:
        name = param.values[0].name
        seen[name] = seen.get(name, 0) + 1
        marks = () if seen[name] <= per_op else (pytest.mark.slow,)
        result.append(pytest.param(*param.values, id=param.id, marks=marks))
    return result


MODE_CASES = _sliced(cases(differentiable=True, grad=True, max_size=60))


def directions(arrays, seed):
    rng = np.random.default_rng(seed)
    vs = [rng.standard_normal(np.shape(a)) for a in arrays]
    norm = np.sqrt(sum(float((v * v).sum()) for v in vs)) or 1.0
    return [v / norm for v in vs]


def floating(results):
    return [o for o in results if o.dtype.kind == "f"]


def weights_for(info, sample, arrays):
    results = floating(outputs(info.call([tg.Tensor(a) for a in arrays], sample)))
    rng = np.random.default_rng(7)
    return [rng.standard_normal(o.shape) for o in results]


def along_tangent(info, sample, xs, vs, ws):
    """``R = Σ ⟨w, J·v⟩`` by forward mode: the inputs ``xs`` carry the tangents ``vs``."""
    with fwAD.dual_level():
        duals = [fwAD.make_dual(x, v) for x, v in zip(xs, vs, strict=True)]
        results = floating(outputs(info.call(duals, sample)))
        total = tg.tensor(0.0, dtype=tg.float64)
        for o, w in zip(results, ws, strict=True):
            tangent = fwAD.unpack_dual(o).tangent
            if tangent is not None:
                total = total + (tangent * tg.Tensor(w)).sum()
    return total


def reverse_over_forward(info, sample, arrays, vs, ws):
    """∇ₓ R and ∇ᵥ R, by reverse mode through the recorded tangents."""
    xs = [tg.Tensor(a, requires_grad=True) for a in arrays]
    ts = [tg.Tensor(v, requires_grad=True) for v in vs]
    total = along_tangent(info, sample, xs, ts, ws)
    if not total.requires_grad:
        return [np.zeros(np.shape(a)) for a in arrays], [np.zeros(np.shape(v)) for v in vs]
    grads = tg.autograd.grad(total, [*xs, *ts], allow_unused=True)
    grads = [np.zeros(t.shape) if g is None else g.numpy() for g, t in zip(grads, [*xs, *ts])]
    return grads[: len(xs)], grads[len(xs) :]


def forward_over_reverse(info, sample, arrays, vs, ws):
    """The tangent of ``J(x)ᵀ·w`` along ``v``: a backward recorded inside the dual level."""
    xs = [tg.Tensor(a, requires_grad=True) for a in arrays]
    with fwAD.dual_level():
        duals = [fwAD.make_dual(x, tg.Tensor(v)) for x, v in zip(xs, vs, strict=True)]
        results = floating(outputs(info.call(duals, sample)))
        live = [(o, w) for o, w in zip(results, ws, strict=True) if o.requires_grad]
        if not live:
            return [np.zeros(np.shape(a)) for a in arrays]
        grads = tg.autograd.grad(
            [o for o, _ in live],
            duals,
            [tg.Tensor(w) for _, w in live],
            create_graph=True,
            allow_unused=True,
        )
        slopes = [None if g is None else fwAD.unpack_dual(g).tangent for g in grads]
    return [np.zeros(np.shape(a)) if s is None else s.numpy() for s, a in zip(slopes, arrays)]


def vjp(info, sample, arrays, ws):
    xs = [tg.Tensor(a, requires_grad=True) for a in arrays]
    results = floating(outputs(info.call(xs, sample)))
    live = [(o, w) for o, w in zip(results, ws, strict=True) if o.requires_grad]
    if not live:
        return [np.zeros(np.shape(a)) for a in arrays]
    grads = tg.autograd.grad(
        [o for o, _ in live], xs, [tg.Tensor(w) for _, w in live], allow_unused=True
    )
    return [np.zeros(np.shape(a)) if g is None else g.numpy() for g, a in zip(grads, arrays)]


def refused_by_name(info, exc):
    message = str(exc)
    return "has no JVP rule (" in message or (
        info.second_order and "reverse mode over forward mode" in message
    )


def compare(got, want, info, what):
    for g, w in zip(got, want, strict=True):
        defined = np.isfinite(w) & np.isfinite(g)
        assert np.array_equal(np.isfinite(g), np.isfinite(w)), what
        np.testing.assert_allclose(
            g[defined],
            w[defined],
            rtol=max(info.rtol, 1e-6),
            atol=max(info.atol, 1e-6),
            err_msg=what,
        )


@pytest.mark.parametrize(("info", "sample"), MODE_CASES)
def test_reverse_over_forward(info, sample):
    arrays = [np.asarray(a, dtype=np.float64) for a in sample.arrays()]
    vs, us = directions(arrays, 0), directions(arrays, 1)
    ws = weights_for(info, sample, arrays)
    try:
        with np.errstate(all="ignore"):
            rof_x, rof_v = reverse_over_forward(info, sample, arrays, vs, ws)
    except (RuntimeError, NotImplementedError) as exc:
        assert refused_by_name(info, exc), exc
        return
    # ∇ᵥ R is the VJP: the tangent is differentiable with respect to itself
    compare(rof_v, vjp(info, sample, arrays, ws), info, "∇ᵥ⟨w, J·v⟩ against the VJP")
    if info.second_order:
        return  # (the entry says why its second derivatives are not checked)
    for_x = forward_over_reverse(info, sample, arrays, vs, ws)
    compare(rof_x, for_x, info, "reverse over forward against forward over reverse")
    # and against central differences of R along u
    eps = info.eps

    def r_at(sign):
        shifted = [tg.Tensor(a + sign * eps * u) for a, u in zip(arrays, us, strict=True)]
        with tg.no_grad():
            return float(along_tangent(info, sample, shifted, [tg.Tensor(v) for v in vs], ws))

    numeric = (r_at(1) - r_at(-1)) / (2 * eps)
    analytic = sum(float((g * u).sum()) for g, u in zip(rof_x, us, strict=True))
    if np.isfinite(numeric):
        np.testing.assert_allclose(analytic, numeric, rtol=1e-4, atol=1e-5)
