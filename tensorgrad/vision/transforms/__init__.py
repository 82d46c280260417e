"""Image transforms shaped like torchvision's: ``ToTensor``, ``Normalize``, ``Compose``,
``Lambda``, ``Resize`` (with Pillow).

A transform is a callable taking an image and returning it transformed. Datasets hand
transforms their images as uint8 NumPy arrays (H, W), where torchvision hands PIL images;
``ToTensor`` turns either into a float32 Tensor (C, H, W) in [0, 1].
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tensorgrad.vision.transforms import functional
from tensorgrad.vision.transforms.functional import InterpolationMode, channel_values, scale_bytes

__all__ = [
    "Compose",
    "InterpolationMode",
    "Lambda",
    "Normalize",
    "Resize",
    "ToTensor",
    "functional",
]


def __getattr__(name: str) -> Any:
    message = f"module {__name__!r} has no attribute {name!r}"
    if not name.startswith("__"):
        message += (
            "; of torchvision's transforms, tensorgrad has ToTensor, Normalize, Compose, "
            "Lambda and Resize (see docs/porting.md)"
        )
    raise AttributeError(message)


class Compose:
    """Apply ``transforms`` one after the other."""

    def __init__(self, transforms: Sequence[Callable[[Any], Any]]) -> None:
        self.transforms = transforms

    def __call__(self, img: Any) -> Any:
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__}("]
        lines += [f"    {t}" for t in self.transforms]
        return "\n".join(lines) + "\n)"


class ToTensor:
    """An image, (H, W) or (H, W, C) NumPy array or PIL image, as a Tensor (C, H, W):
    uint8 pixels become float32 in [0, 1]; other dtypes are kept."""

    def __call__(self, pic: Any) -> Any:
        return functional.to_tensor(pic)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class Normalize:
    """``(x - mean) / std`` for each channel of a float image Tensor (..., C, H, W)."""

    def __init__(self, mean: Sequence[float], std: Sequence[float], inplace: bool = False) -> None:
        self.mean = mean
        self.std = std
        self.inplace = inplace

    def __call__(self, tensor: Any) -> Any:
        return functional.normalize(tensor, self.mean, self.std, self.inplace)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(mean={self.mean}, std={self.std})"


class Lambda:
    """A user-defined function as a transform."""

    def __init__(self, lambd: Callable[[Any], Any]) -> None:
        if not callable(lambd):
            raise TypeError(f"Argument lambd should be callable, got {type(lambd).__name__!r}")
        self.lambd = lambd

    def __call__(self, img: Any) -> Any:
        return self.lambd(img)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class Resize:
    """torchvision's ``Resize(size, interpolation=InterpolationMode.BILINEAR, max_size=None,
    antialias=True)``: an int ``size`` matches the shorter edge, keeping the aspect ratio;
    (h, w) sets both. Datasets' uint8 arrays and PIL images are resized by Pillow (the
    ``vision`` extra), as torchvision resizes PIL images (``functional.resize``)."""

    def __init__(
        self,
        size: int | Sequence[int],
        interpolation: InterpolationMode = InterpolationMode.BILINEAR,
        max_size: int | None = None,
        antialias: bool | None = True,
    ) -> None:
        if not isinstance(size, (int, Sequence)):
            raise TypeError(f"Size should be int or sequence. Got {type(size)}")
        if isinstance(size, Sequence) and len(size) not in (1, 2):
            raise ValueError("If size is a sequence, it should have 1 or 2 values")
        if not isinstance(interpolation, InterpolationMode):
            raise TypeError("Argument interpolation should be a InterpolationMode")
        self.size, self.interpolation = size, interpolation
        self.max_size, self.antialias = max_size, antialias

    def __call__(self, img: Any) -> Any:
        return functional.resize(img, self.size, self.interpolation, self.max_size, self.antialias)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(size={self.size}, interpolation={self.interpolation.value}, "
            f"max_size={self.max_size}, antialias={self.antialias})"
        )


def _steps(transform: Any) -> list[Any] | None:
    """The transforms in ``transform``, with Composes flattened (None: no transform)."""
    if transform is None:
        return []
    if type(transform) is Compose:
        steps: list[Any] = []
        for t in transform.transforms:
            inner = _steps(t)
            if inner is None or t is None:
                return None
            steps += inner
        return steps
    return [transform]


def batched(transform: Any) -> Callable[[np.ndarray], np.ndarray] | None:
    """``transform`` applied to a whole batch of images at once, or None if it cannot be.

    Recognises what MNIST programs use: no transform, or ``ToTensor()`` followed by any
    number of ``Normalize``. The function returned takes images stacked along a first axis,
    (N, H, W) or (N, H, W, C), and gives the same array, bit for bit, as applying
    ``transform`` to each image and stacking the results; anything else (a Lambda, a
    subclass, PIL images) gives None, and the images are transformed one by one.
    """
    steps = _steps(transform)
    if steps is None:
        return None
    if not steps:
        return lambda images: images
    if type(steps[0]) is not ToTensor or any(type(s) is not Normalize for s in steps[1:]):
        return None
    normalizations = steps[1:]

    def apply(images: np.ndarray) -> np.ndarray:
        if images.ndim not in (3, 4):
            raise ValueError(f"pic should be 2/3 dimensional. Got {images.ndim - 1} dimensions.")
        nhwc = images[:, :, :, None] if images.ndim == 3 else images
        out = scale_bytes(np.ascontiguousarray(nhwc.transpose(0, 3, 1, 2)))
        if out is images or np.shares_memory(out, images):
            out = out.copy()  # normalized in place below: never the dataset's own array
        for step in normalizations:
            mean, std = channel_values(out.dtype, out.shape[1:], step.mean, step.std)
            np.subtract(out, mean, out=out)
            np.divide(out, std, out=out)
        return out

    return apply
