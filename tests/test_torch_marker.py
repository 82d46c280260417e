"""The ``torch`` marker finds PyTorch in what a test runs (its code, its helpers, fixtures and
parameters), and a test that skips for want of PyTorch without it fails."""

from __future__ import annotations

import types

import numpy as np
import pytest

from tests import torch_marker


def _item(function, **extra):
    return types.SimpleNamespace(
        function=function, module=None, cls=None, iter_markers=lambda name: [], **extra
    )


def _helper_that_imports_torch():
    import torch  # noqa: F401


def _helper_that_does_not():
    return np.ones(2)


def test_what_a_test_runs_is_searched_for_pytorch():
    def direct():
        pytest.importorskip("torch")

    def by_submodule():
        pytest.importorskip("torch.utils.data")

    def through_a_helper():
        _helper_that_does_not()
        _helper_that_imports_torch()

    def plain():
        _helper_that_does_not()
        return "torchlight"  # a string that only starts like it

    def closure(helper=None):
        return helper

    assert torch_marker.uses_torch(_item(direct))
    assert torch_marker.uses_torch(_item(by_submodule))
    assert torch_marker.uses_torch(_item(through_a_helper))
    assert not torch_marker.uses_torch(_item(plain))
    assert not torch_marker.uses_torch(_item(closure))
    params = types.SimpleNamespace(params={"make": _helper_that_imports_torch})
    assert torch_marker.uses_torch(_item(plain, callspec=params))


def test_a_skip_for_want_of_pytorch_is_recognised():
    def report(reason):
        return types.SimpleNamespace(skipped=True, longrepr=("file.py", 3, reason))

    assert torch_marker._skipped_for_torch(report("could not import 'torch': No module named"))
    assert torch_marker._skipped_for_torch(report("Skipped: PyTorch is not installed"))
    assert not torch_marker._skipped_for_torch(report("PyTorch's trace has no bool kernel"))
    assert not torch_marker._skipped_for_torch(report("no local MNIST"))


def test_this_suite_s_pytorch_comparisons_carry_the_marker(request):
    pytest.importorskip("torch")
    assert request.node.get_closest_marker("torch") is not None
