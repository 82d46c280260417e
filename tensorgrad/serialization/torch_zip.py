"""PyTorch's checkpoint file (``torch.save`` since PyTorch 1.6): a zip archive of stored
(uncompressed) entries under one top folder, whose name varies (``archive/``, or the name
the file was first saved under)::

    archive/data.pkl        the pickle: the structure, tensors as rebuild calls (pickling.py)
    archive/byteorder       "little" (absent in older files: little)
    archive/data/0, 1, ...  each storage's bytes, aligned to 64 bytes in the file
    archive/version         "3" (the format's version; older files have 1 or 2)
    archive/.format_version, .storage_alignment, .data/serialization_id

Every entry carries a CRC-32 (zip's), checked here for every entry read, storages included,
before anything is returned. ``.data/tensorgrad_numpy`` is tensorgrad's own entry, which
PyTorch ignores: which tensors were NumPy arrays or scalars when saved.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import struct
import zlib
from collections.abc import Iterator
from typing import IO, Any

import numpy as np

from tensorgrad.serialization import pickling
from tensorgrad.serialization.errors import CheckpointError

ALIGNMENT = 64  #: where storages start in the file, as PyTorch's writer aligns them
FORMAT_VERSION = "3"  #: the ``version`` entry PyTorch 2 writes and tensorgrad writes
NUMPY_ENTRY = ".data/tensorgrad_numpy"
_CHUNK = 1 << 24  # bytes read (and checksummed) at a time


# --------------------------------------------------------------------- writing
def prepare(obj: Any, pickle_protocol: int = 2) -> list[tuple[str, Any]]:
    """The archive's entries for ``obj``, pickled (so that what cannot be saved is refused
    before anything is written): ``(name, bytes or array)`` in PyTorch's order."""
    import io
    import secrets

    storages = pickling.StorageWriter()
    buffer = io.BytesIO()
    pickler = pickling.TorchPickler(buffer, pickle_protocol, storages)
    pickler.dump(obj)
    records: list[tuple[str, Any]] = [
        ("data.pkl", buffer.getvalue()),
        (".format_version", b"1"),
        (".storage_alignment", str(ALIGNMENT).encode()),
        ("byteorder", b"little"),
        *((f"data/{key}", data) for key, data in enumerate(storages.buffers)),
        ("version", FORMAT_VERSION.encode() + b"\n"),
        (".data/serialization_id", str(secrets.randbits(128)).zfill(40).encode()),
    ]
    if pickler.numpy:
        records.append((NUMPY_ENTRY, json.dumps(sorted(pickler.numpy.items())).encode()))
    return records


def write(file: IO[bytes], records: list[tuple[str, Any]], compressed: bool = False) -> None:
    """Write the entries :func:`prepare` made to ``file`` (seekable, at its start) as a zip
    archive under ``archive/``, storages aligned to :data:`ALIGNMENT` bytes."""
    import zipfile

    method = zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED
    with zipfile.ZipFile(file, mode="w", compression=method, allowZip64=True) as archive:
        for name, data in records:
            data = memoryview(data).cast("B") if isinstance(data, np.ndarray) else data
            info = zipfile.ZipInfo("archive/" + name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = method
            info.file_size = len(data)
            big = len(data) * 1.05 > zipfile.ZIP64_LIMIT  # when zipfile itself uses zip64
            if name.startswith("data/") and not compressed:
                info.extra = _padding(archive.fp.tell(), info.filename, big)
            with archive.open(info, mode="w", force_zip64=big) as entry:
                for start in range(0, len(data), _CHUNK):
                    entry.write(data[start : start + _CHUNK])


def _padding(offset: int, name: str, zip64: bool) -> bytes:
    """An extra field that puts the data of the entry whose local header starts at
    ``offset`` on an :data:`ALIGNMENT` boundary (PyTorch's "FB" padding field)."""
    header = 30 + len(name.encode("utf-8")) + (20 if zip64 else 0) + 4
    pad = -(offset + header) % ALIGNMENT
    return struct.pack("<HH", 0x4246, pad) + b"Z" * pad


# --------------------------------------------------------------------- reading
@contextlib.contextmanager
def _zip_errors() -> Iterator[None]:
    """zipfile's errors for a damaged header (an unknown compression method, "encrypted"
    flags, a zip version) as what they mean here: a damaged file."""
    try:
        yield
    except (NotImplementedError, RuntimeError, zlib.error) as exc:
        raise CheckpointError(f"a damaged zip header ({exc})") from None
    except OSError as exc:
        if exc.errno != errno.EINVAL:  # a seek to a negative offset; others are the disk's
            raise
        raise CheckpointError(f"a damaged zip header (an offset out of the file: {exc})") from None


def top_folder(names: list[str]) -> str | None:
    """The folder whose ``data.pkl`` makes this a PyTorch checkpoint, or None."""
    for name in names:
        folder, _, rest = name.partition("/")
        if rest == "data.pkl" and folder:
            return folder
    return None


def _entry_data_offset(file: IO[bytes], info: Any, size: int) -> int:
    """Where the data of a stored entry starts, from its local header (checked)."""
    file.seek(info.header_offset)
    header = file.read(30)
    if len(header) < 30 or header[:4] != b"PK\x03\x04":
        raise CheckpointError(f"the local header of {info.filename} is damaged")
    name_length, extra_length = struct.unpack("<HH", header[26:30])
    name = file.read(name_length)
    if name != info.filename.encode("utf-8"):
        raise CheckpointError(f"the local header of {info.filename} names {name!r}")
    start = info.header_offset + 30 + name_length + extra_length
    if start + info.file_size > size:
        raise CheckpointError(f"{info.filename} runs past the end of the file")
    return start


def read_storage(
    file: IO[bytes],
    archive: Any,
    name: str,
    nbytes: int | None,
    mmap_path: str | None = None,
    check: bool = True,
) -> np.ndarray:
    """The ``nbytes`` bytes (None: all) of entry ``name``, writable, their CRC-32 checked
    unless ``check`` is False; memory-mapped copy-on-write from ``mmap_path`` where given (as
    PyTorch's ``mmap=True``)."""
    import zipfile

    try:
        info = archive.getinfo(name)
    except KeyError:
        raise CheckpointError(f"its storage {name} is missing") from None
    nbytes = info.file_size if nbytes is None else nbytes
    if info.file_size != nbytes:
        raise CheckpointError(f"its storage {name} holds {info.file_size} bytes, not {nbytes}")
    if info.compress_type != zipfile.ZIP_STORED:  # (tensorgrad's compressed=True)
        with _zip_errors():
            return np.frombuffer(bytearray(archive.read(name)), dtype=np.uint8)  # CRC checked
    size = file.seek(0, os.SEEK_END)
    start = _entry_data_offset(file, info, size)
    if mmap_path is not None and nbytes:
        data = np.memmap(mmap_path, dtype=np.uint8, mode="c", offset=start, shape=(nbytes,))
        crc = 0
        for begin in range(0, nbytes, _CHUNK):
            crc = zlib.crc32(data[begin : begin + _CHUNK], crc)
    else:
        data = np.empty(nbytes, dtype=np.uint8)
        file.seek(start)
        crc, done, view = 0, 0, memoryview(data)
        while done < nbytes:
            got = file.readinto(view[done : done + _CHUNK])
            if not got:
                raise CheckpointError(f"{name} is cut short")
            crc = zlib.crc32(view[done : done + got], crc)
            done += got
    if check and crc != info.CRC:
        raise CheckpointError(f"Bad CRC-32 for {name}: its bytes were damaged")
    return data


def as_elements(raw: np.ndarray, dtype: str | None, little: bool) -> np.ndarray:
    """A storage's raw bytes as the 1-D array its tensors view: its dtype in native order,
    bfloat16 widened to float32 (exactly: a bfloat16 is a float32's upper 16 bits)."""
    if dtype is None:
        return raw
    if dtype == "bfloat16":
        halves = raw.view("<u2" if little else ">u2")
        return (halves.astype(np.uint32) << 16).view(np.float32)
    element = pickling.numpy_dtype(dtype)
    if raw.shape[0] % element.itemsize:
        raise CheckpointError(f"a storage of {raw.shape[0]} bytes holds {dtype} elements")
    stored = element.newbyteorder("<" if little else ">")
    array = raw.view(stored)
    return array if stored.isnative or element.itemsize == 1 else array.astype(element)


def load(file: IO[bytes], path: str, restore: Any, rebuild_args: dict[str, Any]) -> Any:
    """The object in a PyTorch zip checkpoint ``file`` (already known to be one)."""
    import zipfile

    with _zip_errors():
        archive = zipfile.ZipFile(file)
    folder = top_folder(archive.namelist())
    if folder is None:
        raise CheckpointError("it has no data.pkl")
    prefix = folder + "/"
    names = set(archive.namelist())
    return _load(file, archive, prefix, names, path, restore, rebuild_args)


def _load(file: IO[bytes], archive: Any, prefix: str, names: set[str], path: str,
          restore: Any, rebuild_args: dict[str, Any]) -> Any:  # fmt: skip
    import io

    weights_only, pickle_module, load_args, mmap_path = (
        rebuild_args["weights_only"],
        rebuild_args["pickle_module"],
        rebuild_args["load_args"],
        rebuild_args["mmap_path"],
    )
    # torch.serialization.set_crc32_options(False) writes every CRC-32 as 0: nothing to check
    check = any(info.CRC for info in archive.infolist() if info.file_size)

    def entry(name: str) -> bytes:
        with _zip_errors():
            return read_storage(file, archive, prefix + name, None, check=check).tobytes()

    byteorder = (
        entry("byteorder").decode("ascii", "replace") if prefix + "byteorder" in names else "little"
    )
    marks = entry(NUMPY_ENTRY) if prefix + NUMPY_ENTRY in names else b"[]"
    data = entry("data.pkl")
    if byteorder not in ("little", "big"):
        raise CheckpointError(f"its byteorder entry says {byteorder!r}")
    numpy_marks = {int(i): str(kind) for i, kind in json.loads(marks)}
    little = byteorder == "little"
    loaded: dict[str, pickling.Storage] = {}

    def persistent_load(pid: Any) -> Any:
        if not isinstance(pid, tuple) or len(pid) != 5 or _text(pid[0]) != "storage":
            raise CheckpointError(f"unknown persistent id {pid!r:.100}")
        storage_type, key, location, numel = pid[1:]
        key, location = _text(key), _text(location)
        if not isinstance(storage_type, pickling.StorageType) or type(numel) is not int:
            raise CheckpointError(f"a storage of type {storage_type!r:.60}")
        if key not in loaded:
            dtype = storage_type.dtype
            mapped = mmap_path if dtype != "bfloat16" else None  # widened: read, not mapped
            with _zip_errors():
                raw = read_storage(
                    file, archive, f"{prefix}data/{key}", numel * _width(dtype), mapped, check
                )
            storage = pickling.Storage(as_elements(raw, dtype, little), location, dtype)
            loaded[key] = restore(storage, location)
        return loaded[key]

    rebuild = pickling.Rebuilder(numpy_marks)
    unpickler = pickling.make_unpickler(path, weights_only, pickle_module, rebuild, persistent_load)
    result = unpickler(io.BytesIO(data), **load_args).load()
    read = {prefix + "byteorder", prefix + NUMPY_ENTRY, prefix + "data.pkl"}
    if check:
        with _zip_errors():
            _check_the_rest(archive, read | {f"{prefix}data/{key}" for key in loaded})
    return result


def _width(dtype: str | None) -> int:
    """Bytes per element of a storage of PyTorch's ``dtype`` (None: untyped, bytes)."""
    if dtype is None:
        return 1
    return 2 if dtype == "bfloat16" else pickling.numpy_dtype(dtype).itemsize


def _check_the_rest(archive: Any, checked: set[str]) -> None:
    """Read every entry not read yet (the version, an unused storage), so that a damaged
    byte anywhere in an entry is refused (zipfile checks the CRC-32 at each entry's end)."""
    for info in archive.infolist():
        if info.filename not in checked:
            with archive.open(info) as entry:
                while entry.read(_CHUNK):
                    pass


def _text(value: Any) -> Any:
    """Python 2's pickles (``encoding="bytes"``) give ASCII bytes for the ids' strings."""
    return value.decode("ascii") if isinstance(value, bytes) else value
