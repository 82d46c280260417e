"""Learning-rate schedulers: hand-computed sequences, PyTorch's sequences, momentum cycling,
state dicts and argument errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tensorgrad import nn, optim
from tensorgrad.optim.lr_scheduler import CosineAnnealingLR, OneCycleLR, StepLR


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


# --------------------------------------------------------------------- agreement with PyTorch
SCHEDULES = [
    ("StepLR", dict(step_size=3, gamma=0.3), "SGD", 20),
    ("CosineAnnealingLR", dict(T_max=7), "SGD", 30),
    ("CosineAnnealingLR", dict(T_max=5, eta_min=0.003), "Adam", 30),
    ("OneCycleLR", dict(max_lr=0.4, total_steps=25), "SGD", 25),
    ("OneCycleLR", dict(max_lr=0.4, total_steps=25, anneal_strategy="linear"), "SGD", 25),
    ("OneCycleLR", dict(max_lr=0.4, total_steps=30, three_phase=True, pct_start=0.25), "Adam", 30),
    (
        "OneCycleLR",
        dict(
            max_lr=0.4,
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
    ("OneCycleLR", dict(max_lr=0.4, total_steps=10, cycle_momentum=False), "SGD", 10),
]


@pytest.mark.parametrize("name, kwargs, optimizer, steps", SCHEDULES, ids=lambda v: str(v)[:40])
def test_matches_pytorch(name, kwargs, optimizer, steps):
    torch = pytest.importorskip("torch")
    extra = {"momentum": 0.9} if optimizer == "SGD" else {}
    ours = getattr(optim, optimizer)([nn.Parameter(np.zeros(1))], lr=0.1, **extra)
    theirs = getattr(torch.optim, optimizer)([torch.zeros(1, requires_grad=True)], lr=0.1, **extra)
    schedule = getattr(optim.lr_scheduler, name)(ours, **kwargs)
    torch_schedule = getattr(torch.optim.lr_scheduler, name)(theirs, **kwargs)
    key = "momentum" if optimizer == "SGD" else "betas"
    for step in range(steps):
        ours_group, their_group = ours.param_groups[0], theirs.param_groups[0]
        assert ours_group["lr"] == pytest.approx(their_group["lr"], rel=1e-12, abs=1e-15), step
        np.testing.assert_allclose(ours_group[key], their_group[key], rtol=1e-12)
        assert schedule.get_last_lr() == pytest.approx(torch_schedule.get_last_lr(), rel=1e-12)
        ours.step()
        theirs.step()
        if step < steps - 1:
            schedule.step()
            torch_schedule.step()
