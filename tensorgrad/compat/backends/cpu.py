"""``torch.backends.cpu`` for ported code."""

from __future__ import annotations


def get_cpu_capability() -> str:
    """The SIMD level PyTorch would report; tensorgrad leaves that to NumPy's BLAS."""
    return "DEFAULT"
