"""Stochastic gradient descent with momentum, dampening, Nesterov and weight decay."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from tensorgrad._native.axpy import Axpy, axpy
from tensorgrad.core.engine import grad_array, mark_changed
from tensorgrad.core.tensor import Tensor
from tensorgrad.optim.optimizer import Optimizer, _check_nonnegative


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
        live = {id(g) for g in self.param_groups}
        for key in [key for key in self._flat if key not in live]:  # groups since removed
            del self._flat[key]
        self._flat.pop(id(group), None)
        if len({p.dtype for p in params}) == 1:
            self._flat[id(group)] = _FlatMomentum(params, self.state)


class _FlatMomentum:
    """Speed: the momentum buffers of a group as views into one array, so that decaying them
    is one NumPy call for the whole group instead of one per parameter, and the updates
    ``θ -= lr·b`` prepared once (``_native.axpy.Axpy``). Results equal the per-parameter
    step's bit for bit; ``fits`` sends the step back to that path when the group's
    parameters, their arrays or the state's buffers have changed (a user's edit,
    ``load_state_dict``).

    Building it copies each parameter's buffer into the flat array and puts the view into
    the state in its place: a buffer array held from before then no longer follows training.
    """

    def __init__(self, params: list[Tensor], state: dict[Tensor, dict[str, Any]]) -> None:
        self.ids = [id(p) for p in params]
        sizes = [p._data.size for p in params]
        self.buffer = np.empty(sum(sizes), dtype=params[0].dtype)
        bounds = np.cumsum([0, *sizes]).tolist()
        self.buffers = [
            self.buffer[start:stop].reshape(p.shape)
            for start, stop, p in zip(bounds, bounds[1:], params)
        ]
        for p, view in zip(params, self.buffers):
            np.copyto(view, state[p]["momentum_buffer"])
            state[p]["momentum_buffer"] = view
        self.update = Axpy(self.buffers, [p._data for p in params])

    def fits(self, params: list[Tensor], state: dict[Tensor, dict[str, Any]]) -> bool:
        """Whether these are still the parameters, arrays and state buffers it was built for."""
        if len(params) != len(self.ids):
            return False
        for p, expected, buffer, target in zip(params, self.ids, self.buffers, self.update.ys):
            entry = state.get(p)
            if (
                id(p) != expected
                or p._data is not target
                or entry is None
                or entry.get("momentum_buffer") is not buffer
            ):
                return False
        return True

    def step(self, params: list[Tensor], lr: float, momentum: float) -> None:
        """``b ← momentum·b + g`` and ``θ ← θ − lr·b`` for every parameter."""
        self.buffer *= momentum
        for buffer, p in zip(self.buffers, params):
            buffer += grad_array(p)
        self.update(-lr)
