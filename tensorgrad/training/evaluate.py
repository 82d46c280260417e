"""``tensorgrad evaluate``: a saved model's test accuracy and confusion matrix.

It reads what ``train --save`` writes (``{"model": weights, "config": ...}``) and training
checkpoints (``train --checkpoint``), checks the configuration before building anything, and
rebuilds the model through the registry of :mod:`tensorgrad.training.models`.
"""

from __future__ import annotations

import json
import math
import os
import sys
from typing import Any, TextIO

import numpy as np

import tensorgrad as tg
from tensorgrad import nn
from tensorgrad.nn import functional as F
from tensorgrad.serialization import CheckpointError
from tensorgrad.training.report import confusion_matrix, format_confusion


@tg.no_grad()
def evaluate_arrays(
    model: nn.Module, inputs: np.ndarray, labels: np.ndarray, batch_size: int = 1000
) -> tuple[float, float, np.ndarray]:
    """Mean loss, accuracy and predicted classes of ``model`` on arrays, in eval mode."""
    was_training = model.training
    model.eval()
    total_loss, predictions = 0.0, []
    for start in range(0, len(inputs), batch_size):
        x = tg.tensor(inputs[start : start + batch_size])
        y = labels[start : start + batch_size]
        logits = model(x)
        total_loss += F.cross_entropy(logits, y, reduction="sum").item()
        predictions.append(logits._data.argmax(axis=1))
    model.train(was_training)
    predicted = np.concatenate(predictions) if predictions else np.zeros(0, np.int64)
    accuracy = float((predicted == labels).mean()) if len(labels) else float("nan")
    return total_loss / max(len(labels), 1), accuracy, predicted


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


_CONFIG_CHECKS = {
    "in_features": (_positive_int, "a positive integer"),
    "hidden": (
        lambda v: isinstance(v, (list, tuple)) and all(map(_positive_int, v)),
        "a list of positive integers",
    ),
    "num_classes": (_positive_int, "a positive integer"),
    "dropout": (lambda v: _finite(v) and 0 <= v < 1, "a number in [0, 1)"),
    "mean": (_finite, "a finite number"),
    "std": (lambda v: _finite(v) and v > 0, "a positive number"),
    "dataset": (lambda v: isinstance(v, str), "a dataset name"),
}


#: ``--save`` files whose name ends so are safetensors files (weights for PyTorch and the rest
#: of the ecosystem; the configuration is a JSON string in their metadata, under CONFIG_KEY)
SAFETENSORS_SUFFIX = ".safetensors"
CONFIG_KEY = "tensorgrad.config"


def is_safetensors(path: str | os.PathLike) -> bool:
    return os.fspath(path).lower().endswith(SAFETENSORS_SUFFIX)


def write_model_file(path: str, weights: dict[str, Any], config: dict[str, Any]) -> None:
    """What ``--save`` writes: a ``tg.save`` file ``{"model": weights, "config": config}``,
    or, for a ``.safetensors`` name, the weights with the configuration in the metadata."""
    if is_safetensors(path):
        from tensorgrad.safetensors import save_file

        save_file(weights, path, metadata={CONFIG_KEY: json.dumps(config, default=float)})
    else:
        tg.save({"model": weights, "config": config}, path)


def _read_state(path: str) -> Any:
    """The ``{"model": ..., "config": ...}`` of a model file, whichever its format."""
    if not is_safetensors(path):
        return tg.load(path)
    from tensorgrad.safetensors import read

    weights, metadata = read(path)
    if CONFIG_KEY not in metadata:
        raise CheckpointError(
            f"{path}: a safetensors file without tensorgrad's model config (it was not written "
            "by `tensorgrad train --save`); load its weights with "
            "tensorgrad.safetensors.load_file into the model you build"
        )
    try:
        config = json.loads(metadata[CONFIG_KEY])
    except ValueError as exc:
        raise CheckpointError(f"{path}: its model config is not valid JSON ({exc})") from None
    return {"model": weights, "config": config}


def read_model_file(path: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(weights, config)`` from a ``--save`` file (``tg.save`` or safetensors) or a training
    checkpoint, with the configuration checked: ``CheckpointError`` names the file and the
    problem."""
    from tensorgrad.training.checkpoint import KIND
    from tensorgrad.training.models import MODELS

    state = _read_state(path)
    if not isinstance(state, dict) or not isinstance(state.get("model"), dict):
        raise CheckpointError(
            f"{path}: not a model written by `tensorgrad train --save` or --checkpoint "
            "(it has no 'model' weights)"
        )
    config = state.get("config")
    if not isinstance(config, dict):
        raise CheckpointError(f"{path}: its 'config' is missing or not a mapping")
    problems = []
    for key, (ok, expected) in _CONFIG_CHECKS.items():
        if key not in config:
            problems.append(f"'{key}' is missing")
        elif not ok(config[key]):
            problems.append(f"'{key}' must be {expected}, got {config[key]!r}")
    model = config.get("model", "mlp")
    if model not in MODELS:
        problems.append(f"'model' {model!r} is not one of {', '.join(MODELS)}")
    shape = config.get("image_shape", [config.get("in_features")])
    if not (isinstance(shape, list) and all(map(_positive_int, shape))):
        problems.append(f"'image_shape' must be a list of positive integers, got {shape!r}")
    elif _positive_int(config.get("in_features")) and math.prod(shape) != config["in_features"]:
        problems.append(f"'image_shape' {shape} does not hold {config['in_features']} inputs")
    if problems:
        kind = "training checkpoint" if state.get("kind") == KIND else "model file"
        raise CheckpointError(f"{path}: the {kind}'s config is unusable: " + "; ".join(problems))
    return state["model"], {**config, "model": model, "image_shape": shape}


def model_from_file(path: str) -> tuple[nn.Module, dict[str, Any]]:
    """The model a ``--save`` file or checkpoint describes, with its weights loaded."""
    from tensorgrad.training.models import MODELS

    weights, config = read_model_file(path)
    spec = MODELS[config["model"]]
    model = spec.build(tuple(config["image_shape"]), config["num_classes"], config)
    try:
        model.load_state_dict(weights)
    except (RuntimeError, TypeError, ValueError) as exc:
        raise CheckpointError(
            f"{path}: the weights do not fit the model its config describes: {exc}"
        ) from None
    return model, config


def evaluate_checkpoint(
    checkpoint: str, dataset: str | None, data_dir: str | None, out: TextIO | None = None
) -> float:
    """Load a ``--save`` file (or a training checkpoint) and report its test accuracy."""
    from tensorgrad.data import load_dataset
    from tensorgrad.training.data import standardise
    from tensorgrad.training.models import MODELS

    out = out or sys.stdout
    model, config = model_from_file(checkpoint)
    data = load_dataset(dataset or config["dataset"], root=data_dir)
    if data.notice:
        print(f"notice: {data.notice}", file=out)
    shape = tuple(data.test_images.shape[1:])
    if math.prod(shape) != config["in_features"] or (
        len(config["image_shape"]) > 1 and list(shape) != config["image_shape"]
    ):
        raise ValueError(
            f"{checkpoint}: the model takes {config['in_features']} inputs "
            f"({'x'.join(map(str, config['image_shape']))}), but {data.name} images are "
            f"{'x'.join(map(str, shape))}"
        )
    if data.num_classes != config["num_classes"]:
        raise ValueError(
            f"{checkpoint}: the model has {config['num_classes']} classes, {data.name} "
            f"{data.num_classes}"
        )
    inputs = MODELS[config["model"]].inputs(
        standardise(data.test_images, config["mean"], config["std"])
    )
    loss, accuracy, predicted = evaluate_arrays(model, inputs, data.test_labels)
    print(
        f"{data.name} test set: {len(inputs)} images, loss {loss:.4f}, "
        f"accuracy {100 * accuracy:.2f}%",
        file=out,
    )
    matrix = confusion_matrix(data.test_labels, predicted, config["num_classes"])
    print(format_confusion(matrix, data.classes), file=out)
    return accuracy
