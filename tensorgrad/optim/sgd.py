"""Stochastic gradient descent with momentum, dampening, Nesterov and weight decay."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from tensorgrad.optim.optimizer import Optimizer, _check_nonnegative
from tensorgrad.tensor import Tensor


class SGD(Optimizer):
    """PyTorch's SGD. For each parameter θ with gradient g, at step t:

        g ← −g if maximize;  g ← g + weight_decay·θ
        b ← g (t = 1), else b ← momentum·b + (1 − dampening)·g      (when momentum ≠ 0)
        g ← g + momentum·b if nesterov, else b                       (when momentum ≠ 0)
        θ ← θ − lr·g

    State per parameter: ``momentum_buffer`` (only when momentum ≠ 0).
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        momentum: float = 0.0,
        dampening: float = 0.0,
        weight_decay: float = 0.0,
        nesterov: bool = False,
        maximize: bool = False,
    ) -> None:
        defaults = dict(
            lr=lr,
            momentum=momentum,
            dampening=dampening,
            weight_decay=weight_decay,
            nesterov=nesterov,
            maximize=maximize,
        )
        super().__init__(params, defaults)

    def _validate(self, group: dict[str, Any]) -> None:
        super()._validate(group)
        _check_nonnegative("momentum value", group["momentum"])
        _check_nonnegative("weight_decay value", group["weight_decay"])
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")

    def _update(self, group: dict[str, Any]) -> None:
        lr, momentum = float(group["lr"]), float(group["momentum"])
        dampening, weight_decay = float(group["dampening"]), float(group["weight_decay"])
        nesterov, maximize = group["nesterov"], group["maximize"]
        state, scratch = self.state, self._scratch
        params = [p for p in group["params"] if p._grad is not None]
        for p in params:
            param, d = p._data, p._grad._data
            entry = scratch.get(p)  # self._tmp(p), inline
            tmp = entry[1] if entry is not None and entry[0] is param else self._tmp(p)
            if maximize:
                d = np.negative(d, tmp)
            if weight_decay:
                d = np.add(d, param * weight_decay, tmp)
            if momentum:
                buffers = state.get(p)
                buf = None if buffers is None else buffers.get("momentum_buffer")
                if buf is None:
                    buf = state.setdefault(p, {})["momentum_buffer"] = d.copy()
                else:
                    buf *= momentum
                    if dampening:
                        d = np.multiply(d, 1.0 - dampening, tmp)
                    buf += d
                d = np.add(d, buf * momentum, tmp) if nesterov else buf
            np.multiply(d, lr, tmp)
            param -= tmp
        Tensor._mark_all_changed(params)
