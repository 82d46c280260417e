"""The training command: end to end on the digits, on real MNIST when present, and its errors."""

from __future__ import annotations

import io
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import cli
from tensorgrad.training import Recipe, build_model, confusion_matrix, train

ROOT = Path(__file__).resolve().parents[2]
SHARED_DATA = ROOT.parent / "shared" / "data"


def closed_port_url() -> str:
    """A loopback URL nothing listens on: downloads fail at once, offline-style."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/"


@pytest.fixture
def offline(tmp_path, monkeypatch):
    """No MNIST anywhere and no network: an empty data dir, cache and mirrors that refuse."""
    monkeypatch.setenv("TENSORGRAD_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("TENSORGRAD_MNIST_MIRROR", closed_port_url())
    monkeypatch.setenv("TENSORGRAD_FASHION_MNIST_MIRROR", closed_port_url())
    return tmp_path


def test_default_recipe_on_digits_reaches_97_percent():
    out = io.StringIO()
    result = train(Recipe(dataset="digits"), out=out, progress=False)
    assert result["test_acc"] >= 0.97, out.getvalue()
    log = out.getvalue()
    assert f"epoch {Recipe.epochs}/{Recipe.epochs}" in log and "done: test accuracy" in log


def test_same_seed_same_accuracy():
    recipe = Recipe(dataset="digits", hidden=(64,), epochs=2, seed=3)
    first = train(recipe, out=io.StringIO(), progress=False)["history"]
    second = train(recipe, out=io.StringIO(), progress=False)["history"]
    for key in ("train_loss", "train_acc", "test_loss", "test_acc"):
        assert [row[key] for row in first] == [row[key] for row in second], key


def test_auto_falls_back_to_digits_and_says_why(offline):
    out = io.StringIO()
    result = train(Recipe(dataset="auto", hidden=(32,), epochs=1), out=out, progress=False)
    assert result["dataset"] == "digits"
    log = out.getvalue()
    assert log.startswith("notice: Using scikit-learn's 8x8 digits dataset instead of MNIST.")
    assert str(offline / "data") in log  # where it looked


def test_cli_train_save_and_evaluate(tmp_path, capsys):
    checkpoint = tmp_path / "model.npz"
    plot = tmp_path / "curve.png"
    status = cli.main(
        [
            "train", "--dataset", "digits", "--hidden", "64", "--epochs", "3",
            "--save", str(checkpoint), "--plot", str(plot), "--no-progress",
        ]
    )  # fmt: skip
    assert status == 0
    assert checkpoint.exists()
    output = capsys.readouterr().out
    assert "epoch  3/3" in output and "saved the model" in output
    pytest.importorskip("matplotlib")
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    assert cli.main(["evaluate", "--checkpoint", str(checkpoint)]) == 0
    report = capsys.readouterr().out
    assert "digits test set: 360 images" in report
    assert "rows: true class, columns: predicted class" in report


def test_evaluated_accuracy_matches_the_trained_model(tmp_path, capsys):
    checkpoint = tmp_path / "m.npz"
    cli.main(["train", "--dataset", "digits", "--hidden", "32", "--epochs", "2",
              "--save", str(checkpoint), "--no-progress"])  # fmt: skip
    trained = float(capsys.readouterr().out.split("done: test accuracy ")[1].split("%")[0])
    cli.main(["evaluate", "--checkpoint", str(checkpoint)])
    report = capsys.readouterr().out
    evaluated = float(report.split("accuracy ")[1].split("%")[0])
    assert evaluated == trained


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "--epochs", "0"], "expected a positive integer"),
        (["train", "--epochs", "many"], "expected a positive integer"),
        (["train", "--dataset", "cifar"], "invalid choice: 'cifar'"),
        (["train", "--hidden", "12,x"], "expected layer widths separated by commas"),
        (["train", "--lr", "-1"], "expected a positive number"),
        (["train", "--dropout", "1.5"], "expected a number in [0, 1)"),
        (["evaluate"], "the following arguments are required: --checkpoint"),
        (["fly"], "invalid choice: 'fly'"),
    ],
)
def test_bad_arguments_give_usage_and_exit_2(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "usage: tensorgrad" in err and message in err
    assert "Traceback" not in err


def test_missing_checkpoint_and_dataset_errors_are_one_line(tmp_path, offline):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    missing = subprocess.run(
        [sys.executable, "-m", "tensorgrad", "evaluate", "--checkpoint", str(tmp_path / "no.npz")],
        capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert missing.returncode == 1
    assert missing.stderr.startswith("tensorgrad: error:") and "Traceback" not in missing.stderr
    not_found = subprocess.run(
        [sys.executable, "-m", "tensorgrad", "train", "--dataset", "mnist", "--epochs", "1"],
        capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert not_found.returncode == 1
    assert "Traceback" not in not_found.stderr
    assert "TENSORGRAD_DATA" in not_found.stderr


def test_confusion_matrix_counts():
    labels = np.array([0, 0, 1, 2, 2, 2])
    predicted = np.array([0, 1, 1, 2, 0, 2])
    np.testing.assert_array_equal(
        confusion_matrix(labels, predicted, 3), [[1, 1, 0], [0, 1, 0], [1, 0, 2]]
    )


def test_model_state_dict_loads_into_the_same_architecture():
    tg.manual_seed(0)
    model = build_model(64, (16, 8), 10, dropout=0.1)
    assert [k for k in model.state_dict()] == [
        "0.weight", "0.bias", "3.weight", "3.bias", "6.weight", "6.bias",
    ]  # fmt: skip


@pytest.mark.skipif(
    not (SHARED_DATA / "mnist" / "train-images-idx3-ubyte.gz").exists()
    and not os.environ.get("TENSORGRAD_DATA"),
    reason="MNIST files not present on this machine",
)
def test_real_mnist_reaches_97_percent(monkeypatch):
    if not os.environ.get("TENSORGRAD_DATA"):
        monkeypatch.setenv("TENSORGRAD_DATA", str(SHARED_DATA))
    out = io.StringIO()
    recipe = Recipe(dataset="mnist", hidden=(256,), epochs=2, download=False, seed=0)
    result = train(recipe, out=out, progress=False)
    assert result["dataset"] == "mnist"
    assert result["test_acc"] >= 0.97, out.getvalue()


def test_progress_bar_shows_loss_and_rate_and_clears_itself():
    from tensorgrad.training import ProgressBar

    stream = io.StringIO()
    bar = ProgressBar(total=100, stream=stream, enabled=True)
    bar.update(100, 0.25)
    shown = stream.getvalue()
    assert "100/100" in shown and "loss 0.2500" in shown and "samples/s" in shown
    bar.close()
    assert stream.getvalue().endswith("\r")
    quiet = io.StringIO()
    ProgressBar(total=10, stream=quiet, enabled=False).update(10, 1.0)
    assert quiet.getvalue() == ""


@pytest.mark.slow
@pytest.mark.skipif(
    not (SHARED_DATA / "mnist" / "train-images-idx3-ubyte.gz").exists()
    and not os.environ.get("TENSORGRAD_DATA"),
    reason="MNIST files not present on this machine",
)
def test_default_recipe_reaches_98_percent_on_mnist(monkeypatch):
    """The README's headline number (about two minutes on two cores; `make test-slow`)."""
    if not os.environ.get("TENSORGRAD_DATA"):
        monkeypatch.setenv("TENSORGRAD_DATA", str(SHARED_DATA))
    out = io.StringIO()
    result = train(Recipe(dataset="mnist", download=False), out=out, progress=False)
    assert result["test_acc"] >= 0.98, out.getvalue()
