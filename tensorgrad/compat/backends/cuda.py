"""``torch.backends.cuda`` for ported code: ``matmul.allow_tf32`` and friends are settable and
ignored (there is no CUDA)."""

from __future__ import annotations

from types import SimpleNamespace


def is_built() -> bool:
    """False: tensorgrad has no CUDA backend."""
    return False


#: ``torch.backends.cuda.matmul.allow_tf32 = True``: settable, ignored
matmul = SimpleNamespace(allow_tf32=False, allow_fp16_reduced_precision_reduction=True)
