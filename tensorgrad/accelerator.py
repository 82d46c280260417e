"""Alias: ``tensorgrad.accelerator`` is :mod:`tensorgrad.compat.accelerator` (PyTorch's
``torch.accelerator`` answers), kept at PyTorch's path so that ``import tensorgrad.accelerator``
ports as written. It only re-exports: the module under this name is the compat module itself."""

import sys

from tensorgrad.compat import accelerator

sys.modules[__name__] = accelerator
