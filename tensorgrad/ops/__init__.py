"""Every differentiable primitive, as a small class: forward on arrays, backward as a VJP.

This package works on raw arrays and knows nothing of ``Tensor``: the layering runs one way,
ops → tensor → nn / optim / data.
"""

from tensorgrad.ops.base import Op, call, normalize_axes, normalize_axis, sum_to
from tensorgrad.ops.elementwise import (
    Abs,
    Add,
    Cast,
    Clip,
    Cos,
    Div,
    Erf,
    Exp,
    Gelu,
    LeakyRelu,
    Log,
    Maximum,
    Minimum,
    Mul,
    Neg,
    Pow,
    Relu,
    Sigmoid,
    Sin,
    Sqrt,
    Sub,
    Tanh,
    Where,
)
from tensorgrad.ops.linalg import MatMul
from tensorgrad.ops.nn import BinaryCrossEntropyWithLogits, CrossEntropy, Linear, LogSoftmax, Softmax
from tensorgrad.ops.reduce import LogSumExp, Max, Mean, Min, Sum, Var
from tensorgrad.ops.shape import BroadcastTo, Concatenate, GetItem, IndexAdd, Reshape, Stack, Transpose

__all__ = [
    "Abs", "Add", "BinaryCrossEntropyWithLogits", "BroadcastTo", "Cast", "Clip", "Concatenate",
    "Cos", "CrossEntropy", "Div", "Erf", "Exp", "Gelu", "GetItem", "IndexAdd", "LeakyRelu",
    "Linear", "Log", "LogSoftmax", "LogSumExp", "MatMul", "Max", "Maximum", "Mean", "Min",
    "Minimum", "Mul", "Neg", "Op", "Pow", "Relu", "Reshape", "Sigmoid", "Sin", "Softmax",
    "Sqrt", "Stack", "Sub", "Sum", "Tanh", "Transpose", "Var", "Where", "call",
    "normalize_axes", "normalize_axis", "sum_to",
]
