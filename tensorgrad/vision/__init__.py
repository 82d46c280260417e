"""Datasets, transforms and image utilities shaped like torchvision's.

A PyTorch program's ``torchvision`` becomes ``tensorgrad.vision``: ``datasets.MNIST`` and
``datasets.FashionMNIST``, ``transforms.ToTensor`` / ``Normalize`` / ``Compose`` / ``Lambda``,
and ``utils.make_grid`` / ``utils.save_image``. One difference: where torchvision hands a
transform a PIL image, tensorgrad hands it the image as a uint8 NumPy array, (H, W), so that
Pillow is needed only to write image files.

The submodules are imported on first use, so ``import tensorgrad.vision`` costs nothing.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["datasets", "transforms", "utils"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return importlib.import_module(f"{__name__}.{name}")
    message = f"module {__name__!r} has no attribute {name!r}"
    if not name.startswith("__"):
        message += (
            f"; of torchvision, tensorgrad.vision has {', '.join(__all__)} (see docs/porting.md)"
        )
    raise AttributeError(message)


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
