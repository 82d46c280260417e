"""PyTorch names tensorgrad does not have. ``tg.compile``, ``tg.jit``, ... are reached
through ``tensorgrad.__getattr__`` and land here, where each raises an error that names the
feature and points at docs/porting.md, instead of a bare ``AttributeError``.

The error is an :class:`~tensorgrad.UnsupportedError` and an ``AttributeError``, so
``hasattr(tg, "compile")`` answers as for any missing attribute.

The dtypes (``tg.bfloat16``, ``tg.complex64``, ...) are names a program may hold, as it
holds them in PyTorch (nanoGPT builds a table of dtypes before it picks float32 on a CPU):
each is an :class:`~tensorgrad.array_backend.UnsupportedDtype`, and making or casting a
tensor with one raises the error instead.
"""

from __future__ import annotations

from typing import Any

from tensorgrad.array_backend import UnsupportedError, unsupported_dtype

_DTYPES = (
    "complex32", "complex64", "complex128", "cfloat", "cdouble", "chalf", "bfloat16",
    "float8_e4m3fn", "float8_e5m2", "qint8", "quint8", "qint32",
)  # fmt: skip

#: PyTorch features tensorgrad lacks, and what they are
FEATURES = {
    "compile": "graph compilation (the model runs as written; drop the torch.compile call)",
    "jit": "TorchScript",
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
        return unsupported_dtype(name)
    if name in FEATURES:
        raise UnsupportedAttributeError(
            f"torch.{name} ({FEATURES[name]}) is not supported by tensorgrad; see "
            "docs/porting.md for what is"
        )
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
