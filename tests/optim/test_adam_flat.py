"""Adam's speed trick, the flat moments: the same results as the per-parameter step bit for
bit, with and without BLAS, through the changes a user or a checkpoint can make."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

from tensorgrad import optim
from tensorgrad._native import axpy as _axpy
from tests.optim.flat_state import assert_same, flat_of, param


def per_parameter(opt: optim.Adam) -> optim.Adam:
    """The optimizer with its speed trick off: the readable per-parameter step only."""
    opt._use_flat_moments = False
    return opt


def train(opt, params, steps, skip=None):
    for t, step in enumerate(steps):
        for i, (p, g) in enumerate(zip(params, step)):
            p.grad = None if (t, i) == skip else g
        opt.step()


SETTINGS = [
    (optim.AdamW, {}),
    (optim.AdamW, {"weight_decay": 0.1, "maximize": True}),
    (optim.Adam, {}),
    (optim.Adam, {"weight_decay": 0.01}),  # L2, added to the gradient
]


@pytest.mark.parametrize("blas", [True, False], ids=["blas", "numpy-only"])
@pytest.mark.parametrize(("kind", "settings"), SETTINGS)
def test_flat_moments_match_the_per_parameter_step_bit_for_bit(blas, kind, settings, monkeypatch):
    """Adam keeps its moments as views into flat arrays (fewer NumPy calls); the results, the
    state and the fall-back after a missing gradient or load_state_dict are those of the
    per-parameter step, with the updates in BLAS or in NumPy alone."""
    if not blas:
        monkeypatch.setattr(_axpy, "_functions", {})
    rng = np.random.default_rng(3)
    shapes = [(4, 3), (4,), (2, 37), (2,), ()]
    start = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    grads = [[rng.standard_normal(s).astype(np.float32) for s in shapes] for _ in range(6)]
    flat = [param(x.copy(), np.float32) for x in start]
    flat_opt = kind(flat, lr=0.1, **settings)
    reference = [param(x.copy(), np.float32) for x in start]
    reference_opt = per_parameter(kind(reference, lr=0.1, **settings))
    train(flat_opt, flat, grads[:3])
    train(reference_opt, reference, grads[:3])
    moments = [flat_opt.state[p]["exp_avg"] for p in flat]
    assert all(m.base is flat_of(flat_opt).m for m in moments)  # one array underneath
    assert flat_of(reference_opt) is None
    assert_same(flat, reference)
    for a, b in zip(flat, reference):
        for name in ("exp_avg", "exp_avg_sq", "step"):
            np.testing.assert_array_equal(flat_opt.state[a][name], reference_opt.state[b][name])
    loaded = kind(flat, lr=0.1, **settings)
    loaded.load_state_dict(flat_opt.state_dict())
    train(loaded, flat, grads[3:5])  # loaded moments: one per-parameter step, then flat again
    train(reference_opt, reference, grads[3:5])
    assert_same(flat, reference)
    assert flat_of(loaded) is not None and flat_of(loaded).fits(flat, loaded.state)
    train(loaded, flat, grads[5:], skip=(0, 1))  # a missing gradient: per-parameter step,
    train(reference_opt, reference, grads[5:], skip=(0, 1))  # and step counts now differ
    assert_same(flat, reference)
    train(loaded, flat, grads[:2])
    train(reference_opt, reference, grads[:2])
    assert_same(flat, reference)
    assert flat_of(loaded) is None  # (unequal step counts: the per-parameter step from now on)


def _clear(opt, params):
    opt.state.clear()  # moments start again from the next gradient


def _replace_moment(opt, params):
    opt.state[params[1]]["exp_avg_sq"] = np.full(params[1].shape, 0.5)


def _set_a_step(opt, params):
    opt.state[params[0]]["step"] = 7


def _replace_parameter_array(opt, params):
    params[0].data = params[0].numpy().copy()  # the update must go to the new array


def _change_lr_and_betas(opt, params):
    opt.param_groups[0].update(lr=0.03, betas=(0.5, 0.9))


def _turn_on_amsgrad(opt, params):
    opt.param_groups[0]["amsgrad"] = True


def _drop_a_parameter(opt, params):
    opt.param_groups[0]["params"].pop(0)


def _append_a_parameter(opt, params):
    opt.param_groups[0]["params"].append(params[2])


@pytest.mark.parametrize(
    "change",
    [
        _clear,
        _replace_moment,
        _set_a_step,
        _replace_parameter_array,
        _change_lr_and_betas,
        _turn_on_amsgrad,
        _drop_a_parameter,
        _append_a_parameter,
    ],
)
def test_flat_moments_follow_changes_like_the_per_parameter_step(change):
    """Edits to the state, the parameters or the group (editable param_groups) between steps
    give the flat path the per-parameter step's results, bit for bit."""
    rng = np.random.default_rng(4)
    start = [rng.standard_normal(s) for s in ((3, 2), (3,), (2,))]
    flat, reference = ([param(x.copy()) for x in start] for _ in range(2))
    flat_opt = optim.AdamW(flat[:2], lr=0.1)
    reference_opt = per_parameter(optim.AdamW(reference[:2], lr=0.1))
    for step in range(6):
        if step == 2:
            change(flat_opt, flat)
            change(reference_opt, reference)
        for params, opt in ((flat, flat_opt), (reference, reference_opt)):
            for p, x in zip(params, start):
                p.grad = np.sin(p.numpy() + x)
            opt.step()
    assert_same(flat, reference)
    if change not in (_turn_on_amsgrad, _set_a_step, _append_a_parameter):
        assert flat_of(flat_opt).fits(flat_opt.param_groups[0]["params"], flat_opt.state)


def test_mixed_dtypes_in_a_group_take_the_per_parameter_step():
    a, b = param(np.ones(3), np.float32), param(np.ones(2), np.float64)
    opt = optim.Adam([a, b], lr=0.1)
    for _ in range(3):
        a.grad, b.grad = np.ones(3, np.float32), np.ones(2)
        opt.step()
    assert flat_of(opt) is None
    np.testing.assert_allclose(b.numpy(), 1 - 0.3, rtol=1e-6)  # each step lr·m̂/√v̂ = lr
    assert a.dtype == np.float32 and b.dtype == np.float64


@pytest.mark.parametrize("duplicate", [copy.deepcopy, lambda o: pickle.loads(pickle.dumps(o))])
def test_a_copied_optimizer_trains_on_like_the_original(duplicate):
    """A copy (deepcopy, pickle) after some steps continues as the original would, on its own
    copies of the parameters; the original's flat arrays are not carried over."""
    rng = np.random.default_rng(5)
    shapes = ((3, 2), (3,))
    start = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    grads = [[rng.standard_normal(s).astype(np.float32) for s in shapes] for _ in range(4)]

    def run(opt, steps):
        train(opt, opt.param_groups[0]["params"], steps)

    straight = optim.AdamW([param(x.copy(), np.float32) for x in start], lr=0.1)
    run(straight, grads)
    params = [param(x.copy(), np.float32) for x in start]
    original = optim.AdamW(params, lr=0.1)
    run(original, grads[:2])
    copied = duplicate(original)
    run(copied, grads[2:])
    assert_same(copied.param_groups[0]["params"], straight.param_groups[0]["params"])
    two_steps = optim.AdamW([param(x.copy(), np.float32) for x in start], lr=0.1)
    run(two_steps, grads[:2])
    assert_same(params, two_steps.param_groups[0]["params"])  # the original's: untouched
