"""The real MNIST and Fashion-MNIST, where a machine has local copies; skipped elsewhere.

MNIST is looked for in the shared data folder beside the repository (``../shared/data``),
found the way a user's copy would be, through ``TENSORGRAD_DATA`` or an explicit root.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tensorgrad.data import SYSTEM_DIRS, load_dataset, load_fashion_mnist, load_mnist

SHARED_DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
MNIST_FILES = ("train-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")

needs_mnist = pytest.mark.skipif(
    not all((SHARED_DATA / "mnist" / name).is_file() for name in MNIST_FILES),
    reason=f"no local MNIST in {SHARED_DATA / 'mnist'}",
)


@needs_mnist
def test_mnist_known_figures(monkeypatch) -> None:
    monkeypatch.setenv("TENSORGRAD_DATA", str(SHARED_DATA))
    ds = load_dataset("auto", download=False)  # its speed is the bench's, not a test's
    assert ds.name == "mnist" and ds.notice is None
    assert Path(ds.source).resolve() == (SHARED_DATA / "mnist").resolve()

    assert ds.train_images.shape == (60000, 28, 28) and ds.train_images.dtype == np.float32
    assert ds.test_images.shape == (10000, 28, 28) and ds.test_labels.dtype == np.int64
    pixels = ds.train_images.astype(np.float64)
    assert abs(pixels.mean() - 0.1307) < 1e-4
    assert abs(pixels.std() - 0.3081) < 1e-4
    assert pixels.min() >= 0.0 and pixels.max() <= 1.0
    counts = [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
    assert np.bincount(ds.train_labels).tolist() == counts
    assert ds.test_labels[:10].tolist() == [7, 2, 1, 0, 4, 1, 4, 9, 5, 9]


@needs_mnist
def test_mnist_by_explicit_dataset_dir() -> None:
    ds = load_mnist(SHARED_DATA / "mnist", download=False)
    assert Path(ds.source).resolve() == (SHARED_DATA / "mnist").resolve()
    assert len(ds.train_labels) == 60000 and len(ds.test_labels) == 10000


def test_fashion_mnist_from_the_system_location(monkeypatch, original_system_dirs) -> None:
    present = [
        d
        for d in original_system_dirs["fashion-mnist"]
        if (d / "t10k-labels-idx1-ubyte.gz").is_file()
    ]
    if not present:
        pytest.skip("no system copy of Fashion-MNIST")
    monkeypatch.setitem(SYSTEM_DIRS, "fashion-mnist", tuple(present))
    ds = load_fashion_mnist(download=False)
    assert ds.source == str(present[0])
    assert ds.classes[0] == "T-shirt/top" and ds.classes[9] == "Ankle boot"
    assert ds.train_images.shape == (60000, 28, 28) and ds.test_images.shape == (10000, 28, 28)
    assert np.bincount(ds.train_labels).tolist() == [6000] * 10
    assert np.bincount(ds.test_labels).tolist() == [1000] * 10
    assert ds.test_labels[:10].tolist() == [9, 2, 1, 1, 6, 1, 4, 6, 5, 7]
    assert abs(ds.train_images.astype(np.float64).mean() - 0.2860) < 1e-4
