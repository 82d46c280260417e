"""Adam and AdamW (Adam with decoupled weight decay)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from tensorgrad.core.engine import grad_array as _grad_array
from tensorgrad.core.engine import mark_changed
from tensorgrad.optim._axpy import axpy
from tensorgrad.optim.optimizer import Optimizer, _check_nonnegative


class Adam(Optimizer):
    """PyTorch's Adam. For each parameter θ with gradient g, at step t:

        g ← −g if maximize
        θ ← θ·(1 − lr·weight_decay)  if decoupled (AdamW),  else  g ← g + weight_decay·θ
        m ← β₁·m + (1 − β₁)·g
        v ← β₂·v + (1 − β₂)·g²
        v_max ← max(v_max, v), used instead of v        (amsgrad)
        θ ← θ − (lr / (1 − β₁ᵗ)) · m / (√v / √(1 − β₂ᵗ) + eps)

    State per parameter: ``step``, ``exp_avg`` (m), ``exp_avg_sq`` (v) and, with amsgrad,
    ``max_exp_avg_sq``.
    """

    _decoupled = False

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        amsgrad: bool = False,
        maximize: bool = False,
    ) -> None:
        defaults = dict(
            lr=lr,
            betas=tuple(betas),
            eps=eps,
            weight_decay=weight_decay,
            amsgrad=amsgrad,
            maximize=maximize,
        )
        super().__init__(params, defaults)

    def _validate(self, group: dict[str, Any]) -> None:
        super()._validate(group)
        _check_nonnegative("epsilon value", group["eps"])
        _check_nonnegative("weight_decay value", group["weight_decay"])
        betas = group["betas"]
        if len(betas) != 2:
            raise ValueError(f"Invalid betas: {betas} (expected two values)")
        for i, beta in enumerate(betas):
            if not 0.0 <= beta < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {beta} (must be in [0, 1))")

    def _update(self, group: dict[str, Any]) -> None:
        lr, eps, weight_decay = (
            float(group["lr"]),
            float(group["eps"]),
            float(group["weight_decay"]),
        )
        beta1, beta2 = (float(b) for b in group["betas"])
        amsgrad, maximize = group["amsgrad"], group["maximize"]
        params = self._with_grad(group)
        for p in params:
            param, g = p._data, _grad_array(p)
            state = self.state.setdefault(p, {})
            if not state:
                state["step"] = 0
                state["exp_avg"] = np.zeros_like(param)
                state["exp_avg_sq"] = np.zeros_like(param)
                if amsgrad:
                    state["max_exp_avg_sq"] = np.zeros_like(param)
            state["step"] += 1
            step, m, v = state["step"], state["exp_avg"], state["exp_avg_sq"]
            tmp = self._tmp(p)
            if maximize:
                g = -g
            if weight_decay:
                if self._decoupled:
                    param *= 1.0 - lr * weight_decay
                else:
                    g = g + param * weight_decay
            m *= beta1
            axpy(1.0 - beta1, g, m, tmp)
            v *= beta2
            np.multiply(g, g, out=tmp)
            axpy(1.0 - beta2, tmp, v, tmp)
            if amsgrad:
                v = np.maximum(state["max_exp_avg_sq"], v, out=state["max_exp_avg_sq"])
            step_size = lr / (1.0 - beta1**step)
            np.sqrt(v, out=tmp)
            tmp /= math.sqrt(1.0 - beta2**step)
            tmp += eps
            np.divide(m, tmp, out=tmp)
            axpy(-step_size, tmp, param, tmp)
        mark_changed(params)


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov and Hutter): the parameters shrink by
    ``lr·weight_decay`` each step, apart from the gradient's moments. Default decay 1e-2."""

    _decoupled = True

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        maximize: bool = False,
    ) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize)
