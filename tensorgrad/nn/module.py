"""``Module``: the base of every layer and model, and the containers built on it.

A module finds its parameters and sub-modules by walking its attributes in the order they
were first assigned, looking inside lists, tuples and dicts too, so ``self.layers = [Linear(..),
...]`` registers every layer (named ``layers.0``, ``layers.1``, ...). Each parameter and module
is listed once, however many times it is reachable. Buffers (state that is saved but not
trained, such as BatchNorm's running statistics) are declared with :meth:`Module.register_buffer`.

``state_dict()`` returns copies of the arrays (not tensors sharing memory, as PyTorch does),
so a saved "best model" snapshot cannot change under the optimizer's in-place updates.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, NamedTuple

import numpy as np

from tensorgrad import backend
from tensorgrad.grad_mode import no_grad
from tensorgrad.nn.parameter import Parameter
from tensorgrad.tensor import Tensor


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


class _Layout:
    """How many times an attribute of any module, or the layers of any ``Sequential``, have
    changed: a fused plan made before the latest change is made again before it is used."""

    changes = 0


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
        _Layout.changes += 1

    def __delattr__(self, name: str) -> None:
        self._buffers().pop(name, None)
        object.__delattr__(self, name)
        _Layout.changes += 1

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
        self, prefix: str = "", remove_duplicate: bool = True
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
        modules = self.named_modules(prefix, remove_duplicate) if recurse else [(prefix, self)]
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
        modules = self.named_modules(prefix, remove_duplicate) if recurse else [(prefix, self)]
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
        """Set training mode (``mode=False``: evaluation) on this module and all sub-modules."""
        for module in self.modules():
            object.__setattr__(module, "training", bool(mode))
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
            if set_to_none or param.grad is None:
                param.grad = None
            else:
                with no_grad():
                    param.grad.zero_()

    def apply(self, fn: Callable[[Module], Any]) -> Module:
        """Call ``fn`` on every sub-module, then on this module (for custom initialisation)."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    def to(self, dtype: Any) -> Module:
        """Cast floating-point parameters, their gradients and buffers to ``dtype``, in place.

        The Parameter objects stay the same, but cast before creating the optimizer: its state
        keeps the dtype it was created with.
        """
        dtype = backend.as_dtype(dtype)
        if not backend.is_floating(dtype):
            raise TypeError(f"to: dtype must be a floating-point type, got {dtype}")
        for param in self.parameters():
            if param.dtype != dtype:
                param.data = param.data.astype(dtype)
                if param.grad is not None:
                    param.grad = param.grad.data.astype(dtype)
        for buffer in self.buffers():
            if backend.is_floating(buffer.dtype) and buffer.dtype != dtype:
                buffer.data = buffer.data.astype(dtype)
        return self

    def float(self) -> Module:
        return self.to(backend.float32)

    def double(self) -> Module:
        return self.to(backend.float64)

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

    def state_dict(self) -> OrderedDict[str, np.ndarray]:
        """Name → a copy of the array, for parameters and persistent buffers."""
        return OrderedDict((name, t.data.copy()) for name, t in self._state_tensors().items())

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
                array = value.data if isinstance(value, Tensor) else np.asarray(value)
            except Exception as exc:  # a foreign tensor that refuses conversion, say
                problems.append(
                    f"{name!r}: cannot convert {type(value).__name__} to an array ({exc})"
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


class _Container(Module):
    """A module whose sub-modules live in ``self._modules`` under string keys. A module
    assigned as an attribute (or by ``add_module``) joins them, as in PyTorch: a
    ``Sequential`` runs it after the others, and ``seq.name`` finds it."""

    def __init__(self) -> None:
        super().__init__()
        object.__setattr__(self, "_modules", OrderedDict())

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, Module) or (value is None and name in self._modules):
            self.__dict__.pop(name, None)
            self._modules[name] = value
            _Layout.changes += 1
        else:
            if name in self._modules:
                raise TypeError(
                    f"cannot assign a {type(value).__name__} to module {name!r} of a "
                    f"{type(self).__name__} (a Module or None expected)"
                )
            super().__setattr__(name, value)

    def __getattr__(self, name: str) -> Any:  # only for names not found the usual way
        modules = self.__dict__.get("_modules")
        if modules is not None and name in modules:
            return modules[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __delattr__(self, name: str) -> None:
        if name in self._modules:
            del self._modules[name]
            _Layout.changes += 1
        else:
            super().__delattr__(name)

    def _members(self) -> Iterator[tuple[str, Any]]:
        yield from self._modules.items()
        for name, value in self.__dict__.items():
            if name != "_modules":
                yield name, value

    def __len__(self) -> int:
        return len(self._modules)


def _check_module(value: Any, where: str) -> Module:
    if not isinstance(value, Module):
        raise TypeError(f"{where}: expected a Module, got {type(value).__name__}")
    return value


#: layer types that ``Sequential`` runs together as one fused op when two or more follow each
#: other, each with the function that turns such a run into one function of the input: filled
#: in by the module that defines the layers (runs of ``Linear`` and ``ReLU`` are one
#: ``linear_chain`` op)
FUSERS: dict[type, Callable[[tuple[Module, ...]], Callable[[Any], Any]]] = {}


class _Plan:
    """A ``Sequential``'s layers as the functions its forward calls in turn, made when the
    layout had seen ``changes`` changes. (Not a list: attributes that are lists are searched
    for sub-modules.)"""

    __slots__ = ("changes", "runs")

    def __init__(self, modules: tuple[Module, ...]) -> None:
        self.changes = _Layout.changes
        runs: list[Callable[[Any], Any]] = []
        i, n = 0, len(modules)
        while i < n:
            fuser, end = FUSERS.get(type(modules[i])), i + 1
            while fuser is not None and end < n and FUSERS.get(type(modules[end])) is fuser:
                end += 1
            runs.append(fuser(modules[i:end]) if end - i > 1 else modules[i])
            i = end
        self.runs = tuple(runs)


class Sequential(_Container):
    """Modules applied one after another: ``Sequential(Linear(784, 10), ReLU())``, or from an
    ``OrderedDict`` of named modules.

    Runs of two or more adjacent layers listed in :data:`FUSERS` (exactly those types, not
    subclasses) run as one fused op, as a hand-written step would compute them; the values
    and gradients are the same. Which layers run together is worked out once, and again
    after any change to a module's attributes or to the layers.
    """

    _plan: _Plan | None = None

    def __init__(self, *modules: Module | Mapping[str, Module]) -> None:
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], Mapping):
            for name, module in modules[0].items():
                self._modules[str(name)] = _check_module(module, "Sequential")
        else:
            for i, module in enumerate(modules):
                self._modules[str(i)] = _check_module(module, "Sequential")

    def forward(self, x: Any) -> Any:
        plan = self._plan
        if plan is None or plan.changes != _Layout.changes:
            plan = _Plan(tuple(self._modules.values()))
            object.__setattr__(self, "_plan", plan)
        for run in plan.runs:
            x = run(x)
        return x

    def append(self, module: Module) -> Sequential:
        self._modules[str(len(self._modules))] = _check_module(module, "Sequential.append")
        _Layout.changes += 1
        return self

    def __getstate__(self) -> dict[str, Any]:
        """What ``copy`` and ``pickle`` keep: everything but the plan, whose functions hold
        this model's own parameters (a copy makes its plan again, from its own layers)."""
        state = self.__dict__.copy()
        state.pop("_plan", None)
        return state

    def __getitem__(self, index: int | slice) -> Module:
        modules = list(self._modules.values())
        if isinstance(index, slice):
            return Sequential(OrderedDict(list(self._modules.items())[index]))
        return modules[index]

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())


class ModuleList(_Container):
    """A list of modules, registered as ``0``, ``1``, ...; it has no ``forward`` of its own."""

    def __init__(self, modules: Iterable[Module] = ()) -> None:
        super().__init__()
        self.extend(modules)

    def _renumber(self, modules: list[Module]) -> None:
        self._modules.clear()
        for i, module in enumerate(modules):
            self._modules[str(i)] = module

    def append(self, module: Module) -> ModuleList:
        self._modules[str(len(self._modules))] = _check_module(module, "ModuleList.append")
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> None:
        modules = list(self._modules.values())
        modules.insert(index, _check_module(module, "ModuleList.insert"))
        self._renumber(modules)

    def __getitem__(self, index: int | slice) -> Any:
        modules = list(self._modules.values())
        return ModuleList(modules[index]) if isinstance(index, slice) else modules[index]

    def __setitem__(self, index: int, module: Module) -> None:
        modules = list(self._modules.values())
        modules[index] = _check_module(module, "ModuleList")
        self._renumber(modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())


class ModuleDict(_Container):
    """A dict of modules by string key, kept in insertion order."""

    def __init__(self, modules: Mapping[str, Module] | None = None) -> None:
        super().__init__()
        for key, module in (modules or {}).items():
            self[key] = module

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        if not isinstance(key, str) or not key or "." in key:
            raise KeyError(f"ModuleDict: keys must be non-empty strings without '.', got {key!r}")
        self._modules[key] = _check_module(module, "ModuleDict")

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def keys(self) -> Iterable[str]:
        return self._modules.keys()

    def values(self) -> Iterable[Module]:
        return self._modules.values()

    def items(self) -> Iterable[tuple[str, Module]]:
        return self._modules.items()
