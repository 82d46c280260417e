"""Scaled dot-product attention as one op: ``softmax(Q Kᵀ · scale + mask) V``.

Composed from primitives, attention keeps the scores, the shifted scores, their exponentials,
the probabilities and the dropped-out probabilities, each of shape (..., L, S), for backward.
The VJP needs only the probabilities P (and the dropout mask):

    dV = P̃ᵀ dO            with P̃ = P ⊙ D the dropped-out probabilities
    dP = (dO Vᵀ) ⊙ D
    dS = P ⊙ (dP − rowsum(dP ⊙ P))          the softmax VJP, row by row
    dQ = dS K · scale,   dK = dSᵀ Q · scale,   d(mask) = dS (summed to the mask's shape)

so this op keeps P in ``saved`` and nothing else of size L × S.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorgrad.ops.base import Op, shape_of, sum_to


def _swap(x: Any) -> Any:
    return x.swapaxes(-1, -2)


def causal_bias(length: int, source: int, dtype: Any) -> np.ndarray:
    """The additive mask of ``is_causal``: 0 where key j ≤ query i, −inf above the
    diagonal (aligned at the top left, as PyTorch's ``ones(L, S).tril()``)."""
    bias = np.zeros((length, source), dtype=dtype)
    bias[np.triu_indices(length, 1, source)] = -np.inf
    return bias


class ScaledDotProductAttention(Op):
    """``softmax(q @ kᵀ · scale + mask) @ v`` over the last two axes, batch axes broadcast.

    Inputs: ``q`` (..., L, E), ``k`` (..., S, E), ``v`` (..., S, Ev), then an additive float
    ``mask`` broadcastable to (..., L, S) or None, then ``dropout`` (the kept entries' scale
    1/(1 − p), zero elsewhere, of the probabilities' shape) or None. ``causal`` adds the
    causal mask without a tensor for it.
    """

    name = "scaled_dot_product_attention"

    def __init__(self, scale: float, causal: bool = False):
        self.scale, self.causal = scale, causal

    def _probabilities(self, q: Any, k: Any, mask: Any) -> Any:
        scores = (q @ _swap(k)) * self.scale
        if self.causal:
            length, source = shape_of(scores)[-2:]
            scores = scores + causal_bias(length, source, getattr(q, "dtype", np.float64))
        if mask is not None:
            scores = scores + mask
        if np.size(scores):
            scores = scores - np.max(scores, axis=-1, keepdims=True)
        e = np.exp(scores)
        return e / e.sum(axis=-1, keepdims=True)

    def forward(self, q, k, v, mask=None, dropout=None):
        qs, ks, vs = shape_of(q), shape_of(k), shape_of(v)
        if len(qs) < 2 or len(ks) < 2 or len(vs) < 2 or qs[-1] != ks[-1] or ks[-2] != vs[-2]:
            raise RuntimeError(
                f"{self.name}: expected query (..., L, E), key (..., S, E) and value "
                f"(..., S, Ev), got {qs}, {ks} and {vs}"
            )
        with np.errstate(invalid="ignore"):  # a row masked everywhere is NaN, as PyTorch's
            p = self._probabilities(q, k, mask)
        self.saved = p
        if dropout is None:
            return p @ v
        if isinstance(dropout, np.ndarray) and isinstance(p, np.ndarray):
            dropout = dropout.astype(p.dtype, copy=False)  # a constant: keeps q's dtype
        return (p * dropout) @ v

    def backward(self, grad, out, q, k, v, mask=None, dropout=None):
        recorded = not all(isinstance(x, np.ndarray) for x in (q, k, v))
        p = self._probabilities(q, k, mask) if recorded else self.saved
        kept = p if dropout is None else p * dropout
        nq, nk, nv, nmask = self.needs_input_grad[:4]
        dv = sum_to(_swap(kept) @ grad, shape_of(v)) if nv else None
        if not (nq or nk or nmask):
            return (None, None, dv, None, None)
        dp = grad @ _swap(v)
        if dropout is not None:
            dp = dp * dropout
        ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True))
        dq = sum_to((ds @ k) * self.scale, shape_of(q)) if nq else None
        dk = sum_to((_swap(ds) @ q) * self.scale, shape_of(k)) if nk else None
        dmask = sum_to(ds, shape_of(mask)) if nmask else None
        return (dq, dk, dv, dmask, None)
