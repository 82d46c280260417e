"""The Tensor's math, with PyTorch's names and semantics (``dim``/``keepdim``; NumPy's
``axis``/``keepdims`` accepted, see ``args.numpy_names``): one mixin per family, each in its
module under ``core/methods/`` with its helpers beside it, composed here into the mixin the
Tensor inherits.

Most methods are one op; the rest are composed from other methods (``std`` aside, which needs
PyTorch's rule at zero), so they need no VJP of their own and are checked for free.
"""

from __future__ import annotations

from tensorgrad.core.methods.arithmetic import (
    ArithmeticMethods,
    check_integer_divisor,
    remainder,
    rounded_division,
)
from tensorgrad.core.methods.casts import CastMethods
from tensorgrad.core.methods.common import ValuesIndices, floating_kernel, no_bool_kernel
from tensorgrad.core.methods.comparisons import ComparisonMethods
from tensorgrad.core.methods.compositions import CompositionMethods
from tensorgrad.core.methods.matrices import MatrixMethods
from tensorgrad.core.methods.pointwise import PointwiseMethods
from tensorgrad.core.methods.reductions import MinMax, ReductionMethods
from tensorgrad.core.methods.sorting import SortingMethods

__all__ = [
    "MathMethods",
    "MinMax",
    "ValuesIndices",
    "check_integer_divisor",
    "floating_kernel",
    "no_bool_kernel",
    "remainder",
    "rounded_division",
]


class MathMethods(
    PointwiseMethods,
    ArithmeticMethods,
    ComparisonMethods,
    MatrixMethods,
    ReductionMethods,
    SortingMethods,
    CastMethods,
    CompositionMethods,
):
    """Pointwise math, arithmetic, comparisons, matrix products, reductions, sorting and
    casts (mixed into Tensor)."""

    __slots__ = ()
