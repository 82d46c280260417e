"""The examples run as a user would run them (on the digits, so that they are quick)."""

from __future__ import annotations

import math
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
    assert (tmp_path / "mnist_mlp.pt").exists()


def test_train_mnist_cnn_example_on_digits(tmp_path):
    """The CNN example on 8×8 digits (its layers work for any size divisible by 4)."""
    result = run_example("train_mnist_cnn.py", "--dataset", "digits", "--epochs", "3", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("epoch 1:") and "test accuracy" in lines[0]
    accuracy = float(lines[2].split("test accuracy ")[1].split("%")[0])
    assert accuracy > 75.0
    assert lines[-1] == "saved mnist_cnn.pt" and (tmp_path / "mnist_cnn.pt").exists()


def test_char_gpt_example_trains_and_samples(tmp_path):
    """The character-level GPT, tiny: on scikit-learn's dataset descriptions (the default
    text), the loss falls from about log(vocabulary) and a sample of the asked length comes
    out."""
    result = run_example(
        "char_gpt.py", "--steps", "40", "--eval-every", "20", "--eval-batches", "2",
        "--block-size", "16", "--batch-size", "8", "--n-embd", "32", "--sample-chars", "40",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    vocabulary = int(lines[0].split(" characters, ")[1].split()[0])
    steps = [line for line in lines if line.startswith("step ")]
    assert [s.split(":")[0] for s in steps] == ["step 20", "step 40"]
    first_val = float(steps[0].split("val loss ")[1].split(",")[0])
    last_train = float(steps[-1].split("train loss ")[1].split(",")[0])
    assert last_train < math.log(vocabulary) and first_val < math.log(vocabulary) + 0.5
    sample = result.stdout.split("--- sample (temperature 0.8, top-k 10) ---\n")[1]
    assert len(sample.rsplit("\ntrained ", 1)[0]) == 40
    assert lines[-1].startswith("trained 40 steps in ")
