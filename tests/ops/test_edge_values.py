"""Every registry entry on IEEE's edge values: ±0, ±inf, NaN, ±1e30, ±1e-30, a float32
subnormal (1e-45), in 0-d, empty and larger samples, in float32 and float64.

Forward, backward and forward mode run with NumPy's RuntimeWarning an error: PyTorch is silent on
overflow, ``inf - inf`` and ``0 / 0``, and so is tensorgrad (the engine runs every op with
NumPy's floating-point errors ignored, ``tensorgrad/_native/ieee.py``). Where PyTorch is
installed, the values and gradients are PyTorch's: the same NaN and infinity positions, and
the finite values within the rounding of what was summed.

An entry is compared with PyTorch when its ``fn`` runs there unchanged (``tg`` and ``F``
bound to ``torch`` and ``torch.nn.functional``) and gives PyTorch's result on its first
ordinary sample; the public API's own PyTorch comparisons cover the rest. The edge values
of each argument are the table rotated by the argument's position, so that pairs meet
different partners. By default each entry runs a derandomized slice (its first two samples,
one rotation, float32); ``-m slow`` runs every sample, three rotations and both dtypes.
"""

from __future__ import annotations

import math
import types
import warnings
from typing import Any

import numpy as np
import pytest

import tensorgrad as tg
import tensorgrad.autograd.forward_ad as fwAD
from tests.ops.registry import REGISTRY, OpInfo, Sample, outputs

inf, nan = math.inf, math.nan

EDGE_VALUES = [0.0, -0.0, inf, -inf, nan, 1e30, -1e30, 1e-30, -1e-30, 1e-45, 1.0, -2.5]

#: entries whose results on edge values still differ from PyTorch's, and how: open
#: differences, each to be fixed in its op (the comparison of those entries is skipped by
#: name; the warnings check still runs on them)
_AT_NAN_MAX = "the gradient of a NaN extremum: PyTorch's is NaN at the NaN, ours 0"
KNOWN_DIFFERENCES: dict[str, str] = {
    "logaddexp": "the gradient at an infinite operand: PyTorch's 1 or 0, ours inf / inf = NaN",
    "lerp": "the weight's gradient where end - start is ±inf: PyTorch's ±inf, ours NaN",
    "copysign": "the gradient at ±inf and NaN: PyTorch's NaN, ours the sign",
    "cosine_similarity": "float32 with ±1e30: PyTorch normalizes first (0), ours inf / inf",
    "remainder": "the divisor's gradient at an infinite divisor: PyTorch's NaN, ours ∓inf",
    "mod_operator": "the divisor's gradient at an infinite divisor: PyTorch's NaN, ours ∓inf",
    "max": "the gradient of a NaN maximum: PyTorch's NaN everywhere, ours shared by ties",
    "min": "the gradient of a NaN minimum: PyTorch's NaN everywhere, ours shared by ties",
    "cumprod": "the gradient at a zero followed by ±inf: PyTorch's 1, ours NaN",
    "scatter_reduce_amax": _AT_NAN_MAX,
    "scatter_reduce_amax_exclude_self": _AT_NAN_MAX,
    "scatter_reduce_amin": _AT_NAN_MAX,
    "scatter_reduce_amin_exclude_self": _AT_NAN_MAX,
}
#: and those that differ only on the full sweep's samples (its other rotations and float64)
KNOWN_IN_FULL_SWEEP: dict[str, str] = {
    "relu": "the gradient at NaN: PyTorch's passes it (NaN <= 0 is false), ours is 0",
    "einsum": "the gradient where an inf meets a 0: the order of the products differs",
    "hypot": "the gradient at the origin, broadcast: PyTorch's 0, ours NaN",
    "xlogy": "the gradient at x = 0 with y = ±inf or 0",
    "cdist": "float32 with ±1e30: PyTorch's squares overflow (inf), ours do not",
    "pow_scalar": "x ** 0.5 at -inf: a documented difference (docs/porting.md)",
    "maximum": "the gradient where an operand is NaN: PyTorch's goes to the NaN",
    "minimum": "the gradient where an operand is NaN: PyTorch's goes to the NaN",
    "layer_norm": "a row with ±inf: PyTorch's NaN throughout, ours ±inf",
    "kl_div": "the gradient at a target of ±1e-30 with log_target False: PyTorch's NaN",
    "prod": "the gradient where a 0 meets ±inf or NaN",
    "std_correction0": "float32 with ±1e30: PyTorch accumulates in float64 (finite)",
    "std_correction1": "float32 with ±1e30: PyTorch accumulates in float64 (finite)",
    "norm": "p = 1 and other p at ±0 and NaN: the sign's convention",
    "lgamma": "lgamma(-inf): PyTorch's inf, ours -inf",
    "digamma": "the gradient at -inf: PyTorch's NaN, ours inf",
    "polygamma": "polygamma(1, inf): PyTorch's NaN, ours -0",
    "logcumsumexp": "the gradient at -inf on a length-1 dim: PyTorch's NaN, ours 1 (the identity)",
}


def edge_sample(sample: Sample, rotation: int) -> Sample:
    """``sample`` with each argument's values replaced by the edge values, in turn."""
    args = []
    for i, value in enumerate(sample.args):
        n = int(np.size(value))
        picks = [EDGE_VALUES[(k + rotation + 5 * i) % len(EDGE_VALUES)] for k in range(n)]
        args.append(np.array(picks, dtype=np.float64).reshape(np.shape(value)))
    return Sample(tuple(args), sample.kwargs, sample.desc, sample.layouts, grad=False)


def slices(full: bool) -> list[Any]:
    """``pytest.param(info, [(sample, edge sample, dtype), ...])`` per entry: the edge
    samples it runs, each beside the ordinary sample it was made from."""
    params = []
    for info in REGISTRY:
        samples = info.samples() if full else info.samples()[:2]
        rotations = (0, 3, 7) if full else (0,)
        dtypes = (np.float32, np.float64) if full else (np.float32,)
        runs = [(s, edge_sample(s, r), d) for s in samples for r in rotations for d in dtypes]
        params.append(pytest.param(info, runs, id=info.name))
    return params


def run(info: OpInfo, sample: Sample, dtype: Any) -> tuple[list, list | None]:
    """tensorgrad's values and gradients (for upstream ones) with RuntimeWarnings as errors;
    an exception other than a RuntimeWarning is returned in place of the values."""
    tensors = [tg.Tensor(a, requires_grad=info.differentiable) for a in sample.arrays(dtype)]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        try:
            results = outputs(info.call(tensors, sample))
        except RuntimeWarning:
            raise
        except Exception as exc:  # an error PyTorch raises too (checked where installed)
            return [exc], None
        recorded = [r for r in results if isinstance(r, tg.Tensor) and r.requires_grad]
        if recorded:
            tg.backward(recorded, [tg.ones(r.shape, dtype=r.dtype) for r in recorded])
    values = [np.asarray(r.numpy() if isinstance(r, tg.Tensor) else r) for r in results]
    grads = [None if t.grad is None else t.grad.numpy() for t in tensors] if recorded else None
    return values, grads


def run_forward_mode(info: OpInfo, sample: Sample, dtype: Any) -> None:
    """The entry under forward mode, every input with a tangent of ones, RuntimeWarnings
    as errors (an op without a JVP rule refuses: that is not what is checked here)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with fwAD.dual_level():
            duals = [fwAD.make_dual(tg.Tensor(a), tg.ones(a.shape, dtype=a.dtype))
                     for a in sample.arrays(dtype)]  # fmt: skip
            try:
                info.call(duals, sample)
            except RuntimeWarning:
                raise
            except Exception:
                return


def check_silent(info: OpInfo, runs: list) -> None:
    for _, sample, dtype in runs:
        where = f"{info.name} ({sample.desc}, {dtype.__name__})"
        try:
            run(info, sample, dtype)
        except RuntimeWarning as warning:
            pytest.fail(f"{where} warned: {warning}")
        if info.differentiable:
            try:
                run_forward_mode(info, sample, dtype)
            except RuntimeWarning as warning:
                pytest.fail(f"{where} warned in forward mode: {warning}")


@pytest.mark.parametrize(("info", "runs"), slices(full=False))
def test_edge_values_raise_no_runtime_warning(info, runs):
    check_silent(info, runs)


@pytest.mark.slow
@pytest.mark.parametrize(("info", "runs"), slices(full=True))
def test_edge_values_raise_no_runtime_warning_full(info, runs):
    check_silent(info, runs)


# ------------------------------------------------------------------ against PyTorch
def calls_ops(fn: Any) -> bool:
    """Whether ``fn`` runs a tensorgrad op itself (``_apply(ops.Linear(), ...)``), which no
    renaming turns into PyTorch's."""
    return bool({"_apply", "apply", "ops"} & set(fn.__code__.co_names))


def in_torch(torch: Any, fn: Any) -> Any:
    """``fn`` with the names ``tg`` and ``F`` of its module bound to PyTorch's."""
    scope = {**fn.__globals__, "tg": torch, "F": torch.nn.functional}
    return types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)


def run_torch(torch: Any, info: OpInfo, sample: Sample, dtype: Any) -> tuple[list, list | None]:
    tensors = [torch.tensor(a, requires_grad=info.differentiable) for a in sample.arrays(dtype)]
    try:
        results = outputs(in_torch(torch, info.fn)(*tensors, **sample.kwargs))
        recorded = [r for r in results if isinstance(r, torch.Tensor) and r.requires_grad]
        if recorded:
            torch.autograd.backward(recorded, [torch.ones_like(r) for r in recorded])
    except Exception as exc:
        return [exc], None
    if any(isinstance(r, tg.Tensor) for r in results):  # the entry calls a tensorgrad op
        return [TypeError(f"{info.name} has no PyTorch spelling")], None
    values = [np.asarray(r.detach().numpy() if isinstance(r, torch.Tensor) else r) for r in results]
    grads = [None if t.grad is None else t.grad.numpy() for t in tensors] if recorded else None
    return values, grads


def agree(got: Any, want: Any, scale: float, rtol: float) -> bool:
    """The same shape, NaN and infinity positions (with signs), finite values within
    ``rtol`` of each other or of ``scale`` (the rounding of a sum of terms that large)."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if got.shape != want.shape or not np.array_equal(np.isnan(got), np.isnan(want)):
        return False
    infinite = np.isinf(got) | np.isinf(want)
    if not np.array_equal(got[infinite], want[infinite]):
        return False
    finite = ~infinite & ~np.isnan(got)
    return bool(np.allclose(got[finite], want[finite], rtol=rtol, atol=rtol * scale))


def translates(torch: Any, info: OpInfo, sample: Sample) -> bool:
    """Whether the entry's ``fn`` runs in PyTorch on an ordinary ``sample`` and gives
    tensorgrad's result and gradients there."""
    if calls_ops(info.fn):
        return False
    ours, our_grads = run(info, sample, np.float64)
    theirs, their_grads = run_torch(torch, info, sample, np.float64)
    if any(isinstance(v, Exception) for v in ours + theirs) or len(ours) != len(theirs):
        return False
    if (our_grads is None) != (their_grads is None):
        return False
    pairs = list(zip(ours, theirs, strict=True))
    pairs += [(a, b) for a, b in zip(our_grads or (), their_grads or ()) if b is not None]
    return all(a is not None and agree(a, b, 1.0, 1e-7) for a, b in pairs)


def check_against_torch(info: OpInfo, runs: list, known: dict[str, str]) -> None:
    torch = pytest.importorskip("torch")
    if info.name in known:
        pytest.skip(known[info.name])
    compared = 0
    for ordinary, sample, dtype in runs:
        if not translates(torch, info, ordinary):
            continue  # no PyTorch spelling of this call: the API's fuzz compares the name
        compared += 1
        where = f"{info.name} ({sample.desc}, {dtype.__name__})"
        ours, our_grads = run(info, sample, dtype)
        theirs, their_grads = run_torch(torch, info, sample, dtype)
        raised = [isinstance(v[0], Exception) for v in (ours, theirs)]
        assert raised[0] == raised[1], f"{where}: raised {ours[0] if raised[0] else theirs[0]}"
        if raised[0]:
            continue
        finite = [np.abs(a[np.isfinite(a)]) for a in sample.arrays(np.float64)]
        scale = max([float(f.max()) for f in finite if f.size] or [1.0]) * (sample.size + 1)
        rtol = 1e-5 if dtype == np.float32 else 1e-10
        for a, b in zip(ours, theirs, strict=True):
            assert agree(a, b, scale, rtol), f"{where}: values {a} and PyTorch's {b}"
        if our_grads is None or their_grads is None:
            continue
        for a, b in zip(our_grads, their_grads, strict=True):
            if b is None:  # PyTorch's graph does not reach the input: no gradient, or zeros
                assert a is None or not np.any(a), f"{where}: gradient {a}, PyTorch's none"
            else:
                assert a is not None, f"{where}: no gradient, PyTorch's {b}"
                assert agree(a, b, scale, rtol), f"{where}: gradient {a} and PyTorch's {b}"
    if not compared:
        pytest.skip(f"{info.name}'s fn has no PyTorch spelling (the API's fuzz compares it)")


@pytest.mark.parametrize(("info", "runs"), slices(full=False))
def test_edge_values_are_pytorchs(info, runs):
    check_against_torch(info, runs, KNOWN_DIFFERENCES)


@pytest.mark.slow
@pytest.mark.parametrize(("info", "runs"), slices(full=True))
def test_edge_values_are_pytorchs_full(info, runs):
    check_against_torch(info, runs, {**KNOWN_DIFFERENCES, **KNOWN_IN_FULL_SWEEP})
