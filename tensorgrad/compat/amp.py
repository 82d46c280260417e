"""``tg.amp`` (and ``tg.cuda.amp``): PyTorch's gradient scaler, and ``autocast`` where it
asks for nothing.

Mixed precision itself is not there (``autocast(enabled=True)`` raises, naming it), but the
training loops that use it run on a CPU in PyTorch too, and so here: nanoGPT makes
``torch.cuda.amp.GradScaler(enabled=(dtype == 'float16'))`` on every machine and calls
``scaler.scale(loss).backward()``, ``scaler.unscale_(optimizer)``, ``scaler.step(optimizer)``
and ``scaler.update()``. Without CUDA, PyTorch's ``torch.cuda.amp.GradScaler`` (and
``torch.amp.GradScaler("cuda")``, the default device) warns and disables itself: every call
passes through. ``torch.amp.GradScaler("cpu")`` scales for real, as PyTorch's does: the loss
is multiplied by the scale, the gradients divided by it before the step, a step whose
gradients hold inf or NaN is skipped and the scale backed off, and after
``growth_interval`` good steps it grows.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from tensorgrad.array_backend import UnsupportedError
from tensorgrad.grad_mode import no_grad

__all__ = ["GradScaler", "autocast"]


class GradScaler:
    """PyTorch's ``torch.amp.GradScaler(device="cuda", init_scale=2.**16, growth_factor=2.0,
    backoff_factor=0.5, growth_interval=2000, enabled=True)``: see the module's docstring."""

    def __init__(
        self,
        device: str = "cuda",
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        self._device = str(device)
        if enabled and self._device.startswith("cuda"):
            warnings.warn(
                "torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                stacklevel=2,
            )
            enabled = False
        self._enabled = bool(enabled)
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
        self._scale = float(init_scale)
        self._growth_factor, self._backoff_factor = float(growth_factor), float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._growth_tracker = 0
        self._per_optimizer: dict[int, dict[str, Any]] = {}

    # ------------------------------------------------------------------ the training step
    def scale(self, outputs: Any) -> Any:
        """``outputs`` (a tensor, or a list or tuple of them) times the scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(output * self._scale for output in outputs)
        return outputs * self._scale

    def _state(self, optimizer: Any) -> dict[str, Any]:
        return self._per_optimizer.setdefault(id(optimizer), {"unscaled": False, "inf": False})

    def unscale_(self, optimizer: Any) -> None:
        """Divide the gradients of ``optimizer``'s parameters by the scale, in place, and
        note whether any is inf or NaN (then ``step`` skips)."""
        if not self._enabled:
            return
        state = self._state(optimizer)
        if state["unscaled"]:
            raise RuntimeError(
                "unscale_() has already been called on this optimizer since the last update()."
            )
        inverse, found_inf = 1.0 / self._scale, False
        with no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    grad = param.grad
                    if grad is None:
                        continue
                    grad.mul_(inverse)
                    found_inf = found_inf or not bool(np.isfinite(grad._data).all())
        state["unscaled"], state["inf"] = True, found_inf

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """``optimizer.step(*args, **kwargs)`` on unscaled gradients, unless one is inf or
        NaN; returns what the step returns (None when skipped)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        state = self._state(optimizer)
        if not state["unscaled"]:
            self.unscale_(optimizer)
        return None if state["inf"] else optimizer.step(*args, **kwargs)

    def update(self, new_scale: float | Any = None) -> None:
        """Back the scale off if a step this iteration found inf or NaN, else grow it after
        ``growth_interval`` good steps; ``new_scale`` sets it instead."""
        if not self._enabled:
            return
        if new_scale is not None:
            self._scale = float(new_scale)
        elif any(state["inf"] for state in self._per_optimizer.values()):
            self._scale *= self._backoff_factor
            self._growth_tracker = 0
        else:
            self._growth_tracker += 1
            if self._growth_tracker == self._growth_interval:
                self._scale *= self._growth_factor
                self._growth_tracker = 0
        self._per_optimizer.clear()

    # ------------------------------------------------------------------ settings and state
    def is_enabled(self) -> bool:
        return self._enabled

    def get_scale(self) -> float:
        return self._scale if self._enabled else 1.0

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def state_dict(self) -> dict[str, Any]:
        """PyTorch's keys; empty when disabled, as PyTorch's."""
        if not self._enabled:
            return {}
        return {
            "scale": self.get_scale(),
            "growth_factor": self._growth_factor,
            "backoff_factor": self._backoff_factor,
            "growth_interval": self._growth_interval,
            "_growth_tracker": self._growth_tracker,
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError(
                "The source state dict is empty, possibly because it was saved "
                "from a disabled instance of GradScaler."
            )
        self._scale = float(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])


@contextmanager
def autocast(
    device_type: str = "cuda",
    dtype: Any = None,
    enabled: bool = True,
    cache_enabled: bool | None = None,
) -> Iterator[None]:
    """PyTorch's ``autocast``: with ``enabled=False`` a context that changes nothing (as in
    PyTorch); mixed precision itself is not there."""
    if enabled:
        raise UnsupportedError(
            "torch.autocast (automatic mixed precision) is not supported by tensorgrad: "
            "computations run in the tensors' own dtypes; pass enabled=False or drop it "
            "(see docs/porting.md)"
        )
    yield
