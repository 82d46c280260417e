"""Adam and AdamW (Adam with decoupled weight decay)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from tensorgrad import _jit
from tensorgrad._native.axpy import Axpy, axpy
from tensorgrad.core.engine import grad_array, mark_changed
from tensorgrad.core.tensor import Tensor
from tensorgrad.optim.optimizer import FlatState, Optimizer, _check_nonnegative, _check_number


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

    #: the speed trick of this class, on by default: see ``_FlatMoments``
    _use_flat_moments = True

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
        flat_ready = self._use_flat_moments and not amsgrad and len(params) == len(group["params"])
        if flat_ready:
            flat = self._flat.get(id(group))
            if flat is not None and flat.fits(params, self.state):
                flat.step(group, params, self.state)
                mark_changed(params)
                return
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
            m *= beta1  # (the moments in NumPy: the flat path's rounding, bit for bit)
            m += np.multiply(g, 1.0 - beta1, out=tmp)
            v *= beta2
            np.multiply(g, g, out=tmp)
            tmp *= 1.0 - beta2
            v += tmp
            if amsgrad:
                v = np.maximum(state["max_exp_avg_sq"], v, out=state["max_exp_avg_sq"])
            step_size = lr / (1.0 - beta1**step)
            np.sqrt(v, out=tmp)
            tmp /= math.sqrt(1.0 - beta2**step)
            tmp += eps
            np.divide(m, tmp, out=tmp)
            axpy(-step_size, tmp, param, tmp)
        mark_changed(params)
        if flat_ready:  # the next steps can take the flat path
            self._flat_prepare(group, params)

    def _flat_prepare(self, group: dict[str, Any], params: list[Tensor]) -> None:
        """Move the group's moments into flat arrays for the next steps, when its parameters
        share a dtype and a step count."""
        fits = len({p.dtype for p in params}) == len({self.state[p]["step"] for p in params}) == 1
        self._prepare_flat(group, (lambda: _FlatMoments(params, self.state)) if fits else None)


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


#: the dtypes of the flat moments that ``_jit``'s ``adam_moments`` takes
_KERNEL_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


class _FlatMoments(FlatState):
    """Speed: Adam's moments m and v of a group as views into two flat arrays, and the
    gradients copied into a third, so that updating the moments and forming the step
    m̂ / (√v̂ + eps) are a few NumPy calls for the whole group instead of a few per parameter
    (a GPT's thirty-odd small parameters made that loop the optimizer's cost; PyTorch's
    default ``foreach`` implementation batches them too). Results equal the per-parameter
    step's (the same operations on the same numbers); it fits while every parameter's step
    count is still its own."""

    kept = ("exp_avg", "exp_avg_sq")
    scratch = ("grad", "tmp")

    def __init__(self, params: list[Tensor], state: dict[Tensor, dict[str, Any]]) -> None:
        super().__init__(params, state)
        self.step_count = state[params[0]]["step"]
        self.m, self.v, self.g, self.tmp = (self.flat[name] for name in (*self.kept, *self.scratch))
        self.gs = self.views["grad"]
        self.update = Axpy(self.views["tmp"], self.targets)

    def fits(self, params: list[Tensor], state: dict[Tensor, dict[str, Any]]) -> bool:
        """Whether these are still the parameters, arrays, moments and step count it was
        built for."""
        return super().fits(params, state) and all(
            state[p].get("step") == self.step_count for p in params
        )

    def step(
        self, group: dict[str, Any], params: list[Tensor], state: dict[Tensor, dict[str, Any]]
    ) -> None:
        """Adam's step (the per-parameter loop's operations, in the same order) for every
        parameter of the group."""
        lr, eps, weight_decay = (
            float(group["lr"]),
            float(group["eps"]),
            float(group["weight_decay"]),
        )
        beta1, beta2 = (float(b) for b in group["betas"])
        decoupled = group["decoupled_weight_decay"]
        for p, g in zip(params, self.gs):
            np.copyto(g, grad_array(p))
        if group["maximize"]:
            np.negative(self.g, out=self.g)
        if weight_decay:
            for p, g in zip(params, self.gs):
                if decoupled:
                    p._data *= 1.0 - lr * weight_decay
                else:
                    np.add(g, p._data * weight_decay, out=g)
        self.step_count += 1
        for p in params:
            state[p]["step"] = self.step_count
        m, v, tmp = self.m, self.v, self.tmp
        bias2 = math.sqrt(1.0 - beta2**self.step_count)
        if not (
            _jit.ENABLED
            and m.dtype in _KERNEL_DTYPES
            and _jit.run("adam_moments", self.g, m, v, beta1, beta2, bias2, eps, tmp)
        ):  # the kernel: the lines below in one pass (tensorgrad/_jit), the same numbers
            m *= beta1
            m += np.multiply(self.g, 1.0 - beta1, out=tmp)
            v *= beta2
            np.multiply(self.g, self.g, out=tmp)
            tmp *= 1.0 - beta2
            v += tmp
            np.sqrt(v, out=tmp)
            tmp /= bias2
            tmp += eps
            np.divide(m, tmp, out=tmp)
        self.update(-lr / (1.0 - beta1**self.step_count))
