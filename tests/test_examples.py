"""The examples run as a user would run them (on the digits, so that they are quick)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_example(name: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, str(ROOT / "examples" / name), *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def test_train_mnist_example_on_digits(tmp_path):
    result = run_example("train_mnist.py", "--dataset", "digits", "--epochs", "3", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("epoch 1:") and "test accuracy" in lines[0]
    accuracy = float(lines[2].split("test accuracy ")[1].split("%")[0])
    assert accuracy > 80.0
    assert (tmp_path / "mnist_mlp.npz").exists()


def test_train_mnist_cnn_example_on_digits(tmp_path):
    """The CNN example on 8×8 digits (its layers work for any size divisible by 4)."""
    result = run_example("train_mnist_cnn.py", "--dataset", "digits", "--epochs", "3", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("epoch 1:") and "test accuracy" in lines[0]
    accuracy = float(lines[2].split("test accuracy ")[1].split("%")[0])
    assert accuracy > 75.0
    assert lines[-1] == "saved mnist_cnn.npz" and (tmp_path / "mnist_cnn.npz").exists()
