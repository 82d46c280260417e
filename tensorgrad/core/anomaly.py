"""The engine's side of anomaly detection: scanning an op's output and a node's gradients
for NaN and infinity, and remembering where a node was created.

The engine calls these only while ``engine.state.anomaly`` is on; the user's switches
(``detect_anomaly``, ``set_detect_anomaly``) are in ``tensorgrad.autograd.anomaly``. Tensors
are read by duck typing (their ``_data``), so this module needs neither the engine nor the
Tensor.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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


def _array(value: Any) -> Any:
    """A tensor's array, or ``value`` itself (an array, a number, None)."""
    return getattr(value, "_data", value)


def _bad(value: Any) -> str:
    """'NaN', 'inf' or '' for an array (or a Tensor, or a number)."""
    array = _array(value)
    if not isinstance(array, np.ndarray) or array.dtype.kind != "f":
        return ""
    if np.isnan(array).any():
        return "NaN"
    if np.isinf(array).any():
        return "inf"
    return ""


def _shapes(values: Any) -> str:
    shapes = [str(tuple(np.shape(_array(v)))) for v in values if v is not None]
    return ", ".join(shapes) or "none"


def check_forward(op: Any, out: Any, inputs: Any) -> None:
    """Raise if ``op``'s output holds a NaN or an infinity."""
    bad = _bad(out)
    if not bad:
        return
    arrays = [_array(x) for x in inputs]
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
            where = node.trace or "an unknown place (it was recorded before detection was on)"
            raise RuntimeError(
                f"anomaly detected: the backward of {node.name} returned {bad} in the gradient "
                f"of its input {i}; input shapes {_shapes(node.inputs)}; the op was created at "
                f"{where}"
            )
