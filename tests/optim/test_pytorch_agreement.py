"""Every optimizer against PyTorch's, step by step, over all its options: the same parameters
(to 1e-12 in float64), the same state dicts, checkpoints that move between the two, and the
same response to param_groups edited between steps.

Deliberate difference: PyTorch keeps ``step`` as a 0-d float tensor, tensorgrad as an int.
"""

from __future__ import annotations

import copy
import itertools

import numpy as np
import pytest

from tensorgrad import nn, optim

torch = pytest.importorskip("torch")

SHAPES = [(3, 4), (4,), ()]
STEPS = 40
TOLERANCE = dict(rtol=1e-12, atol=1e-12)


def _options(**choices):
    """Every combination of the given options, as keyword dicts."""
    keys = list(choices)
    return [dict(zip(keys, values)) for values in itertools.product(*choices.values())]


def _sgd_cases():
    for kwargs in _options(
        momentum=[0.0, 0.9],
        dampening=[0.0, 0.3],
        weight_decay=[0.0, 0.1],
        nesterov=[False, True],
        maximize=[False, True],
    ):
        if kwargs["nesterov"] and (kwargs["momentum"] == 0 or kwargs["dampening"] != 0):
            continue
        yield "SGD", {"lr": 0.05, **kwargs}


def _adam_cases():
    for name in ("Adam", "AdamW"):
        for kwargs in _options(
            betas=[(0.9, 0.999), (0.8, 0.99)],
            weight_decay=[0.0, 0.1],
            amsgrad=[False, True],
            maximize=[False, True],
        ):
            yield name, {"lr": 0.01, **kwargs}
    yield "Adam", {"lr": 0.01, "eps": 1e-3, "weight_decay": 0.1, "decoupled_weight_decay": True}


def _rmsprop_cases():
    for kwargs in _options(
        momentum=[0.0, 0.9],
        centered=[False, True],
        weight_decay=[0.0, 0.1],
        maximize=[False, True],
    ):
        yield "RMSprop", {"lr": 0.01, "alpha": 0.9, **kwargs}
    yield "RMSprop", {"lr": 0.01, "eps": 1e-3}


def _adadelta_cases():
    for kwargs in _options(
        rho=[0.9, 0.5], eps=[1e-6, 1e-3], weight_decay=[0.0, 0.1], maximize=[False, True]
    ):
        yield "Adadelta", {"lr": 0.5, **kwargs}
    yield "Adadelta", {}


def _adagrad_cases():
    for kwargs in _options(
        lr_decay=[0.0, 0.05],
        initial_accumulator_value=[0.0, 0.1],
        weight_decay=[0.0, 0.1],
        maximize=[False, True],
    ):
        yield "Adagrad", {"lr": 0.1, **kwargs}
    yield "Adagrad", {"eps": 1e-3}


CASES = [
    *_sgd_cases(),
    *_adam_cases(),
    *_rmsprop_cases(),
    *_adadelta_cases(),
    *_adagrad_cases(),
]


def case_id(case) -> str:
    name, kwargs = case
    return name + "-" + ",".join(f"{k}={v}" for k, v in kwargs.items())


class Pair:
    """The same parameters in tensorgrad and PyTorch (float64), and their optimizers."""

    def __init__(self, name, kwargs, seed=0, groups=None):
        rng = np.random.default_rng(seed)
        start = [rng.standard_normal(s) for s in SHAPES]
        self.noise = [[rng.standard_normal(s) for s in SHAPES] for _ in range(2 * STEPS)]
        self.ours = [nn.Parameter(x.copy()) for x in start]
        self.theirs = [torch.tensor(x, requires_grad=True) for x in start]
        self.name, self.kwargs, self.t = name, kwargs, 0
        self.opt = getattr(optim, name)(self._groups(self.ours, groups), **kwargs)
        self.torch_opt = getattr(torch.optim, name)(self._groups(self.theirs, groups), **kwargs)

    @staticmethod
    def _groups(params, groups):
        if groups is None:
            return params
        return [{**extra, "params": [params[i] for i in indices]} for indices, extra in groups]

    def set_gradients(self):
        """g = ½θ + noise: depends on the parameters, as in training."""
        for p, t, n in zip(self.ours, self.theirs, self.noise[self.t], strict=True):
            p.grad = 0.5 * p.numpy() + n
            t.grad = torch.from_numpy(np.asarray(0.5 * t.detach().numpy() + n))
        self.t += 1

    def step(self, steps=1):
        for _ in range(steps):
            self.set_gradients()
            self.opt.step()
            self.torch_opt.step()
            self.assert_parameters_agree()

    def assert_parameters_agree(self):
        for p, t in zip(self.ours, self.theirs, strict=True):
            np.testing.assert_allclose(p.numpy(), t.detach().numpy(), **TOLERANCE)


def assert_matches_torch_state_dict(ours, theirs):
    """The same structure (group keys, parameter numbering, state names in PyTorch's order) and
    values; ``step`` is an int here where PyTorch has a 0-d float tensor."""
    assert len(ours["param_groups"]) == len(theirs["param_groups"])
    for group, their_group in zip(ours["param_groups"], theirs["param_groups"], strict=True):
        assert set(group) == set(their_group)
        for key, value in group.items():
            assert value == their_group[key], key
    assert list(ours["state"]) == list(theirs["state"])
    for index, values in ours["state"].items():
        their_values = theirs["state"][index]
        assert list(values) == list(their_values), index
        for name, value in values.items():
            if name == "step":
                assert isinstance(value, int) and float(their_values[name]) == value
            else:
                np.testing.assert_allclose(value, their_values[name].numpy(), **TOLERANCE)


def to_torch(state_dict):
    """A tensorgrad optimizer state dict in PyTorch's types (arrays become tensors)."""
    return {
        "state": {
            index: {
                name: torch.from_numpy(np.array(v)) if isinstance(v, np.ndarray) else v
                for name, v in values.items()
            }
            for index, values in state_dict["state"].items()
        },
        "param_groups": copy.deepcopy(state_dict["param_groups"]),
    }


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_many_steps_match_pytorch(case):
    pair = Pair(*case)
    assert_matches_torch_state_dict(pair.opt.state_dict(), pair.torch_opt.state_dict())
    for _ in range(STEPS // 10):
        pair.step(10)
        assert_matches_torch_state_dict(pair.opt.state_dict(), pair.torch_opt.state_dict())


RICH_CASES = [
    ("SGD", {"lr": 0.05, "momentum": 0.9}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.1}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "dampening": 0.3, "maximize": True}),
    ("Adam", {"lr": 0.01, "amsgrad": True, "weight_decay": 0.1}),
    ("AdamW", {"lr": 0.01, "betas": (0.8, 0.99)}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.9, "centered": True}),
    ("Adadelta", {"lr": 0.5, "weight_decay": 0.1}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.05, "initial_accumulator_value": 0.1}),
]


@pytest.mark.parametrize("case", RICH_CASES, ids=[case_id(c) for c in RICH_CASES])
def test_a_checkpoint_moves_between_tensorgrad_and_pytorch(case):
    """After 5 steps, tensorgrad's state dict loads into a fresh PyTorch optimizer and
    PyTorch's into a fresh tensorgrad one (its tensors and 0-d steps as they are); the four
    then train on alike."""
    name, kwargs = case
    pair = Pair(name, kwargs, groups=[([0, 1], {}), ([2], {"lr": 0.02})])
    pair.step(5)
    crossed = Pair(name, kwargs, groups=[([0, 1], {}), ([2], {"lr": 0.02})])
    with torch.no_grad():
        for p, t, ours, theirs in zip(
            crossed.ours, crossed.theirs, pair.ours, pair.theirs, strict=True
        ):
            p.numpy()[...] = theirs.detach().numpy()  # tensorgrad goes on from PyTorch's state
            t.copy_(torch.from_numpy(ours.numpy()))  # and PyTorch from tensorgrad's
    crossed.opt.load_state_dict(pair.torch_opt.state_dict())
    crossed.torch_opt.load_state_dict(to_torch(pair.opt.state_dict()))
    crossed.t = pair.t
    assert_matches_torch_state_dict(crossed.opt.state_dict(), pair.torch_opt.state_dict())
    pair.step(10)
    crossed.step(10)
    for a, b in zip(pair.ours, crossed.ours, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), **TOLERANCE)
    assert_matches_torch_state_dict(crossed.opt.state_dict(), crossed.torch_opt.state_dict())


# ----------------------------------------------------------------- editable param_groups
def _lower_lr(opts, pair):
    for opt in opts:
        opt.param_groups[0]["lr"] *= 0.3


def _change_momentum(opts, pair):
    for opt in opts:
        opt.param_groups[0]["momentum"] = 0.5


def _turn_on_nesterov_and_weight_decay(opts, pair):
    for opt in opts:
        opt.param_groups[0].update(nesterov=True, weight_decay=0.05)


def _add_a_group(opts, pair):
    for opt, params in zip(opts, (pair.ours, pair.theirs), strict=True):
        opt.add_param_group({"params": [params[2]], "lr": 0.02})


def _append_a_parameter(opts, pair):
    for opt, params in zip(opts, (pair.ours, pair.theirs), strict=True):
        opt.param_groups[0]["params"].append(params[2])


def _drop_a_parameter(opts, pair):
    for opt in opts:
        opt.param_groups[0]["params"].pop(0)


EDITS = [
    _lower_lr,
    _change_momentum,
    _turn_on_nesterov_and_weight_decay,
    _add_a_group,
    _append_a_parameter,
    _drop_a_parameter,
]


@pytest.mark.parametrize("edit", EDITS)
@pytest.mark.parametrize("name", ["SGD", "Adam"])
def test_param_groups_edited_between_steps_act_as_in_pytorch(name, edit):
    """A user's edits to ``param_groups`` mid-training (SGD: also through its prepared flat
    buffer) give PyTorch's parameters afterwards."""
    if name == "Adam" and edit in (_change_momentum, _turn_on_nesterov_and_weight_decay):
        pytest.skip("an SGD hyper-parameter")
    kwargs = {"lr": 0.05, "momentum": 0.9} if name == "SGD" else {"lr": 0.01}
    pair = Pair(name, kwargs, groups=[([0, 1], {})])
    pair.step(4)
    edit([pair.opt, pair.torch_opt], pair)
    pair.step(6)  # checks the parameters after each step
    if edit is not _drop_a_parameter:  # PyTorch's state_dict() fails on a dropped one's state
        assert_matches_torch_state_dict(pair.opt.state_dict(), pair.torch_opt.state_dict())
