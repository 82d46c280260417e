"""Reading and writing IDX files, the format of MNIST and Fashion-MNIST.

An IDX file is a 4-byte magic number (two zero bytes, a type code, the number of dimensions),
one big-endian uint32 per dimension, then the data, big-endian, in C order. The files are
usually gzip-compressed; :func:`read_idx` detects that from the content, not the file name.
"""

from __future__ import annotations

import gzip
import math
import os
import zlib
from pathlib import Path

import numpy as np

from tensorgrad.data.errors import DatasetError

__all__ = ["IDX_DTYPES", "read_idx", "write_idx"]

#: IDX type code -> big-endian NumPy dtype.
IDX_DTYPES: dict[int, np.dtype] = {
    0x08: np.dtype(">u1"),
    0x09: np.dtype(">i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}

_TYPE_NAMES = {
    0x08: "ubyte",
    0x09: "int8",
    0x0B: "int16",
    0x0C: "int32",
    0x0D: "float32",
    0x0E: "float64",
}
_GZIP_MAGIC = b"\x1f\x8b"
#: The most dimensions :func:`read_idx` accepts: what NumPy arrays can have (32 before 2.0).
MAX_DIMS = 64 if np.lib.NumpyVersion(np.__version__) >= "2.0.0" else 32


def _expected_codes() -> str:
    return ", ".join(f"0x{code:02X} {name}" for code, name in _TYPE_NAMES.items())


def read_idx(path: str | os.PathLike[str]) -> np.ndarray:
    """Read an IDX file, gzip-compressed or raw, into a native-endian, writable array.

    Everything is checked: the magic number, the type code, the header's length, and that the
    data is exactly as long as the header says (neither truncated nor followed by extra bytes).
    Any problem raises :class:`DatasetError` naming the file and what is wrong.
    """
    path = Path(path)
    raw = path.read_bytes()
    if raw[:2] == _GZIP_MAGIC:
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise DatasetError(path, f"corrupt gzip stream: {exc}") from exc
    return _parse_idx(path, raw)


def _parse_idx(path: Path, raw: bytes) -> np.ndarray:
    if len(raw) < 4:
        raise DatasetError(path, f"too short for an IDX header: {len(raw)} bytes")
    if raw[0] != 0 or raw[1] != 0:
        raise DatasetError(
            path,
            f"bad magic number 0x{raw[:4].hex().upper()}: not an IDX file "
            "(an IDX file starts with two zero bytes, a type code and a dimension count)",
        )
    code, ndim = raw[2], raw[3]
    if code not in IDX_DTYPES:
        raise DatasetError(
            path, f"unknown IDX data type code 0x{code:02X} (expected one of {_expected_codes()})"
        )
    if ndim == 0:
        raise DatasetError(path, "IDX header declares 0 dimensions")
    if ndim > MAX_DIMS:
        raise DatasetError(
            path, f"IDX header declares {ndim} dimensions; NumPy arrays have at most {MAX_DIMS}"
        )
    header_len = 4 + 4 * ndim
    if len(raw) < header_len:
        raise DatasetError(
            path,
            f"truncated header: {ndim} dimensions need {header_len} header bytes, found {len(raw)}",
        )
    shape = tuple(int(d) for d in np.frombuffer(raw, dtype=">u4", count=ndim, offset=4))
    dtype = IDX_DTYPES[code]
    expected = math.prod(shape) * dtype.itemsize
    found = len(raw) - header_len
    if found != expected:
        dims = "x".join(str(d) for d in shape)
        what = "truncated" if found < expected else "trailing garbage"
        if dtype.itemsize > 1:
            dims = f"{dims} {_TYPE_NAMES[code]}"
        extra = "" if found < expected else f" ({found - expected} extra bytes)"
        raise DatasetError(
            path, f"{what}: header says {dims} = {expected} bytes of data, found {found}{extra}"
        )
    data = np.frombuffer(raw, dtype=dtype, offset=header_len)
    return data.astype(dtype.newbyteorder("="), copy=True).reshape(shape)


def write_idx(
    path: str | os.PathLike[str], array: np.ndarray, compress: bool | None = None
) -> None:
    """Write ``array`` as an IDX file; gzip it if ``compress``, by default when the name ends
    in ``.gz``. Useful to store data in the MNIST format and to make test fixtures."""
    path = Path(path)
    array = np.asarray(array)
    native = array.dtype.newbyteorder("=")
    code = next((c for c, dt in IDX_DTYPES.items() if native == dt.newbyteorder("=")), None)
    if code is None:
        raise ValueError(
            f"write_idx: dtype {array.dtype} has no IDX type code "
            "(use uint8, int8, int16, int32, float32 or float64)"
        )
    if array.ndim == 0 or array.ndim > 255:
        raise ValueError(f"write_idx: need 1 to 255 dimensions, got {array.ndim}")
    if any(d >= 2**32 for d in array.shape):
        raise ValueError(f"write_idx: dimension too large for IDX: {array.shape}")
    header = bytes([0, 0, code, array.ndim]) + np.asarray(array.shape, dtype=">u4").tobytes()
    payload = header + np.ascontiguousarray(array, dtype=IDX_DTYPES[code]).tobytes()
    if compress is None:
        compress = path.name.endswith(".gz")
    if compress:
        payload = gzip.compress(payload, mtime=0)
    path.write_bytes(payload)
