"""The one place where tensorgrad meets its array module.

Everything that turns Python data into arrays, decides a result's dtype, creates arrays or
draws random numbers goes through here, so another NumPy-compatible module (CuPy, say) could
slot in by changing ``xp``, and a device other than the CPU would be named here.

dtypes follow PyTorch's rules, not NumPy's: Python ints become int64, Python floats the
default float dtype (float32), bools bool; and an int tensor combined with a float number
gives float32, where NumPy would give float64 (:func:`promote_types`).
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

xp = np  #: the array module the engine runs on

float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
float16 = np.dtype(np.float16)
int8 = np.dtype(np.int8)
int16 = np.dtype(np.int16)
int32 = np.dtype(np.int32)
int64 = np.dtype(np.int64)
uint8 = np.dtype(np.uint8)
bool_ = np.dtype(np.bool_)

DEFAULT_FLOAT = float32  #: the dtype of tensors made from Python floats
FLOAT_DTYPES = (float16, float32, float64)

#: PyTorch's spellings that are not NumPy dtype names
_DTYPE_ALIASES = {
    "float": float32,
    "double": float64,
    "half": float16,
    "long": int64,
    "int": int32,
    "short": int16,
    "bool": bool_,
}

#: PyTorch dtypes NumPy has no name for (NumPy's complex types are refused below)
_PYTORCH_ONLY_DTYPES = ("bfloat16", "complex32", "chalf", "cfloat", "cdouble", "float8_e4m3fn",
                        "float8_e5m2", "qint8", "quint8", "qint32")  # fmt: skip

_rng = np.random.default_rng()


class UnsupportedDtype:
    """A PyTorch dtype tensorgrad has no arrays for (``torch.bfloat16``, ``torch.complex64``,
    ...), as a name a program may hold: ported code builds tables such as nanoGPT's
    ``{'float32': torch.float32, 'bfloat16': torch.bfloat16}`` before it picks one. Making or
    casting a tensor with it raises :class:`UnsupportedError` naming it (``as_dtype``)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"torch.{self.name}"

    def __reduce__(self) -> tuple:
        return (unsupported_dtype, (self.name,))

    @property
    def is_floating_point(self) -> bool:
        return self.name.startswith(("bfloat", "float"))

    @property
    def is_complex(self) -> bool:
        return self.name.startswith(("complex", "c"))


_UNSUPPORTED_DTYPES: dict[str, UnsupportedDtype] = {}


def unsupported_dtype(name: str) -> UnsupportedDtype:
    """The one placeholder for the PyTorch dtype ``name`` (``"bfloat16"``, ...)."""
    if name not in _UNSUPPORTED_DTYPES:
        _UNSUPPORTED_DTYPES[name] = UnsupportedDtype(name)
    return _UNSUPPORTED_DTYPES[name]


class UnsupportedError(TypeError):
    """A PyTorch feature tensorgrad does not have (a device, a dtype): see docs/porting.md."""


# PyTorch raises RuntimeError where NumPy (and tensorgrad before) raise ValueError or
# TypeError; each of these is both, so code written for either catches it.
class ShapeError(RuntimeError, ValueError):
    """Shapes (or values) an op refuses: a failed broadcast, matmul's inner sizes, cat's other
    dimensions, a repeated dim, reducing an empty tensor. PyTorch's RuntimeError; a
    ValueError too. ``float()`` of a multi-element tensor (PyTorch's ValueError) is one."""


class IndexRangeError(IndexError, RuntimeError):
    """An index out of range where PyTorch raises IndexError or RuntimeError depending on
    the dimension (``index_select``); both."""


class DtypeError(RuntimeError, TypeError):
    """A dtype an op refuses where PyTorch raises RuntimeError (a non-bool mask for ``where``
    or ``masked_fill``, mixed dtypes in ``mm``, ``linear`` or a convolution); a TypeError too."""


def as_dtype(dtype: Any) -> np.dtype | None:
    """Turn ``dtype`` (a NumPy dtype, a type, or a name such as ``"float32"`` or ``"long"``)
    into a NumPy dtype; ``None`` stays ``None``. Complex and other kinds are refused."""
    if dtype is None:
        return None
    if isinstance(dtype, str) and dtype in _DTYPE_ALIASES:
        return _DTYPE_ALIASES[dtype]
    if dtype is float:
        return DEFAULT_FLOAT
    if dtype is int:
        return int64
    if isinstance(dtype, UnsupportedDtype):
        raise UnsupportedError(
            f"dtype {dtype!r} is not supported: tensors hold bool, integer or float data "
            "(float16/32/64, int8/16/32/64, uint8, bool; see docs/porting.md)"
        )
    try:
        result = np.dtype(dtype)
    except TypeError as exc:
        if isinstance(dtype, str) and dtype in _PYTORCH_ONLY_DTYPES:
            raise UnsupportedError(
                f"dtype {dtype!r} is not supported: tensors hold bool, integer or float data "
                "(see docs/porting.md)"
            ) from exc
        raise TypeError(f"not a dtype: {dtype!r}") from exc
    if result.kind not in "biuf":
        raise UnsupportedError(
            f"dtype {result} is not supported: tensors hold bool, integer or float data "
            "(see docs/porting.md)"
        )
    return result


def is_floating(dtype: np.dtype) -> bool:
    return dtype.kind == "f"


def cast(array: Any, dtype: np.dtype) -> Any:
    """``array.astype(dtype)`` (an array, or a Tensor), as silent as PyTorch's conversion:
    NaN, ±inf and floats out of an integer type's range become whatever the platform's
    conversion gives, and floats beyond a narrower float's range ±inf, without NumPy's
    RuntimeWarning. (Only a float source can raise it: the ``np.errstate`` is spent on those
    casts alone.)"""
    if array.dtype.kind == "f" and (dtype.kind != "f" or dtype.itemsize < array.dtype.itemsize):
        with np.errstate(invalid="ignore", over="ignore"):
            return array.astype(dtype)
    return array.astype(dtype)


# --------------------------------------------------------------------------- devices
class device:
    """Where a tensor lives: ``device("cpu")`` is the only one (NumPy's memory). Other
    devices are refused by name, as the place where a GPU array module would slot in."""

    __slots__ = ("index", "type")

    def __init__(self, type: Any, index: int | None = None) -> None:
        if isinstance(type, device):
            type, index = type.type, type.index
        if not isinstance(type, str):
            raise TypeError(f"device: expected a string such as 'cpu', got {type!r}")
        name, _, number = type.partition(":")
        if number:
            index = int(number)
        if name != "cpu":
            raise UnsupportedError(
                f"device {type!r} is not available: tensorgrad runs on the CPU only "
                "(see docs/porting.md); use 'cpu'"
            )
        self.type, self.index = name, index

    def __repr__(self) -> str:
        index = "" if self.index is None else f", index={self.index}"
        return f"device(type={self.type!r}{index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))


CPU = device("cpu")


def as_device(value: Any) -> device:
    """``value`` (a string, a :class:`device` or an int device index) as a device; anything
    but the CPU raises :class:`UnsupportedError` naming it."""
    if isinstance(value, device):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        raise UnsupportedError(
            f"device index {value} names an accelerator: tensorgrad runs on the CPU only "
            "(see docs/porting.md)"
        )
    return device(value)


# --------------------------------------------------------------------------- dtype inference
def _python_dtype(data: Any) -> np.dtype:
    """PyTorch's dtype for Python data: bool → bool, int → int64, float → the default float."""
    if isinstance(data, (bool, np.bool_)):
        return bool_
    if isinstance(data, numbers.Integral):
        return int64
    if isinstance(data, numbers.Real):
        return DEFAULT_FLOAT
    raise UnsupportedError(
        f"cannot make a tensor from a {type(data).__name__}: tensors hold bool, integer or "
        "float data (complex numbers are not supported, see docs/porting.md)"
    )


def _is_sequence(value: Any) -> bool:
    """A list, a tuple or an array with dimensions: one level of nesting in tensor data."""
    return isinstance(value, (list, tuple)) or (isinstance(value, np.ndarray) and value.ndim > 0)


def _nested(data: Any) -> tuple[tuple[int, ...], np.dtype]:
    """The shape and PyTorch dtype of nested lists of numbers (or of arrays, NumPy scalars
    and 0-d tensors, which keep their dtype), with PyTorch's error for ragged lists
    (``expected sequence of length 2 at dim 1 (got 1)``). Iterative."""
    shape: list[int] = []
    level: list[Any] = [data]
    while any(_is_sequence(v) for v in level):
        dim = len(shape)
        if not all(_is_sequence(v) for v in level):
            raise ValueError(f"expected a sequence at dim {dim}, got a mix of numbers and lists")
        expected = len(level[0])
        for v in level:
            if len(v) != expected:
                raise ValueError(
                    f"expected sequence of length {expected} at dim {dim} (got {len(v)})"
                )
        shape.append(expected)
        level = [item for v in level for item in v]
    dtype = None
    for value in level:  # NumPy scalars and 0-d tensors keep their dtype; numbers are weak
        if hasattr(value, "ndim") and hasattr(value, "dtype"):
            if value.ndim:  # a Tensor with dimensions (arrays were unpacked above)
                raise ValueError("only one element tensors can be converted to Python scalars")
            found = as_dtype(value.dtype)
        else:
            found = _python_dtype(value)
        dtype = found if dtype is None else _promote(dtype, found)
    return tuple(shape), DEFAULT_FLOAT if dtype is None else dtype


_FLAT_DTYPES = {
    frozenset(): None,  # empty: the default float, by _nested
    frozenset({bool}): np.dtype(np.bool_),
    frozenset({int}): np.dtype(np.int64),
    frozenset({bool, int}): np.dtype(np.int64),
}


def _flat_numbers_dtype(data: Any) -> np.dtype | None:
    """PyTorch's dtype for a flat list of Python bools, ints and floats (a dataset item,
    ``torch.tensor(tokens, dtype=torch.long)``), or None for anything else, which
    :func:`_nested` then reads element by element."""
    types = frozenset(map(type, data))
    if types in _FLAT_DTYPES:
        return _FLAT_DTYPES[types]
    if float in types and types <= {bool, int, float}:
        return DEFAULT_FLOAT
    return None


def as_array(data: Any, dtype: Any = None, copy: bool = False) -> np.ndarray:
    """Coerce ``data`` to an array: the engine's single entry point for outside data.

    Python numbers and (nested) lists get PyTorch's dtypes (int → int64, float → float32,
    bool → bool); NumPy arrays and NumPy scalars keep theirs. Complex, object and string
    data are refused with :class:`UnsupportedError` (a ``TypeError``).
    """
    dtype = as_dtype(dtype)
    if isinstance(data, np.ndarray):
        array = data
    elif isinstance(data, np.generic):
        array = np.asarray(data)
    elif isinstance(data, (list, tuple)):
        inferred = _flat_numbers_dtype(data)  # the common case, a flat list, in C loops
        if inferred is None:
            _, inferred = _nested(data)
        array = _from_numbers(data, dtype or inferred)
    elif isinstance(data, numbers.Number):
        array = _from_numbers(data, dtype or _python_dtype(data))
    elif hasattr(data, "__array__") or hasattr(data, "__array_interface__"):
        array = np.asarray(data)
    else:
        raise TypeError(f"cannot make a tensor from {type(data).__name__}")
    if array.dtype.kind not in "biuf":
        raise UnsupportedError(
            f"tensors hold bool, integer or float data, not {array.dtype} (see docs/porting.md)"
        )
    if dtype is not None and array.dtype != dtype:
        return cast(array, dtype)
    return array.copy() if copy else array


def _from_numbers(data: Any, dtype: np.dtype) -> np.ndarray:
    """A Python number or (nested) list as an array of ``dtype``: a float beyond float32's
    (or float16's) range is ±inf there, silently, as in ``torch.tensor(1e300)``."""
    if dtype.kind == "f" and dtype.itemsize < 8:
        with np.errstate(over="ignore"):
            return np.asarray(data, dtype=dtype)
    return np.asarray(data, dtype=dtype)


def scalar_operand(value: Any) -> Any:
    """A number used as an operand: kept as a Python scalar so NumPy treats it as weakly typed.

    ``x * 2.0`` must stay float32 for a float32 ``x``; a NumPy float64 scalar or a 0-d float64
    array would promote it to float64 (NEP 50), so NumPy scalars are unwrapped too. Complex
    numbers are refused.
    """
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, complex):
        raise UnsupportedError(
            "complex numbers are not supported: tensors hold bool, integer or float data "
            "(see docs/porting.md)"
        )
    return value


# --------------------------------------------------------------------------- type promotion
_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2}


def _promote(a: np.dtype, b: np.dtype) -> np.dtype:
    """PyTorch's promotion of two dtypes: a float beats an integer whatever their sizes
    (NumPy: int64 with float16 gives float64), bool loses to both."""
    ka, kb = _CATEGORY[a.kind], _CATEGORY[b.kind]
    if ka != kb:
        return a if ka > kb else b
    return np.promote_types(a, b)


def _combine(higher: np.dtype | None, lower: np.dtype | None) -> np.dtype | None:
    """PyTorch's ``combine_categories``: a lower-priority group only counts where it brings a
    higher category (a float number lifts an int tensor; it does not widen a float tensor)."""
    if higher is None or lower is None:
        return lower if higher is None else higher
    if _CATEGORY[higher.kind] == 2:
        return higher
    if _CATEGORY[higher.kind] == 0 or _CATEGORY[lower.kind] == 2:
        return _promote(higher, lower)
    return higher


def result_type(*operands: Any) -> np.dtype:
    """The dtype of an elementwise op on ``operands`` under PyTorch's rules.

    Operands are arrays (a tensor's data) or Python numbers. Three groups, in priority
    order: arrays with dimensions, 0-d arrays, numbers. A lower group only matters when it
    brings a higher category (bool < integer < float): ``int_tensor * 1.5`` is float32 and
    ``float32_tensor * float64_scalar_tensor`` stays float32.
    """
    groups: list[np.dtype | None] = [None, None, None]
    for value in operands:
        if isinstance(value, np.ndarray):
            dtype, group = value.dtype, 0 if value.ndim else 1
        elif isinstance(value, np.generic):
            dtype, group = value.dtype, 1
        else:
            dtype, group = _python_dtype(value), 2
        previous = groups[group]
        groups[group] = dtype if previous is None else _promote(previous, dtype)
    result = _combine(groups[0], _combine(groups[1], groups[2]))
    assert result is not None
    return result


def needs_promotion(x: Any, y: Any) -> bool:
    """Whether NumPy's dtype for ``x ∘ y`` may differ from PyTorch's: False for the common
    cases (two arrays of one dtype; a float array and a number), checked without
    :func:`result_type`."""
    if isinstance(x, np.ndarray):
        if isinstance(y, np.ndarray):
            return x.dtype != y.dtype
        return x.dtype.kind != "f" or isinstance(y, np.generic)
    if isinstance(y, np.ndarray):
        return y.dtype.kind != "f" or isinstance(x, np.generic)
    return True


# --------------------------------------------------------------------------- creation
def manual_seed(seed: int) -> None:
    """Seed the generator behind ``rand``, ``randn``, weight initialisation and dropout."""
    global _rng
    _rng = np.random.default_rng(seed)


#: why random draws from the global generator are refused just now ("" when they are
#: not): inside ``tg.func.vmap(..., randomness="error")``, as PyTorch's vmap refuses them
random_refusal = ""


def rng() -> np.random.Generator:
    """The global random generator (reseeded by :func:`manual_seed`)."""
    if random_refusal:
        raise RuntimeError(random_refusal)
    return _rng


def zeros(shape: Any, dtype: Any = DEFAULT_FLOAT) -> np.ndarray:
    return xp.zeros(shape, dtype=as_dtype(dtype))


def ones(shape: Any, dtype: Any = DEFAULT_FLOAT) -> np.ndarray:
    return xp.ones(shape, dtype=as_dtype(dtype))


def empty(shape: Any, dtype: Any = DEFAULT_FLOAT) -> np.ndarray:
    return xp.empty(shape, dtype=as_dtype(dtype))


def full(shape: Any, value: Any, dtype: Any = DEFAULT_FLOAT) -> np.ndarray:
    return xp.full(shape, value, dtype=as_dtype(dtype))


def arange(start: Any, stop: Any = None, step: Any = 1, dtype: Any = None) -> np.ndarray:
    if stop is None:
        start, stop = 0, start
    if dtype is None:
        integral = all(isinstance(v, (int, np.integer)) for v in (start, stop, step))
        dtype = int64 if integral else DEFAULT_FLOAT
    dtype = as_dtype(dtype)
    if dtype.kind in "iu" and not all(
        isinstance(v, (int, np.integer)) for v in (start, stop, step)
    ):
        # PyTorch steps from start by step cast to the integer dtype (NumPy steps in floats
        # and casts each value), counting the elements in floats; for int64 it casts the end
        # too, as it counts in int64
        # (a step that casts to 0 gives start repeated, except in int64, which divides by it)
        first, stride = int(start), int(step)
        if stride == 0 and dtype == int64:
            raise ShapeError(f"arange: step must be nonzero (step {step} in {dtype})")
        span = (int(stop) - first) / stride if dtype == int64 else (stop - start) / step
        count = max(math.ceil(span), 0)
        return (first + stride * xp.arange(count)).astype(dtype)
    return xp.arange(start, stop, step, dtype=dtype)


def linspace(start: float, end: float, steps: int, dtype: Any = DEFAULT_FLOAT) -> np.ndarray:
    dtype = as_dtype(dtype)
    if dtype.kind in "biu" and steps > 1:
        # PyTorch's integer linspace: the ends truncated to integers, the points between them
        # stepped from the nearer end and truncated (NumPy floors: -2.5 → -3, not -2)
        first, last = int_in(start, dtype), int_in(end, dtype)
        i = xp.arange(steps)
        step = (last - first) / (steps - 1)
        values = xp.where(i < steps // 2, first + step * i, last - step * (steps - 1 - i))
        return values.astype(dtype)
    return xp.linspace(start, end, steps, dtype=dtype)


def int_in(value: Any, dtype: Any) -> int:
    """``value`` cast to the integer (or bool) ``dtype`` as PyTorch casts a range's end:
    truncated, and wrapped into the dtype (−2 in uint8 is 254)."""
    return int(xp.asarray(int(value), dtype=int64).astype(as_dtype(dtype)))


def c_cast(values: np.ndarray, dtype: Any) -> np.ndarray:
    """Floats cast to the integer ``dtype`` as PyTorch's CPU kernels cast them (C's cast on
    x86): truncated; NaN and values beyond the range become the lowest int32 (int64 for
    int64), then the narrower types keep their low bits (NumPy's cast leaves those values
    undefined and warns)."""
    dtype = as_dtype(dtype)
    wide = int64 if dtype == int64 else int32
    info = xp.iinfo(wide)
    bad = ~((values >= info.min) & (values < float(info.max) + 1))
    whole = xp.where(bad, 0, xp.trunc(xp.where(bad, 0, values))).astype(wide)
    return xp.where(bad, info.min, whole).astype(wide).astype(dtype)


def eye(n: int, m: int | None = None, dtype: Any = DEFAULT_FLOAT) -> np.ndarray:
    return xp.eye(n, m, dtype=as_dtype(dtype))


def _float_dtype(dtype: Any, what: str) -> np.dtype:
    dtype = as_dtype(dtype)
    if dtype not in (float32, float64):
        raise TypeError(f"{what}: dtype must be float32 or float64, got {dtype}")
    return dtype


# ``generator``: a NumPy Generator of one's own (``tg.Generator``'s), else the global one
def rand(shape: Any, dtype: Any = DEFAULT_FLOAT, generator: Any = None) -> np.ndarray:
    return (generator or rng()).random(shape, dtype=_float_dtype(dtype, "rand"))


def randn(shape: Any, dtype: Any = DEFAULT_FLOAT, generator: Any = None) -> np.ndarray:
    return (generator or rng()).standard_normal(shape, dtype=_float_dtype(dtype, "randn"))


def randint(low: int, high: int, shape: Any, dtype: Any = int64, generator: Any = None):
    dtype = as_dtype(dtype)
    drawn = dtype if dtype.kind in "iu" else int64  # PyTorch draws floats (and bools) too
    return (generator or rng()).integers(low, high, shape, dtype=drawn).astype(dtype, copy=False)


def randperm(n: int, dtype: Any = int64, generator: Any = None) -> np.ndarray:
    return (generator or rng()).permutation(n).astype(as_dtype(dtype), copy=False)


# --------------------------------------------------------------------------- type limits
def finfo(type: Any = None) -> np.finfo:
    """PyTorch's ``torch.finfo``: the limits of a float dtype (default: the default float
    dtype), as NumPy's ``finfo`` (``eps``, ``max``, ``min``, ``tiny``, ``bits``, ...)."""
    dtype = DEFAULT_FLOAT if type is None else as_dtype(type)
    if dtype.kind != "f":
        raise TypeError(f"finfo: expected a floating-point dtype, got {dtype}")
    return np.finfo(dtype)


def iinfo(type: Any) -> np.iinfo:
    """PyTorch's ``torch.iinfo``: the limits of an integer dtype (``min``, ``max``, ``bits``)."""
    dtype = as_dtype(type)
    if dtype is None or dtype.kind not in "iu":
        raise TypeError(f"iinfo: expected an integer dtype, got {dtype}")
    return np.iinfo(dtype)
