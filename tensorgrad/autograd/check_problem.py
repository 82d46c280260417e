"""What every gradient check shares: the checked tensors as a problem (``_Problem``: float64
working copies, evaluation, gradients, forward-mode tangents), what a failed check
reports (:class:`GradcheckReport`, :class:`GradcheckError`) and the comparisons. The
finite-difference checks (``finite_differences``), the checks PyTorch's switches add
(``switch_checks``) and the scalar engine's (``scalar_oracle``) build on it."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tensorgrad.autograd import forward_ad
from tensorgrad.autograd.gradients import grad as _grad
from tensorgrad.core import forward
from tensorgrad.core.tensor import Tensor
from tensorgrad.grad_mode import enable_grad

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


class GradcheckError(RuntimeError):
    """A gradient check failed; ``report`` says which check, where and by how much (a
    ``RuntimeError``, as PyTorch's ``torch.autograd.gradcheck.GradcheckError``)."""

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
    position: int | None = None  #: its place among ``fn``'s arguments (None: a parameter)


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
                work = _working_copy(value._data)
                tensor = Tensor(work, requires_grad=True)
                self.slots.append(_Slot(f"input {i}", tensor, work.copy(), work, i))
                self.args.append(tensor)
            else:
                self.args.append(value)
        #: whether a gradient's dtype must be its input's (``check_grad_dtypes``); its shape
        #: always must
        self.check_grad_dtypes = True
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

    def evaluate(self, replaced: Mapping[int, Tensor] | None = None) -> list[Tensor]:
        """``fn``'s outputs as a list; ``replaced`` puts other tensors in place of some
        checked inputs (by slot number), as the batched checks' transforms need."""
        args = list(self.args)
        for k, tensor in (replaced or {}).items():
            args[self.slots[k].position] = tensor
        with enable_grad():
            result = self.fn(*args)
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

    def jvps(self, directions: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        """The outputs' tangents (float64) when each checked tensor carries its direction as
        its tangent: forward mode's ``J·δ``, output by output (zeros for an output the
        tangents do not reach)."""
        with forward_ad.dual_level():
            for slot, d in zip(self.slots, directions, strict=True):
                if d is not None:
                    forward.set_tangent(slot.tensor, np.asarray(d, dtype=slot.work.dtype))
            outputs = self.evaluate()
            return [
                np.zeros(o.shape)
                if o._tangent is None
                else np.array(o._tangent, dtype=np.float64).reshape(o.shape)
                for o in outputs
            ]

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
            if g.shape != slot.base.shape:
                raise GradcheckError(
                    GradcheckReport(
                        "gradient shape",
                        slot.name,
                        slot.base.shape,
                        f"Analytical gradient has incorrect size: shape {g.shape}, expected "
                        f"{slot.base.shape}",
                    )
                )
            if self.check_grad_dtypes and g.dtype != slot.work.dtype:
                raise GradcheckError(
                    GradcheckReport(
                        "gradient dtype",
                        slot.name,
                        slot.base.shape,
                        f"Gradient has dtype mismatch: {g.dtype}, expected {slot.work.dtype}",
                    )
                )
            result.append(g._data)
        return result


def _working_copy(array: np.ndarray) -> np.ndarray:
    """A float64 copy of an input; a non-contiguous input gets a non-contiguous copy (a
    strided view of a larger buffer), so that ``fn`` sees the layout it was given."""
    if array.ndim == 0 or array.size == 0 or array.flags.c_contiguous:
        return array.astype(np.float64, copy=True)
    return _noncontiguous(array.astype(np.float64))


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


def _noncontiguous(array: np.ndarray) -> np.ndarray:
    """``array``'s values in a non-contiguous array (every other element of a buffer)."""
    if array.ndim == 0 or array.size == 0:
        return array
    view = np.empty((*array.shape, 2))[..., 0]
    view[...] = array
    return view


def _output_labels(shapes: Sequence[tuple[int, ...]]) -> list[str]:
    return [f"output {k}" if len(shapes) > 1 else "the output" for k in range(len(shapes))]
