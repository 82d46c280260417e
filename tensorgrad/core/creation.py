"""Making tensors: from data, filled with a value, ranges, identity and random ones.

dtypes are inferred as PyTorch infers them (Python ints → int64, floats → float32, bools →
bool; NumPy arrays keep theirs); ``device`` may only be the CPU.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorgrad import array_backend
from tensorgrad.core.args import check_fill_value, check_fits, shape_args, size_args
from tensorgrad.core.generator import numpy_generator, restore_state, state_tensor
from tensorgrad.core.tensor import Tensor


def _size(size: tuple, name: str, keyword: dict | None = None) -> tuple[int, ...]:
    """The shape of ``name(*size)`` or ``name(size=...)`` (``keyword`` holds the keyword
    arguments left over: ``size`` alone); none at all is PyTorch's TypeError (``zeros()`` is
    not a 0-d tensor: that is ``zeros(())``)."""
    if keyword:
        unexpected = sorted(set(keyword) - {"size"})
        if unexpected:
            raise TypeError(f"{name}() got an unexpected keyword argument {unexpected[0]!r}")
        if size:
            raise TypeError(f"{name}() got multiple values for argument 'size'")
        size = (keyword["size"],)
    elif not size:
        raise TypeError(f'{name}() missing 1 required positional arguments: "size"')
    shape = shape_args(size, "size")
    for n in shape:
        if n < 0:
            raise RuntimeError(f"{name}: trying to create a tensor with negative dimension {n}")
    return shape


def _make(array: np.ndarray, requires_grad: bool, device: Any = None) -> Tensor:
    if device is not None:
        array_backend.as_device(device)
    t = Tensor(array)
    if requires_grad:
        t.requires_grad_(True)
    return t


def tensor(
    data: Any,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    pin_memory: bool = False,
) -> Tensor:
    """A tensor from ``data`` (a number, nested lists, an array or a Tensor), always copied.

    Python ints become int64, floats float32, bools bool (PyTorch's inference); NumPy arrays
    and scalars keep their dtype. Only floating-point tensors can require grad.
    """
    if isinstance(data, Tensor):
        data = data._data
    return _make(array_backend.as_array(data, dtype, copy=True), requires_grad, device)


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """``data`` as a tensor, sharing memory where it can: a Tensor of the right dtype is
    returned as it is, an array of the right dtype is wrapped without a copy."""
    if isinstance(data, Tensor):
        return (
            data if dtype is None or data.dtype == array_backend.as_dtype(dtype) else data.to(dtype)
        )
    return _make(array_backend.as_array(data, dtype), False, device)


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing ``array``'s memory (changes to one are seen by the other)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy: expected an np.ndarray, got {type(array).__name__}")
    return Tensor(array_backend.as_array(array))


def zeros(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
          **size_keyword: Any) -> Tensor:  # fmt: skip
    shape = _size(size, "zeros", size_keyword)
    return _make(array_backend.zeros(shape, _dtype(dtype)), requires_grad, device)


def ones(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
          **size_keyword: Any) -> Tensor:  # fmt: skip
    shape = _size(size, "ones", size_keyword)
    return _make(array_backend.ones(shape, _dtype(dtype)), requires_grad, device)


def empty(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
          **size_keyword: Any) -> Tensor:  # fmt: skip
    """A tensor of ``size`` (filled with zeros: NumPy's empty memory would be garbage)."""
    shape = _size(size, "empty", size_keyword)
    return zeros(shape, dtype=dtype, device=device, requires_grad=requires_grad)


def full(
    size: Any, fill_value: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """A tensor of ``size`` filled with ``fill_value`` (its dtype inferred from the value)."""
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    check_fill_value(fill_value, "full")
    size = (size,) if isinstance(size, int) else size
    dtype = array_backend.as_dtype(dtype) or array_backend.as_array(fill_value).dtype
    check_fits(fill_value, dtype, "full")
    if np.dtype(dtype).kind == "u" and isinstance(fill_value, (int, np.integer)):
        fill_value = int(fill_value) % (int(np.iinfo(dtype).max) + 1)  # wraps, as PyTorch
    return _make(
        array_backend.full(size_args((size,), "full"), fill_value, dtype), requires_grad, device
    )


def scalar_tensor(
    s: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """A 0-d tensor holding the number ``s``, of the default float dtype unless ``dtype``
    says otherwise (an int or a bool too, unlike ``tg.tensor``)."""
    if isinstance(s, Tensor):
        s = s.item()
    check_fill_value(s, "scalar_tensor")
    target = array_backend.as_dtype(dtype) or array_backend.DEFAULT_FLOAT
    check_fits(s, target, "scalar_tensor")
    return _make(np.asarray(s).astype(target), requires_grad, device)


def _like(input: Any) -> Tensor:
    return input if isinstance(input, Tensor) else Tensor(array_backend.as_array(input))


def zeros_like(
    input: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    other = _like(input)
    return _make(array_backend.zeros(other.shape, dtype or other.dtype), requires_grad, device)


def ones_like(
    input: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    other = _like(input)
    return _make(array_backend.ones(other.shape, dtype or other.dtype), requires_grad, device)


def empty_like(
    input: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    return zeros_like(input, dtype, device, requires_grad)


def full_like(
    input: Any, fill_value: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    other = _like(input)
    return full(other.shape, fill_value, dtype or other.dtype, device, requires_grad)


def rand_like(
    input: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    other = _like(input)
    return rand(
        other.shape,
        dtype=_random_float("rand_like", dtype or other.dtype),
        device=device,
        requires_grad=requires_grad,
    )


def randn_like(
    input: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    other = _like(input)
    return randn(
        other.shape,
        dtype=_random_float("randn_like", dtype or other.dtype),
        device=device,
        requires_grad=requires_grad,
    )


def _random_float(what: str, dtype: Any) -> np.dtype:
    """``dtype``, where PyTorch draws uniform and normal values in floating dtypes only (an
    integer or bool one is its NotImplementedError, as for ``rand_like`` of an int tensor)."""
    resolved = array_backend.as_dtype(dtype)
    if resolved.kind != "f":
        raise NotImplementedError(f"{what}: not implemented for {resolved} (floating point only)")
    return resolved


def arange(
    start: Any,
    end: Any = None,
    step: Any = 1,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Evenly spaced values in ``[start, end)``: int64 for int arguments, else float32."""
    for value in (start, step) if end is None else (start, end, step):
        if value is None or isinstance(value, (str, bytes)):
            raise TypeError(f"arange: start, end and step must be numbers, got {value!r}")
    _no_bool_range("arange", dtype)
    if step == 0:  # PyTorch's ValueError (RuntimeError before)
        raise array_backend.ShapeError("arange: step must be nonzero")
    low, high = (0, start) if end is None else (start, end)
    if (high - low) * step < 0:
        raise RuntimeError(
            f"arange: upper bound and lower bound inconsistent with step sign "
            f"(start {low}, end {high}, step {step})"
        )
    return _make(array_backend.arange(start, end, step, dtype), requires_grad, device)


def linspace(
    start: float,
    end: float,
    steps: int,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end``, both included."""
    if steps < 0:
        raise RuntimeError(f"linspace: number of steps must be non-negative, got {steps}")
    if steps > 1:
        _no_bool_range("linspace", dtype)
    if dtype is not None and np.dtype(_dtype(dtype)).kind in "iu":
        for end_value in (start, end):
            check_fits(end_value, _dtype(dtype), "linspace")
    return _make(array_backend.linspace(start, end, steps, _dtype(dtype)), requires_grad, device)


def logspace(
    start: float,
    end: float,
    steps: int,
    base: float = 10.0,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """``steps`` values from ``base ** start`` to ``base ** end``, evenly spaced in the
    exponent (computed in float64, then cast)."""
    if steps < 0:
        raise RuntimeError(f"logspace: number of steps must be non-negative, got {steps}")
    target = _dtype(dtype) or array_backend.DEFAULT_FLOAT
    if np.dtype(target).kind in "biu":
        # PyTorch's integer logspace: the ends cast to the dtype first (truncated: −2.5 is
        # −2), the powers computed in floats, truncated and wrapped into the dtype
        for end_value in (start, end):
            check_fits(end_value, target, "logspace")
        start, end = array_backend.int_in(start, target), array_backend.int_in(end, target)
    with np.errstate(all="ignore"):  # a negative base to a fractional power: NaN, as PyTorch
        values = np.power(float(base), np.linspace(start, end, steps, dtype=np.float64))
    if np.dtype(target).kind in "iu":
        return _make(array_backend.c_cast(values, target), requires_grad, device)
    return _make(values.astype(target), requires_grad, device)


def eye(
    n: int, m: int | None = None, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    if n < 0:
        raise RuntimeError(f"eye: n must be greater or equal to 0, got {n}")
    if m is not None and m < 0:
        raise RuntimeError(f"eye: m must be greater or equal to 0, got {m}")
    return _make(array_backend.eye(n, m, _dtype(dtype)), requires_grad, device)


def rand(*size: Any, generator: Any = None, dtype: Any = None, device: Any = None,
         requires_grad: bool = False, **size_keyword: Any) -> Tensor:  # fmt: skip
    """Uniform samples in [0, 1) from ``generator`` (a :class:`~tensorgrad.Generator`), else
    from the global generator seeded by ``manual_seed``."""
    shape = _size(size, "rand", size_keyword)
    rng = numpy_generator(generator, "rand")
    return _make(array_backend.rand(shape, _dtype(dtype), rng), requires_grad, device)


def randn(*size: Any, generator: Any = None, dtype: Any = None, device: Any = None,
          requires_grad: bool = False, **size_keyword: Any) -> Tensor:  # fmt: skip
    """Standard normal samples from ``generator``, else from the global generator."""
    shape = _size(size, "randn", size_keyword)
    rng = numpy_generator(generator, "randn")
    return _make(array_backend.randn(shape, _dtype(dtype), rng), requires_grad, device)


def randperm(n: int, *, generator: Any = None, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:  # fmt: skip
    """A random permutation of ``0, ..., n - 1`` (int64 unless ``dtype``), from ``generator``,
    else from the global generator. The order is NumPy's, not PyTorch's."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"randperm: n must be an int, got {type(n).__name__}")
    if n < 0:
        raise RuntimeError(f"randperm: n must be non-negative, got {n}")
    rng = numpy_generator(generator, "randperm")
    order = array_backend.randperm(
        int(n), array_backend.as_dtype(dtype) or array_backend.int64, rng
    )
    return _make(order, requires_grad, device)


def randint(*args: Any, size: Any = None, generator: Any = None, dtype: Any = None,
            device: Any = None, requires_grad: bool = False) -> Tensor:  # fmt: skip
    """Random integers in ``[low, high)``: ``randint(high, size)`` or ``randint(low, high,
    size)``, as PyTorch's (int64 unless ``dtype``), from ``generator`` else the global one."""
    if size is None and args and isinstance(args[-1], (tuple, list)):
        *args, size = args
    if size is None or len(args) not in (1, 2):
        raise TypeError("randint: expected randint(high, size) or randint(low, high, size)")
    low, high = (0, args[0]) if len(args) == 1 else args
    if low >= high:
        raise RuntimeError(f"randint: expected low < high, got low={low}, high={high}")
    shape = _size((size,), "randint")
    rng = numpy_generator(generator, "randint")
    return _make(
        array_backend.randint(low, high, shape, dtype or array_backend.int64, rng),
        requires_grad,
        device,
    )


def _no_bool_range(name: str, dtype: Any) -> None:
    if array_backend.as_dtype(dtype) == np.bool_:
        raise NotImplementedError(f'{name}: "{name}" not implemented for bool')


def _dtype(dtype: Any) -> np.dtype:
    return array_backend.as_dtype(dtype) or array_backend.DEFAULT_FLOAT


# --------------------------------------------------------------------------- random state
def get_rng_state() -> Tensor:
    """The global generator's state as a 1-D uint8 tensor, as ``torch.get_rng_state`` returns
    it: a snapshot (the generator's state as JSON text) that :func:`set_rng_state` restores and
    ``tg.save`` stores, so that a resumed run draws the same dropout masks as an unbroken one."""
    return state_tensor(array_backend.rng())


def set_rng_state(new_state: Any) -> None:
    """Restore the global generator to a state returned by :func:`get_rng_state`.

    Like ``torch.set_rng_state``: anything but a uint8 tensor raises ``TypeError``, a uint8
    tensor that is not such a state raises ``RuntimeError``, and then nothing has changed."""
    restore_state(array_backend.rng(), new_state, "set_rng_state", "get_rng_state")


# --------------------------------------------------------------------------- interop
def from_dlpack(ext_tensor: Any) -> Tensor:
    """A tensor sharing the memory of ``ext_tensor``, any object with ``__dlpack__`` on the
    CPU (a NumPy array, a PyTorch or JAX CPU tensor, a Tensor): zero-copy, so writes through
    one are seen by the other. Other devices and dtypes tensorgrad lacks raise
    :class:`~tensorgrad.UnsupportedError` naming them."""
    if isinstance(ext_tensor, Tensor):
        return Tensor(ext_tensor._data)
    if not hasattr(ext_tensor, "__dlpack__"):
        raise TypeError(
            f"from_dlpack: expected an object with __dlpack__ (a NumPy array, a PyTorch or JAX "
            f"tensor), got {type(ext_tensor).__name__}"
        )
    device = getattr(ext_tensor, "__dlpack_device__", lambda: (1, 0))()
    if int(device[0]) != 1:  # DLPack's kDLCPU
        raise array_backend.UnsupportedError(
            f"from_dlpack: the tensor lives on DLPack device type {int(device[0])}, not the CPU; "
            "tensorgrad runs on the CPU only (see docs/porting.md): move it to the CPU first"
        )
    try:
        array = np.from_dlpack(ext_tensor)
    except (BufferError, TypeError, ValueError) as exc:
        raise array_backend.UnsupportedError(
            f"from_dlpack: NumPy cannot import this tensor ({exc}); tensors hold bool, integer "
            "or float data (see docs/porting.md)"
        ) from exc
    return Tensor(array_backend.as_array(array))
