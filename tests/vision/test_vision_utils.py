"""utils.make_grid and utils.save_image."""

from __future__ import annotations

import io
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.vision import utils


def images(b: int, c: int, h: int, w: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random((b, c, h, w), dtype=np.float32)


# make_grid: layouts worked out by hand


def test_grid_layout_by_hand() -> None:
    batch = np.arange(3 * 4, dtype=np.float32).reshape(3, 1, 2, 2) + 1
    grid = utils.make_grid(tg.tensor(batch), nrow=2, padding=1, pad_value=-1).data
    # two columns, two rows: (2 + 1) * 2 + 1 = 7 pixels each way; gray repeated to 3 channels
    assert grid.shape == (3, 7, 7) and grid.dtype == np.float32
    np.testing.assert_array_equal(grid[0], grid[1])
    np.testing.assert_array_equal(grid[0], grid[2])
    expected = np.full((7, 7), -1, np.float32)
    expected[1:3, 1:3] = batch[0, 0]
    expected[1:3, 4:6] = batch[1, 0]
    expected[4:6, 1:3] = batch[2, 0]
    np.testing.assert_array_equal(grid[0], expected)


def test_grid_defaults() -> None:
    batch = images(10, 3, 4, 5)
    grid = utils.make_grid(tg.tensor(batch)).data
    # eight a row, padding 2: (4 + 2) * 2 + 2 high, (5 + 2) * 8 + 2 wide
    assert grid.shape == (3, 14, 58)
    np.testing.assert_array_equal(grid[:, 2:6, 2:7], batch[0])
    np.testing.assert_array_equal(grid[:, 8:12, 2:7], batch[8])
    np.testing.assert_array_equal(grid[:, 8:12, 9:14], batch[9])
    assert np.all(grid[:, 8:12, 16:] == 0)  # the empty cells are padding


def test_single_images() -> None:
    one = images(1, 3, 4, 5)
    np.testing.assert_array_equal(utils.make_grid(tg.tensor(one)).data, one[0])
    gray = images(1, 1, 4, 5)[0, 0]
    out = utils.make_grid(tg.tensor(gray)).data  # (H, W): one image, three channels
    assert out.shape == (3, 4, 5)
    np.testing.assert_array_equal(out[1], gray)
    listed = utils.make_grid([tg.tensor(one[0]), tg.tensor(one[0])], nrow=1, padding=0).data
    assert listed.shape == (3, 8, 5)


def test_normalize_and_value_range() -> None:
    batch = np.array([[[[0.0, 2.0]]], [[[4.0, 8.0]]]], dtype=np.float32)  # (2, 1, 1, 2)
    t = tg.tensor(batch)
    whole = utils.make_grid(t, normalize=True, padding=0).data[0]
    np.testing.assert_allclose(whole, [[0.0, 0.25, 0.5, 1.0]])
    each = utils.make_grid(t, normalize=True, scale_each=True, padding=0).data[0]
    np.testing.assert_allclose(each, [[0.0, 1.0, 0.0, 1.0]])
    ranged = utils.make_grid(t, normalize=True, value_range=(2.0, 6.0), padding=0).data[0]
    np.testing.assert_allclose(ranged, [[0.0, 0.0, 0.5, 1.0]])
    np.testing.assert_array_equal(t.data, batch)  # the input is left as it was
    flat = utils.make_grid(tg.ones(2, 1, 1, 1), normalize=True, padding=0).data
    assert np.all(flat == 0)  # max - min is 0: divided by 1e-5, not by zero


def test_make_grid_errors() -> None:
    with pytest.raises(TypeError, match="tensor or list of tensors expected, got <class 'numpy"):
        utils.make_grid(np.zeros((2, 3, 4, 4)))
    with pytest.raises(TypeError, match="tensor or list of tensors expected"):
        utils.make_grid([tg.zeros(3, 2, 2), np.zeros((3, 2, 2))])
    with pytest.raises(RuntimeError, match=r"sample 1 has shape \(3, 2, 3\)"):
        utils.make_grid([tg.zeros(3, 2, 2), tg.zeros(3, 2, 3)])
    with pytest.raises(TypeError, match="value_range has to be a tuple"):
        utils.make_grid(tg.zeros(2, 3, 2, 2), normalize=True, value_range=[0, 1])
    with pytest.raises(ValueError, match="nrow must be positive, got 0"):
        utils.make_grid(tg.zeros(2, 3, 2, 2), nrow=0)
    with pytest.raises(ValueError, match=r"expected images shaped .* got shape \(4,\)"):
        utils.make_grid(tg.zeros(4))
    with pytest.raises(ValueError, match="no images"):
        utils.make_grid(tg.zeros(0, 3, 2, 2))


def reference_make_grid(torch, tensor, nrow, padding, normalize, value_range, scale_each, pad):
    """torchvision's make_grid algorithm, written with torch operations."""
    if tensor.dim() == 3 and tensor.size(0) == 1:
        tensor = torch.cat((tensor, tensor, tensor), 0)
    if tensor.dim() == 3:
        tensor = tensor.unsqueeze(0)
    if tensor.size(1) == 1:
        tensor = torch.cat((tensor, tensor, tensor), 1)
    if normalize:
        tensor = tensor.clone()
        parts = list(tensor) if scale_each else [tensor]
        for part in parts:
            low, high = value_range or (float(part.min()), float(part.max()))
            part.clamp_(min=low, max=high).sub_(low).div_(max(high - low, 1e-5))
    if tensor.size(0) == 1:
        return tensor.squeeze(0)
    count = tensor.size(0)
    columns = min(nrow, count)
    rows = math.ceil(count / columns)
    height, width = tensor.size(2) + padding, tensor.size(3) + padding
    grid = tensor.new_full(
        (tensor.size(1), height * rows + padding, width * columns + padding), pad
    )
    for k in range(count):
        y, x = divmod(k, columns)
        grid.narrow(1, y * height + padding, height - padding).narrow(
            2, x * width + padding, width - padding
        ).copy_(tensor[k])
    return grid


@pytest.mark.parametrize(
    ("shape", "kwargs"),
    [
        ((10, 3, 4, 5), {}),
        ((7, 1, 3, 3), {"nrow": 3, "padding": 1, "pad_value": 0.5}),
        ((5, 3, 2, 2), {"nrow": 5, "padding": 0}),
        ((6, 3, 4, 4), {"normalize": True}),
        ((6, 3, 4, 4), {"normalize": True, "scale_each": True, "nrow": 4}),
        ((6, 1, 4, 4), {"normalize": True, "value_range": (0.2, 0.7), "padding": 3}),
        ((1, 3, 4, 4), {"normalize": True}),
        ((1, 4, 4), {}),
    ],
)
def test_make_grid_against_pytorch(shape, kwargs) -> None:
    torch = pytest.importorskip("torch")
    data = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    ours = utils.make_grid(tg.tensor(data), **kwargs).data
    args = {"nrow": 8, "padding": 2, "normalize": False, "value_range": None}
    args.update({"scale_each": False, "pad": 0.0})
    args.update({("pad" if k == "pad_value" else k): v for k, v in kwargs.items()})
    theirs = reference_make_grid(torch, torch.from_numpy(data), **args).numpy()
    assert ours.shape == theirs.shape
    np.testing.assert_array_equal(ours, theirs)


# save_image


def test_save_image_png(tmp_path: Path) -> None:
    image_module = pytest.importorskip("PIL.Image")
    values = np.array([0.0, 0.5, 1.0, 1.5, -0.2, 0.998, 0.002, 0.25], np.float32)
    batch = tg.tensor(values.reshape(2, 1, 2, 2))
    path = tmp_path / "grid.png"
    utils.save_image(batch, path, nrow=2, padding=1)
    with image_module.open(path) as img:
        assert img.format == "PNG" and img.mode == "RGB" and img.size == (7, 4)
        pixels = np.asarray(img)
    # x * 255 + 0.5, clamped to [0, 255], truncated: 0, 128, 255, 255 / 0, 254, 1, 64
    np.testing.assert_array_equal(pixels[1:3, 1:3, 0], [[0, 128], [255, 255]])
    np.testing.assert_array_equal(pixels[1:3, 4:6, 1], [[0, 254], [1, 64]])
    assert np.all(pixels[0] == 0)
    buffer = io.BytesIO()
    utils.save_image(batch[0], buffer, format="PNG")
    assert buffer.getvalue()[:8] == b"\x89PNG\r\n\x1a\n"


def test_save_image_against_torchvisions_rounding(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    image_module = pytest.importorskip("PIL.Image")
    data = np.random.default_rng(2).uniform(-0.1, 1.1, (3, 5, 6)).astype(np.float32)
    utils.save_image(tg.tensor(data), tmp_path / "x.png")
    expected = torch.from_numpy(data).mul(255).add_(0.5).clamp_(0, 255).permute(1, 2, 0)
    with image_module.open(tmp_path / "x.png") as img:
        np.testing.assert_array_equal(np.asarray(img), expected.to(torch.uint8).numpy())


def test_save_image_without_pillow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "PIL", None)  # import PIL now raises ImportError
    path = tmp_path / "grid.png"
    with pytest.raises(ImportError, match=r"Pillow, which is not installed.*tensorgrad\[vision\]"):
        utils.save_image(tg.zeros(3, 2, 2), path)
    assert not path.exists()


def test_save_image_refuses_integer_images(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="expected a float image with values in"):
        utils.save_image(tg.tensor(np.zeros((3, 2, 2), np.uint8)), tmp_path / "x.png")
    assert not (tmp_path / "x.png").exists()


def test_import_is_light() -> None:
    code = (
        "import sys, tensorgrad.vision as v; "
        "before = [m for m in ('PIL', 'tensorgrad.vision.datasets', 'tensorgrad.vision.utils', "
        "'tensorgrad.vision.transforms') if m in sys.modules]; "
        "v.transforms; v.utils; v.datasets; "
        "print(before, 'PIL' in sys.modules, v.transforms.__name__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["[]", "False", "tensorgrad.vision.transforms"]


def test_what_torchvision_has_and_tensorgrad_has_not_is_named() -> None:
    import tensorgrad.vision as vision
    from tensorgrad.vision import datasets, transforms

    with pytest.raises(AttributeError, match=r"no attribute 'models'; .*\(see docs/porting.md\)"):
        _ = vision.models
    with pytest.raises(AttributeError, match=r"'RandomCrop'; .* ToTensor, Normalize, Compose"):
        _ = transforms.RandomCrop
    with pytest.raises(AttributeError, match=r"'CIFAR10'; .* MNIST, FashionMNIST and FakeData"):
        _ = datasets.CIFAR10
    assert not hasattr(transforms, "__path_hooks__")
