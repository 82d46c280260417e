"""``tg.accelerator``: PyTorch's ``torch.accelerator`` answers for a CPU-only library, so that
``use_accel = torch.accelerator.is_available()`` picks the CPU, as in PyTorch's examples."""

from __future__ import annotations

from typing import Any


def is_available() -> bool:
    """False: tensorgrad runs on the CPU only."""
    return False


def current_accelerator(check_available: bool = False) -> Any:
    """None: there is no accelerator."""
    return None


def device_count() -> int:
    """0: no accelerator devices."""
    return 0
