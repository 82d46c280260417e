"""Whether operations are recorded for differentiation: ``no_grad`` and ``enable_grad``."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


class _State:
    enabled = True


state = _State()


def is_grad_enabled() -> bool:
    """True when new operations on tensors that require grad are recorded."""
    return state.enabled


class _GradMode:
    """A context manager that is also a decorator, as PyTorch's."""

    enabled: bool

    def __enter__(self) -> None:
        self._previous = state.enabled
        state.enabled = self.enabled

    def __exit__(self, *exc: object) -> None:
        state.enabled = self._previous

    def __call__(self, function: F) -> F:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with type(self)():
                return function(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


class no_grad(_GradMode):
    """Do not record operations: for inference and for updating parameters in place."""

    enabled = False


class enable_grad(_GradMode):
    """Record operations again, for example inside a ``no_grad`` block."""

    enabled = True


class set_grad_enabled(_GradMode):
    """Turn recording on or off: ``with set_grad_enabled(training): ...``."""

    def __init__(self, mode: bool) -> None:
        self.enabled = bool(mode)
        self._previous = state.enabled
        state.enabled = self.enabled

    def __enter__(self) -> None:
        pass

    def __call__(self, function: F) -> F:
        raise TypeError("set_grad_enabled is used as a function or a context manager")


class inference_mode(_GradMode):
    """PyTorch's ``inference_mode``: here the same as ``no_grad`` (``mode=False`` records)."""

    def __init__(self, mode: bool = True) -> None:
        self.enabled = not mode

    def __call__(self, function: F) -> F:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with inference_mode(not self.enabled):
                return function(*args, **kwargs)

        return wrapper  # type: ignore[return-value]
