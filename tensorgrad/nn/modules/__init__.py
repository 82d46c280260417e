"""The layers, one module per family, as PyTorch's ``torch.nn.modules``.

==================  =======================================================
``module``          ``Module``, the base of every layer and model
``container``       ``Sequential``, ``ModuleList``, ``ModuleDict``, ``ParameterList``, ...
``linear``          ``Identity``, ``Linear``
``conv``            ``Conv1d``, ``Conv2d``, ``ConvTranspose1d``, ``ConvTranspose2d``
``pooling``         ``MaxPool2d``, ``AvgPool2d``, ``AdaptiveAvgPool2d``
``activation``      ``ReLU``, ``Tanh``, ``Softplus``, ``ELU``, ``SiLU``, ``Softmax``, ...
``dropout``         ``Dropout``, ``Dropout2d``
``batchnorm``       ``BatchNorm1d``, ``BatchNorm2d``
``normalization``   ``LayerNorm``
``flatten``         ``Flatten``, ``Unflatten``
``sparse``          ``Embedding``
``loss``            ``CrossEntropyLoss``, ``NLLLoss``, ``MSELoss``, ...
==================  =======================================================
"""

from tensorgrad.nn.modules.activation import (
    ELU,
    GELU,
    LeakyReLU,
    LogSoftmax,
    ReLU,
    Sigmoid,
    SiLU,
    Softmax,
    Softplus,
    Tanh,
)
from tensorgrad.nn.modules.batchnorm import BatchNorm1d, BatchNorm2d
from tensorgrad.nn.modules.container import (
    ModuleDict,
    ModuleList,
    ParameterDict,
    ParameterList,
    Sequential,
)
from tensorgrad.nn.modules.conv import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d
from tensorgrad.nn.modules.dropout import Dropout, Dropout2d
from tensorgrad.nn.modules.flatten import Flatten, Unflatten
from tensorgrad.nn.modules.linear import Identity, Linear
from tensorgrad.nn.modules.loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from tensorgrad.nn.modules.module import IncompatibleKeys, Module
from tensorgrad.nn.modules.normalization import LayerNorm
from tensorgrad.nn.modules.pooling import AdaptiveAvgPool2d, AvgPool2d, MaxPool2d
from tensorgrad.nn.modules.sparse import Embedding

__all__ = [
    "ELU",
    "GELU",
    "AdaptiveAvgPool2d",
    "AvgPool2d",
    "BCELoss",
    "BCEWithLogitsLoss",
    "BatchNorm1d",
    "BatchNorm2d",
    "Conv1d",
    "Conv2d",
    "ConvTranspose1d",
    "ConvTranspose2d",
    "CrossEntropyLoss",
    "Dropout",
    "Dropout2d",
    "Embedding",
    "Flatten",
    "HuberLoss",
    "Identity",
    "IncompatibleKeys",
    "KLDivLoss",
    "L1Loss",
    "LayerNorm",
    "LeakyReLU",
    "Linear",
    "LogSoftmax",
    "MSELoss",
    "MaxPool2d",
    "Module",
    "ModuleDict",
    "ModuleList",
    "NLLLoss",
    "ParameterDict",
    "ParameterList",
    "ReLU",
    "Sequential",
    "SiLU",
    "Sigmoid",
    "SmoothL1Loss",
    "Softmax",
    "Softplus",
    "Tanh",
    "Unflatten",
]
