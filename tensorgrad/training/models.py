"""What a run trains: the model registry, the optimizer and the learning-rate schedule.

A model is registered by name (``--model NAME``) as a :class:`ModelSpec`: how to build it
from the image shape, the number of classes and the run's settings, how to turn
standardised ``(N, H, W)`` images into its inputs (the MLP flattens them; the CNN adds a
channel axis), and the recipe settings it trains with by default. ``--save`` files record the
name and settings, so ``evaluate`` rebuilds the same model through the same registry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tensorgrad import nn, optim


@dataclass(frozen=True)
class ModelSpec:
    """A model the trainer can build: ``build(image_shape, num_classes, settings)`` returns
    the module (``settings`` holds ``hidden``, ``dropout``, ...) and ``inputs`` turns a batch
    of standardised ``(N, H, W)`` float32 images into what the module takes; ``defaults``
    are the recipe settings (``Recipe`` fields) this model trains with unless told otherwise
    (those not named are the MLP's, ``Recipe``'s own defaults)."""

    name: str
    build: Callable[[tuple[int, ...], int, Mapping[str, Any]], nn.Module]
    inputs: Callable[[np.ndarray], np.ndarray]
    summary: Callable[[tuple[int, ...], int, Mapping[str, Any]], str]
    defaults: Mapping[str, Any] = field(default_factory=dict)


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


# ----------------------------------------------------------------------------- the CNN
#: width of the CNN's fully connected hidden layer, between the convolutions and the classifier
CNN_FEATURES = 128


def build_cnn(
    image_shape: tuple[int, ...], channels: Sequence[int], num_classes: int, dropout: float
) -> nn.Module:
    """A small convolutional network on (N, C, H, W) images (``image_shape`` is (C, H, W)).

    Per entry of ``channels`` a block: Conv2d 3×3 (padding 1; no bias, the batch norm's shift
    is one) → MaxPool2d 2 → BatchNorm2d → ReLU; then Flatten → Dropout → Linear(·, 128) →
    ReLU → Linear(128, num_classes). Pooling comes straight after the convolution, so that
    the batch norm and the ReLU work on a quarter of the values (max-pooling commutes with
    the ReLU, so that order computes the same function as conv → ReLU → pool; the batch norm's
    statistics are those of the pooled values). A block whose input is smaller than 2×2 does
    not pool.
    """
    in_channels, height, width = image_shape
    layers: list[nn.Module] = []
    for size in channels:
        layers.append(nn.Conv2d(in_channels, size, 3, padding=1, bias=False))
        if min(height, width) >= 2:
            layers.append(nn.MaxPool2d(2))
            height, width = height // 2, width // 2
        layers += [nn.BatchNorm2d(size), nn.ReLU()]
        in_channels = size
    layers.append(nn.Flatten())
    if dropout:
        layers.append(nn.Dropout(dropout))
    layers += [
        nn.Linear(in_channels * height * width, CNN_FEATURES),
        nn.ReLU(),
        nn.Linear(CNN_FEATURES, num_classes),
    ]
    return nn.Sequential(*layers)


def _cnn(image_shape: tuple[int, ...], num_classes: int, settings: Mapping[str, Any]) -> nn.Module:
    return build_cnn(
        _with_channels(image_shape), settings["hidden"], num_classes, settings["dropout"]
    )


def _with_channels(image_shape: tuple[int, ...]) -> tuple[int, ...]:
    """(H, W) images as the CNN sees them, (1, H, W); (C, H, W) ones as they are."""
    return (1, *image_shape) if len(image_shape) == 2 else tuple(image_shape)


def _add_channel_axis(images: np.ndarray) -> np.ndarray:
    return images[:, None] if images.ndim == 3 else images


def _cnn_summary(
    image_shape: tuple[int, ...], num_classes: int, settings: Mapping[str, Any]
) -> str:
    shape = "x".join(map(str, _with_channels(image_shape)))
    blocks = "-".join(map(str, settings["hidden"])) or "none"
    return f"{shape} → conv blocks {blocks} → {CNN_FEATURES} → {num_classes}"


CNN = register_model(
    ModelSpec(
        "cnn",
        _cnn,
        _add_channel_axis,
        _cnn_summary,
        defaults={
            "hidden": (32, 64),
            "dropout": 0.25,
            "epochs": 6,
            "batch_size": 128,
            "optimizer": "adamw",
            "lr": 3e-3,
            "weight_decay": 1e-4,
            "label_smoothing": 0.05,
            "shift": 2,
        },
    )
)


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
