"""The models that the tests of moving models out of tensorgrad (safetensors, ONNX) use, and
their PyTorch twins: the same layers in the same order, so that state dicts line up."""

from __future__ import annotations

from typing import Any

import numpy as np

import tensorgrad as tg
from tensorgrad import nn
from tensorgrad.training.models import build_cnn, build_model


def mlp() -> nn.Module:
    """The default MLP recipe's shape (smaller hidden layers, so the tests stay fast)."""
    return build_model(784, (64, 32), 10, 0.2)


def cnn() -> nn.Module:
    """The CNN recipe: conv → max-pool → batch norm → ReLU blocks, dropout, two Linears."""
    return build_cnn((1, 28, 28), (8, 16), 10, 0.25)


def norm_gelu() -> nn.Module:
    """LayerNorm and both GELUs, with BatchNorm1d buffers in the middle."""
    return nn.Sequential(
        nn.Linear(12, 16),
        nn.LayerNorm(16),
        nn.GELU(),
        nn.Linear(16, 16),
        nn.BatchNorm1d(16),
        nn.GELU(approximate="tanh"),
        nn.Linear(16, 4),
    )


MODELS = {"mlp": (mlp, (784,)), "cnn": (cnn, (1, 28, 28)), "norm_gelu": (norm_gelu, (12,))}


def sample(name: str, batch: int, seed: int = 0) -> np.ndarray:
    shape = MODELS[name][1]
    return np.random.default_rng(seed).standard_normal((batch, *shape)).astype(np.float32)


def trained(name: str, steps: int = 2) -> nn.Module:
    """The model after a few training steps (batch norm's running statistics move away from
    0 and 1, and ``num_batches_tracked`` counts), then in eval mode."""
    tg.manual_seed(0)
    model = MODELS[name][0]()
    opt = tg.optim.SGD(model.parameters(), lr=0.05)
    for step in range(steps):
        x = tg.tensor(sample(name, 8, seed=step + 1))
        loss = (model(x) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model.eval()


def torch_twin(model: nn.Module) -> Any:
    """The PyTorch module with the same layers as the tensorgrad ``Sequential`` ``model``."""
    import torch

    layers = []
    for layer in model:
        kind = type(layer).__name__
        if kind == "Linear":
            layers.append(torch.nn.Linear(layer.in_features, layer.out_features))
        elif kind == "Conv2d":
            layers.append(
                torch.nn.Conv2d(
                    layer.in_channels,
                    layer.out_channels,
                    layer.kernel_size,
                    padding=layer.padding,
                    bias=layer.bias is not None,
                )
            )
        elif kind == "BatchNorm1d":
            layers.append(torch.nn.BatchNorm1d(layer.num_features))
        elif kind == "BatchNorm2d":
            layers.append(torch.nn.BatchNorm2d(layer.num_features))
        elif kind == "LayerNorm":
            layers.append(torch.nn.LayerNorm(layer.normalized_shape))
        elif kind == "GELU":
            layers.append(torch.nn.GELU(approximate=layer.approximate))
        elif kind == "MaxPool2d":
            layers.append(torch.nn.MaxPool2d(layer.kernel_size))
        elif kind == "Dropout":
            layers.append(torch.nn.Dropout(layer.p))
        else:
            layers.append(getattr(torch.nn, kind)())
    return torch.nn.Sequential(*layers)
