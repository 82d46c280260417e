"""The JIT's switch, its lazy import, its cache and its fallback when a kernel fails."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

from tensorgrad import _jit
from tensorgrad.ops.activation import Gelu


def run_python(code: str, **env: str) -> str:
    environment = {**os.environ, **env}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=environment, check=True
    )
    return done.stdout.strip()


def test_import_tensorgrad_does_not_import_numba():
    assert run_python("import sys, tensorgrad; print('numba' in sys.modules)") == "False"


def test_the_environment_variable_switches_it_off():
    code = "from tensorgrad import _jit; print(_jit.ENABLED)"
    assert run_python(code, TENSORGRAD_JIT="0") == "False"


def test_the_cache_directory_follows_its_environment_variables(monkeypatch, tmp_path):
    monkeypatch.setenv("TENSORGRAD_JIT_CACHE", str(tmp_path / "here"))
    assert _jit.cache_dir() == tmp_path / "here"
    monkeypatch.delenv("TENSORGRAD_JIT_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert _jit.cache_dir() == tmp_path / "tensorgrad" / "numba"


def test_kernels_compile_into_the_cache_directory(tmp_path):
    pytest.importorskip("numba")
    code = (
        "import numpy as np, sys; from tensorgrad.ops.activation import Gelu; "
        "Gelu('tanh').forward(np.ones(3)); print('numba' in sys.modules)"
    )
    assert run_python(code, TENSORGRAD_JIT_CACHE=str(tmp_path), TENSORGRAD_JIT="1") == "True"
    assert list(tmp_path.rglob("*.nbi")), "no numba index file in the cache directory"


def test_a_failing_kernel_warns_once_and_the_op_runs_numpy(monkeypatch):
    calls = []

    def broken(*args):
        calls.append(args)
        raise TypeError("cannot compile this here")

    monkeypatch.setattr(_jit, "ENABLED", True)
    monkeypatch.setattr(_jit, "_kernels", {"gelu_tanh_forward": broken})
    x = np.linspace(-3, 3, 7)
    with pytest.warns(RuntimeWarning, match="gelu_tanh_forward failed.*TypeError") as caught:
        first = Gelu("tanh").forward(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        second = Gelu("tanh").forward(x)
    assert len(caught) == 1 and len(calls) == 1  # not tried again
    monkeypatch.setattr(_jit, "ENABLED", False)
    np.testing.assert_array_equal(first, Gelu("tanh").forward(x))
    np.testing.assert_array_equal(second, first)


def test_a_kernel_that_fails_for_one_dtype_still_runs_for_another(monkeypatch):
    def float32_only(x):
        if x.dtype != np.float32:
            raise TypeError("no such signature")
        return "fused", x.dtype

    monkeypatch.setattr(_jit, "ENABLED", True)
    monkeypatch.setattr(_jit, "_kernels", {"gelu_tanh_forward": float32_only})
    monkeypatch.setattr(_jit, "_failed", set())
    with pytest.warns(RuntimeWarning, match="gelu_tanh_forward failed"):
        assert _jit.run("gelu_tanh_forward", np.ones(2)) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _jit.run("gelu_tanh_forward", np.ones(2)) is None  # float64: not tried again
        assert _jit.run("gelu_tanh_forward", np.ones(2, np.float32)) == ("fused", np.float32)


def test_dtypes_numba_does_not_compile_run_numpy_quietly_and_leave_the_kernels_on(monkeypatch, ran):
    """float16 logits once took the cross-entropy kernels away from every later float32 call
    (and warned that they had failed)."""
    pytest.importorskip("numba")
    from tensorgrad.ops.loss import CrossEntropy

    monkeypatch.setattr(_jit, "_failed", set())
    target = np.array([0, 2, 1])
    logits = np.linspace(-2, 2, 12).reshape(3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for dtype in (np.float16, np.longdouble, np.float32):
            op, x = CrossEntropy(target, "mean", 0.1), logits.astype(dtype)
            op.backward(np.array(1.0, dtype), op.forward(x), x)
    assert ran == ["log_softmax_rows", "cross_entropy_backward"]  # the float32 call's
    assert not _jit._failed


def test_numba_that_cannot_be_imported_warns_and_falls_back(monkeypatch):
    monkeypatch.setattr(_jit, "ENABLED", True)
    monkeypatch.setattr(_jit, "_kernels", {})
    monkeypatch.setitem(sys.modules, "tensorgrad._jit.kernels", None)  # import fails
    monkeypatch.delattr(_jit, "kernels", raising=False)  # (where an earlier test imported it)
    x = np.linspace(-3, 3, 7)
    with pytest.warns(RuntimeWarning, match="ModuleNotFoundError") as caught:
        out = Gelu("tanh").forward(x)
        Gelu("none").forward(x)  # another kernel: no second warning
    assert len(caught) == 1 and not _jit.ENABLED
    monkeypatch.setattr(_jit, "ENABLED", False)
    np.testing.assert_array_equal(out, Gelu("tanh").forward(x))


def test_off_runs_no_kernel(monkeypatch):
    monkeypatch.setattr(_jit, "ENABLED", False)
    monkeypatch.setattr(_jit, "_kernels", {})
    assert _jit.run("gelu_tanh_forward", np.ones(2)) is None
    assert _jit._kernels == {}
