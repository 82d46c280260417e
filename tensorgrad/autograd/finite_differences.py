"""Check gradients against finite differences of the forward pass, in float64.

* :func:`gradcheck` compares the analytic gradient of ``fn`` with central differences: along
  random unit directions (``mode="directional"``, PyTorch's fast gradcheck: one number
  ``δᵀ∇f`` per direction) or entry by entry (``mode="jacobian"``, the full Jacobian, for
  small inputs).
* With ``check_forward_ad=True`` :func:`gradcheck` also checks forward mode: the JVP that
  the ops' JVP rules carry (``tg.autograd.forward_ad``) along the same directions (or, in
  ``mode="jacobian"``, each Jacobian column) against the same central differences. The
  rest of PyTorch's switches have its names, defaults and meaning: ``check_backward_ad``,
  ``check_undefined_grad`` (outputs without a gradient, inputs without a tangent),
  ``check_batched_grad`` and ``check_batched_forward_grad`` (``vmap`` of the VJPs or JVPs
  against a loop, through ``tg.func``), ``nondet_tol``, ``check_grad_dtypes``,
  ``fast_mode`` (the directional check) and ``masked``.
* :func:`gradgradcheck` checks second derivatives the same way: the gradient function
  ``(inputs, grad_outputs) ↦ vjp``, recorded with ``create_graph=True``, is itself put
  through :func:`gradcheck`, in reverse mode (``check_rev_over_rev``) and, if asked, in
  forward mode (``check_fwd_over_rev``).
* :func:`gradcheck_module` checks a module's parameters (perturbed in place, restored exactly).

A non-scalar output ``out`` is reduced to ``f = sum(out * W)`` with fixed random weights
``W`` (seeded), so every output element takes part. What a failed check reports
(:class:`GradcheckReport`, :class:`GradcheckError`) and how the checked tensors are prepared
(``_Problem``) live in ``check_problem``, shared with the other reference, the scalar engine
(``scalar_oracle``); the checks the switches add are in ``switch_checks``. See
``docs/gradcheck.md``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tensorgrad.autograd.check_problem import (
    Entry,
    GradcheckError,
    GradcheckReport,
    GradcheckWarning,
    _close,
    _fail,
    _named,
    _noncontiguous,
    _output_labels,
    _Problem,
    _weights,
    _worst,
)
from tensorgrad.autograd.gradients import grad as _grad
from tensorgrad.autograd.switch_checks import (
    _batched_forward_grad_check,
    _batched_grad_check,
    _undefined_grad_check,
    _undefined_tangent_check,
    _zero_grad_output_check,
)
from tensorgrad.core.tensor import Tensor
from tensorgrad.grad_mode import enable_grad

__all__ = [
    "Entry",
    "GradcheckError",
    "GradcheckReport",
    "GradcheckWarning",
    "gradcheck",
    "gradcheck_module",
    "gradgradcheck",
]

#: the most Jacobian entries (outputs × inputs) ``mode="jacobian"`` agrees to compute
JACOBIAN_LIMIT = 250_000
#: inputs up to this size get an entry-by-entry diagnosis when a directional check fails
_DIAGNOSE_LIMIT = 4096


# --------------------------------------------------------------------------- gradcheck
@dataclass(frozen=True)
class _Checks:
    """Which checks a :func:`gradcheck` call runs (PyTorch's switches)."""

    backward_ad: bool = True
    forward_ad: bool = False
    undefined_grad: bool = True
    grad_dtypes: bool = False
    batched_grad: bool = False
    batched_forward_grad: bool = False
    nondet_tol: float = 0.0


def gradcheck(
    func: Callable[..., Tensor | Sequence[Tensor]],
    inputs: Tensor | Sequence[Any],
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-4,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_batched_forward_grad: bool = False,
    check_forward_ad: bool = False,
    check_backward_ad: bool = True,
    fast_mode: bool | None = None,
    masked: bool | None = None,
    params: Iterable[Tensor] | Mapping[str, Tensor] | Any = None,
    mode: str | None = None,
    seed: int = 0,
    n_directions: int = 1,
) -> bool:
    """Compare the analytic gradients of ``func`` with central finite differences in float64.

    ``func(*inputs)`` returns a Tensor or a sequence of Tensors. The inputs that require
    grad, and ``params`` (tensors ``func`` uses without taking them as arguments: a list, a
    mapping name → tensor, or a module), are checked; float32 ones are checked as float64
    copies, with a :class:`GradcheckWarning`. ``mode="directional"`` (the default) compares
    ``δᵀ∇f`` with ``(f(θ+εδ) − f(θ−εδ)) / 2ε`` for ``n_directions`` seeded random unit
    directions δ, where ``f = sum(out * W)`` with random weights W: that is PyTorch's fast
    mode (``vᵀJu`` for random u and v), so ``fast_mode=True`` means ``mode="directional"``
    and ``fast_mode=False`` means ``mode="jacobian"``, the whole Jacobian entry by entry
    (PyTorch's slow mode, for small inputs); left None, ``mode`` decides. A pair agrees when
    ``|analytic − numeric| <= atol + rtol·|numeric|``.

    PyTorch's switches, with its names, defaults and meaning:

    * ``check_backward_ad`` (True): reverse mode against the differences; with it, always,
      a zero upstream gradient must give exactly zero gradients ("backward not multiplied
      by grad_output").
    * ``check_forward_ad`` (False): forward mode's ``J·δ`` (each op's JVP rule, a custom
      Function's ``jvp``, in a dual level) against the same differences, output by output.
    * ``check_undefined_grad`` (True): backward with no gradient for one of several outputs
      (and zeros for the rest) must give zero gradients, not an error or NaN; with forward
      mode, an input with no tangent must give the tangents a zero tangent gives.
    * ``check_batched_grad`` (False): ``vmap`` of the VJP over a batch of upstream gradients
      equals a loop of VJPs, output by output; ``check_batched_forward_grad`` (False): ``vmap``
      of the JVP over a batch of tangents equals a loop, input by input. Both are taken with
      respect to the inputs (``params`` are held as constants there).
    * ``check_grad_dtypes`` (False): each gradient (and tangent) has its tensor's dtype.
    * ``nondet_tol`` (0.0): backward runs twice on the same graph; the two results may differ
      by at most this much.
    * ``masked``: PyTorch's switch for the unspecified elements of sparse tensors; tensorgrad's
      tensors are all dense, so it changes nothing (accepted for PyTorch's code).

    Returns True when all agree; otherwise raises :class:`GradcheckError` (a RuntimeError,
    whose ``report`` names the check, the input or output and the worst entries), or returns
    False if ``raise_exception`` is False. Errors the function itself raises (a custom
    Function without ``jvp`` under forward mode: NotImplementedError) propagate, as in PyTorch.
    """
    if masked is not None and not isinstance(masked, bool):
        raise TypeError(f"gradcheck: masked must be a bool or None, got {masked!r}")
    checks = _Checks(
        backward_ad=check_backward_ad,
        forward_ad=check_forward_ad,
        undefined_grad=check_undefined_grad,
        grad_dtypes=check_grad_dtypes,
        batched_grad=check_batched_grad,
        batched_forward_grad=check_batched_forward_grad,
        nondet_tol=nondet_tol,
    )
    return _gradcheck(
        func,
        inputs,
        _named(params),
        _mode(mode, fast_mode),
        eps,
        atol,
        rtol,
        seed,
        n_directions,
        raise_exception,
        checks,
    )


def _mode(mode: str | None, fast_mode: bool | None) -> str:
    """``mode`` from ``mode`` and PyTorch's ``fast_mode`` (which must agree when both are given)."""
    if fast_mode is not None and not isinstance(fast_mode, bool):
        raise TypeError(f"gradcheck: fast_mode must be a bool or None, got {fast_mode!r}")
    implied = None if fast_mode is None else ("directional" if fast_mode else "jacobian")
    if mode is not None and implied is not None and mode != implied:
        raise ValueError(
            f"gradcheck: fast_mode={fast_mode} means mode={implied!r}, but mode={mode!r} was given"
        )
    return mode or implied or "directional"


def _gradcheck(
    fn: Callable[..., Any],
    inputs: Any,
    params: list[tuple[str, Tensor]],
    mode: str,
    eps: float,
    atol: float,
    rtol: float,
    seed: int,
    n_directions: int,
    raise_exception: bool,
    checks: _Checks,
) -> bool:
    if not (checks.backward_ad or checks.forward_ad):
        raise ValueError(
            "gradcheck: Expected at least one of check_forward_ad or check_backward_ad to be True"
        )
    if checks.batched_grad and not checks.backward_ad:
        raise ValueError(
            "gradcheck: Setting check_batched_grad=True requires check_backward_ad to be True"
        )
    if checks.batched_forward_grad and not checks.forward_ad:
        raise ValueError(
            "gradcheck: Setting check_batched_forward_grad=True requires check_forward_ad to "
            "be True"
        )
    if mode not in ("directional", "jacobian"):
        raise ValueError(f"gradcheck: mode must be 'directional' or 'jacobian', got {mode!r}")
    if eps <= 0:
        raise ValueError(f"gradcheck: eps must be positive, got {eps}")
    if not checks.nondet_tol >= 0:
        raise ValueError(f"gradcheck: nondet_tol must be at least 0, got {checks.nondet_tol}")
    if mode == "directional" and (isinstance(n_directions, bool) or n_directions < 1):
        raise ValueError(
            f"gradcheck: n_directions must be at least 1, got {n_directions!r}: a check along "
            "no direction checks nothing"
        )
    problem = _Problem(fn, inputs, params, "gradcheck")
    problem.check_grad_dtypes = checks.grad_dtypes
    tol = checks.nondet_tol
    with problem:
        try:
            report = None
            if checks.backward_ad:
                if mode == "jacobian":
                    report = _jacobian_check(problem, eps, atol, rtol, seed, tol)
                else:
                    report = _directional_check(problem, eps, atol, rtol, seed, n_directions, tol)
            if report is None and checks.forward_ad:
                if mode == "jacobian":
                    report = _forward_jacobian_check(problem, eps, atol, rtol)
                else:
                    report = _forward_directional_check(
                        problem, eps, atol, rtol, seed, n_directions
                    )
                if report is None and checks.undefined_grad:
                    report = _undefined_tangent_check(problem, seed)
            if report is None and checks.batched_forward_grad:
                report = _batched_forward_grad_check(problem, seed)
            if report is None and checks.backward_ad:
                if checks.batched_grad:
                    report = _batched_grad_check(problem, seed)
                if report is None:
                    report = _zero_grad_output_check(problem)
                if report is None and checks.undefined_grad:
                    report = _undefined_grad_check(problem)
        except GradcheckError as exc:
            report = exc.report
    return True if report is None else _fail(report, raise_exception)


def _directional_check(
    problem: _Problem,
    eps: float,
    atol: float,
    rtol: float,
    seed: int,
    n_directions: int,
    nondet_tol: float = 0.0,
) -> GradcheckReport | None:
    rng = np.random.default_rng(seed)
    outputs = problem.evaluate()
    _warn_low_precision_outputs(outputs)
    weights = _weights(rng, outputs)
    grads = problem.gradients(outputs, weights, retain_graph=True)
    again = problem.gradients(outputs, weights)
    del outputs
    report = _reentrant(problem, grads, again, nondet_tol)
    if report is not None:
        return report
    for _ in range(n_directions):
        deltas = [rng.standard_normal(s.base.shape) for s in problem.slots]
        norm = math.sqrt(sum(float(np.sum(d * d)) for d in deltas))
        if norm == 0.0:  # every checked tensor is empty: nothing to perturb
            return None
        deltas = [d / norm for d in deltas]
        analytic = sum(float(np.vdot(g, d)) for g, d in zip(grads, deltas, strict=True))
        numeric = _central(problem, weights, deltas, eps)
        if not _close(analytic, numeric, atol, rtol):
            return _diagnose(problem, weights, grads, deltas, eps, atol, rtol, analytic, numeric)
    return None


def _central(
    problem: _Problem, weights: Sequence[np.ndarray], deltas: Sequence[Any], eps: float
) -> float:
    plus = problem.value(weights, [None if d is None else eps * d for d in deltas])
    minus = problem.value(weights, [None if d is None else -eps * d for d in deltas])
    return (plus - minus) / (2 * eps)


def _diagnose(
    problem: _Problem,
    weights: Sequence[np.ndarray],
    grads: Sequence[np.ndarray],
    deltas: Sequence[np.ndarray],
    eps: float,
    atol: float,
    rtol: float,
    analytic: float,
    numeric: float,
) -> GradcheckReport:
    """Find which checked tensor (and, if small, which entries) a failed direction blames."""
    n = len(problem.slots)
    parts = []
    for i, (g, d) in enumerate(zip(grads, deltas, strict=True)):
        only = [d if j == i else None for j in range(n)]
        a_i, n_i = float(np.vdot(g, d)), _central(problem, weights, only, eps)
        excess = abs(a_i - n_i) - (atol + rtol * abs(n_i))
        parts.append((math.inf if math.isnan(excess) else excess, i, a_i, n_i))
    excess, i, a_i, n_i = max(parts)
    slot = problem.slots[i]
    worst: list[Entry] = []
    if slot.base.size <= _DIAGNOSE_LIMIT:
        numeric_grad = np.zeros(slot.base.shape)
        for k in range(slot.base.size):
            e = np.zeros(slot.base.shape)
            e.flat[k] = 1.0
            only = [e if j == i else None for j in range(n)]
            numeric_grad.flat[k] = _central(problem, weights, only, eps)
        worst = _worst(np.asarray(grads[i], dtype=np.float64), numeric_grad, atol, rtol)
    summary = (
        f"along a random unit direction δ, δᵀ∇f is {analytic:.10g} "
        f"analytically and {numeric:.10g} by central differences (eps={eps:g}, atol={atol:g}, "
        f"rtol={rtol:g})"
    )
    return GradcheckReport("directional", slot.name, slot.base.shape, summary, a_i, n_i, worst)


def _reentrant(
    problem: _Problem,
    first: Sequence[np.ndarray],
    second: Sequence[np.ndarray],
    nondet_tol: float,
) -> GradcheckReport | None:
    """PyTorch's reentrancy check: backward run twice on one graph with the same upstream
    gradient must give the same gradients, to within ``nondet_tol``."""
    for slot, a, b in zip(problem.slots, first, second, strict=True):
        a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        if a.size == 0:
            continue
        diff = np.abs(a - b)
        worst = float(np.max(np.where(np.isnan(diff), np.inf, diff)))
        if worst > nondet_tol:
            return GradcheckReport(
                "reentrant backward",
                slot.name,
                slot.base.shape,
                "Backward is not reentrant, i.e., running backward with same input and "
                "grad_output multiple times gives different values (by up to "
                f"{worst:.3g}); the tolerance for nondeterminism was {nondet_tol} (nondet_tol)",
                worst=_worst(a, b, nondet_tol, 0.0, reference="second run"),
            )
    return None


def _jacobian_check(
    problem: _Problem,
    eps: float,
    atol: float,
    rtol: float,
    seed: int,
    nondet_tol: float = 0.0,
) -> GradcheckReport | None:
    outputs = problem.evaluate()
    _warn_low_precision_outputs(outputs)
    n_out = sum(o.size for o in outputs)
    n_in = sum(s.base.size for s in problem.slots)
    if n_out * n_in > JACOBIAN_LIMIT:
        raise ValueError(
            f"gradcheck: the Jacobian has {n_out} × {n_in} entries, more than the "
            f"{JACOBIAN_LIMIT} mode='jacobian' computes; use mode='directional'"
        )
    labels = [
        f"output {k} {[int(i) for i in np.unravel_index(r, o.shape)]}"
        if len(outputs) > 1
        else f"output {[int(i) for i in np.unravel_index(r, o.shape)]}"
        for k, o in enumerate(outputs)
        for r in range(o.size)
    ]
    # analytic: one backward per output element, with a one-hot upstream gradient; twice,
    # for the reentrancy check
    runs = []
    for _ in range(2):
        analytic = [np.zeros((n_out, s.base.size)) for s in problem.slots]
        row = 0
        for k, o in enumerate(outputs):
            for r in range(o.size):
                weights = [np.zeros(p.shape) for p in outputs]
                weights[k].flat[r] = 1.0
                grads = problem.gradients(outputs, weights, retain_graph=True)
                for jac, g in zip(analytic, grads, strict=True):
                    jac[row] = np.ravel(g)
                row += 1
        runs.append(analytic)
    del outputs
    report = _reentrant(problem, runs[0], runs[1], nondet_tol)
    if report is not None:
        return report
    # numeric: one central difference per input element
    n = len(problem.slots)
    for i, slot in enumerate(problem.slots):
        numeric = np.zeros((n_out, slot.base.size))
        for c in range(slot.base.size):
            e = np.zeros(slot.base.shape)
            e.flat[c] = eps
            plus = problem.outputs_at([e if j == i else None for j in range(n)])
            minus = problem.outputs_at([-e if j == i else None for j in range(n)])
            numeric[:, c] = (plus - minus) / (2 * eps)
        ok = _close(analytic[i], numeric, atol, rtol)
        if not np.all(ok):
            worst = [
                Entry(
                    tuple(int(v) for v in np.unravel_index(e.index[1], slot.base.shape)),
                    e.analytic,
                    e.numeric,
                    labels[e.index[0]],
                )
                for e in _worst(analytic[i], numeric, atol, rtol)
            ]
            summary = (
                f"{int(np.size(ok) - np.count_nonzero(ok))} of {np.size(ok)} Jacobian entries "
                f"differ from central differences (eps={eps:g}, atol={atol:g}, rtol={rtol:g})"
            )
            return GradcheckReport("jacobian", slot.name, slot.base.shape, summary, worst=worst)
    return None


def _forward_directional_check(
    problem: _Problem, eps: float, atol: float, rtol: float, seed: int, n_directions: int
) -> GradcheckReport | None:
    """Forward mode along random unit directions: each output's tangent ``J·δ`` against
    ``(out(θ+εδ) − out(θ−εδ)) / 2ε``, elementwise. A failure is pinned on one input (the
    direction repeated one input at a time) and names the output and its worst entries."""
    rng = np.random.default_rng(seed + 2)
    n = len(problem.slots)
    for _ in range(n_directions):
        deltas = [rng.standard_normal(s.base.shape) for s in problem.slots]
        norm = math.sqrt(sum(float(np.sum(d * d)) for d in deltas))
        if norm == 0.0:
            return None
        deltas = [d / norm for d in deltas]
        if _forward_agrees(problem, deltas, eps, atol, rtol) is None:
            continue
        # which input: the same direction, one input at a time
        for i, slot in enumerate(problem.slots):
            only = [deltas[i] if j == i else None for j in range(n)]
            failure = _forward_agrees(problem, only, eps, atol, rtol)
            if failure is not None:
                label, worst = failure
                return GradcheckReport(
                    "forward-mode directional",
                    slot.name,
                    slot.base.shape,
                    f"{label}: along a random unit direction δ of this input, forward mode's "
                    f"J·δ (the JVP rules, in a dual level) differs from central differences "
                    f"(eps={eps:g}, atol={atol:g}, rtol={rtol:g})",
                    worst=worst,
                )
        label, worst = _forward_agrees(problem, deltas, eps, atol, rtol)
        return GradcheckReport(
            "forward-mode directional",
            ", ".join(s.name for s in problem.slots),
            problem.slots[0].base.shape,
            f"{label}: J·δ along a direction over all inputs together differs from central "
            f"differences, though each input alone agrees (eps={eps:g})",
            worst=worst,
        )
    return None


def _forward_agrees(
    problem: _Problem, deltas: Sequence[np.ndarray | None], eps: float, atol: float, rtol: float
) -> tuple[str, list[Entry]] | None:
    """None when every output's ``J·δ`` matches central differences; else the first bad
    output's label and its worst entries (indices into that output)."""
    analytic = problem.jvps(deltas)
    shapes = [a.shape for a in analytic]
    plus = problem.outputs_at([None if d is None else eps * d for d in deltas])
    minus = problem.outputs_at([None if d is None else -eps * d for d in deltas])
    numeric = (plus - minus) / (2 * eps)
    start = 0
    for label, a in zip(_output_labels(shapes), analytic, strict=True):
        num = numeric[start : start + a.size].reshape(a.shape)
        start += a.size
        if not np.all(_close(a, num, atol, rtol)):
            return label, _worst(a, num, atol, rtol)
    return None


def _forward_jacobian_check(
    problem: _Problem, eps: float, atol: float, rtol: float
) -> GradcheckReport | None:
    """Forward mode, column by column: the JVP along each input element's unit vector
    against that element's central difference."""
    n = len(problem.slots)
    n_out = sum(o.size for o in problem.evaluate())
    if n_out * sum(s.base.size for s in problem.slots) > JACOBIAN_LIMIT:
        raise ValueError(
            f"gradcheck: the Jacobian has more than the {JACOBIAN_LIMIT} entries "
            "mode='jacobian' computes; use mode='directional'"
        )
    for i, slot in enumerate(problem.slots):
        for c in range(slot.base.size):
            e = np.zeros(slot.base.shape)
            e.flat[c] = 1.0
            only = [e if j == i else None for j in range(n)]
            failure = _forward_agrees(problem, only, eps, atol, rtol)
            if failure is not None:
                label, worst = failure
                index = [int(v) for v in np.unravel_index(c, slot.base.shape)]
                return GradcheckReport(
                    "forward-mode jacobian",
                    slot.name,
                    slot.base.shape,
                    f"{label}: the Jacobian column of input element {index} by forward mode "
                    f"differs from central differences (eps={eps:g}, atol={atol:g}, "
                    f"rtol={rtol:g}); the worst entries are indices into {label}",
                    worst=worst,
                )
    return None


def _warn_low_precision_outputs(outputs: Sequence[Tensor]) -> None:
    dtypes = sorted({str(o.dtype) for o in outputs if o.dtype != np.float64})
    if dtypes:
        warnings.warn(
            f"gradcheck: fn returned {', '.join(dtypes)} outputs from float64 inputs; finite "
            "differences through a low-precision step are dominated by rounding (raise eps)",
            GradcheckWarning,
            stacklevel=4,
        )


# --------------------------------------------------------------------------- second order
def gradgradcheck(
    func: Callable[..., Tensor | Sequence[Tensor]],
    inputs: Tensor | Sequence[Any],
    grad_outputs: Tensor | Sequence[Tensor | None] | None = None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-4,
    gen_non_contig_grad_outputs: bool = False,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_fwd_over_rev: bool = False,
    check_rev_over_rev: bool = True,
    fast_mode: bool | None = None,
    masked: bool = False,
    params: Iterable[Tensor] | Mapping[str, Tensor] | Any = None,
    mode: str | None = None,
    seed: int = 0,
    n_directions: int = 1,
) -> bool:
    """Check second derivatives, as PyTorch's: :func:`gradcheck` of the function
    ``(inputs, grad_outputs) ↦ vjp(func, inputs)(grad_outputs)``, the gradient recorded with
    ``create_graph=True`` so that its own derivatives come from the VJPs run on Tensors.

    ``grad_outputs`` are the upstream gradients of ``func``'s differentiable outputs; left
    None they are drawn uniformly from [-1, 1] in float64 (seeded by ``seed``) and require
    grad, so the check covers the derivative with respect to them too, as PyTorch's does;
    ``gen_non_contig_grad_outputs=True`` draws them non-contiguous. ``check_rev_over_rev``
    (True) differentiates the gradient in reverse mode (reverse over reverse);
    ``check_fwd_over_rev`` (False) in forward mode: the JVP of the VJP against the
    differences (forward over reverse). ``check_batched_grad`` (needs ``check_rev_over_rev``)
    checks ``vmap`` of the second-order VJPs against a loop; the other options are
    :func:`gradcheck`'s. A gradient that does not depend on the inputs (a linear ``func``)
    counts as a zero second derivative and must match zero differences.
    """
    if not (check_fwd_over_rev or check_rev_over_rev):
        raise ValueError(
            "gradgradcheck: Expected at least one of check_fwd_over_rev or check_rev_over_rev "
            "to be True"
        )
    if check_undefined_grad and not check_rev_over_rev:
        raise ValueError(
            "gradgradcheck: Setting check_undefined_grad=True requires check_rev_over_rev to "
            "be True"
        )
    if check_batched_grad and not check_rev_over_rev:
        raise ValueError(
            "gradgradcheck: Setting check_batched_grad=True requires check_rev_over_rev to be True"
        )
    if not isinstance(masked, bool):
        raise TypeError(f"gradgradcheck: masked must be a bool, got {masked!r}")
    tupled = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    named = _named(params)
    param_tensors = [p for _, p in named]
    if grad_outputs is None:
        with enable_grad():
            first = func(*tupled)
        first = [first] if isinstance(first, Tensor) else list(first)
        rng = np.random.default_rng(seed + 1)
        grad_outputs = [
            Tensor(
                _noncontiguous(rng.uniform(-1.0, 1.0, o.shape))
                if gen_non_contig_grad_outputs
                else rng.uniform(-1.0, 1.0, o.shape),
                requires_grad=True,
            )
            for o in first
            if isinstance(o, Tensor) and o.requires_grad
        ]
    else:
        grad_outputs = [grad_outputs] if isinstance(grad_outputs, Tensor) else list(grad_outputs)
    n_in = len(tupled)

    def gradient(*args: Any) -> list[Tensor]:
        result = func(*args[:n_in])
        outputs = [result] if isinstance(result, Tensor) else list(result)
        outputs = [o for o in outputs if isinstance(o, Tensor) and o.requires_grad]
        if len(outputs) != len(grad_outputs):
            raise ValueError(
                f"gradgradcheck: {len(grad_outputs)} grad_outputs for {len(outputs)} "
                "differentiable outputs"
            )
        wrt = [a for a in args[:n_in] if isinstance(a, Tensor) and a.requires_grad]
        wrt += [p for p in param_tensors if p.requires_grad]
        used = [(o, g) for o, g in zip(outputs, args[n_in:], strict=True) if g is not None]
        grads: Sequence[Tensor | None] = [None] * len(wrt)
        if used:
            grads = _grad(
                [o for o, _ in used],
                wrt,
                grad_outputs=[g for _, g in used],
                create_graph=True,
                allow_unused=True,
            )
        return [
            Tensor(np.zeros(t.shape)) if g is None else g for g, t in zip(grads, wrt, strict=True)
        ]

    checks = _Checks(
        backward_ad=check_rev_over_rev,
        forward_ad=check_fwd_over_rev,
        undefined_grad=check_undefined_grad,
        grad_dtypes=check_grad_dtypes,
        batched_grad=check_batched_grad,
        nondet_tol=nondet_tol,
    )
    try:
        return _gradcheck(
            gradient,
            [*tupled, *grad_outputs],
            named,
            _mode(mode, fast_mode),
            eps,
            atol,
            rtol,
            seed,
            n_directions,
            True,
            checks,
        )
    except GradcheckError as exc:
        report = exc.report
        report.check = f"second derivative, {report.check}"
        for k in range(len(grad_outputs)):
            if report.input_name == f"input {n_in + k}":
                report.input_name = f"grad_outputs[{k}]"
        return _fail(report, raise_exception)


def gradcheck_module(
    module: Any,
    *inputs: Any,
    check_inputs: bool = False,
    second_order: bool = False,
    **options: Any,
) -> bool:
    """Check the gradients of a module's parameters (and, if asked, of its inputs).

    ``module(*inputs)`` is differentiated with respect to ``module.parameters()`` (named by
    ``named_parameters()`` when the module has it). Parameters, and buffers a forward may
    update (batch-norm running statistics), are restored exactly afterwards. A module with
    dropout must be in ``eval()`` mode: a new random mask per call defeats finite differences.
    ``options`` are :func:`gradcheck`'s (``mode``, ``eps``, ``atol``, ``rtol``, ...).
    """
    if check_inputs:
        inputs = tuple(
            Tensor(x._data, requires_grad=True)
            if isinstance(x, Tensor) and x.dtype.kind == "f"
            else x
            for x in inputs
        )
    else:
        inputs = tuple(x.detach() if isinstance(x, Tensor) else x for x in inputs)
    buffers = [b for _, b in getattr(module, "named_buffers", lambda: [])() if b is not None]
    saved = [(b, b._data, b._data.copy(), b._versions.tick) for b in buffers]
    check = gradgradcheck if second_order else gradcheck
    try:
        return check(lambda *xs: module(*xs), inputs, params=module, **options)
    finally:
        for buffer, array, values, version in saved:
            np.copyto(array, values)
            buffer.data = array
            buffer._versions.tick = version
