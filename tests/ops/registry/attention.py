"""Registry entries for ``tensorgrad/ops/attention.py``: scaled dot-product attention, with
and without masks, causal masking and a dropout mask."""

from __future__ import annotations

import numpy as np

from tensorgrad import ops
from tensorgrad.core.engine import apply as _apply
from tests.ops.registry.core import ErrorInput, OpInfo, Sample, exempt, register, uniform


def _attention_ref(q, k, v, mask=None, scale=1.0, causal=False, dropout=None):
    scores = q @ np.swapaxes(k, -1, -2) * scale
    if causal:
        length, source = scores.shape[-2:]
        scores = np.where(np.tri(length, source, dtype=bool), scores, -np.inf)
    if mask is not None:
        scores = scores + mask
    if scores.size:
        scores = scores - scores.max(axis=-1, keepdims=True)
    p = np.exp(scores)
    p = p / p.sum(axis=-1, keepdims=True)
    return (p if dropout is None else p * dropout) @ v


def _attention(q, k, v, mask=None, scale=1.0, causal=False, dropout=None):
    return _apply(ops.ScaledDotProductAttention(scale, causal), q, k, v, mask, dropout)


def _samples(rng: np.random.Generator) -> list[Sample]:
    def qkv(batch, length, source, e=3, ev=2):
        return (
            uniform(rng, (*batch, length, e)),
            uniform(rng, (*batch, source, e)),
            uniform(rng, (*batch, source, ev)),
        )

    keep = (rng.random((2, 3, 4)) > 0.3) / 0.7
    return [
        Sample(qkv((2,), 3, 4), {"scale": 0.5}, "batch"),
        Sample(qkv((), 3, 4), {"scale": 0.7}, "unbatched"),
        Sample(qkv((2, 2), 3, 3), {"scale": 0.5, "causal": True}, "causal"),
        Sample(qkv((2,), 4, 3), {"scale": 0.5, "causal": True}, "causal_rectangular"),
        Sample((*qkv((2,), 3, 4), uniform(rng, (3, 4))), {"scale": 0.6}, "float_mask"),
        Sample((*qkv((2,), 3, 4), uniform(rng, (2, 1, 4))), {"scale": 0.6}, "mask_bcast"),
        Sample((*qkv((2,), 3, 4), uniform(rng, (4,))), {"scale": 0.6}, "mask_1d"),
        Sample((*qkv((2,), 3, 4), uniform(rng, (2, 2, 3, 4))), {"scale": 0.6}, "mask_grows"),
        Sample(qkv((2,), 3, 4), {"scale": 0.5, "dropout": keep}, "dropout"),
        Sample(qkv((1,), 1, 1, 1, 1), {"scale": 1.0}, "size1"),
        Sample(qkv((0,), 3, 4), {"scale": 0.5}, "empty_batch"),
        Sample(qkv((2,), 0, 4), {"scale": 0.5}, "no_queries"),
        Sample(qkv((), 3, 3, 3, 3), {"scale": 0.5}, "views", ("T", "S", "T")),
        Sample(
            (uniform(rng, (2, 1, 3, 3)), uniform(rng, (1, 2, 4, 3)), uniform(rng, (2, 2, 4, 2))),
            {"scale": 0.5},
            "batch_bcast",
        ),
    ]


register(
    OpInfo(
        "scaled_dot_product_attention",
        _attention,
        _attention_ref,
        _samples,
        errors=(
            ErrorInput(
                (np.ones((2, 3, 4)), np.ones((2, 5, 3)), np.ones((2, 5, 2))),
                RuntimeError,
                r"^scaled_dot_product_attention: expected query \(\.\.\., L, E\), key "
                r"\(\.\.\., S, E\) and value \(\.\.\., S, Ev\), got \(2, 3, 4\), \(2, 5, 3\) "
                r"and \(2, 5, 2\)",
                {"scale": 1.0},
                "embedding_mismatch",
            ),
        ),
    )
)

exempt("0-d", "queries, keys and values are matrices (..., L, E)", "scaled_dot_product_attention")
