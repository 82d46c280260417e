"""Forward-mode AD with PyTorch's API (``torch.autograd.forward_ad``).

    import tensorgrad.autograd.forward_ad as fwAD

    with fwAD.dual_level():
        x = fwAD.make_dual(primal, tangent)      # a value and its direction, together
        y = f(x)                                 # every op pushes the tangent on (its JVP)
        value, jvp = fwAD.unpack_dual(y)         # f(primal) and J·tangent

One forward pass gives the directional derivative of every output along ``tangent``: the
right tool when a function has few inputs and many outputs (reverse mode is the right one
for few outputs, a loss). How it works is in ``tensorgrad.core.forward``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from tensorgrad import array_backend, grad_mode, ops
from tensorgrad.core import batching, engine, forward
from tensorgrad.core.engine import wrap
from tensorgrad.core.tensor import Tensor


class UnpackedDualTensor(NamedTuple):
    """What :func:`unpack_dual` returns: the primal and the tangent (None if it has none)."""

    primal: Any
    tangent: Any


def enter_dual_level() -> int:
    """Open a dual level (forward mode's scope) and return its index."""
    return forward.enter_dual_level()


def exit_dual_level(*, level: int | None = None) -> None:
    """Close the dual level: tangents made inside it are dropped."""
    forward.exit_dual_level(level=level)


class dual_level:
    """The scope of forward mode, as a context manager: tangents exist inside it only."""

    def __enter__(self) -> int:
        self.level = enter_dual_level()
        return self.level

    def __exit__(self, *exc: object) -> None:
        exit_dual_level(level=self.level)


def _check_level(level: int | None, what: str) -> None:
    if not forward.state.level:
        raise RuntimeError(
            f"Trying to {what} for forward AD but no level exists, make sure to "
            "enter_dual_level() first."
        )
    if level is not None and level != forward.state.level - 1:
        raise RuntimeError(f"{what}: dual level {level} is not the open one")


def _alias(tensor: Tensor) -> Tensor:
    """A new tensor viewing ``tensor``'s memory, in its graph (reverse mode sees through it),
    without its tangent."""
    with forward.suspended():
        return engine.apply(ops.Reshape(tensor.shape), tensor)


def make_dual(tensor: Tensor, tangent: Any, *, level: int | None = None) -> Tensor:
    """A view of ``tensor`` that carries ``tangent`` (same shape, floating point): the
    direction whose derivative forward mode computes. Reverse mode sees through the view."""
    _check_level(level, "create a dual Tensor")
    if not isinstance(tensor, Tensor):
        raise TypeError(f"make_dual: expected a Tensor as primal, got {type(tensor).__name__}")
    levels = batching.levels_of(tensor) + batching.levels_of(tangent)
    if levels:
        return _batched_dual(tensor, tangent, tuple(sorted(set(levels))))
    t = tangent._data if isinstance(tangent, Tensor) else array_backend.as_array(tangent)
    if tensor.dtype.kind not in "fc":
        raise ValueError(
            f"make_dual: expected primal to be floating point or complex, but got {tensor.dtype}"
        )
    if t.dtype.kind not in "fc":
        raise ValueError(
            f"make_dual: expected tangent to be floating point or complex, but got {t.dtype}"
        )
    if t.shape != tensor.shape:
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than that of the "
            f"original Tensor, this is not supported. Tensor is of size {list(tensor.shape)} "
            f"while the given forward gradient is of size {list(t.shape)}."
        )
    dual = _alias(tensor)
    if forward.is_recorded(tangent) and grad_mode.is_grad_enabled():
        # a tangent in a graph stays there: reverse mode differentiates through it
        tangent = tangent if tangent.dtype == tensor.dtype else tangent.to(tensor.dtype)
    else:
        tangent = t if t.dtype == tensor.dtype else t.astype(tensor.dtype)
        tangent = forward.laid_out_like(tangent, dual._data)
    forward.set_tangent(dual, tangent)
    if dual._node is not None:  # in a graph too: its node keeps the tangent for the VJPs
        forward.keep_on_node(dual._node, tangent)
    return dual


def _batched_dual(tensor: Tensor, tangent: Any, levels: tuple[int, ...]) -> Tensor:
    """``make_dual`` inside vmap: the primal and the tangent laid out over the same levels
    first (a tangent per sample for a shared primal: jacfwd's basis, batched)."""
    tangent = tangent if isinstance(tangent, Tensor) else wrap(array_backend.as_array(tangent))
    primal, direction = (batching.lift(x, levels, expand=True) for x in (tensor, tangent))
    if primal is tensor and primal._requires_grad:  # a view in its graph: a plain copy of the
        with batching.physical():  # object would be another leaf, and get the gradient instead
            primal = engine.apply(ops.Reshape(primal._data.shape), primal)
    dual = batching.batched(make_dual(batching.plain(primal), batching.plain(direction)), levels)
    forward.set_tangent(dual, dual._tangent)
    return dual


def unpack_dual(tensor: Any, *, level: int | None = None) -> UnpackedDualTensor:
    """``(primal, tangent)`` of a tensor: the value as a view without the tangent, and the
    tangent as a tensor (None when it has none, or outside a dual level)."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"unpack_dual: expected a Tensor, got {type(tensor).__name__}")
    if tensor._tangent is None or not forward.state.level:
        return UnpackedDualTensor(tensor, None)
    if level is not None:
        _check_level(level, "unpack a dual Tensor")
    primal = _alias(tensor)
    tangent = tensor._tangent
    if forward.is_recorded(tangent):  # in a graph: a view of it, in that graph
        return UnpackedDualTensor(primal, _alias(tangent))
    if not tangent.flags.writeable:  # a broadcast view: the tensor handed out owns its memory
        tangent = np.array(tangent)
    return UnpackedDualTensor(primal, wrap(tangent))
