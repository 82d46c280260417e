"""``save`` and ``load`` for checkpoints: nested dicts and lists of arrays, Tensors, numbers
and strings, such as ``{"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 3}``.

A checkpoint is an ordinary ``.npz`` archive: one ``.npy`` entry per array, named after its
place in the structure (``model/0.weight``), plus a JSON entry, ``__tensorgrad__``, that
describes the structure (dicts, lists, tuples, scalars, which arrays were Tensors). Loading
never unpickles anything (``allow_pickle=False``), so a checkpoint cannot run code.

Saving is atomic: the archive is written to a temporary file in the target directory, synced
to disk and renamed over the target, so a crash or an error leaves either the old file or the
new one, never a partial file.
"""

from __future__ import annotations

import contextlib
import os
from typing import IO, Any

import numpy as np

from tensorgrad.core.tensor import Tensor

FORMAT = "tensorgrad.checkpoint"
VERSION = 1
META_KEY = "__tensorgrad__"

PathLike = str | os.PathLike


class CheckpointError(ValueError):
    """The file is not a tensorgrad checkpoint, or it is truncated or corrupt."""


# --------------------------------------------------------------------- encoding
class _Encoder:
    """Turns a structure into JSON nodes, collecting its arrays under unique archive names."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}

    def _store(self, array: np.ndarray, path: str) -> str:
        if array.dtype.hasobject or array.dtype.kind not in "biufcUS":
            raise TypeError(f"save: cannot save an array of dtype {array.dtype} at {path!r}")
        name, n = path or "data", 1
        while name in self.arrays or name == META_KEY:
            n += 1
            name = f"{path or 'data'}~{n}"
        self.arrays[name] = array
        return name

    def encode(self, value: Any, path: str) -> list:
        if value is None:
            return ["none"]
        if isinstance(value, bool):
            return ["bool", bool(value)]
        if isinstance(value, int):
            return ["int", value]
        if isinstance(value, float):
            return ["float", value]
        if isinstance(value, str):
            return ["str", value]
        if isinstance(value, np.generic):
            return ["scalar", self._store(np.asarray(value), path)]
        if isinstance(value, np.ndarray):
            return ["array", self._store(value, path)]
        if isinstance(value, Tensor):
            kind = "parameter" if type(value).__name__ == "Parameter" else "tensor"
            return [kind, self._store(value._data, path), value.requires_grad]
        if isinstance(value, (list, tuple)):
            items = [
                self.encode(item, f"{path}/{i}" if path else str(i)) for i, item in enumerate(value)
            ]
            return ["tuple" if isinstance(value, tuple) else "list", items]
        if isinstance(value, dict):
            entries = []
            for key, item in value.items():
                if isinstance(key, bool) or not isinstance(key, (str, int)):
                    raise TypeError(
                        f"save: dict keys must be strings or integers, got {key!r} at {path!r}"
                    )
                child = f"{path}/{key}" if path else str(key)
                entries.append(
                    ["int" if isinstance(key, int) else "str", key, self.encode(item, child)]
                )
            return ["dict", entries]
        hint = " (save its state_dict() instead)" if hasattr(value, "state_dict") else ""
        raise TypeError(
            f"save: cannot save a {type(value).__name__} at {path or 'the top level'!r}{hint}; "
            "checkpoints hold dicts, lists, tuples, arrays, Tensors, numbers, strings and None"
        )


def _decode(node: Any, arrays: dict[str, np.ndarray]) -> Any:
    kind = node[0]
    if kind == "none":
        return None
    if kind in ("bool", "int", "float", "str"):
        return node[1]
    if kind == "scalar":
        return arrays[node[1]][()]
    if kind == "array":
        return arrays[node[1]]
    if kind == "tensor":
        return Tensor(arrays[node[1]], requires_grad=node[2])
    if kind == "parameter":
        from tensorgrad.nn.parameter import Parameter

        return Parameter(arrays[node[1]], requires_grad=node[2])
    if kind in ("list", "tuple"):
        items = [_decode(item, arrays) for item in node[1]]
        return tuple(items) if kind == "tuple" else items
    if kind == "dict":
        return {
            int(key) if tag == "int" else str(key): _decode(item, arrays)
            for tag, key, item in node[1]
        }
    raise ValueError(f"unknown node type {kind!r}")


# --------------------------------------------------------------------- files
def _write_archive(file: IO[bytes], arrays: dict[str, np.ndarray], compressed: bool) -> None:
    """Write an ``.npz`` archive (what ``np.savez`` writes, without its reserved keywords)."""
    import zipfile  # imported here, as json and secrets below, to keep `import tensorgrad` light

    compression = zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED
    with zipfile.ZipFile(file, mode="w", compression=compression, allowZip64=True) as archive:
        for name, array in arrays.items():
            with archive.open(name + ".npy", mode="w", force_zip64=True) as entry:
                np.lib.format.write_array(entry, np.asanyarray(array), allow_pickle=False)


def _create_temporary(path: str) -> tuple[int, str]:
    """A new file next to ``path`` (so the rename is atomic), created with normal permissions."""
    import secrets

    directory, name = os.path.split(os.path.abspath(path))
    while True:
        temporary = os.path.join(directory, f".{name}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), temporary
        except FileExistsError:
            continue


def _sync_directory(directory: str) -> None:
    """Make the rename itself durable (POSIX); a no-op where directories cannot be opened."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def save(obj: Any, path: PathLike, compressed: bool = False) -> None:
    """Save ``obj`` (nested dicts, lists and tuples of arrays, Tensors, numbers, strings and
    None) to ``path`` as an ``.npz`` archive, atomically. The path is used as given (no
    ``.npz`` is appended). ``compressed`` deflates the arrays (smaller, slower)."""
    import json

    path = os.fspath(path)
    encoder = _Encoder()
    root = encoder.encode(obj, "")
    meta = json.dumps({"format": FORMAT, "version": VERSION, "root": root})
    arrays = {META_KEY: np.frombuffer(meta.encode("utf-8"), dtype=np.uint8), **encoder.arrays}
    fd, temporary = _create_temporary(path)
    try:
        with os.fdopen(fd, "wb") as file:
            _write_archive(file, arrays, compressed)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    _sync_directory(os.path.dirname(os.path.abspath(path)))


def load(path: PathLike) -> Any:
    """Load a checkpoint written by :func:`save`. Arrays come back as NumPy arrays, Tensors
    as Tensors (without gradients), tuples as tuples and integer dict keys as integers."""
    import json
    import zipfile

    path = os.fspath(path)
    with open(path, "rb") as file:
        magic = file.read(4)
    if magic != b"PK\x03\x04":
        raise CheckpointError(f"{path}: not a tensorgrad checkpoint (not an .npz archive)")
    try:
        with np.load(path, allow_pickle=False) as archive:
            if META_KEY not in archive.files:
                raise CheckpointError(
                    f"{path}: an .npz archive, but not a tensorgrad checkpoint (it has no "
                    f"{META_KEY} entry; load it with np.load)"
                )
            meta = json.loads(archive[META_KEY].tobytes().decode("utf-8"))
            arrays = {name: archive[name] for name in archive.files if name != META_KEY}
    except CheckpointError:
        raise
    except (zipfile.BadZipFile, EOFError, OSError, ValueError, KeyError) as exc:
        raise CheckpointError(f"{path}: truncated or corrupt checkpoint ({exc})") from exc
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CheckpointError(f"{path}: not a tensorgrad checkpoint (unknown metadata format)")
    if meta.get("version") != VERSION:
        raise CheckpointError(
            f"{path}: checkpoint format version {meta.get('version')!r} is not supported "
            f"(this tensorgrad reads version {VERSION})"
        )
    try:
        return _decode(meta["root"], arrays)
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise CheckpointError(f"{path}: corrupt checkpoint structure ({exc!r})") from exc
