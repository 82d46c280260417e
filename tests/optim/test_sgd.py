"""SGD's speed trick, the flat momentum buffer: the same results as the per-parameter step bit
for bit, with and without BLAS, through every change a user or a checkpoint can make."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

from tensorgrad import optim
from tensorgrad._native import axpy as _axpy
from tests.optim.flat_state import assert_same, flat_of, param


def per_parameter(opt: optim.SGD) -> optim.SGD:
    """The optimizer with its speed trick off: the readable per-parameter step only."""
    opt._use_flat_momentum = False
    return opt


@pytest.mark.parametrize("blas", [True, False], ids=["blas", "numpy-only"])
def test_flat_momentum_matches_the_per_parameter_step_bit_for_bit(blas, monkeypatch):
    """SGD keeps plain momentum buffers as views into one array (fewer NumPy calls); the
    results, the state and the fall-back after a missing gradient or load_state_dict are
    those of the per-parameter step, with the updates in BLAS or in NumPy alone."""
    if not blas:
        monkeypatch.setattr(_axpy, "_functions", {})
    rng = np.random.default_rng(3)
    shapes = [(4, 3), (4,), (2, 4), (2,), ()]
    start = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    grads = [[rng.standard_normal(s).astype(np.float32) for s in shapes] for _ in range(6)]

    def train(opt, params, steps, skip=None):
        for t, step in enumerate(steps):
            for i, (p, g) in enumerate(zip(params, step)):
                p.grad = None if (t, i) == skip else g
            opt.step()

    flat = [param(x.copy(), np.float32) for x in start]
    flat_opt = optim.SGD(flat, lr=0.1, momentum=0.9)
    reference = [param(x.copy(), np.float32) for x in start]
    reference_opt = per_parameter(optim.SGD(reference, lr=0.1, momentum=0.9))
    train(flat_opt, flat, grads[:3])
    train(reference_opt, reference, grads[:3])
    buffers = [flat_opt.state[p]["momentum_buffer"] for p in flat]
    assert all(b.base is flat_of(flat_opt).buffer for b in buffers)  # one array underneath
    assert flat_of(reference_opt) is None
    assert_same(flat, reference)
    for a, b in zip(buffers, [reference_opt.state[p]["momentum_buffer"] for p in reference]):
        np.testing.assert_array_equal(a, b)
    train(flat_opt, flat, grads[3:], skip=(0, 1))  # a missing gradient: per-parameter step
    train(reference_opt, reference, grads[3:], skip=(0, 1))
    assert_same(flat, reference)
    loaded = optim.SGD(flat, lr=0.1, momentum=0.9)
    loaded.load_state_dict(flat_opt.state_dict())
    train(loaded, flat, grads[:2])  # loaded buffers: one per-parameter step, then flat again
    train(reference_opt, reference, grads[:2])
    assert_same(flat, reference)
    assert flat_of(loaded) is not None and flat_of(loaded).fits(flat, loaded.state)


def _clear(opt, params):
    opt.state.clear()  # momentum starts again from the next gradient


def _replace_buffer(opt, params):
    opt.state[params[1]]["momentum_buffer"] = np.full(params[1].shape, 0.5)


def _replace_entry(opt, params):
    opt.state[params[0]] = {"momentum_buffer": np.zeros(params[0].shape)}


def _drop_entry(opt, params):
    del opt.state[params[1]]


def _replace_parameter_array(opt, params):
    params[0].data = params[0].numpy().copy()  # the update must go to the new array


def _change_lr(opt, params):
    opt.param_groups[0]["lr"] = 0.03


def _turn_on_nesterov_and_weight_decay(opt, params):
    opt.param_groups[0].update(nesterov=True, weight_decay=0.01)


def _drop_a_parameter(opt, params):
    opt.param_groups[0]["params"].pop(0)


def _append_a_parameter(opt, params):
    opt.param_groups[0]["params"].append(params[2])


@pytest.mark.parametrize(
    "change",
    [
        _clear,
        _replace_buffer,
        _replace_entry,
        _drop_entry,
        _replace_parameter_array,
        _change_lr,
        _turn_on_nesterov_and_weight_decay,
        _drop_a_parameter,
        _append_a_parameter,
    ],
)
def test_flat_momentum_follows_changes_like_the_per_parameter_step(change):
    """Edits to the state, the parameters or the group (editable param_groups) between steps
    give the flat path the per-parameter step's results, bit for bit."""
    rng = np.random.default_rng(4)
    start = [rng.standard_normal(s) for s in ((3, 2), (3,), (2,))]
    flat, reference = ([param(x.copy()) for x in start] for _ in range(2))
    flat_opt = optim.SGD(flat[:2], lr=0.1, momentum=0.9)
    reference_opt = per_parameter(optim.SGD(reference[:2], lr=0.1, momentum=0.9))
    for step in range(6):
        if step == 2:
            change(flat_opt, flat)
            change(reference_opt, reference)
        for params, opt in ((flat, flat_opt), (reference, reference_opt)):
            for p, x in zip(params, start):
                p.grad = np.sin(p.numpy() + x)
            opt.step()
    assert_same(flat, reference)
    if change is not _turn_on_nesterov_and_weight_decay:  # plain momentum: flat again
        assert flat_of(flat_opt).fits(flat_opt.param_groups[0]["params"], flat_opt.state)


def test_each_group_gets_its_own_flat_buffer_and_a_group_added_later_joins():
    rng = np.random.default_rng(6)
    start = [rng.standard_normal(s).astype(np.float32) for s in ((4, 3), (4,), (2, 4))]
    flat, reference = ([param(x.copy(), np.float32) for x in start] for _ in range(2))
    flat_opt = optim.SGD(flat[:2], lr=0.1, momentum=0.9)
    reference_opt = per_parameter(optim.SGD(reference[:2], lr=0.1, momentum=0.9))
    for step in range(6):
        if step == 2:
            flat_opt.add_param_group({"params": [flat[2]], "lr": 0.5})
            reference_opt.add_param_group({"params": [reference[2]], "lr": 0.5})
        for params, opt in ((flat, flat_opt), (reference, reference_opt)):
            for p in params:
                p.grad = np.cos(p.numpy())
            opt.step()
    assert_same(flat, reference)
    assert flat_of(flat_opt, 0) is not flat_of(flat_opt, 1) is not None
    del flat_opt.param_groups[0]  # a removed group's buffer goes at the next preparation
    flat_opt.state.clear()  # momentum starts again: the next step prepares a new buffer
    flat_opt.step()
    assert list(flat_opt._flat) == [id(flat_opt.param_groups[0])]


def test_a_group_appended_to_param_groups_directly_trains_like_one_added():
    """``opt.param_groups.append(group)`` with every key (PyTorch needs them too) works like
    ``add_param_group``, flat buffer included."""
    rng = np.random.default_rng(7)
    start = [rng.standard_normal(s) for s in ((3, 2), (2,))]
    appended, added = ([param(x.copy()) for x in start] for _ in range(2))
    appended_opt = optim.SGD(appended[:1], lr=0.1, momentum=0.9)
    added_opt = per_parameter(optim.SGD(added[:1], lr=0.1, momentum=0.9))
    for step in range(5):
        if step == 2:
            appended_opt.param_groups.append({**appended_opt.defaults, "params": appended[1:]})
            added_opt.add_param_group({"params": added[1:]})
        for params, opt in ((appended, appended_opt), (added, added_opt)):
            for p in params:
                p.grad = np.tanh(p.numpy())
            opt.step()
    assert_same(appended, added)
    assert flat_of(appended_opt, 1) is not None


def test_mixed_dtypes_in_a_group_take_the_per_parameter_step():
    a, b = param(np.ones(3), np.float32), param(np.ones(2), np.float64)
    opt = optim.SGD([a, b], lr=0.1, momentum=0.9)
    for _ in range(3):
        a.grad, b.grad = np.ones(3, np.float32), np.ones(2)
        opt.step()
    assert flat_of(opt) is None
    np.testing.assert_allclose(b.numpy(), 1 - 0.1 * (1 + 1.9 + 2.71))
    assert a.dtype == np.float32 and b.dtype == np.float64


@pytest.mark.parametrize("duplicate", [copy.deepcopy, lambda o: pickle.loads(pickle.dumps(o))])
@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_a_copied_optimizer_trains_on_like_the_original(duplicate, momentum):
    """A copy (deepcopy, pickle) after some steps continues as the original would, on its own
    copies of the parameters; the original's prepared updates are not carried over."""
    rng = np.random.default_rng(5)
    start = [rng.standard_normal(s).astype(np.float32) for s in ((3, 2), (3,))]
    grads = [[rng.standard_normal(s).astype(np.float32) for s in ((3, 2), (3,))] for _ in range(4)]

    def train(opt, steps):
        for step in steps:
            for p, g in zip(opt.param_groups[0]["params"], step):
                p.grad = g
            opt.step()

    straight = optim.SGD([param(x.copy(), np.float32) for x in start], lr=0.1, momentum=momentum)
    train(straight, grads)
    params = [param(x.copy(), np.float32) for x in start]
    original = optim.SGD(params, lr=0.1, momentum=momentum)
    train(original, grads[:2])
    copied = duplicate(original)
    train(copied, grads[2:])
    assert_same(copied.param_groups[0]["params"], straight.param_groups[0]["params"])
    two_steps = optim.SGD([param(x.copy(), np.float32) for x in start], lr=0.1, momentum=momentum)
    train(two_steps, grads[:2])
    assert_same(params, two_steps.param_groups[0]["params"])  # the original's: untouched
