"""Alias: ``tensorgrad.cuda`` is :mod:`tensorgrad.compat.cuda` (PyTorch's ``torch.cuda``
answers), kept at PyTorch's path so that ``import tensorgrad.cuda`` ports as written. It only
re-exports: the module under this name is the compat module itself."""

import sys

from tensorgrad.compat import cuda

sys.modules[__name__] = cuda
