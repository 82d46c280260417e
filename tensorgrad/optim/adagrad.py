"""Adagrad: per-coordinate step sizes from the sum of all squared gradients so far."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from tensorgrad._native.axpy import axpy
from tensorgrad.core.engine import grad_array, mark_changed
from tensorgrad.core.tensor import Tensor
from tensorgrad.optim.optimizer import Optimizer, _check_nonnegative, _check_number


class Adagrad(Optimizer):
    """PyTorch's Adagrad (Duchi et al., 2011). For each parameter θ with gradient g, at step t:

        g ← −g if maximize;  g ← g + weight_decay·θ
        s ← s + g²                      (s starts at initial_accumulator_value)
        θ ← θ − lr / (1 + (t − 1)·lr_decay) · g / (√s + eps)

    State per parameter, created with the optimizer as in PyTorch: ``step`` and ``sum`` (s).
    """

    _STATE_ARRAYS = ("sum",)
    _STATE_NUMBERS = ("step",)

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-2,
        lr_decay: float = 0,
        weight_decay: float = 0,
        initial_accumulator_value: float = 0,
        eps: float = 1e-10,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        defaults = dict(
            lr=lr,
            lr_decay=lr_decay,
            eps=eps,
            weight_decay=weight_decay,
            initial_accumulator_value=initial_accumulator_value,
            foreach=foreach,
            maximize=maximize,
            differentiable=differentiable,
            fused=fused,
        )
        super().__init__(params, defaults)

    def _validate(self, group: dict[str, Any]) -> None:
        super()._validate(group)
        owner = type(self).__name__
        for name in ("lr_decay", "initial_accumulator_value"):
            _check_number(owner, name, group[name])
        _check_nonnegative("lr_decay value", group["lr_decay"])
        _check_nonnegative("weight_decay value", group["weight_decay"])
        _check_nonnegative("initial_accumulator_value value", group["initial_accumulator_value"])
        _check_nonnegative("epsilon value", group["eps"])

    def _init_state(self, group: dict[str, Any]) -> None:
        for p in group["params"]:
            self._start(p, group)

    def _start(self, p: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        state = self.state[p]
        if not state:
            state["step"] = 0
            state["sum"] = np.full_like(p._data, float(group["initial_accumulator_value"]))
        return state

    def _update(self, group: dict[str, Any]) -> None:
        lr, lr_decay, eps = float(group["lr"]), float(group["lr_decay"]), float(group["eps"])
        weight_decay, maximize = float(group["weight_decay"]), group["maximize"]
        params = self._with_grad(group)
        for p in params:
            param, g = p._data, grad_array(p)
            state = self._start(p, group)  # a parameter added to the group's list later
            state["step"] += 1
            total = state["sum"]
            if maximize:
                g = -g
            if weight_decay:
                g = g + param * weight_decay
            clr = lr / (1 + (state["step"] - 1) * lr_decay)
            tmp = self._tmp(p)
            np.multiply(g, g, out=tmp)
            total += tmp
            np.sqrt(total, out=tmp)
            tmp += eps
            np.divide(g, tmp, out=tmp)
            axpy(-clr, tmp, param, tmp)
        mark_changed(params)
