"""Where the compiled kernels of :mod:`tensorgrad._jit` are kept (standard library only)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """Where compiled kernels are kept: ``$TENSORGRAD_JIT_CACHE``, else ``tensorgrad/numba``
    under ``$XDG_CACHE_HOME`` (``~/.cache``)."""
    setting = os.environ.get("TENSORGRAD_JIT_CACHE")
    if setting:
        return Path(setting).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "tensorgrad" / "numba"
