"""``save`` and ``load``, PyTorch's ``torch.save``/``torch.load``, in PyTorch's own file format,
without PyTorch: what ``tg.save`` writes, ``torch.load(f, weights_only=True)`` reads, and
``tg.load`` reads what ``torch.save`` wrote (the zip format of PyTorch 1.6 and later, and
the format before it). Checkpoints of nested dicts and lists of Tensors, NumPy arrays,
numbers and strings, such as ``{"model": model.state_dict(), "optimizer": opt.state_dict(),
"iter_num": 250}``, and, pickled, anything else Python can pickle (a whole module, an object
of one's own), to a path or an open binary file.

- The format: torch_zip.py (the zip archive), pickling.py (the pickle inside, tensors as
  PyTorch's rebuild calls), torch_legacy.py (PyTorch's format before 1.6, read only),
  npz.py (tensorgrad's own earlier ``.npz`` checkpoints, read only).
- Tensors that share memory (tied weights, views with offsets and strides) are written as
  one storage and load as NumPy views of one buffer again. NumPy arrays and scalars are
  written as PyTorch tensors (PyTorch reads them as such) and load in tensorgrad as the
  arrays and scalars they were. bfloat16 tensors load as float32 (exactly).
- ``load(f, weights_only=True)``, the default as in PyTorch 2.6 and later, never runs code
  from the file: the unpickler allows PyTorch's tensor, storage and dtype names (which stand
  for tensorgrad's own code here: PyTorch is never imported), plain containers, and what
  :func:`add_safe_globals` or :func:`safe_globals` allowed, and refuses anything else with
  ``pickle.UnpicklingError`` naming the global, before anything could call it.
- Every entry of the zip carries a CRC-32, checked for every entry, storages included:
  a truncated or damaged file raises :class:`CheckpointError` naming the file and what it
  is, and nothing is returned half-built.
- Saving to a path is atomic (atomic.py): a crash, a kill or an error leaves the old file or
  the new one, never a partial file. Saving to an open file builds the archive in memory and
  writes it in one call; everything is pickled before anything is written, either way.
"""

from __future__ import annotations

import io
import os
import pickle
from typing import IO, Any

from tensorgrad.serialization.atomic import write_atomically
from tensorgrad.serialization.errors import CheckpointError
from tensorgrad.serialization.pickling import (
    add_safe_globals,
    clear_safe_globals,
    get_safe_globals,
    safe_globals,
)

PathLike = str | os.PathLike
_HEAD = 512  # bytes read to tell what a file is


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
    """Save ``obj`` to ``f``, a path or a binary file open for writing, in PyTorch's format
    (``torch.save``): ``torch.load(f, weights_only=True)`` and :func:`load` read it.

    Dicts, lists, tuples, Tensors, Parameters, NumPy arrays, numbers, strings and None load
    with ``weights_only=True``; anything else (a whole module, an object of one's own) is
    pickled with ``pickle_protocol`` and loads with ``weights_only=False`` or an allowlist
    (:func:`safe_globals`). A path is used as given and written atomically. ``compressed``
    (tensorgrad's own) deflates the entries: smaller, slower, and not memory-mappable.
    ``_use_new_zipfile_serialization=False`` writes PyTorch's format before 1.6. What cannot
    be saved is refused before anything is written."""
    from tensorgrad.serialization import torch_legacy, torch_zip

    if pickle_module is not None and pickle_module is not pickle:
        raise TypeError(
            f"save: tensorgrad pickles with Python's pickle module; pickle_module="
            f"{getattr(pickle_module, '__name__', pickle_module)!r} is not supported"
        )
    try:
        if _use_new_zipfile_serialization:
            records = torch_zip.prepare(obj, pickle_protocol)
        else:
            records = torch_legacy.prepare(obj, pickle_protocol)
    except RecursionError:
        raise ValueError("save: the structure is nested too deeply to pickle") from None
    except (pickle.PicklingError, TypeError, AttributeError) as exc:
        raise _unpicklable(obj, pickle_protocol, exc) from exc

    def write(file: IO[bytes]) -> None:
        if _use_new_zipfile_serialization:
            torch_zip.write(file, records, compressed)
        else:
            torch_legacy.write(file, records)

    if hasattr(f, "write"):
        buffer = io.BytesIO()
        write(buffer)
        f.write(buffer.getvalue())
        if hasattr(f, "flush"):
            f.flush()
        return
    from tensorgrad.serialization.atomic import atomic_file

    with atomic_file(f) as file:
        write(file)


def _unpicklable(obj: Any, protocol: int, exc: BaseException) -> TypeError:
    """A TypeError naming the first value in ``obj``'s dicts, lists and tuples that cannot be
    pickled, and where it is (``'config/hook'``)."""
    from tensorgrad.serialization import pickling

    def fails(value: Any) -> bool:
        try:
            pickling.TorchPickler(io.BytesIO(), protocol, pickling.StorageWriter()).dump(value)
        except Exception:
            return True
        return False

    path, value, stack = "", obj, [("", obj)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, dict):
            children = [(f"{where}/{key}" if where else str(key), v) for key, v in item.items()]
        elif type(item) in (list, tuple):
            children = [(f"{where}/{i}" if where else str(i), v) for i, v in enumerate(item)]
        else:
            children = []
        bad = [child for child in children if fails(child[1])]
        if bad:
            path, value = bad[0]
            stack = [bad[0]]
    where = path or "the top level"
    hint = " (save its state_dict() instead)" if hasattr(value, "state_dict") else ""
    return TypeError(
        f"save: cannot save a {type(value).__name__} at {where!r}: it cannot be pickled "
        f"({exc}){hint}"
    )


def load(
    f: PathLike | IO[bytes],
    map_location: Any = None,
    pickle_module: Any = None,
    *,
    weights_only: bool | None = None,
    mmap: bool | None = None,
    **pickle_load_args: Any,
) -> Any:
    """Load what :func:`save` or PyTorch's ``torch.save`` wrote (``torch.load``), or one of
    tensorgrad's earlier ``.npz`` checkpoints, from a path or a binary file open for reading.
    Tensors come back as Tensors (parameters as ``nn.Parameter``), NumPy arrays that
    :func:`save` wrote as arrays; what shared memory when saved shares it again.

    ``weights_only`` (default True, as in PyTorch) unpickles only tensors, containers,
    numbers, strings and what :func:`add_safe_globals` / :func:`safe_globals` allowed,
    raising ``pickle.UnpicklingError`` naming any other global; ``weights_only=False``
    unpickles anything, so use it only for files you trust. ``map_location`` is PyTorch's:
    a device (the CPU: tensorgrad has no other), a dict from saved locations to devices, or
    a function ``(storage, location) -> storage``; a file saved from a GPU needs one.
    ``mmap=True`` (a path only) maps the storages from the file, copy-on-write.

    Raises :class:`CheckpointError`, naming the file and what it is, for a file that is
    truncated, damaged (a CRC-32 or checksum does not match), of another kind, or holds what
    tensorgrad has no tensors for; nothing is returned half-built. A missing file raises
    ``FileNotFoundError``."""
    if weights_only is None:
        weights_only = True
    if weights_only and pickle_module is not None:
        raise RuntimeError(
            "Can not safely load weights when explicit pickle_module is specified (pass "
            "weights_only=False to use it)"
        )
    restore = _restorer(map_location)
    if hasattr(f, "read"):
        if isinstance(f, io.TextIOBase):
            raise TypeError(
                f"load: {getattr(f, 'name', 'the file')} must be opened in binary mode ('rb')"
            )
        if mmap:
            raise ValueError("f must be a file path in order to use the mmap argument")
        path = str(getattr(f, "name", "<file object>"))
        return _load_from(f, path, restore, weights_only, pickle_module, pickle_load_args, None)
    path = os.fspath(f)
    with open(path, "rb") as file:
        return _load_from(file, path, restore, weights_only, pickle_module, pickle_load_args,
                          path if mmap else None)  # fmt: skip


def _load_from(file: Any, path: str, restore: Any, weights_only: bool, pickle_module: Any,
               load_args: dict, mmap_path: str | None) -> Any:  # fmt: skip
    import struct
    import zipfile
    import zlib

    from tensorgrad.serialization import errors, npz, pickling, torch_legacy, torch_zip

    seekable = getattr(file, "seekable", lambda: False)()
    if not seekable or file.tell() != 0:
        data = file.read()
        if not isinstance(data, bytes):
            raise TypeError(f"load: {path} must be opened in binary mode ('rb')")
        file = io.BytesIO(data)
    head = file.read(_HEAD)
    if not isinstance(head, bytes):
        raise TypeError(f"load: {path} must be opened in binary mode ('rb')")
    file.seek(0)
    kind = errors.sniff(head)
    args = {"weights_only": weights_only, "pickle_module": pickle_module,
            "load_args": load_args, "mmap_path": mmap_path}  # fmt: skip
    if kind == "zip":
        try:
            names = zipfile.ZipFile(file).namelist()
        except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as exc:
            what = "a PyTorch checkpoint" if b"/data.pkl" in head else "a zip archive"
            raise CheckpointError(
                f"{path}: {what}, but truncated or corrupt (its zip directory: {exc})"
            ) from None
        if torch_zip.top_folder(names) is not None:
            what, reader = "a PyTorch checkpoint", torch_zip.load
        elif npz.is_npz_checkpoint(names):
            file.seek(0)
            return npz.load(file.read(), path, weights_only, pickle_module, load_args)
        elif names and all(name.endswith(".npy") for name in names):
            raise CheckpointError(
                f"{path}: a NumPy .npz archive, not a checkpoint (it has no data.pkl, nor "
                "tensorgrad's __tensorgrad__ entry): load it with np.load"
            )
        elif any(name.endswith(("/constants.pkl", "/code/")) or "/code/" in name for name in names):
            raise CheckpointError(
                f"{path}: a TorchScript archive (torch.jit.save), which tensorgrad does not "
                "read: in PyTorch, torch.save the model's state_dict() instead"
            )
        else:
            raise CheckpointError(f"{path}: a zip archive, but not a checkpoint (no data.pkl)")
    elif kind == "torch-legacy":
        what, reader = "a PyTorch checkpoint (the format before PyTorch 1.6)", torch_legacy.load
    else:
        raise errors.not_a_checkpoint(path, kind, head)
    try:
        return reader(file, path, restore, args)
    except pickling.WeightsOnlyError:
        raise
    except CheckpointError as exc:
        raise CheckpointError(f"{path}: {what}, but truncated or corrupt: {exc}") from None
    except ValueError as exc:
        raise CheckpointError(f"{path}: {what} that tensorgrad cannot load: {exc}") from None
    except (pickle.UnpicklingError, zipfile.BadZipFile, EOFError, struct.error, KeyError,
            IndexError, OverflowError, MemoryError, zlib.error) as exc:  # fmt: skip
        raise CheckpointError(f"{path}: {what}, but truncated or corrupt ({exc})") from None


def _restorer(map_location: Any) -> Any:
    """PyTorch's ``map_location`` as a function ``(storage, location) -> storage``; every
    storage must end on the CPU."""
    from tensorgrad import array_backend
    from tensorgrad.serialization.pickling import Storage

    def on_cpu(storage: Storage, location: Any) -> Storage:
        if isinstance(location, str) and location.split(":")[0] == "cpu":
            return storage
        if isinstance(location, str) and location.split(":")[0] in (
            "cuda",
            "mps",
            "xpu",
            "meta",
            "hpu",
        ):
            raise RuntimeError(
                f"Attempting to deserialize object on a {location.split(':')[0].upper()} device "
                f"({location}), and tensorgrad runs on the CPU only: use tg.load(f, "
                "map_location='cpu') to map your storages to the CPU."
            )
        array_backend.as_device(location)  # a device object, or an unknown name: its error
        return storage

    def check(device: Any) -> None:
        array_backend.as_device(device.decode() if isinstance(device, bytes) else device)

    if map_location is None:
        return on_cpu
    if isinstance(map_location, dict):
        for device in map_location.values():
            check(device)
        return lambda storage, location: on_cpu(storage, str(map_location.get(location, location)))
    if isinstance(map_location, (str, bytes)) or type(map_location).__name__ == "device":
        check(map_location)
        return lambda storage, location: storage
    if not callable(map_location):
        raise TypeError(
            f"load: map_location must be a device, a dict or a function, got {map_location!r}"
        )

    def call(storage: Storage, location: str) -> Storage:
        result = map_location(storage, location)
        if result is None:
            return on_cpu(storage, location)
        if not isinstance(result, Storage):
            raise TypeError(
                f"load: map_location returned a {type(result).__name__}; tensorgrad's storages "
                "stay on the CPU (return the storage it was given)"
            )
        return result

    return call


__all__ = [
    "CheckpointError",
    "add_safe_globals",
    "clear_safe_globals",
    "get_safe_globals",
    "load",
    "safe_globals",
    "save",
    "write_atomically",
]
