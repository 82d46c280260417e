"""Utilities named as PyTorch's ``torch.utils``: ``tensorgrad.utils.tensorboard`` (the
``SummaryWriter``; needs ``pip install 'tensorgrad[tensorboard]'``). Nothing here is imported
by ``import tensorgrad``; each submodule loads on first use."""

from __future__ import annotations

import importlib
from typing import Any

_SUBMODULES = ("tensorboard",)


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        module = importlib.import_module(f"{__name__}.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = list(_SUBMODULES)
