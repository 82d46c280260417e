"""Pickles as PyTorch writes and reads them, without PyTorch.

A PyTorch checkpoint's pickle names PyTorch's functions and classes: a tensor is the call
``torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks)``, a
parameter ``torch._utils._rebuild_parameter(tensor, requires_grad, hooks)``, a storage a
persistent id ``("storage", torch.FloatStorage, key, location, numel)`` whose bytes are
elsewhere in the file. Here those names stand for tensorgrad's own code: :class:`Rebuilder`
makes Tensors (NumPy views of one buffer per storage, so what shared a storage shares it
again), :class:`TorchPickler` writes Tensors as those calls.

Loading with ``weights_only`` (the default) allows only what :func:`find_global` returns for
it: PyTorch's tensor, storage and dtype names, plain containers, and what
:func:`add_safe_globals` or :func:`safe_globals` allowed. Anything else is refused by
``find_class``, when the pickle names it and before anything could call it, with
``pickle.UnpicklingError`` naming the global (PyTorch's error).
"""

from __future__ import annotations

import contextlib
import pickle
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from tensorgrad import array_backend
from tensorgrad.core.tensor import Tensor
from tensorgrad.serialization.errors import CheckpointError

# --------------------------------------------------------------------- PyTorch's names
#: PyTorch's typed storage classes and the dtype of their elements
STORAGE_DTYPES = {
    "DoubleStorage": "float64",
    "FloatStorage": "float32",
    "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16",
    "LongStorage": "int64",
    "IntStorage": "int32",
    "ShortStorage": "int16",
    "CharStorage": "int8",
    "ByteStorage": "uint8",
    "BoolStorage": "bool",
    "ComplexFloatStorage": "complex64",
    "ComplexDoubleStorage": "complex128",
}
#: the storage class PyTorch pickles for each dtype; the others have none (``_rebuild_tensor_v3``
#: with an untyped storage and the dtype)
STORAGE_OF = {dtype: name for name, dtype in STORAGE_DTYPES.items()}
#: PyTorch dtypes NumPy has (``torch.float32`` → ``np.float32``); bfloat16 loads as float32
NUMPY_DTYPES = {
    name: np.dtype(name)
    for name in ("float64", "float32", "float16", "int64", "int32", "int16", "int8", "uint8",
                 "uint16", "uint32", "uint64", "bool", "complex64", "complex128")
}  # fmt: skip
#: PyTorch dtypes without NumPy arrays: names a pickle may hold, no tensors of them
OTHER_TORCH_DTYPES = ("bfloat16", "complex32", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
                      "float8_e5m2fnuz", "qint8", "quint8", "qint32", "quint4x2")  # fmt: skip


class StorageType:
    """PyTorch's storage class a pickle names (``torch.FloatStorage``), as its element dtype;
    ``None`` for ``torch.storage.UntypedStorage`` (bytes)."""

    __slots__ = ("dtype",)

    def __init__(self, dtype: str | None) -> None:
        self.dtype = dtype

    def __repr__(self) -> str:
        return f"StorageType({self.dtype!r})"


class Storage:
    """One storage of a PyTorch file: ``array``, its elements as a 1-D NumPy array (float32
    for bfloat16, uint8 for an untyped storage), and ``location``, where it was saved from
    (``"cpu"``, ``"cuda:0"``). ``map_location`` functions receive and return these."""

    __slots__ = ("array", "dtype", "location")

    def __init__(self, array: np.ndarray, location: str, dtype: str | None) -> None:
        self.array, self.location, self.dtype = array, location, dtype

    def __repr__(self) -> str:
        return (
            f"Storage({self.dtype or 'untyped'}, {self.array.shape[0]} elements, {self.location})"
        )


def numpy_dtype(name: str) -> np.dtype:
    """The NumPy dtype tensors of PyTorch's dtype ``name`` load as (bfloat16: float32)."""
    if name == "bfloat16":
        return np.dtype(np.float32)
    if name not in NUMPY_DTYPES:
        raise ValueError(f"it holds a tensor of dtype torch.{name}, which tensorgrad cannot hold")
    return NUMPY_DTYPES[name]


def _strided_view(array: np.ndarray, offset: Any, size: Any, stride: Any) -> np.ndarray:
    """``array`` (1-D) seen as a tensor of ``size`` and ``stride`` (in elements) from element
    ``offset``, sharing its memory; what does not fit inside ``array`` is refused."""
    if type(offset) is not int or offset < 0:
        raise CheckpointError(f"a tensor's storage offset is {offset!r}")
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride) or not all(type(n) is int and n >= 0 for n in size + stride):
        raise CheckpointError(f"a tensor has size {size} and stride {stride}")
    count = array.shape[0]
    if 0 in size:
        if offset > count:
            raise CheckpointError(f"a tensor starts at element {offset} of a storage of {count}")
        return np.empty(size, dtype=array.dtype)
    last = offset + sum((n - 1) * s for n, s in zip(size, stride, strict=True))
    if last >= count:
        raise CheckpointError(
            f"a tensor of size {list(size)}, stride {list(stride)} at offset {offset} reaches "
            f"element {last} of a storage of {count} elements"
        )
    item = array.itemsize
    return np.ndarray(size, array.dtype, buffer=array, offset=offset * item,
                      strides=tuple(s * item for s in stride))  # fmt: skip


class Rebuilder:
    """What PyTorch's rebuild functions do, for tensorgrad: each makes a Tensor (or, for a
    tensor that ``tg.save`` wrote from a NumPy array or scalar, that array or scalar again:
    ``numpy`` maps the tensors' order of appearance to ``"array"`` or ``"scalar"``)."""

    def __init__(self, numpy: dict[int, str] | None = None) -> None:
        self.numpy = numpy or {}
        self.count = 0

    def _finish(self, view: np.ndarray, requires_grad: Any) -> Any:
        index, self.count = self.count, self.count + 1
        kind = self.numpy.get(index)
        if kind == "array":
            return view
        if kind == "scalar":
            return view[()]
        if view.dtype.kind == "c":
            raise ValueError(
                f"it holds a {view.dtype} tensor, and tensorgrad has no complex tensors"
            )
        tensor = Tensor(view)
        if requires_grad:
            if view.dtype.kind != "f":
                raise CheckpointError(f"a {view.dtype} tensor requires grad")
            tensor.requires_grad_(True)
        return tensor

    def tensor_v2(self, storage: Storage, storage_offset: Any, size: Any, stride: Any,
                  requires_grad: Any = False, backward_hooks: Any = None,
                  metadata: Any = None) -> Any:  # fmt: skip
        if not isinstance(storage, Storage) or storage.dtype is None:
            raise CheckpointError("a tensor's storage is not a typed storage")
        return self._finish(
            _strided_view(storage.array, storage_offset, size, stride), requires_grad
        )

    def tensor_v3(self, storage: Storage, storage_offset: Any, size: Any, stride: Any,
                  requires_grad: Any, backward_hooks: Any, dtype: Any,
                  metadata: Any = None) -> Any:  # fmt: skip
        if not isinstance(storage, Storage):
            raise CheckpointError("a tensor's storage is not a storage")
        if not isinstance(dtype, np.dtype):
            raise ValueError(f"it holds a tensor of dtype {dtype!r}, which tensorgrad cannot hold")
        elements = storage.array.view(np.uint8)
        if elements.shape[0] % dtype.itemsize:
            raise CheckpointError(f"a storage of {elements.shape[0]} bytes holds {dtype} elements")
        view = _strided_view(elements.view(dtype), storage_offset, size, stride)
        return self._finish(view, requires_grad)

    def tensor_v1(self, storage: Storage, storage_offset: Any, size: Any, stride: Any) -> Any:
        return self.tensor_v2(storage, storage_offset, size, stride)

    def parameter(
        self, data: Any, requires_grad: Any, backward_hooks: Any, state: Any = None
    ) -> Any:
        from tensorgrad.nn.parameter import Parameter

        if not isinstance(data, Tensor):
            raise CheckpointError(f"a parameter holds a {type(data).__name__}, not a tensor")
        if state:
            raise ValueError(f"a parameter carries attributes {sorted(map(str, state))}")
        return Parameter(data, requires_grad=bool(requires_grad))

    def from_type(self, func: Any, new_type: Any, args: Any, state: Any) -> Any:
        """``torch._tensor._rebuild_from_type_v2``: a tensor subclass, or a tensor with
        attributes; only plain tensors and parameters load."""
        if func not in (self.tensor_v1, self.tensor_v2, self.tensor_v3, self.parameter):
            raise CheckpointError("a tensor is rebuilt by a function other than PyTorch's")
        result = func(*args)
        if state:
            raise ValueError(f"a tensor carries attributes {sorted(map(str, state))}")
        from tensorgrad.nn.parameter import Parameter

        if new_type is Parameter and not isinstance(result, Parameter):
            return Parameter(result, requires_grad=result.requires_grad)
        if new_type not in (Tensor, Parameter):
            raise ValueError(f"a tensor of the class {new_type!r}")
        return result


def _unsupported(what: str) -> Callable[..., Any]:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise ValueError(f"it holds {what}, which tensorgrad does not have (dense tensors only)")

    return refuse


_UNSUPPORTED_REBUILDS = {
    "_rebuild_sparse_tensor": "a sparse tensor",
    "_rebuild_qtensor": "a quantized tensor",
    "_rebuild_nested_tensor": "a nested tensor",
    "_rebuild_wrapper_subclass": "a tensor subclass",
    "_rebuild_meta_tensor_no_storage": "a tensor on the meta device",
    "_rebuild_device_tensor_from_numpy": "a tensor of a device saved through NumPy",
    "_rebuild_device_tensor_from_cpu_tensor": "a tensor of another device",
    "_rebuild_xla_tensor": "an XLA tensor",
    "_rebuild_mtia_tensor": "an MTIA tensor",
}


def torch_global(module: str, name: str, rebuild: Rebuilder) -> Any:
    """tensorgrad's stand-in for the PyTorch name ``module.name`` a pickle refers to, or None
    where there is none (a PyTorch class of its own, a module: never imported)."""
    from tensorgrad.core.args import Size
    from tensorgrad.nn.parameter import Parameter

    if module == "torch._utils":
        found = {
            "_rebuild_tensor_v2": rebuild.tensor_v2,
            "_rebuild_tensor_v3": rebuild.tensor_v3,
            "_rebuild_tensor": rebuild.tensor_v1,
            "_rebuild_parameter": rebuild.parameter,
            "_rebuild_parameter_with_state": rebuild.parameter,
        }.get(name)
        if found is None and name in _UNSUPPORTED_REBUILDS:
            found = _unsupported(_UNSUPPORTED_REBUILDS[name])
        return found
    if module == "torch._tensor" and name == "_rebuild_from_type_v2":
        return rebuild.from_type
    if module in ("torch", "torch.cuda") and name in STORAGE_DTYPES:
        return StorageType(STORAGE_DTYPES[name])
    if (module, name) in (("torch.storage", "UntypedStorage"), ("torch", "UntypedStorage")):
        return StorageType(None)
    if module == "torch" and name in NUMPY_DTYPES:
        return NUMPY_DTYPES[name]
    if module == "torch" and name in OTHER_TORCH_DTYPES:
        return array_backend.unsupported_dtype(name)
    return {
        ("torch", "Size"): Size,
        ("torch", "device"): array_backend.device,
        ("torch", "Tensor"): Tensor,
        ("torch.nn.parameter", "Parameter"): Parameter,
        ("torch.serialization", "_get_layout"): _unsupported("a sparse tensor"),
    }.get((module, name))


# --------------------------------------------------------------------- safe globals
def _encode_text(text: Any, encoding: str = "utf-8") -> bytes:
    """``_codecs.encode``, which protocol-2 pickles call to make ``bytes``: text only."""
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1", "utf-8", "utf8"):
        raise pickle.UnpicklingError(f"_codecs.encode of {type(text).__name__} as {encoding!r}")
    return text.encode(encoding)


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


def _python3_name(module: str, name: str) -> tuple[str, str]:
    """Protocol-2 pickles name Python 2's modules (``__builtin__.set``): read as Python 3's,
    as pickle does."""
    import _compat_pickle

    if (module, name) in _compat_pickle.NAME_MAPPING:
        module, name = _compat_pickle.NAME_MAPPING[(module, name)]
    return _compat_pickle.IMPORT_MAPPING.get(module, module), name


def allowed_global(module: str, name: str) -> Any:
    """The object a weights-only load may use for ``module.name`` (not PyTorch's names:
    :func:`torch_global`), or None."""
    module, name = _python3_name(module, name)
    full = f"{module}.{name}"
    for scope in reversed(_SCOPED):
        if full in scope:
            return scope[full]
    if full in _SAFE_GLOBALS:
        return _SAFE_GLOBALS[full]
    if full == "_codecs.encode":
        return _encode_text
    if full in _DEFAULT_SAFE:
        import importlib

        return getattr(importlib.import_module(module), name)
    return None


class WeightsOnlyError(pickle.UnpicklingError):
    """A weights-only load met a global it does not allow (PyTorch's ``UnpicklingError``)."""


def refusal(path: str, module: str, name: str) -> WeightsOnlyError:
    """PyTorch's error for a global a weights-only load does not allow, naming it (by its
    Python 3 name: protocol-2 pickles spell ``builtins.eval`` as ``__builtin__.eval``)."""
    module, name = _python3_name(module, name)
    full = f"{module}.{name}"
    return WeightsOnlyError(
        f"{path}: Weights only load failed. This file can still be loaded, to do so you have "
        "two options, do those steps only if you trust the source of the checkpoint. (1) "
        "Re-running `tensorgrad.load` with `weights_only` set to `False` will likely succeed, "
        "but it can result in arbitrary code execution. (2) Alternatively, allow the global: "
        f"Unsupported global: GLOBAL {full} was not an allowed global by default. Please use "
        f"`tensorgrad.serialization.add_safe_globals([{name}])` or the "
        f"`tensorgrad.serialization.safe_globals([{name}])` context manager to allowlist "
        "this global if you trust this class/function."
    )


def make_unpickler(
    path: str,
    weights_only: bool,
    pickle_module: Any,
    rebuild: Rebuilder,
    persistent_load: Callable[[Any], Any],
) -> type:
    """The Unpickler class for one load: PyTorch's names resolve to tensorgrad's stand-ins
    (never to PyTorch itself, even where it is installed); with ``weights_only`` everything
    else must be allowed (:func:`allowed_global`), without it anything is imported."""
    base = pickle if weights_only or pickle_module is None else pickle_module

    class Unpickler(base.Unpickler):  # type: ignore[name-defined, misc]
        def find_class(self, module: str, name: str) -> Any:
            if module == "torch" or module.startswith("torch."):
                found = torch_global(module, name, rebuild)
                if found is not None:
                    return found
                if weights_only:
                    raise refusal(path, module, name)
                raise WeightsOnlyError(
                    f"{path}: it holds an object of PyTorch's class {module}.{name}, which "
                    "tensorgrad does not load (it reads PyTorch's tensors and containers, not "
                    "whole PyTorch modules or other objects): in PyTorch, save the model's "
                    "state_dict() instead, and load_state_dict it in tensorgrad"
                )
            if not weights_only:
                return super().find_class(module, name)
            found = allowed_global(module, name)
            if found is None:
                raise refusal(path, module, name)
            return found

        def persistent_load(self, pid: Any) -> Any:
            return persistent_load(pid)

    return Unpickler


# --------------------------------------------------------------------- writing
class TorchName:
    """A PyTorch name that a pickle refers to (``torch._utils._rebuild_tensor_v2``), written
    by :class:`TorchPickler` as it is, without importing torch. Never called here."""

    __slots__ = ("module", "name")

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name

    def __call__(self, *args: Any) -> Any:
        raise TypeError(f"{self.module}.{self.name} is PyTorch's; tensorgrad only names it")


REBUILD_TENSOR_V2 = TorchName("torch._utils", "_rebuild_tensor_v2")
REBUILD_TENSOR_V3 = TorchName("torch._utils", "_rebuild_tensor_v3")
REBUILD_PARAMETER = TorchName("torch._utils", "_rebuild_parameter")
UNTYPED_STORAGE = TorchName("torch.storage", "UntypedStorage")
STORAGE_NAMES = {dtype: TorchName("torch", name) for dtype, name in STORAGE_OF.items()}
DTYPE_NAMES = {name: TorchName("torch", name) for name in NUMPY_DTYPES}


class StorageWriter:
    """The storages of one file: each array's memory is found in the buffer that owns it, so
    tensors that view one buffer (tied weights, a slice, optimizer state kept in one flat
    buffer) are written as one storage with their offsets and strides, as PyTorch does."""

    def __init__(self, legacy: bool = False) -> None:
        self.buffers: list[np.ndarray] = []  #: each storage's bytes, in key order
        self.ids: list[tuple] = []  #: each storage's persistent id
        self.legacy = legacy  #: PyTorch's format before 1.6: ids end with a view (None)
        self._roots: dict[int, tuple[Any, np.ndarray, np.dtype]] = {}  # id → (pid, root, dtype)

    def _new(self, data: np.ndarray, dtype: np.dtype) -> tuple:
        """A new storage of ``data`` (bytes, 1-D) holding ``dtype`` elements."""
        key = str(len(self.buffers))
        self.buffers.append(data)
        if dtype.name in STORAGE_NAMES:
            pid: tuple = (
                "storage",
                STORAGE_NAMES[dtype.name],
                key,
                "cpu",
                data.shape[0] // dtype.itemsize,
            )
        elif self.legacy:
            raise TypeError(f"save: PyTorch's format before 1.6 has no {dtype} tensors")
        else:
            pid = ("storage", UNTYPED_STORAGE, key, "cpu", data.shape[0])
        pid = (*pid, None) if self.legacy else pid
        self.ids.append(pid)
        return pid

    def place(self, array: np.ndarray) -> tuple[tuple, int, tuple, tuple]:
        """``(persistent id, offset, size, stride)`` of ``array`` (offset and strides in
        elements) in the storage of the buffer it views, or of a copy of its own. The buffer
        is the array that owns the memory, whatever its dtype (a loaded file's storages are
        bytes); a second dtype on one buffer is written as a copy, as PyTorch has one dtype
        per storage."""
        dtype = array.dtype
        if not dtype.isnative and dtype.itemsize > 1:
            array = array.astype(dtype.newbyteorder("="))
            dtype = array.dtype
        root = array
        while isinstance(root.base, np.ndarray):
            root = root.base
        item = dtype.itemsize
        start = array.__array_interface__["data"][0] - root.__array_interface__["data"][0]
        known = self._roots.get(id(root))
        fits = (
            (known is None or known[2] == dtype)
            and array.size > 0
            and (root.flags.c_contiguous or root.flags.f_contiguous)
            and root.nbytes % item == 0
            and start >= 0
            and start % item == 0
            and all(s >= 0 and s % item == 0 for s in array.strides)
        )
        if not fits:
            root, start, known = np.ascontiguousarray(array), 0, None
        if known is None:
            flat = root.reshape(-1) if root.flags.c_contiguous else root.T.reshape(-1)
            known = (self._new(flat.view(np.uint8), dtype), root, dtype)
            self._roots[id(root)] = known
        strides = array.strides if fits else root.strides
        stride = tuple(s // item for s in strides) if array.size else (0,) * array.ndim
        return known[0], start // item, tuple(array.shape), stride


class TorchPickler(pickle._Pickler):  # type: ignore[name-defined, misc]
    """A pickler that writes Tensors, Parameters and numeric NumPy arrays and scalars as
    PyTorch's tensors (the pure-Python pickler: it lets a name be written as PyTorch's
    without importing it). ``numpy`` records which tensors were NumPy arrays or scalars, by
    their order in the pickle, so that ``tg.load`` gives those back as they were."""

    def __init__(
        self, file: Any, protocol: int, storages: StorageWriter, legacy: bool = False
    ) -> None:
        super().__init__(file, protocol)
        self.storages = storages
        storages.legacy = legacy
        self.numpy: dict[int, str] = {}
        self._tensors = 0  # (what was reduced stays alive in the pickler's memo: no id reused)

    def save(self, obj: Any, save_persistent_id: bool = True) -> None:
        if isinstance(obj, np.dtype) and not obj.fields and obj.name in DTYPE_NAMES:
            obj = DTYPE_NAMES[obj.name]  # torch.float32, which tensorgrad reads as np.float32
        elif type(obj) is array_backend.UnsupportedDtype and obj.name in OTHER_TORCH_DTYPES:
            obj = TorchName("torch", obj.name)
        if type(obj) is TorchName:
            memo = self.memo.get(id(obj))
            if memo is not None:
                self.write(self.get(memo[0]))
                return
            self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode("ascii"))
            self.memoize(obj)
            return
        super().save(obj, save_persistent_id)

    def persistent_id(self, obj: Any) -> Any:
        return obj.pid if type(obj) is _StorageRef else None

    def _tensor(self, array: np.ndarray, requires_grad: bool, kind: str | None) -> tuple:
        pid, offset, size, stride = self.storages.place(array)
        if kind is not None:
            self.numpy[self._tensors] = kind
        self._tensors += 1
        args = (_StorageRef(pid), offset, size, stride, requires_grad, OrderedDict())
        if pid[1] is UNTYPED_STORAGE:
            return REBUILD_TENSOR_V3, (*args, DTYPE_NAMES[array.dtype.name])
        return REBUILD_TENSOR_V2, args

    def reducer_override(self, obj: Any) -> Any:
        kind = type(obj)
        if kind is Tensor:
            return self._tensor(obj._data, obj.requires_grad, None)
        if kind is _TensorData:
            return self._tensor(obj.array, False, None)
        if kind is _parameter_class():
            return REBUILD_PARAMETER, (_TensorData(obj._data), obj.requires_grad, OrderedDict())
        if kind is np.ndarray and obj.dtype.name in NUMPY_DTYPES:
            return self._tensor(obj, False, "array")
        if isinstance(obj, np.generic) and obj.dtype.name in NUMPY_DTYPES:
            return self._tensor(np.asarray(obj), False, "scalar")
        return NotImplemented


def _parameter_class() -> type:
    from tensorgrad.nn.parameter import Parameter

    return Parameter


class _StorageRef:
    """A storage in the pickle: written as its persistent id."""

    __slots__ = ("pid",)

    def __init__(self, pid: tuple) -> None:
        self.pid = pid


class _TensorData:
    """A parameter's data, pickled as a plain tensor inside ``_rebuild_parameter``."""

    __slots__ = ("array",)

    def __init__(self, array: np.ndarray) -> None:
        self.array = array
