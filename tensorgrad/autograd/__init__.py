"""Automatic differentiation, as PyTorch's ``torch.autograd``: ``backward`` and ``grad``,
custom ops (``Function``), anomaly detection, and gradient checks.

    import tensorgrad as tg
    (g,) = tg.autograd.grad(loss, x)                       # returned, .grad untouched
    with tg.autograd.detect_anomaly(): loss.backward()     # name the op that made a NaN
    tg.autograd.gradcheck(fn, inputs)                      # against finite differences

The sweep itself lives in ``tensorgrad.core.sweep``; this package is its public face. Its rooms:
``gradients`` (``backward``, ``grad``), ``function`` (``Function``), ``anomaly``,
``finite_differences`` (``gradcheck``, ``gradgradcheck``, ``gradcheck_module``) and
``scalar_oracle`` (``check_with_scalar_engine``); ``checks`` re-exports both checks;
``forward_ad`` (forward mode) and ``functional`` (``jacobian``, ``hessian``, ``vjp``, ``jvp``,
``hvp``, ``vhp``: PyTorch's ``torch.autograd.functional``, imported on first use);
``variable`` (PyTorch's deprecated ``Variable``, for old programs).
"""

from __future__ import annotations

from typing import Any

from tensorgrad.autograd import forward_ad
from tensorgrad.autograd.anomaly import detect_anomaly, is_anomaly_enabled, set_detect_anomaly
from tensorgrad.autograd.function import Function, FunctionCtx, once_differentiable
from tensorgrad.autograd.gradients import backward, grad
from tensorgrad.autograd.variable import Variable
from tensorgrad.grad_mode import enable_grad, no_grad, set_grad_enabled

__all__ = [
    "Function",
    "FunctionCtx",
    "GradcheckError",
    "GradcheckWarning",
    "Variable",
    "backward",
    "check_with_scalar_engine",
    "detect_anomaly",
    "enable_grad",
    "forward_ad",
    "functional",
    "grad",
    "gradcheck",
    "gradcheck_module",
    "gradgradcheck",
    "is_anomaly_enabled",
    "no_grad",
    "once_differentiable",
    "set_detect_anomaly",
    "set_grad_enabled",
]

#: the gradient checks, imported on first use (``tg.autograd.gradcheck`` and friends):
#: against finite differences, and against the scalar engine
_FINITE_DIFFERENCES = {
    "GradcheckError",
    "GradcheckReport",
    "GradcheckWarning",
    "gradcheck",
    "gradcheck_module",
    "gradgradcheck",
}
_SCALAR_ORACLE = {"SCALAR_FORWARDS", "check_with_scalar_engine"}


def __getattr__(name: str) -> Any:
    import importlib

    if name == "functional":
        module = importlib.import_module("tensorgrad.autograd.functional")
        globals()[name] = module
        return module
    if name in _FINITE_DIFFERENCES or name in _SCALAR_ORACLE:
        # by name, as the top-level package's lazy table does: the checks use tg.func (vmap
        # for the batched checks), which uses this package's grad; this re-export is the
        # only way back, and it runs on first use
        source = "finite_differences" if name in _FINITE_DIFFERENCES else "scalar_oracle"
        module = importlib.import_module(f"tensorgrad.autograd.{source}")
        value = getattr(module, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tensorgrad.autograd' has no attribute {name!r}")
