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
==================  =======================================================

``activation`` also holds ``MultiheadAttention``, as PyTorch's.
"""

from tensorgrad.nn.modules.activation import (
    ELU,
    GELU,
    LeakyReLU,
    LogSoftmax,
    MultiheadAttention,
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

__all__ = [
    "ELU",
    "GELU",
    "GRU",
    "LSTM",
    "RNN",
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
    "GRUCell",
    "HuberLoss",
    "Identity",
    "IncompatibleKeys",
    "KLDivLoss",
    "L1Loss",
    "LSTMCell",
    "LayerNorm",
    "LeakyReLU",
    "Linear",
    "LogSoftmax",
    "MSELoss",
    "MaxPool2d",
    "Module",
    "ModuleDict",
    "ModuleList",
    "MultiheadAttention",
    "NLLLoss",
    "ParameterDict",
    "ParameterList",
    "RNNBase",
    "RNNCell",
    "RNNCellBase",
    "ReLU",
    "Sequential",
    "SiLU",
    "Sigmoid",
    "SmoothL1Loss",
    "Softmax",
    "Softplus",
    "Tanh",
    "Transformer",
    "TransformerDecoder",
    "TransformerDecoderLayer",
    "TransformerEncoder",
    "TransformerEncoderLayer",
    "Unflatten",
]
