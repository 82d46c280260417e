"""Custom differentiable operations, written the PyTorch way.

    class Square(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 2 * x

    y = Square.apply(x)

``forward`` runs on tensors with recording off; ``backward`` gets one gradient per output and
returns one per input of ``forward`` (None where there is none). Written with tensor
operations, ``backward`` is itself differentiable (``create_graph=True``). Inside, each call
is one node of the graph, like a built-in op (see ``tensorgrad.ops``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from tensorgrad import ops
from tensorgrad.core import engine, forward
from tensorgrad.core.engine import GradientPack, wrap
from tensorgrad.grad_mode import no_grad
from tensorgrad.grad_mode import state as grad_state


class FunctionCtx:
    """What ``forward`` hands to ``backward``: saved tensors, and which inputs need grads."""

    def __init__(self, needs_input_grad: tuple[bool, ...]) -> None:
        self.needs_input_grad = needs_input_grad
        self.materialize_grads = True
        self._saved: tuple[Any, ...] = ()
        self._versions: tuple[int, ...] = ()
        self._non_differentiable: set[int] = set()

    def save_for_backward(self, *tensors: Any) -> None:
        """Keep tensors for ``backward`` (``ctx.saved_tensors``); changing one of them in place
        before backward makes ``saved_tensors`` raise, as in PyTorch."""
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, engine.Tensor):
                raise TypeError(
                    f"save_for_backward: argument {i} is a {type(t).__name__}, not a Tensor "
                    "(keep other values as attributes of ctx)"
                )
        self._saved = tensors
        self._versions = tuple(0 if t is None else t._versions.tick for t in tensors)

    @property
    def saved_tensors(self) -> tuple[Any, ...]:
        for i, (t, version) in enumerate(zip(self._saved, self._versions)):
            if t is not None and t._versions.tick != version:
                raise RuntimeError(
                    f"saved_tensors: saved tensor {i} (shape {t.shape}) was modified in place "
                    "after save_for_backward; its gradient would be wrong"
                )
        return self._saved

    def save_for_forward(self, *tensors: Any) -> None:
        """Keep tensors for ``jvp`` (forward mode), read back as ``ctx.saved_tensors``."""
        self.save_for_backward(*tensors)

    def mark_non_differentiable(self, *outputs: Any) -> None:
        """Outputs that carry no gradient (indices, masks): they will not require grad."""
        self._non_differentiable.update(id(o) for o in outputs)

    def set_materialize_grads(self, value: bool) -> None:
        """Whether ``backward`` gets zeros (True, the default) or None for outputs that
        received no gradient."""
        self.materialize_grads = bool(value)


class Function:
    """Base class of custom ops: subclass it with static ``forward(ctx, *args)`` and
    ``backward(ctx, *grad_outputs)``, and call ``YourFunction.apply(*args)``."""

    @staticmethod
    def forward(ctx: FunctionCtx, *args: Any) -> Any:
        raise NotImplementedError("a Function subclass must define forward(ctx, ...)")

    @staticmethod
    def backward(ctx: FunctionCtx, *grad_outputs: Any) -> Any:
        raise NotImplementedError("a Function subclass must define backward(ctx, ...)")

    #: forward mode's rule, ``jvp(ctx, *input_tangents)`` (None for an input without one),
    #: returning the outputs' tangents; a subclass that has none cannot be used with forward
    #: mode
    jvp: Any = None

    @classmethod
    @engine.reads_values  # inside vmap: once per sample (its forward and backward are the user's)
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        """Run ``forward`` and, when a gradient will be needed, record it as one node."""
        if kwargs:
            raise TypeError(f"{cls.__name__}.apply takes positional arguments only")
        needs = tuple(isinstance(a, engine.Tensor) and a.requires_grad for a in args)
        ctx = FunctionCtx(needs)
        tangents = forward.tangents_of(args) if forward.state.level else None
        if tangents is not None and cls.jvp is None:
            raise NotImplementedError(
                f"{cls.__name__}: You must implement the jvp function for custom "
                "autograd.Function to use it with forward mode AD (an input carries a "
                "forward-mode tangent, but this custom Function does not define "
                "jvp(ctx, *tangents): define it, and ctx.save_for_forward what it needs)"
            )
        with no_grad(), forward.suspended():
            result = cls.forward(ctx, *args)
        single = not isinstance(result, tuple)
        outputs = [_fresh(o) for o in ((result,) if single else result)]
        if tangents is not None:
            _forward_tangents(cls, ctx, tangents, outputs)
        wanted = [
            i
            for i, o in enumerate(outputs)
            if isinstance(o, engine.Tensor)
            and o.dtype.kind == "f"
            and id(((result,) if single else result)[i]) not in ctx._non_differentiable
        ]
        if grad_state.enabled and any(needs) and wanted:
            _record(cls, ctx, args, outputs, wanted, single)
        return outputs[0] if single else tuple(outputs)


def _forward_tangents(cls: type[Function], ctx: FunctionCtx, tangents: list, outputs: list) -> None:
    """Give the outputs the tangents the Function's own ``jvp`` computes from the inputs'."""
    # where reverse mode may differentiate the tangents, a tensor that requires grad turned
    # into an array inside jvp would lose its derivative: refused, naming the Function
    guard = cls.__name__ if grad_state.enabled else ""
    previous, forward.state.recorded_rule = forward.state.recorded_rule, guard
    try:
        with forward.suspended():
            result = cls.jvp(
                ctx, *(t if t is None or forward.is_recorded(t) else wrap(t) for t in tangents)
            )
    finally:
        forward.state.recorded_rule = previous
    result = result if isinstance(result, tuple) else (result,)
    if len(result) != len(outputs):
        raise RuntimeError(
            f"{cls.__name__}.jvp returned {len(result)} tangents for {len(outputs)} outputs"
        )
    for out, tangent in zip(outputs, result):
        if tangent is None or not isinstance(out, engine.Tensor):
            continue
        array = tangent._data if isinstance(tangent, engine.Tensor) else np.asarray(tangent)
        if array.shape != out.shape:
            raise RuntimeError(
                f"{cls.__name__}.jvp returned a tangent of shape {array.shape} for an output of "
                f"shape {out.shape}"
            )
        if forward.is_recorded(tangent) and grad_state.enabled:  # reverse mode may differentiate it
            forward.set_tangent(
                out, tangent if tangent.dtype == out.dtype else tangent.to(out.dtype)
            )
            continue
        forward.set_tangent(out, array.astype(out.dtype, copy=False))


def _fresh(value: Any) -> Any:
    """An output as a new tensor object (forward may return one of its inputs)."""
    if isinstance(value, engine.Tensor):
        t = wrap(value._data)
        t._versions = value._versions
        return t
    return value


def _record(
    cls: type[Function],
    ctx: FunctionCtx,
    args: tuple,
    outputs: list,
    wanted: list[int],
    single: bool,
) -> None:
    arrays = [a._data if isinstance(a, engine.Tensor) else a for a in args]
    needs = list(ctx.needs_input_grad)
    shapes = [
        (np.shape(o._data), o.dtype) if isinstance(o, engine.Tensor) else None for o in outputs
    ]
    op = _FunctionCall(cls, ctx, shapes)
    if single:
        engine.record(op, outputs[0], args, arrays, needs)
        return
    # several outputs: one node for the call, and a small node per output that packs its
    # gradient for it (the call's node is older, so the sweep reaches it after all of them)
    hub = wrap(np.empty((), dtype=object))
    engine.record(op, hub, args, arrays, needs)
    for i in wanted:
        engine.record(_Select(i), outputs[i], (hub,), [hub._data], [True])


class _FunctionCall(ops.Op):
    """A call of a custom Function, as the op of its node in the graph."""

    uses_inputs = False

    def __init__(self, function: type[Function], ctx: FunctionCtx, shapes: list) -> None:
        self.function, self.ctx, self.shapes = function, ctx, shapes
        self.name = f"{function.__name__}Backward"

    def forward(self, *inputs: Any) -> Any:
        raise TypeError(
            f"{self.function.__name__} is a custom Function: its forward runs on tensors only"
        )

    def backward(self, grad: Any, out: Any, *inputs: Any) -> tuple:
        if isinstance(grad, GradientPack):
            given = [grad.grads.get(i) for i in range(len(self.shapes))]
        else:
            given = [grad]
        recording = any(isinstance(g, engine.Tensor) for g in given)  # create_graph
        grads = []
        for g, shape in zip(given, self.shapes):
            if g is None and self.ctx.materialize_grads and shape is not None:
                g = np.zeros(*shape)
            grads.append(g if g is None or isinstance(g, engine.Tensor) else wrap(g))
        result = self.function.backward(self.ctx, *grads)
        result = result if isinstance(result, tuple) else (result,)
        n = len(self.needs_input_grad)
        if len(result) != n:
            raise RuntimeError(
                f"{self.name}: backward returned {len(result)} gradients for {n} inputs of "
                "forward (return None for inputs without one)"
            )
        return tuple(
            None if g is None or not needed
            else g if recording
            else (g._data if isinstance(g, engine.Tensor) else np.asarray(g))
            for g, needed in zip(result, self.needs_input_grad)
        )  # fmt: skip


class _Select(ops.Op):
    """Output ``index`` of a custom Function with several outputs: hands its gradient to the
    call's node, packed with the others'."""

    name = "select_output"
    uses_inputs = False

    def __init__(self, index: int) -> None:
        self.index = index

    def forward(self, hub: Any) -> Any:
        raise TypeError("a custom Function's output cannot be computed again")

    def backward(self, grad: Any, out: Any, hub: Any) -> tuple:
        return (GradientPack({self.index: grad}),)


def once_differentiable(backward: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a ``backward`` that is not itself differentiable: it runs without recording."""

    @functools.wraps(backward)
    def wrapper(ctx: Any, *grads: Any) -> Any:
        with no_grad():
            return backward(ctx, *grads)

    return wrapper
