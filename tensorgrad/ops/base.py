"""What every op shares: the ``Op`` base class, gradient un-broadcasting and axis checks.

An op is a small class with ``forward`` and ``backward`` side by side. ``forward`` takes raw
arrays (and Python numbers) and returns an array. ``backward(grad, out, *inputs)`` returns the
vector-Jacobian product for each input, or ``None`` where ``needs_input_grad`` says no one
asked. It is written with operators, methods and NumPy functions that arrays and Tensors both
understand, so the same formula runs on arrays normally (fast) and on Tensors when the engine
records the backward pass itself (``create_graph=True``, for higher-order gradients).

Ops never import the Tensor, and know nothing of the graph. The engine
(``tensorgrad.core.engine``) records each call of an op that a gradient will need as a
*node* (``tensorgrad.core.node``): the op, where its inputs came from, their arrays and the
output's. An op instance is one call's: ``needs_input_grad`` is set by the engine when it
records the call, and everything backward needs beyond the inputs and the output goes into
``saved``, the one channel the engine frees after backward. What backward reads is the op's
own declaration (``uses_inputs``, ``uses_output``, ``reads_input``, ``reads_output``): the
engine refuses a backward whose read values were changed in place, and only those.
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from tensorgrad.array_backend import ShapeError


class Op(ABC):
    """One differentiable primitive: forward on arrays, backward as a VJP."""

    #: short name used in error messages and in ``grad_fn``; defaults to the class name
    name: ClassVar[str] = ""
    #: whether backward reads the inputs' (or the output's) values: an in-place change to a
    #: tensor whose values backward reads is an error; to one it does not read, harmless.
    #: ``reads_input``/``reads_output`` refine this per input, for ops that read less.
    uses_inputs: ClassVar[bool] = True
    uses_output: ClassVar[bool] = False
    #: set by the engine just before ``backward``: True when ``grad`` is a fresh array that
    #: nothing else refers to, so backward may overwrite it instead of allocating a new one,
    #: as a hand-written step does (``d *= mask``)
    grad_is_free: bool = False

    #: what forward keeps for backward besides the inputs (the engine drops it, with the
    #: inputs, once backward has run without ``retain_graph``)
    saved: Any = None
    #: for each input, whether a gradient is wanted for it (set by the engine when it
    #: records the call)
    needs_input_grad: list[bool]

    #: the dtype policy for the first input, which the engine enforces before forward
    #: (``core/dtype_policy.py``): "float" (integers and bools computed in the default
    #: float), "floating" (refused: a float-only kernel), "no_bool" (bools refused); empty:
    #: forward takes what it is given
    dtypes: ClassVar[str] = ""

    #: the forward-mode rule, ``jvp(tangents, out, *inputs)``: the output's tangent
    #: (``J · ṫ``) from one tangent per input (None for an input without one), on arrays.
    #: None when the op has none; then ``no_jvp`` says why, and forward mode refuses it.
    jvp: Any = None
    no_jvp: ClassVar[str] = ""

    #: an op of one input whose VJP adds into part of it (indexing) defines ``add_into``
    #: and sets this: the sweep then lets it add into the input's gradient so far in place
    adds_into_input: ClassVar[bool] = False

    #: the op's batching rule for vmap, by name (``tensorgrad.core.batching.RULES``): how
    #: the op made for one sample's shapes runs on a batch's arrays ("elementwise",
    #: "reduction", ...). Empty: vmap runs the op once per sample (correct, slower).
    batching: ClassVar[str] = ""
    #: for the "fold_batch" rule: the rank of the op's first input, whose first axis the
    #: batch axes join (4 for a convolution's (N, C, H, W))
    batching_rank: ClassVar[int] = 0

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.__dict__.get("name"):
            cls.name = cls.__name__.lower()

    @abstractmethod
    def forward(self, *inputs: Any) -> Any:
        """Compute the output array from the input arrays."""

    @abstractmethod
    def backward(self, grad: Any, out: Any, *inputs: Any) -> tuple:
        """Return one gradient per input (``None`` where not needed), each of its input's shape."""

    def forward_inplace(self, target: Any, *inputs: Any) -> None:
        """Write ``forward(target, *inputs)`` into ``target`` (the in-place form, ``x.add_(y)``).
        Ops that can compute straight into ``target`` override this to skip the temporary."""
        np.copyto(target, self.forward(target, *inputs), casting="same_kind")

    def reads_input(self, i: int, needs: list[bool]) -> bool:
        """Whether backward reads the value of input ``i``, given which inputs need a
        gradient (``needs``): what PyTorch would save. Ops that read an input only for
        another input's gradient (``x * y`` reads ``y`` for ``x``'s) say so here."""
        return self.uses_inputs

    def reads_output(self, needs: list[bool]) -> bool:
        """Whether backward reads the output's value, given ``needs``."""
        return self.uses_output

    def scalar_forward(self, *inputs: Any) -> Any:
        """The forward on NumPy object arrays of scalar values: the reference the scalar-engine
        oracle differentiates (``tensorgrad.autograd.scalar_oracle``). By default ``forward``
        itself, which NumPy runs element by element through the values' own arithmetic; an op
        whose forward cannot (SciPy, ``np.log1p``) overrides this beside its forward, with
        the values' operators and methods only (``ops.object_arrays``)."""
        return self.forward(*inputs)

    def __repr__(self) -> str:
        return f"<{type(self).__name__}Backward>"


def call(op_type: type[Op], *inputs: Any, **params: Any) -> Any:
    """Run an op inside a VJP: on arrays directly, or recorded when an input is a Tensor.

    VJPs use this for the few functions arrays and Tensors do not share as methods (scatter,
    for instance). Tensors announce themselves by their ``_apply_op`` hook.
    """
    return _run(op_type(**params), inputs)


def replay(op: Op, *inputs: Any) -> Any:
    """Run a fresh copy of ``op`` (same settings, nothing saved) on other inputs, like
    :func:`call`: how a view's recorded ops are applied again to a gradient or to a base."""
    fresh = copy.copy(op)
    fresh.saved = None
    return _run(fresh, inputs)


def _run(op: Op, inputs: Sequence[Any]) -> Any:
    for value in inputs:
        apply = getattr(value, "_apply_op", None)
        if apply is not None:
            return apply(op, *inputs)
    return op.forward(*inputs)


def add_tangents(*terms: Any) -> Any:
    """The sum of the tangent terms that exist (None stands for a zero tangent), or None
    when none does: how a JVP adds up its inputs' contributions."""
    total = None
    for term in terms:
        if term is not None:
            total = term if total is None else total + term
    return total


def linear_jvp(op: Op, tangents: Sequence[Any], out: Any, *inputs: Any) -> Any:
    """The JVP of an op that is linear in all its inputs (a reshape, a sum, a slice, a
    concatenation), as ``jvp = linear_jvp`` in its class: the op itself applied to the
    tangents, zeros standing for missing ones."""
    if all(t is None for t in tangents):
        return None
    return replay(
        op,
        *(_zeros_like(x) if t is None else t for t, x in zip(tangents, inputs, strict=True)),
    )


def _zeros_like(x: Any) -> Any:
    """Zeros for a missing tangent (of an array, a Tensor or a number)."""
    if not hasattr(x, "dtype"):
        return np.zeros_like(x)
    return np.zeros(x.shape, x.dtype)


def constant(x: Any) -> np.ndarray:
    """``x``'s values as an array to pick elements by (masks, counts, positions), never to
    compute a derivative with: on a Tensor that a rule runs on when it is recorded, its
    detached values (so no derivative is silently lost through them)."""
    detach = getattr(x, "detach", None)
    return np.asarray(x if detach is None else detach())


def shape_of(x: Any) -> tuple[int, ...]:
    """The shape of an array, a Tensor or a Python number (``()``), without NumPy's dispatch."""
    return getattr(x, "shape", ())


def sum_to(grad: Any, shape: tuple[int, ...]) -> Any:
    """Sum ``grad`` down to ``shape``: the VJP of broadcasting ``shape`` to ``grad.shape``.

    Leading axes that broadcasting added are summed away; axes where the input had size 1
    are summed with ``keepdims``. The one helper every broadcasting op uses.
    """
    if grad.shape == shape:
        return grad
    lead = grad.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, size in enumerate(shape) if size == 1 and grad.shape[lead + i] != 1
    )
    if axes:
        grad = grad.sum(axis=axes, keepdims=True)
    if lead:
        grad = grad.reshape(shape)
    return grad


def normalize_axes(axis: Any, ndim: int, op: str) -> tuple[int, ...]:
    """``axis`` (None, an int or a sequence of ints) as a sorted tuple of non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    if type(axis) is int and -ndim <= axis < ndim:  # the common case, without the checks
        return (axis % ndim,)
    if isinstance(axis, (int, np.integer)):
        axes = (axis,)
    elif type(axis) is tuple:
        axes = axis
    elif isinstance(axis, Sequence) and not isinstance(axis, str):
        axes = tuple(axis)
    else:
        raise TypeError(f"{op}: axis must be an int or a tuple of ints, got {axis!r}")
    result = []
    for a in axes:
        if not isinstance(a, (int, np.integer)) or isinstance(a, bool):
            raise TypeError(f"{op}: axis must be an int or a tuple of ints, got {axis!r}")
        if not -ndim <= a < ndim:
            raise IndexError(
                f"{op}: axis {a} is out of range for a tensor of {ndim} dimension"
                f"{'' if ndim == 1 else 's'}"
            )
        result.append(int(a) % ndim)
    if len(set(result)) != len(result):
        raise ShapeError(f"{op}: repeated axis in {axis!r}")  # PyTorch's RuntimeError
    return tuple(sorted(result))


def reduction_axes(axis: Any, ndim: int, op: str) -> tuple[int, ...]:
    """As :func:`normalize_axes`, where a 0-d tensor takes axis 0 or -1 as PyTorch's (one
    element, nothing to reduce: the result is ``()``)."""
    if ndim:
        return normalize_axes(axis, ndim, op)
    try:
        normalize_axes(axis, 1, op)
    except IndexError:
        normalize_axes(axis, 0, op)  # the error, naming the tensor's 0 dimensions
        raise
    return ()


def normalize_axis(axis: int, ndim: int, op: str) -> int:
    """A single axis as a non-negative int, with a clear error when out of range."""
    if isinstance(axis, Sequence) or axis is None:
        raise TypeError(f"{op}: axis must be an int, got {axis!r}")
    return normalize_axes(axis, ndim, op)[0]


def expand_reduced(grad: Any, shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool):
    """Re-insert the reduced ``axes`` (as size 1) into ``grad`` so it broadcasts to ``shape``."""
    if not keepdims and axes:
        kept = tuple(1 if i in axes else n for i, n in enumerate(shape))
        grad = grad.reshape(kept)
    return grad
