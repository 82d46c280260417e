"""transforms: ToTensor, Normalize, Compose, Lambda, Resize, and the batched form of a pipeline."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.vision import transforms
from tensorgrad.vision.transforms import functional as F

RNG = np.random.default_rng(0)
GRAY = RNG.integers(0, 256, size=(5, 4), dtype=np.uint8)
RGB = RNG.integers(0, 256, size=(5, 4, 3), dtype=np.uint8)


# ToTensor


def test_to_tensor_bytes() -> None:
    out = transforms.ToTensor()(GRAY)
    assert isinstance(out, tg.Tensor) and out.shape == (1, 5, 4) and out.dtype == np.float32
    np.testing.assert_array_equal(out.numpy()[0], GRAY.astype(np.float32) / np.float32(255))
    assert float(out.numpy().max()) <= 1.0
    rgb = transforms.ToTensor()(RGB)
    assert rgb.shape == (3, 5, 4)
    np.testing.assert_array_equal(rgb.numpy()[2], RGB[:, :, 2] / np.float32(255))
    assert rgb.numpy().flags.c_contiguous


def test_to_tensor_keeps_other_dtypes() -> None:
    floats = RNG.random((3, 2))
    out = F.to_tensor(floats)
    assert out.dtype == np.float64 and out.shape == (1, 3, 2)
    np.testing.assert_array_equal(out.numpy()[0], floats)
    assert F.to_tensor(np.arange(6, dtype=np.int32).reshape(2, 3)).dtype == np.int32


def test_to_tensor_errors() -> None:
    with pytest.raises(ValueError, match="pic should be 2/3 dimensional. Got 1 dimensions."):
        transforms.ToTensor()(np.zeros(3, np.uint8))
    with pytest.raises(TypeError, match="pic should be PIL Image or ndarray. Got <class 'list'>"):
        transforms.ToTensor()([[1, 2]])
    with pytest.raises(TypeError, match="pic should be PIL Image or ndarray"):
        transforms.ToTensor()(tg.zeros(2, 2))


def test_to_tensor_pil_images() -> None:
    image_module = pytest.importorskip("PIL.Image")
    gray = F.to_tensor(image_module.fromarray(GRAY, mode="L"))
    np.testing.assert_array_equal(gray.numpy(), F.to_tensor(GRAY).numpy())
    rgb = F.to_tensor(image_module.fromarray(RGB, mode="RGB"))
    np.testing.assert_array_equal(rgb.numpy(), F.to_tensor(RGB).numpy())
    bits = F.to_tensor(image_module.fromarray(GRAY > 127))  # mode "1": 0 or 1, times 255
    np.testing.assert_array_equal(bits.numpy()[0], (GRAY > 127).astype(np.float32))
    floats = np.linspace(-1, 1, 20, dtype=np.float32).reshape(5, 4)
    f_image = F.to_tensor(image_module.fromarray(floats, mode="F"))
    assert f_image.dtype == np.float32
    np.testing.assert_array_equal(f_image.numpy()[0], floats)


def test_to_tensor_against_pytorch() -> None:
    torch = pytest.importorskip("torch")
    # torchvision: torch.from_numpy(pic.transpose(2, 0, 1)).float().div(255)
    expected = torch.from_numpy(RGB.transpose(2, 0, 1).copy()).to(torch.float32).div(255)
    np.testing.assert_array_equal(F.to_tensor(RGB).numpy(), expected.numpy())


# Normalize


def test_normalize_values() -> None:
    image = F.to_tensor(RGB)
    mean, std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
    out = transforms.Normalize(mean, std)(image)
    m = np.asarray(mean, np.float32).reshape(3, 1, 1)
    s = np.asarray(std, np.float32).reshape(3, 1, 1)
    np.testing.assert_array_equal(out.numpy(), (image.numpy() - m) / s)
    assert out.dtype == np.float32 and out is not image
    one = transforms.Normalize((0.5,), (0.5,))(image)  # one value for all channels
    np.testing.assert_array_equal(one.numpy(), (image.numpy() - np.float32(0.5)) / np.float32(0.5))
    batch = tg.tensor(np.stack([image.numpy(), image.numpy()]))
    np.testing.assert_array_equal(transforms.Normalize(mean, std)(batch).numpy()[1], out.numpy())


def test_normalize_in_place() -> None:
    image = F.to_tensor(GRAY)
    before = image.numpy().copy()
    out = transforms.Normalize((0.1307,), (0.3081,), inplace=True)(image)
    assert out is image
    np.testing.assert_array_equal(image.numpy(), (before - np.float32(0.1307)) / np.float32(0.3081))


def test_normalize_against_pytorch() -> None:
    torch = pytest.importorskip("torch")
    image = F.to_tensor(RGB)
    mean, std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
    t = torch.from_numpy(image.numpy().copy())
    # torchvision's F.normalize: tensor.sub_(mean[:, None, None]).div_(std[:, None, None])
    expected = t.sub_(torch.tensor(mean).view(-1, 1, 1)).div_(torch.tensor(std).view(-1, 1, 1))
    np.testing.assert_array_equal(F.normalize(image, mean, std).numpy(), expected.numpy())


def test_normalize_is_differentiable() -> None:
    image = tg.tensor(np.ones((1, 2, 2), np.float32), requires_grad=True)
    out = F.normalize(image, (0.5,), (0.25,))
    out.sum().backward()
    np.testing.assert_allclose(image.grad.numpy(), np.full((1, 2, 2), 4.0))
    with pytest.raises(
        RuntimeError,
        match="a leaf Tensor that requires grad is being used in an in-place operation",
    ):
        F.normalize(image, (0.5,), (0.25,), inplace=True)


def test_normalize_errors() -> None:
    image = F.to_tensor(GRAY)
    with pytest.raises(TypeError, match="img should be Tensor Image. Got <class 'numpy.ndarray'>"):
        F.normalize(GRAY, (0.5,), (0.5,))
    with pytest.raises(TypeError, match="Input tensor should be a float tensor. Got uint8."):
        F.normalize(tg.tensor(GRAY[None]), (0.5,), (0.5,))
    with pytest.raises(
        ValueError, match=r"size \(\.\.\., C, H, W\). Got tensor.size\(\) = \(5, 4\)"
    ):
        F.normalize(tg.tensor(GRAY.astype(np.float32)), (0.5,), (0.5,))
    with pytest.raises(ValueError, match="std evaluated to zero after conversion to float32"):
        F.normalize(image, (0.5,), (0.0,))
    with pytest.raises(RuntimeError, match=r"mean \(shape \(3, 1, 1\)\) and std .* do not fit"):
        F.normalize(image, (0.1, 0.2, 0.3), (1, 1, 1))
    before = image.numpy().copy()
    with pytest.raises(ValueError):
        F.normalize(image, (0.5,), (0.0,), inplace=True)
    np.testing.assert_array_equal(image.numpy(), before)  # nothing changed by a refused call


# Compose, Lambda


def test_compose_and_lambda() -> None:
    pipeline = transforms.Compose(
        [transforms.ToTensor(), transforms.Lambda(lambda t: t * 2), transforms.Normalize([1], [2])]
    )
    out = pipeline(GRAY)
    np.testing.assert_allclose(out.numpy()[0], (GRAY / np.float32(255) * 2 - 1) / 2, rtol=1e-6)
    assert repr(pipeline) == (
        "Compose(\n    ToTensor()\n    Lambda()\n    Normalize(mean=[1], std=[2])\n)"
    )
    with pytest.raises(TypeError, match="Argument lambd should be callable, got 'int'"):
        transforms.Lambda(3)


# The batched form


TO_TENSOR_NORMALIZE = transforms.Compose(
    [transforms.ToTensor(), transforms.Normalize((0.2,), (0.7,))]
)
PER_CHANNEL = transforms.Compose(
    [transforms.ToTensor(), transforms.Normalize((0.1, 0.2, 0.3), (0.4, 0.5, 0.6))]
)


@pytest.mark.parametrize(
    ("transform", "images"),
    [
        (None, GRAY),
        (None, RGB),
        (transforms.ToTensor(), GRAY),
        (transforms.ToTensor(), RGB),
        (transforms.Compose([]), GRAY),
        (TO_TENSOR_NORMALIZE, GRAY),
        (TO_TENSOR_NORMALIZE, RGB),
        (PER_CHANNEL, RGB),
        (PER_CHANNEL, RGB.astype(np.float64) / 255),
    ],
)
def test_batched_equals_stacked_items(transform, images) -> None:
    batch = np.stack([images, images[::-1], images // 2])
    apply = transforms.batched(transform)
    assert apply is not None
    out = apply(batch)

    def one(image):
        result = image if transform is None else transform(image)
        return result.numpy() if isinstance(result, tg.Tensor) else result

    expected = np.stack([one(image) for image in batch])
    assert out.dtype == expected.dtype
    np.testing.assert_array_equal(out, expected)  # bit for bit
    if transforms._steps(transform):
        assert not np.shares_memory(out, batch)


def test_batched_raises_what_the_items_raise() -> None:
    batch = np.stack([GRAY, GRAY])
    zero_std = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0,), (0,))])
    for transform in (PER_CHANNEL, zero_std):
        with pytest.raises(Exception) as per_item:
            transform(GRAY)
        with pytest.raises(per_item.type, match=re.escape(str(per_item.value))):
            transforms.batched(transform)(batch)


def test_batched_refuses_what_it_does_not_know() -> None:
    class Mine(transforms.Normalize):
        pass

    for transform in (
        transforms.Lambda(lambda x: x),
        transforms.Normalize((0.5,), (0.5,)),
        transforms.Compose([transforms.ToTensor(), Mine((0.5,), (0.5,))]),
        transforms.Compose([transforms.ToTensor(), None]),
        lambda x: x,
    ):
        assert transforms.batched(transform) is None


# --------------------------------------------------------------------------- Resize
def test_resize_sizes_are_torchvisions():
    """The output size rules of torchvision's ``_compute_resized_output_size``."""
    size = F.resized_size
    assert size(28, 28, 64) == [64, 64]
    assert size(30, 40, 15) == [15, 20] and size(40, 30, [15]) == [20, 15]
    assert size(30, 47, 15) == [15, 23]  # the longer edge rounds down
    assert size(30, 40, (7, 9)) == [7, 9]
    assert size(30, 90, 20, max_size=40) == [13, 40]
    with pytest.raises(ValueError, match="must be strictly greater"):
        size(30, 40, 20, max_size=20)
    with pytest.raises(ValueError, match="max_size should only be passed"):
        size(30, 40, (7, 9), max_size=50)
    with pytest.raises(TypeError, match="Size should be int or sequence"):
        transforms.Resize(2.5)
    with pytest.raises(ValueError, match="it should have 1 or 2 values"):
        transforms.Resize((1, 2, 3))
    with pytest.raises(TypeError, match="InterpolationMode"):
        transforms.Resize(4, interpolation="bilinear")


def test_resize_is_pillows_resampling_on_arrays_and_pil_images():
    """torchvision resizes a PIL image with ``img.resize((w, h), filter)``; tensorgrad hands
    its arrays to the same call, so the pixels are torchvision's. DCGAN's MNIST pipeline
    (Resize(64), ToTensor, Normalize) then gives (1, 64, 64) in [-1, 1]."""
    Image = pytest.importorskip("PIL.Image")
    rng = np.random.default_rng(0)
    gray = rng.integers(0, 256, (28, 30), dtype=np.uint8)
    rgb = rng.integers(0, 256, (20, 12, 3), dtype=np.uint8)
    out = transforms.Resize(14)(gray)
    assert isinstance(out, np.ndarray) and out.shape == (14, 15) and out.dtype == np.uint8
    np.testing.assert_array_equal(out, np.asarray(Image.fromarray(gray).resize((15, 14), 2)))
    for mode, code in (
        (transforms.InterpolationMode.NEAREST, 0),
        (transforms.InterpolationMode.BICUBIC, 3),
    ):
        np.testing.assert_array_equal(
            transforms.Resize((9, 5), mode)(rgb),
            np.asarray(Image.fromarray(rgb).resize((5, 9), code)),
        )
    channel = transforms.Resize(8)(gray[:, :, None])
    assert channel.shape == (8, 8, 1)
    pil = transforms.Resize(6)(Image.fromarray(rgb))
    assert isinstance(pil, Image.Image) and pil.size == (6, 10)
    same = transforms.Resize(28)(gray[:, :28])
    assert same.shape == (28, 28)
    pipeline = transforms.Compose(
        [transforms.Resize(64), transforms.ToTensor(), transforms.Normalize((0.5,), (0.5,))]
    )
    image = pipeline(gray[:, :28])
    assert image.shape == (1, 64, 64) and -1.0 <= float(image.min()) <= float(image.max()) <= 1.0
    with pytest.raises(TypeError, match="does not resize Tensors"):
        transforms.Resize(4)(tg.zeros(1, 8, 8))
    with pytest.raises(TypeError, match="expected a uint8 image"):
        transforms.Resize(4)(np.zeros((8, 8), np.float32))
    assert "Resize(size=64, interpolation=bilinear" in repr(pipeline)
