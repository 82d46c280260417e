"""``make_grid`` and ``save_image``, as torchvision's ``utils``.

``make_grid`` lays a batch of images out in a grid (a Tensor); ``save_image`` writes one as
an image file through Pillow, an optional dependency (``pip install 'tensorgrad[vision]'``),
imported only when a file is written.
"""

from __future__ import annotations

import math
import os
from typing import IO, Any

import numpy as np

__all__ = ["make_grid", "save_image"]

_PILLOW_MISSING = (
    "save_image writes image files with Pillow, which is not installed; install it with "
    "pip install 'tensorgrad[vision]' (or pip install pillow)"
)


def _images_array(tensor: Any) -> np.ndarray:
    from tensorgrad import Tensor

    if isinstance(tensor, Tensor):
        return tensor._data
    if isinstance(tensor, list) and all(isinstance(t, Tensor) for t in tensor):
        if not tensor:
            raise ValueError("make_grid: the list of images is empty")
        from tensorgrad.data.collate import _stack_arrays

        return _stack_arrays([t._data for t in tensor], "")
    raise TypeError(f"tensor or list of tensors expected, got {type(tensor)}")


def _normalize_range(images: np.ndarray, low: float, high: float) -> None:
    """Clamp to [low, high] and map that range onto [0, 1], in place."""
    np.clip(images, low, high, out=images)
    images -= low
    images /= max(high - low, 1e-5)


def make_grid(
    tensor: Any,
    nrow: int = 8,
    padding: int = 2,
    normalize: bool = False,
    value_range: tuple[float, float] | None = None,
    scale_each: bool = False,
    pad_value: float = 0.0,
) -> Any:
    """A grid of images: a Tensor (C, H', W') with ``nrow`` images a row.

    ``tensor`` is a batch (B, C, H, W), one image (C, H, W) or (H, W), or a list of images of
    one shape. Single-channel images are repeated into three channels; images are separated
    and framed by ``padding`` pixels of ``pad_value``. With ``normalize``, values are
    clamped to ``value_range`` (default: the images' min and max; per image with
    ``scale_each``) and scaled to [0, 1]. A batch of one image comes back as that image.
    """
    images = _images_array(tensor)
    for name, value in (("nrow", nrow), ("padding", padding)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            raise TypeError(f"make_grid: {name} must be an int, got {value!r}")
    if nrow <= 0:
        raise ValueError(f"make_grid: nrow must be positive, got {nrow}")
    if padding < 0:
        raise ValueError(f"make_grid: padding must be non-negative, got {padding}")
    if images.ndim == 2:  # one image, H x W
        images = images[None]
    if images.ndim == 3:  # one image, C x H x W
        if images.shape[0] == 1:
            images = np.concatenate([images] * 3, axis=0)
        images = images[None]
    if images.ndim != 4:
        raise ValueError(
            "make_grid: expected images shaped (B, C, H, W), (C, H, W) or (H, W), got shape "
            f"{images.shape}"
        )
    if images.shape[0] == 0:
        raise ValueError(f"make_grid: no images to lay out (shape {images.shape})")
    if images.shape[1] == 1:  # single-channel images
        images = np.concatenate([images] * 3, axis=1)

    if normalize is True:
        images = images.copy()  # never change the caller's images
        if value_range is not None and not isinstance(value_range, tuple):
            raise TypeError(
                "value_range has to be a tuple (min, max) if specified. min and max are numbers"
            )

        def norm(part: np.ndarray) -> None:
            if value_range is not None:
                _normalize_range(part, value_range[0], value_range[1])
            else:
                _normalize_range(part, float(part.min()), float(part.max()))

        if scale_each is True:
            for image in images:
                norm(image)
        else:
            norm(images)

    from tensorgrad import Tensor

    if images.shape[0] == 1:
        return Tensor(images[0])
    count = images.shape[0]
    columns = min(nrow, count)
    rows = math.ceil(count / columns)
    height, width = images.shape[2] + padding, images.shape[3] + padding
    grid = np.full(
        (images.shape[1], height * rows + padding, width * columns + padding),
        pad_value,
        dtype=images.dtype,
    )
    for k in range(count):
        y, x = divmod(k, columns)
        top, left = y * height + padding, x * width + padding
        grid[:, top : top + height - padding, left : left + width - padding] = images[k]
    return Tensor(grid)


def save_image(
    tensor: Any,
    fp: str | os.PathLike[str] | IO[bytes],
    format: str | None = None,
    **kwargs: Any,
) -> None:
    """Write ``tensor`` (an image, a batch, or a list: laid out by :func:`make_grid` with
    ``kwargs``) to ``fp``, a path or a binary file. The format is ``format`` or, for a
    path, its extension (``.png``). Values in [0, 1] map to 0..255, rounded."""
    grid = make_grid(tensor, **kwargs)._data
    if grid.dtype.kind != "f":
        raise TypeError(
            f"save_image: expected a float image with values in [0, 1], got {grid.dtype}"
        )
    try:
        from PIL import Image
    except ImportError as exc:
        raise ImportError(_PILLOW_MISSING) from exc
    # As torchvision: x * 255 + 0.5, clamped to [0, 255], truncated: rounds to nearest.
    pixels = np.clip(grid * 255 + 0.5, 0, 255).transpose(1, 2, 0).astype(np.uint8)
    Image.fromarray(pixels).save(fp, format=format)
