"""Where MNIST-format datasets are looked for, what is loaded, and the digits fallback."""

from __future__ import annotations

import gzip
import subprocess
import sys

import numpy as np
import pytest

from tensorgrad.data import (
    DATASET_NAMES,
    FASHION_MNIST_CLASSES,
    SYSTEM_DIRS,
    DatasetError,
    DatasetNotFoundError,
    cache_dir,
    load_dataset,
    load_digits,
    load_fashion_mnist,
    load_mnist,
    search_dirs,
    write_idx,
)


def only_label(ds) -> int:
    values = set(ds.train_labels.tolist()) | set(ds.test_labels.tolist())
    assert len(values) == 1
    return values.pop()


# Search order and layouts


def test_explicit_root_then_env_then_cache(tmp_path, monkeypatch, make_idx_dataset) -> None:
    root, env = tmp_path / "root", tmp_path / "env"
    cache = tmp_path / "xdg-cache" / "tensorgrad"
    make_idx_dataset(root / "mnist", label=1)
    make_idx_dataset(env / "mnist", label=2)
    make_idx_dataset(cache / "mnist", label=3)
    monkeypatch.setenv("TENSORGRAD_DATA", str(env))

    ds = load_mnist(root)
    assert (only_label(ds), ds.source) == (1, str(root / "mnist"))
    ds = load_mnist()
    assert (only_label(ds), ds.source) == (2, str(env / "mnist"))
    monkeypatch.delenv("TENSORGRAD_DATA")
    ds = load_mnist()
    assert (only_label(ds), ds.source) == (3, str(cache / "mnist"))
    ds = load_mnist(tmp_path / "empty-root")
    assert only_label(ds) == 3, "an explicit root without the files falls through"


def test_search_dirs_order(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TENSORGRAD_DATA", str(tmp_path / "env"))
    monkeypatch.setitem(SYSTEM_DIRS, "fashion-mnist", (tmp_path / "system",))
    cache = tmp_path / "xdg-cache" / "tensorgrad"
    assert search_dirs("fashion-mnist", tmp_path / "r") == [
        tmp_path / "r" / "fashion-mnist",
        tmp_path / "r" / "FashionMNIST" / "raw",
        tmp_path / "r",
        tmp_path / "env" / "fashion-mnist",
        tmp_path / "env" / "FashionMNIST" / "raw",
        tmp_path / "env",
        cache / "fashion-mnist",
        cache / "FashionMNIST" / "raw",
        cache,
        tmp_path / "system",
    ]
    with pytest.raises(ValueError, match="'digits' is not one of mnist, fashion-mnist"):
        search_dirs("digits")


def test_cache_dir(tmp_path, monkeypatch) -> None:
    assert cache_dir() == tmp_path / "xdg-cache" / "tensorgrad"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")
    assert cache_dir() == tmp_path / "home" / ".cache" / "tensorgrad"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache_dir() == tmp_path / "home" / ".cache" / "tensorgrad"


def test_files_directly_in_root_and_raw_files(tmp_path, make_idx_dataset) -> None:
    arrays = make_idx_dataset(tmp_path / "flat", gz=False)
    ds = load_mnist(tmp_path / "flat", download=False)
    assert ds.source == str(tmp_path / "flat")
    np.testing.assert_array_equal(ds.train_labels, arrays["train_labels"])
    np.testing.assert_array_equal(ds.test_images * 255, arrays["test_images"])


def test_torchvision_layout_and_dotted_names(tmp_path, make_idx_dataset) -> None:
    names = {
        "train_images": "train-images.idx3-ubyte",
        "train_labels": "train-labels.idx1-ubyte",
        "test_images": "t10k-images.idx3-ubyte",
        "test_labels": "t10k-labels.idx1-ubyte",
    }
    make_idx_dataset(tmp_path / "FashionMNIST" / "raw", gz=False, names=names, label=4)
    ds = load_fashion_mnist(tmp_path, download=False)
    assert ds.source == str(tmp_path / "FashionMNIST" / "raw")
    assert ds.classes == FASHION_MNIST_CLASSES and only_label(ds) == 4


def test_system_dir_is_searched_last(tmp_path, monkeypatch, make_idx_dataset) -> None:
    make_idx_dataset(tmp_path / "system", label=5)
    monkeypatch.setitem(SYSTEM_DIRS, "fashion-mnist", (tmp_path / "system",))
    assert load_fashion_mnist(download=False).source == str(tmp_path / "system")
    make_idx_dataset(tmp_path / "xdg-cache" / "tensorgrad" / "fashion-mnist", label=6)
    assert only_label(load_fashion_mnist(download=False)) == 6


def test_other_datasets_flat_directory_is_skipped(tmp_path, make_idx_dataset) -> None:
    make_idx_dataset(tmp_path / "mnist", label=1)
    with pytest.raises(DatasetNotFoundError) as info:
        load_fashion_mnist(tmp_path / "mnist", download=False)
    assert f"{tmp_path / 'mnist'}: skipped: named after MNIST, not Fashion-MNIST" in str(info.value)
    assert load_mnist(tmp_path / "mnist").source == str(tmp_path / "mnist")


def test_incomplete_directory_is_not_used(tmp_path, make_idx_dataset) -> None:
    make_idx_dataset(tmp_path / "root" / "mnist", label=1)
    (tmp_path / "root" / "mnist" / "t10k-labels-idx1-ubyte.gz").unlink()
    with pytest.raises(DatasetNotFoundError) as info:
        load_mnist(tmp_path / "root", download=False)
    assert f"{tmp_path / 'root' / 'mnist'}: missing t10k-labels-idx1-ubyte.gz\n" in str(info.value)


# What is loaded


def test_scaling_and_dtypes(tmp_path) -> None:
    directory = tmp_path / "mnist"
    directory.mkdir()
    images = np.zeros((3, 28, 28), dtype=np.uint8)
    images[0, 0, 0], images[1, 5, 5], images[2, 27, 27] = 255, 128, 1
    labels = np.array([0, 9, 4], dtype=np.uint8)
    for split in ("train", "t10k"):
        write_idx(directory / f"{split}-images-idx3-ubyte.gz", images)
        write_idx(directory / f"{split}-labels-idx1-ubyte.gz", labels)
    ds = load_mnist(directory)
    assert ds.name == "mnist" and ds.num_classes == 10 and ds.notice is None
    assert ds.classes == tuple("0123456789")
    assert ds.train_images.dtype == np.float32 and ds.train_images.shape == (3, 28, 28)
    assert ds.train_labels.dtype == np.int64 and ds.train_labels.tolist() == [0, 9, 4]
    assert ds.train_images.max() == 1.0 and ds.train_images.min() == 0.0
    assert ds.train_images[1, 5, 5] == np.float32(128 / 255)
    assert ds.train_images[2, 27, 27] == np.float32(1 / 255)
    assert "train_images" not in repr(ds)


@pytest.mark.parametrize(
    ("role", "array", "reason"),
    [
        ("train_labels", np.zeros(5, np.uint8), "6 images, but train-labels-idx1-ubyte.gz has 5"),
        ("test_labels", np.full(4, 10, np.uint8), "label 10 out of range for 10 classes"),
        ("test_images", np.zeros((4, 8, 8), np.uint8), "expected images of shape (N, 28, 28)"),
        ("train_labels", np.zeros((6, 1), np.uint8), "expected a 1-d array of labels"),
        ("train_images", np.zeros((6, 28, 28), np.float32), "expected unsigned byte pixels"),
        ("train_labels", np.zeros(6, np.int32), "expected unsigned byte labels"),
    ],
)
def test_inconsistent_files(tmp_path, make_idx_dataset, role, array, reason) -> None:
    make_idx_dataset(tmp_path)
    bad = {
        "train_images": "train-images-idx3-ubyte.gz",
        "train_labels": "train-labels-idx1-ubyte.gz",
        "test_images": "t10k-images-idx3-ubyte.gz",
        "test_labels": "t10k-labels-idx1-ubyte.gz",
    }[role]
    write_idx(tmp_path / bad, array)
    with pytest.raises(DatasetError) as info:
        load_mnist(tmp_path, download=False)
    assert reason in str(info.value)
    assert str(tmp_path) in str(info.value)


def test_corrupt_file_is_an_error_not_a_fallthrough(tmp_path, make_idx_dataset) -> None:
    make_idx_dataset(tmp_path / "root" / "mnist")
    make_idx_dataset(tmp_path / "xdg-cache" / "tensorgrad" / "mnist")
    path = tmp_path / "root" / "mnist" / "train-images-idx3-ubyte.gz"
    path.write_bytes(path.read_bytes()[:-30])
    with pytest.raises(DatasetError, match="corrupt gzip stream") as info:
        load_mnist(tmp_path / "root")
    assert str(path) in str(info.value)


# Not found


def test_not_found_message(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TENSORGRAD_DATA", str(tmp_path / "env"))
    (tmp_path / "root").mkdir()
    with pytest.raises(DatasetNotFoundError) as info:
        load_mnist(tmp_path / "root", download=False)
    error = info.value
    assert isinstance(error, FileNotFoundError)
    message = str(error)
    assert message.startswith("MNIST was neither found nor downloaded.\n")
    assert "train-images-idx3-ubyte.gz" in message and "t10k-labels-idx1-ubyte.gz" in message
    for directory in search_dirs("mnist", tmp_path / "root"):
        assert f"  {directory}: " in message
    assert f"  {tmp_path / 'root'}: has none of them\n" in message
    assert f"  {tmp_path / 'env' / 'mnist'}: does not exist\n" in message
    assert "Downloading was turned off (download=False)." in message
    assert "TENSORGRAD_DATA=/path/to/data" in message
    assert "--data-dir" in message
    assert f"into {tmp_path / 'root' / 'mnist'}/" in message
    assert error.searched == search_dirs("mnist", tmp_path / "root")
    assert not (tmp_path / "root" / "mnist").exists()


def test_not_found_message_gives_the_download_failure(tmp_path) -> None:
    with pytest.raises(DatasetNotFoundError) as info:
        load_mnist(timeout=2)
    message = str(info.value)
    cache = tmp_path / "xdg-cache" / "tensorgrad"
    assert f"Download into {cache / 'mnist'} failed: could not download" in message
    assert "Connection refused" in message
    assert "Connection refused" in info.value.download_error
    assert not cache.exists(), "a failed download leaves no directories behind"


def test_unknown_name() -> None:
    with pytest.raises(ValueError, match="unknown dataset 'cifar'; valid names: auto, mnist, "):
        load_dataset("cifar")
    assert DATASET_NAMES == ("auto", "mnist", "fashion-mnist", "digits")


def test_names_are_forgiving(tmp_path, make_idx_dataset) -> None:
    make_idx_dataset(tmp_path / "fashion-mnist")
    assert load_dataset(" Fashion_MNIST ", tmp_path).name == "fashion-mnist"


# auto and digits


def test_auto_uses_mnist_when_present(tmp_path, make_idx_dataset) -> None:
    make_idx_dataset(tmp_path / "mnist")
    ds = load_dataset("auto", tmp_path)
    assert ds.name == "mnist" and ds.notice is None


def test_auto_falls_back_to_digits_with_a_notice(tmp_path) -> None:
    ds = load_dataset("auto", tmp_path / "root", timeout=2)
    assert ds.name == "digits" and ds.source.startswith("scikit-learn")
    notice = ds.notice
    assert notice.startswith("Using scikit-learn's 8x8 digits dataset instead of MNIST.\n")
    assert "MNIST was neither found nor downloaded." in notice
    assert f"  {tmp_path / 'root' / 'mnist'}: does not exist" in notice
    assert "Connection refused" in notice
    assert "TENSORGRAD_DATA" in notice


def test_auto_without_download(tmp_path) -> None:
    ds = load_dataset("auto", download=False)
    assert ds.name == "digits" and "download=False" in ds.notice


def test_auto_with_corrupt_mnist(tmp_path, make_idx_dataset) -> None:
    make_idx_dataset(tmp_path / "mnist")
    (tmp_path / "mnist" / "t10k-labels-idx1-ubyte.gz").write_bytes(b"\x1f\x8bnot gzip")
    ds = load_dataset("auto", tmp_path)
    assert ds.name == "digits"
    assert "MNIST could not be read:" in ds.notice
    assert "t10k-labels-idx1-ubyte.gz: corrupt gzip stream" in ds.notice
    with pytest.raises(DatasetError):
        load_dataset("mnist", tmp_path)


def test_digits() -> None:
    ds = load_dataset("digits")
    assert ds.name == "digits" and ds.notice is None and ds.classes == tuple("0123456789")
    assert ds.train_images.shape == (1437, 8, 8) and ds.test_images.shape == (360, 8, 8)
    for images in (ds.train_images, ds.test_images):
        assert images.dtype == np.float32
        assert images.min() == 0.0 and images.max() == 1.0
    assert ds.train_labels.dtype == np.int64 and ds.test_labels.dtype == np.int64

    from sklearn.datasets import load_digits as sklearn_digits

    bunch = sklearn_digits()
    counts = np.bincount(bunch.target)
    test_counts = np.bincount(ds.test_labels, minlength=10)
    np.testing.assert_array_equal(test_counts + np.bincount(ds.train_labels), counts)
    assert np.all(np.abs(test_counts - counts * 360 / 1797) < 1), "stratified"
    rows = sorted(
        (label, image.tobytes())
        for images, labels in ((ds.train_images, ds.train_labels), (ds.test_images, ds.test_labels))
        for image, label in zip(images, labels, strict=True)
    )
    expected = sorted(
        (int(label), np.float32(image / 16).astype(np.float32).tobytes())
        for image, label in zip(bunch.images, bunch.target, strict=True)
    )
    assert rows == expected, "the two splits partition the dataset"


@pytest.mark.parametrize("module", ["tensorgrad", "tensorgrad.data", "tensorgrad.training"])
def test_scikit_learn_is_imported_only_when_the_digits_are_loaded(module) -> None:
    # scikit-learn stays a dependency, for the digits fallback alone: importing the package
    # (or its data and training rooms) must not pay its second of import time.
    code = (
        f"import sys, {module}; "
        "before = sorted(m for m in sys.modules if m.split('.')[0] == 'sklearn'); "
        "from tensorgrad.data import load_digits; load_digits(); "
        "print(before, 'sklearn' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[] True"


def test_digits_split_is_deterministic() -> None:
    a, b = load_digits(), load_digits()
    np.testing.assert_array_equal(a.test_images, b.test_images)
    np.testing.assert_array_equal(a.train_labels, b.train_labels)
    c = load_digits(seed=1)
    assert not np.array_equal(a.test_images, c.test_images)
    d = load_digits(test_size=500)
    assert len(d.test_labels) == 500 and len(d.train_labels) == 1297
    with pytest.raises(ValueError, match=r"test_size must be an int in 1\.\.1796"):
        load_digits(test_size=0)


@pytest.mark.parametrize(
    ("role", "array", "reason"),
    [
        ("train_images", np.zeros((0, 28, 28), np.uint8), "holds no images"),
        ("test_images", np.zeros((0, 28, 28), np.uint8), "holds no images"),
    ],
)
def test_a_split_without_images_is_a_dataset_error_and_auto_falls_back(
    tmp_path, make_idx_dataset, role, array, reason
) -> None:
    make_idx_dataset(tmp_path / "mnist")
    stem = {"train_images": "train-images-idx3-ubyte", "test_images": "t10k-images-idx3-ubyte"}
    labels = {"train_images": "train-labels-idx1-ubyte", "test_images": "t10k-labels-idx1-ubyte"}
    write_idx(tmp_path / "mnist" / f"{stem[role]}.gz", array)
    write_idx(tmp_path / "mnist" / f"{labels[role]}.gz", np.zeros(0, np.uint8))
    with pytest.raises(DatasetError, match=reason):
        load_mnist(tmp_path, download=False)
    ds = load_dataset("auto", tmp_path, download=False)
    assert ds.name == "digits" and reason in ds.notice


def test_a_crafted_header_with_255_dimensions_lets_auto_fall_back(tmp_path, make_idx_dataset):
    make_idx_dataset(tmp_path / "mnist")
    header = bytes([0, 0, 8, 255]) + np.ones(255, ">u4").tobytes() + b"\x00"
    (tmp_path / "mnist" / "train-images-idx3-ubyte.gz").write_bytes(gzip.compress(header))
    with pytest.raises(DatasetError, match="declares 255 dimensions"):
        load_mnist(tmp_path, download=False)
    ds = load_dataset("auto", tmp_path, download=False)
    assert ds.name == "digits" and "declares 255 dimensions" in ds.notice
