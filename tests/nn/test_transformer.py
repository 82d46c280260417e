"""``F.scaled_dot_product_attention``, ``nn.MultiheadAttention`` and the Transformer modules:
shapes, masks, parameter names, gradients (directional checks) and errors; against PyTorch,
with state dicts loaded both ways, where it is installed."""

from __future__ import annotations

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import nn
from tensorgrad.nn import functional as F


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def _numpy(t):
    return t.detach().numpy()


def _reference_attention(q, k, v, allowed=None, scale=None):
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    scores = q @ np.swapaxes(k, -1, -2) * scale
    if allowed is not None:
        scores = np.where(allowed, scores, -np.inf)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


# --------------------------------------------------------------------------- without torch
def test_sdpa_matches_numpy_with_masks_and_causal():
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 3, n, 4)) for n in (5, 6, 6))
    allowed = rng.random((5, 6)) > 0.3
    allowed[:, 0] = True
    out = F.scaled_dot_product_attention(
        tg.tensor(q), tg.tensor(k), tg.tensor(v), tg.tensor(allowed)
    )
    np.testing.assert_allclose(_numpy(out), _reference_attention(q, k, v, allowed), rtol=1e-12)
    additive = np.where(allowed, 0.0, -np.inf)
    out = F.scaled_dot_product_attention(*map(tg.tensor, (q, k, v, additive)), scale=0.3)
    np.testing.assert_allclose(_numpy(out), _reference_attention(q, k, v, allowed, 0.3), rtol=1e-12)
    causal = F.scaled_dot_product_attention(*map(tg.tensor, (q, k, v)), is_causal=True)
    np.testing.assert_allclose(
        _numpy(causal), _reference_attention(q, k, v, np.tri(5, 6, dtype=bool)), rtol=1e-12
    )


def test_sdpa_keeps_only_the_probabilities_for_backward():
    q = tg.randn(2, 4, 8, 16, requires_grad=True)
    out = F.scaled_dot_product_attention(q, q, q, is_causal=True)
    op = out.grad_fn.op
    assert type(op).__name__ == "ScaledDotProductAttention"
    numerators, sums = op.saved  # P's numerators and their row sums: one array of L × S
    assert numerators.shape == (2, 4, 8, 8) and sums.shape == (2, 4, 8)


def test_sdpa_gradients_and_dropout(check_gradient):
    rng = np.random.default_rng(1)
    q, k, v = (tg.tensor(rng.standard_normal((2, n, 3)), requires_grad=True) for n in (4, 5, 5))
    mask = tg.tensor(rng.standard_normal((4, 5)), requires_grad=True)
    check_gradient(lambda: F.scaled_dot_product_attention(q, k, v, mask), [q, k, v, mask])
    check_gradient(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True), [q, k, v])
    tg.manual_seed(0)
    dropped = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    assert dropped.shape == (2, 4, 3)
    assert not np.allclose(_numpy(dropped), _numpy(F.scaled_dot_product_attention(q, k, v)))


def test_sdpa_errors():
    q = tg.randn(2, 3, 4)
    with pytest.raises(
        RuntimeError,
        match=r"attn_mask of shape \(5, 3\) does not broadcast to the attention scores' "
        r"shape \(2, 3, 3\)",
    ):
        F.scaled_dot_product_attention(q, q, q, tg.zeros(5, 3))
    with pytest.raises(RuntimeError, match="attn_mask should not be set when is_causal=True"):
        F.scaled_dot_product_attention(q, q, q, tg.zeros(3, 3), is_causal=True)
    with pytest.raises(RuntimeError, match=r"got \(2, 3, 4\), \(2, 3, 5\) and \(2, 3, 4\)"):
        F.scaled_dot_product_attention(q, tg.randn(2, 3, 5), q)


def test_multihead_attention_parameters_shapes_and_masks(check_gradient):
    tg.manual_seed(0)
    mha = nn.MultiheadAttention(8, 2, dtype=tg.float64)
    assert list(mha.state_dict()) == [
        "in_proj_weight",
        "in_proj_bias",
        "out_proj.weight",
        "out_proj.bias",
    ]
    assert np.all(mha.in_proj_bias.numpy() == 0)
    x = tg.randn(5, 3, 8, dtype=tg.float64, requires_grad=True)
    out, weights = mha(x, x, x)
    assert out.shape == (5, 3, 8) and weights.shape == (3, 5, 5)
    np.testing.assert_allclose(_numpy(weights).sum(-1), 1.0)
    padding = tg.tensor(np.array([[False] * 4 + [True]] * 3))
    _, weights = mha(x, x, x, key_padding_mask=padding, average_attn_weights=False)
    assert weights.shape == (3, 2, 5, 5) and np.all(_numpy(weights)[..., 4] == 0)
    fast, none = mha(x, x, x, key_padding_mask=padding, need_weights=False)
    slow, _ = mha(x, x, x, key_padding_mask=padding)
    assert none is None
    np.testing.assert_allclose(_numpy(fast), _numpy(slow), rtol=1e-12)
    cross = nn.MultiheadAttention(8, 2, kdim=3, vdim=5, batch_first=True, dtype=tg.float64)
    assert "q_proj_weight" in dict(cross.named_parameters()) and cross.in_proj_weight is None
    out, _ = cross(
        tg.randn(3, 4, 8, dtype=tg.float64),
        tg.randn(3, 6, 3, dtype=tg.float64),
        tg.randn(3, 6, 5, dtype=tg.float64),
    )
    assert out.shape == (3, 4, 8)
    mask = nn.Transformer.generate_square_subsequent_mask(5, dtype=tg.float64)
    check_gradient(
        lambda: mha(x, x, x, attn_mask=mask, need_weights=False)[0], [x, *mha.parameters()]
    )


def test_multihead_attention_errors():
    mha = nn.MultiheadAttention(8, 2)
    x = tg.randn(5, 3, 8)
    with pytest.raises(
        RuntimeError, match=r"The shape of the 2D attn_mask is \(4, 5\), but should be \(5, 5\)"
    ):
        mha(x, x, x, attn_mask=tg.zeros(4, 5))
    with pytest.raises(
        RuntimeError,
        match=r"The shape of the 3D attn_mask is \(3, 5, 5\), but should be \(6, 5, 5\)",
    ):
        mha(x, x, x, attn_mask=tg.zeros(3, 5, 5))
    with pytest.raises(AssertionError, match=r"expected key_padding_mask of shape \(3, 5\)"):
        mha(x, x, x, key_padding_mask=tg.zeros(5, 3, dtype=tg.bool))
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        mha(x, x, x, is_causal=True)
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(8, 3)


def test_multihead_attention_bias_kv_and_zero_attn(check_gradient):
    """``add_bias_kv`` appends a learnt key and value (``bias_k``/``bias_v``, (1, 1, E)) and
    ``add_zero_attn`` a zero one after them: the weights gain a column each, which a key
    padding mask does not hide, and the zero key scores exactly 0."""
    tg.manual_seed(2)
    mha = nn.MultiheadAttention(8, 2, add_bias_kv=True, add_zero_attn=True, dtype=tg.float64)
    assert list(mha.state_dict()) == [
        "in_proj_weight",
        "in_proj_bias",
        "bias_k",
        "bias_v",
        "out_proj.weight",
        "out_proj.bias",
    ]
    assert mha.bias_k.shape == (1, 1, 8) and mha.add_zero_attn
    assert float(mha.bias_k.abs().sum()) > 0  # xavier_normal_, not left at zero
    assert type(mha.out_proj).__name__ == "NonDynamicallyQuantizableLinear"
    assert isinstance(mha.out_proj, nn.Linear)
    x = tg.randn(5, 3, 8, dtype=tg.float64, requires_grad=True)
    padding = tg.tensor(np.array([[False] * 4 + [True]] * 3))
    out, weights = mha(x, x, x, key_padding_mask=padding, average_attn_weights=False)
    assert out.shape == (5, 3, 8) and weights.shape == (3, 2, 5, 7)
    w = _numpy(weights)
    np.testing.assert_allclose(w.sum(-1), 1.0)
    assert np.all(w[..., 4] == 0) and np.all(w[..., 5:] > 0)
    # the zero key's score is 0, so its weight over the first key's is exp(-score of key 0)
    q = _numpy(F.linear(x, mha.in_proj_weight[:8], mha.in_proj_bias[:8]))
    k0 = _numpy(F.linear(x, mha.in_proj_weight[8:16], mha.in_proj_bias[8:16]))[0]
    q, k0 = q.reshape(5, 3, 2, 4), k0.reshape(3, 2, 4)
    score0 = np.einsum("lbhd,bhd->bhl", q, k0) / 2.0
    np.testing.assert_allclose(w[..., 6] / w[..., 0], np.exp(-score0), rtol=1e-10)
    fast, _ = mha(x, x, x, key_padding_mask=padding, need_weights=False)
    np.testing.assert_allclose(_numpy(fast), _numpy(out), rtol=1e-12)
    mask = nn.Transformer.generate_square_subsequent_mask(5, dtype=tg.float64)
    check_gradient(lambda: mha(x, x, x, attn_mask=mask)[0], [x, *mha.parameters()])
    plain = nn.MultiheadAttention(8, 2, add_bias_kv=True, bias=False)
    assert plain.in_proj_bias is None and plain.bias_k is not None
    with pytest.raises(RuntimeError, match="missing keys: .bias_v"):
        plain.load_state_dict({k: v for k, v in plain.state_dict().items() if k != "bias_v"})


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_shapes_names_and_gradients(norm_first, check_gradient):
    tg.manual_seed(1)
    model = nn.Transformer(
        8, 2, 1, 1, 16, dropout=0.0, norm_first=norm_first, activation="gelu", dtype=tg.float64
    )
    names = list(model.state_dict())
    assert "encoder.layers.0.self_attn.in_proj_weight" in names
    assert (
        "decoder.layers.0.multihead_attn.out_proj.bias" in names and "decoder.norm.weight" in names
    )
    src = tg.randn(6, 2, 8, dtype=tg.float64, requires_grad=True)
    tgt = tg.randn(4, 2, 8, dtype=tg.float64, requires_grad=True)
    mask = nn.Transformer.generate_square_subsequent_mask(4, dtype=tg.float64)
    assert model(src, tgt, tgt_mask=mask).shape == (4, 2, 8)
    check_gradient(lambda: model(src, tgt, tgt_mask=mask), [src, tgt, *model.parameters()])


def test_encoder_with_a_callable_activation_and_causal_mask():
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation=F.silu, batch_first=True)
    encoder = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(8))
    assert encoder.layers[0] is not encoder.layers[1]
    x = tg.randn(3, 5, 8)
    mask = nn.Transformer.generate_square_subsequent_mask(5)
    causal = encoder(x, mask=mask)
    # position t sees only positions up to t: changing the last one leaves the others alone
    x2 = x.detach().clone()
    x2.numpy()[:, -1] += 1.0
    np.testing.assert_allclose(
        _numpy(encoder(x2, mask=mask))[:, :-1], _numpy(causal)[:, :-1], rtol=1e-5, atol=1e-6
    )
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")
    with pytest.raises(
        RuntimeError, match="the feature number of src and tgt must be equal to d_model"
    ):
        nn.Transformer(8, 2, 1, 1, 16)(tg.randn(3, 2, 8), tg.randn(3, 2, 6))


# --------------------------------------------------------------------------- against torch
def _ours_from(theirs, ours):
    state = {k: tg.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()}
    assert list(state) == list(ours.state_dict())
    ours.load_state_dict(state)


@pytest.mark.parametrize("need_weights", [False, True])
def test_multihead_attention_bias_kv_loads_both_ways_and_the_causal_hint(torch, need_weights):
    """Our state dict (``bias_k``/``bias_v`` included) loads into PyTorch's module and gives
    its outputs; with the ``is_causal`` hint PyTorch's fused path (``need_weights=False``)
    masks the appended keys too, its weights path does not, and so does tensorgrad."""
    tg.manual_seed(3)
    ours = nn.MultiheadAttention(8, 2, add_bias_kv=True, add_zero_attn=True, dtype=tg.float64)
    theirs = torch.nn.MultiheadAttention(8, 2, add_bias_kv=True, add_zero_attn=True)
    theirs = theirs.to(torch.float64)
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    x = np.random.default_rng(5).standard_normal((4, 2, 8))
    mask_g = nn.Transformer.generate_square_subsequent_mask(4, dtype=tg.float64)
    mask_t = torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64)
    out_g, _ = ours(
        *[tg.tensor(x)] * 3, attn_mask=mask_g, is_causal=True, need_weights=need_weights
    )
    xt = torch.tensor(x)
    out_t, _ = theirs(xt, xt, xt, attn_mask=mask_t, is_causal=True, need_weights=need_weights)
    np.testing.assert_allclose(_numpy(out_g), _numpy(out_t), rtol=1e-10, atol=1e-12)


def _assert_grads(ours, theirs, **tol):
    for (name, p), q in zip(ours.named_parameters(), theirs.parameters(), strict=True):
        scale = max(1.0, float(np.abs(q.grad.numpy()).max()))
        np.testing.assert_allclose(
            p.grad.numpy() / scale, q.grad.numpy() / scale, **tol, err_msg=name
        )


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_sdpa_agrees_with_pytorch(torch, dtype):
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal((2, 3, n, 4)).astype(dtype) for n in (5, 6, 6))
    bool_mask = rng.random((2, 1, 5, 6)) > 0.3
    bool_mask[..., 0] = True
    float_mask = rng.standard_normal((5, 6)).astype(dtype)
    tol = dict(rtol=1e-10, atol=1e-12) if dtype == "float64" else dict(rtol=1e-4, atol=1e-5)
    for options in (
        {},
        {"is_causal": True},
        {"scale": 0.4},
        {"attn_mask": bool_mask},
        {"attn_mask": float_mask},
    ):
        ours = [tg.tensor(a, requires_grad=True) for a in (q, k, v)]
        theirs = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
        extra_g = {n: tg.tensor(a) if isinstance(a, np.ndarray) else a for n, a in options.items()}
        extra_t = {
            n: torch.tensor(a) if isinstance(a, np.ndarray) else a for n, a in options.items()
        }
        a = F.scaled_dot_product_attention(*ours, **extra_g)
        b = torch.nn.functional.scaled_dot_product_attention(*theirs, **extra_t)
        np.testing.assert_allclose(_numpy(a), _numpy(b), **tol)
        w = rng.standard_normal(a.shape).astype(dtype)
        (a * tg.tensor(w)).sum().backward()
        (b * torch.tensor(w)).sum().backward()
        for x, y in zip(ours, theirs, strict=True):
            np.testing.assert_allclose(x.grad.numpy(), y.grad.numpy(), **tol)


@pytest.mark.parametrize(
    "config, call",
    [
        ({}, {}),
        ({"batch_first": True}, {"need_weights": False}),
        ({"kdim": 3, "vdim": 5}, {"average_attn_weights": False}),
        ({"bias": False}, {}),
        ({"add_bias_kv": True}, {}),
        ({"add_bias_kv": True, "kdim": 3, "vdim": 5}, {"need_weights": False}),
        ({"add_zero_attn": True, "batch_first": True}, {"average_attn_weights": False}),
        ({"add_bias_kv": True, "add_zero_attn": True, "bias": False}, {"need_weights": False}),
    ],
)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_multihead_attention_agrees_with_pytorch(torch, config, call, dtype):
    torch.manual_seed(0)
    theirs = torch.nn.MultiheadAttention(8, 2, **config).to(getattr(torch, dtype))
    ours = nn.MultiheadAttention(8, 2, **config, dtype=dtype)
    _ours_from(theirs, ours)
    rng = np.random.default_rng(3)
    length, source, batch = 4, 6, 3
    shape = (
        (lambda n, e: (batch, n, e)) if config.get("batch_first") else (lambda n, e: (n, batch, e))
    )
    q = rng.standard_normal(shape(length, 8)).astype(dtype)
    k = rng.standard_normal(shape(source, config.get("kdim", 8))).astype(dtype)
    v = rng.standard_normal(shape(source, config.get("vdim", 8))).astype(dtype)
    attn_mask = rng.random((length, source)) > 0.7
    padding = np.zeros((batch, source), bool)
    padding[0, -2:] = True
    out_t, w_t = theirs(
        *map(torch.tensor, (q, k, v)),
        key_padding_mask=torch.tensor(padding),
        attn_mask=torch.tensor(attn_mask),
        **call,
    )
    out_g, w_g = ours(
        *map(tg.tensor, (q, k, v)),
        key_padding_mask=tg.tensor(padding),
        attn_mask=tg.tensor(attn_mask),
        **call,
    )
    tol = dict(rtol=1e-10, atol=1e-12) if dtype == "float64" else dict(rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(_numpy(out_g), _numpy(out_t), **tol)
    assert (w_g is None) == (w_t is None)
    if w_t is not None:
        np.testing.assert_allclose(_numpy(w_g), _numpy(w_t), **tol)
    (out_t**2).sum().backward()
    (out_g**2).sum().backward()
    _assert_grads(ours, theirs, **tol)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_transformer_agrees_with_pytorch(torch, norm_first, activation, dtype):
    torch.manual_seed(1)
    options = dict(
        dim_feedforward=16,
        dropout=0.0,
        norm_first=norm_first,
        activation=activation,
        batch_first=True,
    )
    theirs = torch.nn.Transformer(8, 2, 2, 2, **options).to(getattr(torch, dtype))
    ours = nn.Transformer(8, 2, 2, 2, **options, dtype=dtype)
    _ours_from(theirs, ours)
    rng = np.random.default_rng(4)
    src = rng.standard_normal((3, 5, 8)).astype(dtype)
    tgt = rng.standard_normal((3, 4, 8)).astype(dtype)
    padding = np.zeros((3, 5), bool)
    padding[1, -1] = True
    mask_t = torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=getattr(torch, dtype))
    mask_g = nn.Transformer.generate_square_subsequent_mask(4, dtype=dtype)
    np.testing.assert_array_equal(mask_g.numpy(), mask_t.numpy())
    out_t = theirs(
        torch.tensor(src),
        torch.tensor(tgt),
        tgt_mask=mask_t,
        src_key_padding_mask=torch.tensor(padding),
        memory_key_padding_mask=torch.tensor(padding),
    )
    out_g = ours(
        tg.tensor(src),
        tg.tensor(tgt),
        tgt_mask=mask_g,
        src_key_padding_mask=tg.tensor(padding),
        memory_key_padding_mask=tg.tensor(padding),
    )
    tol = dict(rtol=1e-9, atol=1e-11) if dtype == "float64" else dict(rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(_numpy(out_g), _numpy(out_t), **tol)
    (out_t**2).sum().backward()
    (out_g**2).sum().backward()
    _assert_grads(ours, theirs, **tol)
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
