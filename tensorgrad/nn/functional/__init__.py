"""Stateless functions behind the layers and losses: ``import tensorgrad.nn.functional as F``.

One module per family, as ``tensorgrad.nn.modules``: ``activation``, ``linear``, ``conv``,
``pooling``, ``dropout``, ``normalization`` and ``loss``; ``sparse`` holds ``one_hot`` (where
PyTorch's documentation lists it).
"""

from tensorgrad.nn.functional.activation import (
    elu,
    gelu,
    leaky_relu,
    log_softmax,
    relu,
    sigmoid,
    silu,
    softmax,
    softplus,
    tanh,
)
from tensorgrad.nn.functional.attention import scaled_dot_product_attention
from tensorgrad.nn.functional.conv import (
    conv1d,
    conv2d,
    conv_transpose1d,
    conv_transpose2d,
    fold,
    pad,
    unfold,
)
from tensorgrad.nn.functional.dropout import dropout, dropout2d
from tensorgrad.nn.functional.linear import linear
from tensorgrad.nn.functional.loss import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cross_entropy,
    huber_loss,
    kl_div,
    l1_loss,
    mse_loss,
    nll_loss,
    smooth_l1_loss,
)
from tensorgrad.nn.functional.normalization import batch_norm, layer_norm
from tensorgrad.nn.functional.pooling import adaptive_avg_pool2d, avg_pool2d, max_pool2d
from tensorgrad.nn.functional.sparse import embedding, one_hot

__all__ = [
    "adaptive_avg_pool2d",
    "avg_pool2d",
    "batch_norm",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "conv1d",
    "conv2d",
    "conv_transpose1d",
    "conv_transpose2d",
    "cross_entropy",
    "dropout",
    "dropout2d",
    "elu",
    "embedding",
    "fold",
    "gelu",
    "huber_loss",
    "kl_div",
    "l1_loss",
    "layer_norm",
    "leaky_relu",
    "linear",
    "log_softmax",
    "max_pool2d",
    "mse_loss",
    "nll_loss",
    "one_hot",
    "pad",
    "relu",
    "scaled_dot_product_attention",
    "sigmoid",
    "silu",
    "smooth_l1_loss",
    "softmax",
    "softplus",
    "tanh",
    "unfold",
]
