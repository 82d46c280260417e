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

# issue 22's missing names
from tensorgrad.nn.modules.activation import (
    CELU,
    ELU,
    GELU,
    GLU,
    SELU,
    Hardshrink,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    LeakyReLU,
    LogSigmoid,
    LogSoftmax,
    Mish,
    ReLU,
    ReLU6,
    Sigmoid,
    SiLU,
    Softmax,
    Softmin,
    Softplus,
    Softshrink,
    Softsign,
    Tanh,
    Tanhshrink,
    Threshold,
)
from tensorgrad.nn.modules.batchnorm import BatchNorm1d, BatchNorm2d
from tensorgrad.nn.modules.container import ModuleDict, ModuleList, Sequential
from tensorgrad.nn.modules.conv import Conv1d, Conv2d
from tensorgrad.nn.modules.distance import CosineSimilarity, PairwiseDistance
from tensorgrad.nn.modules.dropout import AlphaDropout, Dropout, Dropout1d, Dropout2d
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
    SoftMarginLoss,
)
from tensorgrad.nn.modules.module import IncompatibleKeys, Module
from tensorgrad.nn.modules.normalization import (
    GroupNorm,
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    LayerNorm,
    LocalResponseNorm,
    RMSNorm,
)
from tensorgrad.nn.modules.pooling import (
    AdaptiveAvgPool2d,
    AdaptiveMaxPool2d,
    AvgPool1d,
    AvgPool2d,
    LPPool1d,
    LPPool2d,
    MaxPool1d,
    MaxPool2d,
)
from tensorgrad.nn.modules.sparse import Embedding

__all__ = [
    # issue 22's missing names
    "CELU",
    "ELU",
    "GELU",
    "GLU",
    "SELU",
    "AdaptiveAvgPool2d",
    "AdaptiveMaxPool2d",
    "AlphaDropout",
    "AvgPool1d",
    "AvgPool2d",
    "BCELoss",
    "BCEWithLogitsLoss",
    "BatchNorm1d",
    "BatchNorm2d",
    "Conv1d",
    "Conv2d",
    "CosineSimilarity",
    "CrossEntropyLoss",
    "Dropout",
    "Dropout1d",
    "Dropout2d",
    "Embedding",
    "Flatten",
    "GroupNorm",
    "Hardshrink",
    "Hardsigmoid",
    "Hardswish",
    "Hardtanh",
    "HuberLoss",
    "Identity",
    "IncompatibleKeys",
    "InstanceNorm1d",
    "InstanceNorm2d",
    "InstanceNorm3d",
    "KLDivLoss",
    "L1Loss",
    "LPPool1d",
    "LPPool2d",
    "LayerNorm",
    "LeakyReLU",
    "Linear",
    "LocalResponseNorm",
    "LogSigmoid",
    "LogSoftmax",
    "MSELoss",
    "MaxPool1d",
    "MaxPool2d",
    "Mish",
    "Module",
    "ModuleDict",
    "ModuleList",
    "NLLLoss",
    "PairwiseDistance",
    "RMSNorm",
    "ReLU",
    "ReLU6",
    "Sequential",
    "SiLU",
    "Sigmoid",
    "SmoothL1Loss",
    "SoftMarginLoss",
    "Softmax",
    "Softmin",
    "Softplus",
    "Softshrink",
    "Softsign",
    "Tanh",
    "Tanhshrink",
    "Threshold",
    "Unflatten",
]
