"""Helpers for the vision tests: small MNIST-format files, the real MNIST where this machine
has it, and a local HTTP server for downloads."""

from __future__ import annotations

import socket
from pathlib import Path

import numpy as np
import pytest

from tensorgrad.data import IDX_FILES, write_idx

ROOT = Path(__file__).resolve().parents[2]
# The shared data folder beside the repository (a worktree may sit one level deeper).
SHARED_CANDIDATES = (ROOT.parent / "shared" / "data", ROOT.parent.parent / "shared" / "data")
MNIST_NAMES = [f"{stem}.gz" for stem in IDX_FILES.values()]


def real_mnist_root() -> Path | None:
    for root in SHARED_CANDIDATES:
        if all((root / "mnist" / name).is_file() for name in MNIST_NAMES):
            return root
    return None


needs_real_mnist = pytest.mark.skipif(
    real_mnist_root() is None, reason="no local copy of MNIST in ../shared/data/mnist"
)


def closed_port_url() -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/"


def fake_arrays(n: int, seed: int, num_classes: int = 10) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, num_classes, size=n, dtype=np.uint8)
    return images, labels


def write_mnist(
    directory: Path,
    *,
    n_train: int = 12,
    n_test: int = 5,
    gz: bool = True,
    seed: int = 0,
    splits: tuple[str, ...] = ("train", "test"),
) -> dict[str, np.ndarray]:
    """The MNIST-format files of a small fake dataset in ``directory``; its arrays by role."""
    directory.mkdir(parents=True, exist_ok=True)
    arrays = {}
    for split, n, offset in (("train", n_train, 0), ("test", n_test, 1)):
        if split not in splits:
            continue
        images, labels = fake_arrays(n, seed + offset)
        for role, array in ((f"{split}_images", images), (f"{split}_labels", labels)):
            write_idx(directory / (IDX_FILES[role] + (".gz" if gz else "")), array, compress=gz)
            arrays[role] = array
    return arrays
