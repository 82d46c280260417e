"""Scaled dot-product attention as one op: ``softmax(Q Kᵀ · scale + mask) V``.

Composed from primitives, attention keeps the scores, the shifted scores, their exponentials,
the probabilities and the dropped-out probabilities, each of shape (..., L, S), for backward.
The VJP needs only the probabilities P (and the dropout mask):

    dV = P̃ᵀ dO            with P̃ = P ⊙ D the dropped-out probabilities
    dP = (dO Vᵀ) ⊙ D
    dS = P ⊙ (dP − rowsum(dP ⊙ P))          the softmax VJP, row by row
    dQ = dS K · scale,   dK = dSᵀ Q · scale,   d(mask) = dS (summed to the mask's shape)

so this op keeps P in ``saved``, and nothing else of size L × S: as P = E / Σ E, its
numerators E = exp(scores − max) and each query's sum, so that neither direction divides an
L × S array (forward divides E V, L × Ev, and gets the sums from the same product, with a
column of ones after V; backward divides dO). The row sums of backward need no pass over P
either: rowsum(dP ⊙ P) = dO · O, query by query (O = P̃ V), so backward reads the output, as
PyTorch's does (an in-place change to it is refused).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorgrad import _jit
from tensorgrad.ops.base import Op, shape_of, sum_to


def _swap(x: Any) -> Any:
    return x.swapaxes(-1, -2)


#: the probabilities computed keys-major (Pᵀ in C order): NumPy's max over a short contiguous
#: row (P's softmax axis) was 4× slower than across rows, the largest part of attention's forward
KEYS_MAJOR = True

#: products of two row-major operands (NN): the second one's transpose copied into C order
#: first, where NumPy would hand BLAS a transposed operand (QKᵀ, dO Vᵀ): OpenBLAS's batched
#: NT products were half as fast as NN ones at the GPTs' shapes, and the copy costs a fifth
CONTIGUOUS_OPERANDS = True

_CAUSAL: dict[tuple, np.ndarray] = {}


def _scaled(product: np.ndarray, scale: float) -> np.ndarray:
    """``product · scale`` in place on a fresh float product (no second array)."""
    product *= scale
    return product


def _times_transposed(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ bᵀ`` over the last two axes, of arrays (see :data:`CONTIGUOUS_OPERANDS`)."""
    if CONTIGUOUS_OPERANDS and b.size:
        return np.matmul(a, np.ascontiguousarray(_swap(b)))
    return np.matmul(a, _swap(b))


def causal_bias(length: int, source: int, dtype: Any) -> np.ndarray:
    """The additive mask of ``is_causal``: 0 where key j ≤ query i, −inf above the
    diagonal (aligned at the top left, as PyTorch's ``ones(L, S).tril()``). Made once per
    shape and dtype, read-only."""
    key = (length, source, np.dtype(dtype))
    bias = _CAUSAL.get(key)
    if bias is None:
        bias = np.zeros((length, source), dtype=dtype)
        bias[np.triu_indices(length, 1, source)] = -np.inf
        bias.flags.writeable = False
        if len(_CAUSAL) < 64:
            _CAUSAL[key] = bias
    return bias


def _sums(e: np.ndarray) -> np.ndarray:
    """Each query's sum of the numerators E (..., L, S), over the keys, as (..., L)."""
    return np.add.reduce(e, axis=-1)


def _row_max(a: np.ndarray) -> np.ndarray:
    """The maximum over axis −2, keeping it, by halving: one NumPy call per halving over
    half the rows left, not one call per row of a short contiguous run (2× faster on the
    small GPT's (32, 4, 32, 32))."""
    while a.shape[-2] > 1:
        half = a.shape[-2] // 2
        top = np.maximum(a[..., :half, :], a[..., half : 2 * half, :])
        if a.shape[-2] % 2:  # the odd row out joins the first
            np.maximum(top[..., :1, :], a[..., 2 * half :, :], out=top[..., :1, :])
        a = top
    return a


class ScaledDotProductAttention(Op):
    """``softmax(q @ kᵀ · scale + mask) @ v`` over the last two axes, batch axes broadcast.

    Inputs: ``q`` (..., L, E), ``k`` (..., S, E), ``v`` (..., S, Ev), then an additive float
    ``mask`` broadcastable to (..., L, S) or None, then ``dropout`` (the kept entries' scale
    1/(1 − p), zero elsewhere, of the probabilities' shape) or None. ``causal`` adds the
    causal mask without a tensor for it.
    """

    name = "scaled_dot_product_attention"
    batching = "leading"

    def __init__(self, scale: float, causal: bool = False):
        self.scale, self.causal = scale, causal

    def _probabilities(self, q: Any, k: Any, mask: Any) -> Any:
        if type(q) is np.ndarray and type(k) is np.ndarray and q.dtype.kind == "f":
            return self._probabilities_of_arrays(q, k, mask)
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

    def _probabilities_of_arrays(self, q: np.ndarray, k: np.ndarray, mask: Any) -> np.ndarray:
        """As :meth:`_probabilities`, in place on one fresh array."""
        e = self._exponentials(q, k, mask)
        e /= _sums(e)[..., None]
        return e

    def _exponentials(self, q: np.ndarray, k: np.ndarray, mask: Any) -> np.ndarray:
        """``exp(scores − max)`` of arrays, unnormalised, in one fresh array: the softmax's
        numerators E, of shape (..., L, S). Keys-major (:data:`KEYS_MAJOR`), E is the
        transposed view of Eᵀ in C order: the max runs over axis −2, across whole rows (by
        halving)."""
        keys_major = KEYS_MAJOR
        scores = _times_transposed(k, q) if keys_major else _times_transposed(q, k)
        if scores.dtype.kind != "f":
            scores = scores.astype(np.float64)
        fast = _jit.ENABLED and _jit.FAST_EXP and scores.dtype == np.float32
        if (
            keys_major
            and mask is None
            and _jit.ENABLED
            and scores.flags.c_contiguous
            and _jit.run("attention_exponentials", scores, self.scale, self.causal, fast)
        ):  # the lines below in two loops (tensorgrad/_jit)
            if not fast:
                np.exp(scores, out=scores)
            return _swap(scores)
        scores *= self.scale
        if self.causal:
            bias = causal_bias(q.shape[-2], k.shape[-2], scores.dtype)
            scores += bias.T if keys_major else bias
        if mask is not None:
            ndim = np.ndim(mask)  # (a 1-D mask runs along the keys: a column keys-major)
            if keys_major:
                mask = _swap(mask) if ndim >= 2 else mask.reshape(-1, 1) if ndim else mask
            if np.broadcast_shapes(scores.shape, np.shape(mask)) == scores.shape:
                scores += mask
            else:
                scores = scores + mask
        if scores.size:
            scores -= (
                _row_max(scores) if keys_major else np.maximum.reduce(scores, -1, keepdims=True)
            )
        if not (fast and _jit.run("exp_float32_inplace", scores)):  # (the kernels' own exp)
            np.exp(scores, out=scores)
        return _swap(scores) if keys_major else scores

    def forward(self, q, k, v, mask=None, dropout=None):
        qs, ks, vs = shape_of(q), shape_of(k), shape_of(v)
        if len(qs) < 2 or len(ks) < 2 or len(vs) < 2 or qs[-1] != ks[-1] or ks[-2] != vs[-2]:
            raise RuntimeError(
                f"{self.name}: expected query (..., L, E), key (..., S, E) and value "
                f"(..., S, Ev), got {qs}, {ks} and {vs}"
            )
        arrays = all(type(x) is np.ndarray for x in (q, k, v)) and q.dtype.kind == "f"
        with np.errstate(invalid="ignore"):  # a row masked everywhere is NaN, as PyTorch's
            if arrays:
                return self._forward_of_arrays(q, k, v, mask, dropout)
            p = self._probabilities(q, k, mask)
        self.saved = p
        if dropout is None:
            return p @ v
        if isinstance(dropout, np.ndarray) and isinstance(p, np.ndarray):
            dropout = dropout.astype(p.dtype, copy=False)  # a constant: keeps q's dtype
        return (p * dropout) @ v

    def _forward_of_arrays(self, q, k, v, mask, dropout):
        """O = (E V) / Σ E, normalising the L × Ev output rather than the L × S numerators:
        without dropout the sums come out of the same product, with a column of ones
        after V. ``saved`` keeps E and the sums."""
        e = self._exponentials(q, k, mask)
        if dropout is not None:
            sums = _sums(e)
            self.saved = (e, sums)
            dropout = dropout.astype(e.dtype, copy=False)  # a constant: keeps q's dtype
            return (e * dropout) @ v / sums[..., None]
        with_ones = np.empty((*v.shape[:-1], v.shape[-1] + 1), v.dtype)
        with_ones[..., :-1] = v
        with_ones[..., -1] = 1
        products = e @ with_ones
        sums = products[..., -1].copy()  # (not a view keeping the products alive)
        self.saved = (e, sums)
        if not e.shape[-1]:  # no keys: E V is zeros, as P V
            return products[..., :-1].copy()
        if _jit.ENABLED and products.flags.c_contiguous:
            divided = _jit.run("divide_by_last_column", products)  # the line below, one loop
            if divided is not None:
                return divided
        return np.divide(products[..., :-1], products[..., -1:])

    def backward(self, grad, out, q, k, v, mask=None, dropout=None):
        nq, nk, nv, nmask = self.needs_input_grad[:4]
        if type(self.saved) is tuple and all(type(x) is np.ndarray for x in (q, k, v, grad)):
            return self._backward_of_arrays(grad, out, q, k, v, mask, dropout)
        p = self._probabilities(q, k, mask)  # recording on Tensors (create_graph)
        kept = p if dropout is None else p * dropout
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

    def _backward_of_arrays(self, grad, out, q, k, v, mask, dropout):
        """The VJP from the saved numerators E and sums, in Eᵀ's layout (…, S, L), in place
        on a fresh dPᵀ: dSᵀ = Pᵀ ⊙ (dPᵀ − D), where D, each query's Σ_s P dP, is dO · O
        (FlashAttention's identity, also with dropout), and P = E / sums folds into
        dO / sums, an L × Ev array: no pass over an L × S array for either."""
        nq, nk, nv, nmask = self.needs_input_grad[:4]
        e, sums = self.saved
        e_t = np.ascontiguousarray(_swap(e))
        if e.shape[-1]:  # (no keys: every gradient is empty or zeros; the sums are 0)
            grad = grad / sums[..., None]  # dO / sums: dPᵀ and D come out divided too
        kept_t = e_t if dropout is None else e_t * _swap(dropout)
        dv = sum_to(kept_t @ grad, shape_of(v)) if nv else None
        if not (nq or nk or nmask):
            return (None, None, dv, None, None)
        dp_t = _times_transposed(v, grad)
        if dropout is not None:
            dp_t *= _swap(dropout)
        d = np.einsum("...e,...e->...", grad, out)
        fused = (  # the two lines below in one loop (tensorgrad/_jit)
            _jit.ENABLED
            and dp_t.flags.c_contiguous
            and e_t.flags.c_contiguous
            and e_t.shape == dp_t.shape
            and d.shape == dp_t.shape[:-2] + dp_t.shape[-1:]
            and dp_t.dtype == d.dtype == e_t.dtype
            and _jit.run("attention_scores_gradient", dp_t, d, e_t)
        )
        if not fused:
            dp_t -= d[..., None, :]
            dp_t *= e_t
        dq = sum_to(_scaled(_swap(dp_t) @ k, self.scale), shape_of(q)) if nq else None
        dk = sum_to(_scaled(dp_t @ q, self.scale), shape_of(k)) if nk else None
        dmask = sum_to(_swap(dp_t), shape_of(mask)) if nmask else None
        return (dq, dk, dv, dmask, None)

    def reads_output(self, needs: list[bool]) -> bool:
        return needs[0] or needs[1] or needs[3]  # D = dO · O, for q's, k's and the mask's

    def jvp(self, tangents, out, q, k, v, mask=None, dropout=None):
        """Forward mode: ``Ṡ = (q̇ kᵀ + q k̇ᵀ)·scale + ṁ``, ``Ṗ = P ⊙ (Ṡ − rowsum(P ⊙ Ṡ))``,
        ``Ȯ = (Ṗ ⊙ D) v + (P ⊙ D) v̇`` (the dropout mask D is a constant)."""
        tq, tk, tv, tmask = tangents[:4]
        if tq is None and tk is None and tv is None and tmask is None:
            return None
        with np.errstate(invalid="ignore"):
            p = self._probabilities(q, k, mask)
        kept = p if dropout is None else p * dropout
        result = None if tv is None else kept @ tv
        ts = None
        if tq is not None:
            ts = (tq @ _swap(k)) * self.scale
        if tk is not None:
            term = (q @ _swap(tk)) * self.scale
            ts = term if ts is None else ts + term
        if tmask is not None:
            ts = tmask if ts is None else ts + tmask
        if ts is not None:
            tp = p * (ts - (p * ts).sum(axis=-1, keepdims=True))
            if dropout is not None:
                tp = tp * dropout
            term = tp @ v
            result = term if result is None else result + term
        return result
