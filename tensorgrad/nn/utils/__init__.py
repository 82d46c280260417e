"""Gradient clipping, flattening parameters into one vector, and ``rnn``: variable-length
sequences for the recurrent layers (``PackedSequence`` and its packing functions)."""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from tensorgrad.core.engine import wrap as _wrap
from tensorgrad.core.tensor import Tensor
from tensorgrad.grad_mode import no_grad


def _as_list(parameters: Tensor | Iterable[Tensor]) -> list[Tensor]:
    return [parameters] if isinstance(parameters, Tensor) else list(parameters)


def clip_grad_norm_(
    parameters: Tensor | Iterable[Tensor],
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
) -> Tensor:
    """Scale the gradients in place so that their joint norm is at most ``max_norm``.

    The norm is taken over all gradients together, as if concatenated into one vector; when it
    exceeds ``max_norm`` every gradient is multiplied by ``max_norm / (norm + 1e-6)``, as in
    PyTorch. Returns the norm before clipping (a 0-d Tensor).
    """
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    norm_type = float(norm_type)
    if not grads:
        return _wrap(np.zeros((), dtype=np.float32))
    dtype = grads[0].dtype
    if norm_type == math.inf:
        norms = [np.max(np.abs(g._data)) if g.size else 0.0 for g in grads]
        total = float(max(norms))
    else:
        norms = [np.linalg.norm(g._data.ravel(), norm_type) for g in grads]
        total = float(np.linalg.norm(np.asarray(norms, dtype=dtype), norm_type))
    if error_if_nonfinite and not math.isfinite(total):
        raise RuntimeError(
            f"clip_grad_norm_: the total norm of order {norm_type} of the gradients is "
            f"{total}; set error_if_nonfinite=False to clip anyway"
        )
    coefficient = max_norm / (total + 1e-6)
    if coefficient < 1.0:
        with no_grad():
            for g in grads:
                g.mul_(coefficient)
    return _wrap(np.asarray(total, dtype=dtype))


def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float) -> None:
    """Clamp every gradient element into [−clip_value, clip_value], in place."""
    clip_value = float(clip_value)
    with no_grad():
        for p in _as_list(parameters):
            if p.grad is not None:
                p.grad.clamp_(-clip_value, clip_value)


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """All parameters' values concatenated into one 1-D tensor (a copy, without gradient)."""
    arrays = [p._data.ravel() for p in parameters]
    return _wrap(np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.float32))


def vector_to_parameters(vector: Tensor, parameters: Iterable[Tensor]) -> None:
    """Copy consecutive slices of ``vector`` into the parameters, in place."""
    values = vector._data if isinstance(vector, Tensor) else np.asarray(vector)
    if values.ndim != 1:
        raise ValueError(f"vector_to_parameters: expected a 1-D vector, got shape {values.shape}")
    parameters = list(parameters)
    needed = sum(p.size for p in parameters)
    if values.size != needed:
        raise ValueError(
            f"vector_to_parameters: vector has {values.size} elements, the parameters {needed}"
        )
    start = 0
    with no_grad():
        for p in parameters:
            p.copy_(values[start : start + p.size].reshape(p.shape))
            start += p.size


from tensorgrad.nn.utils import rnn as rnn  # noqa: E402 - after the helpers, which it does not use
