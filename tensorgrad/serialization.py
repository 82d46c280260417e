"""``save`` and ``load``, PyTorch's ``torch.save``/``torch.load``: checkpoints of nested dicts
and lists of arrays, Tensors, numbers and strings, such as ``{"model": model.state_dict(),
"optimizer": opt.state_dict(), "epoch": 3}``, and, pickled, anything else Python can pickle
(a whole module, a custom object), to a path or to an open binary file.

A checkpoint is an ordinary ``.npz`` archive: one ``.npy`` entry per array, named after its
place in the structure (``model/0.weight``), plus a JSON entry, ``__tensorgrad__``, that
describes the structure (dicts, lists, tuples, scalars, which arrays were Tensors). A value
that has no such form (a module, an object of a class of one's own, an object array) is
pickled into an entry of its own, its Tensors and arrays still stored as ``.npy`` entries
(pickle's persistent ids, as PyTorch stores storages), so shared tensors stay shared.

``load(f, weights_only=True)``, the default as in PyTorch 2.6 and later, never runs code from
the file: the JSON structure and the ``.npy`` entries (``allow_pickle=False``) load as data,
and a pickled entry is unpickled only by an unpickler that refuses every class and function
outside a small set of plain containers, unless allowed with :func:`add_safe_globals` or the
:func:`safe_globals` context manager (PyTorch's ``UnpicklingError`` otherwise, naming the
global). ``weights_only=False`` unpickles anything: only for files one trusts.

Every file written carries the format version (in the JSON entry) and a SHA-256 checksum of
all its bytes (in the zip comment, the archive's last bytes): :func:`load` refuses a file that
is truncated, has any bit changed, is not a tensorgrad checkpoint, or comes from a newer
format, with a :class:`CheckpointError` naming the file and the problem, before it builds
anything. Version-1 files (before the checksum) still load, checked only by the zip CRCs;
version 3 is version 2 with pickled entries (a file without any is still written as 2).

Saving to a path is atomic: the archive is written to a hidden temporary file in the target
directory (``.<name>.<host>-<pid>-<random>.tmp``, a name no loader looks for, and without a
checksum until it is complete), synced to disk and renamed over the target, so a crash, a kill
or an error leaves either the old file or the new one, never a partial file. A temporary file
left by a process that was killed is removed by the next save to the same path on the same
machine. Saving to an open file builds the whole archive in memory first and then writes it
in one call; everything is checked (and pickled) before anything is written, either way.
"""

from __future__ import annotations

import contextlib
import errno
import os
import pickle
import re
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import IO, Any

import numpy as np

from tensorgrad.core.tensor import Tensor

FORMAT = "tensorgrad.checkpoint"
VERSION = 2  #: the format version :func:`save` writes for a file without pickled entries
PICKLE_VERSION = 3  #: the version of a file with pickled entries
READABLE_VERSIONS = (1, 2, 3)  #: the versions :func:`load` reads
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
def _storable(array: np.ndarray) -> bool:
    """Whether an array is stored as an ``.npy`` entry (numbers, bools, strings)."""
    return not array.dtype.hasobject and array.dtype.kind in "biufcUS"


class _Encoder:
    """Turns a structure into JSON nodes, collecting its arrays under unique archive names;
    values without a JSON form are pickled (``pickle_protocol``)."""

    def __init__(self, pickle_protocol: int = 2, pickle_module: Any = None) -> None:
        self.arrays: dict[str, np.ndarray] = {}
        self.pickled = False  #: whether some value had to be pickled (format version 3)
        self.pickle_protocol = pickle_protocol
        self.pickle_module = pickle_module

    def _store(self, array: np.ndarray, path: str) -> str:
        if not _storable(array):
            raise TypeError(f"save: cannot save an array of dtype {array.dtype} at {path!r}")
        name, n = path or "data", 1
        while name in self.arrays or name == META_KEY:
            n += 1
            name = f"{path or 'data'}~{n}"
        self.arrays[name] = array
        return name

    def _pickle(self, value: Any, path: str) -> list:
        """A value without a JSON form, pickled into an entry of its own; its Tensors and
        numeric arrays become entries of their own (persistent ids)."""
        import io

        where = path or "the top level"
        buffer = io.BytesIO()
        stored: dict[int, tuple] = {}  # id → persistent id: a shared tensor is stored once
        keep: list[Any] = []  # the objects behind those ids, alive until the pickle is done

        def persistent_id(obj: Any) -> tuple | None:
            key = id(obj)
            if key in stored:
                return stored[key]
            base = f"{path or 'data'}~pickled/{len(stored)}"
            if isinstance(obj, Tensor) and type(obj).__name__ in ("Tensor", "Parameter"):
                kind = "parameter" if type(obj).__name__ == "Parameter" else "tensor"
                pid: tuple | None = (kind, self._store(obj._data, base), obj.requires_grad)
            elif isinstance(obj, np.ndarray) and type(obj) is np.ndarray and _storable(obj):
                pid = ("array", self._store(obj, base))
            elif isinstance(obj, np.generic) and _storable(np.asarray(obj)):
                pid = ("scalar", self._store(np.asarray(obj), base))
            elif isinstance(obj, np.dtype) and not obj.fields and obj.kind in "biufc":
                pid = ("dtype", obj.str)
            else:
                return None
            stored[key] = pid
            keep.append(obj)
            return pid

        module = self.pickle_module or pickle
        try:
            pickler = module.Pickler(buffer, protocol=self.pickle_protocol)
            pickler.persistent_id = persistent_id
            pickler.dump(value)
        except (pickle.PicklingError, TypeError, AttributeError) as exc:
            hint = " (save its state_dict() instead)" if hasattr(value, "state_dict") else ""
            raise TypeError(
                f"save: cannot save a {type(value).__name__} at {where!r}: it cannot be "
                f"pickled ({exc}){hint}"
            ) from exc
        self.pickled = True
        data = np.frombuffer(buffer.getvalue(), dtype=np.uint8)
        return ["pickle", self._store(data, f"{path or 'data'}~pickle")]

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
        if isinstance(value, np.generic) and _storable(np.asarray(value)):
            return ["scalar", self._store(np.asarray(value), path)]
        if isinstance(value, np.ndarray) and type(value) is np.ndarray and _storable(value):
            return ["array", self._store(value, path)]
        if isinstance(value, Tensor):
            kind = "parameter" if type(value).__name__ == "Parameter" else "tensor"
            return [kind, self._store(value._data, path), value.requires_grad]
        if type(value) in (list, tuple):  # a namedtuple or a list subclass is pickled
            items = [
                self.encode(item, f"{path}/{i}" if path else str(i), depth + 1)
                for i, item in enumerate(value)
            ]
            return ["tuple" if isinstance(value, tuple) else "list", items]
        if isinstance(value, dict):
            if type(value) not in (dict, OrderedDict) or any(
                isinstance(key, bool) or not isinstance(key, (str, int)) for key in value
            ):  # keys JSON cannot hold, or a dict subclass of one's own: pickled
                return self._pickle(value, path)
            entries = []
            for key, item in value.items():
                child = f"{path}/{key}" if path else str(key)
                entries.append(
                    [
                        "int" if isinstance(key, int) else "str",
                        key,
                        self.encode(item, child, depth + 1),
                    ]
                )
            return ["dict", entries]
        return self._pickle(value, path)


_PLAIN = {"bool": (bool,), "int": (int,), "float": (float, int), "str": (str,)}


def _decode(node: Any, arrays: dict[str, np.ndarray], depth: int = 0, unpickle: Any = None) -> Any:
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
        items = [_decode(item, arrays, depth + 1, unpickle) for item in node[1]]
        return tuple(items) if kind == "tuple" else items
    if kind == "dict":
        return {
            int(key) if tag == "int" else str(key): _decode(item, arrays, depth + 1, unpickle)
            for tag, key, item in node[1]
        }
    if kind == "pickle":
        return unpickle(arrays[node[1]])
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


def _encode(obj: Any, pickle_module: Any, pickle_protocol: int) -> dict[str, np.ndarray]:
    """The archive's entries for ``obj``: the JSON structure and every array."""
    import json

    encoder = _Encoder(pickle_protocol, pickle_module)
    root = encoder.encode(obj, "")
    version = PICKLE_VERSION if encoder.pickled else VERSION
    meta = json.dumps({"format": FORMAT, "version": version, "root": root})
    return {META_KEY: np.frombuffer(meta.encode("utf-8"), dtype=np.uint8), **encoder.arrays}


def save(
    obj: Any,
    f: PathLike | IO[bytes],
    pickle_module: Any = None,
    pickle_protocol: int = 2,
    _use_new_zipfile_serialization: bool = True,
    _disable_byteorder_record: bool = False,
    *,
    compressed: bool = False,
) -> None:
    """Save ``obj`` to ``f``, a path or a binary file open for writing, as an ``.npz``
    archive with a checksum (PyTorch's ``torch.save``).

    Dicts, lists, tuples, arrays, Tensors, numbers, strings and None are stored as data;
    anything else (a whole module, an object of one's own) is pickled, with
    ``pickle_module`` (default: ``pickle``) and ``pickle_protocol``, and loads only with
    ``load(f, weights_only=False)`` or an allowlist (:func:`safe_globals`). A path is used as
    given (no ``.npz`` is appended) and written atomically. ``compressed`` deflates the
    arrays (smaller, slower). What cannot be saved is refused before anything is written."""
    arrays = _encode(obj, pickle_module, pickle_protocol)
    if hasattr(f, "write"):
        _save_to_file(arrays, f, compressed)
        return
    path = os.fspath(f)
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


def _save_to_file(arrays: dict[str, np.ndarray], file: Any, compressed: bool) -> None:
    """The archive built and sealed in memory, then written to ``file`` in one call."""
    import io

    buffer = io.BytesIO()
    _write_archive(buffer, arrays, compressed)
    _seal(buffer)
    file.write(buffer.getvalue())
    with contextlib.suppress(AttributeError, OSError, ValueError):
        file.flush()


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


def load(
    f: PathLike | IO[bytes],
    map_location: Any = None,
    pickle_module: Any = None,
    *,
    weights_only: bool | None = None,
    mmap: bool | None = None,
    **pickle_load_args: Any,
) -> Any:
    """Load what :func:`save` wrote, from a path or a binary file open for reading
    (PyTorch's ``torch.load``). Arrays come back as NumPy arrays, Tensors as Tensors (without
    gradients), tuples as tuples and integer dict keys as integers.

    ``weights_only`` (default True, as in PyTorch) loads pickled entries only through an
    unpickler that allows plain containers and the classes and functions given to
    :func:`add_safe_globals` / :func:`safe_globals`, raising ``pickle.UnpicklingError``
    (naming the global) for anything else; ``weights_only=False`` unpickles anything, so
    use it only for files you trust. ``map_location`` may name the CPU (or be a dict or a
    function, as PyTorch takes: everything loads onto the CPU); ``mmap`` is accepted.

    Raises :class:`CheckpointError`, naming the file and what is wrong, for a file that is
    truncated, corrupt (its checksum does not match), foreign, or of a newer format version;
    nothing is returned half-built. A missing file raises ``FileNotFoundError``."""
    import io
    import json
    import zipfile

    if weights_only is None:
        weights_only = True
    if weights_only and pickle_module is not None:
        raise RuntimeError(
            "Can not safely load weights when explicit pickle_module is specified (pass "
            "weights_only=False to use it)"
        )
    if isinstance(map_location, str) or type(map_location).__name__ == "device":
        from tensorgrad import array_backend

        array_backend.as_device(map_location)
    if hasattr(f, "read"):
        path = str(getattr(f, "name", "<file object>"))
        data = b"" if isinstance(f, io.TextIOBase) else f.read()
        if isinstance(f, io.TextIOBase) or not isinstance(data, bytes):
            raise TypeError(f"load: {path} must be opened in binary mode ('rb')")
    else:
        path = os.fspath(f)
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
    if type(version) is int and version > max(READABLE_VERSIONS):
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
    unpickle = _unpickler(arrays, path, weights_only, pickle_module, pickle_load_args)
    try:
        return _decode(meta["root"], arrays, unpickle=unpickle)
    except pickle.UnpicklingError:
        raise
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


# --------------------------------------------------------------------- pickled entries
#: what a weights-only load unpickles without being told: plain containers and values
_DEFAULT_SAFE = {
    "collections.OrderedDict",
    "collections.defaultdict",
    "collections.Counter",  # MultiStepLR's milestones
    "builtins.set",
    "builtins.frozenset",
    "builtins.slice",
    "builtins.complex",
    "builtins.range",
    "builtins.bytearray",
    "tensorgrad.core.args.Size",
}
#: the classes and functions allowed by :func:`add_safe_globals`, by "module.qualname"
_SAFE_GLOBALS: dict[str, Any] = {}
_SCOPED: list[dict[str, Any]] = []  #: those of the :func:`safe_globals` blocks now open


def _global_name(obj: Any) -> str:
    return f"{obj.__module__}.{obj.__qualname__}"


def _named(entries: Any, what: str) -> dict[str, Any]:
    """``[cls, func, (obj, "module.name"), ...]`` by the names pickles refer to them by."""
    if not isinstance(entries, (list, tuple)):
        raise TypeError(f"{what}: expected a list of classes or functions, got {entries!r}")
    named = {}
    for entry in entries:
        if isinstance(entry, tuple):
            if len(entry) != 2 or not isinstance(entry[1], str):
                raise TypeError(f"{what}: expected (object, 'module.name'), got {entry!r}")
            named[entry[1]] = entry[0]
        elif hasattr(entry, "__module__") and hasattr(entry, "__qualname__"):
            named[_global_name(entry)] = entry
        else:
            raise TypeError(f"{what}: {entry!r} is not a class or a function")
    return named


def add_safe_globals(safe_globals: list[Any]) -> None:
    """Allow these classes and functions (or ``(obj, "module.name")`` pairs: ``obj`` stands
    for that name) in weights-only loads from now on, as PyTorch's."""
    _SAFE_GLOBALS.update(_named(safe_globals, "add_safe_globals"))


def get_safe_globals() -> list[Any]:
    """What :func:`add_safe_globals` has allowed so far."""
    return list(_SAFE_GLOBALS.values())


def clear_safe_globals() -> None:
    """Forget everything :func:`add_safe_globals` allowed."""
    _SAFE_GLOBALS.clear()


@contextlib.contextmanager
def safe_globals(safe_globals: list[Any]) -> Iterator[None]:
    """``with safe_globals([MyModel]): load(f)``: allow these only inside the block."""
    _SCOPED.append(_named(safe_globals, "safe_globals"))
    try:
        yield
    finally:
        _SCOPED.pop()


def _allowed(module: str, name: str) -> Any:
    """The object a weights-only load may use for ``module.name``, or None. Protocol-2
    pickles name Python 2's modules (``__builtin__.set``): read as Python 3's, as pickle does."""
    import _compat_pickle

    if (module, name) in _compat_pickle.NAME_MAPPING:
        module, name = _compat_pickle.NAME_MAPPING[(module, name)]
    module = _compat_pickle.IMPORT_MAPPING.get(module, module)
    full = f"{module}.{name}"
    for scope in reversed(_SCOPED):
        if full in scope:
            return scope[full]
    if full in _SAFE_GLOBALS:
        return _SAFE_GLOBALS[full]
    if full in _DEFAULT_SAFE:
        import importlib

        return getattr(importlib.import_module(module), name)
    return None


def _refusal(path: str, module: str, name: str) -> pickle.UnpicklingError:
    full = f"{module}.{name}"
    return pickle.UnpicklingError(
        f"{path}: Weights only load failed. This file can still be loaded, to do so you have "
        "two options, do those steps only if you trust the source of the checkpoint. (1) "
        "Re-running `tensorgrad.load` with `weights_only` set to `False` will likely succeed, "
        "but it can result in arbitrary code execution. (2) Alternatively, allow the global: "
        f"Unsupported global: GLOBAL {full} was not an allowed global by default. Please use "
        f"`tensorgrad.serialization.add_safe_globals([{name}])` or the "
        f"`tensorgrad.serialization.safe_globals([{name}])` context manager to allowlist "
        "this global if you trust this class/function."
    )


def _unpickler(
    arrays: dict[str, np.ndarray],
    path: str,
    weights_only: bool,
    pickle_module: Any,
    load_args: dict[str, Any],
) -> Callable[[np.ndarray], Any]:
    """What turns a pickled entry back into its value, with its Tensors and arrays taken
    from their entries (each once, so what was shared is shared again)."""
    import io

    loaded: dict[str, Any] = {}

    def persistent_load(pid: Any) -> Any:
        kind = pid[0]
        if kind == "dtype":
            return np.dtype(pid[1])
        name = pid[1]
        if name not in loaded:
            array = arrays[name]
            if kind == "array":
                loaded[name] = array
            elif kind == "scalar":
                loaded[name] = array[()]
            elif kind == "tensor":
                loaded[name] = Tensor(array, requires_grad=pid[2])
            elif kind == "parameter":
                from tensorgrad.nn.parameter import Parameter

                loaded[name] = Parameter(array, requires_grad=pid[2])
            else:
                raise ValueError(f"unknown persistent id {pid!r}")
        return loaded[name]

    module = pickle if weights_only or pickle_module is None else pickle_module

    class Unpickler(module.Unpickler):  # type: ignore[name-defined, misc]
        def find_class(self, module_name: str, name: str) -> Any:
            if not weights_only:
                return super().find_class(module_name, name)
            found = _allowed(module_name, name)
            if found is None:
                raise _refusal(path, module_name, name)
            return found

    def unpickle(data: np.ndarray) -> Any:
        unpickler = Unpickler(io.BytesIO(data.tobytes()), **load_args)
        unpickler.persistent_load = persistent_load
        return unpickler.load()

    return unpickle
