"""Learning-rate schedules, with PyTorch's formulas, call convention and state dicts.

Create the scheduler after the optimizer (it sets each group's lr for step 0) and call
``scheduler.step()`` once after each ``optimizer.step()`` (per epoch for StepLR and
CosineAnnealingLR as usually used, per batch for OneCycleLR; ``ReduceLROnPlateau.step`` takes
the metric to watch). Most schedules are "chainable" as in PyTorch: each step updates the lr
the optimizer currently has, so a manual change to ``group["lr"]`` carries on.
"""

from __future__ import annotations

import copy
import math
import numbers
import types
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from tensorgrad.optim.optimizer import Optimizer

#: PyTorch keeps this flag in its schedulers' state dicts; it only guards a warning there
_TORCH_ONLY_KEYS = frozenset({"_get_lr_called_within_step", "verbose"})


def _check_optimizer(optimizer: Any) -> None:
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")


class LRScheduler:
    """Base class: subclasses write ``get_lr()``, the lrs for step ``self.last_epoch`` (and
    ``_get_closed_form_lr()`` where the lr has a closed form, which SequentialLR uses)."""

    #: attributes holding one value per parameter group (checked when loading)
    _PER_GROUP = ("base_lrs", "_last_lr")
    #: True while the constructor takes the first step (some get_lr() tell it apart)
    _is_initial = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when "
                        "resuming scheduler with last_epoch >= 0 (load the optimizer's state "
                        "first)"
                    )
        self.base_lrs: list[float] = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self) -> None:
        """Set the lrs for the step after ``last_epoch`` (the first one, usually)."""
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self) -> list[float]:
        raise NotImplementedError(f"{type(self).__name__} does not define get_lr()")

    def step(self) -> None:
        """Advance one step and set every group's lr."""
        self._step_count += 1
        self._update_lr()

    def _update_lr(self, epoch: int | None = None) -> None:
        """Set the lrs for the next step, or (SequentialLR) for step ``epoch`` from the closed
        form where there is one."""
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:
            self.last_epoch = epoch
            closed_form = getattr(self, "_get_closed_form_lr", None)
            values = closed_form() if closed_form is not None else self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, values, strict=True):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def get_last_lr(self) -> list[float]:
        """The lrs set by the last ``step()``, one per parameter group."""
        return list(self._last_lr)

    def _current_lrs(self) -> list[float]:
        return [group["lr"] for group in self.optimizer.param_groups]

    # ----------------------------------------------------------------- saving and resuming
    def state_dict(self) -> dict[str, Any]:
        """Every attribute but the optimizer, as copies (save the optimizer's own state
        alongside). PyTorch's keys, less its ``_get_lr_called_within_step`` warning flag."""
        return {k: copy.deepcopy(v) for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Restore a state saved by :meth:`state_dict` (or PyTorch's), checked before anything
        changes: every key this scheduler keeps must be there, no other, and the per-group
        lists must have one entry per parameter group."""
        problems: list[str] = []
        self._check_state_dict(state_dict, problems)
        if problems:
            raise ValueError(
                f"{type(self).__name__}.load_state_dict: nothing was loaded:\n  "
                + "\n  ".join(problems)
            )
        self._load(state_dict)

    def _load(self, state_dict: Mapping[str, Any]) -> None:
        """Take the (checked) values over."""
        for key, value in state_dict.items():
            if key not in _TORCH_ONLY_KEYS:
                setattr(self, key, copy.deepcopy(value))

    def _check_state_dict(self, state_dict: Any, problems: list[str]) -> None:
        """Note in ``problems`` what is wrong with ``state_dict`` for this scheduler."""
        if not isinstance(state_dict, Mapping):
            problems.append(f"expected a dict, got {type(state_dict).__name__}")
            return
        expected = set(self.state_dict())
        missing = sorted(expected - set(state_dict) - {"_is_initial"})
        unexpected = sorted(map(str, set(state_dict) - expected - _TORCH_ONLY_KEYS))
        if missing:
            problems.append(f"missing keys {missing}")
        if unexpected:
            problems.append(f"unexpected keys {unexpected}")
        groups = len(self.optimizer.param_groups)
        for key in self._PER_GROUP:
            value = state_dict.get(key)
            if key in expected and isinstance(value, (list, tuple)) and len(value) != groups:
                problems.append(
                    f"{key!r} has {len(value)} values, the optimizer {groups} parameter groups"
                )
        for key in ("last_epoch", "_step_count"):
            value = state_dict.get(key)
            if key in state_dict and not (
                isinstance(value, numbers.Integral) and not isinstance(value, bool)
            ):
                problems.append(f"{key!r} must be an int, got {value!r}")


class LambdaLR(LRScheduler):
    """``lr = base_lr · lr_lambda(epoch)``, with one function for all groups or one each.

    The state dict keeps no functions: an entry of ``lr_lambdas`` is None for a plain function
    or lambda, and the ``__dict__`` of a callable object (as PyTorch does)."""

    _PER_GROUP = ("base_lrs", "_last_lr", "lr_lambdas")

    def __init__(
        self,
        optimizer: Optimizer,
        lr_lambda: Callable[[int], float] | Sequence[Callable[[int], float]],
        last_epoch: int = -1,
    ) -> None:
        _check_optimizer(optimizer)
        groups = len(optimizer.param_groups)
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != groups:
                raise ValueError(f"Expected {groups} lr_lambdas, but got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * groups
        for fn in self.lr_lambdas:
            if not callable(fn):
                raise TypeError(f"LambdaLR: lr_lambda must be callable, got {fn!r}")
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        return [
            base * fn(self.last_epoch)
            for fn, base in zip(self.lr_lambdas, self.base_lrs, strict=True)
        ]

    def state_dict(self) -> dict[str, Any]:
        state = {
            k: copy.deepcopy(v)
            for k, v in self.__dict__.items()
            if k not in ("optimizer", "lr_lambdas")
        }
        state["lr_lambdas"] = [
            None if isinstance(fn, types.FunctionType) else copy.deepcopy(fn.__dict__)
            for fn in self.lr_lambdas
        ]
        return state

    def _load(self, state_dict: Mapping[str, Any]) -> None:
        saved = state_dict["lr_lambdas"]
        super()._load({k: v for k, v in state_dict.items() if k != "lr_lambdas"})
        for fn, attributes in zip(self.lr_lambdas, saved, strict=True):
            if attributes is not None:
                fn.__dict__.update(copy.deepcopy(attributes))


class StepLR(LRScheduler):
    """Multiply the lr by ``gamma`` every ``step_size`` steps:
    ``lr = base_lr · gamma^(epoch // step_size)``."""

    def __init__(
        self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1
    ) -> None:
        if not isinstance(step_size, int) or step_size <= 0:
            raise ValueError(f"StepLR: step_size must be a positive integer, got {step_size!r}")
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._current_lrs()
        return [lr * self.gamma for lr in self._current_lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        return [base * self.gamma ** (self.last_epoch // self.step_size) for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply the lr by ``gamma`` at each milestone (a milestone listed twice, twice)."""

    def __init__(
        self,
        optimizer: Optimizer,
        milestones: Iterable[int],
        gamma: float = 0.1,
        last_epoch: int = -1,
    ) -> None:
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch not in self.milestones:
            return self._current_lrs()
        factor = self.gamma ** self.milestones[self.last_epoch]
        return [lr * factor for lr in self._current_lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        passed = bisect_right(sorted(self.milestones.elements()), self.last_epoch)
        return [base * self.gamma**passed for base in self.base_lrs]

    def _load(self, state_dict: Mapping[str, Any]) -> None:
        super()._load(state_dict)
        self.milestones = Counter(self.milestones)  # a plain dict after tg.save / tg.load


class ConstantLR(LRScheduler):
    """``lr = base_lr · factor`` for the first ``total_iters`` steps, then ``base_lr``."""

    def __init__(
        self,
        optimizer: Optimizer,
        factor: float = 1.0 / 3,
        total_iters: int = 5,
        last_epoch: int = -1,
    ) -> None:
        if factor > 1.0 or factor < 0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor, self.total_iters = factor, total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0:
            return [lr * self.factor for lr in self._current_lrs()]
        if self.last_epoch != self.total_iters:
            return self._current_lrs()
        return [lr * (1.0 / self.factor) for lr in self._current_lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        done = self.last_epoch >= self.total_iters
        return [base * (self.factor + done * (1 - self.factor)) for base in self.base_lrs]


class LinearLR(LRScheduler):
    """The lr factor goes linearly from ``start_factor`` to ``end_factor`` over
    ``total_iters`` steps, then stays."""

    def __init__(
        self,
        optimizer: Optimizer,
        start_factor: float = 1.0 / 3,
        end_factor: float = 1.0,
        total_iters: int = 5,
        last_epoch: int = -1,
    ) -> None:
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError(
                "Starting multiplicative factor expected to be greater than 0 and less or "
                "equal to 1."
            )
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor, self.end_factor, self.total_iters = (
            start_factor,
            end_factor,
            total_iters,
        )
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0:
            return [lr * self.start_factor for lr in self._current_lrs()]
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._current_lrs()
        change = self.end_factor - self.start_factor
        factor = 1.0 + change / (
            self.total_iters * self.start_factor + (self.last_epoch - 1) * change
        )
        return [lr * factor for lr in self._current_lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        done = min(self.total_iters, self.last_epoch) / self.total_iters
        factor = self.start_factor + (self.end_factor - self.start_factor) * done
        return [base * factor for base in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiply the lr by ``gamma`` every step: ``lr = base_lr · gamma^epoch``."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self._is_initial:
            return self._current_lrs()
        return [lr * self.gamma for lr in self._current_lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        return [base * self.gamma**self.last_epoch for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Cosine from the base lr down to ``eta_min`` over ``T_max`` steps (and back up after):
    ``lr = eta_min + (base_lr − eta_min) · (1 + cos(π · epoch / T_max)) / 2``,
    applied in PyTorch's recursive form, step by step."""

    def __init__(
        self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1
    ) -> None:
        if not isinstance(T_max, int) or T_max <= 0:
            raise ValueError(f"CosineAnnealingLR: T_max must be a positive integer, got {T_max!r}")
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        t, period = self.last_epoch, self.T_max
        if self._is_initial:
            return self._current_lrs()
        if self._step_count == 1 and t > 0:  # resumed with last_epoch: the closed form
            return self._get_closed_form_lr()
        if (t - 1 - period) % (2 * period) == 0:  # leaving the minimum: the ratio below is 0/0
            return [
                lr + (base - self.eta_min) * (1 - math.cos(math.pi / period)) / 2
                for base, lr in zip(self.base_lrs, self._current_lrs(), strict=True)
            ]
        ratio = (1 + math.cos(math.pi * t / period)) / (1 + math.cos(math.pi * (t - 1) / period))
        return [ratio * (lr - self.eta_min) + self.eta_min for lr in self._current_lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        cosine = (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
        return [self.eta_min + (base - self.eta_min) * cosine for base in self.base_lrs]


class SequentialLR(LRScheduler):
    """Run ``schedulers`` one after another, switching at the ``milestones`` (step counts):
    e.g. a LinearLR warm-up, then CosineAnnealingLR. At a switch the next scheduler starts
    from its step 0 (its closed form, where it has one)."""

    def __init__(
        self,
        optimizer: Optimizer,
        schedulers: Sequence[LRScheduler],
        milestones: Sequence[int],
        last_epoch: int = -1,
    ) -> None:
        _check_optimizer(optimizer)
        name = type(self).__name__
        if len(schedulers) < 1:
            raise ValueError(f"{name} expects at least one scheduler, but got no scheduler.")
        for i, scheduler in enumerate(schedulers):
            if isinstance(scheduler, ReduceLROnPlateau):
                raise ValueError(
                    f"{name} does not support `ReduceLROnPlateau` scheduler as it requires "
                    "additional kwargs to be specified when calling `step`, but got one at "
                    f"index {i} in the given schedulers sequence."
                )
            if not isinstance(scheduler, LRScheduler):
                raise TypeError(f"{name}: schedulers[{i}] is not a scheduler: {scheduler!r}")
            if scheduler.optimizer is not optimizer:
                raise ValueError(
                    f"{name} expects all schedulers to belong to the same optimizer, but got "
                    f"scheduler {type(scheduler).__name__} at index {i} with another optimizer"
                )
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                "Sequential Schedulers expects number of schedulers provided to be one more "
                f"than the number of milestone points, but got number of schedulers "
                f"{len(schedulers)} and the number of milestones to be equal to "
                f"{len(milestones)}"
            )
        self._schedulers = list(schedulers)
        self._milestones = list(milestones)
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        for group in optimizer.param_groups:  # undo what the schedulers' creation did
            group["lr"] = group["initial_lr"]
        for scheduler in self._schedulers:
            _undo_step(scheduler)
        first = self._schedulers[bisect_right(self._milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()

    def step(self) -> None:
        self.last_epoch += 1
        i = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[i]
        if i > 0 and self._milestones[i - 1] == self.last_epoch:
            scheduler._update_lr(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()

    def state_dict(self) -> dict[str, Any]:
        state = {
            k: copy.deepcopy(v)
            for k, v in self.__dict__.items()
            if k not in ("optimizer", "_schedulers")
        }
        state["_schedulers"] = [scheduler.state_dict() for scheduler in self._schedulers]
        return state

    def _check_state_dict(self, state_dict: Any, problems: list[str]) -> None:
        super()._check_state_dict(state_dict, problems)
        saved = state_dict.get("_schedulers") if isinstance(state_dict, Mapping) else None
        if not isinstance(saved, (list, tuple)) or len(saved) != len(self._schedulers):
            problems.append(f"'_schedulers' must hold {len(self._schedulers)} state dicts")
            return
        for i, (scheduler, state) in enumerate(zip(self._schedulers, saved, strict=True)):
            inner: list[str] = []
            scheduler._check_state_dict(state, inner)
            problems.extend(f"_schedulers[{i}] ({type(scheduler).__name__}): {p}" for p in inner)

    def _load(self, state_dict: Mapping[str, Any]) -> None:
        super()._load({k: v for k, v in state_dict.items() if k != "_schedulers"})
        for scheduler, state in zip(self._schedulers, state_dict["_schedulers"], strict=True):
            scheduler._load(state)


def _undo_step(scheduler: LRScheduler) -> None:
    """Take back the step a scheduler's creation made (for SequentialLR)."""
    if isinstance(scheduler, SequentialLR):
        for inner in scheduler._schedulers:
            _undo_step(inner)
    else:
        scheduler.last_epoch -= 1


class ReduceLROnPlateau(LRScheduler):
    """Multiply the lr by ``factor`` when a watched metric (``step(metric)``, e.g. the
    validation loss) has not improved for more than ``patience`` steps, then wait ``cooldown``
    steps; never below ``min_lr``. "Improved" means below ``best·(1 − threshold)`` in mode
    ``"min"`` with ``threshold_mode="rel"`` (``best − threshold`` with ``"abs"``; mirrored in
    mode ``"max"``). Changes smaller than ``eps`` are skipped."""

    _PER_GROUP = ("_last_lr", "min_lrs")

    def __init__(
        self,
        optimizer: Optimizer,
        mode: str = "min",
        factor: float = 0.1,
        patience: int = 10,
        threshold: float = 1e-4,
        threshold_mode: str = "rel",
        cooldown: int = 0,
        min_lr: float | Sequence[float] = 0,
        eps: float = 1e-8,
    ) -> None:
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        self.factor = factor
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        groups = len(optimizer.param_groups)
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != groups:
                raise ValueError(f"expected {groups} min_lrs, got {len(min_lr)}")
            self.default_min_lr = None
            self.min_lrs = list(min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * groups
        self.patience, self.cooldown, self.eps = patience, cooldown, eps
        self.last_epoch = 0
        self._last_lr = self._current_lrs()
        self._init_is_better(mode, threshold, threshold_mode)
        self._reset()

    def _reset(self) -> None:
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    def step(self, metrics: Any) -> None:  # type: ignore[override]
        """Take the metric of this epoch (a number or a one-element tensor)."""
        current = float(metrics)
        self.last_epoch += 1
        if self._is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # bad epochs in cooldown do not count
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = self._current_lrs()

    def _reduce_lr(self) -> None:
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(
                    f"The number of param groups in the `optimizer` ({len(groups)}) differs "
                    f"from when `ReduceLROnPlateau` was initialized ({len(self.min_lrs)}), "
                    "usually due to a new param group being added to the optimizer. Please "
                    "modify the `min_lrs` field to match the length of the `optimizer` param "
                    "groups."
                )
            self.min_lrs = [self.default_min_lr] * len(groups)
        for group, min_lr in zip(groups, self.min_lrs, strict=True):
            old = float(group["lr"])
            new = max(old * self.factor, min_lr)
            if old - new > self.eps:
                group["lr"] = new

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def _is_better(self, a: float, best: float) -> bool:
        if self.mode == "min" and self.threshold_mode == "rel":
            return a < best * (1.0 - self.threshold)
        if self.mode == "min":
            return a < best - self.threshold
        if self.threshold_mode == "rel":
            return a > best * (self.threshold + 1.0)
        return a > best + self.threshold

    def _init_is_better(self, mode: str, threshold: float, threshold_mode: str) -> None:
        if mode not in ("min", "max"):
            raise ValueError(f"mode {mode} is unknown!")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"threshold mode {threshold_mode} is unknown!")
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.mode, self.threshold, self.threshold_mode = mode, threshold, threshold_mode

    def _load(self, state_dict: Mapping[str, Any]) -> None:
        super()._load(state_dict)
        self._init_is_better(self.mode, self.threshold, self.threshold_mode)


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
        cycle_momentum: bool = True,
        base_momentum: float | Sequence[float] = 0.85,
        max_momentum: float | Sequence[float] = 0.95,
        div_factor: float = 25.0,
        final_div_factor: float = 1e4,
        three_phase: bool = False,
        last_epoch: int = -1,
    ) -> None:
        _check_optimizer(optimizer)
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
        self._anneal_func_type = anneal_strategy
        max_lrs = _per_group("max_lr", optimizer, max_lr)
        if last_epoch == -1:
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
            if last_epoch == -1:
                for group, high, low in zip(optimizer.param_groups, highs, lows, strict=True):
                    self._set_momentum(group, high)
                    group["max_momentum"], group["base_momentum"] = high, low
        super().__init__(optimizer, last_epoch)

    def _set_momentum(self, group: dict[str, Any], value: float) -> None:
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value

    def _anneal(self, start: float, end: float, pct: float) -> float:
        if self._anneal_func_type == "cos":
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


__all__ = [
    "ConstantLR",
    "CosineAnnealingLR",
    "ExponentialLR",
    "LRScheduler",
    "LambdaLR",
    "LinearLR",
    "MultiStepLR",
    "OneCycleLR",
    "ReduceLROnPlateau",
    "SequentialLR",
    "StepLR",
]
