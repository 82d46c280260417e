"""Convolution and pooling: functions and layers against PyTorch (float64, to 1e-10), the
max-pool tie rule, second derivatives through conv2d, the speed tricks on and off (threads,
chunks, channels-last memory), and the layers' parameters, reprs and state dicts.

The op registry (tests/ops/registry/conv.py and pool.py) checks every op's forward, VJP,
scalar-engine replay and errors on tiny shapes; this file covers what needs PyTorch, larger
shapes or a layer around the op.
"""

from __future__ import annotations

import itertools
import math
import warnings
import zlib

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import Tensor, nn
from tensorgrad import nn as cm
from tensorgrad._native import threads
from tensorgrad.nn import functional as F
from tensorgrad.ops import im2col
from tensorgrad.ops import pool as pool_ops
from tensorgrad.ops.windows import channels_last
from tests.tolerance import assert_sums_close


def leaf(array) -> Tensor:
    return tg.Tensor(np.array(array, dtype=np.float64), requires_grad=True)


def gradients(fn, arrays, seed=0):
    """fn's output and the gradients of sum(out · w) for fixed random weights w."""
    tensors = [leaf(a) for a in arrays]
    out = fn(*tensors)
    weights = np.random.default_rng(seed).standard_normal(out.shape)
    out.backward(weights)
    grads = [np.zeros(t.shape) if t.grad is None else t.grad.numpy() for t in tensors]
    return out.numpy(), grads, weights


def torch_gradients(torch, fn, arrays, weights):
    tensors = [torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=True) for a in arrays]
    out = fn(*tensors)
    out.backward(torch.tensor(weights))
    return out.detach().numpy(), [t.grad.numpy() for t in tensors]


def assert_matches_torch(torch, ours, theirs, arrays, atol=1e-10):
    out, grads, weights = gradients(ours, arrays)
    expected, expected_grads = torch_gradients(torch, theirs, arrays, weights)
    assert out.shape == expected.shape
    np.testing.assert_allclose(out, expected, rtol=1e-10, atol=atol)
    for g, e in zip(grads, expected_grads, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=atol)


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


# --------------------------------------------------------------------------- conv2d vs PyTorch
#: (stride, padding, dilation, groups): the full grid (slow) and a sample of it (default)
GRID = [
    (stride, padding, dilation, groups)
    for stride, padding, dilation, groups in itertools.product(
        [1, 2, 3, (2, 1)], [0, 1, 2, (0, 2), "same", "valid"], [1, 2, (1, 3)], [1, 2]
    )
    if padding != "same" or stride == 1  # 'same' with a stride is an error input
]
SAMPLED = GRID[::7]


def _conv_case(torch, stride, padding, dilation, groups, x_shape=(2, 4, 7, 6), kernel=(3, 2)):
    rng = np.random.default_rng(zlib.crc32(repr((stride, padding, dilation, groups)).encode()))
    x = rng.standard_normal(x_shape)
    w = rng.standard_normal((6, x_shape[1] // groups, *kernel))
    b = rng.standard_normal(6)
    kwargs = {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups}
    with warnings.catch_warnings():  # PyTorch's note on 'same' with an even kernel
        warnings.simplefilter("ignore", UserWarning)
        try:
            torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), None, **kwargs)
        except RuntimeError as exc:  # the input is smaller than the dilated kernel: so says ours
            assert "Kernel size can't be greater than actual input size" in str(exc)
            with pytest.raises(ValueError, match=r"^conv2d: padded input .* is smaller than"):
                F.conv2d(tg.tensor(x), tg.tensor(w), **kwargs)
            return
        assert_matches_torch(
            torch,
            lambda x, w, b: F.conv2d(x, w, b, **kwargs),
            lambda x, w, b: torch.nn.functional.conv2d(x, w, b, **kwargs),
            [x, w, b],
        )


@pytest.mark.parametrize(("stride", "padding", "dilation", "groups"), SAMPLED)
def test_conv2d_matches_torch_on_a_sample_of_the_grid(torch, stride, padding, dilation, groups):
    _conv_case(torch, stride, padding, dilation, groups)


@pytest.mark.slow
@pytest.mark.parametrize(("stride", "padding", "dilation", "groups"), GRID)
def test_conv2d_matches_torch_on_the_whole_grid(torch, stride, padding, dilation, groups):
    _conv_case(torch, stride, padding, dilation, groups)


@pytest.mark.parametrize(
    ("x_shape", "w_shape", "kwargs"),
    [
        pytest.param((1, 3, 5, 8), (4, 3, 2, 5), {}, id="non_square"),
        pytest.param((2, 3, 4, 4), (5, 3, 1, 1), {}, id="one_by_one"),
        pytest.param((2, 2, 4, 5), (3, 2, 4, 5), {}, id="kernel_is_input"),
        pytest.param((1, 2, 9, 8), (3, 2, 3, 3), {"stride": (4, 3)}, id="stride_not_dividing"),
        pytest.param((1, 1, 6, 6), (2, 1, 4, 4), {"padding": "same"}, id="same_even_kernel"),
        pytest.param((0, 2, 5, 5), (3, 2, 3, 3), {}, id="zero_batch"),
        pytest.param((3, 5, 5), (2, 3, 3, 3), {"padding": 1}, id="unbatched"),
        pytest.param((2, 6, 5, 5), (6, 1, 3, 3), {"groups": 6}, id="depthwise"),
    ],
)
def test_conv2d_shapes_match_torch(torch, x_shape, w_shape, kwargs):
    rng = np.random.default_rng(1)
    arrays = [
        rng.standard_normal(x_shape),
        rng.standard_normal(w_shape),
        rng.standard_normal(w_shape[0]),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert_matches_torch(
            torch,
            lambda x, w, b: F.conv2d(x, w, b, **kwargs),
            lambda x, w, b: torch.nn.functional.conv2d(x, w, b, **kwargs),
            arrays,
        )


@pytest.mark.parametrize(
    ("kwargs", "x_shape"),
    [({}, (2, 4, 9)), ({"stride": 2, "padding": 1, "dilation": 2, "groups": 2}, (1, 4, 11)),
     ({"padding": "same"}, (2, 4, 8)), ({}, (4, 9))],
)  # fmt: skip
def test_conv1d_matches_torch(torch, kwargs, x_shape):
    rng = np.random.default_rng(2)
    groups = kwargs.get("groups", 1)
    arrays = [
        rng.standard_normal(x_shape),
        rng.standard_normal((6, 4 // groups, 4)),
        rng.standard_normal(6),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert_matches_torch(
            torch,
            lambda x, w, b: F.conv1d(x, w, b, **kwargs),
            lambda x, w, b: torch.nn.functional.conv1d(x, w, b, **kwargs),
            arrays,
        )


def test_conv2d_without_input_channels_is_its_bias():
    """An empty sum is 0 (PyTorch 2.13 returns an empty (2, 0, 3, 3) here when given a bias,
    and (2, 3, 3, 3) zeros without one)."""
    bias = np.arange(3.0, dtype=np.float32)
    out = F.conv2d(tg.ones(2, 0, 5, 5), tg.ones(3, 0, 3, 3), tg.tensor(bias))
    np.testing.assert_array_equal(out.numpy(), np.broadcast_to(bias[:, None, None], (2, 3, 3, 3)))


def test_conv2d_batch_of_one_and_float32(torch):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    out = F.conv2d(tg.tensor(x), tg.tensor(w), padding=1)
    assert out.dtype == np.float32
    expected = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), padding=1)
    assert_sums_close(out.numpy(), expected.numpy(), terms=3 * 3 * 3)  # C·kH·kW products


# --------------------------------------------------------------------------- the speed tricks
@pytest.fixture(params=["plain", "threads_and_chunks"])
def tricks(request, monkeypatch):
    """Run a test with no threads, one chunk per batch and max pooling's general loop, and
    with two threads, tiny chunks (so that tiny inputs take every path) and pooling's tiles."""
    if request.param == "plain":
        monkeypatch.setattr(threads, "THREADS", 1)
        monkeypatch.setattr(im2col, "CHUNK_ELEMENTS", 2**62)
        monkeypatch.setattr(pool_ops, "CHUNK_ELEMENTS", 2**62)
        monkeypatch.setattr(pool_ops, "TILES", False)
    else:
        monkeypatch.setattr(threads, "THREADS", 2)
        monkeypatch.setattr(threads, "MIN_ELEMENTS", 0)
        monkeypatch.setattr(im2col, "CHUNK_ELEMENTS", 50)
        monkeypatch.setattr(pool_ops, "CHUNK_ELEMENTS", 10)
    return request.param


def _reference_gradients(arrays, fn):
    """Gradients with the readable path: no threads, the whole batch in one chunk."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(threads, "THREADS", 1)
        patch.setattr(im2col, "CHUNK_ELEMENTS", 2**62)
        patch.setattr(pool_ops, "CHUNK_ELEMENTS", 2**62)
        patch.setattr(pool_ops, "TILES", False)
        return gradients(fn, arrays)


@pytest.mark.parametrize(
    ("fn", "w_shape"),
    [
        pytest.param(lambda x, w, b: F.conv2d(x, w, b, padding=1), (6, 4, 3, 3), id="conv2d"),
        pytest.param(
            lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=(2, 1), dilation=2, groups=2),
            (6, 2, 3, 2),
            id="conv2d_options",
        ),
        pytest.param(
            lambda x, w, b: F.max_pool2d(F.conv2d(x, w, b).relu(), 2), (6, 4, 3, 3),
            id="conv_relu_maxpool",
        ),
        pytest.param(
            lambda x, w, b: F.max_pool2d(x, 3, stride=1, padding=1) * b.sum(), (6, 4, 3, 3),
            id="maxpool_overlapping",
        ),
        pytest.param(
            lambda x, w, b: F.avg_pool2d(F.conv2d(x, w), 2, padding=1) + b.sum(), (6, 4, 3, 3),
            id="conv_avgpool",
        ),
    ],
)  # fmt: skip
def test_threads_and_chunks_change_nothing(tricks, fn, w_shape):
    rng = np.random.default_rng(4)
    arrays = [
        rng.standard_normal((5, 4, 7, 6)),
        rng.standard_normal(w_shape),
        rng.standard_normal(6),
    ]
    expected_out, expected_grads, _ = _reference_gradients(arrays, fn)
    out, grads, _ = gradients(fn, arrays)
    np.testing.assert_allclose(out, expected_out, rtol=1e-12, atol=1e-12)
    for g, e in zip(grads, expected_grads, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fused", [False, True])
def test_conv_relu_fusion_changes_nothing(tricks, fused):
    """The layers one by one and ``conv_relu_chain`` (Conv2d + ReLU + a tiling MaxPool2d,
    and Conv2d + ReLU, as one op each): the same values and gradients, with and without
    threads and chunks."""
    from tensorgrad.nn.modules.conv import conv_relu_chain

    tg.manual_seed(3)
    layers = (
        cm.Conv2d(3, 4, 3, padding=1), nn.ReLU(), cm.MaxPool2d((2, 3)),
        cm.Conv2d(4, 5, 2, bias=False), nn.ReLU(), cm.Conv2d(5, 2, 1), cm.MaxPool2d(2),
        nn.ReLU(),
    )  # fmt: skip
    for layer in layers:
        layer.double()
    params = [p for layer in layers for p in layer.parameters()]
    x = np.random.default_rng(7).standard_normal((6, 3, 7, 9))

    def forward(t):
        if fused:
            return conv_relu_chain(layers)(t)
        for layer in layers:
            t = layer(t)
        return t

    def run():
        for p in params:
            p.grad = None
        t = tg.tensor(x, requires_grad=True)
        out = forward(t)
        out.backward(np.cos(np.arange(out.size)).reshape(out.shape))
        return [out.numpy(), t.grad.numpy(), *(p.grad.numpy() for p in params)]

    got = run()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(threads, "THREADS", 1)
        patch.setattr(im2col, "CHUNK_ELEMENTS", 2**62)
        fused = False  # the reference: the layers one by one, in one thread, one chunk
        expected = run()
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("op", ["conv2d", "conv2d_relu_max_pool2d"])
def test_gradients_do_not_depend_on_the_number_of_threads(monkeypatch, op):
    """Each chunk's share of dW and db is summed in chunk order, whichever thread computed
    it: one thread and two give the same bits (float32, many chunks)."""
    from tensorgrad.nn.functional.conv import conv2d_relu_max_pool2d

    fn = F.conv2d if op == "conv2d" else conv2d_relu_max_pool2d
    rng = np.random.default_rng(5)
    x = rng.standard_normal((9, 3, 8, 8)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    monkeypatch.setattr(im2col, "CHUNK_ELEMENTS", 100)
    monkeypatch.setattr(threads, "MIN_ELEMENTS", 0)
    results = []
    for count in (1, 2):
        monkeypatch.setattr(threads, "THREADS", count)
        tensors = [tg.tensor(a, requires_grad=True) for a in (x, w, b)]
        out = fn(*tensors, padding=1)
        out.backward(tg.tensor(np.cos(np.arange(out.size)).reshape(out.shape).astype(np.float32)))
        results.append([out.numpy(), *(t.grad.numpy() for t in tensors)])
    for one, two in zip(*results, strict=True):
        np.testing.assert_array_equal(one, two)


def test_conv_relu_chain_fuses_each_conv_followed_by_a_relu():
    from tensorgrad.nn.modules.conv import conv_relu_chain

    conv, relu, pool = cm.Conv2d(1, 2, 3), nn.ReLU(), cm.MaxPool2d(2)
    x = tg.randn(2, 1, 6, 6, requires_grad=True)
    assert conv_relu_chain((conv, relu))(x).grad_fn.name == "conv2d_relu"
    assert conv_relu_chain((relu, conv))(x).grad_fn.name == "conv2d"
    out = conv_relu_chain((conv, relu, pool))(x)
    assert out.grad_fn.name == "conv2d_relu_max_pool2d"
    np.testing.assert_array_equal(out.numpy(), pool(relu(conv(x))).numpy())
    assert conv_relu_chain((conv, pool, relu))(x).grad_fn.name == "relu"


@pytest.mark.parametrize(
    "settings",
    [
        {"stride": 1},
        {"padding": 1},
        {"dilation": 2},
        {"ceil_mode": True},
        {"stride": (2, 1)},
    ],
)
def test_a_max_pool_whose_windows_do_not_tile_runs_on_its_own(settings):
    from tensorgrad.nn.modules.conv import conv_relu_chain

    conv, relu, pool = cm.Conv2d(1, 2, 3), nn.ReLU(), cm.MaxPool2d(2, **settings)
    x = tg.randn(2, 1, 7, 7, requires_grad=True)
    out = conv_relu_chain((conv, relu, pool))(x)
    assert out.grad_fn.name == "max_pool2d"
    np.testing.assert_array_equal(out.numpy(), pool(relu(conv(x))).numpy())


def test_the_fused_pool_reads_the_layers_settings_at_each_call():
    model = nn.Sequential(cm.Conv2d(1, 2, 3), nn.ReLU(), cm.MaxPool2d(2))
    x = tg.randn(2, 1, 8, 8)
    assert model(x).shape == (2, 2, 3, 3)
    assert model(x).grad_fn.name == "conv2d_relu_max_pool2d"
    model[2].stride = 1  # the windows overlap now
    out = model(x)
    assert out.grad_fn.name == "max_pool2d" and out.shape == (2, 2, 5, 5)
    model[2].kernel_size = model[2].stride = 3
    assert model(x).grad_fn.name == "conv2d_relu_max_pool2d" and model(x).shape == (2, 2, 2, 2)


def test_the_fused_pool_leaves_losers_at_zero_for_infinite_gradients():
    """An infinite upstream gradient goes to each tile's winner only, as the three ops send
    it (no ∞ · 0 = NaN at the losers)."""
    from tensorgrad.ops.fused_conv import Conv2dRelu, Conv2dReluMaxPool
    from tensorgrad.ops.pool import MaxPool2d

    rng = np.random.default_rng(4)
    x, w = rng.standard_normal((2, 2, 6, 6)), rng.standard_normal((3, 2, 3, 3))
    fused, conv = Conv2dReluMaxPool(), Conv2dRelu()
    fused.needs_input_grad = conv.needs_input_grad = [True, True, False]
    out = fused.forward(x, w)
    grad = np.ones_like(out)
    grad[0, 1, 1, 0] = np.inf
    grad[1, 2, 0, 1] = -np.inf
    z = conv.forward(x, w)
    pool = MaxPool2d((2, 2), (2, 2), (0, 0))
    np.testing.assert_array_equal(out, pool.forward(z))
    with np.errstate(invalid="ignore"):  # ∞ - ∞ in the weight's gradient: NaN, both ways
        (dz,) = pool.backward(grad, out, z)
        expected = conv.backward(dz, z, x, w)
        got = fused.backward(grad, out, x, w)
    for g, e in zip(got[:2], expected[:2], strict=True):
        np.testing.assert_array_equal(g, e)  # the same infinities and NaNs, where they are


def test_a_fused_conv_relu_pool_agrees_with_pytorch():
    torch = pytest.importorskip("torch")
    tg.manual_seed(0)
    model = nn.Sequential(cm.Conv2d(2, 3, 3, padding=1), nn.ReLU(), cm.MaxPool2d(2)).double()
    reference = torch.nn.Sequential(
        torch.nn.Conv2d(2, 3, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2)
    ).double()
    reference.load_state_dict(
        {k: torch.from_numpy(v.numpy()) for k, v in model.state_dict().items()}
    )
    x = np.random.default_rng(1).standard_normal((3, 2, 7, 6))
    ours, theirs = tg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, expected = model(ours), reference(theirs)
    assert out.grad_fn.name == "conv2d_relu_max_pool2d"
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-10, atol=1e-12)
    weights = np.random.default_rng(2).standard_normal(out.shape)
    out.backward(weights)
    expected.backward(torch.from_numpy(weights))
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-10, atol=1e-12)
    for p, q in zip(model.parameters(), reference.parameters(), strict=True):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_conv_relu_second_derivatives_match_the_two_ops():
    """create_graph through the fused op records the masked VJP: a Hessian-vector product
    equals the unfused one's."""
    from tensorgrad.nn.functional.conv import conv2d_relu

    rng = np.random.default_rng(9)
    x, w, b = (rng.standard_normal(s) for s in ((2, 2, 5, 5), (3, 2, 3, 3), (3,)))
    v = rng.standard_normal((3, 2, 3, 3))
    results = []
    for fn in (conv2d_relu, lambda *a, **k: F.conv2d(*a, **k).relu()):
        tx, tw = leaf(x), leaf(w)
        loss = (fn(tx, tw, leaf(b), padding=1) ** 2).sum()
        (gw,) = tg.autograd.grad(loss, [tw], create_graph=True)
        (hv,) = tg.autograd.grad((gw * tg.tensor(v)).sum(), [tx])
        results.append(hv.numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-12)


def test_conv_output_is_channels_last_and_owns_its_memory():
    x = tg.randn(2, 3, 6, 6, dtype=tg.float64)
    out = F.conv2d(x, tg.randn(4, 3, 3, 3, dtype=tg.float64))
    assert channels_last(out.numpy()) and out.numpy().base is None
    pooled = F.max_pool2d(out, 2)
    assert channels_last(pooled.numpy()) and pooled.numpy().base is None


def test_channels_last_and_strided_inputs_give_the_same_results():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 6, 5))
    w = rng.standard_normal((4, 3, 3, 2))
    expected = F.conv2d(tg.tensor(x), tg.tensor(w), padding=1).numpy()
    last = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    strided = np.zeros((2, 3, 12, 5))
    strided[:, :, ::2] = x
    for variant in (last, strided[:, :, ::2], np.asfortranarray(x)):
        np.testing.assert_allclose(
            F.conv2d(tg.tensor(variant), tg.tensor(w), padding=1).numpy(), expected, rtol=1e-13
        )
        for fn in (lambda t: F.max_pool2d(t, 2, 1, 1), lambda t: F.avg_pool2d(t, 2, 1, 1)):
            np.testing.assert_allclose(fn(tg.tensor(variant)).numpy(), fn(tg.tensor(x)).numpy())


@pytest.mark.parametrize("pool", [F.max_pool2d, F.avg_pool2d])
@pytest.mark.parametrize("hw", [(2, 2), (3, 2), (1, 1)])
def test_pooling_a_channels_last_input_down_to_one_pixel(tricks, pool, hw):
    """A (N, C, 1, 1) result is both channels-last and contiguous: it must still line up
    with a channels-last input's windows (a CNN on 8×8 digits pools 2×2 maps to 1×1)."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal((3, 4, *hw))
    last = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    fn = lambda t: pool(t, hw)  # noqa: E731
    expected, expected_grads, _ = _reference_gradients([x], fn)
    for variant in (x, last):
        out, grads, _ = gradients(fn, [variant])
        assert out.shape == (3, 4, 1, 1)
        np.testing.assert_allclose(out, expected, rtol=1e-13)
        np.testing.assert_allclose(grads[0], expected_grads[0], rtol=1e-13)


# --------------------------------------------------------------------------- max-pool ties
def test_max_pool_ties_go_to_the_first_maximum_in_row_major_order():
    x = leaf(
        [[[[1.0, 3.0, 3.0, 0.0], [3.0, 2.0, 1.0, 3.0], [0.0, 0.0, 5.0, 5.0], [0.0, 0.0, 5.0, 5.0]]]]
    )
    out, indices = F.max_pool2d(x, 2, return_indices=True)
    out.backward(np.ones(out.shape))
    np.testing.assert_array_equal(out.numpy(), [[[[3.0, 3.0], [0.0, 5.0]]]])
    np.testing.assert_array_equal(indices.numpy(), [[[[1, 2], [8, 10]]]])
    expected = np.zeros((4, 4))
    expected[0, 1] = expected[0, 2] = expected[2, 0] = expected[2, 2] = 1.0
    np.testing.assert_array_equal(x.grad.numpy()[0, 0], expected)


@pytest.mark.parametrize("channels_last", [False, True])
def test_max_pool_tiles_with_one_hit_per_window_on_average_still_apply_the_rules(channels_last):
    """Tiling windows, one of them NaN (no hit) and one tied (two hits): as many hits as
    windows, which must not pass for 'no ties' (the tiles' shortcut); in either layout, the
    upstream gradient in the other."""
    plane = [[np.nan, 1.0, 5.0, 5.0], [1.0, 1.0, 0.0, 0.0]]
    values = np.array([[plane, plane]])  # two channels, so that the layouts differ
    if channels_last:
        values = np.ascontiguousarray(values.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    x = tg.Tensor(values, requires_grad=True)
    out = F.max_pool2d(x, 2)
    out.backward(np.array([[[[2.0, 3.0]], [[2.0, 3.0]]]]))
    assert np.isnan(out.numpy()[0, :, 0, 0]).all() and (out.numpy()[0, :, 0, 1] == 5.0).all()
    expected = np.zeros((2, 4))
    expected[0, 0] = 2.0  # the NaN window's only NaN
    expected[0, 2] = 3.0  # the tied window's first maximum
    for channel in x.grad.numpy()[0]:
        np.testing.assert_array_equal(channel, expected)
    tied = tg.Tensor(values[..., 2:], requires_grad=True)  # the tie alone: ones, no NaN
    F.max_pool2d(tied, 2).backward(np.ones((1, 2, 1, 1)))
    for channel in tied.grad.numpy()[0]:
        np.testing.assert_array_equal(channel, [[1.0, 0.0], [0.0, 0.0]])


def test_max_pool_overlapping_windows_add_up_and_nan_goes_to_the_last_nan():
    x = leaf([[[[1.0, 7.0, 2.0], [0.0, 3.0, 7.0], [np.nan, 1.0, np.nan]]]])
    out = F.max_pool2d(x, 2, stride=1)
    out.backward(np.ones(out.shape))
    assert out.numpy()[0, 0, 0, 0] == 7.0 and out.numpy()[0, 0, 0, 1] == 7.0
    assert np.isnan(out.numpy()[0, 0, 1]).all()
    expected = np.zeros((3, 3))
    expected[0, 1] = 1.0  # the first 7 wins the first window
    expected[0, 1] += 1.0  # and, first in row-major order, the second window's too
    expected[2, 0] = 1.0  # the window [0, 3; nan, 1]: its only NaN
    expected[2, 2] = 1.0  # [3, 7; 1, nan]
    np.testing.assert_array_equal(x.grad.numpy()[0, 0], expected)


def test_adaptive_max_pool_sends_the_gradient_to_the_last_nan_and_the_first_maximum():
    # PyTorch's kernel keeps ``val > max || isnan(val)``; the fuzz found the first NaN here
    x = leaf([[[[np.nan, np.nan, 1.0], [2.0, np.nan, 0.0], [5.0, 1.0, 5.0], [0.0, 5.0, 1.0]]]])
    out, index = F.adaptive_max_pool2d(x, (2, 1), return_indices=True)
    out.backward(np.ones(out.shape))
    assert np.isnan(out.numpy()[0, 0, 0, 0]) and out.numpy()[0, 0, 1, 0] == 5.0
    np.testing.assert_array_equal(index.numpy().ravel(), [4, 6])
    expected = np.zeros((4, 3))
    expected[1, 1] = 1.0  # rows 0-1: three NaNs, the last wins
    expected[2, 0] = 1.0  # rows 2-3: three 5s, the first wins
    np.testing.assert_array_equal(x.grad.numpy()[0, 0], expected)


def test_max_pool_infinite_gradients_stay_off_the_losers():
    x = leaf([[[[1.0, 2.0], [3.0, 4.0]]]])
    F.max_pool2d(x, 2).backward(np.full((1, 1, 1, 1), np.inf))
    np.testing.assert_array_equal(x.grad.numpy()[0, 0], [[0.0, 0.0], [0.0, np.inf]])


def test_max_pool_matches_torch_on_ties_padding_and_nan(torch):
    rng = np.random.default_rng(6)
    x = rng.integers(-2, 3, (2, 3, 7, 6)).astype(np.float64)  # many ties
    x[0, 0, 1, 1] = np.nan
    x[1, 2, :, :2] = -np.inf
    for kwargs in [
        {"kernel_size": 2},
        {"kernel_size": 3, "stride": 1, "padding": 1},
        {"kernel_size": (3, 2), "stride": 2, "padding": (1, 1), "ceil_mode": True},
        {"kernel_size": 2, "stride": 1, "dilation": 2},
    ]:
        ours, ours_idx = F.max_pool2d(leaf(x), return_indices=True, **kwargs)
        theirs, their_idx = torch.nn.functional.max_pool2d(
            torch.tensor(x), return_indices=True, **kwargs
        )
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
        np.testing.assert_array_equal(ours_idx.numpy(), their_idx.numpy())
        assert_matches_torch(
            torch,
            lambda t, kw=kwargs: F.max_pool2d(t, **kw),
            lambda t, kw=kwargs: torch.nn.functional.max_pool2d(t, **kw),
            [x],
        )


# --------------------------------------------------------------------------- pooling vs PyTorch
@pytest.mark.parametrize(
    "kwargs",
    [{"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1},
     {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True, "count_include_pad": False},
     {"kernel_size": (2, 3), "divisor_override": 5}, {"kernel_size": 2, "ceil_mode": True}],
)  # fmt: skip
def test_avg_pool_matches_torch(torch, kwargs):
    x = np.random.default_rng(7).standard_normal((2, 3, 7, 6))
    assert_matches_torch(
        torch,
        lambda t: F.avg_pool2d(t, **kwargs),
        lambda t: torch.nn.functional.avg_pool2d(t, **kwargs),
        [x],
    )


@pytest.mark.parametrize("size", [1, 3, (2, 4), (None, 5), (7, 9)])
def test_adaptive_avg_pool_matches_torch(torch, size):
    x = np.random.default_rng(8).standard_normal((2, 3, 7, 6))
    assert_matches_torch(
        torch,
        lambda t: F.adaptive_avg_pool2d(t, size),
        lambda t: torch.nn.functional.adaptive_avg_pool2d(t, size),
        [x],
    )


def test_adaptive_avg_pool_to_nothing(torch):
    x = leaf(np.ones((2, 3, 4, 4)))
    out = F.adaptive_avg_pool2d(x, (0, 2))
    assert out.shape == tuple(
        torch.nn.functional.adaptive_avg_pool2d(torch.ones(2, 3, 4, 4), (0, 2)).shape
    )
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), 0.0)


def test_unfold_and_fold_match_torch_and_fold_is_the_adjoint(torch):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 3, 6, 7))
    kwargs = {"kernel_size": (2, 3), "dilation": (2, 1), "padding": 1, "stride": (1, 2)}
    assert_matches_torch(
        torch,
        lambda t: F.unfold(t, **kwargs),
        lambda t: torch.nn.functional.unfold(t, **kwargs),
        [x],
    )
    cols = rng.standard_normal(F.unfold(tg.tensor(x), **kwargs).shape)
    assert_matches_torch(
        torch,
        lambda t: F.fold(t, (6, 7), **kwargs),
        lambda t: torch.nn.functional.fold(t, (6, 7), **kwargs),
        [cols],
    )
    # <unfold(x), c> = <x, fold(c)>: the adjoint, not an inverse
    left = float((F.unfold(tg.tensor(x), **kwargs).numpy() * cols).sum())
    right = float((x * F.fold(tg.tensor(cols), (6, 7), **kwargs).numpy()).sum())
    assert left == pytest.approx(right, rel=1e-12)
    ones = F.fold(F.unfold(tg.ones(1, 1, 3, 3), 2), (3, 3), 2).numpy()[0, 0]
    np.testing.assert_array_equal(ones, [[1, 2, 1], [2, 4, 2], [1, 2, 1]])


def test_pad_matches_torch_and_refuses_other_modes(torch):
    x = np.random.default_rng(10).standard_normal((2, 3, 4, 5))
    for pad in [(1, 2), (1, 0, -1, 2), (0, 0, 0, 0, 2, 1)]:
        assert_matches_torch(
            torch,
            lambda t, p=pad: F.pad(t, p, value=-1.5),
            lambda t, p=pad: torch.nn.functional.pad(t, p, value=-1.5),
            [x],
        )
    for mode in ("reflect", "replicate", "circular"):
        with pytest.raises(
            NotImplementedError, match=f"mode='{mode}' is not supported in tensorgrad"
        ):
            F.pad(tg.tensor(x), (1, 1), mode=mode)


# --------------------------------------------------------------------------- second derivatives
def test_hessian_vector_product_through_conv2d(torch):
    """d/dθ of (∇L · v) for L = Σ tanh(conv2d(x, w, b))², by tg.grad with create_graph,
    against PyTorch's double backward."""
    rng = np.random.default_rng(11)
    arrays = [
        rng.standard_normal((2, 4, 5, 5)),
        0.3 * rng.standard_normal((6, 2, 3, 3)),
        rng.standard_normal(6),
    ]
    vectors = [rng.standard_normal(a.shape) for a in arrays]
    kwargs = {"stride": 1, "padding": 1, "dilation": 1, "groups": 2}

    def loss(module, conv, x, w, b):
        return (conv(x, w, b, **kwargs).tanh() ** 2).sum()

    ours = [leaf(a) for a in arrays]
    grads = tg.grad(loss(tg, F.conv2d, *ours), ours, create_graph=True)
    dot = sum((g * v).sum() for g, v in zip(grads, vectors, strict=True))
    hvp = tg.grad(dot, ours)
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    their_grads = torch.autograd.grad(
        loss(torch, torch.nn.functional.conv2d, *theirs), theirs, create_graph=True
    )
    their_dot = sum((g * torch.tensor(v)).sum() for g, v in zip(their_grads, vectors, strict=True))
    their_hvp = torch.autograd.grad(their_dot, theirs)
    for a, b in zip(hvp, their_hvp, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-10)


def test_hessian_vector_product_matches_finite_differences_of_the_gradient():
    rng = np.random.default_rng(12)
    x, w = rng.standard_normal((1, 2, 5, 4)), rng.standard_normal((3, 2, 2, 2))
    v = rng.standard_normal(w.shape)

    def gradient(w_values, create_graph=False):
        xt, wt = leaf(x), leaf(w_values)
        out = F.max_pool2d(F.conv2d(xt, wt, padding=1).tanh(), 2, ceil_mode=True)
        return tg.grad((out * out).sum(), wt, create_graph=create_graph)[0], wt

    g, wt = gradient(w, create_graph=True)
    (hvp,) = tg.grad((g * v).sum(), wt)
    eps = 1e-6
    numeric = (gradient(w + eps * v)[0].numpy() - gradient(w - eps * v)[0].numpy()) / (2 * eps)
    np.testing.assert_allclose(hvp.numpy(), numeric, rtol=1e-6, atol=1e-8)


# --------------------------------------------------------------------------- layers
def test_conv_layers_parameters_and_default_init():
    tg.manual_seed(0)
    layer = cm.Conv2d(6, 8, (3, 2), groups=2)
    assert layer.weight.shape == (8, 3, 3, 2) and layer.bias.shape == (8,)
    bound = 1 / math.sqrt(3 * 3 * 2)  # kaiming_uniform with a = √5: 1/√fan_in
    for p in (layer.weight, layer.bias):
        assert np.all(np.abs(p.numpy()) <= bound) and np.abs(p.numpy()).max() > 0.5 * bound
    assert [name for name, _ in layer.named_parameters()] == ["weight", "bias"]
    assert cm.Conv2d(2, 3, 1, bias=False).bias is None
    layer1d = cm.Conv1d(4, 2, 5)
    assert layer1d.weight.shape == (2, 4, 5)
    assert layer1d(tg.randn(3, 4, 9)).shape == (3, 2, 5)
    assert layer.weight.dtype == np.float32
    assert cm.Conv2d(1, 1, 1, dtype=tg.float64).weight.dtype == np.float64
    tg.manual_seed(0)
    again = cm.Conv2d(6, 8, (3, 2), groups=2)
    np.testing.assert_array_equal(again.weight.numpy(), layer.weight.numpy())


@pytest.mark.parametrize(
    "args",
    [
        ("Conv2d", (3, 4, 3), {}),
        ("Conv2d", (4, 4, (3, 1)), {"stride": 2, "padding": (1, 0), "dilation": 2, "groups": 2}),
        ("Conv2d", (4, 4, 1), {"bias": False}),
        ("Conv2d", (4, 4, 3), {"padding": "same"}),
        ("Conv2d", (4, 4, 3), {"padding": "valid"}),
        ("Conv1d", (2, 4, 3), {"stride": 2, "padding": 1}),
        ("MaxPool2d", (2,), {}),
        ("MaxPool2d", (3, 1, 1, 2), {"ceil_mode": True}),
        ("AvgPool2d", (2,), {}),
        ("AvgPool2d", ((2, 3), 1, 1), {"count_include_pad": False}),
        ("AdaptiveAvgPool2d", ((3, None),), {}),
        ("BatchNorm2d", (3,), {}),
        ("BatchNorm2d", (3,), {"momentum": None, "affine": False, "bias": False}),
        ("Dropout2d", (), {}),
        ("Dropout2d", (0.2,), {}),
    ],
)  # fmt: skip
def test_reprs_match_torch(torch, args):
    name, positional, keywords = args
    ours = getattr(cm, name)(*positional, **keywords)
    theirs = getattr(torch.nn, name)(*positional, **keywords)
    assert repr(ours) == repr(theirs)


def test_conv_layer_argument_errors():
    with pytest.raises(ValueError, match=r"in_channels \(3\) must be divisible by groups \(2\)"):
        cm.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match=r"out_channels \(3\) must be divisible by groups \(2\)"):
        cm.Conv2d(4, 3, 3, groups=2)
    with pytest.raises(ValueError, match=r"padding='same' is not supported for strided"):
        cm.Conv2d(4, 4, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match=r"invalid padding string 'full'"):
        cm.Conv2d(4, 4, 3, padding="full")
    with pytest.raises(ValueError, match=r"padding_mode must be one of"):
        cm.Conv2d(4, 4, 3, padding_mode="mirror")
    with pytest.raises(
        NotImplementedError, match=r"padding_mode='reflect' is not supported in tensorgrad"
    ):
        cm.Conv2d(4, 4, 3, padding_mode="reflect")
    with pytest.raises(ValueError, match=r"groups must be a positive integer"):
        cm.Conv1d(4, 4, 3, groups=0)
    with pytest.raises(ValueError, match=r"Conv2d: kernel_size must be positive"):
        cm.Conv2d(4, 4, 0)
    with pytest.raises(ValueError, match=r"^conv2d: input of shape \(1, 3, 5, 5\) has 3 channels"):
        cm.Conv2d(4, 4, 3)(tg.ones(1, 3, 5, 5))


def _small_cnn(torch_nn):
    return torch_nn.Sequential(
        torch_nn.Conv2d(2, 4, 3, padding=1), torch_nn.BatchNorm2d(4), torch_nn.ReLU(),
        torch_nn.MaxPool2d(2), torch_nn.Conv2d(4, 6, (2, 3), stride=2, groups=2, bias=False),
        torch_nn.AdaptiveAvgPool2d(1), torch_nn.Flatten(), torch_nn.Linear(6, 3),
    )  # fmt: skip


class _Namespace:
    """``torch.nn``'s names, made of tensorgrad's layers."""

    def __getattr__(self, name):
        return getattr(cm, name, None) or getattr(nn, name)


def test_state_dict_round_trips_with_torch(torch):
    tg.manual_seed(0)
    ours, theirs = _small_cnn(_Namespace()), _small_cnn(torch.nn)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for (key, a), b in zip(ours.state_dict().items(), theirs.state_dict().values(), strict=True):
        assert a.shape == tuple(b.shape) and a.dtype == b.numpy().dtype, key
    x = np.random.default_rng(13).standard_normal((4, 2, 8, 8)).astype(np.float32)
    terms = 4 * 8 * 8  # batch norm's statistics sum a channel of the whole batch
    # torch → tensorgrad: one training step of the same batch, then evaluation
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    assert_sums_close(ours(tg.tensor(x)).numpy(), theirs(torch.tensor(x)).detach().numpy(), terms)
    for (key, a), b in zip(ours.state_dict().items(), theirs.state_dict().values(), strict=True):
        assert_sums_close(a, b.numpy(), terms, err_msg=key)  # running stats
    ours.eval(), theirs.eval()
    assert_sums_close(ours(tg.tensor(x)).numpy(), theirs(torch.tensor(x)).detach().numpy(), terms)
    # tensorgrad → torch
    tg.manual_seed(1)
    fresh = _small_cnn(_Namespace())
    theirs.load_state_dict({k: torch.tensor(v) for k, v in fresh.state_dict().items()})
    fresh.eval()
    assert_sums_close(fresh(tg.tensor(x)).numpy(), theirs(torch.tensor(x)).detach().numpy(), terms)


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"momentum": None}, {"affine": False}, {"track_running_stats": False}, {"bias": False}],
)
def test_batch_norm_2d_matches_torch_in_training_and_eval(torch, kwargs):
    rng = np.random.default_rng(14)
    ours, theirs = cm.BatchNorm2d(3, **kwargs).double(), torch.nn.BatchNorm2d(3, **kwargs).double()
    if ours.weight is not None:
        with tg.no_grad():
            ours.weight.copy_(rng.standard_normal(3))
        theirs.weight.data = torch.tensor(ours.weight.numpy().copy())
    for step in range(3):
        x = rng.standard_normal((4, 3, 5, 2)) + step
        assert_matches_torch(torch, lambda t: ours(t), lambda t: theirs(t), [x])
    for (key, a), b in zip(ours.state_dict().items(), theirs.state_dict().values(), strict=True):
        np.testing.assert_allclose(a, b.numpy(), rtol=1e-12, err_msg=key)
    ours.eval(), theirs.eval()
    x = rng.standard_normal((2, 3, 3, 3))
    assert_matches_torch(torch, lambda t: ours(t), lambda t: theirs(t), [x])


def test_batch_norm_2d_shape_errors():
    with pytest.raises(
        ValueError, match=r"BatchNorm2d: expected input of shape \(N, 3, H, W\), got \(2, 3\)"
    ):
        cm.BatchNorm2d(3)(tg.ones(2, 3))
    with pytest.raises(ValueError, match=r"expected more than 1 value per channel when training"):
        cm.BatchNorm2d(3)(tg.ones(1, 3, 1, 1))


def test_dropout2d_zeroes_whole_channels_and_scales_the_rest():
    tg.manual_seed(0)
    x = tg.ones(50, 20, 3, 3, requires_grad=True)
    out = F.dropout2d(x, 0.4)
    planes = out.numpy().reshape(50, 20, 9)
    assert np.all((planes == 0).all(axis=2) | np.isclose(planes, 1 / 0.6).all(axis=2))
    assert abs((planes[:, :, 0] == 0).mean() - 0.4) < 0.05
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), out.numpy())  # the gradient is the mask
    layer = cm.Dropout2d(0.4)
    layer.eval()
    assert layer(x) is x
    assert F.dropout2d(x, 0.0) is x and F.dropout2d(x, 0.4, training=False) is x
    np.testing.assert_array_equal(F.dropout2d(x, 1.0).numpy(), 0.0)
    tg.manual_seed(3)
    first = F.dropout2d(x, 0.5).numpy()
    tg.manual_seed(3)
    np.testing.assert_array_equal(F.dropout2d(x, 0.5).numpy(), first)


def test_dropout2d_warns_on_3d_input_and_refuses_bad_arguments():
    with pytest.warns(UserWarning, match=r"3-D input is taken as \(N, C, L\)"):
        out = F.dropout2d(tg.ones(4, 5, 6), 0.5)
    assert ((out.numpy() == 0).all(axis=2) | (out.numpy() == 2).all(axis=2)).all()
    with pytest.raises(ValueError, match=r"dropout2d: probability p must be in \[0, 1\], got 1.5"):
        F.dropout2d(tg.ones(2, 2, 2, 2), 1.5)
    with pytest.raises(NotImplementedError, match="inplace=True is not supported"):
        cm.Dropout2d(inplace=True)


def test_pool_layers_run_the_functions():
    x = tg.randn(2, 3, 6, 6)
    np.testing.assert_array_equal(cm.MaxPool2d(2)(x).numpy(), F.max_pool2d(x, 2).numpy())
    out, indices = cm.MaxPool2d(2, return_indices=True)(x)
    assert out.shape == indices.shape == (2, 3, 3, 3) and indices.dtype == np.int64
    expected = F.avg_pool2d(x, 3, 1, 1).numpy()
    np.testing.assert_array_equal(cm.AvgPool2d(3, 1, 1)(x).numpy(), expected)
    assert cm.AdaptiveAvgPool2d((2, None))(x).shape == (2, 3, 2, 6)


def test_mnist_network_matches_torch(torch):
    """PyTorch's MNIST example network (no dropout) in both, with the same weights: logits
    and every parameter's gradient after one backward."""

    def build(namespace):
        return namespace.Sequential(
            namespace.Conv2d(1, 8, 3), namespace.ReLU(), namespace.Conv2d(8, 16, 3),
            namespace.ReLU(), namespace.MaxPool2d(2), namespace.Flatten(),
            namespace.Linear(16 * 12 * 12, 32), namespace.ReLU(), namespace.Linear(32, 10),
        )  # fmt: skip

    ours, theirs = build(_Namespace()).double(), build(torch.nn).double()
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    rng = np.random.default_rng(15)
    x, y = rng.random((5, 1, 28, 28)), rng.integers(0, 10, 5)
    from tensorgrad.nn import functional

    functional.cross_entropy(ours(tg.tensor(x)), y).backward()
    torch.nn.functional.cross_entropy(theirs(torch.tensor(x)), torch.tensor(y)).backward()
    for (name, a), b in zip(ours.named_parameters(), theirs.parameters(), strict=True):
        np.testing.assert_allclose(
            a.grad.numpy(), b.grad.numpy(), rtol=1e-9, atol=1e-12, err_msg=name
        )


def test_docs_conv_examples_print_what_the_page_shows(capsys):
    import re
    from pathlib import Path

    page = Path(__file__).resolve().parents[2] / "docs" / "conv.md"
    pattern = r"```python\n(.*?)```\n\n```text\n(.*?)```\n"
    snippets = re.findall(pattern, page.read_text(encoding="utf-8"), flags=re.DOTALL)
    assert len(snippets) >= 4, "docs/conv.md lost its examples"
    namespace: dict = {"__name__": "docs_conv"}
    for number, (block, expected) in enumerate(snippets, 1):
        exec(compile(block, f"conv.md block {number}", "exec"), namespace)
        assert capsys.readouterr().out == expected, f"block {number}"


def test_sequential_runs_a_conv2d_followed_by_a_relu_as_one_op():
    conv, relu = nn.Conv2d(2, 3, 3), nn.ReLU()
    model = nn.Sequential(conv, relu, nn.MaxPool2d(2), nn.Flatten(), nn.Linear(3, 4), nn.ReLU())
    x = tg.tensor(np.random.default_rng(0).normal(size=(2, 2, 4, 4)), dtype=tg.float32)
    assert nn.Sequential(conv, relu)(x).grad_fn.name == "conv2d_relu"
    assert nn.Sequential(relu, conv)(x).grad_fn.name == "conv2d"
    out = model(x)
    assert out.grad_fn.name == "linear_chain"
    expected = F.relu(
        F.linear(
            F.max_pool2d(F.relu(F.conv2d(x, conv.weight, conv.bias)), 2).flatten(1),
            model[4].weight,
            model[4].bias,
        )
    )
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-6)


# --------------------------------------------------------------------------- transposed
TRANSPOSED = [
    ((4, 6, 3), {}),
    ((4, 6, (3, 2)), {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2,
                      "bias": False}),
    ((4, 6, 3), {"dilation": 2, "output_padding": 1}),
    ((3, 2, 4), {"stride": (2, 3), "padding": (1, 0), "output_padding": (1, 2)}),
]  # fmt: skip


@pytest.mark.parametrize(("args", "kwargs"), TRANSPOSED)
def test_conv_transpose2d_layer_matches_torch(args, kwargs):
    torch = pytest.importorskip("torch")
    ours, theirs = nn.ConvTranspose2d(*args, **kwargs), torch.nn.ConvTranspose2d(*args, **kwargs)
    assert repr(ours) == repr(theirs)
    ours.double()
    ours.load_state_dict({k: v.detach().double().numpy() for k, v in theirs.state_dict().items()})
    theirs.double()
    x = np.random.default_rng(1).standard_normal((2, args[0], 5, 4))
    a, b = tg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, expected = ours(a), theirs(b)
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-10, atol=1e-12)
    out.sum().backward()
    expected.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(
        ours.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=1e-10, atol=1e-12
    )


def test_conv_transpose_initialisation_matches_torch_in_distribution():
    """PyTorch's default, with fan_in from the (in, out/groups, k, k) weight's dim 1."""
    layer = nn.ConvTranspose2d(16, 32, 4, groups=2)
    assert layer.weight.shape == (16, 16, 4, 4) and layer.bias.shape == (32,)
    bound = 1 / math.sqrt(16 * 16)
    assert np.abs(layer.weight.numpy()).max() <= bound and np.abs(layer.bias.numpy()).max() <= bound
    assert np.abs(layer.weight.numpy()).max() > 0.9 * bound


def test_conv_transpose2d_output_size_picks_the_output_padding():
    """DCGAN-style upsampling: a stride-2 layer whose output size is asked for."""
    layer = nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1)
    x = tg.randn(1, 3, 4, 4)
    assert layer(x).shape == (1, 2, 7, 7)
    assert layer(x, output_size=(8, 8)).shape == (1, 2, 8, 8)
    assert layer(x, output_size=[1, 2, 8, 7]).shape == (1, 2, 8, 7)
    with pytest.raises(ValueError, match=r"valid sizes range from \[7, 7\] to \[8, 8\]"):
        layer(x, output_size=(9, 9))
    torch = pytest.importorskip("torch")
    theirs = torch.nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1)
    assert tuple(theirs(torch.randn(1, 3, 4, 4), output_size=(8, 7)).shape) == (1, 2, 8, 7)


def test_conv_transpose_is_the_input_gradient_of_conv2d():
    """Without torch: ⟨conv2d(x, W), y⟩ = ⟨x, conv_transpose2d(y, W)⟩ (the adjoint)."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 9, 9))
    w = rng.standard_normal((4, 3, 3, 2))
    settings = {"stride": 2, "padding": 1, "dilation": 1, "groups": 1}
    z = F.conv2d(tg.tensor(x), tg.tensor(w), **settings)
    y = rng.standard_normal(z.shape)
    back = F.conv_transpose2d(tg.tensor(y), tg.tensor(w), output_padding=(0, 1), **settings)
    assert back.shape == x.shape
    assert float((z.numpy() * y).sum()) == pytest.approx(float((x * back.numpy()).sum()), rel=1e-10)


def test_conv_transpose_layer_errors():
    with pytest.raises(ValueError, match='Only "zeros" padding mode'):
        nn.ConvTranspose2d(2, 2, 3, padding_mode="reflect")
    with pytest.raises(TypeError, match="padding must be an int"):
        nn.ConvTranspose2d(2, 2, 3, padding="same")
    with pytest.raises(RuntimeError, match="output padding must be smaller"):
        nn.ConvTranspose2d(2, 2, 3, stride=2, output_padding=2)(tg.zeros(1, 2, 3, 3))
    assert nn.ConvTranspose1d(2, 3, 3, stride=2)(tg.zeros(1, 2, 5)).shape == (1, 3, 11)
