"""datasets.MNIST, datasets.FashionMNIST and datasets.FakeData: found, downloaded, read, batched."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.data import DataLoader, DatasetError, DatasetNotFoundError, default_collate
from tensorgrad.vision import datasets, transforms
from tests.vision.helpers import needs_real_mnist, real_mnist_root, write_mnist

NORMALIZE = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])


def per_item(batch):
    """The default collation, but not the default collate_fn itself: the loader then reads
    item by item instead of through get_batch."""
    return default_collate(batch)


# Finding the files


@pytest.mark.parametrize("gz", [True, False])
def test_torchvision_layout(tmp_path: Path, gz: bool) -> None:
    arrays = write_mnist(tmp_path / "MNIST" / "raw", gz=gz)
    train = datasets.MNIST(str(tmp_path))
    test = datasets.MNIST(tmp_path, train=False)
    assert len(train) == 12 and len(test) == 5
    assert isinstance(train.data, tg.Tensor) and isinstance(train.targets, tg.Tensor)
    assert train.data.dtype == np.uint8 and train.data.shape == (12, 28, 28)
    assert train.targets.dtype == np.int64
    np.testing.assert_array_equal(train.data.data, arrays["train_images"])
    np.testing.assert_array_equal(test.targets.data, arrays["test_labels"])
    image, target = train[3]
    assert isinstance(image, np.ndarray) and image.dtype == np.uint8 and image.shape == (28, 28)
    np.testing.assert_array_equal(image, arrays["train_images"][3])
    assert type(target) is int and target == arrays["train_labels"][3]
    assert train.raw_folder == os.path.join(str(tmp_path), "MNIST", "raw")
    assert train.source == str(tmp_path / "MNIST" / "raw")


def test_tensorgrad_search_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    arrays = write_mnist(tmp_path / "elsewhere" / "mnist")
    monkeypatch.setenv("TENSORGRAD_DATA", str(tmp_path / "elsewhere"))
    ds = datasets.MNIST(tmp_path / "empty-root")
    np.testing.assert_array_equal(ds.targets.data, arrays["train_labels"])
    write_mnist(tmp_path / "root" / "mnist", seed=5)  # <root>/mnist comes before the variable
    assert datasets.MNIST(tmp_path / "root").source == str(tmp_path / "root" / "mnist")
    assert not (tmp_path / "empty-root").exists()  # looking creates nothing


def test_only_the_split_files_are_needed(tmp_path: Path) -> None:
    write_mnist(tmp_path / "MNIST" / "raw", splits=("test",))
    assert len(datasets.MNIST(tmp_path, train=False)) == 5
    with pytest.raises(datasets.MNISTNotFoundError, match="train-images-idx3-ubyte.gz"):
        datasets.MNIST(tmp_path, train=True)


def test_fashion_mnist(tmp_path: Path) -> None:
    write_mnist(tmp_path / "FashionMNIST" / "raw", seed=3)
    ds = datasets.FashionMNIST(tmp_path, train=False)
    assert len(ds) == 5 and ds.classes[0] == "T-shirt/top" and ds.classes[9] == "Ankle boot"
    assert ds.class_to_idx["Bag"] == 8
    assert ds.raw_folder.endswith(os.path.join("FashionMNIST", "raw"))
    # MNIST's files are not taken for Fashion-MNIST's: a root named after MNIST is skipped.
    write_mnist(tmp_path / "mnist")
    with pytest.raises(datasets.MNISTNotFoundError):
        datasets.FashionMNIST(tmp_path / "mnist")


def test_not_found_is_torchvisions_error_and_says_where(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="Dataset not found. You can use download=True") as info:
        datasets.MNIST(tmp_path / "nowhere")
    error = info.value
    assert isinstance(error, DatasetNotFoundError) and isinstance(error, FileNotFoundError)
    message = str(error)
    assert str(tmp_path / "nowhere" / "MNIST" / "raw") in message
    assert str(tmp_path / "nowhere" / "mnist") in message
    assert "Downloading was turned off (download=False)." in message
    assert not (tmp_path / "nowhere").exists()


def test_corrupt_files_are_named(tmp_path: Path) -> None:
    raw = tmp_path / "MNIST" / "raw"
    write_mnist(raw)
    (raw / "train-labels-idx1-ubyte.gz").write_bytes(b"\x1f\x8bnot gzip")
    with pytest.raises(DatasetError, match="train-labels-idx1-ubyte.gz: corrupt gzip stream"):
        datasets.MNIST(tmp_path)
    from tensorgrad.data import write_idx

    write_idx(raw / "train-labels-idx1-ubyte.gz", np.arange(11, dtype=np.uint8) % 10)
    with pytest.raises(DatasetError, match="12 images, but train-labels-idx1-ubyte.gz has 11"):
        datasets.MNIST(tmp_path)
    write_idx(raw / "train-labels-idx1-ubyte.gz", np.full(12, 10, dtype=np.uint8))
    with pytest.raises(DatasetError, match="label 10 out of range for 10 classes"):
        datasets.MNIST(tmp_path)


# Downloading


def test_download_into_torchvisions_place(tmp_path: Path, http_server, monkeypatch) -> None:
    arrays = write_mnist(tmp_path / "served")
    resources = http_server.serve_files("/mnist", tmp_path / "served")
    monkeypatch.setattr(datasets.MNIST, "resources", resources)
    monkeypatch.setattr(
        datasets.MNIST, "mirrors", [http_server.url + "/missing/", http_server.url + "/mnist/"]
    )
    ds = datasets.MNIST(tmp_path / "data", train=True, download=True)
    np.testing.assert_array_equal(ds.data.data, arrays["train_images"])
    raw = tmp_path / "data" / "MNIST" / "raw"
    assert sorted(p.name for p in raw.iterdir()) == sorted(name for name, _ in resources)
    assert len(http_server.requests) == 8  # each file: the first mirror's 404, then the file
    # The test split came with it, as with torchvision; nothing is fetched again.
    test = datasets.MNIST(tmp_path / "data", train=False)
    np.testing.assert_array_equal(test.targets.data, arrays["test_labels"])
    datasets.MNIST(tmp_path / "data", train=False, download=True)
    assert len(http_server.requests) == 8


def test_download_mirror_from_the_environment(tmp_path: Path, http_server, monkeypatch) -> None:
    write_mnist(tmp_path / "served", seed=9)
    resources = http_server.serve_files("/fashion", tmp_path / "served")
    monkeypatch.setattr(datasets.FashionMNIST, "resources", resources)
    monkeypatch.setenv("TENSORGRAD_FASHION_MNIST_MIRROR", http_server.url + "/fashion")
    ds = datasets.FashionMNIST(tmp_path, train=False, download=True)
    assert len(ds) == 5 and (tmp_path / "FashionMNIST" / "raw").is_dir()


def test_download_checks_the_checksums(tmp_path: Path, http_server, monkeypatch) -> None:
    write_mnist(tmp_path / "served")
    resources = http_server.serve_files("/mnist", tmp_path / "served")
    wrong = [(name, "0" * 32) for name, _ in resources]
    monkeypatch.setattr(datasets.MNIST, "resources", wrong)
    monkeypatch.setattr(datasets.MNIST, "mirrors", [http_server.url + "/mnist/"])
    with pytest.raises(datasets.MNISTNotFoundError, match="checksum mismatch") as info:
        datasets.MNIST(tmp_path / "data", download=True)
    assert "Download into" in str(info.value)
    raw = tmp_path / "data" / "MNIST" / "raw"
    assert not raw.exists() or list(raw.iterdir()) == []  # no partial or unverified file


def test_download_failure_names_the_urls(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match=r"could not download train-images-idx3-ubyte.gz"):
        datasets.MNIST(tmp_path, download=True)


# Items, transforms, attributes


def test_transforms_and_attributes(tmp_path: Path) -> None:
    arrays = write_mnist(tmp_path / "MNIST" / "raw")
    ds = datasets.MNIST(tmp_path, transform=NORMALIZE, target_transform=lambda t: t * 10)
    image, target = ds[2]
    assert isinstance(image, tg.Tensor) and image.shape == (1, 28, 28)
    assert image.dtype == np.float32
    expected = (arrays["train_images"][2] / np.float32(255) - np.float32(0.1307)) / np.float32(
        0.3081
    )
    np.testing.assert_allclose(image.data[0], expected, rtol=1e-6)
    assert target == 10 * int(arrays["train_labels"][2])
    assert ds.class_to_idx["3 - three"] == 3 and len(ds.classes) == 10
    index = tg.tensor(np.int64(4))
    assert ds[index][1] == ds[4][1]
    with pytest.warns(UserWarning, match="train_labels has been renamed targets"):
        assert ds.train_labels is ds.targets
    with pytest.warns(UserWarning, match="train_data has been renamed data"):
        assert ds.train_data is ds.data
    text = repr(ds)
    assert text.startswith("Dataset MNIST\n    Number of datapoints: 12\n    Root location: ")
    assert "    Split: Train\n    StandardTransform\n    Transform: Compose(" in text
    assert "Normalize(mean=(0.1307,), std=(0.3081,))" in text
    with pytest.raises(ValueError, match="Only transforms or transform/target_transform"):
        datasets.VisionDataset(tmp_path, transforms=lambda x, y: (x, y), transform=NORMALIZE)


def test_data_can_be_replaced_as_in_torchvision(tmp_path: Path) -> None:
    write_mnist(tmp_path / "MNIST" / "raw")
    ds = datasets.MNIST(tmp_path, transform=transforms.ToTensor())
    ds.data, ds.targets = ds.data[:5], tg.tensor(np.arange(5) % 2)
    assert len(ds) == 5
    batches = list(DataLoader(ds, batch_size=4))
    assert [len(y) for _, y in batches] == [4, 1]
    np.testing.assert_array_equal(batches[0][1].data, ds.targets.data[:4])


# The batched fast path


@pytest.mark.parametrize(
    "transform",
    [
        None,
        transforms.ToTensor(),
        NORMALIZE,
        transforms.Compose(
            [
                transforms.Compose([transforms.ToTensor()]),
                transforms.Normalize([0.5], [0.25]),
                transforms.Normalize((0.1,), (2.0,), inplace=True),
            ]
        ),
    ],
    ids=["none", "to-tensor", "normalize", "nested"],
)
def test_fast_path_batches_equal_per_item_batches(tmp_path: Path, transform) -> None:
    write_mnist(tmp_path / "MNIST" / "raw", n_train=23)
    ds = datasets.MNIST(tmp_path, transform=transform)
    assert hasattr(ds, "get_batch")
    fast = list(DataLoader(ds, batch_size=5, shuffle=True, seed=4))
    slow = list(DataLoader(ds, batch_size=5, shuffle=True, seed=4, collate_fn=per_item))
    assert len(fast) == len(slow) == 5
    for (fx, fy), (sx, sy) in zip(fast, slow, strict=True):
        assert fx.dtype == sx.dtype and fx.shape == sx.shape
        assert fy.dtype == sy.dtype == np.int64
        np.testing.assert_array_equal(fx.data, sx.data)  # bit for bit
        np.testing.assert_array_equal(fy.data, sy.data)
        assert not np.shares_memory(fx.data, ds.data.data)


def test_fast_path_is_used_only_for_transforms_it_knows(tmp_path: Path) -> None:
    write_mnist(tmp_path / "MNIST" / "raw")

    class MyToTensor(transforms.ToTensor):
        pass

    for transform in (
        transforms.Lambda(lambda img: img),
        MyToTensor(),
        transforms.Compose([transforms.ToTensor(), transforms.Lambda(lambda t: t * 2)]),
        transforms.Normalize((0.5,), (0.5,)),
    ):
        assert not hasattr(datasets.MNIST(tmp_path, transform=transform), "get_batch")
    with_target = datasets.MNIST(tmp_path, transform=NORMALIZE, target_transform=lambda t: t)
    assert not hasattr(with_target, "get_batch")
    doubled = datasets.MNIST(
        tmp_path,
        transform=transforms.Compose([transforms.ToTensor(), transforms.Lambda(lambda t: t * 2)]),
    )
    x, _ = next(iter(DataLoader(doubled, batch_size=3)))
    np.testing.assert_array_equal(x.data[:, 0], doubled.data.data[:3] / np.float32(255) * 2)


def test_fast_path_errors_match_the_per_item_ones(tmp_path: Path) -> None:
    write_mnist(tmp_path / "MNIST" / "raw")
    zero_std = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.5,), (0.0,))])
    ds = datasets.MNIST(tmp_path, transform=zero_std)
    for collate in (None, per_item):
        with pytest.raises(ValueError, match="std evaluated to zero"):
            next(iter(DataLoader(ds, batch_size=4, collate_fn=collate)))


def test_a_subclass_with_its_own_getitem_is_read_item_by_item(tmp_path: Path) -> None:
    write_mnist(tmp_path / "MNIST" / "raw")

    class WithIndex(datasets.MNIST):
        def __getitem__(self, index):
            image, target = super().__getitem__(index)
            return image, target, index

    ds = WithIndex(tmp_path, transform=NORMALIZE)
    x, _, index = next(iter(DataLoader(ds, batch_size=4)))
    assert x.shape == (4, 1, 28, 28) and index.data.tolist() == [0, 1, 2, 3]


# The real MNIST


@needs_real_mnist
def test_real_mnist_through_root_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    root = real_mnist_root()
    train = datasets.MNIST(root, train=True, transform=NORMALIZE)
    assert len(train) == 60000 and train.targets.data[:5].tolist() == [5, 0, 4, 1, 9]
    pixels = train.data.data / np.float32(255)
    assert abs(float(pixels.mean()) - 0.1307) < 1e-4 and abs(float(pixels.std()) - 0.3081) < 1e-4
    monkeypatch.setenv("TENSORGRAD_DATA", str(root))
    test = datasets.MNIST("../data-that-does-not-exist", train=False, transform=NORMALIZE)
    assert len(test) == 10000 and test.targets.data[:5].tolist() == [7, 2, 1, 0, 4]
    assert int(np.bincount(test.targets.data)[1]) == 1135
    fast = list(DataLoader(test, batch_size=1000))
    slow = list(DataLoader(test, batch_size=1000, collate_fn=per_item))
    for (fx, fy), (sx, sy) in zip(fast, slow, strict=True):
        np.testing.assert_array_equal(fx.data, sx.data)
        np.testing.assert_array_equal(fy.data, sy.data)
    x, _ = fast[0]
    assert x.shape == (1000, 1, 28, 28)


# --------------------------------------------------------------------------- FakeData
def test_fake_data_has_torchvisions_signature_items_and_determinism():
    import inspect

    from tensorgrad.vision import datasets, transforms

    parameters = inspect.signature(datasets.FakeData).parameters
    assert list(parameters) == [
        "size", "image_size", "num_classes", "transform", "target_transform", "random_offset",
    ]  # fmt: skip
    assert parameters["size"].default == 1000 and parameters["image_size"].default == (3, 224, 224)
    assert parameters["num_classes"].default == 10 and parameters["random_offset"].default == 0
    data = datasets.FakeData(size=6, image_size=(3, 8, 5), num_classes=3)
    image, label = data[2]
    assert image.shape == (8, 5, 3) and image.dtype == np.uint8  # (H, W, C), as a PIL image
    assert isinstance(label, int) and 0 <= label < 3 and len(data) == 6
    again, label_again = data[2]
    np.testing.assert_array_equal(image, again)  # the same item every time it is read
    assert label_again == label
    assert not np.array_equal(data[3][0], image)
    shifted = datasets.FakeData(size=6, image_size=(3, 8, 5), num_classes=3, random_offset=1)
    np.testing.assert_array_equal(shifted[1][0], data[2][0])
    gray, _ = datasets.FakeData(size=1, image_size=(1, 4, 4))[0]
    assert gray.shape == (4, 4)
    state = tg.get_rng_state()
    data[0]
    np.testing.assert_array_equal(tg.get_rng_state().numpy(), state.numpy())  # untouched
    with pytest.raises(IndexError, match="FakeData index out of range"):
        data[6]
    tensors = datasets.FakeData(
        size=4, image_size=(3, 8, 5), transform=transforms.ToTensor(), target_transform=lambda t: -t
    )
    batch, labels = next(iter(tg.data.DataLoader(tensors, batch_size=4)))
    assert batch.shape == (4, 3, 8, 5) and batch.dtype == tg.float32 and labels.max() <= 0
    assert "Dataset FakeData\n    Number of datapoints: 4" in repr(tensors)
