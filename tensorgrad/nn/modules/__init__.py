"""The layers, one module per family, as PyTorch's ``torch.nn.modules``.

==================  =======================================================
``module``          ``Module``, the base of every layer and model
``container``       ``Sequential``, ``ModuleList``, ``ModuleDict``
``linear``          ``Identity``, ``Linear``
``conv``            ``Conv1d``, ``Conv2d``
``pooling``         ``MaxPool2d``, ``AvgPool2d``, ``AdaptiveAvgPool2d``
``activation``      ``ReLU``, ``Tanh``, ``Softplus``, ``ELU``, ``SiLU``, ``Softmax``, ...
``dropout``         ``Dropout``, ``Dropout2d``
``batchnorm``       ``BatchNorm1d``, ``BatchNorm2d``
``normalization``   ``LayerNorm``
``flatten``         ``Flatten``, ``Unflatten``
``sparse``          ``Embedding``
``loss``            ``CrossEntropyLoss``, ``NLLLoss``, ``MSELoss``, ...
``distance``        ``CosineSimilarity``, ``PairwiseDistance``
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
from tensorgrad.nn.modules.container import ModuleDict, ModuleList, Sequential
from tensorgrad.nn.modules.conv import Conv1d, Conv2d
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

# issue 22's missing names
from tensorgrad.nn.modules.activation import (
    CELU,
    GLU,
    SELU,
    Hardshrink,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    LogSigmoid,
    Mish,
    ReLU6,
    Softmin,
    Softshrink,
    Softsign,
    Tanhshrink,
    Threshold,
)
from tensorgrad.nn.modules.distance import CosineSimilarity, PairwiseDistance
from tensorgrad.nn.modules.dropout import AlphaDropout, Dropout1d
from tensorgrad.nn.modules.loss import SoftMarginLoss
from tensorgrad.nn.modules.normalization import (
    GroupNorm,
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    LocalResponseNorm,
    RMSNorm,
)
from tensorgrad.nn.modules.pooling import AdaptiveMaxPool2d, AvgPool1d, LPPool1d, LPPool2d, MaxPool1d

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
    "ReLU",
    "Sequential",
    "SiLU",
    "Sigmoid",
    "SmoothL1Loss",
    "Softmax",
    "Softplus",
    "Tanh",
    "Unflatten",
    # issue 22's missing names
    "CELU",
    "GLU",
    "SELU",
    "AdaptiveMaxPool2d",
    "AlphaDropout",
    "AvgPool1d",
    "CosineSimilarity",
    "Dropout1d",
    "GroupNorm",
    "Hardshrink",
    "Hardsigmoid",
    "Hardswish",
    "Hardtanh",
    "InstanceNorm1d",
    "InstanceNorm2d",
    "InstanceNorm3d",
    "LPPool1d",
    "LPPool2d",
    "LocalResponseNorm",
    "LogSigmoid",
    "MaxPool1d",
    "Mish",
    "PairwiseDistance",
    "RMSNorm",
    "ReLU6",
    "SoftMarginLoss",
    "Softmin",
    "Softshrink",
    "Softsign",
    "Tanhshrink",
    "Threshold",
]
