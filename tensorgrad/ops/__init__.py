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
``conv``           conv2d, unfold (im2col), fold (col2im), constant padding
``pool``           max, average and adaptive average pooling
=================  ==========================================================================
"""

from tensorgrad.ops.activation import (
    Elu,
    Gelu,
    LeakyRelu,
    LogSoftmax,
    Relu,
    Sigmoid,
    Silu,
    Softmax,
    Softplus,
)
from tensorgrad.ops.base import (
    Op,
    call,
    normalize_axes,
    normalize_axis,
    replay,
    shape_of,
    sum_to,
)
from tensorgrad.ops.conv import ConstantPad, Conv2d, Fold, Unfold
from tensorgrad.ops.elementwise import (
    Abs,
    Add,
    Cast,
    Clip,
    Clone,
    Cos,
    Div,
    Erf,
    Exp,
    Expm1,
    Log,
    Log1p,
    Maximum,
    Minimum,
    Mul,
    Neg,
    Pow,
    Sin,
    Sqrt,
    Sub,
    Tanh,
    Where,
)
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
from tensorgrad.ops.norm import Normalize
from tensorgrad.ops.pool import AdaptiveAvgPool2d, AvgPool2d, AvgPool2dBackward, MaxPool2d
from tensorgrad.ops.reduce import Cumsum, LogSumExp, Max, Mean, Min, Norm, Prod, Std, Sum, Var
from tensorgrad.ops.shape import BroadcastTo, Concatenate, Reshape, Stack, Transpose

__all__ = [
    "Abs",
    "AdaptiveAvgPool2d",
    "Add",
    "AvgPool2d",
    "AvgPool2dBackward",
    "BinaryCrossEntropy",
    "BinaryCrossEntropyWithLogits",
    "BroadcastTo",
    "Cast",
    "Clip",
    "Clone",
    "Concatenate",
    "ConstantPad",
    "Conv2d",
    "CopyIntoView",
    "Cos",
    "CrossEntropy",
    "Cumsum",
    "Div",
    "Elu",
    "Erf",
    "Exp",
    "Expm1",
    "Fold",
    "Gather",
    "Gelu",
    "GetItem",
    "IndexAdd",
    "LeakyRelu",
    "Linear",
    "LinearChain",
    "Log",
    "Log1p",
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
    "Norm",
    "Normalize",
    "Op",
    "Pow",
    "Prod",
    "Relu",
    "Reshape",
    "ScatterAdd",
    "SetItem",
    "Sigmoid",
    "Silu",
    "Sin",
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
    "shape_of",
    "sum_to",
]
