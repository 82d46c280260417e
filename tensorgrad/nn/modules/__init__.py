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
``rnn``             ``RNN``, ``LSTM``, ``GRU`` and their cells
``transformer``     ``TransformerEncoder``/``Decoder`` (and their layers), ``Transformer``
``upsampling``      ``Upsample``, ``UpsamplingNearest2d``, ``UpsamplingBilinear2d``
``distance``        ``CosineSimilarity``, ``PairwiseDistance``
==================  =======================================================

``activation`` also holds ``MultiheadAttention``, as PyTorch's.
"""

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
    MultiheadAttention,
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
from tensorgrad.nn.modules.container import (
    FUSERS,
    ModuleDict,
    ModuleList,
    ParameterDict,
    ParameterList,
    Sequential,
)
from tensorgrad.nn.modules.conv import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d
from tensorgrad.nn.modules.distance import CosineSimilarity, PairwiseDistance
from tensorgrad.nn.modules.dropout import AlphaDropout, Dropout, Dropout1d, Dropout2d
from tensorgrad.nn.modules.flatten import Flatten, Unflatten
from tensorgrad.nn.modules.linear import Identity, Linear, linear_chain
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
from tensorgrad.nn.modules.rnn import (
    GRU,
    LSTM,
    RNN,
    GRUCell,
    LSTMCell,
    RNNBase,
    RNNCell,
    RNNCellBase,
)
from tensorgrad.nn.modules.sparse import Embedding
from tensorgrad.nn.modules.transformer import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)
from tensorgrad.nn.modules.upsampling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d

# Sequential runs adjacent Linear and ReLU layers as one linear_chain op (container.FUSERS):
# registered here, where both layer types are known, so that neither module imports the other
# for it (Conv2d's fusion is registered in conv.py, which needs ReLU and MaxPool2d anyway)
FUSERS[Linear] = FUSERS[ReLU] = (linear_chain, frozenset((Linear, ReLU)))

__all__ = [
    "CELU",
    "ELU",
    "GELU",
    "GLU",
    "GRU",
    "LSTM",
    "RNN",
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
    "ConvTranspose1d",
    "ConvTranspose2d",
    "CosineSimilarity",
    "CrossEntropyLoss",
    "Dropout",
    "Dropout1d",
    "Dropout2d",
    "Embedding",
    "Flatten",
    "GRUCell",
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
    "LSTMCell",
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
    "MultiheadAttention",
    "NLLLoss",
    "PairwiseDistance",
    "ParameterDict",
    "ParameterList",
    "RMSNorm",
    "RNNBase",
    "RNNCell",
    "RNNCellBase",
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
    "Transformer",
    "TransformerDecoder",
    "TransformerDecoderLayer",
    "TransformerEncoder",
    "TransformerEncoderLayer",
    "Unflatten",
    "Upsample",
    "UpsamplingBilinear2d",
    "UpsamplingNearest2d",
]
