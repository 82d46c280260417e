"""Stochastic gradient descent with momentum, dampening, Nesterov and weight decay."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from tensorgrad._native.axpy import Axpy, axpy
from tensorgrad.core.engine import grad_array, mark_changed
from tensorgrad.core.tensor import Tensor
from tensorgrad.optim.optimizer import FlatState, Optimizer, _check_nonnegative


class SGD(Optimizer):
    """PyTorch's SGD. For each parameter θ with gradient g, at step t:

        g ← −g if maximize;  g ← g + weight_decay·θ
        b ← g (t = 1), else b ← momentum·b + (1 − dampening)·g      (when momentum ≠ 0)
        g ← g + momentum·b if nesterov, else b                       (when momentum ≠ 0)
        θ ← θ − lr·g

    State per parameter: ``momentum_buffer`` (only when momentum ≠ 0).
    """

    _STATE_ARRAYS = ("momentum_buffer",)

    #: the speed trick of this class, on by default: see ``_FlatMomentum``
    _use_flat_momentum = True

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        momentum: float = 0,
        dampening: float = 0,
        weight_decay: float = 0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        defaults = dict(
            lr=lr,
            momentum=momentum,
            dampening=dampening,
            weight_decay=weight_decay,
            nesterov=nesterov,
            maximize=maximize,
            foreach=foreach,
            differentiable=differentiable,
            fused=fused,
        )
        super().__init__(params, defaults)

    def _validate(self, group: dict[str, Any]) -> None:
        super()._validate(group)
        _check_nonnegative("momentum value", group["momentum"])
        _check_nonnegative("weight_decay value", group["weight_decay"])
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")

    def _required_state(self, group: dict[str, Any]) -> tuple[str, ...]:
        return ()  # no buffer without momentum; a missing one starts again from g

    def _update(self, group: dict[str, Any]) -> None:
        lr, momentum = float(group["lr"]), float(group["momentum"])
        dampening, weight_decay = float(group["dampening"]), float(group["weight_decay"])
        nesterov, maximize = group["nesterov"], group["maximize"]
        params = self._with_grad(group)
        plain_momentum = (
            momentum
            and not (dampening or weight_decay or nesterov or maximize)
            and len(params) == len(group["params"])
            and self._use_flat_momentum
        )
        if plain_momentum and self._flat_momentum_step(group, params, lr, momentum):
            mark_changed(params)
            return
        state = self.state
        for p in params:
            param, d = p._data, grad_array(p)
            tmp = self._tmp(p)
            if maximize:
                d = np.negative(d, tmp)
            if weight_decay:
                d = np.add(d, param * weight_decay, tmp)
            if momentum:
                buf = state[p].get("momentum_buffer")
                if buf is None:
                    buf = state[p]["momentum_buffer"] = d.copy()
                else:
                    buf *= momentum
                    if dampening:
                        d = np.multiply(d, 1.0 - dampening, tmp)
                    buf += d
                d = np.add(d, buf * momentum, tmp) if nesterov else buf
            axpy(-lr, d, param, tmp)
        mark_changed(params)
        if plain_momentum:  # the next steps can take the flat path
            self._flat_momentum_prepare(group, params)

    # ------------------------------------------------------------- speed: one flat buffer
    def _flat_momentum_step(
        self, group: dict[str, Any], params: list[Tensor], lr: float, momentum: float
    ) -> bool:
        """The usual step (plain momentum, every parameter with a gradient) over the group's
        flat buffer, when one is prepared and still fits; False, doing nothing, otherwise."""
        flat = self._flat.get(id(group))
        if flat is None or not flat.fits(params, self.state):
            return False
        flat.step(params, lr, momentum)
        return True

    def _flat_momentum_prepare(self, group: dict[str, Any], params: list[Tensor]) -> None:
        """Move the group's momentum buffers into one flat array for the next steps."""
        one_dtype = len({p.dtype for p in params}) == 1
        flat = (lambda: _FlatMomentum(params, self.state)) if one_dtype else None
        self._prepare_flat(group, flat)


class _FlatMomentum(FlatState):
    """Speed: the momentum buffers of a group as views into one array, so that decaying them
    is one NumPy call for the whole group instead of one per parameter, and the updates
    ``θ -= lr·b`` prepared once (``_native.axpy.Axpy``). Results equal the per-parameter
    step's bit for bit."""

    kept = ("momentum_buffer",)

    def __init__(self, params: list[Tensor], state: dict[Tensor, dict[str, Any]]) -> None:
        super().__init__(params, state)
        self.buffer = self.flat["momentum_buffer"]
        self.buffers = self.views["momentum_buffer"]
        self.update = Axpy(self.buffers, self.targets)

    def step(self, params: list[Tensor], lr: float, momentum: float) -> None:
        """``b ← momentum·b + g`` and ``θ ← θ − lr·b`` for every parameter."""
        self.buffer *= momentum
        for buffer, p in zip(self.buffers, params):
            buffer += grad_array(p)
        self.update(-lr)
