"""The checks PyTorch's switches add to :func:`gradcheck`: a zero output gradient gives zero
gradients (``check_backward_ad``), undefined output gradients and tangents are zeros
(``check_undefined_grad``), and vmap-ed VJPs and JVPs equal loops of them
(``check_batched_grad``, ``check_batched_forward_grad``)."""

from __future__ import annotations

import numpy as np

from tensorgrad.autograd import forward_ad
from tensorgrad.autograd.check_problem import (
    GradcheckError,
    GradcheckReport,
    _output_labels,
    _Problem,
    _Slot,
    _worst,
)
from tensorgrad.autograd.gradients import grad
from tensorgrad.core import batching
from tensorgrad.core.functions import stack
from tensorgrad.core.tensor import Tensor


def _zero_grad_output_check(problem: _Problem) -> GradcheckReport | None:
    """A zero upstream gradient for every output must give exactly zero gradients (PyTorch
    runs this with every backward check): a backward that ignores its incoming gradient, or
    turns 0 · inf into NaN, fails here."""
    outputs = problem.evaluate()
    zeros = [np.zeros(o.shape) for o in outputs]
    return _nonzero_gradient(
        problem,
        problem.gradients(outputs, zeros),
        "zero grad_output",
        "backward not multiplied by grad_output: a zero gradient of every output gives a "
        "nonzero (or NaN) gradient for this input",
    )


def _nonzero_gradient(
    problem: _Problem, grads: list, check: str, message: str
) -> GradcheckReport | None:
    """The report for the first input whose gradient is not exactly zero (None: all are)."""
    for slot, g in zip(problem.slots, grads, strict=True):
        g = np.asarray(g, dtype=np.float64)
        if np.any(g != 0):
            return GradcheckReport(
                check,
                slot.name,
                slot.base.shape,
                message,
                worst=_worst(g, np.zeros_like(g), 0.0, 0.0, reference="expected"),
            )
    return None


def _undefined_grad_check(problem: _Problem) -> GradcheckReport | None:
    """PyTorch's undefined output grads: with several differentiable outputs, backward with
    no gradient for one of them (zeros for the others) must run and give zero gradients. A
    custom Function receives zeros for that output, or None after
    ``ctx.set_materialize_grads(False)``; either way it must not raise or give NaN."""
    outputs = [o for o in problem.evaluate() if o.requires_grad]
    if len(outputs) < 2:
        return None  # one output without a gradient: backward does not run at all
    for k in range(len(outputs)):
        kept = [o for j, o in enumerate(outputs) if j != k]
        label = _output_labels([o.shape for o in outputs])[k]
        try:
            grads = problem.gradients(kept, [np.zeros(o.shape) for o in kept], retain_graph=True)
        except GradcheckError:
            raise
        except Exception as exc:
            raise GradcheckError(
                GradcheckReport(
                    "undefined grad",
                    label,
                    outputs[k].shape,
                    "Expected backward function to handle undefined output grads: backward "
                    f"with no gradient for {label} (zeros for the others) raised "
                    f"{type(exc).__name__}: {exc}",
                )
            ) from exc
        report = _nonzero_gradient(
            problem,
            grads,
            "undefined grad",
            "Expected all input grads to be undefined or zero when all output grads are "
            f"undefined or zero: with no gradient for {label} and zeros for the other "
            "outputs, this input's gradient is nonzero (or NaN)",
        )
        if report is not None:
            return report
    return None


def _undefined_tangent_check(problem: _Problem, seed: int) -> GradcheckReport | None:
    """PyTorch's undefined tangents: an input without a tangent must give the outputs the
    tangents a zero tangent gives (the others carrying random ones); a ``jvp`` that fails on
    its None tangent fails here."""
    rng = np.random.default_rng(seed + 3)
    directions = [rng.standard_normal(s.base.shape) for s in problem.slots]
    for i, slot in enumerate(problem.slots):
        zero = [
            np.zeros(s.base.shape) if j == i else d
            for j, (s, d) in enumerate(zip(problem.slots, directions, strict=True))
        ]
        absent = [None if j == i else d for j, d in enumerate(directions)]
        expected = problem.jvps(zero)
        try:
            got = problem.jvps(absent)
        except NotImplementedError:
            raise
        except Exception as exc:
            raise GradcheckError(
                GradcheckReport(
                    "undefined tangent",
                    slot.name,
                    slot.base.shape,
                    f"forward mode with no tangent for {slot.name} (random ones for the other "
                    f"inputs) raised {type(exc).__name__}: {exc}",
                )
            ) from exc
        labels = _output_labels([e.shape for e in expected])
        for label, e, g in zip(labels, expected, got, strict=True):
            if not np.allclose(g, e, equal_nan=True):
                return GradcheckReport(
                    "undefined tangent",
                    slot.name,
                    slot.base.shape,
                    f"Mismatch in tangent values for {label} when {slot.name} has an undefined "
                    "tangent value: they differ from the tangents a zero tangent gives",
                    worst=_worst(g, e, 1e-8, 1e-5, reference="zero-tangent"),
                )
    return None


#: how many upstream gradients (or tangents) the batched checks stack, as PyTorch's
_BATCH = 2


def _input_slots(problem: _Problem) -> list[int]:
    return [k for k, s in enumerate(problem.slots) if s.position is not None and s.base.size]


def _batched_failure(kind: str, where: str, shape: tuple, exc: Exception) -> GradcheckError:
    what = "VJPs" if kind == "batched grad" else "JVPs"
    return GradcheckError(
        GradcheckReport(
            kind,
            where,
            shape,
            f"While computing batched gradients (vmap of the {what}), got "
            f"{type(exc).__name__}: {exc}; the vmap of this function does not batch right",
        )
    )


def _batched_mismatch(
    kind: str, output: str, slot: _Slot, result: np.ndarray, expected: np.ndarray
) -> GradcheckReport | None:
    if np.allclose(result, expected, equal_nan=True):  # PyTorch's torch.allclose defaults
        return None
    what = (
        "VJPs over a batch of output gradients"
        if kind == "batched grad"
        else ("JVPs over a batch of tangents")
    )
    return GradcheckReport(
        kind,
        slot.name,
        slot.base.shape,
        f"For {output} and {slot.name}: vmap of the {what} differs from a loop of them "
        f"(max abs difference {float(np.nanmax(np.abs(result - expected))):.3g}); the worst "
        "entries are [sample, *index]",
        worst=_worst(result, expected, 1e-8, 1e-5, reference="loop"),
    )


def _batched_grad_check(problem: _Problem, seed: int) -> GradcheckReport | None:
    """PyTorch's ``check_batched_grad``: for each output, the VJPs of a stack of random
    upstream gradients at once (``grad(..., is_grads_batched=True)``, vmap of the sweep)
    equal the VJPs taken one by one."""
    slots = _input_slots(problem)
    if not slots:
        return None
    rng = np.random.default_rng(seed + 4)
    outputs = problem.evaluate()
    inputs = [problem.slots[s].tensor for s in slots]
    labels = _output_labels([o.shape for o in outputs])
    for k, out in enumerate(outputs):
        if not out.requires_grad or out.dtype.kind != "f":
            continue
        cotangents = [
            Tensor(rng.standard_normal(out.shape).astype(out.dtype)) for _ in range(_BATCH)
        ]
        expected = [_vjps(out, inputs, v, batched=False) for v in cotangents]
        try:
            result = _vjps(out, inputs, stack(cotangents), batched=True)
        except (RuntimeError, ValueError, TypeError) as exc:
            raise _batched_failure("batched grad", labels[k], out.shape, exc) from exc
        for j, s in enumerate(slots):
            loop = np.stack([e[j] for e in expected])
            report = _batched_mismatch("batched grad", labels[k], problem.slots[s], result[j], loop)
            if report is not None:
                return report
    return None


def _vjps(out: Tensor, inputs: list, cotangent: Tensor, batched: bool) -> list[np.ndarray]:
    """The VJPs of ``cotangent`` (a stack of them, when ``batched``), zeros for an input
    ``out`` does not depend on, in float64."""
    grads = grad(out, inputs, cotangent, retain_graph=True, allow_unused=True,
                 is_grads_batched=batched)  # fmt: skip
    lead = tuple(cotangent.shape[:1]) if batched else ()
    return [
        np.zeros(lead + tuple(x.shape)) if g is None else np.asarray(g._data, dtype=np.float64)
        for g, x in zip(grads, inputs, strict=True)
    ]


def _batched_forward_grad_check(problem: _Problem, seed: int) -> GradcheckReport | None:
    """PyTorch's ``check_batched_forward_grad``: for each input, ``vmap`` of the JVP over a
    stack of random tangents equals the JVPs taken one by one."""
    rng = np.random.default_rng(seed + 5)
    for s in _input_slots(problem):
        slot = problem.slots[s]

        def jvp_of(tangent: Tensor, s: int = s, slot: _Slot = slot) -> list[Tensor]:
            with forward_ad.dual_level():
                outputs = problem.evaluate({s: forward_ad.make_dual(slot.tensor, tangent)})
                slopes = [forward_ad.unpack_dual(o).tangent for o in outputs]
                return [  # (the tangent of a batched output holds the batch's array)
                    batching.like(o, Tensor(np.zeros_like(o._data)) if t is None else t)
                    for o, t in zip(outputs, slopes, strict=True)
                ]

        tangents = [Tensor(rng.standard_normal(slot.base.shape)) for _ in range(_BATCH)]
        expected = [jvp_of(t) for t in tangents]
        labels = _output_labels([e.shape for e in expected[0]])
        try:
            result = batching.run_batched(jvp_of, [stack(tangents)], [0], _BATCH)
        except (RuntimeError, ValueError, TypeError) as exc:
            if isinstance(exc, NotImplementedError):
                raise
            raise _batched_failure("batched forward grad", slot.name, slot.base.shape, exc) from exc
        for k, label in enumerate(labels):
            loop = np.stack([np.asarray(e[k]._data, dtype=np.float64) for e in expected])
            report = _batched_mismatch(
                "batched forward grad",
                label,
                slot,
                np.asarray(result[k]._data, dtype=np.float64),
                loop,
            )
            if report is not None:
                return report
    return None
