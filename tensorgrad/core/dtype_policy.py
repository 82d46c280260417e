"""PyTorch's dtype policy for an op's first input, read from the op's declaration
(``ops.Op.dtypes``) and enforced once, by the engine, before the op runs:

=============  ===========================================================================
``"float"``    integer and bool inputs are computed in the default float dtype (PyTorch's
               ``exp``, ``log``, ``sin``, ``erf`` of an int tensor give float32)
``"floating"`` integer and bool inputs are refused, NotImplementedError naming the op (its
               kernels are float-only: ``logcumsumexp``)
``"no_bool"``  bool inputs are refused, NotImplementedError naming the op (``abs``)
=============  ===========================================================================

The methods whose ops declare none check what their arguments need themselves (with the
messages below, ``core/methods/common.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorgrad import array_backend

POLICIES = ("float", "floating", "no_bool")


def not_floating(name: str, dtype: Any) -> NotImplementedError:
    """PyTorch's refusal of an integer or bool input to a float-only kernel."""
    return NotImplementedError(
        f'"{name}" not implemented for {dtype} tensors (PyTorch has no integer or bool '
        f"kernel for it; convert with .float())"
    )


def not_bool(name: str, error: type[Exception] = NotImplementedError) -> Exception:
    """PyTorch's refusal of a bool input to a kernel that has none for bools."""
    return error(f'"{name}" not implemented for bool tensors (convert with .int() or .float())')


def enforce(policy: str, name: str, x: Any) -> Any:
    """``x`` (a Tensor) as the op ``name`` declaring ``policy`` takes it: itself, cast to
    the default float, or refused."""
    kind = x.dtype.kind
    if kind == "f":
        return x
    if policy == "float":
        return x.astype(array_backend.DEFAULT_FLOAT)
    if policy == "floating":
        raise not_floating(name, x.dtype)
    if policy == "no_bool" and x.dtype == np.bool_:
        raise not_bool(name)
    return x
