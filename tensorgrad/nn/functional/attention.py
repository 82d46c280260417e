"""``F.scaled_dot_product_attention``: attention as one op (``ops.ScaledDotProductAttention``)
that keeps only the probabilities for backward."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tensorgrad import array_backend, ops
from tensorgrad.core import batching
from tensorgrad.core.engine import apply
from tensorgrad.core.tensor import Tensor
from tensorgrad.nn.functional._conv_args import tensor_of


def _additive_mask(mask: Any, dtype: np.dtype) -> Any:
    """A boolean mask (True: takes part) as an additive float one (0 or −inf); a float mask
    in the queries' dtype."""
    mask = tensor_of(mask)
    if mask.dtype == np.bool_:
        additive = Tensor(np.where(mask._data, 0.0, -np.inf).astype(dtype))
        return batching.like(mask, additive)  # inside vmap, laid out as the mask's batch
    return mask if mask.dtype == dtype else mask.to(dtype)


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> Tensor:
    """``softmax(query @ keyᵀ · scale + mask) @ value``, PyTorch's signature and semantics.

    ``attn_mask`` is boolean (True where a query may attend to a key) or float (added to the
    scores), broadcastable to (..., L, S); ``is_causal`` masks keys after each query (it
    excludes ``attn_mask``); ``scale`` defaults to 1/√E; ``dropout_p`` drops probabilities
    (always: as PyTorch's, this function knows no training mode). ``enable_gqa`` repeats the
    key and value heads (dimension −3) to the query's number of heads.
    """
    q, k, v = tensor_of(query), tensor_of(key), tensor_of(value)
    name = "scaled_dot_product_attention"
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"{name}: dropout_p must be in [0, 1], got {dropout_p}")
    if is_causal and attn_mask is not None:
        raise RuntimeError(f"{name}: explicit attn_mask should not be set when is_causal=True")
    if not q.dtype == k.dtype == v.dtype:
        raise RuntimeError(
            f"{name}: Expected query, key, and value to have the same dtype, but got "
            f"query.dtype: {q.dtype} key.dtype: {k.dtype} and value.dtype: {v.dtype}"
        )
    if q.dtype.kind != "f":  # PyTorch's product of float scores and integer values
        raise RuntimeError(f"{name}: expected floating point query, key and value, got {q.dtype}")
    if min(q.ndim, k.ndim, v.ndim) < 2:
        raise RuntimeError(
            f"{name}: expected query, key and value of at least 2 dimensions, got shapes "
            f"{tuple(q.shape)}, {tuple(k.shape)} and {tuple(v.shape)}"
        )
    if enable_gqa and q.ndim >= 3 and k.ndim >= 3 and q.shape[-3] != k.shape[-3]:
        heads, kv_heads = q.shape[-3], k.shape[-3]
        if heads % kv_heads or v.shape[-3] != kv_heads:
            raise RuntimeError(
                f"{name}: with enable_gqa the query's heads ({heads}) must be a multiple of "
                f"the key's and value's ({kv_heads}, {v.shape[-3]})"
            )
        k = k.repeat_interleave(heads // kv_heads, dim=-3)
        v = v.repeat_interleave(heads // kv_heads, dim=-3)
    length, source = q.shape[-2], k.shape[-2]
    batch = _broadcast_batch(name, q, k, v)
    scores_shape = (*batch, length, source)
    mask = None
    if attn_mask is not None:
        mask = _additive_mask(attn_mask, q.dtype)
        try:
            np.broadcast_shapes(mask.shape, scores_shape)
        except ValueError:
            raise RuntimeError(
                f"{name}: attn_mask of shape {tuple(mask.shape)} does not broadcast to the "
                f"attention scores' shape {scores_shape} (batch..., L, S)"
            ) from None
    dropout = None
    if dropout_p > 0.0:
        if dropout_p == 1.0:
            dropout = np.zeros(scores_shape, dtype=q.dtype)
        else:
            dropout = (
                array_backend.rng().random(scores_shape, dtype=np.float32) >= dropout_p
            ).astype(q.dtype)
            dropout *= 1.0 / (1.0 - dropout_p)
    if scale is None:  # without features every score is 0, whatever the scale
        scale = 1.0 / math.sqrt(q.shape[-1]) if q.shape[-1] else 1.0
    scale = float(scale)
    op = ops.ScaledDotProductAttention(scale, causal=bool(is_causal))
    return apply(op, q, k, v, mask, dropout)


def _broadcast_batch(name: str, q: Tensor, k: Tensor, v: Tensor) -> tuple[int, ...]:
    try:
        return np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except ValueError:
        raise RuntimeError(
            f"{name}: the batch dimensions of query {tuple(q.shape)}, key {tuple(k.shape)} "
            f"and value {tuple(v.shape)} do not broadcast"
        ) from None
