"""Containers: ``Sequential``, ``ModuleList``, ``ModuleDict``, ``ParameterList`` and
``ParameterDict``."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from tensorgrad.core.tensor import Tensor
from tensorgrad.nn.modules.module import Module
from tensorgrad.nn.parameter import Parameter


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


#: layer types that ``Sequential`` runs together as one fused function when two or more follow
#: each other: for the type that starts a run, the function that turns the run into one
#: function of the input, and the types the run may go on with. Filled in where the layer
#: types are known (``nn/modules/__init__.py``, ``conv.py``): runs of ``Linear`` and
#: ``ReLU`` are one ``linear_chain`` op, a ``Conv2d`` followed by a ``ReLU`` is one
#: ``conv2d_relu`` op (``conv2d_relu_max_pool2d`` with a ``MaxPool2d`` after them whose
#: windows tile). A speed trick: fewer nodes, and the ReLU (and the pooling) applied where
#: its input is still in cache, as a hand-written step does (docs/performance.md).
FUSERS: dict[type, tuple[Callable[[tuple[Module, ...]], Callable[[Any], Any]], frozenset]] = {}


class _Plan:
    """A ``Sequential``'s layers as the functions its forward calls in turn, made for one
    tuple of modules. (Not a list: attributes that are lists are searched for sub-modules.)"""

    __slots__ = ("modules", "runs")

    def __init__(self, modules: tuple[Module, ...]) -> None:
        self.modules = modules
        runs: list[Callable[[Any], Any]] = []
        i, n = 0, len(modules)
        while i < n:
            fuser, members = FUSERS.get(type(modules[i]), (None, ()))
            end = i + 1
            while end < n and type(modules[end]) in members:
                end += 1
            runs.append(fuser(modules[i:end]) if end - i > 1 else modules[i])
            i = end
        self.runs = tuple(runs)


class Sequential(_Container):
    """Modules applied one after another: ``Sequential(Linear(784, 10), ReLU())``, or from an
    ``OrderedDict`` of named modules.

    Runs of two or more adjacent layers listed in :data:`FUSERS` (exactly those types, not
    subclasses) run as one fused op, as a hand-written step would compute them; the values
    and gradients are the same. Which layers run together is worked out once per list of
    layers, and again when the list changes.
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
        modules = tuple(self._modules.values())
        plan = self._plan
        if plan is None or plan.modules != modules:
            plan = _Plan(modules)
            object.__setattr__(self, "_plan", plan)
        for run in plan.runs:
            x = run(x)
        return x

    def append(self, module: Module) -> Sequential:
        self._modules[str(len(self._modules))] = _check_module(module, "Sequential.append")
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

    def pop(self, index: int = -1) -> Module:
        """Remove and return the module at ``index``; the rest are numbered again."""
        modules = list(self._modules.values())
        module = modules.pop(index)
        self._renumber(modules)
        return module

    def __getitem__(self, index: int | slice) -> Any:
        modules = list(self._modules.values())
        if isinstance(index, slice):
            return type(self)(modules[index])
        return modules[_list_index(index, len(modules), "ModuleList")]

    def __setitem__(self, index: int, module: Module) -> None:
        modules = list(self._modules.values())
        modules[_list_index(index, len(modules), "ModuleList")] = _check_module(
            module, "ModuleList"
        )
        self._renumber(modules)

    def __delitem__(self, index: int | slice) -> None:
        modules = list(self._modules.values())
        if not isinstance(index, slice):
            index = _list_index(index, len(modules), "ModuleList")
        del modules[index]
        self._renumber(modules)

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        return ModuleList([*self, *other])

    def __iadd__(self, other: Iterable[Module]) -> ModuleList:
        return self.extend(other)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())


def _list_index(index: int, length: int, where: str) -> int:
    """``index`` (negative from the end) checked against ``length``: PyTorch's IndexError."""
    index = int(index)
    if not -length <= index < length:
        raise IndexError(f"{where}: index {index} is out of range (length {length})")
    return index % length


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

    def pop(self, key: str) -> Module:
        return self._modules.pop(key)

    def clear(self) -> None:
        self._modules.clear()

    def update(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]]) -> None:
        """Add (or replace) modules from a mapping or from (key, module) pairs."""
        pairs = modules.items() if isinstance(modules, Mapping) else modules
        for key, module in pairs:
            self[key] = module


# --------------------------------------------------------------------------- parameters
def _as_parameter(value: Any) -> Any:
    """A tensor that is not yet a Parameter becomes one (sharing its memory, requiring
    grad), as PyTorch's ``ParameterList``/``ParameterDict`` do; other values stay as they are."""
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value


def _describe(value: Any) -> str:
    """One line of a parameter container's repr (PyTorch's form)."""
    if isinstance(value, Tensor):
        size = "x".join(map(str, value.shape))
        kind = "Parameter containing" if isinstance(value, Parameter) else "Tensor"
        return f"{kind}: [{value.type()} of size {size}]"
    return repr(value)


class ParameterList(Module):
    """A list of parameters, registered as ``0``, ``1``, ... (``plist.0`` in
    ``named_parameters`` and the state dict). Tensors put in become Parameters."""

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        object.__setattr__(self, "_values", [])
        if values is not None:
            self.extend(values)

    def _members(self) -> Iterator[tuple[str, Any]]:
        yield from ((str(i), value) for i, value in enumerate(self._values))
        for name, value in self.__dict__.items():
            if name != "_values":
                yield name, value

    def append(self, value: Any) -> ParameterList:
        self._values.append(_as_parameter(value))
        return self

    def extend(self, values: Iterable[Any]) -> ParameterList:
        if not isinstance(values, Iterable) or isinstance(values, Tensor):
            raise TypeError(
                f"ParameterList.extend should be called with an iterable, but got "
                f"{type(values).__name__}"
            )
        for value in values:
            self.append(value)
        return self

    def __iadd__(self, values: Iterable[Any]) -> ParameterList:
        return self.extend(values)

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return type(self)(self._values[index])
        return self._values[_list_index(index, len(self._values), "ParameterList")]

    def __setitem__(self, index: int, value: Any) -> None:
        self._values[_list_index(index, len(self._values), "ParameterList")] = _as_parameter(value)

    def __len__(self) -> int:
        return len(self._values)

    def __iter__(self) -> Iterator[Any]:
        return iter(list(self._values))

    def __dir__(self) -> list[str]:
        return [*super().__dir__(), *map(str, range(len(self._values)))]

    def __getattr__(self, name: str) -> Any:  # plist.0 as getattr(plist, "0")
        values = self.__dict__.get("_values")
        if values is not None and name.isdigit() and int(name) < len(values):
            return values[int(name)]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def extra_repr(self) -> str:
        return "\n".join(f"({i}): {_describe(v)}" for i, v in enumerate(self._values))

    def __repr__(self) -> str:
        lines = self.extra_repr().splitlines()
        return f"{type(self).__name__}(" + "".join(f"\n    {x}" for x in lines) + "\n)"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("ParameterList should not be called.")


class ParameterDict(Module):
    """A dict of parameters by string key, in insertion order (``pdict.key`` in
    ``named_parameters`` and the state dict). Tensors put in become Parameters."""

    def __init__(self, parameters: Mapping[str, Any] | Iterable[tuple[str, Any]] | None = None):
        super().__init__()
        object.__setattr__(self, "_values", {})
        if parameters is not None:
            self.update(parameters)

    def _members(self) -> Iterator[tuple[str, Any]]:
        yield from self._values.items()
        for name, value in self.__dict__.items():
            if name != "_values":
                yield name, value

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __setitem__(self, key: str, value: Any) -> None:
        if not isinstance(key, str) or not key or "." in key:
            raise KeyError(
                f"ParameterDict: keys must be non-empty strings without '.', got {key!r}"
            )
        self._values[key] = _as_parameter(value)

    def __delitem__(self, key: str) -> None:
        del self._values[key]

    def __getattr__(self, name: str) -> Any:  # pdict.key
        values = self.__dict__.get("_values")
        if values is not None and name in values:
            return values[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __len__(self) -> int:
        return len(self._values)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._values))

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def keys(self) -> Iterable[str]:
        return self._values.keys()

    def values(self) -> Iterable[Any]:
        return self._values.values()

    def items(self) -> Iterable[tuple[str, Any]]:
        return self._values.items()

    def get(self, key: str, default: Any = None) -> Any:
        return self._values.get(key, default)

    def pop(self, key: str) -> Any:
        return self._values.pop(key)

    def popitem(self) -> tuple[str, Any]:
        return self._values.popitem()

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key not in self._values:
            self[key] = default
        return self._values[key]

    def clear(self) -> None:
        self._values.clear()

    def copy(self) -> ParameterDict:
        """A new ParameterDict holding the same parameters (not copies of them)."""
        return ParameterDict(self._values.items())

    def update(self, parameters: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> None:
        """Add (or replace) parameters from a mapping or from (key, value) pairs."""
        pairs = parameters.items() if isinstance(parameters, Mapping) else parameters
        for pair in pairs:
            key, value = pair
            self[key] = value

    def __or__(self, other: ParameterDict) -> ParameterDict:
        result = self.copy()
        result.update(other)
        return result

    def extra_repr(self) -> str:
        return "\n".join(f"({k}): {_describe(v)}" for k, v in self._values.items())

    def __repr__(self) -> str:
        lines = self.extra_repr().splitlines()
        return f"{type(self).__name__}(" + "".join(f"\n    {x}" for x in lines) + "\n)"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("ParameterDict should not be called.")
