"""``DistributedDataParallel`` in a world of one (no mpiexec): the wrapper itself, its
arguments and errors, its buckets against PyTorch's, and the post-accumulate-grad hook it is
built on. The two-rank behaviour is in test_two_ranks.py."""

from __future__ import annotations

import gc
import warnings
import weakref

import numpy as np
import pytest

import tensorgrad as tg
import tensorgrad.distributed as dist
import tensorgrad.nn.functional as F
from tensorgrad import nn, optim
from tensorgrad.nn.parallel import (
    DistributedDataParallel,
    consume_prefix_in_state_dict_if_present,
)
from tensorgrad.nn.parallel.distributed import _assign_buckets


@pytest.fixture
def one() -> None:
    dist.init_process_group()


def mlp(seed: int = 0, dtype: str = "float64") -> nn.Module:
    tg.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).to(dtype)


def batch(seed: int = 1):
    rng = np.random.default_rng(seed)
    return tg.as_tensor(rng.standard_normal((6, 4))), rng.integers(0, 3, 6)


def test_needs_the_process_group():
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        DistributedDataParallel(mlp())


@pytest.mark.parametrize(
    "options", [{}, {"bucket_cap_mb": 1e-6}, {"gradient_as_bucket_view": True}]
)
def test_in_a_world_of_one_training_is_the_bare_models(one, options):
    bare, wrapped = mlp(), mlp()
    ddp = DistributedDataParallel(wrapped, **options)
    assert ddp.module is wrapped
    optimizers = [optim.SGD(m.parameters(), lr=0.1, momentum=0.9) for m in (bare, ddp)]
    for step in range(3):
        x, y = batch(step)
        for model, optimizer in zip((bare, ddp), optimizers):
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
        for a, b in zip(bare.parameters(), wrapped.parameters()):
            np.testing.assert_array_equal(a.grad.numpy(), b.grad.numpy())
        for optimizer in optimizers:
            optimizer.step()
    for a, b in zip(bare.parameters(), wrapped.parameters()):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_gradient_as_bucket_view_leaves_views_into_the_buckets(one):
    ddp = DistributedDataParallel(mlp(), gradient_as_bucket_view=True)
    x, y = batch()
    F.cross_entropy(ddp(x), y).backward()
    flats = [bucket.flat for bucket in ddp.reducer.buckets]
    for p in ddp.parameters():
        assert any(np.shares_memory(p.grad.numpy(), flat) for flat in flats)


def test_forward_passes_arguments_and_keyword_arguments(one):
    class Scaled(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = nn.Linear(2, 2)

        def forward(self, x, scale=1.0):
            return self.linear(x) * scale

    ddp = DistributedDataParallel(Scaled())
    x = tg.ones(1, 2)
    np.testing.assert_allclose(ddp(x, scale=3.0).numpy(), 3 * ddp.module(x).numpy(), rtol=1e-6)


def test_state_dict_has_pytorchs_module_prefix(one):
    model = mlp()
    ddp = DistributedDataParallel(model)
    keys = list(ddp.state_dict())
    assert keys == [f"module.{k}" for k in model.state_dict()]
    assert [n for n, _ in ddp.named_parameters()] == keys
    # the bare model's keys do not load into the wrapper, as in PyTorch ...
    with pytest.raises(RuntimeError, match="missing keys: 'module.0.weight'"):
        ddp.load_state_dict(model.state_dict())
    # ... and the wrapper's load into the bare model once the prefix is consumed
    state = ddp.state_dict()
    consume_prefix_in_state_dict_if_present(state, "module.")
    assert list(state) == list(model.state_dict())
    mlp(seed=5).load_state_dict(state)


def test_no_sync_accumulates_without_hooks_doing_anything(one):
    ddp = DistributedDataParallel(mlp())
    x, y = batch()
    with ddp.no_sync():
        F.cross_entropy(ddp(x), y).backward()
        assert not ddp.reducer.expecting
    assert ddp.require_backward_grad_sync
    F.cross_entropy(ddp(x), y).backward()
    reference = mlp()
    for _ in range(2):
        F.cross_entropy(reference(x), y).backward()
    for a, b in zip(reference.parameters(), ddp.parameters()):
        np.testing.assert_allclose(b.grad.numpy(), a.grad.numpy(), rtol=1e-12)


def test_a_parameter_without_gradient_fails_at_the_next_forward(one):
    class Partly(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.used, self.unused = nn.Linear(2, 2), nn.Linear(2, 2)

        def forward(self, x):
            return self.used(x)

    ddp = DistributedDataParallel(Partly())
    ddp(tg.ones(1, 2)).sum().backward()
    with pytest.raises(RuntimeError, match="got no gradient in it: unused.weight, unused.bias"):
        ddp(tg.ones(1, 2))
    ddp = DistributedDataParallel(Partly(), find_unused_parameters=True)
    for _ in range(2):
        ddp(tg.ones(1, 2)).sum().backward()
    assert ddp.module.unused.weight.grad is None


def test_a_second_backward_through_one_forward_is_not_synced_as_in_pytorch(one):
    """The reduction of an iteration ends with its last bucket: a second backward through the
    same forward only accumulates locally (PyTorch's reducer does the same)."""
    ddp = DistributedDataParallel(mlp())
    x, y = batch()
    loss = F.cross_entropy(ddp(x), y)
    loss.backward(retain_graph=True)
    first = [p.grad.numpy().copy() for p in ddp.parameters()]
    assert not ddp.reducer.expecting
    loss.backward()
    for p, g in zip(ddp.parameters(), first):
        np.testing.assert_allclose(p.grad.numpy(), 2 * g, rtol=1e-12)


def test_a_gradient_arriving_twice_in_one_reduction_is_refused(one):
    class Partly(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.used, self.unused = nn.Linear(2, 2), nn.Linear(2, 2)

        def forward(self, x):
            return self.used(x)

    ddp = DistributedDataParallel(Partly())
    loss = ddp(tg.ones(1, 2)).sum()
    loss.backward(retain_graph=True)  # the bucket waits for unused.*, forever
    with pytest.raises(RuntimeError, match=r"'used\.weight' got a gradient twice in one iteration"):
        loss.backward()


def test_evaluation_under_no_grad_does_not_expect_gradients(one):
    ddp = DistributedDataParallel(mlp())
    with tg.no_grad():
        ddp(batch()[0])
    assert not ddp.reducer.expecting
    assert not ddp.require_forward_param_sync


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"device_ids": [0]}, ValueError, "device_ids and output_device must be None"),
        ({"output_device": 0}, ValueError, "device_ids and output_device must be None"),
        ({"process_group": object()}, ValueError, "process_group must be None"),
        ({"mixed_precision": object()}, NotImplementedError, "mixed_precision is not supported"),
        ({"device_mesh": object()}, NotImplementedError, "device_mesh is not supported"),
        ({"bucket_cap_mb_list": [1]}, NotImplementedError, "bucket_cap_mb_list is not"),
        ({"skip_all_reduce_unused_params": True}, NotImplementedError, "skip_all_reduce"),
        ({"bucket_cap_mb": -1}, ValueError, "bucket_cap_mb must be positive"),
    ],
)
def test_unsupported_arguments_are_refused(one, kwargs, error, message):
    with pytest.raises(error, match=message):
        DistributedDataParallel(mlp(), **kwargs)


def test_casting_the_model_after_wrapping_it_is_refused(one):
    ddp = DistributedDataParallel(mlp(dtype="float64"))
    ddp.module.to("float32")
    x, y = batch()
    with pytest.raises(RuntimeError, match="now has a gradient of shape .* float32, but was"):
        F.cross_entropy(ddp(x.float()), y).backward()


def test_other_refusals(one):
    with pytest.raises(TypeError, match="module must be a Module, got function"):
        DistributedDataParallel(lambda x: x)
    frozen = mlp().requires_grad_(False)
    with pytest.raises(RuntimeError, match="doesn't have any parameter that requires a gradient"):
        DistributedDataParallel(frozen)


def test_deprecated_arguments_warn_as_in_pytorch(one):
    with pytest.warns(FutureWarning, match="`broadcast_buffers` is deprecated"):
        ddp = DistributedDataParallel(mlp(), broadcast_buffers=False)
    assert not ddp.forward_sync_buffers
    with pytest.warns(FutureWarning, match="`check_reduction` argument"):
        DistributedDataParallel(mlp(), check_reduction=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ddp = DistributedDataParallel(mlp(), forward_sync_buffers=False, static_graph=True)
    assert not ddp.forward_sync_buffers


def test_ignored_parameters_are_left_alone(one):
    model = mlp()
    DistributedDataParallel._set_params_and_buffers_to_ignore_for_model(
        model, ["2.weight", "2.bias"]
    )
    ddp = DistributedDataParallel(model)
    assert ddp.reducer.names == ["0.weight", "0.bias"]


def test_dropping_the_wrapper_removes_its_hooks_and_frees_it(one):
    model = mlp()
    ddp = DistributedDataParallel(model)
    reducer = weakref.ref(ddp.reducer)
    wrapper = weakref.ref(ddp)
    del ddp
    assert wrapper() is None and reducer() is None  # no reference cycle: freed at once
    gc.collect()
    for p in model.parameters():
        assert not [kind for kind, _ in p._hooks or () if kind == "post_accumulate"]
    x, y = batch()
    F.cross_entropy(model(x), y).backward()  # the bare model trains as before


# --------------------------------------------------------------------------- buckets
SIZES = [(300_000, "float32"), (10, "float32"), (200_000, "float64"), (5, "float32")]
SIZES += [(400_000, "float32"), (3, "float64"), (0, "float32"), (262_144, "float32")]


@pytest.mark.parametrize("limits", [(1 << 20, 2 << 20), (1 << 20, 25 << 20), (1,), (10 << 20,)])
def test_buckets_are_pytorchs(limits):
    torch = pytest.importorskip("torch")
    tensors = [torch.zeros(n, dtype=getattr(torch, d)) for n, d in SIZES]
    expected, _ = torch.distributed._compute_bucket_assignment_by_size(
        tensors, list(limits), [False] * len(tensors)
    )
    nbytes = [n * np.dtype(d).itemsize for n, d in SIZES]
    assert _assign_buckets(nbytes, [np.dtype(d) for _, d in SIZES], limits) == expected


def test_buckets_are_reduced_last_parameters_first(one):
    ddp = DistributedDataParallel(mlp(), bucket_cap_mb=1e-6)  # one bucket per parameter
    names = [ddp.reducer.names[b.indices[0]] for b in ddp.reducer.buckets]
    assert names == ["2.bias", "2.weight", "0.bias", "0.weight"]
    ddp = DistributedDataParallel(mlp())
    assert [b.indices for b in ddp.reducer.buckets] == [[0, 1, 2, 3]]


# --------------------------------------------------------------------------- the hook
def test_post_accumulate_grad_hook_is_pytorchs():
    """TEMPORARY (dist branch) hook: called once per backward, after .grad holds the sum."""
    w = tg.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    handle = w.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.numpy().copy()))
    (w * w).sum().backward()
    (w * 3).sum().backward()
    handle.remove()
    (w * 3).sum().backward()
    np.testing.assert_array_equal(seen, [[2.0, 4.0], [5.0, 7.0]])
    torch = pytest.importorskip("torch")
    v = torch.tensor([1.0, 2.0], requires_grad=True)
    seen_torch = []
    handle = v.register_post_accumulate_grad_hook(lambda p: seen_torch.append(p.grad.clone()))
    (v * v).sum().backward()
    (v * 3).sum().backward()
    handle.remove()
    (v * 3).sum().backward()
    np.testing.assert_array_equal(seen, [t.numpy() for t in seen_torch])


def test_post_accumulate_grad_hook_errors():
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        tg.ones(2).register_post_accumulate_grad_hook(print)
    w = tg.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="cannot be registered on non-leaf tensors"):
        (w * 2).register_post_accumulate_grad_hook(print)
    with pytest.raises(TypeError, match="hook must be callable"):
        w.register_post_accumulate_grad_hook(3)
