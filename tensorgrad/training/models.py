"""What a run trains: the model registry, the optimizer and the learning-rate schedule.

A model is registered by name (``--model NAME``) as a :class:`ModelSpec`: how to build it
from the image shape, the number of classes and the run's settings, and how to turn
standardised ``(N, H, W)`` images into its inputs (the MLP flattens them; a convolutional
model would add a channel axis). ``--save`` files record the name and settings, so
``evaluate`` rebuilds the same model through the same registry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tensorgrad import nn, optim


@dataclass(frozen=True)
class ModelSpec:
    """A model the trainer can build: ``build(image_shape, num_classes, settings)`` returns
    the module (``settings`` holds ``hidden``, ``dropout``, ...) and ``inputs`` turns a batch
    of standardised ``(N, H, W)`` float32 images into what the module takes."""

    name: str
    build: Callable[[tuple[int, ...], int, Mapping[str, Any]], nn.Module]
    inputs: Callable[[np.ndarray], np.ndarray]
    summary: Callable[[tuple[int, ...], int, Mapping[str, Any]], str]


MODELS: dict[str, ModelSpec] = {}


def register_model(spec: ModelSpec) -> ModelSpec:
    """Make ``spec`` available as ``--model spec.name`` (and to ``evaluate``)."""
    if spec.name in MODELS and MODELS[spec.name] is not spec:
        raise ValueError(f"a model named {spec.name!r} is already registered")
    MODELS[spec.name] = spec
    return spec


def model_spec(name: str) -> ModelSpec:
    try:
        return MODELS[name]
    except KeyError:
        raise ValueError(f"unknown model {name!r}; choose from {', '.join(MODELS)}") from None


# ----------------------------------------------------------------------------- the MLP
def build_model(
    in_features: int, hidden: Sequence[int], num_classes: int, dropout: float
) -> nn.Module:
    """An MLP: Linear → ReLU (→ Dropout) per hidden layer, then a Linear classifier."""
    layers: list[nn.Module] = []
    width = in_features
    for size in hidden:
        layers += [nn.Linear(width, size), nn.ReLU()]
        if dropout:
            layers.append(nn.Dropout(dropout))
        width = size
    layers.append(nn.Linear(width, num_classes))
    return nn.Sequential(*layers)


def _mlp(image_shape: tuple[int, ...], num_classes: int, settings: Mapping[str, Any]) -> nn.Module:
    return build_model(
        int(np.prod(image_shape)), settings["hidden"], num_classes, settings["dropout"]
    )


def _flatten(images: np.ndarray) -> np.ndarray:
    return images.reshape(images.shape[0], -1)


def _mlp_summary(
    image_shape: tuple[int, ...], num_classes: int, settings: Mapping[str, Any]
) -> str:
    widths = [int(np.prod(image_shape)), *settings["hidden"], num_classes]
    return "-".join(map(str, widths))


MLP = register_model(ModelSpec("mlp", _mlp, _flatten, _mlp_summary))


# ----------------------------------------------------------------------------- optimizer
def build_optimizer(name: str, params: Any, lr: float, weight_decay: float) -> optim.Optimizer:
    """The optimizer ``--optimizer`` names, with the recipe's settings."""
    if name == "sgd":
        return optim.SGD(params, lr=lr, momentum=0.9, nesterov=True, weight_decay=weight_decay)
    if name == "adam":
        return optim.Adam(params, lr=lr, weight_decay=weight_decay)
    if name == "adamw":
        return optim.AdamW(params, lr=lr, weight_decay=weight_decay)
    if name == "rmsprop":
        return optim.RMSprop(params, lr=lr, weight_decay=weight_decay)
    raise ValueError(f"unknown optimizer {name!r}; choose from sgd, adam, adamw, rmsprop")


def build_scheduler(
    optimizer: optim.Optimizer, lr: float, epochs: int, steps_per_epoch: int
) -> optim.lr_scheduler.OneCycleLR:
    """One cycle of the learning rate (up to ``lr``, then down) over ``epochs`` epochs.

    A run extended on resume gets one such cycle per stretch of epochs: the cycle already
    planned is never reshaped in flight (see docs/training.md)."""
    return optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=lr, epochs=epochs, steps_per_epoch=steps_per_epoch
    )


def segment_of(epoch: int, segments: Sequence[int]) -> int:
    """The index of the schedule segment (a list of lengths in epochs) that holds ``epoch``."""
    end = 0
    for index, length in enumerate(segments):
        end += length
        if epoch < end:
            return index
    return len(segments) - 1


def segment_start(index: int, segments: Sequence[int]) -> int:
    """The first epoch of segment ``index``."""
    return sum(segments[:index])
