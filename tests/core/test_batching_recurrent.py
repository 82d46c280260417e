"""vmap of ``nn.LSTM`` and ``nn.GRU`` with weights shared by the samples: the vmap batch joins
the layer's batch, each layer's direction one fused op (``ops.LSTMLayer``/``GRULayer``,
batching rule ``recurrent_layer``) for every sample. Outputs, final states and gradients
(of the input, per sample, and of the shared weights) equal the per-step cells' path
(``FUSED_*_LAYER`` off) to 1e-12 in float64; per-sample weight gradients take the cells'
path, which batches too. Nothing falls back to the per-sample loop.
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import func, ops
from tensorgrad.core import batching
from tensorgrad.nn.modules import rnn

B, STEPS, N, INPUT, HIDDEN = 3, 5, 2, 3, 4
LAYERS = {"LSTM": ops.LSTMLayer, "GRU": ops.GRULayer}
SWITCHES = {"LSTM": "FUSED_LSTM_LAYER", "GRU": "FUSED_GRU_LAYER"}


def _model(mode, batch_first):
    tg.manual_seed(3)
    cls = tg.nn.LSTM if mode == "LSTM" else tg.nn.GRU
    return cls(INPUT, HIDDEN, num_layers=2, bidirectional=True, batch_first=batch_first).double()


def _run(model, mode, x, hx, fused, monkeypatch):
    """The vmapped model's outputs and final states, and the gradients of a fixed weighted
    sum of them with respect to the input and every weight; with the count of fused calls."""
    monkeypatch.setattr(rnn, SWITCHES[mode], fused)
    calls = []
    layer = LAYERS[mode]
    forward = layer.forward
    monkeypatch.setattr(layer, "forward", lambda op, *a: (calls.append(1), forward(op, *a))[1])
    model.zero_grad()
    x = tg.tensor(x, requires_grad=True)
    in_dims = (0,) if hx is None else (0, 1)
    args = (x,) if hx is None else (x, hx)
    before = sum(batching.state.looped.values())
    out, finals = func.vmap(model, in_dims=in_dims)(*args)
    assert sum(batching.state.looped.values()) == before
    finals = finals if isinstance(finals, tuple) else (finals,)
    results = [out, *finals]
    rng = np.random.default_rng(5)
    total = sum((r * tg.tensor(rng.standard_normal(r.shape))).sum() for r in results)
    total.backward()
    grads = [x.grad.numpy()] + [p.grad.numpy() for p in model.parameters()]
    monkeypatch.setattr(layer, "forward", forward)
    return [r.numpy() for r in results], grads, len(calls)


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("given_states", [False, True])
def test_fused_layers_under_vmap_equal_the_per_step_cells(
    mode, batch_first, given_states, monkeypatch
):
    model = _model(mode, batch_first)
    rng = np.random.default_rng(1)
    shape = (B, N, STEPS, INPUT) if batch_first else (B, STEPS, N, INPUT)
    x = rng.standard_normal(shape)
    hx = None
    if given_states:  # per-sample initial states, mapped over their dim 1
        states = [tg.tensor(rng.standard_normal((4, B, N, HIDDEN))) for _ in range(2)]
        hx = tuple(states) if mode == "LSTM" else states[0]
    fused_out, fused_grads, fused_calls = _run(model, mode, x, hx, True, monkeypatch)
    cells_out, cells_grads, cells_calls = _run(model, mode, x, hx, False, monkeypatch)
    assert fused_calls == 4 and cells_calls == 0  # two layers, two directions: one op each
    for got, want in zip(fused_out + fused_grads, cells_out + cells_grads, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    # and one sample at a time, outside vmap
    for b in range(B):
        if hx is None:
            sample_hx = None
        elif mode == "LSTM":
            sample_hx = tuple(s[:, b] for s in hx)
        else:
            sample_hx = hx[:, b]
        out, _ = model(tg.tensor(x[b]), sample_hx)
        np.testing.assert_allclose(fused_out[0][b], out.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_per_sample_gradients_of_a_recurrent_model_take_the_cells_and_batch(mode):
    """Weights per sample (``functional_call`` under ``vmap(grad)``): the per-step cells,
    by their rules, equal to a backward call per sample."""
    model = _model(mode, batch_first=True)
    params = {k: v.detach() for k, v in model.named_parameters()}
    xs = tg.tensor(np.random.default_rng(2).standard_normal((B, N, STEPS, INPUT)))

    def loss(p, x):
        out, _ = func.functional_call(model, p, (x,))
        return (out**2).sum()

    before = sum(batching.state.looped.values())
    grads = func.vmap(func.grad(loss), in_dims=(None, 0))(params, xs)
    assert sum(batching.state.looped.values()) == before
    for b in range(B):
        model.zero_grad()
        out, _ = model(tg.tensor(xs.numpy()[b]))
        (out**2).sum().backward()
        for name, p in model.named_parameters():
            np.testing.assert_allclose(
                grads[name].numpy()[b], p.grad.numpy(), rtol=1e-10, atol=1e-12
            )
