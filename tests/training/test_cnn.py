"""``tensorgrad train --model cnn``: the CNN's recipe and layers, the random shifts, saving,
evaluating and resuming bit for bit (on the digits, with a tiny network); the MNIST and
Fashion-MNIST recipes as slow tests."""

from __future__ import annotations

import dataclasses
import io
import os
from pathlib import Path

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import cli
from tensorgrad.training import Recipe, TrainingStopped, evaluate_checkpoint, loop, train
from tensorgrad.training import checkpoint as ckpt
from tensorgrad.training.data import random_shift, shift_generator
from tensorgrad.training.models import CNN_FEATURES, build_cnn
from tests.training.test_resume import StopAt, assert_same_history, assert_same_weights, weights

ROOT = Path(__file__).resolve().parents[2]
SHARED_DATA = ROOT.parent / "shared" / "data"
FAST = Recipe.for_model("cnn", dataset="digits", hidden=(4, 8), epochs=2, batch_size=64, seed=1)


def run(recipe=FAST, **kwargs):
    kwargs.setdefault("out", io.StringIO())
    kwargs.setdefault("progress", False)
    return train(recipe, **kwargs)


# ----------------------------------------------------------------------------- the recipe
def test_each_model_has_its_own_defaults():
    cnn = Recipe.for_model("cnn")
    assert cnn.model == "cnn" and cnn.hidden == (32, 64) and cnn.shift == 2
    assert Recipe.for_model("mlp") == Recipe()
    assert Recipe().shift == 0  # the MLP's recipe does not shift
    changed = Recipe.for_model("cnn", epochs=1, hidden=(8,))
    assert (changed.epochs, changed.hidden, changed.lr) == (1, (8,), cnn.lr)
    with pytest.raises(ValueError, match="unknown model 'resnet'; choose from mlp, cnn"):
        Recipe.for_model("resnet")


@pytest.mark.parametrize("shift", [-1, 1.5, True])
def test_a_bad_shift_is_refused(shift):
    with pytest.raises(ValueError, match=f"Recipe.shift must be an integer >= 0, got {shift!r}"):
        dataclasses.replace(FAST, shift=shift).check()


def test_the_command_line_takes_the_models_defaults_then_the_options_given(monkeypatch):
    seen = []
    monkeypatch.setattr(loop, "train", lambda recipe, **kwargs: seen.append(recipe))
    assert cli.main(["train", "--model", "cnn", "--epochs", "3", "--dataset", "digits"]) == 0
    assert cli.main(["train", "--dataset", "digits"]) == 0
    assert cli.main(["train", "--model", "cnn", "--shift", "0", "--hidden", "8,16"]) == 0
    expected = [
        Recipe.for_model("cnn", epochs=3, dataset="digits"),
        Recipe(dataset="digits"),
        Recipe.for_model("cnn", shift=0, hidden=(8, 16)),
    ]
    assert seen == expected


def test_the_help_says_what_the_cnn_changes(capsys):
    with pytest.raises(SystemExit):
        cli.main(["train", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "cnn trains with --hidden 32,64" in text and "--shift 2" in text


# ----------------------------------------------------------------------------- the network
def test_build_cnn_layers_and_shapes():
    model = build_cnn((1, 28, 28), (32, 64), 10, 0.25)
    kinds = [type(m).__name__ for m in model]
    block = ["Conv2d", "MaxPool2d", "BatchNorm2d", "ReLU"]
    assert kinds == [*block, *block, "Flatten", "Dropout", "Linear", "ReLU", "Linear"]
    assert model[0].bias is None and model[10].in_features == 64 * 7 * 7
    assert model(tg.zeros(3, 1, 28, 28)).shape == (3, 10)
    # small images: blocks stop pooling at 1×1
    tiny = build_cnn((1, 8, 8), (4, 4, 4, 4), 10, 0.0)
    assert "Dropout" not in [type(m).__name__ for m in tiny]
    assert sum(type(m).__name__ == "MaxPool2d" for m in tiny) == 3
    assert tiny(tg.zeros(2, 1, 8, 8)).shape == (2, 10)
    assert build_cnn((3, 5, 5), (), 4, 0.0)(tg.zeros(2, 3, 5, 5)).shape == (2, 4)


def test_build_cnn_state_dict_loads_into_the_same_torch_network():
    torch = pytest.importorskip("torch")
    tg.manual_seed(0)
    model = build_cnn((1, 12, 12), (4, 6), 10, 0.25)
    nn = torch.nn
    reference = nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1, bias=False), nn.MaxPool2d(2), nn.BatchNorm2d(4), nn.ReLU(),
        nn.Conv2d(4, 6, 3, padding=1, bias=False), nn.MaxPool2d(2), nn.BatchNorm2d(6), nn.ReLU(),
        nn.Flatten(), nn.Dropout(0.25),
        nn.Linear(6 * 3 * 3, CNN_FEATURES), nn.ReLU(), nn.Linear(CNN_FEATURES, 10),
    ).double()  # fmt: skip
    x = np.random.default_rng(0).standard_normal((5, 1, 12, 12))
    model.double().train()
    model(tg.tensor(x))  # moves the running statistics away from their start
    state = {k: torch.from_numpy(np.asarray(v.numpy())) for k, v in model.state_dict().items()}
    reference.load_state_dict(state)
    model.eval()
    reference.eval()
    expected = reference(torch.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(model(tg.tensor(x)).numpy(), expected, rtol=1e-10, atol=1e-12)


# ----------------------------------------------------------------------------- random shifts
def shifted_by_hand(image: np.ndarray, down: int, right: int, fill: float) -> np.ndarray:
    """``image`` (H, W) moved ``down`` rows down and ``right`` columns right (negative: up,
    left), the pixels moved in set to ``fill``."""
    h, w = image.shape
    out = np.full_like(image, fill)
    rows = slice(max(down, 0), h + min(down, 0))
    columns = slice(max(right, 0), w + min(right, 0))
    out[rows, columns] = image[max(-down, 0) : h - max(down, 0), max(-right, 0) : w - max(right, 0)]
    return out


@pytest.mark.parametrize("shift", [1, 2, 3])
def test_random_shift_moves_each_image_by_up_to_shift_pixels(shift):
    rng = np.random.default_rng(shift)
    images = rng.standard_normal((600, 1, 6, 7)).astype(np.float32)
    moved = random_shift(images, (6, 7), shift, -0.5, shift_generator(0, 5))
    assert moved.shape == images.shape and moved.dtype == images.dtype
    offsets = set()
    for before, after in zip(images[:, 0], moved[:, 0]):
        matches = [
            (down, right)
            for down in range(-shift, shift + 1)
            for right in range(-shift, shift + 1)
            if np.array_equal(after, shifted_by_hand(before, down, right, -0.5))
        ]
        assert len(matches) == 1
        offsets.add(matches[0])
    assert len(offsets) == (2 * shift + 1) ** 2  # every offset is drawn


def test_random_shift_is_a_function_of_the_seed_and_the_step():
    images = np.random.default_rng(0).standard_normal((50, 64)).astype(np.float32)  # flattened

    def moved(seed, step):
        return random_shift(images, (8, 8), 2, 0.0, shift_generator(seed, step))

    assert moved(0, 3).shape == (50, 64)
    assert np.array_equal(moved(0, 3), moved(0, 3))
    assert not np.array_equal(moved(0, 3), moved(0, 4))
    assert not np.array_equal(moved(0, 3), moved(1, 3))


class Record(loop.Hooks):
    """Keeps every batch the steps see, and the blank pixel's standardised value."""

    def __init__(self) -> None:
        self.batches: list[np.ndarray] = []

    def before_step(self, run, x, y):
        self.blank = -run.data.mean / run.data.std
        self.batches.append(x.numpy().copy())


def test_the_run_trains_on_shifted_batches():
    shifted, plain = Record(), Record()
    run(dataclasses.replace(FAST, epochs=1), hooks=shifted)
    run(dataclasses.replace(FAST, epochs=1, shift=0), hooks=plain)
    assert len(shifted.batches) == len(plain.batches) == 23
    moves = set()
    for a, b in zip(shifted.batches, plain.batches):  # the same images, in the same order
        assert a.shape == b.shape == (len(a), 1, 8, 8)
        for after, before in zip(a[:, 0], b[:, 0]):
            moves.update(
                (down, right)
                for down in range(-2, 3)
                for right in range(-2, 3)
                if np.array_equal(after, shifted_by_hand(before, down, right, shifted.blank))
            )
    assert len(moves) == 25


# ----------------------------------------------------------------------------- the run
def test_save_and_evaluate_a_cnn(tmp_path, capsys):
    path = tmp_path / "cnn.npz"
    status = cli.main(
        ["train", "--model", "cnn", "--dataset", "digits", "--hidden", "4,8", "--epochs", "1",
         "--no-progress", "--save", str(path)]
    )  # fmt: skip
    assert status == 0
    log = capsys.readouterr().out
    assert "model cnn 1x8x8 → conv blocks 4-8 → 128 → 10" in log
    trained = float(log.split("done: test accuracy ")[1].split("%")[0])
    config = tg.load(path)["config"]
    assert config["model"] == "cnn" and config["hidden"] == [4, 8]
    assert cli.main(["evaluate", "--checkpoint", str(path)]) == 0
    report = capsys.readouterr().out
    assert f"accuracy {trained:.2f}%" in report and "digits test set: 360 images" in report


def test_evaluate_reads_a_cnn_training_checkpoint(tmp_path):
    path = str(tmp_path / "c.npz")
    result = run(dataclasses.replace(FAST, epochs=1), checkpoint=path)
    out = io.StringIO()
    assert evaluate_checkpoint(path, None, None, out=out) == result["test_acc"]


def test_a_stopped_cnn_run_resumes_bit_for_bit(tmp_path):
    """Shifts, dropout, batch norm's running statistics and AdamW's moments all come back."""
    straight = run(save=str(tmp_path / "a.npz"))
    path = str(tmp_path / "c.npz")
    with pytest.raises(TrainingStopped):
        run(checkpoint=path, hooks=StopAt(30))  # in the second epoch (23 steps each)
    assert ckpt.read(path).progress.step == 30
    resumed = run(resume=path, save=str(tmp_path / "b.npz"))
    a, b = weights(tmp_path / "a.npz"), weights(tmp_path / "b.npz")
    assert "2.running_mean" in a and "2.num_batches_tracked" in a
    assert_same_weights(a, b)
    assert_same_history(straight["history"], resumed["history"])


def test_resume_refuses_another_shift(tmp_path):
    path = str(tmp_path / "c.npz")
    run(dataclasses.replace(FAST, epochs=1), checkpoint=path)
    with pytest.raises(loop.ResumeError, match="--shift: the checkpoint's run used 2, this"):
        run(dataclasses.replace(FAST, shift=1), resume=path)


# ----------------------------------------------------------------------------- the recipes
needs_mnist = pytest.mark.skipif(
    not (SHARED_DATA / "mnist" / "train-images-idx3-ubyte.gz").exists()
    and not os.environ.get("TENSORGRAD_DATA"),
    reason="MNIST files not present on this machine",
)
needs_fashion = pytest.mark.skipif(
    not Path("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz").exists()
    and not os.environ.get("TENSORGRAD_DATA"),
    reason="Fashion-MNIST files not present (Debian's dataset-fashion-mnist)",
)


@pytest.mark.slow
@needs_mnist
def test_the_cnn_recipe_reaches_99_3_percent_on_mnist(monkeypatch):
    """README's CNN row (minutes on two cores; `make test-slow`)."""
    if not os.environ.get("TENSORGRAD_DATA"):
        monkeypatch.setenv("TENSORGRAD_DATA", str(SHARED_DATA))
    out = io.StringIO()
    result = train(Recipe.for_model("cnn", dataset="mnist", download=False), out=out)
    assert result["test_acc"] >= 0.993, out.getvalue()


@pytest.mark.slow
@needs_fashion
def test_the_cnn_recipe_reaches_92_percent_on_fashion_mnist():
    out = io.StringIO()
    result = train(Recipe.for_model("cnn", dataset="fashion-mnist", download=False), out=out)
    assert result["test_acc"] >= 0.92, out.getvalue()
