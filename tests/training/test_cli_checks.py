"""The command line refuses what cannot work before it trains, and says so in one line."""

from __future__ import annotations

import json
import os
import zipfile

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import cli
from tensorgrad.training import report

FAST = ["train", "--dataset", "digits", "--hidden", "8", "--epochs", "1", "--no-progress"]


def usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "usage: tensorgrad" in err and "Traceback" not in err
    return err


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--weight-decay", "-1", "expected a number >= 0, got '-1'"),
        ("--weight-decay", "nan", "expected a number >= 0, got 'nan'"),
        ("--seed", "-1", "expected an integer from 0 to 2**63 - 1, got '-1'"),
        ("--seed", str(2**64), "expected an integer from 0 to 2**63 - 1"),
        ("--hidden", "", "or 'none' for no hidden layer; got ''"),
        ("--hidden", "64,,32", "expected layer widths separated by commas"),
        ("--save", "", "expected a file name, got ''"),
        ("--checkpoint", "", "expected a file name, got ''"),
        ("--checkpoint-every", "0", "expected a positive integer"),
        ("--plot", "curve.txt", "expected an image file name ending in .png"),
        ("--plot", "curve", "expected an image file name ending in .png"),
        ("--model", "resnet", "invalid choice: 'resnet'"),
        ("--shift", "-1", "expected an integer >= 0, got '-1'"),
    ],
)
def test_bad_option_values_are_usage_errors(option, value, message, capsys):
    err = usage_error([*FAST, option, value], capsys)
    assert f"argument {option}" in err and message in err


def test_output_paths_are_checked_before_training(tmp_path, capsys):
    (tmp_path / "adir").mkdir()
    cases = [
        ("--save", str(tmp_path / "adir"), "is a directory"),
        ("--save", str(tmp_path / "adir") + "/", "is a directory"),
        ("--checkpoint", str(tmp_path / "adir"), "is a directory"),
        ("--save", str(tmp_path / "missing" / "m.npz"), "does not exist"),
        ("--plot", "/nonexistent/p.png", "the directory /nonexistent does not exist"),
        ("--save", "/proc/m.npz", "cannot create files in /proc"),
    ]
    for option, path, message in cases:
        err = usage_error([*FAST, option, path], capsys)
        assert message in err, (option, path, err)
        assert "epoch" not in capsys.readouterr().out  # nothing trained
    assert sorted(os.listdir(tmp_path)) == ["adir"] and os.listdir(tmp_path / "adir") == []


def test_two_outputs_on_one_file_are_refused(tmp_path, capsys):
    same = str(tmp_path / "x.npz")
    err = usage_error([*FAST, "--save", same, "--checkpoint", same], capsys)
    assert "--save and --checkpoint name one file" in err
    err = usage_error([*FAST, "--checkpoint-every", "5"], capsys)
    assert "--checkpoint-every needs --checkpoint FILE" in err


def test_plot_without_matplotlib_is_refused_up_front(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(report, "matplotlib_missing", lambda: True)
    monkeypatch.setattr("tensorgrad.training.commands.matplotlib_missing", lambda: True)
    err = usage_error([*FAST, "--plot", str(tmp_path / "c.png")], capsys)
    assert "needs matplotlib" in err


def test_hidden_none_is_a_linear_model(capsys):
    assert cli.main([*FAST, "--hidden", "none"]) == 0
    assert "model mlp 64-10 (650 parameters)" in capsys.readouterr().out


def test_detect_anomaly_without_the_engine_support_is_a_clear_usage_error(capsys, monkeypatch):
    monkeypatch.delattr(tg.autograd, "detect_anomaly", raising=False)
    err = usage_error([*FAST, "--detect-anomaly"], capsys)
    assert "needs tg.autograd.detect_anomaly()" in err


# ----------------------------------------------------------------------------- evaluate
def evaluate(path, capsys) -> tuple[int, str]:
    status = cli.main(["evaluate", "--checkpoint", str(path)])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return status, err


@pytest.fixture
def saved_model(tmp_path, capsys):
    path = tmp_path / "m.npz"
    assert cli.main([*FAST, "--save", str(path)]) == 0
    capsys.readouterr()
    return path


def test_evaluate_a_directory_is_a_clear_error(tmp_path, capsys):
    status, err = evaluate(tmp_path, capsys)
    assert status == 1 and f"tensorgrad: error: {tmp_path} is a directory" in err


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda c: c.pop("mean"), "'mean' is missing"),
        (lambda c: c.update(std=0.0), "'std' must be a positive number, got 0.0"),
        (lambda c: c.update(hidden=[8, -1]), "'hidden' must be a list of positive integers"),
        (lambda c: c.update(in_features="64"), "'in_features' must be a positive integer"),
        (lambda c: c.update(model="transformer"), "'model' 'transformer' is not one of mlp"),
        (lambda c: c.update(hidden=[9]), "the weights do not fit the model its config"),
        (lambda c: c.update(num_classes=3), "the weights do not fit the model its config"),
    ],
)
def test_evaluate_refuses_a_bad_config_clearly(saved_model, capsys, change, message):
    state = tg.load(saved_model)
    change(state["config"])
    tg.save(state, saved_model)
    status, err = evaluate(saved_model, capsys)
    assert status == 1 and err.startswith(f"tensorgrad: error: {saved_model}") and message in err


def test_evaluate_refuses_a_config_that_is_not_a_mapping(saved_model, capsys):
    tg.save({"model": tg.load(saved_model)["model"], "config": [1, 2]}, saved_model)
    status, err = evaluate(saved_model, capsys)
    assert status == 1 and "its 'config' is missing or not a mapping" in err
    tg.save([1, 2], saved_model)
    status, err = evaluate(saved_model, capsys)
    assert status == 1 and "not a model written by `tensorgrad train --save`" in err


def test_evaluate_reads_a_training_checkpoint_and_old_save_files(tmp_path, saved_model, capsys):
    checkpoint = tmp_path / "c.npz"
    assert cli.main([*FAST, "--checkpoint", str(checkpoint)]) == 0
    capsys.readouterr()
    assert cli.main(["evaluate", "--checkpoint", str(checkpoint)]) == 0
    assert "digits test set: 360 images" in capsys.readouterr().out
    state = tg.load(saved_model)  # a file from before --model: no 'model' or 'image_shape'
    for key in ("model", "image_shape"):
        del state["config"][key]
    tg.save(state, saved_model)
    assert cli.main(["evaluate", "--checkpoint", str(saved_model)]) == 0


def test_evaluate_a_corrupt_file_names_it(saved_model, capsys):
    data = bytearray(saved_model.read_bytes())
    data[100] ^= 1
    saved_model.write_bytes(bytes(data))
    status, err = evaluate(saved_model, capsys)
    assert status == 1 and f"{saved_model}: a PyTorch checkpoint, but truncated or corrupt" in err


def test_resume_from_a_bad_file_is_a_clear_error(tmp_path, saved_model, capsys):
    status = cli.main([*FAST, "--resume", str(saved_model)])
    err = capsys.readouterr().err
    assert status == 1 and "a model saved by --save, not a training checkpoint" in err
    status = cli.main([*FAST, "--resume", str(tmp_path / "none.npz")])
    err = capsys.readouterr().err
    assert status == 1 and "No such file" in err and "Traceback" not in err
    plain = tmp_path / "plain.npz"
    with zipfile.ZipFile(plain, "w") as archive, archive.open("__tensorgrad__.npy", "w") as f:
        text = json.dumps({"format": "tensorgrad.checkpoint", "version": 1, "root": ["none"]})
        np.lib.format.write_array(f, np.frombuffer(text.encode(), dtype=np.uint8))
    status = cli.main([*FAST, "--resume", str(plain)])
    assert status == 1 and "not a usable training checkpoint" in capsys.readouterr().err
