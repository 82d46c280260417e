"""Stateless functions behind the layers and losses: ``import tensorgrad.nn.functional as F``.

One module per family, as ``tensorgrad.nn.modules``: ``activation``, ``linear``, ``dropout``,
``normalization`` and ``loss``.
"""

from tensorgrad.nn.functional.activation import (
    gelu,
    leaky_relu,
    log_softmax,
    relu,
    sigmoid,
    softmax,
    tanh,
)
from tensorgrad.nn.functional.dropout import dropout
from tensorgrad.nn.functional.linear import linear
from tensorgrad.nn.functional.loss import (
    binary_cross_entropy_with_logits,
    cross_entropy,
    mse_loss,
    nll_loss,
)
from tensorgrad.nn.functional.normalization import batch_norm, layer_norm

__all__ = [
    "batch_norm",
    "binary_cross_entropy_with_logits",
    "cross_entropy",
    "dropout",
    "gelu",
    "layer_norm",
    "leaky_relu",
    "linear",
    "log_softmax",
    "mse_loss",
    "nll_loss",
    "relu",
    "sigmoid",
    "softmax",
    "tanh",
]
