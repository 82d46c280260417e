"""vmap's batching rules (``tensorgrad.core.batching``), checked on every registered op.

For every (op, sample) of the op registry, a batch of three variants of the sample (its
values scaled by 1, 0.999 and 0.998, so signs, kinks and index patterns stay the same) is
run by ``vmap`` in one call and, as the reference, one sample at a time: the results must
be equal, with every argument mapped and with only the first one mapped (the others shared,
which exercises the broadcasting between batched and unbatched operands). For
differentiable ops, the per-sample gradients of ``vmap(grad(...))`` must equal a backward
call per sample, in float64.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import func, ops
from tensorgrad.core import batching
from tests.ops.registry import cases, outputs, quiet

SCALES = (1.0, 0.999, 0.998)
CASES = cases(max_size=400)
GRAD_CASES = cases(differentiable=True, grad=True, max_size=400)


def variants(sample):
    """Each argument's three variants, as arrays."""
    return [[np.asarray(a, dtype=np.float64) * s for s in SCALES] for a in sample.args]


def one_at_a_time(info, sample, per_arg, mapped):
    """The reference: the op on each variant alone, results stacked."""
    rows = []
    for b in range(len(SCALES)):
        args = [tg.tensor(v[b] if m else v[0]) for v, m in zip(per_arg, mapped, strict=True)]
        rows.append([np.asarray(o.numpy()) for o in outputs(info.call(args, sample))])
    return [np.stack(column) for column in zip(*rows, strict=True)]


def batched(info, sample, per_arg, mapped):
    args = [tg.tensor(np.stack(v) if m else v[0]) for v, m in zip(per_arg, mapped, strict=True)]
    dims = tuple(0 if m else None for m in mapped)
    result = func.vmap(lambda *xs: tuple(outputs(info.call(list(xs), sample))), in_dims=dims)(*args)
    return [o.numpy() for o in result]


#: the registry's (op, sample) pairs that vmap runs by the per-sample fallback, all others
#: batching by rules alone (an exact list: a rule that comes to cover one fails the test
#: until it is struck off): a 0-d input gathered by a 1-D index, an empty bincount, and the
#: fused recurrent layers with weights per sample (every argument mapped)
FALLBACKS = {
    ("gather", "0d_input_1d_index"),
    ("scatter_add", "0d_input_1d_index"),
    ("bincount", "empty"),
}
WEIGHTS_PER_SAMPLE_LOOP = {"lstm_layer", "gru_layer"}


def falls_back(info, sample, all_mapped: bool) -> bool:
    if (info.name, sample.desc) in FALLBACKS:
        return True
    return all_mapped and info.name in WEIGHTS_PER_SAMPLE_LOOP


def looped() -> int:
    return sum(batching.state.looped.values())


def tensor_outputs(info, sample):
    """Whether every output of the op is a tensor (vmap maps only those)."""
    result = outputs(info.call([tg.tensor(np.asarray(a, float)) for a in sample.args], sample))
    return all(isinstance(o, tg.Tensor) for o in result)


@pytest.mark.parametrize(("info", "sample"), CASES)
@pytest.mark.parametrize("mapping", ["all", "first"])
def test_vmap_equals_one_sample_at_a_time(info, sample, mapping):
    if not sample.args:
        pytest.skip("no tensor argument to map over")
    try:
        with quiet(sample):
            ok = tensor_outputs(info, sample)
    except Exception:  # an error sample: vmap of it is tested by the errors below
        pytest.skip("the op refuses this sample")
    if not ok:
        pytest.skip("an output is not a tensor")
    per_arg = variants(sample)
    mapped = [True] * len(per_arg) if mapping == "all" else [True] + [False] * (len(per_arg) - 1)
    with np.errstate(all="ignore"), quiet(sample):
        expected = one_at_a_time(info, sample, per_arg, mapped)
        before = looped()
        got = batched(info, sample, per_arg, mapped)
    assert (looped() > before) == falls_back(info, sample, all(mapped))
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g.shape == e.shape
        assert g.dtype == e.dtype
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12, equal_nan=True)


def weights_for(results, rng):
    """Fixed random weights, one per output: the scalar function ``Σ ⟨w, out⟩`` to
    differentiate."""
    return [rng.standard_normal(o.shape) for o in results]


@pytest.mark.parametrize(("info", "sample"), GRAD_CASES)
def test_per_sample_gradients_equal_one_backward_per_sample(info, sample):
    if not sample.args:
        pytest.skip("no tensor argument")
    per_arg = variants(sample)
    try:
        first = outputs(info.call([tg.tensor(v[0]) for v in per_arg], sample))
    except Exception:
        pytest.skip("the op refuses this sample")
    if not all(isinstance(o, tg.Tensor) and o.dtype.kind == "f" for o in first):
        pytest.skip("an output is not a floating-point tensor")
    weights = weights_for(first, np.random.default_rng(0))

    def scalar(*xs):
        total = tg.tensor(0.0, dtype=tg.float64)
        for o, w in zip(outputs(info.call(list(xs), sample)), weights, strict=True):
            total = total + (o * tg.tensor(w)).sum()
        return total

    argnums = tuple(range(len(per_arg)))
    with np.errstate(all="ignore"):
        expected = []
        for b in range(len(SCALES)):
            leaves = [tg.tensor(v[b], requires_grad=True) for v in per_arg]
            scalar(*leaves).backward()
            expected.append(
                [np.zeros(x.shape) if x.grad is None else x.grad.numpy() for x in leaves]
            )
        before = looped()
        got = func.vmap(func.grad(scalar, argnums=argnums))(
            *(tg.tensor(np.stack(v)) for v in per_arg)
        )
    assert (looped() > before) == falls_back(info, sample, True)
    for i, g in enumerate(got):
        want = np.stack([row[i] for row in expected])
        np.testing.assert_allclose(g.numpy(), want, rtol=1e-10, atol=1e-10)


# --------------------------------------------------------------------------- models
def _mlp_loss(params, x, y):
    w1, b1, w2, b2 = params
    logits = tg.nn.functional.relu(x @ w1 + b1) @ w2 + b2
    return tg.nn.functional.cross_entropy(logits.unsqueeze(0), y.unsqueeze(0))


def test_per_sample_gradients_of_an_mlp_batch_for_real():
    rng = np.random.default_rng(1)
    params = [tg.tensor(rng.standard_normal(s)) for s in ((6, 5), (5,), (5, 3), (3,))]
    xs, ys = tg.tensor(rng.standard_normal((4, 6))), tg.tensor(rng.integers(0, 3, 4))
    before = sum(batching.state.looped.values())
    got = func.vmap(func.grad(_mlp_loss), in_dims=(None, 0, 0))(params, xs, ys)
    assert sum(batching.state.looped.values()) == before  # every op had a batching rule
    for i in range(4):
        leaves = [p.detach().requires_grad_() for p in params]
        _mlp_loss(leaves, xs[i], ys[i]).backward()
        for g, p in zip(got, leaves, strict=True):
            np.testing.assert_allclose(g[i].numpy(), p.grad.numpy(), rtol=1e-12, atol=1e-14)


class _Cube(tg.autograd.Function):
    """A custom function: its forward and backward are the user's, so vmap runs it once per
    sample (no batching rule can be known for it)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 3 * x * x * grad


def test_an_op_without_a_rule_warns_once_naming_it_and_is_still_right(monkeypatch):
    monkeypatch.setattr(batching.state, "warned", set())
    x = tg.tensor(np.array([[1.0, -2.0, 3.0], [-1.0, 5.0, -4.0]]))
    with pytest.warns(UserWarning, match="batching rule for _Cube.apply") as caught:
        first = func.vmap(_Cube.apply)(x)
    assert "There is a performance drop because we have not yet implemented" in str(
        caught[0].message
    )
    assert caught[0].filename == __file__  # the user's line, not tensorgrad's
    np.testing.assert_allclose(first.numpy(), x.numpy() ** 3, rtol=1e-15)
    grads = func.vmap(func.grad(lambda r: _Cube.apply(r).sum()))(x)
    np.testing.assert_allclose(grads.numpy(), 3 * x.numpy() ** 2, rtol=1e-15)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per op: the second call is silent
        func.vmap(_Cube.apply)(x)
    monkeypatch.setattr(batching.state, "warned", set())
    monkeypatch.setattr(batching, "FALLBACK_WARNINGS", False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the off-switch
        func.vmap(_Cube.apply)(x)


@pytest.mark.parametrize("shortcuts", [True, False])
def test_matmul_stacked_shortcuts_give_the_same_products(monkeypatch, shortcuts):
    """The speed trick in ``ops.linalg`` (a broadcast weight as one matrix, outer products
    as one einsum) against NumPy's matmul, with it on and off."""
    monkeypatch.setattr(ops.linalg, "STACKED_SHORTCUTS", shortcuts)
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((5, 1, 7)), rng.standard_normal((7, 3))
    shared = np.broadcast_to(w, (5, 7, 3))
    np.testing.assert_allclose(ops.linalg._matmul(x, shared), np.matmul(x, w), rtol=1e-12)
    column, row = rng.standard_normal((5, 7, 1)), rng.standard_normal((5, 1, 3))
    np.testing.assert_allclose(ops.linalg._matmul(column, row), np.matmul(column, row), rtol=1e-12)
    long_row = rng.standard_normal((5, 1, 1030))
    np.testing.assert_allclose(
        ops.linalg._matmul(column, long_row), np.matmul(column, long_row), rtol=1e-12
    )
    left = np.broadcast_to(rng.standard_normal((3, 7)), (5, 3, 7))
    np.testing.assert_allclose(
        ops.linalg._matmul(left, column), np.matmul(left, column), rtol=1e-12
    )
    params = [tg.tensor(rng.standard_normal(s)) for s in ((7, 4), (4,), (4, 2), (2,))]
    xs, ys = tg.tensor(rng.standard_normal((5, 7))), tg.tensor(rng.integers(0, 2, 5))
    got = func.vmap(func.grad(_mlp_loss), in_dims=(None, 0, 0))(params, xs, ys)
    leaves = [p.detach().requires_grad_() for p in params]
    _mlp_loss(leaves, xs[3], ys[3]).backward()
    np.testing.assert_allclose(got[0][3].numpy(), leaves[0].grad.numpy(), rtol=1e-12)


def test_a_cnn_and_an_attention_block_batch_for_real():
    tg.manual_seed(0)
    conv = tg.nn.Sequential(tg.nn.Conv2d(1, 2, 3), tg.nn.ReLU(), tg.nn.MaxPool2d(2)).double()
    images = tg.randn(3, 2, 1, 6, 6, dtype=tg.float64)
    attention = tg.nn.MultiheadAttention(8, 2, batch_first=True).double()
    tokens = tg.randn(3, 2, 4, 8, dtype=tg.float64)
    before = sum(batching.state.looped.values())
    with tg.no_grad():
        conv_out = func.vmap(conv)(images)
        att_out = func.vmap(lambda t: attention(t, t, t, need_weights=False)[0])(tokens)
    assert sum(batching.state.looped.values()) == before
    with tg.no_grad():
        for i in range(3):
            np.testing.assert_allclose(conv_out[i].numpy(), conv(images[i]).numpy(), rtol=1e-12)
            want = attention(tokens[i], tokens[i], tokens[i], need_weights=False)[0]
            np.testing.assert_allclose(att_out[i].numpy(), want.numpy(), rtol=1e-10, atol=1e-12)


# --------------------------------------------------------------------------- semantics
def test_dims_nesting_chunks_and_outputs_that_do_not_vary():
    x = tg.tensor(np.arange(24.0).reshape(2, 3, 4))
    np.testing.assert_array_equal(
        func.vmap(lambda r: r.sum(0), in_dims=-1)(x).numpy(), x.numpy().sum(0).T
    )
    np.testing.assert_array_equal(
        func.vmap(lambda r: r * 2, out_dims=-1)(x).numpy(), np.moveaxis(x.numpy() * 2, 0, -1)
    )
    nested = func.vmap(func.vmap(lambda r: r.softmax(0), in_dims=1), in_dims=0)(x)
    np.testing.assert_allclose(
        nested.numpy(), np.moveaxis(tg.tensor(x.numpy()).softmax(1).numpy(), 2, 1)
    )
    chunked = func.vmap(lambda r: r.cumsum(0), chunk_size=2, in_dims=1)(x)
    np.testing.assert_array_equal(chunked.numpy(), np.moveaxis(np.cumsum(x.numpy(), 0), 1, 0))
    constant = func.vmap(lambda r: tg.ones(2))(x)  # an output the batch does not change: expanded
    assert constant.shape == (2, 2)
    outer = func.vmap(func.vmap(lambda a, b: a * b, in_dims=(None, 0)), in_dims=(0, None))
    np.testing.assert_array_equal(
        outer(tg.arange(3.0), tg.arange(4.0)).numpy(), np.outer(np.arange(3.0), np.arange(4.0))
    )
    with pytest.raises(ValueError, match="out_dims is None"):
        func.vmap(lambda r: r, out_dims=None)(x)


def test_comparisons_masks_and_reductions_see_one_sample():
    x = tg.tensor(np.array([[1.0, -2.0, 3.0], [-1.0, -1.0, 4.0]]))
    positives = func.vmap(lambda r: (r > 0).sum())(x)
    np.testing.assert_array_equal(positives.numpy(), [2, 1])
    shapes = func.vmap(lambda r: tg.tensor(list((r > 0).shape)))(x)
    np.testing.assert_array_equal(shapes.numpy(), [[3], [3]])
    masked = func.vmap(lambda r: tg.where(r > 0, r, tg.zeros(3, dtype=tg.float64)).max())(x)
    np.testing.assert_array_equal(masked.numpy(), [3.0, 4.0])
    order = func.vmap(lambda r: r.argsort())(x)
    np.testing.assert_array_equal(order.numpy(), np.argsort(x.numpy(), axis=1))
    _, indices = func.vmap(lambda r: r.max(0))(x)
    np.testing.assert_array_equal(indices.numpy(), [2, 2])
    with pytest.raises(RuntimeError, match="data-dependent control flow"):
        func.vmap(lambda r: r * float(r.sum()))(x)
    with pytest.raises(RuntimeError, match="results of different shapes .* boolean mask"):
        func.vmap(lambda r: r[r > 0])(x)  # 2 and 1 elements: a shape from the values


def test_in_place_ops_inside_vmap():
    x = tg.tensor(np.arange(6.0).reshape(2, 3))

    def bump(r):
        r = r.clone()
        r += 1
        r[0] = -r[1]
        return r

    np.testing.assert_array_equal(func.vmap(bump)(x).numpy(), [[-2, 2, 3], [-5, 5, 6]])

    def into_shared(r):
        shared = tg.zeros(3, dtype=tg.float64)
        shared += r
        return shared

    with pytest.raises(RuntimeError, match="vmapped over but `self` not being vmapped"):
        func.vmap(into_shared)(x)


def test_randomness_modes():
    x = tg.zeros(4, 2)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        func.vmap(lambda r: r + tg.randn(2))(x)
    same = func.vmap(lambda r: r + tg.randn(2), randomness="same")(x).numpy()
    assert (same == same[0]).all()
    different = func.vmap(lambda r: r + tg.randn(2), randomness="different")(x).numpy()
    assert len({tuple(row) for row in different}) == 4


def test_against_torch_func_vmap():
    torch = pytest.importorskip("torch")
    import torch.func as tfunc

    rng = np.random.default_rng(3)
    xs, w = rng.standard_normal((5, 4, 3)), rng.standard_normal((3, 2))

    def f(m, x, w):
        h = m.tanh(x @ w)
        return (h.softmax(-1) * h).sum(0) + (x > 0).sum() * h.mean()

    ours = func.vmap(f, in_dims=(None, 0, None))(tg, tg.tensor(xs), tg.tensor(w))
    theirs = tfunc.vmap(f, in_dims=(None, 0, None))(torch, torch.tensor(xs), torch.tensor(w))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)
    grads = func.vmap(func.grad(lambda w, x: f(tg, x, w).sum()), in_dims=(None, 0))(
        tg.tensor(w), tg.tensor(xs)
    )
    tgrads = tfunc.vmap(tfunc.grad(lambda w, x: f(torch, x, w).sum()), in_dims=(None, 0))(
        torch.tensor(w), torch.tensor(xs)
    )
    np.testing.assert_allclose(grads.numpy(), tgrads.numpy(), rtol=1e-10)


def test_a_sequential_mlp_batches_for_real_with_shared_and_per_sample_weights():
    tg.manual_seed(1)
    model = tg.nn.Sequential(tg.nn.Linear(5, 4), tg.nn.ReLU(), tg.nn.Linear(4, 3)).double()
    params = {k: v.detach() for k, v in model.named_parameters()}
    xs, ys = tg.randn(6, 5, dtype=tg.float64), tg.randint(0, 3, (6,))

    def loss(p, x, y):
        logits = func.functional_call(model, p, (x,))
        return tg.nn.functional.cross_entropy(logits, y)

    before = sum(batching.state.looped.values())
    with tg.no_grad():
        logits = func.vmap(model)(xs)
    grads = func.vmap(func.grad(loss), in_dims=(None, 0, 0))(params, xs, ys)
    assert sum(batching.state.looped.values()) == before
    with tg.no_grad():
        np.testing.assert_allclose(logits.numpy(), model(xs).numpy(), rtol=1e-12)
    for i in range(6):
        model.zero_grad()
        tg.nn.functional.cross_entropy(model(xs[i]), ys[i]).backward()
        np.testing.assert_allclose(
            grads["0.weight"][i].numpy(), model[0].weight.grad.numpy(), rtol=1e-10
        )


class _Cube(tg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 3 * x**2 * grad


def test_custom_functions_and_raw_value_methods_see_one_sample():
    x = tg.tensor(np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(func.vmap(lambda r: _Cube.apply(r).sum())(x).numpy(), [9, 216])
    grads = func.vmap(func.grad(lambda r: _Cube.apply(r).sum()))(x)
    np.testing.assert_array_equal(grads.numpy(), 3 * x.numpy() ** 2)
    ints = tg.tensor(np.arange(6).reshape(2, 3))
    np.testing.assert_array_equal(func.vmap(lambda r: (~(r > 2)).sum())(ints).numpy(), [3, 0])
    np.testing.assert_array_equal(func.vmap(lambda r: (r & 1).sum())(ints).numpy(), [1, 2])
    w = tg.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    np.testing.assert_array_equal(func.vmap(lambda r: r.long().sum())(w).numpy(), [3, 12])
    np.testing.assert_array_equal(func.vmap(lambda r: r.isnan().sum())(x).numpy(), [0, 0])


def test_per_sample_gradients_of_a_transformer_block_with_shared_embeddings():
    """An embedding lookup of batched indices in a shared table (the batch is in the op's
    index, not its operands), attention with a causal mask, layer norm, GELU: every op by its
    rule, and each sample's gradients those of its own backward call."""
    tg.manual_seed(0)
    layer = tg.nn.TransformerEncoderLayer(
        8, 2, 16, dropout=0.0, batch_first=True, norm_first=True, activation="gelu"
    ).double()
    emb, head = tg.nn.Embedding(11, 8).double(), tg.nn.Linear(8, 11).double()
    params = {k: v.detach() for k, v in layer.named_parameters()}
    idx, targets = tg.randint(0, 11, (3, 1, 5)), tg.randint(0, 11, (3, 1, 5))
    mask = tg.nn.Transformer.generate_square_subsequent_mask(5).double()

    def loss(p, i, t):
        h = func.functional_call(layer, p, (emb(i),), {"src_mask": mask, "is_causal": True})
        return tg.nn.functional.cross_entropy(head(h).reshape(-1, 11), t.reshape(-1))

    before = sum(batching.state.looped.values())
    grads = func.vmap(func.grad(loss), in_dims=(None, 0, 0))(params, idx, targets)
    assert sum(batching.state.looped.values()) == before
    for b in range(3):
        leaves = {k: v.detach().requires_grad_() for k, v in params.items()}
        loss(leaves, idx[b], targets[b]).backward()
        for name, leaf in leaves.items():
            np.testing.assert_allclose(
                grads[name][b].numpy(), leaf.grad.numpy(), rtol=1e-9, atol=1e-12
            )


# --------------------------------------------------------------------------- more layouts
#: a derandomized slice of the registry for the default run (every seventh case); the
#: whole registry under ``-m slow``
EVERY = 7
LAYOUT_CASES = CASES[::EVERY]
LAYOUT_CASES_ALL = [c for i, c in enumerate(CASES) if i % EVERY]


def _scaled(sample, count):
    """``count`` variants of each argument of ``sample`` (scaled by 1, 0.999, ...)."""
    scales = [1.0 - 0.001 * i for i in range(count)]
    return [[np.asarray(a, dtype=np.float64) * s for s in scales] for a in sample.args]


def _usable(info, sample):
    """Whether the sample runs and gives only tensors (vmap maps only those)."""
    if not sample.args:
        return False
    try:
        with quiet(sample):
            return tensor_outputs(info, sample)
    except Exception:
        return False


def check_in_dims_out_dims_and_nesting(info, sample):
    """Mixed in_dims (the first argument mapped over its axis 1 where it has one, the second
    over axis 0, the rest shared), out_dims=-1, and two nested levels (2 × 3 samples)."""
    per_arg = _scaled(sample, 6)
    dims = []
    for i, v in enumerate(per_arg):
        dims.append((1 if v[0].ndim else 0) if i == 0 else 0 if i == 1 else None)
    stacked = [tg.tensor(v[0] if d is None else np.stack(v[:3], d)) for v, d in zip(per_arg, dims)]
    with np.errstate(all="ignore"), quiet(sample):
        got = func.vmap(
            lambda *xs: tuple(outputs(info.call(list(xs), sample))), in_dims=tuple(dims),
            out_dims=-1,
        )(*stacked)  # fmt: skip
        rows = [
            [
                o.numpy()
                for o in outputs(
                    info.call(
                        [tg.tensor(v[0] if d is None else v[b]) for v, d in zip(per_arg, dims)],
                        sample,
                    )
                )
            ]
            for b in range(3)
        ]
    for g, column in zip(got, zip(*rows, strict=True), strict=True):
        np.testing.assert_allclose(
            g.numpy(), np.stack(column, -1), rtol=1e-12, atol=1e-12, equal_nan=True
        )
    grid = [tg.tensor(np.stack(v).reshape(2, 3, *v[0].shape)) for v in per_arg]
    with np.errstate(all="ignore"), quiet(sample):
        inner = func.vmap(lambda *xs: tuple(outputs(info.call(list(xs), sample))))
        nested = func.vmap(inner)(*grid)
        flat = [
            [o.numpy() for o in outputs(info.call([tg.tensor(v[b]) for v in per_arg], sample))]
            for b in range(6)
        ]
    for g, column in zip(nested, zip(*flat, strict=True), strict=True):
        want = np.stack(column).reshape(2, 3, *column[0].shape)
        np.testing.assert_allclose(g.numpy(), want, rtol=1e-12, atol=1e-12, equal_nan=True)


@pytest.mark.parametrize(("info", "sample"), LAYOUT_CASES)
def test_in_dims_out_dims_and_nested_vmap_equal_loops(info, sample):
    if not _usable(info, sample):
        pytest.skip("no tensor argument, an error sample, or an output that is not a tensor")
    check_in_dims_out_dims_and_nesting(info, sample)


@pytest.mark.slow
@pytest.mark.parametrize(("info", "sample"), LAYOUT_CASES_ALL)
def test_in_dims_out_dims_and_nested_vmap_equal_loops_everywhere(info, sample):
    if not _usable(info, sample):
        pytest.skip("no tensor argument, an error sample, or an output that is not a tensor")
    check_in_dims_out_dims_and_nesting(info, sample)


JVP_CASES = GRAD_CASES[::EVERY]
JVP_CASES_ALL = [c for i, c in enumerate(GRAD_CASES) if i % EVERY]


def check_vmap_of_jvp(info, sample):
    """``vmap(jvp)``: every sample its own point and its own tangents, against one ``jvp``
    per sample."""
    per_arg = _scaled(sample, 3)
    rng = np.random.default_rng(5)
    tangents = [[rng.standard_normal(np.shape(v[0])) for _ in range(3)] for v in per_arg]

    def slope(*xs_and_ts):
        half = len(xs_and_ts) // 2
        _, out = func.jvp(
            lambda *xs: tuple(outputs(info.call(list(xs), sample))),
            tuple(xs_and_ts[:half]),
            tuple(xs_and_ts[half:]),
        )
        return out

    with np.errstate(all="ignore"):
        got = func.vmap(slope)(*(tg.tensor(np.stack(v)) for v in per_arg + tangents))
        want = [
            [
                o.numpy()
                for o in slope(
                    *(tg.tensor(v[b]) for v in per_arg), *(tg.tensor(t[b]) for t in tangents)
                )
            ]
            for b in range(3)
        ]
    for g, column in zip(got, zip(*want, strict=True), strict=True):
        np.testing.assert_allclose(g.numpy(), np.stack(column), rtol=1e-10, atol=1e-12)


def _differentiable_floats(info, sample):
    if not sample.args:
        return False
    try:
        first = outputs(info.call([tg.tensor(np.asarray(a, float)) for a in sample.args], sample))
    except Exception:
        return False
    return all(isinstance(o, tg.Tensor) and o.dtype.kind == "f" for o in first)


@pytest.mark.parametrize(("info", "sample"), JVP_CASES)
def test_vmap_of_jvp_equals_one_jvp_per_sample(info, sample):
    if not _differentiable_floats(info, sample):
        pytest.skip("an error sample, or an output that is not a floating-point tensor")
    check_vmap_of_jvp(info, sample)


@pytest.mark.slow
@pytest.mark.parametrize(("info", "sample"), JVP_CASES_ALL)
def test_vmap_of_jvp_equals_one_jvp_per_sample_everywhere(info, sample):
    if not _differentiable_floats(info, sample):
        pytest.skip("an error sample, or an output that is not a floating-point tensor")
    check_vmap_of_jvp(info, sample)
