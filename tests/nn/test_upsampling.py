"""``F.interpolate``, ``nn.Upsample`` and its two fixed forms: values against NumPy,
gradients by the directional check, PyTorch's errors; against PyTorch where installed."""

from __future__ import annotations

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import nn
from tensorgrad.nn import functional as F


def test_nearest_doubling_repeats_and_linear_keeps_the_corners(check_gradient):
    x = tg.tensor(np.arange(12.0).reshape(1, 1, 3, 4), requires_grad=True)
    up = F.interpolate(x, scale_factor=2)
    np.testing.assert_array_equal(up.numpy(), x.numpy().repeat(2, 2).repeat(2, 3))
    assert nn.Upsample(scale_factor=2)(x).shape == (1, 1, 6, 8)
    corners = nn.UpsamplingBilinear2d(size=(5, 7))(x).detach().numpy()[0, 0]
    np.testing.assert_allclose(corners[[0, 0, -1, -1], [0, -1, 0, -1]], [0.0, 3.0, 8.0, 11.0])
    np.testing.assert_allclose(corners[:, 0], [0.0, 2.0, 4.0, 6.0, 8.0])  # align_corners=True
    # align_corners=False: the half-pixel rule; one row of 2 values doubled
    row = F.interpolate(tg.tensor([[[0.0, 4.0]]]), scale_factor=2, mode="linear")
    np.testing.assert_allclose(row.numpy(), [[[0.0, 1.0, 3.0, 4.0]]])
    same = F.interpolate(x, size=(3, 4))
    np.testing.assert_array_equal(same.detach().numpy(), x.numpy())
    x64 = tg.tensor(np.random.default_rng(0).standard_normal((2, 2, 3, 4)), requires_grad=True)
    for mode, options in (
        ("nearest", {"size": (5, 3)}),
        ("nearest-exact", {"scale_factor": 1.5}),
        ("bilinear", {"size": (4, 7)}),
        ("bilinear", {"scale_factor": 2, "align_corners": True}),
    ):
        check_gradient(lambda m=mode, o=options: F.interpolate(x64, mode=m, **o), [x64])


def test_interpolate_errors():
    x = tg.ones(1, 1, 4, 4)
    with pytest.raises(ValueError, match="only one of size or scale_factor"):
        F.interpolate(x)
    with pytest.raises(ValueError, match="only one of size or scale_factor"):
        F.interpolate(x, size=2, scale_factor=2)
    with pytest.raises(ValueError, match="align_corners option can only be set"):
        F.interpolate(x, scale_factor=2, align_corners=True)
    with pytest.raises(NotImplementedError, match="Got 4D input, but linear mode needs 3D"):
        F.interpolate(x, scale_factor=2, mode="linear")
    with pytest.raises(NotImplementedError, match="'bicubic' is not supported"):
        F.interpolate(x, scale_factor=2, mode="bicubic")
    with pytest.raises(ValueError, match="same number of spatial dimensions"):
        F.interpolate(x, size=(2, 2, 2))
    with pytest.raises(ValueError, match="recompute_scale_factor is not meaningful"):
        F.interpolate(x, size=2, recompute_scale_factor=True)
    assert repr(nn.Upsample(scale_factor=2)) == "Upsample(scale_factor=2.0, mode='nearest')"


CASES = [
    ((2, 3, 5), {"scale_factor": 2}),
    ((2, 3, 5), {"size": 7}),
    ((2, 3, 5), {"size": 3}),
    ((1, 2, 4, 6), {"scale_factor": 2}),
    ((1, 2, 4, 6), {"size": (7, 5)}),
    ((1, 2, 4, 6), {"scale_factor": (1.5, 0.7)}),
    ((1, 1, 3, 3, 4), {"scale_factor": 2}),
    ((1, 2, 5, 5), {"scale_factor": 1.0}),
]
MODES = {"nearest": None, "nearest-exact": None, "linear": 3, "bilinear": 4, "trilinear": 5}


@pytest.mark.parametrize("shape, options", CASES)
def test_interpolate_agrees_with_pytorch(shape, options):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    for mode, ndim in MODES.items():
        if ndim not in (None, len(shape)):
            continue
        for corners in [None] if ndim is None else [False, True]:
            for recompute in [None, True] if "scale_factor" in options else [None]:
                extra = dict(mode=mode, align_corners=corners, recompute_scale_factor=recompute)
                x = rng.standard_normal(shape)
                theirs = torch.tensor(x, requires_grad=True)
                ours = tg.tensor(x, requires_grad=True)
                a = torch.nn.functional.interpolate(theirs, **options, **extra)
                b = F.interpolate(ours, **options, **extra)
                np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), atol=1e-12)
                w = rng.standard_normal(tuple(a.shape))
                (a * torch.tensor(w)).sum().backward()
                (b * tg.tensor(w)).sum().backward()
                np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), atol=1e-12)
