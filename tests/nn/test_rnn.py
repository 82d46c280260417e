"""``nn.RNN``/``LSTM``/``GRU``, their cells and ``nn.utils.rnn``: shapes, parameter names,
initialisation, packed sequences, gradients (directional checks) and errors; against
PyTorch, with state dicts loaded both ways, where it is installed."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import nn
from tensorgrad.nn.utils import rnn as rnn_utils


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


LAYERS = ["RNN", "LSTM", "GRU"]
CONFIGS = [
    {},
    {"num_layers": 2, "bidirectional": True},
    {"batch_first": True, "bias": False},
    {"num_layers": 3, "dropout": 0.0},
]


def _final(kind: str, hidden):
    """One tensor from the final state (h_n, or h_n and c_n combined for the LSTM)."""
    return hidden[0] + 2 * hidden[1] if kind == "LSTM" else hidden


def _numpy(t):
    return t.detach().numpy()


# --------------------------------------------------------------------------- without torch
@pytest.mark.parametrize("kind", LAYERS)
def test_parameter_names_shapes_and_initialisation(kind):
    tg.manual_seed(0)
    layer = getattr(nn, kind)(3, 5, num_layers=2, bidirectional=True)
    gates = {"RNN": 1, "LSTM": 4, "GRU": 3}[kind] * 5
    names = [
        f"{w}_{part}_l{k}{suffix}"
        for k in range(2)
        for suffix in ("", "_reverse")
        for w, part in (("weight", "ih"), ("weight", "hh"), ("bias", "ih"), ("bias", "hh"))
    ]
    params = dict(layer.named_parameters())
    assert list(params) == names
    assert params["weight_ih_l0"].shape == (gates, 3)
    assert params["weight_ih_l1_reverse"].shape == (gates, 10)  # both directions feed layer 1
    assert params["weight_hh_l1"].shape == (gates, 5) and params["bias_hh_l0"].shape == (gates,)
    bound = 1 / math.sqrt(5)
    values = np.concatenate([p.numpy().ravel() for p in layer.parameters()])
    assert values.min() >= -bound and values.max() <= bound and values.std() > bound / 3
    assert [len(w) for w in layer.all_weights] == [4] * 4
    layer.flatten_parameters()  # accepted


@pytest.mark.parametrize("kind", LAYERS)
@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "-".join(c) or "default")
def test_output_and_state_shapes(kind, config):
    layer = getattr(nn, kind)(4, 6, **config)
    layers, directions = config.get("num_layers", 1), 2 if config.get("bidirectional") else 1
    x = tg.randn(2, 7, 4) if config.get("batch_first") else tg.randn(7, 2, 4)
    out, hidden = layer(x)
    assert out.shape == (x.shape[0], x.shape[1], 6 * directions)
    for h in hidden if kind == "LSTM" else (hidden,):
        assert h.shape == (layers * directions, 2, 6)
    unbatched, hidden = layer(tg.randn(7, 4))  # one sequence: no batch axis
    assert unbatched.shape == (7, 6 * directions)
    assert (hidden[0] if kind == "LSTM" else hidden).shape == (layers * directions, 6)


@pytest.mark.parametrize("kind", LAYERS)
def test_gradients_by_directional_derivative(kind, check_gradient):
    tg.manual_seed(1)
    layer = getattr(nn, kind)(3, 4, num_layers=2, bidirectional=True, dtype=tg.float64)
    x = tg.randn(5, 2, 3, dtype=tg.float64, requires_grad=True)
    h0 = tg.randn(4, 2, 4, dtype=tg.float64, requires_grad=True)

    def run():
        out, hidden = layer(x, (h0, h0 * 0.5) if kind == "LSTM" else h0)
        return out.sum(-1) + _final(kind, hidden).sum((0, 2))

    check_gradient(run, [x, h0, *layer.parameters()])


@pytest.mark.parametrize("kind", LAYERS)
def test_packed_input_equals_running_each_sequence_alone(kind, check_gradient):
    """A packed batch gives each sequence the output and final state it gets on its own."""
    tg.manual_seed(2)
    layer = getattr(nn, kind)(3, 4, bidirectional=True, dtype=tg.float64)
    lengths = [2, 5, 3]
    x = tg.randn(5, 3, 3, dtype=tg.float64, requires_grad=True)
    packed = rnn_utils.pack_padded_sequence(x, lengths, enforce_sorted=False)
    assert packed.batch_sizes.tolist() == [3, 3, 2, 1, 1]
    assert packed.sorted_indices.tolist() == [1, 2, 0]
    out, hidden = layer(packed)
    padded, got_lengths = rnn_utils.pad_packed_sequence(out)
    assert got_lengths.tolist() == lengths and padded.shape == (5, 3, 8)
    for b, n in enumerate(lengths):
        alone, alone_hidden = layer(x[:n, b])
        np.testing.assert_allclose(_numpy(padded[:n, b]), _numpy(alone), rtol=1e-12, atol=1e-14)
        np.testing.assert_array_equal(_numpy(padded[n:, b]), 0.0)
        np.testing.assert_allclose(
            _numpy(_final(kind, hidden)[:, b]), _numpy(_final(kind, alone_hidden)), rtol=1e-12
        )

    def run():
        out, hidden = layer(rnn_utils.pack_padded_sequence(x, lengths, enforce_sorted=False))
        return rnn_utils.pad_packed_sequence(out)[0].sum(-1).sum(0) + _final(kind, hidden).sum(
            (0, 2)
        )

    check_gradient(run, [x, *layer.parameters()])


@pytest.mark.parametrize("kind", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cells_step_as_the_layers_do(kind, check_gradient):
    tg.manual_seed(3)
    cell = getattr(nn, kind)(3, 4, dtype=tg.float64)
    layer = getattr(nn, kind.removesuffix("Cell"))(3, 4, dtype=tg.float64)
    layer.load_state_dict({f"{k}_l0": v for k, v in cell.state_dict().items()})
    x = tg.randn(2, 3, dtype=tg.float64, requires_grad=True)
    h = tg.randn(2, 4, dtype=tg.float64)
    hx = (h, h * 0.3) if kind == "LSTMCell" else h
    step = cell(x, hx)
    out, _ = layer(x[None], tuple(s[None] for s in hx) if kind == "LSTMCell" else h[None])
    np.testing.assert_allclose(_numpy(step[0] if kind == "LSTMCell" else step), _numpy(out[0]))
    unbatched = cell(x[0], tuple(s[0] for s in hx) if kind == "LSTMCell" else h[0])
    assert (unbatched[0] if kind == "LSTMCell" else unbatched).shape == (4,)
    first = (lambda r: r[0] + r[1]) if kind == "LSTMCell" else (lambda r: r)
    check_gradient(lambda: first(cell(x, hx)), [x, *cell.parameters()])


def test_dropout_between_layers_only_when_training():
    tg.manual_seed(4)
    layer = nn.LSTM(3, 4, num_layers=2, dropout=0.5)
    x = tg.randn(6, 2, 3)
    layer.eval()
    a, b = layer(x)[0], layer(x)[0]
    np.testing.assert_array_equal(_numpy(a), _numpy(b))
    layer.train()
    assert not np.allclose(_numpy(layer(x)[0]), _numpy(a))
    with pytest.warns(UserWarning, match="num_layers greater than 1"):
        nn.GRU(3, 4, dropout=0.2)


def test_pad_and_pack_sequence_round_trip():
    seqs = [tg.tensor(np.arange(n * 2.0).reshape(n, 2)) for n in (2, 4, 3)]
    padded = rnn_utils.pad_sequence(seqs, batch_first=True, padding_value=-1.0)
    assert padded.shape == (3, 4, 2)
    np.testing.assert_array_equal(_numpy(padded[0, 2:]), -1.0)
    left = rnn_utils.pad_sequence(seqs, padding_side="left")
    np.testing.assert_array_equal(_numpy(left[2:, 0]), _numpy(seqs[0]))
    packed = rnn_utils.pack_sequence(seqs, enforce_sorted=False)
    assert packed.batch_sizes.tolist() == [3, 3, 2, 1]
    for got, want in zip(rnn_utils.unpack_sequence(packed), seqs, strict=True):
        np.testing.assert_array_equal(_numpy(got), _numpy(want))
    padded, lengths = rnn_utils.pad_packed_sequence(packed, batch_first=True, total_length=6)
    assert padded.shape == (3, 6, 2) and lengths.tolist() == [2, 4, 3]


def test_errors_name_the_shapes():
    layer = nn.LSTM(4, 6, num_layers=2)
    x = tg.randn(5, 3, 4)
    with pytest.raises(
        RuntimeError, match=r"Expected hidden\[0\] size \(2, 3, 6\), got \[1, 3, 6\]"
    ):
        layer(x, (tg.zeros(1, 3, 6), tg.zeros(2, 3, 6)))
    with pytest.raises(
        RuntimeError, match=r"Expected hidden\[1\] size \(2, 3, 6\), got \[2, 2, 6\]"
    ):
        layer(x, (tg.zeros(2, 3, 6), tg.zeros(2, 2, 6)))
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(1, 3, 6\), got \[1, 3, 5\]"):
        nn.GRU(4, 6)(x, tg.zeros(1, 3, 5))
    with pytest.raises(
        RuntimeError, match="input.size\\(-1\\) must be equal to input_size. Expected 4, got 5"
    ):
        layer(tg.randn(5, 3, 5))
    with pytest.raises(ValueError, match="LSTM: Expected input to be 2D or 3D, got 4D input"):
        layer(tg.randn(1, 5, 3, 4))
    with pytest.raises(RuntimeError, match="For batched 3-D input, hx should also be 3-D"):
        nn.RNN(4, 6)(x, tg.zeros(3, 6))
    with pytest.raises(
        RuntimeError, match="must be sorted in decreasing order when `enforce_sorted` is True"
    ):
        rnn_utils.pack_padded_sequence(x, [2, 5, 1])
    with pytest.raises(
        ValueError,
        match=r"Expected `len\(lengths\)` to be equal to batch_size, but got 2 \(batch_size=3\)",
    ):
        rnn_utils.pack_padded_sequence(x, [5, 2])
    with pytest.raises(RuntimeError, match="Length of all samples has to be greater than 0"):
        rnn_utils.pack_padded_sequence(x, [5, 2, 0])
    with pytest.raises(RuntimeError, match="Input batch size 3 doesn't match hidden0 batch size 2"):
        nn.GRUCell(4, 6)(tg.randn(3, 4), tg.zeros(2, 6))
    with pytest.raises(RuntimeError, match="input has inconsistent input_size: got 5 expected 4"):
        nn.RNNCell(4, 6)(tg.randn(3, 5))
    with pytest.raises(NotImplementedError, match="proj_size"):
        nn.LSTM(4, 6, proj_size=2)
    with pytest.raises(ValueError, match="proj_size argument is only supported for LSTM"):
        nn.GRU(4, 6, proj_size=2)
    with pytest.raises(ValueError, match="Unknown nonlinearity 'gelu'"):
        nn.RNN(4, 6, nonlinearity="gelu")
    with pytest.raises(ValueError, match="dropout should be a number in range"):
        nn.LSTM(4, 6, dropout=1.5)


# --------------------------------------------------------------------------- against torch
def _ours_from(theirs, ours):
    ours.load_state_dict({k: tg.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})


@pytest.mark.parametrize("kind", LAYERS)
@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "-".join(c) or "default")
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_agrees_with_pytorch(torch, kind, config, dtype):
    torch.manual_seed(0)
    theirs = getattr(torch.nn, kind)(4, 6, **config).to(getattr(torch, dtype))
    ours = getattr(nn, kind)(4, 6, **config, dtype=dtype)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    _ours_from(theirs, ours)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 5, 4) if config.get("batch_first") else (5, 3, 4)).astype(dtype)
    states = rng.standard_normal(
        (2, config.get("num_layers", 1) * (1 + config.get("bidirectional", False)), 3, 6)
    ).astype(dtype)
    xt, xg = torch.tensor(x, requires_grad=True), tg.tensor(x, requires_grad=True)
    hx_t = (
        (torch.tensor(states[0]), torch.tensor(states[1]))
        if kind == "LSTM"
        else torch.tensor(states[0])
    )
    hx_g = (tg.tensor(states[0]), tg.tensor(states[1])) if kind == "LSTM" else tg.tensor(states[0])
    out_t, hidden_t = theirs(xt, hx_t)
    out_g, hidden_g = ours(xg, hx_g)
    tol = dict(rtol=1e-10, atol=1e-12) if dtype == "float64" else dict(rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(_numpy(out_g), _numpy(out_t), **tol)
    np.testing.assert_allclose(
        _numpy(_final(kind, hidden_g)), _numpy(_final(kind, hidden_t)), **tol
    )
    w = rng.standard_normal(out_t.shape).astype(dtype)
    ((out_t * torch.tensor(w)).sum() + (_final(kind, hidden_t) ** 2).sum()).backward()
    ((out_g * tg.tensor(w)).sum() + (_final(kind, hidden_g) ** 2).sum()).backward()
    np.testing.assert_allclose(xg.grad.numpy(), xt.grad.numpy(), **tol)
    for (name, p), q in zip(ours.named_parameters(), theirs.parameters(), strict=True):
        scale = max(1.0, float(np.abs(q.grad.numpy()).max()))
        np.testing.assert_allclose(
            p.grad.numpy() / scale, q.grad.numpy() / scale, **tol, err_msg=name
        )
    # and back: PyTorch loads ours
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("kind", LAYERS)
def test_packed_sequences_agree_with_pytorch(torch, kind):
    from torch.nn.utils import rnn as torch_rnn

    torch.manual_seed(1)
    theirs = getattr(torch.nn, kind)(3, 5, num_layers=2, bidirectional=True).double()
    ours = getattr(nn, kind)(3, 5, num_layers=2, bidirectional=True, dtype=tg.float64)
    _ours_from(theirs, ours)
    x = np.random.default_rng(1).standard_normal((6, 4, 3))
    lengths = [3, 6, 1, 4]
    xt, xg = torch.tensor(x, requires_grad=True), tg.tensor(x, requires_grad=True)
    pt = torch_rnn.pack_padded_sequence(xt, lengths, enforce_sorted=False)
    pg = rnn_utils.pack_padded_sequence(xg, lengths, enforce_sorted=False)
    np.testing.assert_array_equal(_numpy(pg.data), _numpy(pt.data))
    assert pg.batch_sizes.tolist() == pt.batch_sizes.tolist()
    assert pg.unsorted_indices.tolist() == pt.unsorted_indices.tolist()
    out_t, hidden_t = theirs(pt)
    out_g, hidden_g = ours(pg)
    padded_t, _ = torch_rnn.pad_packed_sequence(out_t, batch_first=True)
    padded_g, _ = rnn_utils.pad_packed_sequence(out_g, batch_first=True)
    np.testing.assert_allclose(_numpy(padded_g), _numpy(padded_t), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(
        _numpy(_final(kind, hidden_g)), _numpy(_final(kind, hidden_t)), rtol=1e-10
    )
    ((padded_t**2).sum() + _final(kind, hidden_t).sum()).backward()
    ((padded_g**2).sum() + _final(kind, hidden_g).sum()).backward()
    np.testing.assert_allclose(xg.grad.numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-12)
    for p, q in zip(ours.parameters(), theirs.parameters(), strict=True):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kind", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cells_agree_with_pytorch(torch, kind):
    theirs = getattr(torch.nn, kind)(3, 4).double()
    ours = getattr(nn, kind)(3, 4, dtype=tg.float64)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    _ours_from(theirs, ours)
    x = np.random.default_rng(2).standard_normal((2, 3))
    a, b = ours(tg.tensor(x)), theirs(torch.tensor(x))
    for got, want in zip(
        a if kind == "LSTMCell" else [a], b if kind == "LSTMCell" else [b], strict=True
    ):
        np.testing.assert_allclose(_numpy(got), _numpy(want), rtol=1e-12)
    assert repr(ours) == repr(theirs)


def test_pad_sequence_and_pack_sequence_agree_with_pytorch(torch):
    from torch.nn.utils import rnn as torch_rnn

    seqs = [np.random.default_rng(n).standard_normal((n, 2)) for n in (2, 4, 3)]
    for batch_first in (False, True):
        for side in ("right", "left"):
            a = rnn_utils.pad_sequence([tg.tensor(s) for s in seqs], batch_first, 9.0, side)
            b = torch_rnn.pad_sequence([torch.tensor(s) for s in seqs], batch_first, 9.0, side)
            np.testing.assert_array_equal(_numpy(a), _numpy(b))
    a = rnn_utils.pack_sequence([tg.tensor(s) for s in seqs], enforce_sorted=False)
    b = torch_rnn.pack_sequence([torch.tensor(s) for s in seqs], enforce_sorted=False)
    np.testing.assert_array_equal(_numpy(a.data), _numpy(b.data))
    assert a.sorted_indices.tolist() == b.sorted_indices.tolist()


@pytest.mark.parametrize("halving", [True, False], ids=["halving", "one_slice_per_step"])
@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN"])
def test_step_rows_by_halving_or_one_slice_per_step(monkeypatch, halving, mode):
    """The input projection is cut into steps by halving (``HALVING_SPLIT``) or one slice
    per step: the same pieces, outputs and gradients, packed (uneven steps) or not."""
    from tensorgrad.nn.modules import rnn as rnn_module

    offsets = [0, 3, 6, 8, 9, 10, 11]
    x = tg.tensor(np.arange(22.0).reshape(11, 2))
    pieces = rnn_module._step_rows(x, offsets)
    for t, piece in enumerate(pieces):
        np.testing.assert_array_equal(piece.numpy(), x.numpy()[offsets[t] : offsets[t + 1]])
    results = {}
    for flag in (halving, not halving):
        monkeypatch.setattr(rnn_module, "HALVING_SPLIT", flag)
        tg.manual_seed(5)
        layer = getattr(nn, mode)(3, 4, num_layers=2, bidirectional=True).double()
        seqs = [tg.tensor(np.random.default_rng(n).standard_normal((n, 3))) for n in (7, 5, 2)]
        packed = rnn_utils.pack_sequence(seqs)
        out, _ = layer(packed)
        out.data.square().sum().backward()
        results[flag] = (out.data.detach().numpy(), [p.grad.numpy() for p in layer.parameters()])
    np.testing.assert_allclose(results[True][0], results[False][0], rtol=1e-12, atol=1e-12)
    for a, b in zip(results[True][1], results[False][1], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
