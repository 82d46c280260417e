"""Every in-process test starts without a process group and without launcher variables, and
leaves no process group behind."""

from __future__ import annotations

import os

import pytest

import tensorgrad.distributed as dist

_LAUNCHER_PREFIXES = ("PMI_", "PMIX_", "OMPI_", "MV2_", "SLURM_", "TENSORGRAD_DIST")


@pytest.fixture(autouse=True)
def no_process_group(monkeypatch: pytest.MonkeyPatch):
    for name in list(os.environ):
        if name.startswith(_LAUNCHER_PREFIXES):
            monkeypatch.delenv(name)
    assert not dist.is_initialized()
    yield
    if dist.is_initialized():
        dist.destroy_process_group()
