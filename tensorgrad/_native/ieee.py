"""NumPy's floating-point warnings off while an op runs, for an eighth of ``np.errstate``'s cost.

tensorgrad's arithmetic is IEEE's, as PyTorch's: ``1e30 * 1e30`` in float32 is ``inf``,
``inf - inf`` is NaN, and no op warns of it (PyTorch never does; anomaly mode is the way to
find where a NaN appears). The engine runs every op's forward, its JVP and the backward
sweep with NumPy's floating-point error handling set to "ignore".
``with np.errstate(all="ignore")`` costs about 2.5 µs a use (it builds its state object each
time), most of a small ``tg.add``; setting NumPy's own context variable to a state built once
costs about 0.3 µs. That
variable is NumPy's private ``_extobj_contextvar`` (NumPy 2); where it is missing, or with
``TENSORGRAD_FAST_ERRSTATE=0``, :func:`enter` and :func:`leave` fall back to
``np.errstate``.
"""

from __future__ import annotations

import functools
import os
from typing import Any

import numpy as np

ENABLED = os.environ.get("TENSORGRAD_FAST_ERRSTATE", "1") != "0"

try:  # NumPy 2's error state: one context variable holding a state object
    from numpy._core.umath import _extobj_contextvar, _make_extobj
except ImportError:  # pragma: no cover - another NumPy
    _extobj_contextvar = _make_extobj = None


def _fast() -> bool:
    return ENABLED and _extobj_contextvar is not None


if _fast():
    #: set NumPy's floating-point errors to "ignore"; returns what :func:`leave` takes (C
    #: calls, no Python frame: about 0.3 µs the pair)
    enter = functools.partial(_extobj_contextvar.set, _make_extobj(all="ignore"))
    #: restore the error handling :func:`enter` replaced
    leave = _extobj_contextvar.reset

else:

    def enter() -> Any:
        """Set NumPy's floating-point errors to "ignore"; return what :func:`leave` takes."""
        state = np.errstate(all="ignore")
        state.__enter__()
        return state

    def leave(token: Any) -> None:
        """Restore the error handling :func:`enter` replaced."""
        token.__exit__(None, None, None)
