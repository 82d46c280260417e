"""``tg.func.vmap`` over ``nn.functional`` and the indexing methods: each function that reads
its tensors' arrays (targets, indices, masks, pooling's winners) sees one sample's, so vmap
equals a loop over the batch, and ``torch.func.vmap`` of the same code where PyTorch is
installed. The ones marked ``rule`` must run without the per-sample fallback."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import func
from tensorgrad.core import batching

B = 3


def _draw(seed):
    rng = np.random.default_rng(seed)
    return {
        "T": lambda *s: rng.standard_normal((B, *s)),
        "I": lambda hi, *s: rng.integers(0, hi, (B, *s)),
        "M": lambda *s: rng.random((B, *s)) > 0.5,
        "P": lambda *s: rng.random((B, *s)) * 0.9 + 0.05,
        "shared": lambda *s: rng.standard_normal(s),
        "perm": lambda n, k: np.stack([rng.permutation(n)[:k] for _ in range(B)]),
    }


#: name -> (function of (module, functional) giving the per-sample function, the arrays
#: (batched, or shared where their in_dim is None), in_dims, runs by rules alone, and
#: whether torch.func.vmap runs it: it refuses bincount's shape from values and
#: cross-entropy's ignore_index with label smoothing, which selects by a mask)
def _cases():
    d = _draw(0)
    T, I, M, P, S = d["T"], d["I"], d["M"], d["P"], d["shared"]
    weights = np.array([1.0, 2, 3, 4, 5])
    return {
        "one_hot": (lambda m, F: lambda i: F.one_hot(i, 5), [I(5, 4)], 0, True, True),
        "embedding": (
            lambda m, F: lambda i, w: F.embedding(i, w),
            [I(6, 4), S(6, 3)],
            (0, None),
            True,
            True,
        ),
        "embedding_per_sample_table": (
            lambda m, F: lambda i, w: F.embedding(i, w),
            [I(6, 4), T(6, 3)],
            0,
            True,
            True,
        ),
        "embedding_padding": (
            lambda m, F: lambda i, w: F.embedding(i, w, padding_idx=2),
            [I(6, 4), S(6, 3)],
            (0, None),
            True,
            True,
        ),
        "nll_loss": (
            lambda m, F: lambda x, t: F.nll_loss(x.log_softmax(1), t),
            [T(4, 5), I(5, 4)],
            0,
            True,
            True,
        ),
        "nll_loss_weights_ignore": (
            lambda m, F: (
                lambda x, t: F.nll_loss(
                    x.log_softmax(1), t, weight=m.tensor(weights), ignore_index=2
                )
            ),
            [T(4, 5), I(5, 4)],
            0,
            True,
            True,
        ),
        "nll_loss_sum_spatial": (
            lambda m, F: lambda x, t: F.nll_loss(x.log_softmax(1), t, reduction="sum"),
            [T(2, 5, 3), I(5, 2, 3)],
            0,
            True,
            True,
        ),
        "nll_loss_one_sample": (
            lambda m, F: lambda x, t: F.nll_loss(x.log_softmax(0), t, reduction="none"),
            [T(5), I(5)],
            0,
            True,
            True,
        ),
        "nll_loss_shared_target": (
            lambda m, F: lambda x, t: F.nll_loss(x.log_softmax(1), t),
            [T(4, 5), I(5, 4)[0]],
            (0, None),
            True,
            True,
        ),
        "cross_entropy_weights_smoothing": (
            lambda m, F: (
                lambda x, t: F.cross_entropy(
                    x, t, weight=m.tensor(weights), ignore_index=1, label_smoothing=0.1
                )
            ),
            [T(4, 5), I(5, 4)],
            0,
            True,
            False,
        ),
        "cross_entropy_probabilities": (
            lambda m, F: lambda x, t: F.cross_entropy(x, t),
            [T(4, 5), P(4, 5)],
            0,
            True,
            True,
        ),
        "hardshrink": (lambda m, F: lambda x: F.hardshrink(x, 0.5), [T(5)], 0, True, True),
        "softshrink": (lambda m, F: lambda x: F.softshrink(x, 0.5), [T(5)], 0, True, True),
        "threshold": (lambda m, F: lambda x: F.threshold(x, 0.1, 2.0), [T(5)], 0, True, True),
        "hardtanh": (lambda m, F: lambda x: F.hardtanh(x), [T(5)], 0, True, True),
        "relu6": (lambda m, F: lambda x: F.relu6(x * 4), [T(5)], 0, True, True),
        "hardswish": (lambda m, F: lambda x: F.hardswish(x * 3), [T(5)], 0, True, True),
        "hardsigmoid": (lambda m, F: lambda x: F.hardsigmoid(x * 3), [T(5)], 0, True, True),
        "attention_boolean_mask": (
            lambda m, F: lambda q, mask: F.scaled_dot_product_attention(q, q, q, attn_mask=mask),
            [T(4, 8), M(4, 4) | np.eye(4, dtype=bool)],
            0,
            True,
            True,
        ),
        "attention_causal": (
            lambda m, F: lambda q: F.scaled_dot_product_attention(q, q, q, is_causal=True),
            [T(2, 4, 8)],
            0,
            True,
            True,
        ),
        "masked_fill": (
            lambda m, F: lambda x, mask: x.masked_fill(mask, -1.0),
            [T(5), M(5)],
            0,
            True,
            True,
        ),
        "gather": (lambda m, F: lambda x, i: x.gather(1, i), [T(3, 5), I(5, 3, 2)], 0, True, True),
        "gather_shared_input": (
            lambda m, F: lambda x, i: x.gather(1, i),
            [S(3, 5), I(5, 3, 2)],
            (None, 0),
            True,
            True,
        ),
        "scatter_add": (
            lambda m, F: lambda x, i, s: x.scatter_add(1, i, s),
            [T(3, 5), I(5, 3, 2), T(3, 2)],
            0,
            True,
            True,
        ),
        "take_along_dim": (
            lambda m, F: lambda x, i: x.take_along_dim(i, 1),
            [T(3, 5), I(5, 3, 2)],
            0,
            True,
            True,
        ),
        "take": (lambda m, F: lambda x, i: x.take(i), [T(2, 3), I(6, 4)], 0, True, True),
        "index_by_array": (lambda m, F: lambda x, i: x[i], [T(5, 2), I(5, 3)], 0, True, True),
        "index_by_two_arrays": (
            lambda m, F: lambda x, i, j: x[i, j],
            [T(5, 4), I(5, 3), I(4, 3)],
            0,
            True,
            True,
        ),
        "index_shared_by_array": (
            lambda m, F: lambda x, i: x[i, 1:],
            [S(5, 4), I(5, 3)],
            (None, 0),
            True,
            True,
        ),
        "scatter_reduce_amax": (
            lambda m, F: lambda x, i, s: x.scatter_reduce(1, i, s, "amax"),
            [T(3, 5), I(5, 3, 2), T(3, 2)],
            0,
            True,
            True,
        ),
        "index_select": (
            lambda m, F: lambda x, i: x.index_select(0, i),
            [T(5, 2), I(5, 3)],
            0,
            True,  # a batched index: x[i], batched by the getitem rule
            True,
        ),
        "scatter": (
            lambda m, F: lambda x, i, s: x.scatter(1, i, s),
            [T(3, 5), d["perm"](5, 3)[:, None, :].repeat(3, 1), T(3, 3)],
            0,
            True,  # a batched index: one setitem at each sample's positions
            True,
        ),
        "index_add": (
            lambda m, F: lambda x, i, s: x.index_add(0, i, s),
            [T(5, 2), I(5, 3), T(3, 2)],
            0,
            True,  # a batched index: one op at each sample's positions
            True,
        ),
        "index_copy": (
            lambda m, F: lambda x, i, s: x.index_copy(0, i, s),
            [T(5, 2), d["perm"](5, 3), T(3, 2)],
            0,
            True,  # a batched index: one op at each sample's positions
            True,
        ),
        "index_fill": (
            lambda m, F: lambda x, i: x.index_fill(0, i, 7.0),
            [T(5, 2), I(5, 3)],
            0,
            True,  # a batched index: one op at each sample's positions
            True,
        ),
        "index_put_accumulate": (
            lambda m, F: lambda x, i, v: x.index_put((i,), v, accumulate=True),
            [T(5), I(5, 3), T(3)],
            0,
            True,
            True,
        ),
        "max_pool2d_indices": (
            lambda m, F: lambda x: F.max_pool2d(x, 2, return_indices=True)[1],
            [T(1, 2, 4, 4)],
            0,
            True,
            True,
        ),
        "adaptive_max_pool2d": (
            lambda m, F: lambda x: F.adaptive_max_pool2d(x, 2, return_indices=True),
            [T(1, 2, 5, 5)],
            0,
            True,
            True,
        ),
        "adaptive_avg_pool2d": (
            lambda m, F: lambda x: F.adaptive_avg_pool2d(x, 3),
            [T(2, 5, 5)],
            0,
            True,
            True,
        ),
        "avg_pool2d": (lambda m, F: lambda x: F.avg_pool2d(x, 2), [T(1, 2, 4, 4)], 0, True, True),
        "max_pool1d": (lambda m, F: lambda x: F.max_pool1d(x, 2), [T(2, 6)], 0, True, True),
        "batch_norm_training": (
            lambda m, F: lambda x: F.batch_norm(x, None, None, training=True),
            [T(4, 3)],
            0,
            True,
            True,
        ),
        "group_norm": (lambda m, F: lambda x: F.group_norm(x, 2), [T(2, 4, 3)], 0, True, True),
        "layer_norm_per_sample_affine": (
            lambda m, F: lambda x, w: F.layer_norm(x, (3,), w, w),
            [T(2, 3), T(3)],
            0,
            True,
            True,
        ),
        "pad": (lambda m, F: lambda x: F.pad(x, (1, 2, 0, 1), value=3.0), [T(2, 5)], 0, True, True),
        "interpolate_bilinear": (
            lambda m, F: lambda x: F.interpolate(x, size=(5, 4), mode="bilinear"),
            [T(1, 2, 3, 3)],
            0,
            True,
            True,
        ),
        "unfold": (lambda m, F: lambda x: F.unfold(x, 2), [T(1, 2, 4, 4)], 0, True, True),
        "fold": (lambda m, F: lambda x: F.fold(x, (3, 3), 2), [T(1, 8, 4)], 0, True, True),
        "conv1d_per_sample_weight": (
            lambda m, F: lambda x, w: F.conv1d(x, w),
            [T(2, 3, 7), T(4, 3, 3)],
            0,
            True,
            True,
        ),
        "conv2d_per_sample_weight": (
            lambda m, F: lambda x, w, b: F.conv2d(x, w, b, padding=1, stride=2),
            [T(2, 3, 6, 6), T(4, 3, 3, 3), T(4)],
            0,
            True,
            True,
        ),
        "conv2d_shared_weight": (
            lambda m, F: lambda x, w: F.conv2d(x, w),
            [T(3, 6, 6), S(4, 3, 3, 3)],
            (0, None),
            True,
            True,
        ),
        "conv2d_groups": (
            lambda m, F: lambda x, w: F.conv2d(x, w, groups=2),
            [T(1, 4, 5, 5), T(4, 2, 3, 3)],
            0,
            True,  # per-sample weights, grouped: one Conv2dPerSample
            True,
        ),
        "conv_transpose2d": (
            lambda m, F: lambda x, w: F.conv_transpose2d(x, w),
            [T(1, 3, 4, 4), T(3, 2, 3, 3)],
            0,
            True,  # per-sample weights: one grouped transposed convolution
            True,
        ),
        "linear_per_sample": (
            lambda m, F: lambda x, w, b: F.linear(x, w, b),
            [T(2, 3), T(4, 3), T(4)],
            0,
            True,
            True,
        ),
        "linear_one_vector": (
            lambda m, F: lambda x, w: F.linear(x, w),
            [T(3), T(4, 3)],
            0,
            True,
            True,
        ),
        "bincount": (lambda m, F: lambda i: m.bincount(i, minlength=5), [I(5, 6)], 0, True, False),
    }


CASES = _cases()


def _call_tensorgrad(name):
    make, arrays, dims, _, _ = CASES[name]
    fn = make(tg, tg.nn.functional)
    return fn, [tg.tensor(a) for a in arrays], dims


def _stack_outputs(rows):
    if isinstance(rows[0], tuple):
        return tuple(np.stack([r[k].numpy() for r in rows]) for k in range(len(rows[0])))
    return np.stack([r.numpy() for r in rows])


def _numpy(result):
    return tuple(r.numpy() for r in result) if isinstance(result, tuple) else result.numpy()


def _assert_close(got, want):
    got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        np.testing.assert_allclose(g.astype(float), w.astype(float), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", list(CASES))
def test_vmap_equals_a_loop_over_the_batch(name):
    fn, args, dims = _call_tensorgrad(name)
    per_arg = dims if isinstance(dims, tuple) else (dims,) * len(args)
    before = sum(batching.state.looped.values())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the fallback's: checked below
        got = _numpy(func.vmap(fn, in_dims=dims)(*args))
    looped = sum(batching.state.looped.values()) - before
    assert (looped == 0) == CASES[name][3]  # batched by rules, or the fallback said so
    rows = [fn(*(a if d is None else a[b] for a, d in zip(args, per_arg))) for b in range(B)]
    _assert_close(got, _stack_outputs(rows))


@pytest.mark.parametrize("name", [n for n, case in CASES.items() if case[4]])
def test_vmap_equals_torch_func_vmap(name):
    torch = pytest.importorskip("torch")
    make, arrays, dims, _, _ = CASES[name]
    fn, args, _ = _call_tensorgrad(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        ours = _numpy(func.vmap(fn, in_dims=dims)(*args))
        tfn = make(torch, torch.nn.functional)
        theirs = torch.func.vmap(tfn, in_dims=dims)(*(torch.tensor(a) for a in arrays))
    theirs = tuple(t.numpy() for t in theirs) if isinstance(theirs, tuple) else theirs.numpy()
    _assert_close(ours, theirs)


def test_per_sample_gradients_through_index_readers_equal_a_loop():
    """Gradients too: a batched target, index and mask each steer their own sample's."""
    rng = np.random.default_rng(4)
    w = tg.tensor(rng.standard_normal((6, 5)))
    xs, idx = tg.tensor(rng.standard_normal((B, 4, 6))), tg.tensor(rng.integers(0, 5, (B, 4)))
    mask = tg.tensor(rng.random((B, 4, 5)) > 0.3)

    def loss(w, x, i, m):
        logits = (x @ w).masked_fill(m, 0.0)
        picked = logits.gather(1, i.unsqueeze(1)).sum()
        return tg.nn.functional.nll_loss(logits.log_softmax(1), i) + picked

    got = func.vmap(func.grad(loss), in_dims=(None, 0, 0, 0))(w, xs, idx, mask)
    for b in range(B):
        leaf = w.detach().requires_grad_()
        loss(leaf, xs[b], idx[b], mask[b]).backward()
        np.testing.assert_allclose(got[b].numpy(), leaf.grad.numpy(), rtol=1e-12, atol=1e-14)


def test_one_hot_needs_num_classes_inside_vmap():
    with pytest.raises(RuntimeError, match="pass num_classes"):
        func.vmap(lambda i: tg.nn.functional.one_hot(i))(tg.tensor([[0, 1], [2, 0]]))


def test_batch_norm_inside_vmap_as_pytorch():
    """Training with shared running statistics is refused (they would be updated in place
    with batched values), with PyTorch's message; eval mode, per-sample statistics and
    ``track_running_stats=False`` run."""
    x = tg.tensor(np.random.default_rng(6).standard_normal((B, 5, 3)))
    bn = tg.nn.BatchNorm1d(3).double()
    with pytest.raises(RuntimeError, match="Batch norm got a batched tensor as input"):
        func.vmap(bn)(x)
    assert not bn.running_mean.numpy().any()  # nothing half-done
    bn.eval()
    np.testing.assert_allclose(
        func.vmap(bn)(x).numpy(), np.stack([bn(x[b]).numpy() for b in range(B)]), rtol=1e-12
    )
    free = tg.nn.BatchNorm1d(3, track_running_stats=False).double()
    np.testing.assert_allclose(
        func.vmap(free)(x).numpy(), np.stack([free(x[b]).numpy() for b in range(B)]), rtol=1e-12
    )
    means, variances = tg.tensor(np.ones((B, 3))), tg.tensor(np.full((B, 3), 2.0))
    got = func.vmap(tg.nn.functional.batch_norm)(x, means, variances)
    want = [tg.nn.functional.batch_norm(x[b], means[b], variances[b]) for b in range(B)]
    np.testing.assert_allclose(got.numpy(), np.stack([w.numpy() for w in want]), rtol=1e-12)
