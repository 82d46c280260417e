"""Convolutions with a weight per sample under vmap (``core/batching.py``'s ``_conv``, the op
``ops/batched_conv.py``): per-sample gradients of CNNs equal a loop of one-sample backward
passes (float64, 1e-10) over strides, padding, dilation, groups and with and without bias,
with the ``PER_SAMPLE_CONV`` switch on and off; the op against ``Conv2d`` sample by sample,
with shared (broadcast) and separate weights; nested vmap and forward mode through it."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import func, ops
from tensorgrad.core import batching
from tensorgrad.nn import functional as F
from tensorgrad.ops import batched_conv
from tensorgrad.ops.batched_conv import Conv2dPerSample

#: the convolutions' settings the tests sweep: (name, conv1 kwargs, conv2 kwargs, bias)
CONFIGS = [
    ("plain", {}, {}, True),
    ("no_bias", {}, {}, False),
    ("padding_stride", {"padding": 1}, {"stride": 2, "padding": (1, 0)}, True),
    ("dilation", {"dilation": 2}, {"dilation": (1, 2), "padding": 2}, True),
    ("groups", {}, {"groups": 2, "padding": 1}, True),
    ("depthwise_same", {"padding": "same"}, {"groups": 4, "padding": "same"}, False),
]


def _params(rng: np.random.Generator, groups: int, bias: bool) -> dict:
    shapes = {
        "conv1.weight": (4, 1, 3, 3),
        "conv2.weight": (6 if groups < 4 else 4, 4 // groups, 2, 2),
    }
    if bias:
        shapes |= {"conv1.bias": (4,), "conv2.bias": (shapes["conv2.weight"][0],)}
    return {k: tg.tensor(rng.standard_normal(s) * 0.5) for k, s in shapes.items()}


def _cnn(first: dict, second: dict, dims: int):
    """One sample's loss: two convolutions, max-pool, a linear layer, nll_loss (the torch.func
    tutorial's shape: the sample ``unsqueeze(0)``-ed, the target too)."""

    def loss(p, head, x, y):
        h = F.relu(F.conv2d(x.unsqueeze(0), p["conv1.weight"], p.get("conv1.bias"), **first))
        h = F.relu(F.conv2d(h, p["conv2.weight"], p.get("conv2.bias"), **second))
        h = tg.flatten(F.max_pool2d(h, 2), 1)
        logits = h[:, :dims] @ head
        return F.nll_loss(F.log_softmax(logits, 1), y.unsqueeze(0))

    return loss


def _per_sample_and_loop(config, switch: bool, monkeypatch):
    name, first, second, bias = config
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    params = _params(rng, second.get("groups", 1), bias)
    xs = tg.tensor(rng.standard_normal((5, 1, 11, 11)))
    ys = tg.tensor(rng.integers(0, 3, 5))
    loss = _cnn(first, second, 6)
    head = tg.tensor(rng.standard_normal((6, 3)))
    monkeypatch.setattr(batching, "PER_SAMPLE_CONV", switch)
    got = func.vmap(func.grad(loss), in_dims=(None, None, 0, 0))(params, head, xs, ys)
    want = {k: [] for k in params}
    for i in range(5):
        leaves = {k: v.detach().requires_grad_() for k, v in params.items()}
        loss(leaves, head, xs[i], ys[i]).backward()
        for k, leaf in leaves.items():
            want[k].append(leaf.grad.numpy())
    return got, {k: np.stack(v) for k, v in want.items()}


@pytest.mark.parametrize("switch", [True, False], ids=["per_sample_op", "unfold_matmul"])
@pytest.mark.parametrize("config", CONFIGS, ids=[c[0] for c in CONFIGS])
def test_per_sample_gradients_of_a_cnn_equal_a_loop_of_backward_passes(config, switch, monkeypatch):
    monkeypatch.setattr(batching.state, "warned", set())
    before = dict(batching.state.looped)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore" if not switch else "error")  # off: groups loop, warned
        got, want = _per_sample_and_loop(config, switch, monkeypatch)
    if switch:  # every op had a rule: no per-sample fallback ran
        assert dict(batching.state.looped) == before
    for k in want:
        assert got[k].shape == want[k].shape
        np.testing.assert_allclose(got[k].numpy(), want[k], rtol=1e-10, atol=1e-12, err_msg=k)


@pytest.mark.parametrize("config", CONFIGS, ids=[c[0] for c in CONFIGS])
def test_both_settings_of_the_switch_give_the_same_gradients(config, monkeypatch):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the composition loops over groups, with a warning
        on, _ = _per_sample_and_loop(config, True, monkeypatch)
        off, _ = _per_sample_and_loop(config, False, monkeypatch)
    for k in on:
        np.testing.assert_allclose(on[k].numpy(), off[k].numpy(), rtol=1e-12, atol=1e-13)


# --------------------------------------------------------------------------- the op itself
OP_CASES = [  # (x (B, N, C, H, W), weight (O, C/G, kH, kW), settings, bias)
    ((3, 1, 2, 6, 5), (4, 2, 3, 3), {}, True),
    (
        (2, 3, 4, 7, 8),
        (6, 2, 3, 2),
        {"stride": (2, 1), "padding": ((1, 2), (0, 1)), "groups": 2},
        False,
    ),
    (
        (2, 2, 3, 6, 6),
        (3, 1, 2, 2),
        {"dilation": (2, 1), "padding": ((1, 1), (1, 1)), "groups": 3},
        True,
    ),
    ((2, 0, 2, 4, 4), (3, 2, 2, 2), {}, True),  # no images
]


def _conv_settings(s: dict) -> dict:
    return {
        "stride": s.get("stride", (1, 1)),
        "padding": s.get("padding", ((0, 0), (0, 0))),
        "dilation": s.get("dilation", (1, 1)),
        "groups": s.get("groups", 1),
    }


@pytest.mark.parametrize("shared", [False, True], ids=["own_weights", "shared_weight"])
@pytest.mark.parametrize("case", range(len(OP_CASES)))
def test_the_op_equals_conv2d_sample_by_sample(case, shared):
    """Forward and every VJP against ``Conv2d`` on each sample; a weight broadcast over the
    samples (stride 0, as vmap of shared weights gives) takes the one-matrix path."""
    x_shape, w_shape, settings, with_bias = OP_CASES[case]
    rng = np.random.default_rng(case)
    b = x_shape[0]
    x = rng.standard_normal(x_shape)
    if shared:
        weight = np.broadcast_to(rng.standard_normal(w_shape), (b, *w_shape))
        bias = np.broadcast_to(rng.standard_normal(w_shape[0]), (b, w_shape[0]))
    else:
        weight, bias = rng.standard_normal((b, *w_shape)), rng.standard_normal((b, w_shape[0]))
    args = (x, weight, bias) if with_bias else (x, weight)
    op = Conv2dPerSample(**_conv_settings(settings))
    op.needs_input_grad = [True] * len(args)
    out = op.forward(*args)
    grad = rng.standard_normal(out.shape)
    grads = op.backward(grad, out, *args)
    for i in range(b):
        one = ops.Conv2d(**_conv_settings(settings))
        one.needs_input_grad = [True] * len(args)
        sample = [a[i] for a in args]
        want = one.forward(*sample)
        np.testing.assert_allclose(out[i], want, rtol=1e-12, atol=1e-12)
        for got, expected in zip(grads, one.backward(grad[i], want, *sample), strict=True):
            if expected is None:  # no bias: no bias gradient
                assert got is None
                continue
            np.testing.assert_allclose(got[i], expected, rtol=1e-12, atol=1e-12)


def test_the_op_lays_its_output_out_channels_last():
    rng = np.random.default_rng(3)
    op = Conv2dPerSample()
    out = op.forward(rng.standard_normal((2, 1, 3, 5, 5)), rng.standard_normal((2, 4, 3, 2, 2)))
    assert out.shape == (2, 1, 4, 4, 4) and out.base is None
    assert out.transpose(0, 1, 3, 4, 2).flags.c_contiguous  # (B, N, OH, OW, O) memory


@pytest.mark.parametrize("chunk", [1, 1 << 62], ids=["a_sample_a_chunk", "one_chunk"])
def test_chunks_of_any_size_give_the_same_sums(chunk, monkeypatch):
    """The chunks of samples (``CHUNK_ELEMENTS``), the smallest and the whole batch, against
    the default, forward and backward, shared and separate weights."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((5, 2, 3, 6, 6))
    shared = np.broadcast_to(rng.standard_normal((4, 3, 3, 3)), (5, 4, 3, 3, 3))
    for weight in (rng.standard_normal((5, 4, 3, 3, 3)), shared):
        bias = rng.standard_normal((5, 4))
        results = []
        for size in (batched_conv.CHUNK_ELEMENTS, chunk):
            monkeypatch.setattr(batched_conv, "CHUNK_ELEMENTS", size)
            op = Conv2dPerSample(padding=((1, 1), (0, 1)))
            op.needs_input_grad = [True, True, True]
            out = op.forward(x, weight, bias)
            results.append((out, *op.backward(np.cos(out), out, x, weight, bias)))
        for a, b in zip(*results, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_the_op_refuses_mismatched_batches_naming_the_shapes():
    op = Conv2dPerSample()
    with pytest.raises(ValueError, match=r"one B, got shapes \(2, 1, 3, 5, 5\), \(3, 4, 3, 2, 2\)"):
        op.forward(np.ones((2, 1, 3, 5, 5)), np.ones((3, 4, 3, 2, 2)))


# --------------------------------------------------------------------------- compositions
def test_nested_vmap_of_per_sample_gradients_equals_a_loop():
    """vmap over groups of samples of vmap(grad): both levels join the op's B axis."""
    rng = np.random.default_rng(5)
    w = tg.tensor(rng.standard_normal((3, 2, 2, 2)))
    xs = tg.tensor(rng.standard_normal((2, 3, 2, 4, 4)))

    def loss(w, x):
        return (F.conv2d(x.unsqueeze(0), w, padding=1) ** 2).sum()

    got = func.vmap(func.vmap(func.grad(loss), in_dims=(None, 0)), in_dims=(None, 0))(w, xs)
    for i in range(2):
        for j in range(3):
            want = func.grad(loss)(w, xs[i, j])
            np.testing.assert_allclose(got[i, j].numpy(), want.numpy(), rtol=1e-12)


def test_forward_mode_through_per_sample_weights_equals_reverse_mode():
    """jacfwd (a vmap of jvp, batching the op's JVP by its own rule) against jacrev, of a
    per-sample convolution as a function of the weights."""
    rng = np.random.default_rng(6)
    xs = tg.tensor(rng.standard_normal((2, 1, 2, 4, 4)))
    bias = tg.tensor(rng.standard_normal((2, 3)))

    def conv(ws):
        return func.vmap(lambda x, w, b: F.conv2d(x, w, b, stride=2))(xs, ws, bias).sum(0)

    ws = tg.tensor(rng.standard_normal((2, 3, 2, 2, 2)))
    forward = func.jacfwd(conv)(ws)
    reverse = func.jacrev(conv)(ws)
    np.testing.assert_allclose(forward.numpy(), reverse.numpy(), rtol=1e-12, atol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no per-sample fallback on the way
        func.jacfwd(conv)(ws)


# --------------------------------------------------------------------------- transposed
TRANSPOSED = [
    ({}, 3, True),
    ({"stride": 2, "padding": 1, "output_padding": 1}, 3, True),
    ({"groups": 2, "dilation": 2}, 6, False),
]


@pytest.mark.parametrize(("settings", "out_channels", "with_bias"), TRANSPOSED)
def test_transposed_convolutions_with_per_sample_weights_equal_a_loop(
    settings, out_channels, with_bias, monkeypatch
):
    """One grouped conv_transpose2d over the samples' channels: values and per-sample
    gradients of the input, weight and bias, without the per-sample fallback."""
    rng = np.random.default_rng(out_channels)
    groups = settings.get("groups", 1)
    x = tg.tensor(rng.standard_normal((3, 2, 4, 5, 5)))
    w = tg.tensor(rng.standard_normal((3, 4, out_channels // groups, 3, 2)))
    b = tg.tensor(rng.standard_normal((3, out_channels)))
    args = (x, w, b) if with_bias else (x, w)

    def fn(*a):
        return F.conv_transpose2d(*a, **settings)

    def loss(*a):
        return (fn(*a) ** 2).sum()

    monkeypatch.setattr(batching.state, "warned", set())
    before = dict(batching.state.looped)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no per-sample fallback
        got = func.vmap(fn)(*args)
        grads = func.vmap(func.grad(loss, argnums=tuple(range(len(args)))))(*args)
    assert dict(batching.state.looped) == before
    for i in range(3):
        leaves = [a[i].detach().requires_grad_() for a in args]
        out = fn(*leaves)
        np.testing.assert_allclose(got[i].numpy(), out.numpy(), rtol=1e-12, atol=1e-12)
        loss(*leaves).backward()
        for g, leaf in zip(grads, leaves, strict=True):
            np.testing.assert_allclose(g[i].numpy(), leaf.grad.numpy(), rtol=1e-10, atol=1e-12)
