"""Adadelta: per-coordinate step sizes from running averages of squared gradients and steps."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from tensorgrad._native.axpy import axpy
from tensorgrad.core.engine import grad_array, mark_changed
from tensorgrad.optim.optimizer import Optimizer, _check_nonnegative


class Adadelta(Optimizer):
    """PyTorch's Adadelta (Zeiler, 2012). For each parameter θ with gradient g:

        g ← −g if maximize;  g ← g + weight_decay·θ
        v ← ρ·v + (1 − ρ)·g²
        Δ ← √(u + eps) / √(v + eps) · g
        u ← ρ·u + (1 − ρ)·Δ²
        θ ← θ − lr·Δ

    State per parameter: ``step``, ``square_avg`` (v) and ``acc_delta`` (u).
    """

    _STATE_ARRAYS = ("square_avg", "acc_delta")
    _STATE_NUMBERS = ("step",)

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1.0,
        rho: float = 0.9,
        eps: float = 1e-6,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        capturable: bool = False,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        defaults = dict(
            lr=lr,
            rho=rho,
            eps=eps,
            weight_decay=weight_decay,
            maximize=maximize,
            capturable=capturable,
            foreach=foreach,
            differentiable=differentiable,
        )
        super().__init__(params, defaults)

    def _validate(self, group: dict[str, Any]) -> None:
        super()._validate(group)
        if not 0.0 <= group["rho"] <= 1.0:
            raise ValueError(f"Invalid rho value: {group['rho']}")
        _check_nonnegative("epsilon value", group["eps"])
        _check_nonnegative("weight_decay value", group["weight_decay"])

    def _update(self, group: dict[str, Any]) -> None:
        lr, rho, eps = float(group["lr"]), float(group["rho"]), float(group["eps"])
        weight_decay, maximize = float(group["weight_decay"]), group["maximize"]
        params = self._with_grad(group)
        for p in params:
            param, g = p._data, grad_array(p)
            state = self.state[p]
            if not state:
                state["step"] = 0
                state["square_avg"] = np.zeros_like(param)
                state["acc_delta"] = np.zeros_like(param)
            state["step"] += 1
            v, u = state["square_avg"], state["acc_delta"]
            if maximize:
                g = -g
            if weight_decay:
                g = g + param * weight_decay
            tmp, delta = self._tmp(p), self._tmp(p, 1)
            v *= rho
            np.multiply(g, g, out=tmp)
            axpy(1.0 - rho, tmp, v, tmp)
            np.add(u, eps, out=delta)  # Δ = √((u + eps) / (v + eps)) · g
            np.add(v, eps, out=tmp)
            delta /= tmp
            np.sqrt(delta, out=delta)
            delta *= g
            u *= rho
            np.multiply(delta, delta, out=tmp)
            axpy(1.0 - rho, tmp, u, tmp)
            axpy(-lr, delta, param, tmp)
        mark_changed(params)
