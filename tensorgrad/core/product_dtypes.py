"""PyTorch's dtype rules for the ops that compute in one dtype: the matrix products (``@``,
``matmul``, ``mm``, ``bmm``, ``dot``, ``mv``, ``addmm``, ``addmv``, ``baddbmm``), ``linear``
and the convolutions, in one place.

NumPy would promote (a float32 input with float64 weights gives float64); PyTorch refuses
with a RuntimeError, as a float32 model fed float64 data is a bug to report, not a reason to
compute in float64 silently. tensorgrad refuses where PyTorch does, with ``DtypeError`` (a
RuntimeError, and a TypeError), and raises PyTorch's NotImplementedError for a dtype its CPU
kernel lacks (bool for the products and convolutions; the integers but int64 for the
transposed convolutions). The one exception to "one dtype" is a bias that PyTorch adds in
place after the product (``conv_transpose*d``; ``linear`` off its fused path): it is cast to
the product's dtype where PyTorch's in-place ``add_`` would cast it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorgrad import array_backend
from tensorgrad.core import engine, functions

#: PyTorch's names of the dtypes in its kernels' messages ("not implemented for 'Bool'")
_KERNEL_NAMES = {
    "bool": "Bool",
    "uint8": "Byte",
    "int8": "Char",
    "int16": "Short",
    "int32": "Int",
    "int64": "Long",
    "float16": "Half",
    "float32": "Float",
    "float64": "Double",
}


def _raw(value: Any) -> Any:
    return value._data if isinstance(value, engine.Tensor) else value


def _dtype(value: Any) -> np.dtype | None:
    return getattr(_raw(value), "dtype", None)


def _listed(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def check_same_dtype(op: str, *operands: tuple[str, Any]) -> None:
    """Refuse (``DtypeError``, PyTorch's RuntimeError) named operands of more than one dtype:
    ``check_same_dtype("linear", ("input", x), ("weight", w))``. An operand without a dtype
    (a Python number, a list) is left to the op."""
    dtypes = {_dtype(value) for _, value in operands}
    dtypes.discard(None)
    if len(dtypes) > 1:
        typed = [(name, _raw(value)) for name, value in operands if _dtype(value) is not None]
        names = _listed([name for name, _ in typed])
        got = _listed([f"{array.dtype} (shape {np.shape(array)})" for _, array in typed])
        raise array_backend.DtypeError(
            f"{op}: expected {names} to have the same dtype, but got {got}"
        )


def check_kernel(op: str, kernel: str, value: Any, *, integers: bool = True) -> None:
    """PyTorch's NotImplementedError where its CPU ``kernel`` has no loop for ``value``'s
    dtype: bool always; with ``integers=False`` (the transposed convolutions) every integer
    dtype but int64 too."""
    dtype = _dtype(value)
    if dtype is None or dtype.kind == "f":
        return
    if dtype.kind == "b" or (not integers and dtype != np.int64):
        raise NotImplementedError(
            f"{op}: not implemented for '{_KERNEL_NAMES.get(dtype.name, dtype.name)}' (input "
            f'of shape {np.shape(_raw(value))}); PyTorch\'s "{kernel}" has no {dtype} kernel '
            "either"
        )


def check_matmul_dtypes(
    op: str, x: Any, y: Any, names: tuple[str, str] = ("input", "other")
) -> None:
    """A matrix product's operands (``matmul``, ``mm``, ``bmm``, ``dot``, ``mv``): one dtype,
    not bool. A 0-d operand is left to the product's shape error, which PyTorch raises first.
    A product that runs as PyTorch's batched kernel (``y`` of 3 or more dimensions) checks
    ``x``'s dtype before the pair, as PyTorch's ``bmm`` does: a bool ``x`` is
    NotImplementedError even beside a float ``y``."""
    x_dtype, y_dtype = _dtype(x), _dtype(y)
    if x_dtype is None or y_dtype is None or (x_dtype == y_dtype and x_dtype != np.bool_):
        return  # the common case, first: a few µs on every product
    x_shape, y_shape = np.shape(_raw(x)), np.shape(_raw(y))
    if not x_shape or not y_shape:
        return
    if op != "dot" and not _multipliable(x_shape, y_shape):
        return  # the product's shape error, which PyTorch raises before the dtypes' (not dot)
    if len(y_shape) >= 3:
        check_kernel(op, "bmm", x)
    check_same_dtype(op, (names[0], x), (names[1], y))
    check_kernel(op, "addmm_impl_cpu_", x)


def _multipliable(x_shape: tuple, y_shape: tuple) -> bool:
    """Whether ``matmul`` of these shapes has a result: the inner sizes agree and the batch
    dimensions broadcast."""
    inner = y_shape[-2] if len(y_shape) >= 2 else y_shape[0]
    if x_shape[-1] != inner:
        return False
    try:
        np.broadcast_shapes(x_shape[:-2], y_shape[:-2])
    except ValueError:
        return False
    return True


def check_linear_dtypes(
    op: str, x: Any, weight: Any, bias: Any, *, shapes_checked: bool = False
) -> bool:
    """``linear``'s operands (tensors; ``bias`` may be None), in the order PyTorch checks
    them: the shapes (an input that does not fit the weight is left to the product's shape
    error, unless ``shapes_checked``: a caller whose ``x`` stands for the real input), one
    dtype, then the 1-D weight its fused ``addmm`` refuses, then a bool input (no kernel).
    Return whether ``bias`` is fused (then it must share the dtype too) rather than
    added after the product (:func:`added_in_place`).

    PyTorch fuses the bias for a 2-D input, and for any input with a 1-D bias. (It adds a 1-D
    bias after the product for a non-contiguous input of three or more dimensions: a memory
    layout tensorgrad does not share, as it keeps convolution outputs channels-last, so the
    rule here does not depend on it; docs/porting.md.)"""
    fused = bias is not None and (x.ndim == 2 or bias.ndim == 1)
    if not shapes_checked and weight.ndim == 2 and x.ndim and x.shape[-1] != weight.shape[-1]:
        return fused  # the product's shape error, which PyTorch raises before the dtypes'
    check_same_dtype(op, ("input", x), ("weight", weight), *([("bias", bias)] if fused else []))
    if fused and weight.ndim == 1:
        raise RuntimeError(
            f"{op}: mat2 must be a matrix, got a 1-D weight {tuple(weight.shape)} (PyTorch fuses "
            f"a bias of shape {tuple(bias.shape)} into addmm)"
        )
    check_kernel(op, "addmm_impl_cpu_", x)
    return fused


def check_conv_dtypes(op: str, x: Any, weight: Any, bias: Any, *, transposed: bool = False) -> None:
    """A convolution's operands, in the order PyTorch checks them. ``conv*d``: a bias of
    another dtype than the input's, then a bool input (no kernel), then a weight of another
    dtype. ``conv_transpose*d``: an input with no kernel (bool and the integers but int64),
    then a weight of another dtype; its bias is added in place (:func:`added_in_place`)."""
    if bias is not None and not transposed:
        check_same_dtype(op, ("input", x), ("bias", bias))
    if transposed:
        check_kernel(op, "slow_conv_transpose2d_out_cpu", x, integers=False)
    else:
        check_kernel(op, "slow_conv2d_cpu", x)
    check_same_dtype(op, ("input", x), ("weight", weight))


def added_in_place(op: str, out: Any, bias: Any) -> Any:
    """``bias`` in ``out``'s dtype, as PyTorch's ``out.add_(bias)`` after a product keeps the
    product's dtype: a float64 bias on a float32 output is cast (its gradient comes back in
    float64); one that the in-place add cannot cast, such as a float bias on an integer
    output, is refused (PyTorch's RuntimeError)."""
    target = _dtype(out)
    promoted = array_backend.result_type(_raw(out), _raw(bias))
    if not functions.can_cast(promoted, target):
        raise array_backend.DtypeError(
            f"{op}: the bias ({_dtype(bias)}, shape {np.shape(_raw(bias))}) is added in place to "
            f"the {target} output, and the result type {promoted} can't be cast to {target}"
        )
    return bias.to(target) if _dtype(bias) != target else bias
