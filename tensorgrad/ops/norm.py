"""Normalisation: the core that batch and layer normalisation share."""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorgrad.ops import object_arrays
from tensorgrad.ops.base import Op


class Normalize(Op):
    """``(x − mean) / sqrt(var + eps)`` over ``axes``, with the biased variance: the core of
    batch and layer normalisation (the affine part is ordinary multiply and add).

    With x̂ the output and σ⁻¹ = 1 / sqrt(var + eps), the VJP is
    ``σ⁻¹ · (g − mean(g) − x̂ · mean(g · x̂))``, means over ``axes``. ``saved`` keeps the batch
    ``(mean, var, σ⁻¹)``: batch norm reads the first two for its running statistics, and
    backward reuses σ⁻¹.
    """

    name = "normalize"
    batching = "normalize"
    uses_output = True

    def __init__(self, axes: tuple[int, ...], eps: float):
        self.axes, self.eps = tuple(axes), eps

    def _inverse_std(self, x: Any) -> Any:
        centered = x - x.mean(axis=self.axes, keepdims=True)
        return 1.0 / np.sqrt((centered * centered).mean(axis=self.axes, keepdims=True) + self.eps)

    def forward(self, x):
        mean = x.mean(axis=self.axes, keepdims=True)
        centered = x - mean
        var = (centered * centered).mean(axis=self.axes, keepdims=True)
        inverse_std = 1.0 / np.sqrt(var + self.eps)
        self.saved = (mean, var, inverse_std)
        centered *= inverse_std
        return centered

    def scalar_forward(self, x):
        """The forward's formula without its in-place step and without writing ``saved``
        (the statistics the tensor engine's backward reads)."""
        if np.size(x) == 0:
            return np.zeros(np.shape(x))
        objects = object_arrays.objects
        x = objects(x)
        count = int(np.prod([x.shape[a] for a in self.axes], dtype=np.int64))
        centered = objects(x - objects(x.sum(axis=self.axes, keepdims=True) / count))
        var = objects(objects(centered * centered).sum(axis=self.axes, keepdims=True) / count)
        return objects(centered * objects((var + self.eps) ** -0.5))

    def backward(self, grad, out, x):
        # On arrays, reuse σ⁻¹ from the forward; on Tensors (create_graph) recompute it from
        # x so that the second derivative sees its dependence on x.
        inverse_std = self.saved[2] if isinstance(x, np.ndarray) else self._inverse_std(x)
        mean_grad = grad.mean(axis=self.axes, keepdims=True)
        mean_grad_out = (grad * out).mean(axis=self.axes, keepdims=True)
        return (inverse_std * (grad - mean_grad - out * mean_grad_out),)

    def jvp(self, tangents, out, x):
        return self.backward(tangents[0], out, x)[0]  # its Jacobian is symmetric: J·t = Jᵀ·t
