"""tensorgrad: a small, fast, correct tensor autograd framework on NumPy.

    import tensorgrad as tg
    x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    x.grad  # tensor([2., 4., 6.])

The layers: ``ops`` (each op's forward and VJP, on arrays) → ``core`` (the Tensor, the
recording engine and the backward sweep) → ``nn``, ``optim``, ``data`` and ``vision``. The
scalar engine ``tensorgrad.scalar`` stands apart. Subpackages load on first use
(``tg.nn``, ``tg.optim``, ``tg.data``, ...), so ``import tensorgrad`` stays light.
"""

from __future__ import annotations

import importlib
from typing import Any

from tensorgrad import array_backend, autograd
from tensorgrad._native.malloc import keep_freed_memory as _keep_freed_memory
from tensorgrad._native.threads import get_num_threads, set_num_threads
from tensorgrad.array_backend import (
    DtypeError,
    ShapeError,
    UnsupportedError,
    bool_,
    device,
    finfo,
    float16,
    float32,
    float64,
    iinfo,
    int8,
    int16,
    int32,
    int64,
    manual_seed,
    uint8,
)
from tensorgrad.core import creation as _creation
from tensorgrad.core.args import Size
from tensorgrad.core.creation import (
    arange,
    empty,
    empty_like,
    eye,
    from_numpy,
    full,
    full_like,
    get_rng_state,
    linspace,
    logspace,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    scalar_tensor,
    set_rng_state,
    tensor,
    zeros,
    zeros_like,
)
from tensorgrad.core.functions import *  # noqa: F403 - tg.exp(x) for x.exp(), and friends
from tensorgrad.core.functions import (
    METHOD_FUNCTIONS,
    atleast_1d,
    atleast_2d,
    atleast_3d,
    broadcast_shapes,
    broadcast_tensors,
    can_cast,
    cat,
    cdist,
    chain_matmul,
    chunk,
    column_stack,
    concat,
    concatenate,
    dstack,
    einsum,
    flatten,
    hstack,
    is_floating_point,
    is_tensor,
    matmul,
    maximum,
    meshgrid,
    minimum,
    numel,
    polygamma,
    promote_types,
    result_type,
    row_stack,
    rsub,
    split,
    stack,
    std_mean,
    tensordot,
    tril_indices,
    triu_indices,
    var_mean,
    vstack,
    where,
)
from tensorgrad.core.sampling import bernoulli, multinomial, normal
from tensorgrad.core.tensor import Tensor
from tensorgrad.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from tensorgrad.serialization import load, save

__version__ = "0.1.0"

# the star import above also brought the engine's one-argument as_tensor: PyTorch's is this
as_tensor = _creation.as_tensor

_keep_freed_memory()  # speed, process-wide: tensorgrad/_native/malloc.py says why

float = float32
double = float64
half = float16
long = int64
int = int32
short = int16
bool = bool_
dtype = type(float32)
backward = autograd.backward
grad = autograd.grad

#: subpackages and functions loaded on first use: name → (module, attribute or None)
_LAZY = {
    "nn": ("tensorgrad.nn", None),
    "optim": ("tensorgrad.optim", None),
    "data": ("tensorgrad.data", None),
    "vision": ("tensorgrad.vision", None),
    "distributed": ("tensorgrad.distributed", None),
    "scalar": ("tensorgrad.scalar", None),
    # moving models out (optional extras, imported by these modules on first use)
    "onnx": ("tensorgrad.onnx", None),
    "safetensors": ("tensorgrad.safetensors", None),
    "utils": ("tensorgrad.utils", None),
    "func": ("tensorgrad.func", None),
    "gradcheck": ("tensorgrad.autograd.finite_differences", "gradcheck"),
    "gradgradcheck": ("tensorgrad.autograd.finite_differences", "gradgradcheck"),
    "cuda": ("tensorgrad.compat.cuda", None),
    "accelerator": ("tensorgrad.compat.accelerator", None),
    "backends": ("tensorgrad.compat.backends", None),
    "Generator": ("tensorgrad.core.generator", "Generator"),
    "from_dlpack": ("tensorgrad.core.creation", "from_dlpack"),
    "randperm": ("tensorgrad.core.creation", "randperm"),
    "FloatTensor": ("tensorgrad.core.legacy_types", "FloatTensor"),
    "DoubleTensor": ("tensorgrad.core.legacy_types", "DoubleTensor"),
    "HalfTensor": ("tensorgrad.core.legacy_types", "HalfTensor"),
    "LongTensor": ("tensorgrad.core.legacy_types", "LongTensor"),
    "IntTensor": ("tensorgrad.core.legacy_types", "IntTensor"),
    "ShortTensor": ("tensorgrad.core.legacy_types", "ShortTensor"),
    "CharTensor": ("tensorgrad.core.legacy_types", "CharTensor"),
    "ByteTensor": ("tensorgrad.core.legacy_types", "ByteTensor"),
    "BoolTensor": ("tensorgrad.core.legacy_types", "BoolTensor"),
    # PyTorch names tensorgrad lacks: each raises an error naming it (tensorgrad.compat.unsupported)
    "complex32": ("tensorgrad.compat.unsupported", "complex32"),
    "complex64": ("tensorgrad.compat.unsupported", "complex64"),
    "complex128": ("tensorgrad.compat.unsupported", "complex128"),
    "cfloat": ("tensorgrad.compat.unsupported", "cfloat"),
    "cdouble": ("tensorgrad.compat.unsupported", "cdouble"),
    "chalf": ("tensorgrad.compat.unsupported", "chalf"),
    "bfloat16": ("tensorgrad.compat.unsupported", "bfloat16"),
    "float8_e4m3fn": ("tensorgrad.compat.unsupported", "float8_e4m3fn"),
    "float8_e5m2": ("tensorgrad.compat.unsupported", "float8_e5m2"),
    "qint8": ("tensorgrad.compat.unsupported", "qint8"),
    "quint8": ("tensorgrad.compat.unsupported", "quint8"),
    "qint32": ("tensorgrad.compat.unsupported", "qint32"),
    "compile": ("tensorgrad.compat.unsupported", "compile"),
    "jit": ("tensorgrad.compat.unsupported", "jit"),
    "autocast": ("tensorgrad.compat.amp", "autocast"),
    "amp": ("tensorgrad.compat.amp", None),
    "fft": ("tensorgrad.compat.unsupported", "fft"),
    "linalg": ("tensorgrad.compat.unsupported", "linalg"),
    "sparse": ("tensorgrad.compat.unsupported", "sparse"),
    "sparse_coo_tensor": ("tensorgrad.compat.unsupported", "sparse_coo_tensor"),
    "distributions": ("tensorgrad.compat.unsupported", "distributions"),
    "special": ("tensorgrad.compat.unsupported", "special"),
    "hub": ("tensorgrad.compat.unsupported", "hub"),
    "quantization": ("tensorgrad.compat.unsupported", "quantization"),
    "mps": ("tensorgrad.compat.unsupported", "mps"),
    "xpu": ("tensorgrad.compat.unsupported", "xpu"),
}


def _at_pytorchs_paths() -> None:
    """The PyTorch shims of ``compat/`` (a few small modules) under PyTorch's names too:
    ``tensorgrad.cuda``, ``tensorgrad.accelerator`` and ``tensorgrad.backends`` (with
    ``.cudnn`` and the rest) are those modules themselves, so ``import torch.backends.cudnn``
    ports as written and a switch set through either path is the same switch."""
    import sys

    from tensorgrad.compat import accelerator as _accelerator
    from tensorgrad.compat import backends as _backends
    from tensorgrad.compat import cuda as _cuda

    for name, module in (("cuda", _cuda), ("accelerator", _accelerator), ("backends", _backends)):
        sys.modules[f"{__name__}.{name}"] = module
    for name in _backends.__all__:
        sys.modules[f"{__name__}.backends.{name}"] = getattr(_backends, name)


_at_pytorchs_paths()


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module_name, attribute = _LAZY[name]
        value = importlib.import_module(module_name)
        if attribute is not None:
            value = getattr(value, attribute)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tensorgrad' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


def get_default_dtype() -> Any:
    """The dtype of tensors made from Python floats (float32 unless changed)."""
    return array_backend.DEFAULT_FLOAT


def set_default_dtype(d: Any) -> None:
    """Make Python floats become ``d`` (float32 or float64), as PyTorch's."""
    resolved = array_backend.as_dtype(d)
    if resolved not in (float32, float64):
        raise TypeError(f"set_default_dtype: only float32 or float64, got {resolved}")
    array_backend.DEFAULT_FLOAT = resolved


__all__ = [
    "Size",
    "Tensor",
    "DtypeError",
    "ShapeError",
    "UnsupportedError",
    "__version__",
    "arange",
    "as_tensor",
    "autograd",
    "array_backend",
    "backward",
    "bernoulli",
    "bool_",
    "cat",
    "chunk",
    "concat",
    "concatenate",
    "device",
    "empty",
    "empty_like",
    "enable_grad",
    "eye",
    "flatten",
    "float16",
    "float32",
    "finfo",
    "float64",
    "from_numpy",
    "full",
    "full_like",
    "get_default_dtype",
    "get_num_threads",
    "get_rng_state",
    "grad",
    "iinfo",
    "inference_mode",
    "int8",
    "int16",
    "int32",
    "int64",
    "is_floating_point",
    "is_grad_enabled",
    "is_tensor",
    "linspace",
    "load",
    "manual_seed",
    "matmul",
    "maximum",
    "meshgrid",
    "minimum",
    "multinomial",
    "no_grad",
    "normal",
    "numel",
    "ones",
    "ones_like",
    "rand",
    "rand_like",
    "rsub",
    "chain_matmul",
    "scalar_tensor",
    "randint",
    "randn",
    "randn_like",
    "save",
    "set_default_dtype",
    "set_grad_enabled",
    "set_num_threads",
    "set_rng_state",
    "split",
    "stack",
    "tensor",
    "uint8",
    "where",
    "zeros",
    "zeros_like",
    *METHOD_FUNCTIONS,
    # more top-level functions (core.functions, core.creation): contractions, stacks,
    # broadcasting, moments, index ranges, dtype promotion
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "broadcast_shapes",
    "broadcast_tensors",
    "can_cast",
    "cdist",
    "column_stack",
    "dstack",
    "einsum",
    "hstack",
    "logspace",
    "polygamma",
    "promote_types",
    "result_type",
    "row_stack",
    "std_mean",
    "tensordot",
    "tril_indices",
    "triu_indices",
    "var_mean",
    "vstack",
]
