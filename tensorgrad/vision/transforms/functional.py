"""The functions behind the transforms: ``to_tensor``, ``normalize`` and ``resize``, as
torchvision's.

Images come in as NumPy arrays, (H, W) or (H, W, C) (or as PIL images when Pillow is
installed), and go out as Tensors (C, H, W). The arithmetic is done on NumPy arrays with the
dtypes torchvision uses, so the values are the ones PyTorch computes, bit for bit.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from enum import Enum
from typing import Any

import numpy as np

__all__ = ["InterpolationMode", "normalize", "resize", "to_tensor"]


def _is_pil_image(obj: Any) -> bool:
    # No import of PIL here: an object can only be a PIL image if PIL is already loaded.
    pil = sys.modules.get("PIL.Image")
    return pil is not None and isinstance(obj, pil.Image)


def _pil_to_hwc(pic: Any) -> np.ndarray:
    """A PIL image as an (H, W, C) array, with torchvision's dtypes per mode."""
    little = sys.byteorder == "little"
    dtypes = {"I": np.int32, "I;16" if little else "I;16B": np.int16, "F": np.float32}
    array = np.array(pic, dtypes.get(pic.mode, np.uint8), copy=True)
    if pic.mode == "1":
        array = 255 * array
    return array.reshape(pic.size[1], pic.size[0], len(pic.getbands()))


def _to_chw(pic: Any) -> np.ndarray:
    """The image as a (C, H, W) array, uint8 scaled to float32 in [0, 1], others kept."""
    if _is_pil_image(pic):
        hwc = _pil_to_hwc(pic)
    elif isinstance(pic, np.ndarray):
        if pic.ndim not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
        hwc = pic[:, :, None] if pic.ndim == 2 else pic
    else:
        raise TypeError(f"pic should be PIL Image or ndarray. Got {type(pic)}")
    return scale_bytes(np.ascontiguousarray(hwc.transpose(2, 0, 1)))


def scale_bytes(array: np.ndarray) -> np.ndarray:
    """uint8 pixels to float32 in [0, 1] (divided by 255 in float32, as torchvision does);
    any other dtype as it is."""
    if array.dtype == np.uint8:
        return np.divide(array, 255, dtype=np.float32)
    return array


def to_tensor(pic: Any) -> Any:
    """An image, (H, W) or (H, W, C) array or PIL image, as a Tensor (C, H, W).

    uint8 images become float32 in [0, 1]; other dtypes are kept as they are.
    """
    from tensorgrad import Tensor

    return Tensor(_to_chw(pic))


def channel_values(
    dtype: np.dtype, shape: tuple[int, ...], mean: Sequence[float], std: Sequence[float]
) -> tuple[np.ndarray, np.ndarray]:
    """``mean`` and ``std`` as arrays of ``dtype`` shaped (C, 1, 1), after torchvision's checks
    of an image of that dtype and shape: a float image (..., C, H, W), no zero in ``std``."""
    from tensorgrad.data.collate import _unwrap

    if dtype.kind != "f":
        raise TypeError(f"Input tensor should be a float tensor. Got {dtype}.")
    if len(shape) < 3:
        raise ValueError(
            "Expected tensor to be a tensor image of size (..., C, H, W). Got tensor.size() = "
            f"{tuple(shape)}."
        )
    mean_array = np.asarray(_unwrap(mean), dtype=dtype)
    std_array = np.asarray(_unwrap(std), dtype=dtype)
    if not std_array.all():
        raise ValueError(
            f"std evaluated to zero after conversion to {dtype}, leading to division by zero."
        )
    if mean_array.ndim == 1:
        mean_array = mean_array.reshape(-1, 1, 1)
    if std_array.ndim == 1:
        std_array = std_array.reshape(-1, 1, 1)
    per_channel = {(shape[-3], 1, 1), (1, 1, 1)}
    if mean_array.shape not in per_channel or std_array.shape not in per_channel:
        # As torchvision's sub_ and div_ on the image: the result must keep the image's shape.
        try:
            fits = np.broadcast_shapes(mean_array.shape, std_array.shape, shape) == tuple(shape)
        except ValueError:
            fits = False
        if not fits:
            raise RuntimeError(
                f"normalize: mean (shape {mean_array.shape}) and std (shape {std_array.shape}) "
                f"do not fit an image of shape {tuple(shape)}: give one value per channel "
                f"({shape[-3]}) or one for all"
            )
    return mean_array, std_array


def normalize(
    tensor: Any, mean: Sequence[float], std: Sequence[float], inplace: bool = False
) -> Any:
    """Normalize a float image Tensor (..., C, H, W) per channel: ``(x - mean) / std``.

    With ``inplace``, the Tensor's values are replaced (with ``sub_`` and ``div_``);
    otherwise a new Tensor is returned. A Tensor that requires grad is normalized with
    recorded Tensor operations, so that gradients flow through it.
    """
    from tensorgrad import Tensor

    if not isinstance(tensor, Tensor):
        raise TypeError(f"img should be Tensor Image. Got {type(tensor)}")
    mean_array, std_array = channel_values(tensor.dtype, tensor.shape, mean, std)
    if inplace:
        return tensor.sub_(mean_array).div_(std_array)
    if tensor.requires_grad:
        return (tensor - Tensor(mean_array)) / Tensor(std_array)
    return Tensor((tensor._data - mean_array) / std_array)


class InterpolationMode(Enum):
    """torchvision's interpolation modes (``InterpolationMode.BILINEAR``, ...)."""

    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


#: Pillow's resampling filter for each mode (its integer constants, as torchvision maps them)
_PIL_FILTERS = {
    InterpolationMode.NEAREST: 0,
    InterpolationMode.NEAREST_EXACT: 0,
    InterpolationMode.BILINEAR: 2,
    InterpolationMode.BICUBIC: 3,
    InterpolationMode.BOX: 4,
    InterpolationMode.HAMMING: 5,
    InterpolationMode.LANCZOS: 1,
}

_PILLOW_MISSING = (
    "resize uses Pillow's resampling, which is not installed; install it with "
    "pip install 'tensorgrad[vision]' (or pip install pillow)"
)


def resized_size(height: int, width: int, size: Any, max_size: int | None = None) -> list[int]:
    """torchvision's output size: an int (or a 1-sequence) for the shorter edge, keeping the
    aspect ratio (the longer edge rounded down, at most ``max_size``); (h, w) for both."""
    if isinstance(size, int):
        size = [size]
    short, long = (width, height) if width <= height else (height, width)
    if len(size) == 1:
        new_short, new_long = size[0], int(size[0] * long / short)
        if max_size is not None:
            if max_size <= size[0]:
                raise ValueError(
                    f"max_size = {max_size} must be strictly greater than the requested size "
                    f"for the smaller edge size = {size}"
                )
            if new_long > max_size:
                new_short, new_long = int(max_size * new_short / new_long), max_size
        new_w, new_h = (new_short, new_long) if width <= height else (new_long, new_short)
        return [new_h, new_w]
    if max_size is not None:
        raise ValueError(
            "max_size should only be passed if size specifies the length of the smaller edge, "
            "i.e. size should be an int or a sequence of length 1 in torchscript mode."
        )
    return [int(size[0]), int(size[1])]


def resize(
    img: Any,
    size: Any,
    interpolation: InterpolationMode = InterpolationMode.BILINEAR,
    max_size: int | None = None,
    antialias: bool | None = True,
) -> Any:
    """``img`` (a uint8 array (H, W) or (H, W, C), or a PIL image) resized to ``size`` by
    Pillow, torchvision's own path for PIL images, so the pixels are torchvision's. An array
    comes back as an array, a PIL image as a PIL image. Tensors are not taken (torchvision
    resizes those with ``interpolate``, which tensorgrad lacks)."""
    if not isinstance(interpolation, InterpolationMode):
        raise TypeError("Argument interpolation should be a InterpolationMode")
    if isinstance(img, np.ndarray):
        if img.ndim not in (2, 3) or img.dtype != np.uint8:
            raise TypeError(
                f"resize: expected a uint8 image (H, W) or (H, W, C), got {img.dtype} of "
                f"shape {img.shape}"
            )
        height, width = img.shape[:2]
    elif _is_pil_image(img):
        width, height = img.size
    else:
        raise TypeError(
            f"resize: img should be a PIL Image or a uint8 ndarray, got {type(img).__name__} "
            "(tensorgrad does not resize Tensors)"
        )
    out_h, out_w = resized_size(height, width, size, max_size)
    if (out_h, out_w) == (height, width):
        return img
    try:
        from PIL import Image
    except ImportError as exc:
        raise ImportError(_PILLOW_MISSING) from exc
    filter_ = _PIL_FILTERS[interpolation]
    if not isinstance(img, np.ndarray):
        return img.resize((out_w, out_h), filter_)
    if img.ndim == 3 and img.shape[2] == 1:
        return np.asarray(Image.fromarray(img[:, :, 0]).resize((out_w, out_h), filter_))[:, :, None]
    return np.asarray(Image.fromarray(img).resize((out_w, out_h), filter_))
