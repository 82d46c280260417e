"""``save`` and ``load`` for checkpoints: nested dicts and lists of arrays, Tensors, numbers
and strings, such as ``{"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 3}``.

A checkpoint is an ordinary ``.npz`` archive: one ``.npy`` entry per array, named after its
place in the structure (``model/0.weight``), plus a JSON entry, ``__tensorgrad__``, that
describes the structure (dicts, lists, tuples, scalars, which arrays were Tensors). Loading
never unpickles anything (``allow_pickle=False``), so a checkpoint cannot run code.

Every file written carries the format version (in the JSON entry) and a SHA-256 checksum of
all its bytes (in the zip comment, the archive's last bytes): :func:`load` refuses a file that
is truncated, has any bit changed, is not a tensorgrad checkpoint, or comes from a newer
format, with a :class:`CheckpointError` naming the file and the problem, before it builds
anything. Version-1 files (before the checksum) still load, checked only by the zip CRCs.

Saving is atomic: the archive is written to a hidden temporary file in the target directory
(``.<name>.<host>-<pid>-<random>.tmp``, a name no loader looks for, and without a checksum
until it is complete), synced to disk and renamed over the target, so a crash, a kill or an
error leaves either the old file or the new one, never a partial file. A temporary file left by
a process that was killed is removed by the next save to the same path on the same machine.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
from typing import IO, Any

import numpy as np

from tensorgrad.core.tensor import Tensor

FORMAT = "tensorgrad.checkpoint"
VERSION = 2  #: the format version :func:`save` writes
READABLE_VERSIONS = (1, 2)  #: the versions :func:`load` reads
META_KEY = "__tensorgrad__"
MAX_DEPTH = 200  #: nesting levels a checkpoint may have (a training checkpoint uses about 6)

# The zip comment that ends every version-2 file: this prefix, then the SHA-256 (64 lowercase
# hex digits) of every byte of the file before the digest.
_TRAILER = b"tensorgrad-sha256:"
_DIGEST_LENGTH = 64
_TRAILER_PATTERN = re.compile(rb"tensorgrad-sha256:([0-9a-f]{64})\Z")

PathLike = str | os.PathLike


class CheckpointError(ValueError):
    """The file is not a tensorgrad checkpoint, or it is truncated, corrupt or too new."""


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

    def encode(self, value: Any, path: str, depth: int = 0) -> list:
        if depth > MAX_DEPTH:
            raise ValueError(
                f"save: the structure is nested more than {MAX_DEPTH} levels deep at "
                f"{path[:80]!r}... (does a list or dict contain itself?)"
            )
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
                self.encode(item, f"{path}/{i}" if path else str(i), depth + 1)
                for i, item in enumerate(value)
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
                    [
                        "int" if isinstance(key, int) else "str",
                        key,
                        self.encode(item, child, depth + 1),
                    ]
                )
            return ["dict", entries]
        hint = " (save its state_dict() instead)" if hasattr(value, "state_dict") else ""
        raise TypeError(
            f"save: cannot save a {type(value).__name__} at {path or 'the top level'!r}{hint}; "
            "checkpoints hold dicts, lists, tuples, arrays, Tensors, numbers, strings and None"
        )


_PLAIN = {"bool": (bool,), "int": (int,), "float": (float, int), "str": (str,)}


def _decode(node: Any, arrays: dict[str, np.ndarray], depth: int = 0) -> Any:
    if depth > MAX_DEPTH:
        raise ValueError(f"nested more than {MAX_DEPTH} levels deep")
    kind = node[0]
    if kind == "none":
        return None
    if kind in _PLAIN:
        if type(node[1]) not in _PLAIN[kind]:
            raise ValueError(f"a {kind} node holds {type(node[1]).__name__}")
        return node[1]
    if kind == "scalar":
        array = arrays[node[1]]
        if array.ndim != 0:
            raise ValueError(f"scalar {node[1]!r} has shape {array.shape}")
        return array[()]
    if kind == "array":
        return arrays[node[1]]
    if kind == "tensor":
        return Tensor(arrays[node[1]], requires_grad=node[2])
    if kind == "parameter":
        from tensorgrad.nn.parameter import Parameter

        return Parameter(arrays[node[1]], requires_grad=node[2])
    if kind in ("list", "tuple"):
        items = [_decode(item, arrays, depth + 1) for item in node[1]]
        return tuple(items) if kind == "tuple" else items
    if kind == "dict":
        return {
            int(key) if tag == "int" else str(key): _decode(item, arrays, depth + 1)
            for tag, key, item in node[1]
        }
    raise ValueError(f"unknown node type {kind!r}")


# --------------------------------------------------------------------- files
def _write_archive(file: IO[bytes], arrays: dict[str, np.ndarray], compressed: bool) -> None:
    """Write an ``.npz`` archive (what ``np.savez`` writes, without its reserved keywords),
    ending with the checksum trailer's placeholder, which :func:`_seal` fills in."""
    import zipfile  # imported here, as json and hashlib below, to keep `import tensorgrad` light

    compression = zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED
    with zipfile.ZipFile(file, mode="w", compression=compression, allowZip64=True) as archive:
        for name, array in arrays.items():
            with archive.open(name + ".npy", mode="w", force_zip64=True) as entry:
                np.lib.format.write_array(entry, np.asanyarray(array), allow_pickle=False)
        archive.comment = _TRAILER + b"0" * _DIGEST_LENGTH


def _sha256(file: IO[bytes], length: int) -> str:
    """The SHA-256 of the first ``length`` bytes of ``file``, read from its start."""
    import hashlib

    digest = hashlib.sha256()
    file.seek(0)
    while length > 0:
        chunk = file.read(min(length, 1 << 22))
        if not chunk:
            raise OSError("the file is shorter than it was just written")
        digest.update(chunk)
        length -= len(chunk)
    return digest.hexdigest()


def _seal(file: IO[bytes]) -> None:
    """Replace the trailer's placeholder by the SHA-256 of every byte before it."""
    file.flush()
    size = file.seek(0, os.SEEK_END)
    body = size - _DIGEST_LENGTH
    digest = _sha256(file, body)
    file.seek(body)
    file.write(digest.encode("ascii"))
    file.flush()


def _host() -> str:
    import platform

    return re.sub(r"[^A-Za-z0-9_]", "_", platform.node())[:32] or "host"


def _temporary_prefix(target: str) -> str:
    """``.<name>.`` (the name cut to 100 characters): the start of the target's temporaries."""
    return f".{os.path.basename(target)[:100]}."


def _create_temporary(target: str) -> tuple[int, str]:
    """A new file next to ``target`` (so the rename is atomic), with normal permissions and a
    hidden ``.tmp`` name that says which process made it. Errors name the target."""
    import secrets

    directory = os.path.dirname(target)
    prefix = _temporary_prefix(target) + f"{_host()}-{os.getpid()}-"
    while True:
        temporary = os.path.join(directory, f"{prefix}{secrets.token_hex(6)}.tmp")
        try:
            return os.open(temporary, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666), temporary
        except FileExistsError:
            continue
        except FileNotFoundError:
            raise FileNotFoundError(
                errno.ENOENT, f"cannot save: the directory {directory} does not exist", target
            ) from None
        except OSError as exc:
            raise type(exc)(
                exc.errno,
                f"cannot save: cannot create files in {directory} ({exc.strerror})",
                target,
            ) from None


def _process_is_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return True
    except OSError:
        return False  # it exists (perhaps another user's)
    return False


def _remove_stale_temporaries(target: str) -> None:
    """Remove temporaries of ``target`` left by killed processes of this machine (POSIX only:
    elsewhere, and for other machines' files, they are only ignored)."""
    if os.name != "posix":
        return
    directory = os.path.dirname(target)
    prefix = _temporary_prefix(target) + _host() + "-"
    with contextlib.suppress(OSError):
        for name in os.listdir(directory):
            if not (name.startswith(prefix) and name.endswith(".tmp")):
                continue
            pid = name[len(prefix) :].split("-", 1)[0]
            if pid.isdigit() and int(pid) != os.getpid() and _process_is_gone(int(pid)):
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(directory, name))


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
    None) to ``path`` as an ``.npz`` archive with a checksum, atomically. The path is used as
    given, whatever its name (no ``.npz`` is appended). ``compressed`` deflates the arrays
    (smaller, slower). Unsupported values are refused before any file is touched."""
    import json

    path = os.fspath(path)
    encoder = _Encoder()
    root = encoder.encode(obj, "")
    meta = json.dumps({"format": FORMAT, "version": VERSION, "root": root})
    arrays = {META_KEY: np.frombuffer(meta.encode("utf-8"), dtype=np.uint8), **encoder.arrays}
    target = os.path.abspath(path)
    if os.path.isdir(target):
        raise IsADirectoryError(errno.EISDIR, "cannot save: the target is a directory", path)
    fd, temporary = _create_temporary(target)
    try:
        with os.fdopen(fd, "w+b") as file:
            _write_archive(file, arrays, compressed)
            _seal(file)
            os.fsync(file.fileno())
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    _sync_directory(os.path.dirname(target))
    _remove_stale_temporaries(target)


def _verified(data: bytes, path: str) -> bool:
    """Whether ``data`` ends with a checksum trailer (then it must match, or this raises)."""
    import hashlib

    match = _TRAILER_PATTERN.search(data, max(0, len(data) - len(_TRAILER) - _DIGEST_LENGTH))
    if match is None:
        return False
    if hashlib.sha256(memoryview(data)[:-_DIGEST_LENGTH]).hexdigest() != match[1].decode():
        raise CheckpointError(
            f"{path}: corrupt checkpoint: its SHA-256 checksum does not match its contents "
            "(the file was damaged or changed after it was written)"
        )
    return True


def load(path: PathLike) -> Any:
    """Load a checkpoint written by :func:`save`. Arrays come back as NumPy arrays, Tensors
    as Tensors (without gradients), tuples as tuples and integer dict keys as integers.

    Raises :class:`CheckpointError`, naming the file and what is wrong, for a file that is
    truncated, corrupt (its checksum does not match), foreign, or of a newer format version;
    nothing is returned half-built. A missing file raises ``FileNotFoundError``."""
    import io
    import json
    import zipfile

    path = os.fspath(path)
    with open(path, "rb") as file:
        data = file.read()
    verified = _verified(data, path)
    if data[:4] != b"PK\x03\x04":
        what = "an empty file" if not data else "not an .npz archive"
        raise CheckpointError(f"{path}: not a tensorgrad checkpoint ({what})")
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as archive:
            if META_KEY not in archive.files:
                raise CheckpointError(
                    f"{path}: an .npz archive, but not a tensorgrad checkpoint (it has no "
                    f"{META_KEY} entry; load it with np.load)"
                )
            meta = json.loads(archive[META_KEY].tobytes().decode("utf-8"))
            arrays = {name: archive[name] for name in archive.files if name != META_KEY}
    except CheckpointError:
        raise
    except RecursionError:
        raise CheckpointError(
            f"{path}: corrupt checkpoint (its metadata is nested too deeply)"
        ) from None
    except (zipfile.BadZipFile, EOFError, OSError, ValueError, KeyError) as exc:
        raise CheckpointError(f"{path}: truncated or corrupt checkpoint ({exc})") from exc
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CheckpointError(f"{path}: not a tensorgrad checkpoint (unknown metadata format)")
    version = meta.get("version")
    if type(version) is int and version > VERSION:
        raise CheckpointError(
            f"{path}: written in checkpoint format version {version}, newer than this "
            f"tensorgrad reads (versions {', '.join(map(str, READABLE_VERSIONS))}); upgrade "
            "tensorgrad to load it"
        )
    if version not in READABLE_VERSIONS or type(version) is not int:
        raise CheckpointError(f"{path}: checkpoint format version {version!r} is not supported")
    if version >= 2 and not verified:
        raise CheckpointError(
            f"{path}: truncated or corrupt checkpoint (its checksum trailer is missing or damaged)"
        )
    try:
        return _decode(meta["root"], arrays)
    except (KeyError, IndexError, TypeError, ValueError, RecursionError) as exc:
        raise CheckpointError(f"{path}: corrupt checkpoint structure ({exc!r})") from exc


def write_atomically(path: PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` as :func:`save` writes checkpoints: into a hidden temporary
    file beside it, synced and renamed over it, so that a failure leaves the old file (for the
    other formats tensorgrad writes: safetensors, ONNX)."""
    path = os.fspath(path)
    target = os.path.abspath(path)
    if os.path.isdir(target):
        raise IsADirectoryError(errno.EISDIR, "cannot save: the target is a directory", path)
    fd, temporary = _create_temporary(target)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    _sync_directory(os.path.dirname(target))
    _remove_stale_temporaries(target)
