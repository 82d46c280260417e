"""safetensors files for state dicts: ``save_file`` and ``load_file`` with the signatures of
``safetensors.torch``, so that weights move between tensorgrad, PyTorch and the rest of the
ecosystem (Hugging Face and friends read the format)::

    from tensorgrad.safetensors import load_file, save_file

    save_file(model.state_dict(), "model.safetensors")
    model.load_state_dict(load_file("model.safetensors"))

    # in PyTorch, the same file:
    # torch_model.load_state_dict(safetensors.torch.load_file("model.safetensors"))

The format itself is written and read by the ``safetensors`` package's NumPy API (an optional
extra: ``pip install 'tensorgrad[safetensors]'``), imported on first use. What tensorgrad adds:

- saving is atomic, as ``tg.save``'s: a hidden temporary file beside the target is renamed over
  it, so a crash leaves the old file or the new one, never a partial file;
- the file's metadata carries a SHA-256 of the tensors (``tensorgrad.sha256``), so that
  :func:`load_file` refuses a file with any bit of its data changed; files written elsewhere
  (without it) load checked only by the format's own header checks;
- a truncated, corrupt or foreign file raises :class:`~tensorgrad.serialization.CheckpointError`
  naming the file, before anything is returned.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from tensorgrad.core.tensor import Tensor
from tensorgrad.serialization import CheckpointError, write_atomically

PathLike = str | os.PathLike

#: the metadata key under which :func:`save_file` stores the tensors' SHA-256
DIGEST_KEY = "tensorgrad.sha256"
EXTRA = "safetensors"  #: the optional extra that installs the package


def _package() -> Any:
    """``safetensors.numpy``, or an ImportError that says which extra to install."""
    try:
        import safetensors.numpy
    except ImportError as exc:
        raise ImportError(
            "tensorgrad.safetensors needs the safetensors package: "
            f"pip install 'tensorgrad[{EXTRA}]' (or pip install safetensors)"
        ) from exc
    return safetensors.numpy


def _array(name: Any, value: Any) -> np.ndarray:
    if not isinstance(name, str):
        raise TypeError(f"save_file: keys must be strings, got {name!r}")
    if isinstance(value, Tensor):
        array = value._data
    elif isinstance(value, np.ndarray):
        array = value
    else:
        raise TypeError(
            f"save_file: {name!r} is a {type(value).__name__}; expected a Tensor or an array"
        )
    if array.dtype.kind not in "biuf":
        raise TypeError(f"save_file: {name!r} has dtype {array.dtype}, which safetensors lacks")
    return array if array.flags.c_contiguous else array.copy(order="C")  # 0-d stays 0-d


def _digest(arrays: Mapping[str, np.ndarray]) -> str:
    """SHA-256 of every tensor's name, dtype, shape and bytes, in name order."""
    import hashlib

    digest = hashlib.sha256()
    for name in sorted(arrays):
        array = arrays[name]
        digest.update(f"{name}\0{array.dtype.str}\0{array.shape}\0".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def save_file(
    tensors: Mapping[str, Any], filename: PathLike, metadata: Mapping[str, str] | None = None
) -> None:
    """Save ``tensors`` (names → Tensors or arrays, such as ``model.state_dict()``) to
    ``filename`` in the safetensors format, atomically; ``metadata`` (strings → strings) goes
    into the file's header, as in ``safetensors.torch.save_file``."""
    package = _package()
    if not isinstance(tensors, Mapping):
        raise TypeError(f"save_file: expected a dict of tensors, got {type(tensors).__name__}")
    arrays = {name: _array(name, value) for name, value in tensors.items()}
    extra = dict(metadata or {})
    for key, value in extra.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(
                f"save_file: metadata must map strings to strings, got {key!r}: {value!r}"
            )
    if DIGEST_KEY in extra:
        raise ValueError(f"save_file: the metadata key {DIGEST_KEY!r} is tensorgrad's own")
    extra[DIGEST_KEY] = _digest(arrays)
    data = package.save(arrays, metadata=extra)
    write_atomically(filename, data)


def _read(filename: PathLike) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """The arrays and metadata of a safetensors file, checked; CheckpointError names it."""
    import json

    package = _package()
    path = os.fspath(filename)
    with open(path, "rb") as file:
        data = file.read()
    if len(data) < 8:
        what = "an empty file" if not data else f"only {len(data)} bytes"
        raise CheckpointError(f"{path}: not a safetensors file ({what})")
    header_size = int.from_bytes(data[:8], "little")
    if header_size > len(data) - 8 or data[8:9] != b"{":
        if data[:4] == b"PK\x03\x04":
            hint = " (it is a zip archive: a PyTorch checkpoint, from tg.save or torch.save, loads "
            hint += "with tg.load)"
        else:
            hint = ""
        raise CheckpointError(
            f"{path}: not a safetensors file, or truncated (its header does not fit){hint}"
        )
    try:
        header = json.loads(data[8 : 8 + header_size])
    except (UnicodeDecodeError, ValueError) as exc:
        raise CheckpointError(f"{path}: corrupt safetensors file (its header: {exc})") from None
    metadata = header.get("__metadata__") if isinstance(header, dict) else None
    try:
        arrays = package.load(data)
    except Exception as exc:  # SafetensorError: truncated data, offsets that do not fit
        raise CheckpointError(f"{path}: truncated or corrupt safetensors file ({exc})") from None
    metadata = dict(metadata) if isinstance(metadata, dict) else {}
    expected = metadata.get(DIGEST_KEY)
    if expected is not None and _digest(arrays) != expected:
        raise CheckpointError(
            f"{path}: corrupt safetensors file: its SHA-256 checksum does not match its tensors "
            "(the file was damaged or changed after it was written)"
        )
    return arrays, metadata


def load_file(filename: PathLike, device: str | int = "cpu") -> dict[str, Tensor]:
    """The tensors of a safetensors file as a dict of Tensors (``safetensors.torch``'s
    ``load_file``), ready for ``model.load_state_dict``. Raises ``CheckpointError`` naming the
    file for a truncated, corrupt or foreign file; ``FileNotFoundError`` for a missing one."""
    if str(device) != "cpu":
        raise RuntimeError(f"load_file: tensorgrad runs on the CPU only, got device={device!r}")
    arrays, _ = _read(filename)
    return {name: Tensor(array) for name, array in arrays.items()}


def load_metadata(filename: PathLike) -> dict[str, str]:
    """The metadata stored with the tensors (``safe_open(...).metadata()``), checked as
    :func:`load_file` checks the file; without tensorgrad's own checksum entry."""
    return read(filename)[1]


def read(filename: PathLike) -> tuple[dict[str, Tensor], dict[str, str]]:
    """:func:`load_file` and :func:`load_metadata` in one reading of the file."""
    arrays, metadata = _read(filename)
    metadata.pop(DIGEST_KEY, None)
    return {name: Tensor(array) for name, array in arrays.items()}, metadata


__all__ = ["load_file", "load_metadata", "read", "save_file"]
