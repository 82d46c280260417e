"""Adam and AdamW (Adam with decoupled weight decay)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from tensorgrad._native.axpy import axpy
from tensorgrad.core.engine import grad_array, mark_changed
from tensorgrad.optim.optimizer import Optimizer, _check_nonnegative, _check_number


class Adam(Optimizer):
    """PyTorch's Adam. For each parameter θ with gradient g, at step t:

        g ← −g if maximize
        θ ← θ·(1 − lr·weight_decay)  if decoupled_weight_decay (AdamW),
        else g ← g + weight_decay·θ
        m ← β₁·m + (1 − β₁)·g
        v ← β₂·v + (1 − β₂)·g²
        v_max ← max(v_max, v), used instead of v        (amsgrad)
        θ ← θ − (lr / (1 − β₁ᵗ)) · m / (√v / √(1 − β₂ᵗ) + eps)

    State per parameter: ``step``, ``exp_avg`` (m), ``exp_avg_sq`` (v) and, with amsgrad,
    ``max_exp_avg_sq``.
    """

    _STATE_ARRAYS = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq")
    _STATE_NUMBERS = ("step",)

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        amsgrad: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
        decoupled_weight_decay: bool = False,
    ) -> None:
        defaults = dict(
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            amsgrad=amsgrad,
            maximize=maximize,
            foreach=foreach,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
            decoupled_weight_decay=decoupled_weight_decay,
        )
        super().__init__(params, defaults)

    def _validate(self, group: dict[str, Any]) -> None:
        super()._validate(group)
        owner, betas = type(self).__name__, group["betas"]
        if not isinstance(betas, (tuple, list)):
            raise TypeError(f"{owner}: betas must be a pair (beta1, beta2), got {betas!r}")
        if len(betas) != 2:
            raise ValueError(f"{owner}: betas must be a pair (beta1, beta2), got {betas!r}")
        for i, beta in enumerate(betas):
            _check_number(owner, f"betas[{i}]", beta)
            if not 0.0 <= beta < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {beta}")
        _check_nonnegative("epsilon value", group["eps"])
        _check_nonnegative("weight_decay value", group["weight_decay"])

    def _required_state(self, group: dict[str, Any]) -> tuple[str, ...]:
        return ("step", "exp_avg", "exp_avg_sq")  # max_exp_avg_sq: made when first needed

    def _update(self, group: dict[str, Any]) -> None:
        lr, eps, weight_decay = (
            float(group["lr"]),
            float(group["eps"]),
            float(group["weight_decay"]),
        )
        beta1, beta2 = (float(b) for b in group["betas"])
        amsgrad, maximize = group["amsgrad"], group["maximize"]
        decoupled = group["decoupled_weight_decay"]
        params = self._with_grad(group)
        for p in params:
            param, g = p._data, grad_array(p)
            state = self.state[p]
            if not state:
                state["step"] = 0
                state["exp_avg"] = np.zeros_like(param)
                state["exp_avg_sq"] = np.zeros_like(param)
            if amsgrad and state.get("max_exp_avg_sq") is None:  # also when turned on later
                state["max_exp_avg_sq"] = np.zeros_like(param)
            state["step"] += 1
            step, m, v = state["step"], state["exp_avg"], state["exp_avg_sq"]
            tmp = self._tmp(p)
            if maximize:
                g = -g
            if weight_decay:
                if decoupled:
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

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        super().__init__(
            params,
            lr,
            betas,
            eps,
            weight_decay,
            amsgrad,
            foreach=foreach,
            maximize=maximize,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
            decoupled_weight_decay=True,
        )
