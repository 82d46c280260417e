"""``Module``: the base of every layer and model, and the containers built on it.

A module finds its parameters and sub-modules by walking its attributes in the order they
were first assigned, looking inside lists, tuples and dicts too, so ``self.layers = [Linear(..),
...]`` registers every layer (named ``layers.0``, ``layers.1``, ...). Each parameter and module
is listed once, however many times it is reachable. Buffers (state that is saved but not
trained, such as BatchNorm's running statistics) are declared with :meth:`Module.register_buffer`.

``state_dict()`` returns tensors holding copies of the values (PyTorch's share the
parameters' memory), so a saved "best model" snapshot cannot change under the optimizer's
in-place updates.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, NamedTuple

import numpy as np

from tensorgrad import array_backend
from tensorgrad.core.engine import wrap
from tensorgrad.core.tensor import Tensor
from tensorgrad.grad_mode import no_grad
from tensorgrad.nn.parameter import Parameter


class IncompatibleKeys(NamedTuple):
    """What ``load_state_dict(strict=False)`` skipped."""

    missing_keys: list[str]
    unexpected_keys: list[str]


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def _walk(name: str, value: Any, seen: set[int]) -> Iterator[tuple[str, Any]]:
    """The parameters and modules in ``value``, looking inside lists, tuples and dicts."""
    if isinstance(value, (Parameter, Module)):
        yield name, value
    elif isinstance(value, (list, tuple, dict)) and id(value) not in seen:
        seen.add(id(value))
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            yield from _walk(f"{name}.{key}", item, seen)


class Module:
    """Base class of layers and models: subclass it, assign layers and parameters as
    attributes in ``__init__``, and write ``forward``; call the module to run it."""

    training: bool = True

    def __init__(self) -> None:
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_buffer_names", {})

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"{type(self).__name__} does not define forward()")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    # ----------------------------------------------------------------- registration
    def _buffers(self) -> dict[str, bool]:
        """Buffer names (in registration order) → whether they are saved in ``state_dict``."""
        names = self.__dict__.get("_buffer_names")
        if names is None:
            names = {}
            object.__setattr__(self, "_buffer_names", names)
        return names

    def __setattr__(self, name: str, value: Any) -> None:
        old = self.__dict__.get(name)
        if isinstance(old, Parameter) and value is not None and not isinstance(value, Parameter):
            raise TypeError(
                f"cannot assign a {type(value).__name__} to parameter {name!r} (a Parameter or "
                f"None expected); to change its values use `with tg.no_grad(): "
                f"module.{name}.copy_(value)`"
            )
        if name in self._buffers() and value is not None and not isinstance(value, Tensor):
            raise TypeError(
                f"cannot assign a {type(value).__name__} to buffer {name!r} (a Tensor or None "
                "expected)"
            )
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        self._buffers().pop(name, None)
        object.__delattr__(self, name)

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a buffer: state kept with the module (and in ``state_dict`` when ``persistent``)
        that is not a parameter, such as running statistics."""
        if not isinstance(name, str) or not name or "." in name:
            raise KeyError(
                f"register_buffer: buffer name must be a non-empty string without '.', got {name!r}"
            )
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"register_buffer: {name!r} must be a Tensor or None, got {type(tensor).__name__}"
            )
        if isinstance(self.__dict__.get(name), (Parameter, Module)):
            raise KeyError(f"register_buffer: {name!r} is already a parameter or a module")
        self._buffers()[name] = persistent
        object.__setattr__(self, name, tensor)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Set ``self.<name> = param`` (PyTorch's spelling)."""
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"register_parameter: {name!r} must be a Parameter or None")
        setattr(self, name, param)

    def add_module(self, name: str, module: Module | None) -> None:
        """Set ``self.<name> = module`` (PyTorch's spelling)."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"add_module: {name!r} must be a Module or None")
        setattr(self, name, module)

    def _members(self) -> Iterable[tuple[str, Any]]:
        """The (name, value) pairs searched for parameters and sub-modules."""
        return self.__dict__.items()

    def _direct(self) -> Iterator[tuple[str, Any]]:
        """This module's own parameters and child modules, by name, in definition order."""
        seen: set[int] = set()
        for name, value in self._members():
            yield from _walk(name, value, seen)

    # ----------------------------------------------------------------- traversal
    def _named_children(self, remove_duplicate: bool) -> Iterator[tuple[str, Module]]:
        seen: set[int] = set()
        for name, value in self._direct():
            if isinstance(value, Module) and (not remove_duplicate or id(value) not in seen):
                seen.add(id(value))
                yield name, value

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """The direct sub-modules, each once, with their names."""
        return self._named_children(remove_duplicate=True)

    def children(self) -> Iterator[Module]:
        for _, module in self.named_children():
            yield module

    def named_modules(
        self, memo: set[Module] | None = None, prefix: str = "", remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Module]]:
        """This module and all sub-modules, depth first, each once (by identity)."""
        seen: set[int] = set()
        stack: list[tuple[str, Module, tuple[int, ...]]] = [(prefix, self, ())]
        while stack:
            name, module, ancestors = stack.pop()
            if id(module) in ancestors or (remove_duplicate and id(module) in seen):
                continue
            seen.add(id(module))
            yield name, module
            path = (*ancestors, id(module))
            children = [
                (_join(name, n), child, path)
                for n, child in module._named_children(remove_duplicate)
            ]
            stack.extend(reversed(children))

    def modules(self) -> Iterator[Module]:
        for _, module in self.named_modules():
            yield module

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Parameter]]:
        """Every parameter with its dotted name (``"0.weight"``), each once by identity."""
        seen: set[int] = set()
        modules = (
            self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
            if recurse
            else [(prefix, self)]
        )
        for module_name, module in modules:
            for name, value in module._direct():
                if isinstance(value, Parameter) and (not remove_duplicate or id(value) not in seen):
                    seen.add(id(value))
                    yield _join(module_name, name), value

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Tensor]]:
        """Every buffer (``None`` ones skipped) with its dotted name."""
        seen: set[int] = set()
        modules = (
            self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
            if recurse
            else [(prefix, self)]
        )
        for module_name, module in modules:
            for name in module._buffers():
                value = module.__dict__.get(name)
                if value is not None and (not remove_duplicate or id(value) not in seen):
                    seen.add(id(value))
                    yield _join(module_name, name), value

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, buffer in self.named_buffers(recurse=recurse):
            yield buffer

    # ----------------------------------------------------------------- modes and gradients
    def train(self, mode: bool = True) -> Module:
        """Set training mode (``mode=False``: evaluation) on this module and, through their
        own ``train``, on its children (so a subclass may override ``train``, as in PyTorch)."""
        if not isinstance(mode, bool):
            raise ValueError(f"train: training mode is expected to be a bool, got {mode!r}")
        object.__setattr__(self, "training", mode)
        for child in self.children():
            child.train(mode)
        return self

    def eval(self) -> Module:
        """Evaluation mode: dropout off, batch norm on running statistics."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear the parameters' gradients: set them to None (PyTorch's default), or zero them."""
        for param in self.parameters():
            if set_to_none or param._grad is None:
                param._grad = None
            else:
                with no_grad():
                    param.grad.zero_()

    def apply(self, fn: Callable[[Module], Any]) -> Module:
        """Call ``fn`` on every sub-module, then on this module (for custom initialisation)."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    def to(self, *args: Any, **kwargs: Any) -> Module:
        """PyTorch's ``Module.to``: a floating dtype (parameters, their gradients and floating
        buffers are cast in place; the Parameter objects stay the same), a device (only the
        CPU), or both. Cast before creating the optimizer: its state keeps the old dtype."""
        dtype = kwargs.pop("dtype", None)
        device = kwargs.pop("device", None)
        kwargs.pop("non_blocking", None)
        if kwargs:
            raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
        for arg in args:
            if isinstance(arg, Tensor):
                dtype = arg.dtype
            elif isinstance(arg, array_backend.device) or (
                isinstance(arg, str) and _is_device(arg)
            ):
                device = arg
            else:
                dtype = arg
        if device is not None:
            array_backend.as_device(device)
        if dtype is None:
            return self
        dtype = array_backend.as_dtype(dtype)
        if not array_backend.is_floating(dtype):
            raise TypeError(f"to: dtype must be a floating-point type, got {dtype}")
        for param in self.parameters():
            if param.dtype != dtype:
                param.data = param._data.astype(dtype)
                if param._grad is not None:
                    param.grad = param.grad._data.astype(dtype)
        for buffer in self.buffers():
            if array_backend.is_floating(buffer.dtype) and buffer.dtype != dtype:
                buffer.data = buffer._data.astype(dtype)
        return self

    def float(self) -> Module:
        return self.to(array_backend.float32)

    def double(self) -> Module:
        return self.to(array_backend.float64)

    def half(self) -> Module:
        return self.to(array_backend.float16)

    def cpu(self) -> Module:
        return self

    def cuda(self, device: Any = None) -> Module:
        raise array_backend.UnsupportedError(
            "cuda(): tensorgrad runs on the CPU only (see docs/porting.md); use .to('cpu')"
        )

    # ----------------------------------------------------------------- state
    def _state_tensors(self) -> OrderedDict[str, Tensor]:
        """Parameters and persistent buffers under every name they are reachable by, each
        module's own entries before its children's (PyTorch's order)."""
        entries: OrderedDict[str, Tensor] = OrderedDict()
        for module_name, module in self.named_modules(remove_duplicate=False):
            for name, value in module._direct():
                if isinstance(value, Parameter):
                    entries[_join(module_name, name)] = value
            for name, persistent in module._buffers().items():
                value = module.__dict__.get(name)
                if persistent and value is not None:
                    entries[_join(module_name, name)] = value
        return entries

    def state_dict(
        self, destination: Any = None, prefix: str = "", keep_vars: bool = False
    ) -> OrderedDict[str, Tensor]:
        """Name → a tensor holding a copy of the values, for parameters and persistent
        buffers (``keep_vars=True``: the parameters and buffers themselves)."""
        result = OrderedDict() if destination is None else destination
        for name, t in self._state_tensors().items():
            result[prefix + name] = t if keep_vars else wrap(t._data.copy())
        return result

    def load_state_dict(
        self, state_dict: Mapping[str, Any], strict: bool = True
    ) -> IncompatibleKeys:
        """Copy arrays (or Tensors, or anything ``np.asarray`` takes) into the parameters and
        buffers of the same names.

        Everything is checked first: missing and unexpected keys (when ``strict``), shape
        mismatches and impossible casts are reported together in one error, and then nothing
        has been changed. Values are cast to each parameter's dtype.
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"load_state_dict: expected a mapping, got {type(state_dict).__name__}")
        targets = self._state_tensors()
        missing = [name for name in targets if name not in state_dict]
        unexpected = [name for name in state_dict if name not in targets]
        problems = []
        if strict and missing:
            problems.append("missing keys: " + ", ".join(map(repr, missing)))
        if strict and unexpected:
            problems.append("unexpected keys: " + ", ".join(map(repr, unexpected)))
        arrays = {}
        for name, target in targets.items():
            if name not in state_dict:
                continue
            value = state_dict[name]
            try:
                array = value._data if isinstance(value, Tensor) else np.asarray(value)
            except Exception as exc:  # a foreign tensor that refuses conversion, say
                problems.append(
                    f"{name!r}: cannot convert {type(value).__name__} to an array ({exc})"
                )
                continue
            if array.dtype.kind not in "biuf":
                problems.append(
                    f"{name!r}: expected a tensor or an array of numbers, got "
                    f"{type(value).__name__} {value!r:.40}"
                )
                continue
            if array.shape != target.shape:
                problems.append(
                    f"size mismatch for {name!r}: checkpoint shape {array.shape}, "
                    f"model shape {target.shape}"
                )
            elif not np.can_cast(array.dtype, target.dtype, casting="same_kind"):
                problems.append(
                    f"dtype mismatch for {name!r}: cannot cast checkpoint {array.dtype} to "
                    f"model {target.dtype}"
                )
            else:
                arrays[name] = array
        if problems:
            raise RuntimeError(
                f"load_state_dict: error(s) loading into {type(self).__name__} (nothing was "
                "changed):\n  " + "\n  ".join(problems)
            )
        with no_grad():
            for name, array in arrays.items():
                targets[name].copy_(array)
        return IncompatibleKeys(missing, unexpected)

    # ----------------------------------------------------------------- repr
    def extra_repr(self) -> str:
        """The settings shown inside this module's parentheses in its repr."""
        return ""

    def __repr__(self) -> str:
        lines = self.extra_repr().splitlines()
        for name, child in self.named_children():
            child_lines = repr(child).splitlines()
            lines.append(f"({name}): " + "\n  ".join(child_lines))
        if not lines:
            return f"{type(self).__name__}()"
        if len(lines) == 1 and not any(True for _ in self.named_children()):
            return f"{type(self).__name__}({lines[0]})"
        return f"{type(self).__name__}(\n  " + "\n  ".join(lines) + "\n)"


def _is_device(name: str) -> bool:
    return name.partition(":")[0] in ("cpu", "cuda", "mps", "xpu", "meta", "hpu", "xla")
