"""Learning-rate schedules, with PyTorch's formulas and call convention.

Create the scheduler after the optimizer (it sets each group's lr for step 0) and call
``scheduler.step()`` once after each ``optimizer.step()`` (per epoch for StepLR and
CosineAnnealingLR as usually used, per batch for OneCycleLR). StepLR and CosineAnnealingLR are
"chainable" as in PyTorch: each step updates the lr the optimizer currently has, so a manual
change to ``group["lr"]`` carries on.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from typing import Any

from tensorgrad.optim.optimizer import Optimizer


class LRScheduler:
    """Base class: subclasses write ``get_lr()``, the lrs for step ``self.last_epoch``."""

    def __init__(self, optimizer: Optimizer) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        for group in optimizer.param_groups:
            group.setdefault("initial_lr", group["lr"])
        self.base_lrs: list[float] = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = -1
        self._step_count = 0
        self.step()

    def get_lr(self) -> list[float]:
        raise TypeError(f"{type(self).__name__} does not define get_lr()")

    def step(self) -> None:
        """Advance one step and set every group's lr."""
        self._step_count += 1
        self.last_epoch += 1
        for group, lr in zip(self.optimizer.param_groups, self.get_lr(), strict=True):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def get_last_lr(self) -> list[float]:
        """The lrs set by the last ``step()``, one per parameter group."""
        return list(self._last_lr)

    def state_dict(self) -> dict[str, Any]:
        """Every attribute but the optimizer (save the optimizer's own state alongside)."""
        return {k: copy.deepcopy(v) for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update(copy.deepcopy(dict(state_dict)))


class StepLR(LRScheduler):
    """Multiply the lr by ``gamma`` every ``step_size`` steps:
    ``lr = base_lr · gamma^(epoch // step_size)``."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1) -> None:
        if not isinstance(step_size, int) or step_size <= 0:
            raise ValueError(f"StepLR: step_size must be a positive integer, got {step_size!r}")
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer)

    def get_lr(self) -> list[float]:
        groups = self.optimizer.param_groups
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return [group["lr"] for group in groups]
        return [group["lr"] * self.gamma for group in groups]


class CosineAnnealingLR(LRScheduler):
    """Cosine from the base lr down to ``eta_min`` over ``T_max`` steps (and back up after):
    ``lr = eta_min + (base_lr − eta_min) · (1 + cos(π · epoch / T_max)) / 2``,
    applied in PyTorch's recursive form, step by step."""

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0) -> None:
        if not isinstance(T_max, int) or T_max <= 0:
            raise ValueError(f"CosineAnnealingLR: T_max must be a positive integer, got {T_max!r}")
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer)

    def get_lr(self) -> list[float]:
        groups, t, period = self.optimizer.param_groups, self.last_epoch, self.T_max
        if t == 0:
            return [group["lr"] for group in groups]
        if (t - 1 - period) % (2 * period) == 0:  # leaving the minimum: the ratio below is 0/0
            return [
                group["lr"] + (base - self.eta_min) * (1 - math.cos(math.pi / period)) / 2
                for base, group in zip(self.base_lrs, groups, strict=True)
            ]
        ratio = (1 + math.cos(math.pi * t / period)) / (1 + math.cos(math.pi * (t - 1) / period))
        return [ratio * (group["lr"] - self.eta_min) + self.eta_min for group in groups]


def _per_group(name: str, optimizer: Optimizer, value: float | Sequence[float]) -> list[float]:
    groups = len(optimizer.param_groups)
    if isinstance(value, (list, tuple)):
        if len(value) != groups:
            raise ValueError(f"expected {groups} values for {name}, got {len(value)}")
        return list(value)
    return [value] * groups


class OneCycleLR(LRScheduler):
    """The 1cycle policy (Smith and Topsekar), per batch: the lr rises from
    ``max_lr / div_factor`` to ``max_lr`` over the first ``pct_start`` of the steps, then
    anneals to ``initial_lr / final_div_factor``; momentum (SGD's momentum or Adam's β₁)
    moves the opposite way between ``max_momentum`` and ``base_momentum``. With
    ``three_phase`` the lr comes back down to its start symmetrically before the final anneal.
    """

    def __init__(
        self,
        optimizer: Optimizer,
        max_lr: float | Sequence[float],
        total_steps: int | None = None,
        epochs: int | None = None,
        steps_per_epoch: int | None = None,
        pct_start: float = 0.3,
        anneal_strategy: str = "cos",
        div_factor: float = 25.0,
        final_div_factor: float = 1e4,
        three_phase: bool = False,
        cycle_momentum: bool = True,
        base_momentum: float | Sequence[float] = 0.85,
        max_momentum: float | Sequence[float] = 0.95,
    ) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        if total_steps is not None:
            if not isinstance(total_steps, int) or total_steps <= 0:
                raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            for name, value in (("epochs", epochs), ("steps_per_epoch", steps_per_epoch)):
                if not isinstance(value, int) or value <= 0:
                    raise ValueError(f"Expected positive integer {name}, but got {value}")
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
        if not 0.0 <= pct_start <= 1.0:
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(
                f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}"
            )
        self.anneal_strategy = anneal_strategy
        warm_up_end = float(pct_start * self.total_steps) - 1
        last = self.total_steps - 1
        warm_up = _phase(warm_up_end, "initial_lr", "max_lr", "max_momentum", "base_momentum")
        if three_phase:
            back_down_end = float(2 * pct_start * self.total_steps) - 2
            self._schedule_phases = [
                warm_up,
                _phase(back_down_end, "max_lr", "initial_lr", "base_momentum", "max_momentum"),
                _phase(last, "initial_lr", "min_lr", "max_momentum", "max_momentum"),
            ]
        else:
            anneal = _phase(last, "max_lr", "min_lr", "base_momentum", "max_momentum")
            self._schedule_phases = [warm_up, anneal]
        max_lrs = _per_group("max_lr", optimizer, max_lr)
        for group, top in zip(optimizer.param_groups, max_lrs, strict=True):
            group["initial_lr"] = top / div_factor
            group["max_lr"] = top
            group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError(
                    "optimizer must support momentum or beta1 with `cycle_momentum` option enabled"
                )
            self.use_beta1 = "betas" in optimizer.defaults
            highs = _per_group("max_momentum", optimizer, max_momentum)
            lows = _per_group("base_momentum", optimizer, base_momentum)
            for group, high, low in zip(optimizer.param_groups, highs, lows, strict=True):
                self._set_momentum(group, high)
                group["max_momentum"], group["base_momentum"] = high, low
        super().__init__(optimizer)

    def _set_momentum(self, group: dict[str, Any], value: float) -> None:
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value

    def _anneal(self, start: float, end: float, pct: float) -> float:
        if self.anneal_strategy == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> list[float]:
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(
                f"Tried to step {step} times. The specified number of total steps is "
                f"{self.total_steps}"
            )
        lrs = []
        for group in self.optimizer.param_groups:
            start = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end = phase["end_step"]
                if step <= end or i == len(self._schedule_phases) - 1:
                    pct = (step - start) / (end - start)
                    lrs.append(self._anneal(group[phase["start_lr"]], group[phase["end_lr"]], pct))
                    if self.cycle_momentum:
                        momentum = self._anneal(
                            group[phase["start_momentum"]], group[phase["end_momentum"]], pct
                        )
                        self._set_momentum(group, momentum)
                    break
                start = end
        return lrs


def _phase(
    end_step: float, start_lr: str, end_lr: str, start_momentum: str, end_momentum: str
) -> dict[str, Any]:
    """One phase of OneCycleLR: where it ends, and the group keys it anneals between."""
    return {
        "end_step": end_step,
        "start_lr": start_lr,
        "end_lr": end_lr,
        "start_momentum": start_momentum,
        "end_momentum": end_momentum,
    }
