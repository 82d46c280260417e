"""Normalisation: the core that batch and layer normalisation share."""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorgrad import _jit
from tensorgrad.ops import object_arrays
from tensorgrad.ops.base import Op
from tensorgrad.ops.sums import column_sums, row_sums


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


class LayerNorm(Op):
    """Layer normalisation with its affine part, ``x̂ · weight + bias`` with x̂ the
    :class:`Normalize` of ``x`` over its last ``dims`` axes, as one op: three recorded ops
    (normalize, multiply, add) and their temporaries become one, as PyTorch's
    ``native_layer_norm``. ``weight`` and ``bias`` have the normalised shape.

    With g the incoming gradient and ĝ = g · weight, the VJP is ``dbias = Σ g``,
    ``dweight = Σ g · x̂`` (sums over the leading axes) and
    ``dx = σ⁻¹ · (ĝ − mean(ĝ) − x̂ · mean(ĝ · x̂))`` (means over the normalised axes).
    ``saved`` keeps x̂ and σ⁻¹ for backward.
    """

    name = "layer_norm"
    batching = "trailing"
    uses_output = False

    def __init__(self, dims: int, eps: float):
        self.dims, self.eps = dims, eps

    def _axes(self, x: Any) -> tuple[int, ...]:
        ndim = np.ndim(x)
        return tuple(range(ndim - self.dims, ndim))

    def _matrix(self, x: Any) -> tuple[int, int]:
        """(rows, n): x as a matrix of rows of the n normalised elements each."""
        shape = np.shape(x)
        n = int(np.prod(shape[len(shape) - self.dims :], dtype=np.int64))
        return (int(np.prod(shape, dtype=np.int64)) // n if n else 0), n

    def forward(self, x, weight, bias):
        rows, n = self._matrix(x)
        if type(x) is np.ndarray and rows and n:  # on the (rows, n) matrix: sums through BLAS
            x2 = x.reshape(rows, n)
            fused = (
                _jit.ENABLED and _fusable(x, weight, bias) and self._fused_forward(x2, weight, bias)
            )
            if fused:  # the lines below in two loops around the BLAS sums (tensorgrad/_jit)
                self.saved = fused[1:]
                return fused[0].reshape(x.shape)
            centered = x2 - (row_sums(x2) * (1.0 / n))[:, None]
            square = centered * centered
            inverse_std = 1.0 / np.sqrt(row_sums(square) * (1.0 / n) + self.eps)[:, None]
            centered *= inverse_std
            self.saved = (centered, inverse_std)
            np.multiply(centered, weight.reshape(n), out=square)
            square += bias.reshape(n)
            return square.reshape(x.shape)
        axes = self._axes(x)
        count = int(np.prod(np.shape(x)[len(np.shape(x)) - self.dims :], dtype=np.int64))
        centered = x - np.add.reduce(x, axis=axes, keepdims=True) / max(count, 1)
        square = centered * centered
        var = np.add.reduce(square, axis=axes, keepdims=True) / max(count, 1)
        inverse_std = 1.0 / np.sqrt(var + self.eps)
        centered *= inverse_std
        self.saved = (centered, inverse_std)
        np.multiply(centered, weight, out=square)
        square += bias
        return square

    def _fused_forward(self, x2, weight, bias):
        return _jit.run("layer_norm_forward", x2, weight, bias, self.eps, row_sums)

    def scalar_forward(self, x, weight, bias):
        normalized = Normalize(self._axes(x), self.eps).scalar_forward(x)
        return object_arrays.objects(normalized * weight + bias)

    def backward(self, grad, out, x, weight, bias):
        nx, nw, nb = self.needs_input_grad
        normalized, inverse_std = self.saved if self.saved is not None else (None, None)
        if (
            type(x) is np.ndarray
            and type(grad) is np.ndarray
            and type(normalized) is np.ndarray
            and normalized.ndim == 2
        ):
            rows, n = normalized.shape
            g = grad.reshape(rows, n)
            fused = _jit.ENABLED and _fusable(grad, weight, normalized)
            fused = fused and _jit.run(
                "layer_norm_backward", g, normalized, inverse_std, weight, nx, row_sums, column_sums
            )
            if fused:  # the lines below in two loops around the BLAS sums (tensorgrad/_jit)
                dx, dw, db = fused
                return (
                    dx.reshape(np.shape(x)) if nx else None,
                    dw.reshape(np.shape(weight)) if nw else None,
                    db.reshape(np.shape(bias)) if nb else None,
                )
            db = column_sums(g).reshape(np.shape(bias)) if nb else None
            dw = None
            if nw:
                dw = column_sums(g * normalized).reshape(np.shape(weight))
            dx = None
            if nx:
                g = g * weight.reshape(n)
                mean_g = row_sums(g) * (1.0 / n)
                mean_gx = row_sums(g * normalized) * (1.0 / n)
                g -= mean_g[:, None]
                g -= normalized * mean_gx[:, None]
                g *= inverse_std
                dx = g.reshape(np.shape(x))
            return dx, dw, db
        axes = self._axes(x)
        lead = tuple(range(np.ndim(x) - self.dims))
        if isinstance(x, np.ndarray) and isinstance(grad, np.ndarray):
            normalized, inverse_std = self.saved
        else:  # recording on Tensors (create_graph): recomputed from x, differentiable again
            op = Normalize(axes, self.eps)
            inverse_std = op._inverse_std(x)
            normalized = (x - x.mean(axis=axes, keepdims=True)) * inverse_std
        db = grad.sum(axis=lead) if nb and lead else grad if nb else None
        dw = None
        if nw:
            dw = (grad * normalized).sum(axis=lead) if lead else grad * normalized
        dx = None
        if nx:
            g = grad * weight
            mean_g = g.mean(axis=axes, keepdims=True)
            mean_gx = (g * normalized).mean(axis=axes, keepdims=True)
            if type(g) is np.ndarray and type(normalized) is np.ndarray:  # in place on g
                g -= mean_g
                mean_gx = normalized * mean_gx
                g -= mean_gx
                g *= inverse_std
                dx = g
            else:
                dx = inverse_std * (g - mean_g - normalized * mean_gx)
        return dx, dw, db

    def jvp(self, tangents, out, x, weight, bias):
        """``ẋ ↦ J_x ẋ · weight``, plus ``x̂ · ẇ + ḃ`` (J_x of normalize is symmetric)."""
        tx, tw, tb = (*tangents, None, None)[:3]
        axes = self._axes(x)
        op = Normalize(axes, self.eps)
        inverse_std = op._inverse_std(x)
        normalized = (x - x.mean(axis=axes, keepdims=True)) * inverse_std
        result = None
        if tx is not None:
            mean_t = tx.mean(axis=axes, keepdims=True)
            mean_tx = (tx * normalized).mean(axis=axes, keepdims=True)
            result = inverse_std * (tx - mean_t - normalized * mean_tx) * weight
        if tw is not None:
            result = normalized * tw if result is None else result + normalized * tw
        if tb is not None:
            result = tb if result is None else result + tb
        return result


_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _fusable(a: Any, *others: Any) -> bool:
    """Whether a kernel of :mod:`tensorgrad._jit` takes these: arrays of one float dtype."""
    dtype = getattr(a, "dtype", None)
    return (
        dtype in _FLOATS
        and type(a) is np.ndarray
        and all(type(o) is np.ndarray and o.dtype == dtype for o in others)
    )
