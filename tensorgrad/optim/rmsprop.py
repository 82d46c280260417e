"""RMSprop, plain or centered, with optional momentum."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from tensorgrad._native.axpy import axpy
from tensorgrad.core.engine import grad_array, mark_changed
from tensorgrad.optim.optimizer import Optimizer, _check_nonnegative


class RMSprop(Optimizer):
    """PyTorch's RMSprop. For each parameter θ with gradient g:

        g ← −g if maximize;  g ← g + weight_decay·θ
        v ← α·v + (1 − α)·g²
        ḡ ← α·ḡ + (1 − α)·g,  v' = v − ḡ²          (centered; else v' = v)
        b ← momentum·b + g / (√v' + eps),  θ ← θ − lr·b     (momentum > 0)
        θ ← θ − lr · g / (√v' + eps)                          (otherwise)

    State per parameter: ``step``, ``square_avg`` (v), and ``momentum_buffer`` (b) and
    ``grad_avg`` (ḡ) when used.
    """

    _STATE_ARRAYS = ("square_avg", "momentum_buffer", "grad_avg")
    _STATE_NUMBERS = ("step",)

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum: float = 0,
        centered: bool = False,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        defaults = dict(
            lr=lr,
            momentum=momentum,
            alpha=alpha,
            eps=eps,
            centered=centered,
            weight_decay=weight_decay,
            capturable=capturable,
            foreach=foreach,
            maximize=maximize,
            differentiable=differentiable,
        )
        super().__init__(params, defaults)

    def _validate(self, group: dict[str, Any]) -> None:
        super()._validate(group)
        _check_nonnegative("epsilon value", group["eps"])
        _check_nonnegative("momentum value", group["momentum"])
        _check_nonnegative("weight_decay value", group["weight_decay"])
        _check_nonnegative("alpha value", group["alpha"])

    def _required_state(self, group: dict[str, Any]) -> tuple[str, ...]:
        return ("step", "square_avg")  # the others: made when first needed

    def _update(self, group: dict[str, Any]) -> None:
        lr, alpha, eps = float(group["lr"]), float(group["alpha"]), float(group["eps"])
        weight_decay, momentum = float(group["weight_decay"]), float(group["momentum"])
        centered, maximize = group["centered"], group["maximize"]
        params = self._with_grad(group)
        for p in params:
            param, g = p._data, grad_array(p)
            state = self.state[p]
            if not state:
                state["step"] = 0
                state["square_avg"] = np.zeros_like(param)
            # made at the first step that needs them (also after turning them on later)
            if momentum > 0 and state.get("momentum_buffer") is None:
                state["momentum_buffer"] = np.zeros_like(param)
            if centered and state.get("grad_avg") is None:
                state["grad_avg"] = np.zeros_like(param)
            state["step"] += 1
            tmp = self._tmp(p)
            if maximize:
                g = -g
            if weight_decay:
                g = g + param * weight_decay
            v = state["square_avg"]
            v *= alpha
            np.multiply(g, g, out=tmp)
            tmp *= 1.0 - alpha
            v += tmp
            if centered:
                mean = state["grad_avg"]
                mean *= alpha
                mean += np.multiply(g, 1.0 - alpha, out=tmp)
                np.multiply(mean, mean, out=tmp)
                np.subtract(v, tmp, out=tmp)
                np.sqrt(tmp, out=tmp)
            else:
                np.sqrt(v, out=tmp)
            tmp += eps
            np.divide(g, tmp, out=tmp)
            if momentum > 0:
                buf = state["momentum_buffer"]
                buf *= momentum
                buf += tmp
                axpy(-lr, buf, param, tmp)
            else:
                axpy(-lr, tmp, param, tmp)
        mark_changed(params)
