"""Anomaly detection: the first op whose forward or backward produces a NaN or an infinity
raises, naming the op, its input shapes, and the line of your code that created it.

    with tg.autograd.detect_anomaly():
        loss = model(x).sum()
        loss.backward()

Off by default, and then free: the engine checks one flag per op. On, every op's output and
every gradient are scanned, and each recorded op keeps the place it was created, so it is
for finding a bug, not for training.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from tensorgrad.core import engine

F = TypeVar("F", bound=Callable[..., Any])

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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


def creation_site() -> str:
    """``file:line in function`` of the innermost caller outside tensorgrad (the user's line
    that created the op), or the innermost frame if every frame is tensorgrad's own."""
    frame = sys._getframe(1)
    innermost = frame
    while frame is not None:
        filename = os.path.abspath(frame.f_code.co_filename)
        if not filename.startswith(_PACKAGE + os.sep):
            break
        frame = frame.f_back
    frame = frame or innermost
    return f"{frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}"


def _bad(value: Any) -> str:
    """'NaN', 'inf' or '' for an array (or a Tensor, or a number)."""
    array = value._data if isinstance(value, engine.Tensor) else value
    if not isinstance(array, np.ndarray) or array.dtype.kind != "f":
        return ""
    if np.isnan(array).any():
        return "NaN"
    if np.isinf(array).any():
        return "inf"
    return ""


def _shapes(values: Any) -> str:
    shapes = [
        str(tuple(np.shape(v._data if isinstance(v, engine.Tensor) else v)))
        for v in values
        if v is not None
    ]
    return ", ".join(shapes) or "none"


def check_forward(op: Any, out: Any, inputs: Any) -> None:
    """Raise if ``op``'s output holds a NaN or an infinity."""
    bad = _bad(out)
    if not bad:
        return
    arrays = [x._data if isinstance(x, engine.Tensor) else x for x in inputs]
    already = [i for i, a in enumerate(arrays) if _bad(a)]
    cause = (
        f"its input {already[0]} already held non-finite values (bad data, or an op that ran "
        "before anomaly detection was on)"
        if already
        else "from finite inputs"
    )
    raise RuntimeError(
        f"anomaly detected: the forward of {op.name} produced {bad}, {cause}; input shapes "
        f"{_shapes(arrays)}; created at {creation_site()}"
    )


def check_backward(node: Any, input_grads: Any) -> None:
    """Raise if a gradient ``node``'s backward returned holds a NaN or an infinity."""
    for i, grad in enumerate(input_grads):
        bad = "" if grad is None else _bad(grad)
        if bad:
            where = node._trace or "an unknown place (it was recorded before detection was on)"
            raise RuntimeError(
                f"anomaly detected: the backward of {node.name} returned {bad} in the gradient "
                f"of its input {i}; input shapes {_shapes(node.inputs)}; the op was created at "
                f"{where}"
            )
