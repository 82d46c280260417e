"""Every differentiable primitive, as a small class: forward on arrays, backward as a VJP.

This package works on raw arrays and knows nothing of ``Tensor``: the layering runs one way,
ops → core (the Tensor and its engine) → nn / optim / data. The modules group ops by family:

=================  ==========================================================================
``base``           ``Op``, ``sum_to`` (un-broadcasting), axis checks, ``call``/``replay``
``elementwise``    arithmetic and pointwise math: add … pow, exp, log, clip, maximum, where, cast
``activation``     sigmoid, relu, leaky relu, gelu, silu, softplus, elu, softmax, log-softmax
``reduce``         sum, mean, prod, var, std, norm, max/min, logsumexp, cumsum
``shape``          reshape, transpose, broadcast, concatenate, stack
``index``          getitem and its scatter, setitem, gather / scatter_add, view write-back
``linalg``         matmul
``linear``         the fused linear layer and linear chain
``loss``           cross-entropy, binary cross-entropy (of probabilities and with logits)
``norm``           the normalisation core of batch and layer norm
``conv``           conv2d, conv_transpose2d, unfold (im2col), fold (col2im), constant padding
``fused_conv``     conv2d + relu (+ a tiling max-pool) as one op: what ``Sequential`` fuses to
``erf``            erf and the normal CDF, with their float32 approximations
``batched_conv``   conv2d with a weight per sample: what vmap's per-sample gradients run
``pool``           max, average and adaptive average pooling
``recurrent``      the gate arithmetic of the LSTM and GRU cells, and their whole layers
``attention``      scaled dot-product attention
``trig``           inverse trigonometric and hyperbolic functions, atan2, hypot
``special``        erfc, erfinv, lgamma, polygamma (digamma), i0, i1, sinc
``division``       remainder and fmod, with gradients
``scan``           cumprod and logcumsumexp
``scatter``        scatter_reduce's prod/amax/amin, bincount, and the positions scatters address
``windows``        (helpers) window views, padding and memory layout that conv and pool share
``im2col``         (helpers) conv2d's fast path: channels-last im2col in chunks, over threads
``sums``           (helpers) row and column sums of matrices through BLAS: layer norm, linear
=================  ==========================================================================
"""

from tensorgrad.ops.activation import (
    Elu,
    Gelu,
    Hardswish,
    LeakyRelu,
    LogSoftmax,
    Prelu,
    Relu,
    Sigmoid,
    Silu,
    Softmax,
    Softplus,
)
from tensorgrad.ops.attention import ScaledDotProductAttention
from tensorgrad.ops.base import (
    Op,
    call,
    normalize_axes,
    normalize_axis,
    replay,
    shape_of,
    sum_to,
)
from tensorgrad.ops.conv import ConstantPad, Conv2d, ConvTranspose2d, Fold, Unfold

# division, scan, scatter, special and trig: PyTorch's math that is no exact composition
from tensorgrad.ops.division import Fmod, Remainder
from tensorgrad.ops.elementwise import (
    Abs,
    Add,
    Cast,
    Clip,
    Clone,
    Copysign,
    Cos,
    Div,
    Exp,
    Expm1,
    Lerp,
    Log,
    Log1p,
    Maximum,
    Minimum,
    Mul,
    Neg,
    NextAfter,
    Pow,
    Rounding,
    Sin,
    Sqrt,
    Sub,
    Tanh,
    Where,
)
from tensorgrad.ops.erf import Erf
from tensorgrad.ops.index import (
    CopyIntoView,
    Gather,
    GetItem,
    IndexAdd,
    ScatterAdd,
    SetItem,
    is_basic_index,
)
from tensorgrad.ops.linalg import MatMul
from tensorgrad.ops.linear import Linear, LinearChain
from tensorgrad.ops.loss import BinaryCrossEntropy, BinaryCrossEntropyWithLogits, CrossEntropy
from tensorgrad.ops.norm import LayerNorm, Normalize
from tensorgrad.ops.pool import AdaptiveAvgPool2d, AvgPool2d, AvgPool2dBackward, MaxPool2d
from tensorgrad.ops.recurrent import GRUCell, GRULayer, LSTMCell, LSTMLayer
from tensorgrad.ops.reduce import Cumsum, LogSumExp, Max, Mean, Min, Norm, Prod, Std, Sum, Var
from tensorgrad.ops.scan import Cumprod, LogCumSumExp
from tensorgrad.ops.scatter import Bincount, ScatterReduce, scatter_positions
from tensorgrad.ops.shape import BroadcastTo, Concatenate, Reshape, Stack, Transpose
from tensorgrad.ops.special import I0, I1, Erfc, Erfinv, Lgamma, Polygamma, Sinc
from tensorgrad.ops.trig import (
    Acos,
    Acosh,
    Asin,
    Asinh,
    Atan,
    Atan2,
    Atanh,
    Cosh,
    Hypot,
    LogAddExp,
    LogAddExp2,
    Sinh,
)

__all__ = [
    "I0",
    "I1",
    "Abs",
    "Acos",
    "Acosh",
    "AdaptiveAvgPool2d",
    "Add",
    "Asin",
    "Asinh",
    "Atan",
    "Atan2",
    "Atanh",
    "AvgPool2d",
    "AvgPool2dBackward",
    "BinaryCrossEntropy",
    "BinaryCrossEntropyWithLogits",
    "Bincount",
    "BroadcastTo",
    "Cast",
    "Clip",
    "Clone",
    "Concatenate",
    "ConstantPad",
    "Conv2d",
    "ConvTranspose2d",
    "CopyIntoView",
    "Copysign",
    "Cos",
    "Cosh",
    "CrossEntropy",
    "Cumprod",
    "Cumsum",
    "Div",
    "Elu",
    "Erf",
    "Erfc",
    "Erfinv",
    "Exp",
    "Expm1",
    "Fmod",
    "Fold",
    "GRUCell",
    "GRULayer",
    "Gather",
    "Gelu",
    "GetItem",
    "Hardswish",
    "Hypot",
    "IndexAdd",
    "LSTMCell",
    "LSTMLayer",
    "LayerNorm",
    "LeakyRelu",
    "Lerp",
    "Lgamma",
    "Linear",
    "LinearChain",
    "Log",
    "Log1p",
    "LogAddExp",
    "LogAddExp2",
    "LogCumSumExp",
    "LogSoftmax",
    "LogSumExp",
    "MatMul",
    "Max",
    "MaxPool2d",
    "Maximum",
    "Mean",
    "Min",
    "Minimum",
    "Mul",
    "Neg",
    "NextAfter",
    "Norm",
    "Normalize",
    "Op",
    "Polygamma",
    "Pow",
    "Prelu",
    "Prod",
    "Relu",
    "Remainder",
    "Reshape",
    "Rounding",
    "ScaledDotProductAttention",
    "ScatterAdd",
    "ScatterReduce",
    "SetItem",
    "Sigmoid",
    "Silu",
    "Sin",
    "Sinc",
    "Sinh",
    "Softmax",
    "Softplus",
    "Sqrt",
    "Stack",
    "Std",
    "Sub",
    "Sum",
    "Tanh",
    "Transpose",
    "Unfold",
    "Var",
    "Where",
    "call",
    "is_basic_index",
    "normalize_axes",
    "normalize_axis",
    "replay",
    "scatter_positions",
    "shape_of",
    "sum_to",
]
