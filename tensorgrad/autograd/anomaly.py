"""Anomaly detection: the first op whose forward or backward produces a NaN or an infinity
raises, naming the op, its input shapes, and the line of your code that created it.

    with tg.autograd.detect_anomaly():
        loss = model(x).sum()
        loss.backward()

Off by default, and then free: the engine checks one flag per op. On, every op's output and
every gradient are scanned, and each recorded op keeps the place it was created, so it is
for finding a bug, not for training. The scans themselves are the engine's
(``tensorgrad.core.anomaly``); this module holds the switches.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from tensorgrad.core import engine

__all__ = ["detect_anomaly", "is_anomaly_enabled", "set_detect_anomaly"]

F = TypeVar("F", bound=Callable[..., Any])


def is_anomaly_enabled() -> bool:
    return engine.state.anomaly


class set_detect_anomaly:
    """Turn anomaly detection on or off: as a function call, or a context manager that
    restores the previous setting on exit."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self._previous = engine.state.anomaly
        engine.state.anomaly = bool(mode) and check_nan

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        engine.state.anomaly = self._previous


class detect_anomaly:
    """A context manager (and decorator) that turns anomaly detection on inside it."""

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan

    def __enter__(self) -> None:
        self._previous = engine.state.anomaly
        engine.state.anomaly = self.check_nan

    def __exit__(self, *exc: object) -> None:
        engine.state.anomaly = self._previous

    def __call__(self, function: F) -> F:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with detect_anomaly(self.check_nan):
                return function(*args, **kwargs)

        return wrapper  # type: ignore[return-value]
