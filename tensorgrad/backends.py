"""Alias: ``tensorgrad.backends`` is :mod:`tensorgrad.compat.backends` (PyTorch's
``torch.backends`` switches), kept at PyTorch's path so that ``import tensorgrad.backends.cudnn``
and ``from tensorgrad.backends import cudnn`` port as written. It only re-exports: the module
under this name, and each of its submodules, is the compat one itself, so a switch set through
either path is the same switch."""

import sys

from tensorgrad.compat import backends

for _name in backends.__all__:
    sys.modules[f"{__name__}.{_name}"] = getattr(backends, _name)
sys.modules[__name__] = backends
