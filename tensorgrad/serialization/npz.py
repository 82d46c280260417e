"""Reading tensorgrad's earlier checkpoints: ``.npz`` archives with a ``__tensorgrad__`` entry,
which ``tg.save`` wrote before it wrote PyTorch's format (format versions 1 to 3).

Such a file is an ordinary ``.npz`` archive: one ``.npy`` entry per array, named after its
place in the structure (``model/0.weight``), plus a JSON entry, ``__tensorgrad__``, that
describes the structure (dicts, lists, tuples, scalars, which arrays were Tensors); a value
without such a form was pickled into an entry of its own, its Tensors and arrays stored as
``.npy`` entries (pickle's persistent ids). Versions 2 and 3 end with a SHA-256 of all their
bytes in the zip comment, checked here; version 1 is checked by the zip CRCs only.
"""

from __future__ import annotations

import pickle
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from tensorgrad.core.tensor import Tensor
from tensorgrad.serialization import pickling
from tensorgrad.serialization.errors import CheckpointError

FORMAT = "tensorgrad.checkpoint"
READABLE_VERSIONS = (1, 2, 3)  #: the versions read
META_KEY = "__tensorgrad__"
MAX_DEPTH = 200  #: nesting levels a checkpoint may have (a training checkpoint uses about 6)

# The zip comment that ends every version-2 file: this prefix, then the SHA-256 (64 lowercase
# hex digits) of every byte of the file before the digest.
_TRAILER = b"tensorgrad-sha256:"
_DIGEST_LENGTH = 64
_TRAILER_PATTERN = re.compile(rb"tensorgrad-sha256:([0-9a-f]{64})\Z")

_PLAIN = {"bool": (bool,), "int": (int,), "float": (float, int), "str": (str,)}


def is_npz_checkpoint(names: list[str]) -> bool:
    return META_KEY + ".npy" in names


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


def load(data: bytes, path: str, weights_only: bool, pickle_module: Any, load_args: dict) -> Any:
    """The object in a tensorgrad ``.npz`` checkpoint, all of whose bytes are ``data``."""
    import io
    import json
    import zipfile

    verified = _verified(data, path)
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as archive:
            meta = json.loads(archive[META_KEY].tobytes().decode("utf-8"))
            arrays = {name: archive[name] for name in archive.files if name != META_KEY}
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
    unpickle = _unpickler(arrays, path, weights_only, pickle_module, load_args)
    try:
        return _decode(meta["root"], arrays, unpickle=unpickle)
    except pickle.UnpicklingError:
        raise
    except (KeyError, IndexError, TypeError, ValueError, RecursionError) as exc:
        raise CheckpointError(f"{path}: corrupt checkpoint structure ({exc!r})") from exc


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
            found = pickling.allowed_global(module_name, name)
            if found is None:
                raise pickling.refusal(path, module_name, name)
            return found

    def unpickle(data: np.ndarray) -> Any:
        unpickler = Unpickler(io.BytesIO(data.tobytes()), **load_args)
        unpickler.persistent_load = persistent_load
        return unpickler.load()

    return unpickle
