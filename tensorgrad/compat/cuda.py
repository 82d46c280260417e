"""``tg.cuda``: PyTorch's ``torch.cuda`` answers for a machine without CUDA, so that ported
code which asks (``torch.cuda.is_available()``, ``torch.cuda.manual_seed_all(s)``) runs on.

tensorgrad runs on the CPU only: ``is_available()`` is False and ``device_count()`` 0;
seeding is accepted and does nothing, as PyTorch does without CUDA. What would need a GPU
raises :class:`~tensorgrad.UnsupportedError` naming it (see docs/porting.md).
"""

from __future__ import annotations

from typing import Any

from tensorgrad.array_backend import UnsupportedError
from tensorgrad.compat.unsupported import UnsupportedAttributeError


def is_available() -> bool:
    """False: tensorgrad has no CUDA backend."""
    return False


def device_count() -> int:
    """0: no CUDA devices."""
    return 0


def is_initialized() -> bool:
    return False


def manual_seed(seed: int) -> None:
    """Accepted and ignored, as PyTorch ignores it without CUDA (seed the CPU with
    ``tg.manual_seed``)."""


def manual_seed_all(seed: int) -> None:
    """Accepted and ignored, as :func:`manual_seed`."""


def empty_cache() -> None:
    """Nothing to free: a no-op, as in PyTorch without CUDA."""


def synchronize(device: Any = None) -> None:
    raise _unsupported("synchronize()")


def current_device() -> int:
    raise _unsupported("current_device()")


def get_device_name(device: Any = None) -> str:
    raise _unsupported("get_device_name()")


def set_device(device: Any) -> None:
    raise _unsupported("set_device()")


def _unsupported(what: str) -> UnsupportedError:
    return UnsupportedError(
        f"torch.cuda.{what}: tensorgrad runs on the CPU only and has no CUDA devices "
        "(see docs/porting.md); check torch.cuda.is_available() first"
    )


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """False: no CUDA device (and no bfloat16 arrays)."""
    return False


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    if name == "amp":  # torch.cuda.amp.GradScaler: disabled without CUDA, as PyTorch's
        from tensorgrad.compat import amp

        return amp
    raise UnsupportedAttributeError(
        f"torch.cuda.{name} is not available: tensorgrad runs on the CPU only (see docs/porting.md)"
    )
