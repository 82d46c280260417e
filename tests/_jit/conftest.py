"""What the kernel tests share: a spy on the kernels that ran."""

from __future__ import annotations

import pytest

from tensorgrad import _jit


@pytest.fixture
def ran(monkeypatch):
    """The names of the kernels that ran (returned a result) since the test began."""
    names: list[str] = []
    real = _jit.run

    def spy(name, *args):
        result = real(name, *args)
        if result is not None:
            names.append(name)
        return result

    monkeypatch.setattr(_jit, "run", spy)
    monkeypatch.setattr(_jit, "ENABLED", True)
    return names
