"""Fixtures for the data tests: an isolated environment, fake IDX datasets, a local server.

Every test runs with the cache and home directories inside its ``tmp_path``, with no
``TENSORGRAD_DATA`` or mirror variables, no proxies, no system directories, and the default
mirrors pointing at a closed port on 127.0.0.1, so that nothing reads the user's data or
leaves this machine unless a test asks for it.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from tensorgrad.data import DATA_ENV, IDX_FILES, MD5, MIRROR_ENV, MIRRORS, SYSTEM_DIRS, write_idx
from tests.local_server import LocalServer

ORIGINAL_SYSTEM_DIRS = {name: tuple(dirs) for name, dirs in SYSTEM_DIRS.items()}
_PROXY_VARS = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


def free_port() -> int:
    """A port on 127.0.0.1 with nothing listening (it was free a moment ago)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(autouse=True)
def isolated_data_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for var in (DATA_ENV, *MIRROR_ENV.values()):
        monkeypatch.delenv(var, raising=False)
    for var in _PROXY_VARS:
        monkeypatch.delenv(var, raising=False)
        monkeypatch.delenv(var.upper(), raising=False)
    closed = f"http://127.0.0.1:{free_port()}/"
    for name in MIRRORS:
        monkeypatch.setitem(MIRRORS, name, (closed,))
        monkeypatch.setitem(SYSTEM_DIRS, name, ())


@pytest.fixture(name="free_port")
def free_port_fixture() -> int:
    return free_port()


@pytest.fixture
def original_system_dirs() -> dict[str, tuple[Path, ...]]:
    return ORIGINAL_SYSTEM_DIRS


def fake_split(n: int, label: int | None, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
    if label is None:
        labels = rng.integers(0, 10, size=n, dtype=np.uint8)
    else:
        labels = np.full(n, label, dtype=np.uint8)
    return images, labels


@pytest.fixture
def make_idx_dataset() -> Callable[..., dict[str, np.ndarray]]:
    """Write the four MNIST-format files into a directory; return the arrays by role.

    ``label`` fills every label with one value, to tell datasets apart; ``gz`` picks gzip or
    raw files; ``names`` overrides file names by role.
    """

    def make(
        directory: Path,
        *,
        n_train: int = 6,
        n_test: int = 4,
        label: int | None = None,
        gz: bool = True,
        seed: int = 0,
        names: dict[str, str] | None = None,
    ) -> dict[str, np.ndarray]:
        directory.mkdir(parents=True, exist_ok=True)
        train = fake_split(n_train, label, seed)
        test = fake_split(n_test, label, seed + 1)
        arrays = {
            "train_images": train[0],
            "train_labels": train[1],
            "test_images": test[0],
            "test_labels": test[1],
        }
        for role, array in arrays.items():
            name = (names or {}).get(role, IDX_FILES[role] + (".gz" if gz else ""))
            write_idx(directory / name, array, compress=gz)
        return arrays

    return make


@pytest.fixture
def mnist_files(tmp_path: Path, make_idx_dataset) -> tuple[dict[str, bytes], dict[str, np.ndarray]]:
    """The bytes of a small fake MNIST (gzip files, by file name) and its arrays, by role."""
    source = tmp_path / "served"
    arrays = make_idx_dataset(source, label=None, seed=7)
    files = {path.name: path.read_bytes() for path in sorted(source.iterdir())}
    return files, arrays


@pytest.fixture
def serve_mnist(http_server: LocalServer, mnist_files, monkeypatch: pytest.MonkeyPatch):
    """Serve the fake MNIST at ``<server>/good/`` with its checksums registered in MD5."""
    files, arrays = mnist_files
    checksums = http_server.serve_dataset("/good", files)
    monkeypatch.setitem(MD5, "mnist", checksums)
    return http_server, arrays
