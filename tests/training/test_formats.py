"""The command line's ways out of tensorgrad: ``train --save model.safetensors`` and
``evaluate`` of it, ``train --tensorboard DIR``, ``export --onnx`` (on the digits, small)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tensorgrad import cli
from tensorgrad.serialization import CheckpointError

TRAIN = ["train", "--dataset", "digits", "--hidden", "16", "--epochs", "1", "--no-progress"]


def accuracy(text: str, marker: str) -> float:
    return float(text.split(marker)[1].split("%")[0])


def test_save_and_evaluate_a_safetensors_model(tmp_path, capsys):
    pytest.importorskip("safetensors")
    from tensorgrad.safetensors import load_file, load_metadata

    path = tmp_path / "model.safetensors"
    assert cli.main([*TRAIN, "--save", str(path)]) == 0
    trained = accuracy(capsys.readouterr().out, "done: test accuracy ")
    weights = load_file(path)
    assert sorted(weights) == ["0.bias", "0.weight", "3.bias", "3.weight"]
    config = json.loads(load_metadata(path)["tensorgrad.config"])
    assert config["model"] == "mlp" and config["hidden"] == [16]
    assert cli.main(["evaluate", "--checkpoint", str(path)]) == 0
    assert accuracy(capsys.readouterr().out, "accuracy ") == trained

    from tensorgrad.safetensors import save_file

    foreign = tmp_path / "foreign.safetensors"
    save_file(weights, foreign)  # weights without tensorgrad's config
    assert cli.main(["evaluate", "--checkpoint", str(foreign)]) == 1
    assert "without tensorgrad's model config" in capsys.readouterr().err
    (tmp_path / "bad.safetensors").write_bytes(path.read_bytes()[:100])
    assert cli.main(["evaluate", "--checkpoint", str(tmp_path / "bad.safetensors")]) == 1
    assert "bad.safetensors: " in capsys.readouterr().err


def test_a_safetensors_model_loads_into_pytorch(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    pytest.importorskip("safetensors")
    import safetensors.torch

    from tensorgrad.training.evaluate import model_from_file

    path = tmp_path / "model.safetensors"
    assert cli.main([*TRAIN, "--hidden", "16,8", "--save", str(path)]) == 0
    capsys.readouterr()
    model, _ = model_from_file(str(path))
    model.eval()
    twin = torch.nn.Sequential(
        torch.nn.Linear(64, 16), torch.nn.ReLU(), torch.nn.Dropout(),
        torch.nn.Linear(16, 8), torch.nn.ReLU(), torch.nn.Dropout(), torch.nn.Linear(8, 10),
    ).eval()  # fmt: skip
    twin.load_state_dict(safetensors.torch.load_file(str(path)))
    x = np.random.default_rng(0).standard_normal((4, 64)).astype(np.float32)
    import tensorgrad as tg

    with tg.no_grad(), torch.no_grad():
        np.testing.assert_allclose(
            twin(torch.from_numpy(x)).numpy(), model(tg.tensor(x)).numpy(), atol=1e-5
        )


def test_tensorboard_logs_loss_accuracy_and_learning_rate_per_step(tmp_path, capsys):
    pytest.importorskip("tensorboard")
    from tests.utils.test_tensorboard import read

    logs = tmp_path / "logs"
    assert cli.main([*TRAIN, "--epochs", "2", "--tensorboard", str(logs)]) == 0
    capsys.readouterr()
    run = read(logs)
    steps = 2 * 12  # 1437 digits in batches of 128
    for tag in ("train/loss", "train/accuracy", "train/lr"):
        assert [e.step for e in run.Scalars(tag)] == list(range(1, steps + 1)), tag
    lrs = [e.value for e in run.Scalars("train/lr")]
    assert lrs[0] < max(lrs) and lrs[-1] < max(lrs)  # the one-cycle schedule
    assert all(0 <= e.value <= 1 for e in run.Scalars("train/accuracy"))
    assert [e.step for e in run.Scalars("test/accuracy")] == [12, 24]


def test_a_resumed_run_logs_on_from_its_checkpoint(tmp_path, capsys):
    pytest.importorskip("tensorboard")
    import shutil

    from tests.utils.test_tensorboard import read

    logs, checkpoint, early = tmp_path / "logs", tmp_path / "run.ckpt", tmp_path / "early.ckpt"
    assert cli.main([*TRAIN, "--tensorboard", str(logs), "--checkpoint", str(checkpoint)]) == 0
    shutil.copy(checkpoint, early)  # the checkpoint after step 12
    resume = ["train", "--epochs", "2", "--no-progress", "--resume"]
    assert cli.main([*resume, str(checkpoint)]) == 0  # keeps --tensorboard: steps 13-24
    # as if that run had crashed and restarted from the earlier checkpoint: 13-24 again
    assert cli.main([*resume, str(early), "--checkpoint", str(checkpoint)]) == 0
    capsys.readouterr()
    loss = read(logs).Scalars("train/loss")
    assert [e.step for e in loss] == list(range(1, 25))  # the first 13-24 purged, not doubled
    assert [e.step for e in read(logs).Scalars("test/accuracy")] == [12, 24]


def test_export_a_trained_classifier_to_onnx(tmp_path, capsys):
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    import tensorgrad as tg
    from tensorgrad.data import load_dataset
    from tensorgrad.training.data import standardise
    from tensorgrad.training.evaluate import model_from_file

    for model_args in ([], ["--model", "cnn", "--hidden", "4", "--batch-size", "256"]):
        saved, exported = tmp_path / "model.npz", tmp_path / "model.onnx"
        assert cli.main([*TRAIN, *model_args, "--save", str(saved)]) == 0
        assert cli.main(["export", "--checkpoint", str(saved), "--onnx", str(exported)]) == 0
        out = capsys.readouterr().out
        assert f"to {exported}: input 'images'" in out and "output 'logits' Nx10" in out
        proto = onnx.load(exported)
        props = {p.key: p.value for p in proto.metadata_props}
        model, config = model_from_file(str(saved))
        assert float(props["mean"]) == config["mean"] and json.loads(props["classes"])[0] == "0"
        data = load_dataset("digits")
        images = standardise(data.test_images[:50], config["mean"], config["std"])
        images = images[:, None] if model_args else images.reshape(50, -1)
        session = ort.InferenceSession(str(exported), providers=["CPUExecutionProvider"])
        (logits,) = session.run(None, {"images": images})
        with tg.no_grad():
            np.testing.assert_allclose(
                logits, model.eval()(tg.tensor(images)).numpy(), rtol=1e-5, atol=1e-5
            )


def test_export_errors_are_one_line(tmp_path, capsys):
    (tmp_path / "junk.npz").write_bytes(b"junk")
    status = cli.main(["export", "--checkpoint", str(tmp_path / "junk.npz"), "--onnx",
                       str(tmp_path / "m.onnx")])  # fmt: skip
    assert status == 1
    err = capsys.readouterr().err
    assert err.startswith("tensorgrad: error:") and "junk.npz" in err
    assert not (tmp_path / "m.onnx").exists()
    with pytest.raises(SystemExit):
        cli.main(["export", "--checkpoint", "x.npz"])
    assert "--onnx" in capsys.readouterr().err
    assert issubclass(CheckpointError, ValueError)
