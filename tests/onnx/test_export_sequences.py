"""tensorgrad.onnx.export of the sequence models: the GPTs (char_gpt's and minGPT's), the
recurrent layers as ONNX's own LSTM/GRU/RNN operators, a word language model, attention,
transposed convolution; every export checked by onnx.checker and run in ONNX Runtime against
tensorgrad (float32, 1e-5), for other batch sizes and sequence lengths where the axes are
dynamic; what has no mapping, or would freeze an input-dependent value, is refused."""

from __future__ import annotations

import io

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import nn
from tensorgrad.nn import functional as F
from tests import export_models as zoo

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from tensorgrad.onnx import OnnxExporterError, UnsupportedOperatorError, export  # noqa: E402

TOLERANCE = {"rtol": 1e-5, "atol": 1e-5}


def exported(model, args, **options) -> bytes:
    buffer = io.BytesIO()
    export(model, args, buffer, **options)
    data = buffer.getvalue()
    onnx.checker.check_model(onnx.load_from_string(data))
    return data


def run_onnx(data, feeds):
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def in_tensorgrad(model, *arrays):
    with tg.no_grad():
        out = model(*map(tg.tensor, arrays))
    outs = out if isinstance(out, tuple) else (out,)
    return [o.numpy() for o in outs]


def op_types(data: bytes) -> list[str]:
    return [n.op_type for n in onnx.load_from_string(data).graph.node]


# ----------------------------------------------------------------------------- GPTs
@pytest.mark.parametrize("name", ["CharGPT", "MinGPT"])
def test_gpts_give_tensorgrads_logits_for_any_batch_and_length(name):
    """char_gpt's GPT (is_causal attention) and minGPT's (a tril buffer cut to T and
    masked_fill), exported at the block size with batch and sequence length dynamic."""
    model = zoo.sequence_model(name)
    axes = {0: "batch", 1: "sequence"}
    data = exported(
        model,
        tg.tensor(zoo.tokens((2, 8), 11)),
        input_names=["idx"],
        output_names=["logits"],
        dynamic_axes={"idx": axes, "logits": axes},
    )
    vocab = 11 if name == "CharGPT" else 13
    for batch, length in ((2, 8), (1, 3), (5, 5), (3, 1)):
        idx = zoo.tokens((batch, length), 11, seed=batch)
        (logits,) = run_onnx(data, {"idx": idx})
        (want,) = in_tensorgrad(model, idx)
        assert logits.shape == want.shape == (batch, length, vocab)
        np.testing.assert_allclose(logits, want, **TOLERANCE)
    proto = onnx.load_from_string(data)
    stored = {init.name for init in proto.graph.initializer}
    tied = "transformer.wte.weight" if name == "MinGPT" else "wte.weight"
    assert tied in stored  # the tied head and embedding: one weight, under its first name
    assert sum(list(init.dims) == [vocab, 16] for init in proto.graph.initializer) == 1
    assert "Gather" in op_types(data)  # the embedding lookups read the graph's indices


def test_a_gpt_with_a_fixed_length_and_what_a_length_it_cannot_follow_gives():
    model = zoo.sequence_model("MinGPT")
    data = exported(model, tg.tensor(zoo.tokens((1, 6), 11)))  # nothing dynamic
    idx = zoo.tokens((1, 6), 11, seed=3)
    np.testing.assert_allclose(run_onnx(data, {"input": idx})[0], in_tensorgrad(model, idx)[0],
                               **TOLERANCE)  # fmt: skip

    class Scrambled(nn.Module):  # a mask made with .numpy() from the length: not followed
        def __init__(self) -> None:
            super().__init__()
            self.proj = nn.Linear(4, 4)

        def forward(self, x):
            t = x.shape[1]
            mask = tg.tensor(np.random.default_rng(t).random((t, 4)) > 0.5)
            return self.proj(x).masked_fill(mask, 0.0)

    with pytest.raises(OnnxExporterError, match=r"'where' \(Where\).*other input values and sizes"):
        exported(Scrambled(), tg.randn(2, 5, 4), dynamic_axes={"input": {1: "t"}})


# ----------------------------------------------------------------------------- recurrent layers
RECURRENT = {
    "LSTM": lambda **kw: nn.LSTM(5, 6, num_layers=2, **kw),
    "GRU": lambda **kw: nn.GRU(5, 6, num_layers=2, **kw),
    "RNN_TANH": lambda **kw: nn.RNN(5, 6, num_layers=2, **kw),
    "RNN_RELU": lambda **kw: nn.RNN(5, 6, num_layers=2, nonlinearity="relu", **kw),
}


class Wrapped(nn.Module):
    """A recurrent layer returning all it computes, with or without initial states."""

    def __init__(self, layer: nn.Module, with_states: bool) -> None:
        super().__init__()
        self.layer, self.with_states = layer, with_states

    def forward(self, x, *states):
        hx = None
        if self.with_states:
            hx = tuple(states) if isinstance(self.layer, nn.LSTM) else states[0]
        output, finals = self.layer(x, hx)
        return (output, *finals) if isinstance(finals, tuple) else (output, finals)


def recurrent_case(kind, batch_first, bidirectional, with_states, steps, batch, seed=0):
    rng = np.random.default_rng(seed)
    shape = (batch, steps, 5) if batch_first else (steps, batch, 5)
    x = rng.standard_normal(shape).astype(np.float32)
    layers = 2 * (2 if bidirectional else 1)
    count = 2 if kind == "LSTM" else 1
    states = [rng.standard_normal((layers, batch, 6)).astype(np.float32) for _ in range(count)]
    return [x, *states] if with_states else [x]


@pytest.mark.parametrize("kind", list(RECURRENT))
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("with_states", [True, False])
def test_recurrent_layers_become_onnx_operators(kind, batch_first, bidirectional, with_states):
    tg.manual_seed(1)
    layer = RECURRENT[kind](batch_first=batch_first, bidirectional=bidirectional, bias=kind != "GRU"
                            or not bidirectional)  # fmt: skip
    model = Wrapped(layer, with_states).eval()
    arrays = recurrent_case(kind, batch_first, bidirectional, with_states, 4, 3)
    time_axis, batch_axis = (1, 0) if batch_first else (0, 1)
    in_names = ["x", "h0", "c0"][: len(arrays)]
    out_names = ["y", "h_n", "c_n"][: 3 if kind == "LSTM" else 2]
    dynamic = {"x": {time_axis: "time", batch_axis: "batch"}, "y": {time_axis: "time",
               batch_axis: "batch"}}  # fmt: skip
    dynamic |= {n: {1: "batch"} for n in in_names[1:] + out_names[1:]}
    data = exported(model, tuple(map(tg.tensor, arrays)), input_names=in_names,
                    output_names=out_names, dynamic_axes=dynamic)  # fmt: skip
    onnx_type = "LSTM" if kind == "LSTM" else "GRU" if kind == "GRU" else "RNN"
    types = op_types(data)
    assert types.count(onnx_type) == 2  # one node per layer, no unrolled time loop
    assert "Sigmoid" not in types and "Tanh" not in types
    for steps, batch in ((4, 3), (7, 2), (1, 1)):
        arrays = recurrent_case(kind, batch_first, bidirectional, with_states, steps, batch, steps)
        got = run_onnx(data, dict(zip(in_names, arrays)))
        want = in_tensorgrad(model, *arrays)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, **TOLERANCE)


def test_unbatched_sequences_and_the_layers_parameters_under_their_names():
    tg.manual_seed(2)
    model = Wrapped(nn.LSTM(5, 6, num_layers=2, bidirectional=True), with_states=False).eval()
    x = np.random.default_rng(3).standard_normal((4, 5)).astype(np.float32)  # (T, input)
    data = exported(model, tg.tensor(x))
    for got, want in zip(run_onnx(data, {"input": x}), in_tensorgrad(model, x)):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, **TOLERANCE)
    stored = {init.name for init in onnx.load_from_string(data).graph.initializer}
    assert {"layer.weight_ih_l0", "layer.weight_hh_l1_reverse", "layer.bias_hh_l1"} <= stored
    # the parameters as graph inputs: the gate reordering is in the graph
    data = exported(model, tg.tensor(x), export_params=False)
    feeds = {"input": x} | {n: p.numpy() for n, p in model.named_parameters()}
    for got, want in zip(run_onnx(data, feeds), in_tensorgrad(model, x)):
        np.testing.assert_allclose(got, want, **TOLERANCE)


def test_a_word_language_model_embedding_lstm_linear():
    model = zoo.sequence_model("WordLM")
    rng = np.random.default_rng(4)

    def case(steps, batch):
        states = rng.standard_normal((2, 2, batch, 12)).astype(np.float32)
        return [zoo.tokens((steps, batch), 17, steps), states[0], states[1]]

    names = ["tokens", "h0", "c0"]
    dynamic = {"tokens": {0: "time", 1: "batch"}, "h0": {1: "batch"}, "c0": {1: "batch"},
               "log_probs": {0: "rows"}, "h_n": {1: "batch"}, "c_n": {1: "batch"}}  # fmt: skip
    data = exported(model, tuple(map(tg.tensor, case(5, 3))), input_names=names,
                    output_names=["log_probs", "h_n", "c_n"], dynamic_axes=dynamic)  # fmt: skip
    assert op_types(data).count("LSTM") == 2
    for steps, batch in ((5, 3), (9, 2), (1, 4)):
        arrays = case(steps, batch)
        for got, want in zip(
            run_onnx(data, dict(zip(names, arrays))), in_tensorgrad(model, *arrays)
        ):
            np.testing.assert_allclose(got, want, **TOLERANCE)


class CellLoop(nn.Module):
    """The one-step cells in a loop of the program's own (unrolled in the file)."""

    def __init__(self) -> None:
        super().__init__()
        self.lstm, self.gru, self.rnn = nn.LSTMCell(3, 4), nn.GRUCell(4, 4), nn.RNNCell(4, 4)

    def forward(self, x):
        h = c = g = r = tg.zeros(x.shape[1], 4)
        outs = []
        for t in range(x.shape[0]):
            h, c = self.lstm(x[t], (h, c))
            g = self.gru(h, g)
            r = self.rnn(g, r)
            outs.append(r)
        return tg.stack(outs)


def test_the_fused_cells_in_a_loop():
    """Unrolled over the (fixed) time steps; the zeros of the batch's size that start the
    states follow a dynamic batch (ConstantOfShape)."""
    tg.manual_seed(5)
    model = CellLoop().eval()
    x = np.random.default_rng(5).standard_normal((3, 2, 3)).astype(np.float32)
    data = exported(model, tg.tensor(x), dynamic_axes={"input": {1: "b"}, "output": {1: "b"}})
    assert "ConstantOfShape" in op_types(data)
    for batch in (2, 5):
        xb = np.random.default_rng(batch).standard_normal((3, batch, 3)).astype(np.float32)
        (got,) = run_onnx(data, {"input": xb})
        np.testing.assert_allclose(got, in_tensorgrad(model, xb)[0], **TOLERANCE)


# ----------------------------------------------------------------------------- attention
@pytest.mark.parametrize("causal", ["is_causal", "float_mask", "bool_mask", "none"])
def test_attention_and_the_transformer_encoder(causal):
    tg.manual_seed(6)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1, batch_first=True, norm_first=True,
                                       activation="gelu")  # fmt: skip
    encoder = nn.TransformerEncoder(layer, 2).eval()
    mask = nn.Transformer.generate_square_subsequent_mask(5)

    def model(x):
        if causal == "is_causal":
            return encoder(x, mask=mask, is_causal=True)
        if causal == "float_mask":
            return encoder(x, mask=mask * 0.5)  # a finite additive mask
        if causal == "bool_mask":
            return encoder(x, mask=tg.tensor(np.triu(np.ones((5, 5), bool), 1)))
        return encoder(x)

    x = np.random.default_rng(6).standard_normal((3, 5, 8)).astype(np.float32)
    data = exported(model, tg.tensor(x), dynamic_axes={"input": {0: "b"}, "output": {0: "b"}})
    for batch in (3, 1):
        xb = x[:batch] * 1.5
        (got,) = run_onnx(data, {"input": xb})
        np.testing.assert_allclose(got, in_tensorgrad(model, xb)[0], **TOLERANCE)


def test_multihead_attention_with_and_without_weights():
    tg.manual_seed(7)
    mha = nn.MultiheadAttention(8, 2, batch_first=True, kdim=6, vdim=5).eval()

    def model(q, k, v):
        out, weights = mha(q, k, v, need_weights=True)
        plain, _ = mha(q, k, v, need_weights=False)
        return out, weights, plain

    rng = np.random.default_rng(7)
    arrays = [rng.standard_normal((2, 4, d)).astype(np.float32) for d in (8, 6, 5)]
    data = exported(model, tuple(map(tg.tensor, arrays)), input_names=["q", "k", "v"])
    got = run_onnx(data, dict(zip(["q", "k", "v"], arrays)))
    for g, w in zip(got, in_tensorgrad(model, *arrays)):
        np.testing.assert_allclose(g, w, **TOLERANCE)


# ----------------------------------------------------------------------------- ConvTranspose2d
@pytest.mark.parametrize(
    "options",
    [
        {},
        {"stride": 2, "padding": 1, "output_padding": 1},
        {"stride": (2, 3), "padding": (0, 2), "output_padding": (1, 0), "dilation": (1, 2)},
        {"groups": 2, "bias": False, "dilation": 2},
        {"stride": 3, "padding": 1, "output_padding": 2, "groups": 4},
    ],
)
def test_conv_transpose2d_to_onnx_conv_transpose(options):
    tg.manual_seed(8)
    model = nn.Sequential(nn.ConvTranspose2d(4, 8, 3, **options), nn.ReLU()).eval()
    x = np.random.default_rng(8).standard_normal((2, 4, 5, 6)).astype(np.float32)
    data = exported(model, tg.tensor(x), dynamic_axes={"input": [0], "output": [0]})
    assert "ConvTranspose" in op_types(data)
    for batch in (2, 3):
        xb = np.random.default_rng(batch).standard_normal((batch, 4, 5, 6)).astype(np.float32)
        (got,) = run_onnx(data, {"input": xb})
        want = in_tensorgrad(model, xb)[0]
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, **TOLERANCE)


# ----------------------------------------------------------------------------- refusals
class Atan(nn.Module):
    def forward(self, x):
        return x.atan()


def test_what_has_no_mapping_is_refused_by_op_and_module(tmp_path):
    path = tmp_path / "m.onnx"
    cases = [
        (nn.Sequential(nn.Linear(3, 3), Atan()), tg.randn(2, 3),
         r"'atan' \(Atan\), run by 1 \(Atan\), has no ONNX mapping"),
        (nn.Sequential(nn.Embedding(5, 3, max_norm=1.0)), tg.tensor([[1, 2]]),
         r"0 \(Embedding\) has max_norm"),
    ]  # fmt: skip
    for model, x, message in cases:
        with pytest.raises(UnsupportedOperatorError, match=message):
            export(model.eval(), x, path)
    with pytest.raises(UnsupportedOperatorError, match=r"lstm \(LSTM\) was given a Packed"):
        export(PackedLSTM(nn.LSTM(3, 4)), tg.randn(4, 2, 3), path)
    with pytest.raises(UnsupportedOperatorError, match=r"scaled_dot_product_attention.*dropout_p"):
        export(lambda q: F.scaled_dot_product_attention(q, q, q, dropout_p=0.5), tg.randn(2, 3, 4),
               path)  # fmt: skip
    for op_name, function in (
        ("prod", lambda t: t.prod(1)),
        ("cumprod", lambda t: t.cumprod(1)),
        ("unfold", lambda t: F.unfold(t[None, None], 2)),
    ):
        with pytest.raises(
            UnsupportedOperatorError, match=rf"the op '{op_name}' .*no ONNX mapping"
        ):
            export(function, tg.randn(3, 4), path)
    trained = nn.LSTM(3, 4, num_layers=2, dropout=0.5)  # training mode
    with pytest.raises(UnsupportedOperatorError, match=r"in training mode with dropout"):
        export(trained, tg.randn(4, 2, 3), path)
    assert not path.exists()


class PackedLSTM(nn.Module):
    def __init__(self, lstm: nn.Module) -> None:
        super().__init__()
        self.lstm = lstm

    def forward(self, x):
        steps, batch = x.shape[:2]  # time-major rows, as a PackedSequence holds them
        packed = nn.utils.rnn.PackedSequence(
            x.reshape(steps * batch, -1), tg.tensor([batch] * steps)
        )
        return self.lstm(packed)[0].data


def test_constants_that_came_from_the_inputs_are_refused(tmp_path):
    """The export runs the model again on other values: what changed is not frozen."""
    path = tmp_path / "m.onnx"
    with pytest.raises(OnnxExporterError, match=r"'add' \(Add\) holds a constant \(input 1\)"):
        export(lambda t: t + tg.tensor(t.numpy() * 2), tg.randn(2, 3), path)  # via .numpy()
    with pytest.raises(OnnxExporterError, match="random"):
        export(lambda t: t + tg.randn(2, 3), tg.randn(2, 3), path)
    mask = nn.Linear(3, 3)
    with pytest.raises(OnnxExporterError, match=r"'where' \(Where\)"):
        export(lambda t: mask(t.float()).masked_fill(t == 2, 0.0), tg.tensor([[1, 2, 3]]), path)
    with pytest.raises(OnnxExporterError, match="branches on the inputs' values"):
        export(lambda t: t * 2 if t[0, 0].item() > t[0, 1].item() else t - 1,
               tg.tensor([[3, 1, 2]]), path)  # fmt: skip
    assert not path.exists()
    # a lookup of indices computed from the input: recorded, so exported as computed
    model = Shifted().eval()
    data = exported(model, tg.tensor([[0, 1, 2, 3]]))
    idx = np.array([[4, 3, 2, 0]])
    (got,) = run_onnx(data, {"input": idx})
    np.testing.assert_allclose(got, in_tensorgrad(model, idx)[0])


class Shifted(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(6, 2)

    def forward(self, idx):
        return self.emb(idx[:, 1:] + 1)


@pytest.mark.parametrize("name", ["CharGPT", "WordLM"])
def test_the_oldest_opset_holds_the_sequence_models(name):
    model = zoo.sequence_model(name)
    arrays = zoo.sequence_inputs(name, 2)
    data = exported(model, tuple(map(tg.tensor, arrays)), opset_version=13)
    assert onnx.load_from_string(data).opset_import[0].version == 13
    feeds = {i.name: a for i, a in zip(onnx.load_from_string(data).graph.input, arrays)}
    for got, want in zip(run_onnx(data, feeds), in_tensorgrad(model, *arrays)):
        np.testing.assert_allclose(got, want, **TOLERANCE)


def test_the_whole_transformer_with_dynamic_batch_and_lengths():
    tg.manual_seed(9)
    transformer = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=2,
                                 dim_feedforward=16, batch_first=True).eval()  # fmt: skip

    def model(src, tgt):
        mask = nn.Transformer.generate_square_subsequent_mask(tgt.shape[1])
        return transformer(src, tgt, tgt_mask=mask, tgt_is_causal=True)

    rng = np.random.default_rng(9)
    src, tgt = (rng.standard_normal((2, n, 8)).astype(np.float32) for n in (6, 5))
    dynamic = {"src": {0: "b", 1: "s"}, "tgt": {0: "b", 1: "t"}, "output": {0: "b", 1: "t"}}
    data = exported(model, (tg.tensor(src), tg.tensor(tgt)), input_names=["src", "tgt"],
                    dynamic_axes=dynamic)  # fmt: skip
    for batch, source, target in ((2, 6, 5), (3, 4, 7), (1, 2, 1)):
        x, y = (rng.standard_normal((batch, n, 8)).astype(np.float32) for n in (source, target))
        (got,) = run_onnx(data, {"src": x, "tgt": y})
        np.testing.assert_allclose(got, in_tensorgrad(model, x, y)[0], **TOLERANCE)


def test_a_mask_table_cut_to_the_length_takes_lengths_up_to_the_exported_one():
    """A constant that, at the smaller length, is the corner of itself (a causal mask made
    from the length) is kept at the exported size and cut in the graph: shorter sequences
    work, longer ones fail in ONNX Runtime rather than give wrong numbers."""
    tg.manual_seed(10)
    proj = nn.Linear(4, 4)

    def model(x):
        mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1])
        q = proj(x)
        return F.scaled_dot_product_attention(q, q, q, attn_mask=mask)

    x = np.random.default_rng(10).standard_normal((2, 6, 4)).astype(np.float32)
    axes = {0: "b", 1: "t"}
    data = exported(model, tg.tensor(x), dynamic_axes={"input": axes, "output": axes})
    for length in (6, 3):
        xs = x[:, :length] * 0.7
        (got,) = run_onnx(data, {"input": xs})
        np.testing.assert_allclose(got, in_tensorgrad(model, xs)[0], **TOLERANCE)
    longer = np.concatenate([x, x], axis=1)
    with pytest.raises(Exception, match="(?i)broadcast|shape|dimension"):
        run_onnx(data, {"input": longer})
