"""PyTorch's checkpoint format before 1.6 (``torch.save(..., _use_new_zipfile_serialization=
False)``): pickles one after another, then the storages' bytes::

    pickle  the magic number 0x1950a86a20f9469cfc6c
    pickle  the protocol version, 1001
    pickle  the writer's system: {"little_endian": True, "type_sizes": {...}, ...}
    pickle  the structure; a storage is the persistent id
            ("storage", torch.FloatStorage, key, location, numel, view)
    pickle  the list of storage keys, in the order of their data below
    for each key: its element count (int64, little-endian), then its bytes

The format has no checksums: a file cut short is refused, a changed byte is not seen.
"""

from __future__ import annotations

import pickle
import struct
from typing import IO, Any

import numpy as np

from tensorgrad.serialization import pickling
from tensorgrad.serialization.errors import CheckpointError

MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
PROTOCOL_VERSION = 1001


class _Plain(pickle.Unpickler):
    """For the header pickles: numbers, strings and dicts only."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"a header pickle names {module}.{name}")


def load(file: IO[bytes], path: str, restore: Any, rebuild_args: dict[str, Any]) -> Any:
    """The object in a legacy PyTorch checkpoint ``file``, positioned at its start."""
    if rebuild_args["mmap_path"] is not None:
        raise RuntimeError(
            f"{path}: mmap can only be used with files saved with "
            "`torch.save(_use_new_zipfile_serialization=True)`, please torch.save your "
            "checkpoint with this option in order to use mmap."
        )
    if _Plain(file).load() != MAGIC_NUMBER:
        raise CheckpointError("invalid magic number")
    version = _Plain(file).load()
    if version != PROTOCOL_VERSION:
        raise CheckpointError(f"invalid protocol version {version!r}")
    system = _Plain(file).load()
    little = not isinstance(system, dict) or system.get("little_endian", True)
    storages: dict[str, tuple[pickling.Storage, str]] = {}
    views: dict[str, pickling.Storage] = {}

    def persistent_load(pid: Any) -> Any:
        if not isinstance(pid, tuple) or not pid:
            raise CheckpointError(f"unknown persistent id {pid!r:.100}")
        kind = _text(pid[0])
        if kind == "module" and len(pid) == 4:  # a whole module's class, with its source
            return pid[1]
        if kind != "storage" or len(pid) != 6:
            raise CheckpointError(f"unknown persistent id {pid!r:.100}")
        storage_type, key, location, numel, view = pid[1:]
        key, location = _text(key), _text(location)
        if not isinstance(storage_type, pickling.StorageType):
            raise CheckpointError(f"a storage of type {storage_type!r:.60}")
        if type(numel) is not int or numel < 0:
            raise CheckpointError(f"a storage of {numel!r:.40} elements")
        if key not in storages:
            dtype = storage_type.dtype
            element = np.uint8 if dtype is None else pickling.numpy_dtype(dtype)
            elements = np.empty(numel, dtype=element)  # filled below
            storage = restore(pickling.Storage(elements, location, dtype), location)
            storages[key] = (storage, dtype)
        storage = storages[key][0]
        if view is None:
            return storage
        view_key, offset, size = view
        view_key = _text(view_key)
        if view_key not in views:
            if not (0 <= offset <= offset + size <= storage.array.shape[0]):
                raise CheckpointError(f"a storage view [{offset}, {offset + size}) does not fit")
            views[view_key] = pickling.Storage(
                storage.array[offset : offset + size], storage.location, storage.dtype
            )
        return views[view_key]

    rebuild = pickling.Rebuilder()
    weights_only, pickle_module = rebuild_args["weights_only"], rebuild_args["pickle_module"]
    unpickler = pickling.make_unpickler(path, weights_only, pickle_module, rebuild, persistent_load)
    result = unpickler(file, **rebuild_args["load_args"]).load()
    keys = _Plain(file).load()
    if not isinstance(keys, list) or set(map(_text, keys)) != set(storages):
        raise CheckpointError("its list of storages does not match its pickle")
    for key in map(_text, keys):
        storage, dtype = storages[key]
        _fill(file, key, dtype, storage.array, little)
    return result


def _fill(file: IO[bytes], key: str, dtype: str | None, elements: np.ndarray, little: bool) -> None:
    """Read storage ``key``'s count and bytes into ``elements`` (bfloat16 widened)."""
    head = file.read(8)
    if len(head) < 8:
        raise CheckpointError(f"it is cut short before storage {key}")
    (count,) = struct.unpack("<q" if little else ">q", head)
    if count != elements.shape[0]:
        raise CheckpointError(
            f"storage {key} holds {count} elements, its pickle says {elements.shape[0]}"
        )
    width = 2 if dtype == "bfloat16" else elements.itemsize
    raw = np.empty(count * width, dtype=np.uint8)
    if file.readinto(memoryview(raw)) != raw.shape[0]:
        raise CheckpointError(f"it is cut short in storage {key}")
    from tensorgrad.serialization.torch_zip import as_elements

    elements[...] = as_elements(raw, dtype, little)


def _text(value: Any) -> Any:
    return value.decode("ascii") if isinstance(value, bytes) else value


def prepare(obj: Any, pickle_protocol: int = 2) -> list[bytes | np.ndarray]:
    """The pieces of a legacy file for ``obj``, in order (``torch.save(...,
    _use_new_zipfile_serialization=False)``)."""
    import io
    import sys

    storages = pickling.StorageWriter()
    buffer = io.BytesIO()
    pickler = pickling.TorchPickler(buffer, pickle_protocol, storages, legacy=True)
    pickler.dump(obj)
    if pickler.numpy:
        raise TypeError(
            "save: NumPy arrays and scalars cannot be saved in PyTorch's format before 1.6 "
            "(make them tensors, or save in the zip format)"
        )
    system = {"protocol_version": PROTOCOL_VERSION, "little_endian": sys.byteorder == "little",
              "type_sizes": {"short": 2, "int": 4, "long": 4}}  # fmt: skip
    pieces: list[bytes | np.ndarray] = [
        pickle.dumps(MAGIC_NUMBER, protocol=pickle_protocol),
        pickle.dumps(PROTOCOL_VERSION, protocol=pickle_protocol),
        pickle.dumps(system, protocol=pickle_protocol),
        buffer.getvalue(),
        pickle.dumps([str(key) for key in range(len(storages.buffers))], protocol=pickle_protocol),
    ]
    for data, pid in zip(storages.buffers, storages.ids, strict=True):
        pieces += [struct.pack("<q", pid[4]), data]
    return pieces


def write(file: IO[bytes], pieces: list[bytes | np.ndarray]) -> None:
    for piece in pieces:
        file.write(memoryview(piece).cast("B") if isinstance(piece, np.ndarray) else piece)
