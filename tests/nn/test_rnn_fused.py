"""``nn.LSTM`` and ``nn.GRU`` with each layer one op (``ops.LSTMLayer``, ``ops.GRULayer``,
switched by ``FUSED_LSTM_LAYER``/``FUSED_GRU_LAYER``) against the per-step ops: the same
outputs, final states and gradients of the input, the initial states and every weight and
bias, in float64 to 1e-12, with the JIT's kernels on and off; and the directional check."""

from __future__ import annotations

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import _jit, nn
from tensorgrad.autograd import gradcheck
from tensorgrad.nn.modules import rnn as rnn_module

CONFIGS = [
    {},
    {"num_layers": 2, "bidirectional": True},
    {"batch_first": True, "bias": False},
    {"num_layers": 3, "dropout": 0.0},
]
#: (steps, batch, input, hidden)
SHAPES = [(5, 3, 4, 6), (1, 1, 1, 1), (0, 2, 3, 4), (3, 0, 2, 2)]
JIT = [
    pytest.param(False, id="numpy"),
    pytest.param(True, id="jit", marks=pytest.mark.skipif(not _jit.ENABLED, reason="no numba")),
]


def _switch(monkeypatch, fused: bool, jit: bool) -> None:
    monkeypatch.setattr(rnn_module, "FUSED_LSTM_LAYER", fused)
    monkeypatch.setattr(rnn_module, "FUSED_GRU_LAYER", fused)
    monkeypatch.setattr(_jit, "ENABLED", jit)


def _run(mode, config, shape, given_state, seed=0):
    """(output, final states, gradients of the input, states and parameters) of one layer
    under a loss that reads the output and the final states."""
    steps, batch, size, hidden = shape
    tg.manual_seed(seed)
    layer = getattr(nn, mode)(size, hidden, **config).double()
    rng = np.random.default_rng(seed)
    dims = (batch, steps, size) if config.get("batch_first") else (steps, batch, size)
    x = tg.tensor(rng.standard_normal(dims), requires_grad=True)
    count = layer.num_layers * (2 if layer.bidirectional else 1)
    states = [
        tg.tensor(rng.standard_normal((count, batch, hidden)), requires_grad=True)
        for _ in range(2 if mode == "LSTM" else 1)
    ]
    hx = None if not given_state else (tuple(states) if mode == "LSTM" else states[0])
    out, final = layer(x, hx)
    finals = list(final) if mode == "LSTM" else [final]
    weights = [rng.standard_normal(f.shape) for f in [out, *finals]]
    loss = sum((t * tg.tensor(w)).sum() for t, w in zip([out, *finals], weights, strict=True))
    if loss.requires_grad:  # (no step and no state given: nothing to differentiate)
        loss.backward()
    grads = [x.grad] + ([s.grad for s in states] if given_state else [])
    grads += [p.grad for p in layer.parameters()]
    return [out, *finals], grads


def _assert_close(fused, plain):
    for a, b in zip(fused, plain, strict=True):
        assert (a is None) == (b is None)
        if a is not None:
            assert a.shape == b.shape
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), 1e-12, 1e-12)


@pytest.mark.parametrize("jit", JIT)
@pytest.mark.parametrize("shape", SHAPES, ids=["5x3", "size1", "no_steps", "empty_batch"])
@pytest.mark.parametrize("config", CONFIGS, ids=["plain", "bidir2", "batch_first", "three"])
@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_fused_layer_equals_the_per_step_ops(monkeypatch, mode, config, shape, jit):
    for given_state in (False, True):
        _switch(monkeypatch, False, jit)
        plain = _run(mode, config, shape, given_state)
        _switch(monkeypatch, True, jit)
        fused = _run(mode, config, shape, given_state)
        _assert_close(fused[0], plain[0])
        _assert_close(fused[1], plain[1])


def _layer_calls(monkeypatch, mode):
    """The number of calls of the mode's layer op, counted from now."""
    op = tg.ops.LSTMLayer if mode == "LSTM" else tg.ops.GRULayer
    calls = []
    real = op.forward

    def counting(self, *args):
        calls.append(self.reverse)
        return real(self, *args)

    monkeypatch.setattr(op, "forward", counting)
    return calls


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_the_switch_chooses_the_op(monkeypatch, mode):
    """On, the layer runs one op per layer and direction; off, none."""
    calls = _layer_calls(monkeypatch, mode)
    for fused in (True, False):
        _switch(monkeypatch, fused, _jit.ENABLED)
        layer = getattr(nn, mode)(2, 3, num_layers=2, bidirectional=True).double()
        layer(tg.randn(4, 1, 2, dtype=tg.float64))
    assert calls == [False, True, False, True]


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_a_packed_input_takes_the_per_step_path(monkeypatch, mode):
    calls = _layer_calls(monkeypatch, mode)
    _switch(monkeypatch, True, _jit.ENABLED)
    layer = getattr(nn, mode)(2, 3).double()
    seqs = [tg.randn(n, 2, dtype=tg.float64) for n in (3, 1)]
    out, _ = layer(nn.utils.rnn.pack_sequence(seqs))
    assert out.data.shape == (4, 3) and calls == []


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_fused_layer_second_derivatives_equal_the_per_step_ops(monkeypatch, mode):
    """create_graph: the op's recorded backward (recomputed from the inputs) gives the
    per-step ops' Hessian-vector product."""
    results = []
    for fused in (False, True):
        _switch(monkeypatch, fused, _jit.ENABLED)
        tg.manual_seed(3)
        layer = getattr(nn, mode)(2, 3, bidirectional=True).double()
        x = tg.tensor(np.random.default_rng(2).standard_normal((4, 2, 2)), requires_grad=True)
        out, _ = layer(x)
        (g,) = tg.autograd.grad(out.tanh().sum(), [x], create_graph=True)
        (gg,) = tg.autograd.grad((g * g).sum(), [x])
        results.append((g.detach().numpy(), gg.numpy()))
    for a, b in zip(*results, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("jit", JIT)
@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_directional_check_of_a_tiny_fused_layer(monkeypatch, mode, jit):
    _switch(monkeypatch, True, jit)
    tg.manual_seed(1)
    layer = getattr(nn, mode)(2, 3, num_layers=2, bidirectional=True).double()
    rng = np.random.default_rng(4)
    x = tg.tensor(rng.standard_normal((3, 2, 2)), requires_grad=True)
    h0 = tg.tensor(rng.standard_normal((4, 2, 3)), requires_grad=True)
    hx = (
        (h0, tg.tensor(rng.standard_normal((4, 2, 3)), requires_grad=True))
        if mode == "LSTM"
        else h0
    )

    def f(x, *states):
        out, final = layer(x, states if mode == "LSTM" else states[0])
        return (out, *final) if mode == "LSTM" else (out, final)

    states = hx if mode == "LSTM" else (hx,)
    assert gradcheck(f, (x, *states), params=layer, n_directions=4)


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_dropout_between_layers_draws_the_same_masks(monkeypatch, mode):
    """Training with dropout: the fused layers' (steps, batch, features) input to the next
    layer is the per-step path's rows in the same order, so one seed gives one mask."""
    results = []
    for fused in (False, True):
        _switch(monkeypatch, fused, _jit.ENABLED)
        tg.manual_seed(7)
        layer = getattr(nn, mode)(3, 4, num_layers=3, dropout=0.5).double()
        x = tg.tensor(np.random.default_rng(8).standard_normal((5, 2, 3)), requires_grad=True)
        out, _ = layer(x)
        out.square().sum().backward()
        results.append([out.detach().numpy(), x.grad.numpy()])
    for a, b in zip(*results, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
