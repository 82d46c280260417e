"""The one place where tensorgrad meets its array module.

Everything that turns Python data into arrays, creates arrays or draws random numbers goes
through here, so another NumPy-compatible module (CuPy, say) could slot in by changing ``xp``.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

xp = np  #: the array module the engine runs on

float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
float16 = np.dtype(np.float16)
int32 = np.dtype(np.int32)
int64 = np.dtype(np.int64)
uint8 = np.dtype(np.uint8)
bool_ = np.dtype(np.bool_)

DEFAULT_FLOAT = float32  #: the dtype of tensors made from Python floats and lists
FLOAT_DTYPES = (float16, float32, float64)

_rng = np.random.default_rng()


def as_dtype(dtype: Any) -> np.dtype | None:
    """Turn ``dtype`` (a NumPy dtype, a type or a name such as ``"float32"``) into a dtype."""
    if dtype is None:
        return None
    try:
        return np.dtype(dtype)
    except TypeError as exc:
        raise TypeError(f"not a dtype: {dtype!r}") from exc


def is_floating(dtype: np.dtype) -> bool:
    return dtype.kind == "f"


def _python_dtype(data: Any) -> np.dtype:
    """The dtype of Python data: bools stay bool, all other numbers become ``DEFAULT_FLOAT``."""
    if isinstance(data, (bool, np.bool_)):
        return bool_
    if isinstance(data, (list, tuple)):
        flat = np.asarray(data)
        if flat.dtype == np.bool_:
            return bool_
        if flat.dtype.kind not in "iuf" and flat.size:
            raise TypeError(f"cannot make a tensor from {type(data).__name__} of {flat.dtype}")
    return DEFAULT_FLOAT


def as_array(data: Any, dtype: Any = None, copy: bool = False) -> np.ndarray:
    """Coerce ``data`` to an array: the engine's single entry point for outside data.

    Python numbers and (nested) lists become float32 (bools become bool); NumPy arrays and
    NumPy scalars keep their dtype, so float64 arrays stay float64 and int arrays stay int.
    """
    dtype = as_dtype(dtype)
    if isinstance(data, np.ndarray):
        array = data
    elif isinstance(data, np.generic):
        array = np.asarray(data)
    elif isinstance(data, (numbers.Number, list, tuple)):
        array = np.asarray(data, dtype=dtype or _python_dtype(data))
    else:
        raise TypeError(f"cannot make a tensor from {type(data).__name__}")
    if array.dtype.kind not in "biuf":
        raise TypeError(f"tensors hold bool, integer or float data, not {array.dtype}")
    if dtype is not None and array.dtype != dtype:
        return array.astype(dtype)
    return array.copy() if copy else array


def scalar_operand(value: Any) -> Any:
    """A number used as an operand: kept as a Python scalar so NumPy treats it as weakly typed.

    ``x * 2.0`` must stay float32 for a float32 ``x``; a NumPy float64 scalar or a 0-d float64
    array would promote it to float64 (NEP 50), so NumPy scalars are unwrapped too.
    """
    return value.item() if isinstance(value, np.generic) else value


def manual_seed(seed: int) -> None:
    """Seed the generator behind ``rand``, ``randn``, weight initialisation and dropout."""
    global _rng
    _rng = np.random.default_rng(seed)


def rng() -> np.random.Generator:
    """The global random generator (reseeded by :func:`manual_seed`)."""
    return _rng


def zeros(shape: Any, dtype: Any = DEFAULT_FLOAT) -> np.ndarray:
    return xp.zeros(shape, dtype=as_dtype(dtype))


def ones(shape: Any, dtype: Any = DEFAULT_FLOAT) -> np.ndarray:
    return xp.ones(shape, dtype=as_dtype(dtype))


def full(shape: Any, value: Any, dtype: Any = DEFAULT_FLOAT) -> np.ndarray:
    return xp.full(shape, value, dtype=as_dtype(dtype))


def arange(start: Any, stop: Any = None, step: Any = 1, dtype: Any = None) -> np.ndarray:
    if stop is None:
        start, stop = 0, start
    if dtype is None:
        integral = all(isinstance(v, (int, np.integer)) for v in (start, stop, step))
        dtype = int64 if integral else DEFAULT_FLOAT
    return xp.arange(start, stop, step, dtype=as_dtype(dtype))


def eye(n: int, m: int | None = None, dtype: Any = DEFAULT_FLOAT) -> np.ndarray:
    return xp.eye(n, m, dtype=as_dtype(dtype))


def _float_dtype(dtype: Any, what: str) -> np.dtype:
    dtype = as_dtype(dtype)
    if dtype not in (float32, float64):
        raise TypeError(f"{what}: dtype must be float32 or float64, got {dtype}")
    return dtype


def rand(shape: Any, dtype: Any = DEFAULT_FLOAT) -> np.ndarray:
    return _rng.random(shape, dtype=_float_dtype(dtype, "rand"))


def randn(shape: Any, dtype: Any = DEFAULT_FLOAT) -> np.ndarray:
    return _rng.standard_normal(shape, dtype=_float_dtype(dtype, "randn"))


def get_rng_state() -> Any:
    """The global generator's state as a 1-D uint8 Tensor, as ``torch.get_rng_state`` returns
    it: a snapshot (the generator's state as JSON text) that :func:`set_rng_state` restores and
    ``tg.save`` stores, so that a resumed run draws the same dropout masks as an unbroken one."""
    import json

    from tensorgrad.tensor import Tensor  # imported on use: the backend sits below the Tensor

    text = json.dumps(_rng.bit_generator.state, sort_keys=True)
    return Tensor(np.frombuffer(text.encode("ascii"), dtype=np.uint8).copy())


def set_rng_state(new_state: Any) -> None:
    """Restore the global generator to a state returned by :func:`get_rng_state`.

    Like ``torch.set_rng_state``: anything but a uint8 Tensor raises ``TypeError``, a uint8
    Tensor that is not such a state raises ``RuntimeError``, and then nothing has changed."""
    import json

    from tensorgrad.tensor import Tensor

    if not isinstance(new_state, Tensor) or new_state.dtype != uint8:
        got = (
            f"a {new_state.dtype} Tensor"
            if isinstance(new_state, Tensor)
            else (type(new_state).__name__)
        )
        raise TypeError(f"set_rng_state: expected a uint8 Tensor from get_rng_state, got {got}")
    kind = type(_rng.bit_generator)
    try:
        state = json.loads(np.ascontiguousarray(new_state.data).tobytes().decode("ascii"))
        if not isinstance(state, dict) or state.get("bit_generator") != kind.__name__:
            raise ValueError(f"not a {kind.__name__} state")
        kind().state = state  # NumPy checks every field; try it on a scratch generator first
    except (ValueError, TypeError, KeyError, UnicodeDecodeError, RecursionError) as exc:
        raise RuntimeError(
            f"set_rng_state: the tensor is not a state returned by get_rng_state ({exc})"
        ) from None
    _rng.bit_generator.state = state
