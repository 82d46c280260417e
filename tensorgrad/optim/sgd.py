"""Stochastic gradient descent with momentum, dampening, Nesterov and weight decay."""

from __future__ import annotations

import operator
from collections.abc import Iterable
from typing import Any

import numpy as np

from tensorgrad.core.engine import data_of as _DATA
from tensorgrad.core.engine import grad_array as _grad_array
from tensorgrad.core.engine import mark_changed
from tensorgrad.core.tensor import Tensor
from tensorgrad.optim._axpy import Axpy, axpy
from tensorgrad.optim.optimizer import Optimizer, _check_nonnegative


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
        state = self.state
        params = self._with_grad(group)
        plain = momentum and not (dampening or weight_decay or nesterov or maximize)
        every = params and len(params) == len(group["params"])
        if plain and every and self._flat_step(params, lr, momentum):
            mark_changed(params)
            return
        for p in params:
            param, d = p._data, _grad_array(p)
            tmp = self._tmp(p)
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
            axpy(-lr, d, param, tmp)
        mark_changed(params)

    def _flat_step(self, params: list[Tensor], lr: float, momentum: float) -> bool:
        """The usual step (plain momentum, every parameter with a gradient) with the momentum
        buffers as views into one array, so that decaying them is one NumPy call for the whole
        group, and with the updates ``p -= lr * buffer`` prepared once (see ``_axpy``). The
        results are those of the per-parameter step, bit for bit. Returns False, doing
        nothing, where the buffers are not (or no longer, after ``load_state_dict`` or a change
        to ``state``) such views, or the dtypes differ."""
        flat = self._flat.get(id(params[0]))
        if flat is None or flat.ids != tuple(map(id, params)):
            if any(p in self.state for p in params) or len({p.dtype for p in params}) != 1:
                return False
            flat = self._flat[id(params[0])] = _FlatBuffers(params)
            for p, buffer in zip(params, flat.buffers):
                np.copyto(buffer, _grad_array(p))  # the first step: b = g
                self.state[p] = {"momentum_buffer": buffer}
        elif not flat.in_state(params, self.state):
            del self._flat[id(params[0])]
            return False
        else:
            flat.buffer *= momentum
            _each(np.add, flat.buffers, list(map(_grad_array, params)))
        targets = list(map(_DATA, params))
        if flat.update is None or not all(map(operator.is_, targets, flat.update.ys)):
            flat.update = Axpy(flat.buffers, targets)  # new, or some ``p.data`` was replaced
        flat.update(-lr)
        return True


_MOMENTUM_BUFFER = operator.itemgetter("momentum_buffer")


def _each(ufunc: np.ufunc, targets: list[np.ndarray], operands: list[np.ndarray]) -> None:
    """``ufunc(t, o, out=t)`` for each pair: in place, with ``map`` running the loop in C."""
    for _ in map(ufunc, targets, operands, targets):
        pass


class _FlatBuffers:
    """One array for the momentum buffers of some parameters, cut into views shaped like the
    parameters, and the prepared update ``p += alpha * buffer`` of each parameter."""

    def __init__(self, params: list[Tensor]) -> None:
        self.ids = tuple(map(id, params))
        sizes = [p._data.size for p in params]
        self.buffer = np.empty(sum(sizes), dtype=params[0].dtype)
        bounds = np.cumsum([0, *sizes]).tolist()
        self.buffers = [
            self.buffer[start:stop].reshape(p.shape)
            for start, stop, p in zip(bounds, bounds[1:], params)
        ]
        self.update: Axpy | None = None  # made by the first update

    def in_state(self, params: list[Tensor], state: dict[Tensor, dict[str, Any]]) -> bool:
        """Whether ``state`` still holds these very buffers for ``params`` (it may have been
        cleared, or a buffer replaced), checked by identity with the loop in C."""
        try:
            held = map(_MOMENTUM_BUFFER, map(state.__getitem__, params))
            return all(map(operator.is_, held, self.buffers))
        except (KeyError, TypeError):
            return False
