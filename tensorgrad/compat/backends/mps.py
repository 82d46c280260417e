"""``torch.backends.mps`` for ported code: Apple's Metal backend is not available."""

from __future__ import annotations


def is_available() -> bool:
    """False: tensorgrad runs on the CPU only."""
    return False


def is_built() -> bool:
    """False: tensorgrad has no MPS backend."""
    return False
