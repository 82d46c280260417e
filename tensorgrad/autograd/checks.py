"""Check gradients: against finite differences, and against the scalar engine.

* :func:`gradcheck` compares the analytic gradient of ``fn`` with central differences, in
  float64: along random unit directions (``mode="directional"``, PyTorch's fast gradcheck:
  one number ``δᵀ∇f`` per direction) or entry by entry (``mode="jacobian"``, the full
  Jacobian, for small inputs).
* :func:`gradgradcheck` checks second derivatives the same way: the gradient function,
  recorded with ``create_graph=True``, is itself put through :func:`gradcheck`.
* :func:`gradcheck_module` checks a module's parameters (perturbed in place, restored exactly).
* :func:`check_with_scalar_engine` re-runs the recorded forward code on NumPy object arrays
  of :class:`tensorgrad.scalar.Value` and compares every gradient with the scalar engine's.

A non-scalar output ``out`` is reduced to ``f = sum(out * W)`` with fixed random weights
``W`` (seeded), so every output element takes part. See ``docs/gradcheck.md``.
"""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tensorgrad import ops
from tensorgrad.autograd import grad as _grad
from tensorgrad.core.engine import TENSOR_TYPES
from tensorgrad.core.tensor import Tensor
from tensorgrad.grad_mode import enable_grad

__all__ = [
    "SCALAR_FORWARDS",
    "Entry",
    "GradcheckError",
    "GradcheckReport",
    "GradcheckWarning",
    "check_with_scalar_engine",
    "gradcheck",
    "gradcheck_module",
    "gradgradcheck",
]

#: the most Jacobian entries (outputs × inputs) ``mode="jacobian"`` agrees to compute
JACOBIAN_LIMIT = 250_000
#: inputs up to this size get an entry-by-entry diagnosis when a directional check fails
_DIAGNOSE_LIMIT = 4096
_WORST = 5


class GradcheckWarning(UserWarning):
    """A check that ran, but on something that makes its verdict less trustworthy."""


@dataclass(frozen=True)
class Entry:
    """One compared value: where it is, the analytic and the numeric value."""

    index: tuple[int, ...]
    analytic: float
    numeric: float
    output: str = ""  #: for Jacobian entries, the output element (``"output 0 [1, 2]"``)
    reference: str = "numeric"  #: what ``numeric`` is: central differences or "scalar engine"

    @property
    def abs_error(self) -> float:
        return abs(self.analytic - self.numeric)

    @property
    def rel_error(self) -> float:
        scale = abs(self.numeric)
        return self.abs_error / scale if scale else math.inf if self.abs_error else 0.0

    def __str__(self) -> str:
        where = f"{self.output}, input " if self.output else ""
        return (
            f"{where}{list(self.index)}: analytic {self.analytic:.10g}, {self.reference} "
            f"{self.numeric:.10g} (abs error {self.abs_error:.3g}, rel error {self.rel_error:.3g})"
        )


@dataclass
class GradcheckReport:
    """Why a check failed: which input, the compared values and the worst entries."""

    check: str  #: "directional", "jacobian", "scalar engine" (prefixed "second derivative, ")
    input_name: str  #: "input 1" or "parameter 'weight'"
    shape: tuple[int, ...]
    summary: str
    analytic: float | None = None  #: directional checks: δᵀ∇f for this input
    numeric: float | None = None
    worst: list[Entry] = field(default_factory=list)

    def __str__(self) -> str:
        lines = [
            f"{self.check} check failed for {self.input_name} (shape {self.shape}): {self.summary}"
        ]
        if self.analytic is not None:
            lines.append(
                f"  this input's part of it: analytic {self.analytic:.10g}, "
                f"numeric {self.numeric:.10g}"
            )
        if self.worst:
            lines.append("  worst entries:")
            lines.extend(f"    {entry}" for entry in self.worst)
        return "\n".join(lines)


class GradcheckError(AssertionError):
    """A gradient check failed; ``report`` says where and by how much."""

    def __init__(self, report: GradcheckReport) -> None:
        super().__init__(str(report))
        self.report = report


# --------------------------------------------------------------------------- the problem
@dataclass
class _Slot:
    """One checked tensor: its name, the tensor ``fn`` sees, its float64 values at θ."""

    name: str
    tensor: Tensor
    base: np.ndarray
    work: np.ndarray  #: the array installed in ``tensor``; perturbations are written into it


class _Problem:
    """The tensors under check, as float64 working copies, and how to evaluate ``fn``.

    Inputs that require grad are replaced by float64 copies. Parameters keep their identity:
    a float64 working array is swapped in as their data for the duration of the check, and
    the original array (never written to) and version counter are put back on exit.
    """

    def __init__(
        self, fn: Callable[..., Any], inputs: Any, params: list[tuple[str, Tensor]], caller: str
    ) -> None:
        self.fn, self.caller = fn, caller
        inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
        self.slots: list[_Slot] = []
        self.args: list[Any] = []
        low_precision = []
        for i, value in enumerate(inputs):
            if isinstance(value, Tensor) and value.requires_grad:
                if value.dtype != np.float64:
                    low_precision.append(f"input {i} is {value.dtype}")
                work = value._data.astype(np.float64, copy=True)
                tensor = Tensor(work, requires_grad=True)
                self.slots.append(_Slot(f"input {i}", tensor, work.copy(), work))
                self.args.append(tensor)
            else:
                self.args.append(value)
        self._params: list[tuple[Tensor, np.ndarray, int, _Slot]] = []
        seen: set[int] = set()
        for name, p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"{caller}: parameter {name} is a {type(p).__name__}, not a Tensor")
            if id(p) in seen or not p.requires_grad:
                continue
            seen.add(id(p))
            if p.dtype != np.float64:
                low_precision.append(f"parameter {name} is {p.dtype}")
            work = p._data.astype(np.float64, copy=True)
            slot = _Slot(f"parameter {name}", p, work.copy(), work)
            self._params.append((p, p._data, p._versions.tick, slot))
            self.slots.append(slot)
        if not self.slots:
            raise ValueError(f"{caller}: no input or parameter requires grad: nothing to check")
        if low_precision:
            warnings.warn(
                f"{caller}: {', '.join(low_precision)}; the check runs on float64 copies "
                "(finite differences in low precision are dominated by rounding)",
                GradcheckWarning,
                stacklevel=4,
            )

    def __enter__(self) -> _Problem:
        for p, _, _, slot in self._params:
            p.data = slot.work
        return self

    def __exit__(self, *exc: object) -> None:
        for p, original, version, _ in self._params:
            p.data = original
            p._versions.tick = version

    def evaluate(self) -> list[Tensor]:
        with enable_grad():
            result = self.fn(*self.args)
        outputs = [result] if isinstance(result, Tensor) else result
        if not isinstance(outputs, (list, tuple)) or not all(
            isinstance(o, Tensor) for o in outputs
        ):
            raise TypeError(
                f"{self.caller}: fn must return a Tensor or a sequence of Tensors, "
                f"got {type(result).__name__}"
            )
        return list(outputs)

    def at(self, offsets: Sequence[np.ndarray | None]) -> None:
        """Set every checked tensor to θ + offset (θ where the offset is None)."""
        for slot, offset in zip(self.slots, offsets, strict=True):
            np.copyto(slot.work, slot.base if offset is None else slot.base + offset)

    def value(self, weights: Sequence[np.ndarray], offsets: Sequence[np.ndarray | None]) -> float:
        """``sum(out * W)`` over all outputs, with the checked tensors at θ + offset."""
        flat = self.outputs_at(offsets)
        return float(np.sum(flat * np.concatenate([w.ravel() for w in weights] + [np.zeros(0)])))

    def outputs_at(self, offsets: Sequence[np.ndarray | None]) -> np.ndarray:
        """All outputs, flattened and joined, with the checked tensors at θ + offset.

        They are copied before θ is restored: an output may be a view of an input.
        """
        self.at(offsets)
        try:
            outputs = self.evaluate()
            return np.concatenate(
                [np.ravel(o._data).astype(np.float64) for o in outputs] + [np.zeros(0)]
            )
        finally:
            self.at([None] * len(self.slots))

    def gradients(
        self,
        outputs: Sequence[Tensor],
        weights: Sequence[np.ndarray],
        *,
        retain_graph: bool = False,
    ) -> list[np.ndarray]:
        """The analytic gradient of ``sum(out * W)`` for every checked tensor."""
        used = [(o, w) for o, w in zip(outputs, weights, strict=True) if o.requires_grad]
        zeros = [np.zeros(s.base.shape) for s in self.slots]
        if not used:
            return zeros
        grads = _grad(
            [o for o, _ in used],
            [s.tensor for s in self.slots],
            grad_outputs=[Tensor(w.astype(o.dtype)) for o, w in used],
            retain_graph=retain_graph,
            allow_unused=True,
        )
        result = []
        for slot, g, zero in zip(self.slots, grads, zeros, strict=True):
            if g is None:
                result.append(zero)
                continue
            if g.shape != slot.base.shape or g.dtype != slot.work.dtype:
                raise GradcheckError(
                    GradcheckReport(
                        "gradient shape",
                        slot.name,
                        slot.base.shape,
                        f"the gradient has shape {g.shape} and dtype {g.dtype}, expected "
                        f"{slot.base.shape} and {slot.work.dtype}",
                    )
                )
            result.append(g._data)
        return result


def _named(params: Any) -> list[tuple[str, Tensor]]:
    if params is None:
        return []
    if isinstance(params, Tensor):
        return [("0", params)]
    if isinstance(params, Mapping):
        return [(repr(str(k)), v) for k, v in params.items()]
    if hasattr(params, "named_parameters"):
        return [(repr(str(k)), v) for k, v in params.named_parameters()]
    if hasattr(params, "parameters"):
        params = params.parameters()
    return [(str(i), p) for i, p in enumerate(params)]


def _weights(rng: np.random.Generator, outputs: Sequence[Tensor]) -> list[np.ndarray]:
    """Random output weights W, representable in each output's dtype (the upstream gradient
    of a float32 output is float32: the same W must weigh the finite differences)."""
    weights = []
    for o in outputs:
        w = rng.standard_normal(o.shape)
        weights.append(w.astype(o.dtype).astype(np.float64) if o.dtype.kind == "f" else w)
    return weights


def _close(analytic: Any, numeric: Any, atol: float, rtol: float) -> Any:
    return np.isclose(analytic, numeric, rtol=rtol, atol=atol, equal_nan=False)


def _worst(
    analytic: np.ndarray, numeric: np.ndarray, atol: float, rtol: float, reference: str = "numeric"
) -> list[Entry]:
    """The entries that exceed the tolerance most, worst first."""
    excess = np.abs(analytic - numeric) - (atol + rtol * np.abs(numeric))
    excess = np.where(np.isnan(excess), np.inf, excess)
    flat = np.argsort(-excess, axis=None, kind="stable")[:_WORST]
    entries = []
    for k in flat:
        if excess.flat[k] <= 0:
            break
        index = tuple(int(i) for i in np.unravel_index(k, analytic.shape))
        entries.append(Entry(index, float(analytic.flat[k]), float(numeric.flat[k]), "", reference))
    return entries


def _fail(report: GradcheckReport, raise_exception: bool) -> bool:
    if raise_exception:
        raise GradcheckError(report)
    return False


# --------------------------------------------------------------------------- gradcheck
def gradcheck(
    fn: Callable[..., Tensor | Sequence[Tensor]],
    inputs: Tensor | Sequence[Any],
    *,
    params: Iterable[Tensor] | Mapping[str, Tensor] | Any = None,
    mode: str = "directional",
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-4,
    seed: int = 0,
    n_directions: int = 1,
    raise_exception: bool = True,
) -> bool:
    """Compare the analytic gradients of ``fn`` with central finite differences in float64.

    ``fn(*inputs)`` returns a Tensor or a sequence of Tensors. The inputs that require grad,
    and ``params`` (tensors ``fn`` uses without taking them as arguments: a list, a mapping
    name → tensor, or a module), are checked; float32 ones are checked as float64 copies,
    with a :class:`GradcheckWarning`. ``mode="directional"`` compares ``δᵀ∇f`` with
    ``(f(θ+εδ) − f(θ−εδ)) / 2ε`` for ``n_directions`` seeded random unit directions δ;
    ``mode="jacobian"`` compares the whole Jacobian (for small inputs only). A pair agrees
    when ``|analytic − numeric| <= atol + rtol·|numeric|``.

    Returns True when all agree; otherwise raises :class:`GradcheckError` (whose ``report``
    names the input and its worst entries), or returns False if ``raise_exception`` is False.
    """
    return _gradcheck(
        fn, inputs, _named(params), mode, eps, atol, rtol, seed, n_directions, raise_exception
    )


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
) -> bool:
    if mode not in ("directional", "jacobian"):
        raise ValueError(f"gradcheck: mode must be 'directional' or 'jacobian', got {mode!r}")
    if eps <= 0:
        raise ValueError(f"gradcheck: eps must be positive, got {eps}")
    if mode == "directional" and (isinstance(n_directions, bool) or n_directions < 1):
        raise ValueError(
            f"gradcheck: n_directions must be at least 1, got {n_directions!r}: a check along "
            "no direction checks nothing"
        )
    problem = _Problem(fn, inputs, params, "gradcheck")
    with problem:
        try:
            if mode == "jacobian":
                report = _jacobian_check(problem, eps, atol, rtol, seed)
            else:
                report = _directional_check(problem, eps, atol, rtol, seed, n_directions)
        except GradcheckError as exc:
            report = exc.report
    return True if report is None else _fail(report, raise_exception)


def _directional_check(
    problem: _Problem, eps: float, atol: float, rtol: float, seed: int, n_directions: int
) -> GradcheckReport | None:
    rng = np.random.default_rng(seed)
    outputs = problem.evaluate()
    _warn_low_precision_outputs(outputs)
    weights = _weights(rng, outputs)
    grads = problem.gradients(outputs, weights)
    del outputs
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


def _jacobian_check(
    problem: _Problem, eps: float, atol: float, rtol: float, seed: int
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
    # analytic: one backward per output element, with a one-hot upstream gradient
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
    del outputs
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
    fn: Callable[..., Tensor | Sequence[Tensor]],
    inputs: Tensor | Sequence[Any],
    *,
    params: Iterable[Tensor] | Mapping[str, Tensor] | Any = None,
    mode: str = "directional",
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-4,
    seed: int = 0,
    n_directions: int = 1,
    raise_exception: bool = True,
) -> bool:
    """Check second derivatives: :func:`gradcheck` of the gradient of ``sum(fn(...) * W)``.

    The gradient is computed with ``tg.grad(..., create_graph=True)``, so its own gradient
    comes from the VJPs run on Tensors. A gradient that does not depend on the inputs (a
    linear ``fn``) counts as a zero second derivative and must match zero differences.
    """
    named = _named(params)
    param_tensors = [p for _, p in named]
    rng = np.random.default_rng(seed + 1)
    weights: list[np.ndarray] = []

    def gradient(*args: Any) -> list[Tensor]:
        result = fn(*args)
        outputs = [result] if isinstance(result, Tensor) else list(result)
        if not weights:
            weights.extend(_weights(rng, outputs))
        wrt = [a for a in args if isinstance(a, Tensor) and a.requires_grad]
        wrt += [p for p in param_tensors if p.requires_grad]
        used = [(o, w) for o, w in zip(outputs, weights, strict=True) if o.requires_grad]
        grads: Sequence[Tensor | None] = [None] * len(wrt)
        if used:
            grads = _grad(
                [o for o, _ in used],
                wrt,
                grad_outputs=[Tensor(w.astype(o.dtype)) for o, w in used],
                create_graph=True,
                allow_unused=True,
            )
        return [
            Tensor(np.zeros(t.shape)) if g is None else g for g, t in zip(grads, wrt, strict=True)
        ]

    try:
        return _gradcheck(gradient, inputs, named, mode, eps, atol, rtol, seed, n_directions, True)
    except GradcheckError as exc:
        exc.report.check = f"second derivative, {exc.report.check}"
        return _fail(exc.report, raise_exception)


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


# --------------------------------------------------------------------------- scalar engine
def _erf_value(x: Any) -> Any:
    """erf built from Value operations: its Maclaurin series for |x| <= 2, the continued
    fraction of erfc beyond (both accurate to about 1e-15). Numbers go to ``math.erf``."""
    from tensorgrad.scalar import Value

    if not isinstance(x, Value):
        return math.erf(x)
    if abs(x.data) <= 2.0:
        x2, term, total = x * x, x, x
        for n in range(1, 200):
            term = term * x2 * (-1.0 / n)
            total = total + term * (1.0 / (2 * n + 1))
            if abs(term.data) < 1e-17:
                break
        return total * (2 / math.sqrt(math.pi))
    sign = 1.0 if x.data > 0 else -1.0
    a = abs(x)
    t = a
    for k in range(80, 0, -1):
        t = a + (k / 2) / t
    erfc = (-(a * a)).exp() * (1 / math.sqrt(math.pi)) / t
    return (1 - erfc) * sign


def _elementwise(function: Callable[[Any], Any], x: Any) -> np.ndarray:
    return np.asarray(np.frompyfunc(function, 1, 1)(x), dtype=object)


def _has_values(x: Any) -> bool:
    return isinstance(x, np.ndarray) and x.dtype == object


def _scalar_pow(op: ops.Pow, x: Any, y: Any) -> Any:
    if _has_values(y):  # Value ** Value is not a scalar-engine op: exp(y log x), for x > 0
        return np.exp(y * np.log(x))
    return op.forward(x, y)


def _objects(x: Any) -> np.ndarray:
    """An object array (NumPy turns 0-d object results into bare scalars)."""
    return np.asarray(x, dtype=object)


def _scalar_var(op: ops.Var, x: Any) -> Any:
    axes = op._axes(x)
    count = op._count(x)
    centered = _objects(x - _objects(x).sum(axis=axes, keepdims=True) / count)
    squares = _objects(centered * centered)
    out = _objects(squares.sum(axis=axes, keepdims=True) / (count - op.correction))
    return out if op.keepdims else np.squeeze(out, axis=axes)


def _scalar_std(op: ops.Std, x: Any) -> Any:
    """sqrt(var), except where the variance is exactly 0 (a constant slice, or one element
    with correction 0): there the result is 0 with a zero gradient, PyTorch's convention,
    where sqrt's slope would be 1/0."""
    variance = ops.Var(op.axis, op.keepdims, op.correction)
    var = _objects(_scalar_var(variance, x))
    return _objects(np.frompyfunc(lambda v: v * 0.0 if v.data == 0 else v.sqrt(), 1, 1)(var))


def _data_of(x: Any) -> np.ndarray:
    """The float values of an object array of Values (and numbers)."""
    return np.vectorize(lambda v: getattr(v, "data", v), otypes=[float])(x)


def _scalar_norm(op: ops.Norm, x: Any) -> Any:
    """The p-norm from Value operations: max/min of |x| for ±inf, (Σ|x|^p)^(1/p) otherwise.
    p = 0 (a count) and norms of nothing are constants."""
    axes, p = op._axes(x), op.p
    if p == 0 or np.size(x) == 0:
        return op.forward(_data_of(x))
    magnitudes = _objects(np.abs(_objects(x)))
    if abs(p) == math.inf:
        extreme = np.maximum if p > 0 else np.minimum
        out = _objects(extreme.reduce(magnitudes, axis=axes, keepdims=True))
    else:
        out = _objects(_objects(magnitudes**p).sum(axis=axes, keepdims=True) ** (1 / p))
    return out if op.keepdims else np.squeeze(out, axis=axes)


def _scalar_logsumexp(op: ops.LogSumExp, x: Any) -> Any:
    axes = op._axes(x)
    if np.size(x) == 0:  # nothing to differentiate: the constant result (-inf or empty)
        return op.forward(np.zeros(np.shape(x)))
    shift = _data_of(x).max(axis=axes, keepdims=True)
    total = _objects(_objects(np.exp(_objects(x - shift))).sum(axis=axes, keepdims=True))
    out = _objects(np.log(total) + shift)
    return out if op.keepdims else np.squeeze(out, axis=axes)


def _element(value: Any) -> Any:
    """A 0-d object array as its Value: NumPy would store the array itself in an object
    array's element (``out[()] = value``), not the Value it holds."""
    return value[()] if _has_values(value) and value.ndim == 0 else value


def _scalar_index_add(op: ops.IndexAdd, values: Any) -> Any:
    result = np.zeros(op.shape, dtype=object)
    mask = isinstance(op.index, np.ndarray) and op.index.dtype == np.bool_
    if ops.is_basic_index(op.index) or mask:
        result[op.index] = _element(values)
    else:
        np.add.at(result, op.index, _element(values))
    return result


def _scalar_normalize(op: ops.Normalize, x: Any) -> Any:
    """(x − mean) / sqrt(var + eps) from Value operations. (The op's own forward would also
    overwrite the node's ``saved`` statistics, which the tensor engine's backward reads.)"""
    if np.size(x) == 0:
        return np.zeros(np.shape(x))
    x = _objects(x)
    count = int(np.prod([x.shape[a] for a in op.axes], dtype=np.int64))
    centered = _objects(x - _objects(x.sum(axis=op.axes, keepdims=True) / count))
    var = _objects(_objects(centered * centered).sum(axis=op.axes, keepdims=True) / count)
    return _objects(centered * _objects((var + op.eps) ** -0.5))


def _scalar_gelu(op: ops.Gelu, x: Any) -> Any:
    if op.approximate == "tanh":
        return op.forward(x)
    return 0.5 * x * (1 + _elementwise(_erf_value, x * (1 / math.sqrt(2))))


def _scalar_bce(op: ops.BinaryCrossEntropyWithLogits, x: Any, y: Any) -> Any:
    return np.maximum(x, 0) - x * y + np.log(1 + np.exp(-np.abs(x)))


def _scalar_binary_cross_entropy(op: ops.BinaryCrossEntropy, p: Any, y: Any) -> Any:
    return -(y * np.maximum(np.log(p), -100.0) + (1 - y) * np.maximum(np.log(1 - p), -100.0))


def _scalar_softplus(op: ops.Softplus, x: Any) -> Any:
    z = x * op.beta
    return np.where(z > op.threshold, x, np.log(1 + np.exp(z)) / op.beta)


def _scalar_elu(op: ops.Elu, x: Any) -> Any:
    return np.where(x > 0, x, op.alpha * (np.exp(x) - 1))


#: Scalar-engine forwards for the ops whose own forward cannot run on arrays of ``Value``
#: (SciPy's erf, ``np.isfinite``, ``np.log1p``, ``conjugate`` inside ``ndarray.var``, a
#: Value exponent, ``sqrt``'s slope at 0, a 0-d value stored into an element):
#: ``op type -> function(op, *inputs)`` built from Value operations.
SCALAR_FORWARDS: dict[type[ops.Op], Callable[..., Any]] = {
    ops.Erf: lambda op, x: _elementwise(_erf_value, x),
    ops.Gelu: _scalar_gelu,
    ops.Pow: _scalar_pow,
    ops.Var: _scalar_var,
    ops.Std: _scalar_std,
    ops.Norm: _scalar_norm,
    ops.IndexAdd: _scalar_index_add,
    ops.Normalize: _scalar_normalize,
    ops.SetItem: lambda op, x, value: op.forward(x, _element(value)),
    ops.Log1p: lambda op, x: np.log(1 + x),
    ops.Expm1: lambda op, x: np.exp(x) - 1,
    ops.LogSumExp: _scalar_logsumexp,
    ops.Cast: lambda op, x: x,  # a cast changes precision, not values: the identity
    ops.BinaryCrossEntropyWithLogits: _scalar_bce,
    ops.BinaryCrossEntropy: _scalar_binary_cross_entropy,
    ops.Softplus: _scalar_softplus,
    ops.Elu: _scalar_elu,
}


def check_with_scalar_engine(
    fn: Callable[..., Tensor | Sequence[Tensor]],
    inputs: Tensor | Sequence[Any],
    *,
    params: Iterable[Tensor] | Mapping[str, Tensor] | Any = None,
    atol: float = 1e-9,
    rtol: float = 1e-7,
    seed: int = 0,
    max_elements: int = 20_000,
    scalar_forwards: Mapping[type[ops.Op], Callable[..., Any]] | None = None,
    raise_exception: bool = True,
) -> bool:
    """Compare every gradient of ``fn`` with the scalar engine's, element by element.

    ``fn`` runs once on float64 tensors; its recorded graph is then replayed op by op on
    NumPy object arrays of :class:`tensorgrad.scalar.Value`, through each op's own
    ``forward`` (``np.exp`` calls ``Value.exp``, ``np.matmul`` uses ``+`` and ``*``), so the
    scalar engine differentiates the very forward code whose hand-written VJP is checked.
    Ops whose forward cannot run on objects use :data:`SCALAR_FORWARDS`, or
    ``scalar_forwards={OpType: function(op, *inputs)}`` for your own. For small inputs only
    (at most ``max_elements`` checked elements): every scalar is a Python object.
    """
    forwards = {**SCALAR_FORWARDS, **(scalar_forwards or {})}
    problem = _Problem(fn, inputs, _named(params), "check_with_scalar_engine")
    total = sum(s.base.size for s in problem.slots)
    if total > max_elements:
        raise ValueError(
            f"check_with_scalar_engine: {total} checked elements, more than max_elements="
            f"{max_elements}; the scalar engine builds one Python object per operation"
        )
    with problem:
        outputs = problem.evaluate()
        weights = _weights(np.random.default_rng(seed), outputs)
        leaves = {id(s.tensor): _values_like(s.base) for s in problem.slots}
        scalar_outputs = _replay(outputs, leaves, forwards)
        try:
            grads = problem.gradients(outputs, weights)
        except GradcheckError as exc:
            return _fail(exc.report, raise_exception)
    from tensorgrad.scalar import Value

    loss = Value(0.0)
    for values, w in zip(scalar_outputs, weights, strict=True):
        for v, wv in zip(np.ravel(values), w.ravel(), strict=True):
            if isinstance(v, Value):
                loss = loss + v * float(wv)
    loss.backward()
    for slot, g in zip(problem.slots, grads, strict=True):
        reference = np.vectorize(lambda v: v.grad, otypes=[float])(leaves[id(slot.tensor)])
        reference = reference.reshape(slot.base.shape)
        if not np.all(_close(g, reference, atol, rtol)):
            summary = (
                f"the tensor engine's gradient differs from the scalar engine's "
                f"(atol={atol:g}, rtol={rtol:g})"
            )
            worst = _worst(np.asarray(g, dtype=np.float64), reference, atol, rtol, "scalar engine")
            report = GradcheckReport(
                "scalar engine", slot.name, slot.base.shape, summary, worst=worst
            )
            return _fail(report, raise_exception)
    return True


def _values_like(array: np.ndarray) -> np.ndarray:
    from tensorgrad.scalar import Value

    values = np.empty(array.size, dtype=object)
    values[:] = [Value(float(v)) for v in array.ravel()]
    return values.reshape(array.shape)


def _as_values(result: Any) -> np.ndarray:
    """An op's result as an object array of Values (numbers become constant Values)."""
    from tensorgrad.scalar import Value

    array = np.asarray(result, dtype=object)
    flat = array.ravel()
    if not all(isinstance(v, Value) for v in flat):
        fixed = np.empty(flat.size, dtype=object)
        fixed[:] = [v if isinstance(v, Value) else Value(float(v)) for v in flat]
        array = fixed.reshape(array.shape)
    return array


def _replay(
    outputs: Sequence[Tensor],
    leaves: dict[int, np.ndarray],
    forwards: Mapping[type[ops.Op], Callable[..., Any]],
) -> list[Any]:
    """Run the graph recorded behind ``outputs`` again, node by node, on object arrays of
    Values. Checked leaves take their Values; other leaves and constants their arrays."""
    values: dict[int, Any] = dict(leaves)
    order: list[Any] = []
    visited: set[int] = set()
    stack: list[tuple[Any, bool]] = [
        (o._node, False) for o in reversed(outputs) if o._node is not None
    ]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in visited:
            continue
        visited.add(id(node))
        stack.append((node, True))
        for parent in node.parents:
            is_node = parent is not None and type(parent) not in TENSOR_TYPES
            if is_node and id(parent) not in visited:
                stack.append((parent, False))
    for node in order:
        args = [
            raw if parent is None else values.get(id(parent), raw)
            for parent, raw in zip(node.parents, node.inputs, strict=True)
        ]
        forward = forwards.get(type(node.op))
        op = copy.copy(node.op)  # a forward may keep things in the op (saved): not the graph's
        try:
            result = forward(op, *args) if forward else op.forward(*args)
        except (TypeError, AttributeError) as exc:
            raise TypeError(
                f"check_with_scalar_engine: the forward of {node.name} cannot run on arrays of "
                f"scalar Values ({exc}); pass scalar_forwards={{{type(node.op).__name__}: "
                "function(op, *inputs)} built from Value operations"
            ) from exc
        values[id(node)] = _as_values(result)
    return [
        values[id(o._node)] if o._node is not None else values.get(id(o), o._data) for o in outputs
    ]
