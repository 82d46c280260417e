"""The whole-model check: one MLP in the scalar engine and in tensorgrad.nn, same weights,
same batch, same loss; the losses and every parameter gradient agree in float64."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import nn
from tensorgrad.nn import functional as F
from tensorgrad.scalar import MLP, Value


def scalar_cross_entropy(logits: list[Value], target: int) -> Value:
    """−log softmax(logits)[target], shifted by the max as the tensor engine's op is."""
    shift = max(v.data for v in logits)
    total = sum((v - shift).exp() for v in logits)
    return total.log() - (logits[target] - shift)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_scalar_mlp_and_nn_mlp_agree(seed):
    rng = np.random.default_rng(seed)
    sizes = [5, 8, 6, 3]
    weights = [
        (rng.normal(size=(n_out, n_in)), rng.normal(scale=0.1, size=n_out))
        for n_in, n_out in itertools.pairwise(sizes)
    ]
    x = rng.normal(size=(4, sizes[0]))
    y = rng.integers(0, sizes[-1], size=4)

    scalar_mlp = MLP.from_weights([(w.tolist(), b.tolist()) for w, b in weights])
    scalar_loss = sum(
        scalar_cross_entropy(scalar_mlp(list(row)), int(t)) for row, t in zip(x, y)
    ) * (1 / len(y))
    scalar_loss.backward()

    model = nn.Sequential(
        nn.Linear(5, 8, dtype=tg.float64), nn.ReLU(),
        nn.Linear(8, 6, dtype=tg.float64), nn.ReLU(),
        nn.Linear(6, 3, dtype=tg.float64),
    )  # fmt: skip
    linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
    with tg.no_grad():
        for layer, (w, b) in zip(linears, weights):
            layer.weight.copy_(w)
            layer.bias.copy_(b)
    loss = F.cross_entropy(model(tg.tensor(x)), y)
    loss.backward()

    assert loss.item() == pytest.approx(scalar_loss.data, rel=1e-10)
    for layer, scalar_layer in zip(linears, scalar_mlp.layers):
        scalar_w = np.array([[w.grad for w in neuron.w] for neuron in scalar_layer.neurons])
        scalar_b = np.array([neuron.b.grad for neuron in scalar_layer.neurons])
        np.testing.assert_allclose(layer.weight.grad.numpy(), scalar_w, rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(layer.bias.grad.numpy(), scalar_b, rtol=1e-10, atol=1e-14)
