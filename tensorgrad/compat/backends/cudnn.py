"""``torch.backends.cudnn`` for ported code: the switches are settable module attributes that
change nothing (tensorgrad has no cuDNN; its results on the CPU are deterministic anyway)."""

from __future__ import annotations

deterministic = False  #: settable; tensorgrad's CPU results are deterministic regardless
benchmark = False  #: settable; there is nothing to autotune
enabled = True  #: PyTorch's default; there is no cuDNN to enable
allow_tf32 = True  #: PyTorch's default; ignored


def is_available() -> bool:
    """False: no cuDNN."""
    return False


def version() -> None:
    """None, as PyTorch without cuDNN."""
    return None
