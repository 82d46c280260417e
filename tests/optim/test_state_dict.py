"""Optimizer state dicts: PyTorch's layout, resuming bit for bit (also through tg.save), and
load_state_dict that checks everything before it changes anything."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import nn, optim

OPTIMIZERS = {
    "sgd": lambda ps: optim.SGD(ps, lr=0.1),
    "sgd-momentum": lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9),
    "sgd-nesterov": lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1),
    "adam": lambda ps: optim.Adam(ps, lr=0.1),
    "adamw-amsgrad": lambda ps: optim.AdamW(ps, lr=0.1, amsgrad=True),
    "rmsprop": lambda ps: optim.RMSprop(ps, lr=0.1, momentum=0.5, centered=True),
    "adadelta": lambda ps: optim.Adadelta(ps, weight_decay=0.1),
    "adagrad": lambda ps: optim.Adagrad(ps, lr=0.1, lr_decay=0.01),
}


def param(values, dtype=np.float64) -> nn.Parameter:
    return nn.Parameter(np.array(values, dtype=dtype))


def train(params, opt, grads):
    for step in grads:
        for p, g in zip(params, step, strict=True):
            p.grad = g
        opt.step()


def assert_state_dicts_equal(a, b):
    assert a["param_groups"] == b["param_groups"]
    assert list(a["state"]) == list(b["state"])
    for index, values in a["state"].items():
        assert list(values) == list(b["state"][index])
        for name, value in values.items():
            np.testing.assert_array_equal(value, b["state"][index][name])


@pytest.mark.parametrize("make", OPTIMIZERS.values(), ids=OPTIMIZERS.keys())
@pytest.mark.parametrize("through_a_file", [False, True], ids=["in-memory", "tg.save"])
def test_state_dict_resumes_bit_for_bit(make, through_a_file, tmp_path):
    rng = np.random.default_rng(1)
    shapes = [(2, 3), (3,)]
    start = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    grads = [[rng.standard_normal(s).astype(np.float32) for s in shapes] for _ in range(6)]

    straight = [param(x.copy(), np.float32) for x in start]
    train(straight, make(straight), grads)

    first = [param(x.copy(), np.float32) for x in start]
    opt = make(first)
    train(first, opt, grads[:3])
    saved, weights = opt.state_dict(), [p.numpy().copy() for p in first]
    train(first, opt, grads[3:4])  # training on must not change what was saved
    if through_a_file:
        tg.save({"optimizer": saved}, tmp_path / "checkpoint.npz")
        saved = tg.load(tmp_path / "checkpoint.npz")["optimizer"]

    resumed = [param(w, np.float32) for w in weights]
    second = make(resumed)
    second.load_state_dict(saved)
    train(resumed, second, grads[3:])
    for a, b in zip(resumed, straight, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_state_dict_layout_follows_pytorch():
    a, b = param([1.0, 2.0]), param([3.0])
    opt = optim.Adam([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1)
    b.grad = np.array([1.0])
    opt.step()
    state = opt.state_dict()
    assert [g["params"] for g in state["param_groups"]] == [[0], [1]]
    assert state["param_groups"][1]["lr"] == 0.5
    assert state["param_groups"][0]["betas"] == (0.9, 0.999)
    assert list(state["state"]) == [1]
    assert state["state"][1]["step"] == 1
    assert list(state["state"][1]) == ["step", "exp_avg", "exp_avg_sq"]


def test_load_state_dict_restores_hyper_parameters_and_casts_state():
    p = param([1.0, 2.0], dtype=np.float32)
    opt = optim.SGD([p], lr=0.1, momentum=0.9)
    group = opt.param_groups[0]
    state = {
        "state": {0: {"momentum_buffer": np.array([0.5, 0.5])}},  # float64 in the checkpoint
        "param_groups": [{**opt.state_dict()["param_groups"][0], "lr": 0.01}],
    }
    opt.load_state_dict(state)
    assert opt.param_groups[0] is group  # the same dict, updated
    assert opt.param_groups[0]["lr"] == 0.01 and opt.param_groups[0]["params"] == [p]
    assert opt.state[p]["momentum_buffer"].dtype == np.float32
    state["state"][0]["momentum_buffer"][0] = 9.0  # the optimizer holds its own copy
    assert opt.state[p]["momentum_buffer"][0] == 0.5


def test_a_save_without_newer_keys_gets_the_defaults():
    """A state dict from before a hyper-parameter existed (PyTorch's __setstate__ fills in the
    defaults the same way)."""
    p = param([1.0])
    opt = optim.Adam([p], lr=0.1)
    saved = opt.state_dict()
    for key in ("foreach", "fused", "capturable", "differentiable", "decoupled_weight_decay"):
        del saved["param_groups"][0][key]
    saved["param_groups"][0]["lr"] = 0.2
    opt.load_state_dict(saved)
    assert opt.param_groups[0]["lr"] == 0.2 and opt.param_groups[0]["fused"] is None


# ----------------------------------------------------------------- nothing is half-loaded
def trained_adam():
    """Adam over two groups (three parameters), two steps in: state for every parameter."""
    params = [param(np.ones((2, 3))), param(np.ones(3)), param(np.ones(2))]
    opt = optim.Adam([{"params": params[:2]}, {"params": params[2:], "lr": 0.5}], lr=0.1)
    for _ in range(2):
        for p in params:
            p.grad = np.full(p.shape, 0.5)
        opt.step()
    return params, opt


def _set(path, value):
    def change(saved):
        target = saved
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        return saved

    return change


def _delete(path):
    def change(saved):
        target = saved
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]
        return saved

    return change


def _several(saved):
    saved["state"][0]["exp_avg"] = np.zeros((3, 2))
    saved["state"][2]["velocity"] = np.zeros(2)
    saved["param_groups"][1]["betas"] = (0.9, 1.5)
    return saved


BAD_STATE_DICTS = {
    "not a dict": (lambda saved: [saved], "expected a dict, got list"),
    "no 'state'": (_delete(["state"]), r"missing keys \['state'\]"),
    "an extra key": (_set(["extras"], 1), r"unexpected keys \['extras'\]"),
    "one group fewer": (
        lambda saved: {**saved, "param_groups": saved["param_groups"][:1]},
        "the saved state has 1 parameter groups, this optimizer 2",
    ),
    "a group with fewer parameters": (
        _set(["param_groups", 0, "params"], [0]),
        "parameter group 0 has 2 parameters, the saved group 1",
    ),
    "a parameter in two groups": (
        _set(["param_groups", 1, "params"], [1]),
        "parameter index 1 appears twice",
    ),
    "a string lr": (
        _set(["param_groups", 1, "lr"], "0.1"),
        "parameter group 1: Adam: lr must be a real number, got str '0.1'",
    ),
    "a negative eps": (
        _set(["param_groups", 0, "eps"], -1.0),
        "parameter group 0: Invalid epsilon value: -1.0",
    ),
    "state of an unknown parameter": (
        _set(["state", 7], {}),
        "state for parameter 7, which no group has",
    ),
    "an unknown state name": (
        _set(["state", 1, "velocity"], np.zeros(3)),
        r"state of parameter 1: unexpected keys \['velocity'\] \(Adam keeps",
    ),
    "a state of the wrong shape": (
        _set(["state", 0, "exp_avg_sq"], np.zeros(6)),
        r"state 'exp_avg_sq' of parameter 0: shape \(6,\), the parameter \(2, 3\)",
    ),
    "a state of strings": (
        _set(["state", 2, "exp_avg"], np.array(["a", "b"])),
        "state 'exp_avg' of parameter 2: expected a real array, got <U1",
    ),
    "a state that is no array": (
        _set(["state", 2, "exp_avg"], "zeros"),
        "state 'exp_avg' of parameter 2: expected a real array, got str",
    ),
    "a fractional step": (
        _set(["state", 1, "step"], 1.5),
        "state 'step' of parameter 1: expected a whole number, got 1.5",
    ),
    "a missing state": (
        _delete(["state", 2, "exp_avg_sq"]),
        r"state of parameter 2: missing keys \['exp_avg_sq'\]",
    ),
    "state that is no dict": (
        _set(["state", 2], np.zeros(2)),
        "state of parameter 2: expected a dict",
    ),
    "several problems": (
        _several,
        r"(?s)parameter group 1: Invalid beta parameter at index 1: 1\.5.*"
        r"'exp_avg' of parameter 0: shape \(3, 2\)",
    ),
}


@pytest.mark.parametrize(
    "corrupt, message", BAD_STATE_DICTS.values(), ids=list(BAD_STATE_DICTS.keys())
)
def test_a_bad_state_dict_is_refused_naming_the_problem_and_changes_nothing(corrupt, message):
    params, opt = trained_adam()
    before = copy.deepcopy(opt.state_dict())
    groups = [dict(group) for group in opt.param_groups]
    with pytest.raises(ValueError, match=r"Adam\.load_state_dict: nothing was loaded") as caught:
        opt.load_state_dict(corrupt(copy.deepcopy(before)))
    assert caught.match(message)
    assert_state_dicts_equal(opt.state_dict(), before)
    assert [dict(group) for group in opt.param_groups] == groups
    for p in params:
        p.grad = np.full(p.shape, 0.5)
    opt.step()  # and it still trains


def test_every_problem_is_listed_in_one_error():
    _, opt = trained_adam()
    saved = opt.state_dict()
    saved["state"][0]["exp_avg"] = np.zeros((3, 2))
    saved["state"][2]["velocity"] = np.zeros(2)
    saved["state"][1]["step"] = "one"
    with pytest.raises(ValueError) as caught:
        opt.load_state_dict(saved)
    lines = str(caught.value).splitlines()[1:]
    assert len(lines) == 3
    assert "state 'exp_avg' of parameter 0: shape (3, 2)" in lines[0]
    assert "state 'step' of parameter 1: expected a whole number, got 'one'" in lines[1]
    assert "state of parameter 2: unexpected keys ['velocity']" in lines[2]


def test_sgd_state_may_lack_a_momentum_buffer_and_adam_its_amsgrad_maximum():
    """Optional state: SGD without momentum keeps none; amsgrad's maximum is made when needed
    (after turning amsgrad on, too)."""
    p = param([1.0, 2.0])
    opt = optim.SGD([p], lr=0.1, momentum=0.9)
    opt.load_state_dict({"state": {0: {}}, "param_groups": opt.state_dict()["param_groups"]})
    assert not opt.state.get(p)
    adam = optim.Adam([p], lr=0.1)
    p.grad = np.array([1.0, 1.0])
    adam.step()
    saved = adam.state_dict()
    saved["param_groups"][0]["amsgrad"] = True
    adam.load_state_dict(saved)
    adam.step()
    assert set(adam.state[p]) == {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"}
