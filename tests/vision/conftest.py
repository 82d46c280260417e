"""Fixtures for the vision tests: an isolated data environment and a local HTTP server.

Nothing here reads the user's data or leaves 127.0.0.1: the cache and home directories are
inside the test's ``tmp_path``, the data and mirror variables are unset, system-wide copies
are not searched, and the datasets' default mirrors point at a closed port.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tensorgrad.data import DATA_ENV, MIRROR_ENV, SYSTEM_DIRS
from tensorgrad.vision import datasets
from tests.vision.helpers import closed_port_url


@pytest.fixture(autouse=True)
def isolated_data_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for var in (DATA_ENV, *MIRROR_ENV.values()):
        monkeypatch.delenv(var, raising=False)
    for var in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(var, raising=False)
        monkeypatch.delenv(var.upper(), raising=False)
    closed = closed_port_url()
    for cls in (datasets.MNIST, datasets.FashionMNIST):
        monkeypatch.setattr(cls, "mirrors", [closed])
    # a system-wide copy (Debian's dataset-fashion-mnist) must not stand in for the test's
    for name in list(SYSTEM_DIRS):
        monkeypatch.setitem(SYSTEM_DIRS, name, ())
