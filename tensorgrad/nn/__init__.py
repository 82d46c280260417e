"""Neural-network building blocks, shaped like PyTorch's ``torch.nn``.

import tensorgrad as tg
from tensorgrad import nn
import tensorgrad.nn.functional as F

model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
loss = F.cross_entropy(model(x), y)
"""

from tensorgrad.nn import functional, init, utils
from tensorgrad.nn.layers import (
    GELU,
    BatchNorm1d,
    Dropout,
    Flatten,
    Identity,
    LayerNorm,
    LeakyReLU,
    Linear,
    LogSoftmax,
    ReLU,
    Sigmoid,
    Softmax,
    Tanh,
)
from tensorgrad.nn.module import (
    IncompatibleKeys,
    Module,
    ModuleDict,
    ModuleList,
    Sequential,
)
from tensorgrad.nn.parameter import Parameter

__all__ = [
    "GELU",
    "BatchNorm1d",
    "Dropout",
    "Flatten",
    "Identity",
    "IncompatibleKeys",
    "LayerNorm",
    "LeakyReLU",
    "Linear",
    "LogSoftmax",
    "Module",
    "ModuleDict",
    "ModuleList",
    "Parameter",
    "ReLU",
    "Sequential",
    "Sigmoid",
    "Softmax",
    "Tanh",
    "functional",
    "init",
    "utils",
]
