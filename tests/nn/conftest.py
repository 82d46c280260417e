"""Shared helpers for the nn tests: a float64 directional-derivative check."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest

import tensorgrad as tg


def directional_check(
    f: Callable[[], tg.Tensor],
    inputs: Sequence[tg.Tensor],
    seed: int = 0,
    eps: float = 1e-6,
    rtol: float = 1e-6,
    atol: float = 1e-9,
) -> tuple[float, float]:
    """Compare δᵀ∇L with (L(θ+εδ) − L(θ−εδ)) / 2ε for a seeded random unit direction δ over
    all ``inputs`` together, where L = Σ w ⊙ f() with fixed random weights w (so every output
    element matters). ``f`` recomputes its output from the inputs' current values."""
    for x in inputs:
        assert x.dtype == np.float64 and x.requires_grad, "check in float64, on inputs needing grad"
    rng = np.random.default_rng(seed)
    out = f()
    weights = rng.standard_normal(out.shape)
    grads = tg.grad((out * weights).sum(), list(inputs), allow_unused=True)
    deltas = [rng.standard_normal(x.shape) for x in inputs]
    norm = np.sqrt(sum(float((d * d).sum()) for d in deltas))
    deltas = [d / norm for d in deltas]
    analytic = sum(
        float((g.numpy() * d).sum()) for g, d in zip(grads, deltas, strict=True) if g is not None
    )

    def loss_at(step: float) -> float:
        originals = [x.numpy().copy() for x in inputs]
        for x, d in zip(inputs, deltas, strict=True):
            x.numpy()[...] += step * d
        try:
            return float((f().numpy() * weights).sum())
        finally:
            for x, original in zip(inputs, originals, strict=True):
                x.numpy()[...] = original

    numeric = (loss_at(eps) - loss_at(-eps)) / (2 * eps)
    assert abs(analytic - numeric) <= atol + rtol * abs(numeric), (analytic, numeric)
    return analytic, numeric


@pytest.fixture
def check_gradient() -> Callable[..., tuple[float, float]]:
    return directional_check
