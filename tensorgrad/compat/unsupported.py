"""PyTorch names tensorgrad does not have. ``tg.complex64``, ``tg.compile``, ``tg.jit``, ...
are reached through ``tensorgrad.__getattr__`` and land here, where each raises an error that
names the feature and points at docs/porting.md, instead of a bare ``AttributeError``.

The error is an :class:`~tensorgrad.UnsupportedError` and an ``AttributeError``, so
``hasattr(tg, "compile")`` and ``getattr(tg, "bfloat16", None)`` answer as for any missing
attribute.
"""

from __future__ import annotations

from typing import Any

from tensorgrad.array_backend import UnsupportedError

_DTYPES = (
    "complex32", "complex64", "complex128", "cfloat", "cdouble", "chalf", "bfloat16",
    "float8_e4m3fn", "float8_e5m2", "qint8", "quint8", "qint32",
)  # fmt: skip

#: PyTorch features tensorgrad lacks, and what they are
FEATURES = {
    "compile": "graph compilation (the model runs as written; drop the torch.compile call)",
    "jit": "TorchScript",
    "autocast": "automatic mixed precision",
    "amp": "automatic mixed precision",
    "fft": "Fourier transforms",
    "linalg": "the linear-algebra module (Tensor.norm, matmul and @ are there)",
    "sparse": "sparse tensors",
    "sparse_coo_tensor": "sparse tensors",
    "distributions": "probability distributions",
    "special": "special functions",
    "hub": "model downloads",
    "quantization": "quantization",
    "mps": "Apple's Metal backend (tensorgrad runs on the CPU only)",
    "xpu": "Intel GPUs (tensorgrad runs on the CPU only)",
}

#: every name handled here (``tensorgrad._LAZY`` sends each of them to this module)
NAMES = (*_DTYPES, *FEATURES)


class UnsupportedAttributeError(UnsupportedError, AttributeError):
    """A PyTorch name tensorgrad does not have."""


def __getattr__(name: str) -> Any:
    if name in _DTYPES:
        raise UnsupportedAttributeError(
            f"torch.{name} is not supported: tensors hold bool, integer or float data "
            "(float16/32/64, int8/16/32/64, uint8, bool; see docs/porting.md)"
        )
    if name in FEATURES:
        raise UnsupportedAttributeError(
            f"torch.{name} ({FEATURES[name]}) is not supported by tensorgrad; see "
            "docs/porting.md for what is"
        )
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
