"""Learning-rate schedulers: hand-computed sequences, PyTorch's sequences, momentum cycling,
state dicts and argument errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import nn, optim
from tensorgrad.optim.lr_scheduler import (
    ConstantLR,
    CosineAnnealingLR,
    ExponentialLR,
    LambdaLR,
    LinearLR,
    MultiStepLR,
    OneCycleLR,
    ReduceLROnPlateau,
    SequentialLR,
    StepLR,
)


def sgd(lr=0.1, **kwargs) -> optim.SGD:
    return optim.SGD([nn.Parameter(np.zeros(1))], lr=lr, **kwargs)


def lrs(scheduler, steps: int) -> list[float]:
    """The lr in use at each of ``steps`` optimizer steps (PyTorch's call convention)."""
    values = []
    for _ in range(steps):
        values.append(scheduler.optimizer.param_groups[0]["lr"])
        scheduler.optimizer.step()
        scheduler.step()
    return values


def test_step_lr_by_hand():
    scheduler = StepLR(sgd(lr=1.0), step_size=2, gamma=0.5)
    assert scheduler.get_last_lr() == [1.0]
    assert lrs(scheduler, 7) == [1.0, 1.0, 0.5, 0.5, 0.25, 0.25, 0.125]


def test_cosine_annealing_by_hand():
    # lr = η_min + (1 − η_min)(1 + cos(π t / 4)) / 2 with η_min = 0.2; back up after T_max
    scheduler = CosineAnnealingLR(sgd(lr=1.0), T_max=4, eta_min=0.2)
    expected = [0.2 + 0.8 * (1 + math.cos(math.pi * t / 4)) / 2 for t in range(9)]
    np.testing.assert_allclose(lrs(scheduler, 9), expected, rtol=1e-12)
    np.testing.assert_allclose(expected[:5], [1.0, 0.8828427, 0.6, 0.3171573, 0.2], rtol=1e-6)


def test_one_cycle_by_hand():
    # 10 steps, max_lr 1, pct_start 0.3: warm-up over steps 0..2 from 1/25 = 0.04 to 1,
    # then cosine down to 0.04 / 1e4 at step 9; momentum the mirror image, 0.95 → 0.85 → 0.95
    opt = sgd(momentum=0.9)
    scheduler = OneCycleLR(opt, max_lr=1.0, total_steps=10)
    seen, momenta = [], []
    for _ in range(10):
        seen.append(opt.param_groups[0]["lr"])
        momenta.append(opt.param_groups[0]["momentum"])
        opt.step()
        if len(seen) < 10:
            scheduler.step()
    np.testing.assert_allclose(seen[:3], [0.04, 0.52, 1.0], rtol=1e-12)
    down = [4e-6 + (1 - 4e-6) * (1 + math.cos(math.pi * (t - 2) / 7)) / 2 for t in range(2, 10)]
    np.testing.assert_allclose(seen[2:], down, rtol=1e-12)
    np.testing.assert_allclose(momenta[:3], [0.95, 0.9, 0.85], rtol=1e-12)
    assert momenta[-1] == pytest.approx(0.95)
    assert opt.param_groups[0]["initial_lr"] == 0.04 and opt.param_groups[0]["max_lr"] == 1.0


def test_one_cycle_cycles_adam_beta1_and_refuses_to_overrun():
    opt = optim.Adam([nn.Parameter(np.zeros(1))], lr=0.1, betas=(0.9, 0.99))
    scheduler = OneCycleLR(opt, max_lr=0.1, epochs=2, steps_per_epoch=3, anneal_strategy="linear")
    assert opt.param_groups[0]["betas"] == (0.95, 0.99)
    scheduler.step()  # warm-up ends at step 6·0.3 − 1 = 0.8; step 1 is 0.2/4.2 into the anneal
    beta1, beta2 = opt.param_groups[0]["betas"]
    assert beta1 == pytest.approx(0.85 + 0.1 * 0.2 / 4.2, rel=1e-12) and beta2 == 0.99
    for _ in range(5):
        scheduler.step()
    with pytest.raises(
        ValueError, match=r"Tried to step 7 times\. The specified number of total steps is 6"
    ):
        scheduler.step()


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda o: StepLR(o, step_size=0), "step_size must be a positive integer"),
        (lambda o: CosineAnnealingLR(o, T_max=0), "T_max must be a positive integer"),
        (lambda o: OneCycleLR(o, max_lr=1.0), "total_steps OR"),
        (lambda o: OneCycleLR(o, max_lr=1.0, total_steps=0), "positive integer total_steps"),
        (lambda o: OneCycleLR(o, max_lr=1.0, epochs=2, steps_per_epoch=-1), "steps_per_epoch"),
        (lambda o: OneCycleLR(o, max_lr=1.0, total_steps=9, pct_start=1.5), "pct_start"),
        (
            lambda o: OneCycleLR(o, max_lr=1.0, total_steps=9, anneal_strategy="exp"),
            "anneal_strategy",
        ),
        (lambda o: OneCycleLR(o, max_lr=[1.0, 2.0], total_steps=9), "expected 1 values for max_lr"),
    ],
)
def test_invalid_arguments(make, message):
    with pytest.raises(ValueError, match=message):
        make(sgd())


def test_one_cycle_needs_a_momentum_to_cycle():
    opt = optim.Optimizer([nn.Parameter(np.zeros(1))], {"lr": 0.1})
    with pytest.raises(ValueError, match="must support momentum or beta1"):
        OneCycleLR(opt, max_lr=1.0, total_steps=5)
    OneCycleLR(opt, max_lr=1.0, total_steps=5, cycle_momentum=False)


def test_chainable_schedules_keep_a_manual_lr_change():
    opt = sgd(lr=1.0)
    scheduler = StepLR(opt, step_size=2, gamma=0.5)
    opt.step()
    scheduler.step()
    opt.param_groups[0]["lr"] = 10.0
    opt.step()
    scheduler.step()
    assert opt.param_groups[0]["lr"] == 5.0


@pytest.mark.parametrize(
    "make",
    [
        lambda o: StepLR(o, step_size=3, gamma=0.5),
        lambda o: CosineAnnealingLR(o, T_max=5, eta_min=0.01),
        lambda o: OneCycleLR(o, max_lr=0.5, total_steps=12),
    ],
)
def test_state_dict_resumes_the_schedule(make):
    straight = make(sgd(momentum=0.9))
    expected = lrs(straight, 10)

    first = make(sgd(momentum=0.9))
    head = lrs(first, 4)
    saved_scheduler, saved_optimizer = first.state_dict(), first.optimizer.state_dict()
    lrs(first, 2)  # going on must not change what was saved
    assert "optimizer" not in saved_scheduler

    opt = sgd(momentum=0.9)
    second = make(opt)
    opt.load_state_dict(saved_optimizer)
    second.load_state_dict(saved_scheduler)
    assert head + lrs(second, 6) == expected
    assert second.get_last_lr() == straight.get_last_lr()


# --------------------------------------------------------------------- the schedules added later
def test_multistep_and_exponential_by_hand():
    scheduler = MultiStepLR(sgd(lr=1.0), milestones=[2, 5, 5], gamma=0.5)
    assert lrs(scheduler, 7) == [1.0, 1.0, 0.5, 0.5, 0.5, 0.125, 0.125]  # 5 listed twice
    np.testing.assert_allclose(lrs(ExponentialLR(sgd(lr=2.0), gamma=0.9), 4), [2, 1.8, 1.62, 1.458])


def test_lambda_lr_by_hand_with_a_function_per_group():
    a, b = nn.Parameter(np.zeros(1)), nn.Parameter(np.zeros(1))
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 2.0}], lr=1.0)
    scheduler = LambdaLR(opt, [lambda epoch: 1 / (epoch + 1), lambda epoch: 0.5**epoch])
    seen = []
    for _ in range(3):
        seen.append([group["lr"] for group in opt.param_groups])
        opt.step()
        scheduler.step()
    assert seen == [[1.0, 2.0], [0.5, 1.0], [1 / 3, 0.5]]


def test_linear_and_constant_warm_ups_by_hand():
    np.testing.assert_allclose(
        lrs(LinearLR(sgd(lr=1.0), start_factor=0.25, total_iters=3), 5),
        [0.25, 0.5, 0.75, 1.0, 1.0],
        rtol=1e-15,
    )
    np.testing.assert_allclose(
        lrs(ConstantLR(sgd(lr=1.0), factor=0.5, total_iters=2), 4), [0.5, 0.5, 1.0, 1.0]
    )


def test_sequential_lr_switches_at_its_milestones():
    opt = sgd(lr=1.0)
    warm_up = LinearLR(opt, start_factor=0.5, total_iters=2)
    decay = ExponentialLR(opt, gamma=0.5)
    scheduler = SequentialLR(opt, [warm_up, decay], milestones=[3])
    np.testing.assert_allclose(lrs(scheduler, 6), [0.5, 0.75, 1.0, 1.0, 0.5, 0.25], rtol=1e-15)


def test_reduce_lr_on_plateau_by_hand():
    opt = sgd(lr=1.0)
    scheduler = ReduceLROnPlateau(opt, patience=1, factor=0.5, cooldown=1, min_lr=0.2)
    seen = []
    for loss in [1.0, 0.9, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95]:
        opt.step()
        scheduler.step(loss)
        seen.append(opt.param_groups[0]["lr"])
    # bad epochs after 0.9: 1, 2 → halve (cooldown 1: the next bad epoch does not count),
    # then 1, 2 → halve, cooldown, 1, 2 → 0.125 is below min_lr: 0.2
    assert seen == [1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.2]
    assert scheduler.get_last_lr() == [0.2] and scheduler.best == 0.9


@pytest.mark.parametrize(
    "mode, threshold_mode, better, not_better",
    [
        ("min", "rel", 0.899, 0.9),  # below best·(1 − 0.1·… ) with threshold 1e-3 of 0.9
        ("min", "abs", 0.898, 0.8995),
        ("max", "rel", 1.202, 1.2),
        ("max", "abs", 1.2015, 1.2005),
    ],
)
def test_reduce_lr_on_plateau_thresholds(mode, threshold_mode, better, not_better):
    start = 0.9 if mode == "min" else 1.2
    for value, improves in ((better, True), (not_better, False)):
        scheduler = ReduceLROnPlateau(
            sgd(), mode=mode, threshold=1e-3, threshold_mode=threshold_mode
        )
        scheduler.step(start)
        scheduler.step(value)
        assert (scheduler.num_bad_epochs == 0) is improves, (value, improves)


# --------------------------------------------------------------------- agreement with PyTorch
def _sequential(lib, opt):
    return lib.SequentialLR(
        opt,
        [lib.LinearLR(opt, start_factor=0.2, total_iters=4), lib.CosineAnnealingLR(opt, T_max=6)],
        milestones=[5],
    )


def _three_in_sequence(lib, opt):
    return lib.SequentialLR(
        opt,
        [
            lib.ConstantLR(opt, factor=0.5, total_iters=2),
            lib.StepLR(opt, step_size=2, gamma=0.5),
            lib.MultiStepLR(opt, milestones=[1, 3], gamma=0.3),
        ],
        milestones=[3, 8],
    )


class Warmup:
    """A callable object as lr_lambda: its attributes go into LambdaLR's state dict."""

    def __init__(self, steps):
        self.steps = steps

    def __call__(self, epoch):
        return min(1.0, (epoch + 1) / self.steps)


def _schedule(name, **kwargs):
    """A factory: the scheduler ``name`` from ``lib`` (tensorgrad's or PyTorch's), with
    ``kwargs`` and any keywords given when called (``last_epoch``)."""
    return lambda lib, opt, **extra: getattr(lib, name)(opt, **kwargs, **extra)


SCHEDULES = [
    ("StepLR", _schedule("StepLR", step_size=3, gamma=0.3), "SGD", 20),
    ("MultiStepLR", _schedule("MultiStepLR", milestones=[2, 5, 5, 9], gamma=0.5), "SGD", 15),
    ("ExponentialLR", _schedule("ExponentialLR", gamma=0.8), "Adam", 15),
    ("LambdaLR", _schedule("LambdaLR", lr_lambda=lambda e: 0.95**e + 0.01 * e), "SGD", 15),
    ("LambdaLR-object", _schedule("LambdaLR", lr_lambda=Warmup(5)), "Adam", 10),
    ("LinearLR", _schedule("LinearLR", start_factor=0.1, total_iters=6), "SGD", 12),
    (
        "LinearLR-down",
        _schedule("LinearLR", start_factor=1.0, end_factor=0.1, total_iters=5),
        "SGD",
        10,
    ),
    ("ConstantLR", _schedule("ConstantLR", factor=0.25, total_iters=4), "Adam", 8),
    ("SequentialLR", _sequential, "SGD", 14),
    ("SequentialLR-three", _three_in_sequence, "SGD", 14),
    ("CosineAnnealingLR", _schedule("CosineAnnealingLR", T_max=7), "SGD", 30),
    ("CosineAnnealingLR-eta", _schedule("CosineAnnealingLR", T_max=5, eta_min=0.003), "Adam", 30),
    ("OneCycleLR", _schedule("OneCycleLR", max_lr=0.4, total_steps=25), "SGD", 25),
    (
        "OneCycleLR-linear",
        _schedule("OneCycleLR", max_lr=0.4, total_steps=25, anneal_strategy="linear"),
        "SGD",
        25,
    ),
    (
        "OneCycleLR-three-phase",
        _schedule("OneCycleLR", max_lr=0.4, total_steps=30, three_phase=True, pct_start=0.25),
        "Adam",
        30,
    ),
    (
        "OneCycleLR-epochs",
        _schedule(
            "OneCycleLR",
            max_lr=[0.4, 0.2],
            epochs=3,
            steps_per_epoch=7,
            div_factor=10.0,
            final_div_factor=100.0,
            base_momentum=0.8,
            max_momentum=0.9,
        ),
        "SGD",
        21,
    ),
    (
        "OneCycleLR-no-momentum",
        _schedule("OneCycleLR", max_lr=0.4, total_steps=10, cycle_momentum=False),
        "SGD",
        10,
    ),
    (
        "ReduceLROnPlateau",
        _schedule("ReduceLROnPlateau", patience=1, cooldown=1, factor=0.5, min_lr=1e-3),
        "SGD",
        20,
    ),
    (
        "ReduceLROnPlateau-max-abs",
        _schedule(
            "ReduceLROnPlateau",
            mode="max",
            threshold=0.05,
            threshold_mode="abs",
            patience=2,
            min_lr=[0.01, 0.02],
        ),
        "Adam",
        20,
    ),
]

#: a metric for ReduceLROnPlateau: improves, stalls, improves a little, stalls
METRICS = [1.0, 0.8, 0.79, 0.85, 0.9, 0.7, 0.71, 0.72, 0.73, 0.74] * 2


class Pair:
    """The same schedule over tensorgrad and PyTorch optimizers with two parameter groups."""

    def __init__(self, make, optimizer, last_epoch=None):
        torch = pytest.importorskip("torch")
        extra = {"momentum": 0.9} if optimizer == "SGD" else {}
        groups = [{"params": [nn.Parameter(np.zeros(1))]}, {"params": [nn.Parameter(np.zeros(2))]}]
        torch_groups = [{"params": [torch.zeros(1, requires_grad=True)]}]
        torch_groups.append({"params": [torch.zeros(2, requires_grad=True)], "lr": 0.05})
        groups[1]["lr"] = 0.05
        self.opt = getattr(optim, optimizer)(groups, lr=0.1, **extra)
        self.torch_opt = getattr(torch.optim, optimizer)(torch_groups, lr=0.1, **extra)
        self.make, self.key = make, "momentum" if optimizer == "SGD" else "betas"
        self.schedule = make(optim.lr_scheduler, self.opt)
        self.torch_schedule = make(torch.optim.lr_scheduler, self.torch_opt)
        self.t = 0

    def step(self, steps=1):
        for _ in range(steps):
            self.assert_same_lrs()
            self.opt.step()
            self.torch_opt.step()
            for schedule in (self.schedule, self.torch_schedule):
                if isinstance(schedule, (ReduceLROnPlateau, _torch_plateau())):
                    schedule.step(METRICS[self.t])
                else:
                    schedule.step()
            self.t += 1
        self.assert_same_lrs()

    def assert_same_lrs(self):
        for ours, theirs in zip(self.opt.param_groups, self.torch_opt.param_groups, strict=True):
            assert ours["lr"] == pytest.approx(theirs["lr"], rel=1e-12, abs=1e-15), self.t
            np.testing.assert_allclose(ours[self.key], theirs[self.key], rtol=1e-12)
        assert self.schedule.get_last_lr() == pytest.approx(
            self.torch_schedule.get_last_lr(), rel=1e-12
        )


def _torch_plateau():
    torch = pytest.importorskip("torch")

    return torch.optim.lr_scheduler.ReduceLROnPlateau


def _numbers(value) -> bool:
    """Whether ``value`` is a number or a non-empty list of numbers (compared to 1e-12)."""
    values = value if isinstance(value, list) and value else [value]
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def assert_same_state(ours, theirs):
    """PyTorch's keys (less its warning flag) and values, nested schedulers included."""
    theirs = {k: v for k, v in theirs.items() if k != "_get_lr_called_within_step"}
    assert set(ours) == set(theirs)
    for key, value in ours.items():
        if key == "_schedulers":
            for a, b in zip(value, theirs[key], strict=True):
                assert_same_state(a, b)
        elif _numbers(value):
            assert value == pytest.approx(theirs[key], rel=1e-12), key
        else:
            assert value == theirs[key], key


SCHEDULE_IDS = [entry[0] for entry in SCHEDULES]


@pytest.mark.parametrize("name, make, optimizer, steps", SCHEDULES, ids=SCHEDULE_IDS)
def test_matches_pytorch(name, make, optimizer, steps):
    pair = Pair(make, optimizer)
    assert_same_state(pair.schedule.state_dict(), pair.torch_schedule.state_dict())
    done = 0
    while done < steps - 1:  # the last step's lr is the schedule's last
        chunk = min(5, steps - 1 - done)
        pair.step(chunk)
        done += chunk
        assert_same_state(pair.schedule.state_dict(), pair.torch_schedule.state_dict())


@pytest.mark.parametrize("name, make, optimizer, steps", SCHEDULES, ids=SCHEDULE_IDS)
def test_a_schedule_state_moves_between_tensorgrad_and_pytorch(name, make, optimizer, steps):
    """Mid-schedule, PyTorch's scheduler and optimizer state load into fresh tensorgrad ones
    (and tensorgrad's into PyTorch's); both pairs then go on as the original."""
    torch = pytest.importorskip("torch")

    from tests.optim.test_pytorch_agreement import to_torch

    pair = Pair(make, optimizer)
    pair.step(steps // 2)
    crossed = Pair(make, optimizer)
    crossed.opt.load_state_dict(pair.torch_opt.state_dict())
    crossed.schedule.load_state_dict(pair.torch_schedule.state_dict())
    crossed.torch_opt.load_state_dict(to_torch(pair.opt.state_dict()))
    crossed.torch_schedule.load_state_dict(pair.schedule.state_dict())
    crossed.t = pair.t
    rest = steps - steps // 2 - 1
    pair.step(rest)
    crossed.step(rest)
    for a, b in zip(pair.opt.param_groups, crossed.opt.param_groups, strict=True):
        assert a["lr"] == pytest.approx(b["lr"], rel=1e-12, abs=1e-15)
    assert isinstance(crossed.torch_schedule, torch.optim.lr_scheduler.LRScheduler)


RESUMABLE = [s for s in SCHEDULES if not s[0].startswith(("ReduceLROnPlateau", "Sequential"))]


@pytest.mark.parametrize("name, make, optimizer, steps", RESUMABLE, ids=[s[0] for s in RESUMABLE])
def test_last_epoch_resumes_as_in_pytorch(name, make, optimizer, steps):
    """A schedule created with ``last_epoch=k`` over an optimizer whose state was loaded
    (PyTorch's older way to resume) goes on with PyTorch's lrs."""
    torch = pytest.importorskip("torch")

    pair = Pair(make, optimizer)
    pair.step(steps // 2)
    resumed = Pair(make, optimizer)
    resumed.opt.load_state_dict(pair.opt.state_dict())
    resumed.torch_opt.load_state_dict(pair.torch_opt.state_dict())
    epoch = pair.schedule.last_epoch
    resumed.schedule = make(optim.lr_scheduler, resumed.opt, last_epoch=epoch - 1)
    resumed.torch_schedule = make(torch.optim.lr_scheduler, resumed.torch_opt, last_epoch=epoch - 1)
    resumed.t = pair.t
    resumed.step(steps - steps // 2 - 1)


def test_last_epoch_needs_the_initial_lr_of_a_loaded_optimizer():
    with pytest.raises(KeyError, match="'initial_lr' is not specified in param_groups"):
        StepLR(sgd(), step_size=2, last_epoch=3)


# --------------------------------------------------------------------- state dicts
@pytest.mark.parametrize("name, make, optimizer, steps", SCHEDULES, ids=SCHEDULE_IDS)
def test_state_dict_resumes_through_a_file(name, make, optimizer, steps, tmp_path):
    pytest.importorskip("torch")  # Pair runs PyTorch alongside
    straight = Pair(make, optimizer)
    straight.step(steps - 1)
    first = Pair(make, optimizer)
    first.step(steps // 2)
    tg.save(
        {"optimizer": first.opt.state_dict(), "scheduler": first.schedule.state_dict()},
        tmp_path / "checkpoint.npz",
    )
    checkpoint = tg.load(tmp_path / "checkpoint.npz")
    second = Pair(make, optimizer)
    second.opt.load_state_dict(checkpoint["optimizer"])
    second.schedule.load_state_dict(checkpoint["scheduler"])
    second.torch_opt, second.torch_schedule, second.t = (
        first.torch_opt,
        first.torch_schedule,
        first.t,
    )
    second.step(steps - 1 - steps // 2)
    assert second.schedule.get_last_lr() == straight.schedule.get_last_lr()


def _missing(state):
    del state["last_epoch"]
    return state


def _unexpected(state):
    return {**state, "warmup_steps": 3}


def _one_group_too_many(state):
    return {**state, "base_lrs": [0.1, 0.1]}


def _epoch_as_text(state):
    return {**state, "last_epoch": "3"}


@pytest.mark.parametrize(
    "corrupt, message",
    [
        (_missing, r"missing keys \['last_epoch'\]"),
        (_unexpected, r"unexpected keys \['warmup_steps'\]"),
        (_one_group_too_many, "'base_lrs' has 2 values, the optimizer 1 parameter groups"),
        (_epoch_as_text, "'last_epoch' must be an int, got '3'"),
        (lambda state: [state], "expected a dict, got list"),
    ],
)
def test_a_bad_scheduler_state_is_refused_and_changes_nothing(corrupt, message):
    scheduler = StepLR(sgd(), step_size=2)
    lrs(scheduler, 3)
    before = scheduler.state_dict()
    with pytest.raises(ValueError, match=r"StepLR\.load_state_dict: nothing was loaded") as caught:
        scheduler.load_state_dict(corrupt(scheduler.state_dict()))
    assert caught.match(message)
    assert scheduler.state_dict() == before


def test_a_sequential_state_names_the_inner_scheduler_that_is_wrong():
    opt = sgd()
    scheduler = SequentialLR(opt, [ConstantLR(opt), ExponentialLR(opt, 0.9)], milestones=[2])
    state = scheduler.state_dict()
    del state["_schedulers"][1]["gamma"]
    with pytest.raises(ValueError, match=r"_schedulers\[1\] \(ExponentialLR\): missing keys"):
        scheduler.load_state_dict(state)
    state["_schedulers"] = state["_schedulers"][:1]
    with pytest.raises(ValueError, match="'_schedulers' must hold 2 state dicts"):
        scheduler.load_state_dict(state)
