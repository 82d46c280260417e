"""``tg.backends``: PyTorch's ``torch.backends`` switches, for ported code (nothing to do
with ``tensorgrad.array_backend``, the array module tensorgrad runs on).

This package only answers what ported programs ask of PyTorch's backends:
``torch.backends.cudnn.deterministic = True`` and ``benchmark = False`` are settable (and
change nothing: there is no cuDNN), ``torch.backends.mps.is_available()`` is False, and
``torch.backends.cuda.matmul.allow_tf32`` is settable. ``from torch.backends import cudnn``
ports to ``from tensorgrad.backends import cudnn``.
"""

from tensorgrad.compat.backends import cpu, cuda, cudnn, mps

__all__ = ["cpu", "cuda", "cudnn", "mps"]
