"""``F.interpolate`` (and ``F.upsample``), as PyTorch's, for the modes generators use:
``nearest``, ``nearest-exact``, ``linear``, ``bilinear`` and ``trilinear``.

Composed of existing ops, so no new VJP: each spatial dimension in turn is gathered with
``index_select`` at the source positions PyTorch computes (nearest), or as the two
neighbours of each source position weighted by their distance (the linear modes are
separable: bilinear is linear along H, then along W). The source positions follow PyTorch's
``area_pixel_compute_scale``: with ``scale_factor`` given (and ``recompute_scale_factor`` not
True) the scale is ``1 / scale_factor``, else ``in / out``; with ``align_corners=True`` the
corners of input and output line up.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from tensorgrad.array_backend import ShapeError
from tensorgrad.core.engine import as_tensor
from tensorgrad.core.tensor import Tensor

__all__ = ["interpolate", "upsample"]

_LINEAR = {"linear": 3, "bilinear": 4, "trilinear": 5}
_NEAREST = ("nearest", "nearest-exact")


def _per_dim(value: Any, spatial: int, what: str) -> list | None:
    if value is None:
        return None
    if isinstance(value, Sequence):
        if len(value) != spatial:
            raise ValueError(
                f"Input and {what} must have the same number of spatial dimensions, but got "
                f"input with spatial dimensions of {spatial} and {what} of {list(value)}. "
                f"Please provide input tensor in (N, C, d1, d2, ...,dK) format and {what} in "
                "(o1, o2, ...,oK) format."
            )
        return list(value)
    return [value] * spatial


def _scale(in_size: int, out_size: int, factor: float | None, align_corners: bool) -> float:
    if align_corners:
        return (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    if factor is not None and factor > 0:
        return 1.0 / factor
    return in_size / out_size


def _nearest(x: Tensor, dim: int, out_size: int, scale: float, exact: bool) -> Tensor:
    in_size = x.shape[dim]
    offset = np.float32(0.5 if exact else 0.0)
    positions = np.arange(out_size).astype(np.float32) + offset  # in float, as PyTorch's kernel
    source = np.floor(positions * np.float32(scale)).astype(np.int64)
    return x.index_select(dim, as_tensor(np.minimum(source, in_size - 1)))


def _linear(x: Tensor, dim: int, out_size: int, scale: float, align_corners: bool) -> Tensor:
    in_size = x.shape[dim]
    positions = np.arange(out_size, dtype=np.float64)
    source = positions * scale if align_corners else (positions + 0.5) * scale - 0.5
    source = np.maximum(source, 0.0)
    low = np.minimum(np.floor(source).astype(np.int64), in_size - 1)
    high = np.minimum(low + 1, in_size - 1)
    weight = (source - low).astype(x.dtype)
    shape = [1] * x.ndim
    shape[dim] = out_size
    weight = as_tensor(weight.reshape(shape))
    below = x.index_select(dim, as_tensor(low))
    above = x.index_select(dim, as_tensor(high))
    return below + (above - below) * weight


def interpolate(
    input: Tensor,
    size: int | Sequence[int] | None = None,
    scale_factor: float | Sequence[float] | None = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
    antialias: bool = False,
) -> Tensor:
    """PyTorch's ``F.interpolate`` for (N, C, d1, ..., dK) input: ``size`` or
    ``scale_factor`` (one of them), ``mode`` one of ``nearest``, ``nearest-exact``,
    ``linear`` (3-D), ``bilinear`` (4-D), ``trilinear`` (5-D); ``align_corners`` for the
    linear modes. ``bicubic``, ``area`` and ``antialias`` raise ``NotImplementedError``."""
    input = as_tensor(input)
    if mode in _NEAREST:
        if align_corners is not None:
            raise ValueError(
                "align_corners option can only be set with the interpolating modes: "
                "linear | bilinear | bicubic | trilinear"
            )
    elif mode in _LINEAR:
        if input.ndim != _LINEAR[mode]:
            raise NotImplementedError(
                f"Got {input.ndim}D input, but {mode} mode needs {_LINEAR[mode]}D input"
            )
        align_corners = bool(align_corners)
    elif mode in ("bicubic", "area"):
        raise NotImplementedError(f"interpolate: mode {mode!r} is not supported by tensorgrad")
    else:
        raise NotImplementedError(
            f"interpolate: mode {mode!r} is not one of PyTorch's (nearest, nearest-exact, "
            "linear, bilinear, bicubic, trilinear, area)"
        )
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported by tensorgrad")
    spatial = input.ndim - 2
    if spatial < 1:  # PyTorch's NotImplementedError ("Only 3D, 4D and 5D input Tensors")
        raise NotImplementedError(
            f"interpolate: expected an input (N, C, d1, ...) with a spatial dimension, got "
            f"shape {tuple(input.shape)}"
        )
    if (size is None) == (scale_factor is None):
        raise ValueError("only one of size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if 0 in input.shape[1:]:  # only the batch may be empty (PyTorch's kernels)
        raise ShapeError(
            f"interpolate: Non-empty {input.ndim}D data tensor expected but got a tensor with "
            f"sizes {list(input.shape)}"
        )
    in_sizes = list(input.shape[2:])
    sizes = _per_dim(size, spatial, "output size")
    factors = _per_dim(scale_factor, spatial, "scale_factor")
    if sizes is None:
        sizes = [math.floor(n * float(f)) for n, f in zip(in_sizes, factors, strict=True)]
        if recompute_scale_factor:
            factors = None
    if factors is None:
        factors = [None] * spatial
    out = input
    for axis, (n_in, n_out, factor) in enumerate(zip(in_sizes, sizes, factors, strict=True)):
        if n_out <= 0:
            raise ShapeError(
                f"interpolate: the output size {sizes} of input {tuple(input.shape)} must be "
                "greater than 0"
            )
        dim = axis + 2
        scale = _scale(n_in, n_out, factor, bool(align_corners))
        if mode in _NEAREST:
            if n_in != n_out or mode == "nearest-exact":  # equal sizes: PyTorch's identity
                out = _nearest(out, dim, n_out, scale, mode == "nearest-exact")
        else:
            out = _linear(out, dim, n_out, scale, bool(align_corners))
    return out


def upsample(
    input: Tensor,
    size: int | Sequence[int] | None = None,
    scale_factor: float | Sequence[float] | None = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
) -> Tensor:
    """PyTorch's deprecated ``F.upsample``: ``interpolate``."""
    return interpolate(input, size, scale_factor, mode, align_corners)
