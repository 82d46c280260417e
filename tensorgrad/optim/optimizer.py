"""``Optimizer``: parameter groups, per-parameter state, and saving both for resuming.

Optimizers touch only the ``.data`` and ``.grad`` arrays of their parameters: ``step()``
updates ``p.data`` in place with NumPy ufuncs (the array keeps its identity and dtype), records
no graph, skips parameters without a gradient, and marks each updated parameter as changed
in place (``_version``), so a graph that saved the old values notices.

``param_groups`` is a plain list of dicts that a user may edit between steps, as in PyTorch:
change ``group["lr"]``, append a parameter, add a group. Every step reads the groups afresh;
the caches some optimizers keep (SGD's flat momentum buffer) check that they still fit.
"""

from __future__ import annotations

import copy
import math
import numbers
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

from tensorgrad.core.engine import mark_changed
from tensorgrad.core.tensor import Tensor
from tensorgrad.grad_mode import enable_grad


def _check_number(owner: str, name: str, value: Any) -> None:
    """Refuse a hyper-parameter that is not a real number (or a one-element Tensor, which
    PyTorch also takes), naming it: ``SGD(lr="0.1")`` fails here, not in the first step."""
    if isinstance(value, numbers.Real):
        return
    if isinstance(value, (Tensor, np.ndarray)) and _array(value).size == 1:
        return
    raise TypeError(f"{owner}: {name} must be a real number, got {type(value).__name__} {value!r}")


def _check_nonnegative(name: str, value: float) -> None:
    if not value >= 0.0:
        raise ValueError(f"Invalid {name}: {value}")


class Optimizer:
    """Base class: subclasses set ``defaults`` and write ``_update(group)``.

    ``params`` is an iterable of parameters, of ``(name, parameter)`` pairs (as
    ``named_parameters()`` gives; the names are kept as ``group["param_names"]``), or of dicts
    (parameter groups) each with a ``"params"`` list and any hyper-parameters that differ from
    the defaults.
    """

    #: per-parameter state: arrays shaped like the parameter, and Python numbers
    _STATE_ARRAYS: tuple[str, ...] = ()
    _STATE_NUMBERS: tuple[str, ...] = ()

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or "
                "dicts, but got a single Tensor; pass [tensor]"
            )
        self.defaults = dict(defaults)
        self.state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        self._scratch: dict[Tensor, tuple[np.ndarray, list[np.ndarray]]] = {}  # see _tmp
        self._flat: dict[int, Any] = {}  # SGD's flat momentum buffers, by id of their group
        self._validate(dict(self.defaults))  # SGD(lr="0.1") fails here, before any group
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters with its own hyper-parameters (e.g. a new layer's lr).

        The dict itself becomes the group (as in PyTorch), completed with the defaults, once
        everything in it has been checked; a refused group leaves it and the optimizer as
        they were.
        """
        if not isinstance(param_group, dict):
            raise TypeError(f"param group must be a dict, got {type(param_group).__name__}")
        params, names = _split_params(param_group.get("params"))
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(
                    f"optimizer can only optimize Tensors, but one of the params is "
                    f"{type(p).__name__}"
                )
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        ids = [id(p) for p in params]
        if len(set(ids)) != len(ids):
            raise ValueError("a parameter appears twice in one parameter group")
        existing = {id(p) for group in self.param_groups for p in group["params"]}
        if existing.intersection(ids):
            raise ValueError("some parameters appear in more than one parameter group")
        if self.param_groups and ("param_names" in self.param_groups[0]) != bool(names):
            raise ValueError(
                "all optimizer param groups should be with/without names: name every "
                "parameter of every group (named_parameters()) or none"
            )
        group = {**self.defaults, **param_group, "params": params}
        if names:
            group["param_names"] = names
        self._validate(group)
        param_group.update(group)
        self.param_groups.append(param_group)
        self._init_state(param_group)

    def _init_state(self, group: dict[str, Any]) -> None:
        """Create state for a new group's parameters (optimizers that need it up front)."""

    def _validate(self, group: dict[str, Any]) -> None:
        """Check a group's hyper-parameters; subclasses check their own after calling this.

        ``foreach``, ``fused`` and ``capturable`` choose among PyTorch's implementations of the
        same update (loops, fused kernels, CUDA graphs); tensorgrad has one, so they are
        accepted and kept in the groups (state dicts keep PyTorch's keys), and change nothing.
        """
        owner = type(self).__name__
        for name, value in group.items():
            if name in ("lr", "momentum", "dampening", "weight_decay", "eps", "alpha", "rho"):
                _check_number(owner, name, value)
        if "lr" in group:
            _check_nonnegative("learning rate", group["lr"])
        if group.get("differentiable"):
            raise NotImplementedError(
                f"{owner}: differentiable=True is not supported: tensorgrad's optimizers update "
                "arrays outside the graph (see docs/porting.md)"
            )
        if group.get("fused") and group.get("foreach"):
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear gradients: set them to None (PyTorch's default), or, with
        ``set_to_none=False``, zero them in place; a gradient that is part of a graph
        (``backward(create_graph=True)``) is replaced by zeros detached from it."""
        for group in self.param_groups:
            for p in group["params"]:
                if set_to_none or p._grad is None:
                    p._grad = None
                else:
                    _zero_gradient(p)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update every parameter that has a gradient; ``closure`` (re)computes the loss first."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        self._check_writeable()
        for group in self.param_groups:
            self._update(group)
        return loss

    def _check_writeable(self) -> None:
        """Refuse, before anything changes, to step when a parameter that has a gradient holds
        a read-only array (a half-done step would leave parameters and state out of step)."""
        for g, group in enumerate(self.param_groups):
            for i, p in enumerate(group["params"]):
                if not p._data.flags.writeable and p._grad is not None:
                    raise ValueError(
                        f"{type(self).__name__}.step: parameter {i} of group {g} (shape "
                        f"{p.shape}) holds a read-only array; nothing was updated"
                    )

    def _update(self, group: dict[str, Any]) -> None:
        raise TypeError(f"{type(self).__name__} does not define _update()")

    @staticmethod
    def _with_grad(group: dict[str, Any]) -> list[Tensor]:
        """The group's parameters that have a gradient (the others are skipped)."""
        return [p for p in group["params"] if p._grad is not None]

    def _prepare_flat(self, group: dict[str, Any], flat: Callable[[], Any] | None) -> None:
        """Keep ``flat()`` (a :class:`FlatState`) for the group's next steps, or nothing
        when ``flat`` is None; flat states of groups since removed go."""
        live = {id(g) for g in self.param_groups}
        for key in [key for key in self._flat if key not in live]:
            del self._flat[key]
        self._flat.pop(id(group), None)
        if flat is not None:
            self._flat[id(group)] = flat()

    def _tmp(self, p: Tensor, which: int = 0) -> np.ndarray:
        """Scratch array number ``which`` shaped like ``p``, reused across steps: large
        temporaries would cost a fresh allocation (and page faults) every step."""
        entry = self._scratch.get(p)
        if entry is None or entry[0] is not p._data:  # new, or ``p.data`` was replaced
            entry = self._scratch[p] = (p._data, [])
        arrays = entry[1]
        while len(arrays) <= which:
            arrays.append(np.empty_like(p._data))
        return arrays[which]

    def __getstate__(self) -> dict[str, Any]:
        """Copies and pickles leave out the scratch and flat-update caches: they hold arrays
        (and BLAS bindings) of these very parameters, and the next step remakes them."""
        state = self.__dict__.copy()
        state["_scratch"], state["_flat"] = {}, {}
        return state

    # ----------------------------------------------------------------- saving and resuming
    def _params(self) -> list[Tensor]:
        return [p for group in self.param_groups for p in group["params"]]

    def state_dict(self) -> dict[str, Any]:
        """``{"state": {index: {name: value}}, "param_groups": [{..., "params": [index]}]}``,
        PyTorch's layout: parameters are numbered in group order. Unlike PyTorch's, the
        values are copies (a checkpoint taken now does not change as training goes on) and
        ``step`` is an int, not a 0-d tensor."""
        index: dict[int, int] = {}
        for p in self._params():
            index.setdefault(id(p), len(index))
        groups = [
            {
                **{k: copy.deepcopy(v) for k, v in g.items() if k != "params"},
                "params": [index[id(p)] for p in g["params"]],
            }
            for g in self.param_groups
        ]
        state = {
            index[id(p)]: {k: copy.deepcopy(v) for k, v in s.items()}
            for p, s in self.state.items()
            if id(p) in index and s
        }
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Restore hyper-parameters and per-parameter state saved by :meth:`state_dict` (or by
        PyTorch's: its tensors are read through ``__array__``, its 0-d ``step`` becomes an int).

        Everything is checked before anything changes: the number of groups and of parameters
        in each, the hyper-parameters, and each state entry's name, shape and dtype; one
        ``ValueError`` lists every problem. Floating state is cast to its parameter's dtype.
        """
        problems: list[str] = []
        groups, new_state = self._read_state_dict(state_dict, problems)
        if problems:
            raise ValueError(
                f"{type(self).__name__}.load_state_dict: nothing was loaded:\n  "
                + "\n  ".join(problems)
            )
        for group, new in zip(self.param_groups, groups, strict=True):
            group.clear()
            group.update(new)
        self.state = new_state
        self._flat.clear()

    def _read_state_dict(
        self, state_dict: Any, problems: list[str]
    ) -> tuple[list[dict[str, Any]], defaultdict[Tensor, dict[str, Any]]]:
        """The groups and state that ``state_dict`` describes, as copies; what is wrong with it
        goes to ``problems`` (nothing here changes the optimizer)."""
        new_state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        if not isinstance(state_dict, Mapping):
            problems.append(f"expected a dict, got {type(state_dict).__name__}")
            return [], new_state
        missing = [key for key in ("state", "param_groups") if key not in state_dict]
        unexpected = sorted(map(repr, set(state_dict) - {"state", "param_groups"}))
        if missing or unexpected:
            problems.append(f"missing keys {missing}, unexpected keys [{', '.join(unexpected)}]")
            return [], new_state
        saved_groups, saved_state = state_dict["param_groups"], state_dict["state"]
        if len(saved_groups) != len(self.param_groups):
            problems.append(
                f"the saved state has {len(saved_groups)} parameter groups, this optimizer "
                f"{len(self.param_groups)}"
            )
            return [], new_state
        groups, params, unchecked = [], {}, set()  # unchecked: the params of refused groups
        for i, (group, saved) in enumerate(zip(self.param_groups, saved_groups, strict=True)):
            new = self._read_group(i, group, saved, problems)
            groups.append(new)
            if new is None:
                if isinstance(saved, Mapping) and isinstance(saved.get("params"), (list, tuple)):
                    unchecked.update(saved["params"])
                continue
            for index, p in zip(saved["params"], group["params"], strict=True):
                if index in params:
                    problems.append(f"parameter index {index!r} appears twice")
                params[index] = (p, new)
        if not isinstance(saved_state, Mapping):
            problems.append(f"'state' must be a dict, got {type(saved_state).__name__}")
            return groups, new_state
        for index, values in saved_state.items():
            found = params.get(index)
            if found is None and isinstance(index, str) and index.isdigit():  # keys from JSON
                found = params.get(int(index))
            if found is None:
                if index not in unchecked:
                    problems.append(f"state for parameter {index!r}, which no group has")
                continue
            p, group = found
            entry = self._read_entry(index, p, group, values, problems)
            if entry:
                new_state[p] = entry
        return groups, new_state

    def _read_group(
        self, i: int, group: dict[str, Any], saved: Any, problems: list[str]
    ) -> dict[str, Any] | None:
        """Group ``i`` as loading ``saved`` makes it (its own parameters, the saved
        hyper-parameters, defaults for any the save lacks), or None with the problems noted."""
        if not isinstance(saved, Mapping) or not isinstance(saved.get("params"), (list, tuple)):
            problems.append(f"parameter group {i} must be a dict with a 'params' list")
            return None
        if len(saved["params"]) != len(group["params"]):
            problems.append(
                f"parameter group {i} has {len(group['params'])} parameters, the saved group "
                f"{len(saved['params'])}"
            )
            return None
        new = {**self.defaults, **copy.deepcopy({k: v for k, v in saved.items() if k != "params"})}
        new["params"] = group["params"]
        if "param_names" not in saved and "param_names" in group:
            new["param_names"] = list(group["param_names"])
        try:
            self._validate(new)
        except (TypeError, ValueError, RuntimeError, NotImplementedError) as exc:
            problems.append(f"parameter group {i}: {exc}")
            return None
        return new

    def _read_entry(
        self, index: Any, p: Tensor, group: dict[str, Any], values: Any, problems: list[str]
    ) -> dict[str, Any]:
        """One parameter's saved state, checked and copied (arrays in the parameter's dtype)."""
        if not isinstance(values, Mapping):
            problems.append(f"state of parameter {index}: expected a dict, got {values!r}")
            return {}
        entry: dict[str, Any] = {}
        problems_before = len(problems)
        known = self._STATE_ARRAYS + self._STATE_NUMBERS
        unexpected = [name for name in values if name not in known]
        if unexpected:
            problems.append(
                f"state of parameter {index}: unexpected keys {unexpected} ({type(self).__name__} "
                f"keeps {list(known)})"
            )
        for name in self._STATE_NUMBERS:
            if name in values:
                value = _number(values[name])
                if value is None:
                    problems.append(
                        f"state {name!r} of parameter {index}: expected a whole number, got "
                        f"{values[name]!r}"
                    )
                entry[name] = value
        for name in self._STATE_ARRAYS:
            value = values.get(name)
            if value is None:
                continue
            array = _array(value)
            if array is None or array.dtype.kind not in "fiu":
                kind = type(value).__name__ if array is None else str(array.dtype)
                problems.append(
                    f"state {name!r} of parameter {index}: expected a real array, got {kind}"
                )
            elif array.shape != p.shape:
                problems.append(
                    f"state {name!r} of parameter {index}: shape {array.shape}, the parameter "
                    f"{p.shape}"
                )
            else:
                entry[name] = np.array(array, dtype=p.dtype, copy=True)
        if values and len(problems) == problems_before:
            missing = [name for name in self._required_state(group) if name not in entry]
            if missing:
                problems.append(f"state of parameter {index}: missing keys {missing}")
        return entry

    def _required_state(self, group: dict[str, Any]) -> tuple[str, ...]:
        """The state names a parameter's non-empty state must have under ``group``."""
        return self._STATE_ARRAYS + self._STATE_NUMBERS

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines.extend(f"    {k}: {v}" for k, v in sorted(group.items()) if k != "params")
        return "\n".join([*lines, ")"])


class FlatState:
    """Speed: the named per-parameter state arrays of a group (``kept``) as views into one
    flat array each, with flat ``scratch`` arrays beside them, so that an optimizer updates
    a whole group in a few NumPy calls instead of a few per parameter. ``fits`` says whether
    it still describes the group: the same parameters, holding the same arrays, whose state
    entries are its views (a user's edit or ``load_state_dict`` sends the step back to the
    per-parameter path, which prepares a new one).

    Building it copies each parameter's state arrays into the flat arrays and puts the views
    into the state in their place: an array held from before then no longer follows training.
    """

    kept: tuple[str, ...] = ()
    scratch: tuple[str, ...] = ()

    def __init__(self, params: list[Tensor], state: dict[Tensor, dict[str, Any]]) -> None:
        self.ids = [id(p) for p in params]
        self.targets = [p._data for p in params]
        bounds = np.cumsum([0, *(p._data.size for p in params)]).tolist()
        self.flat: dict[str, np.ndarray] = {}
        self.views: dict[str, list[np.ndarray]] = {}
        for name in (*self.kept, *self.scratch):
            flat = self.flat[name] = np.empty(bounds[-1], dtype=params[0].dtype)
            self.views[name] = [
                flat[start:stop].reshape(p.shape)
                for start, stop, p in zip(bounds, bounds[1:], params)
            ]
        for name in self.kept:
            for p, view in zip(params, self.views[name]):
                np.copyto(view, state[p][name])
                state[p][name] = view

    def fits(self, params: list[Tensor], state: dict[Tensor, dict[str, Any]]) -> bool:
        """Whether these are still the parameters, arrays and state arrays it was built for."""
        if len(params) != len(self.ids):
            return False
        for i, (p, expected, target) in enumerate(zip(params, self.ids, self.targets)):
            entry = state.get(p)
            if id(p) != expected or p._data is not target or entry is None:
                return False
            if any(entry.get(name) is not self.views[name][i] for name in self.kept):
                return False
        return True


def _split_params(params: Any) -> tuple[list[Any], list[str]]:
    """A group's ``params`` as a list, and the names when given as ``(name, tensor)`` pairs."""
    if isinstance(params, Tensor):
        return [params], []
    if isinstance(params, (set, frozenset)):
        raise TypeError(
            "optimizer parameters need to be organized in ordered collections, but the "
            "ordering of tensors in sets will change between runs; use a list"
        )
    if params is None:
        raise ValueError("a parameter group needs a 'params' entry")
    items = list(params)
    names = [item[0] for item in items if isinstance(item, tuple)]
    if not names:
        return items, []
    if len(names) != len(items) or not all(len(item) == 2 for item in items):
        raise ValueError(
            "all optimizer params should be with/without names. Some param names are missing"
        )
    return [item[1] for item in items], names


def _number(value: Any) -> int | None:
    """A saved step count as an int (PyTorch saves a 0-d float tensor), or None if it is not
    a whole number."""
    array = _array(value)
    if array is None or array.size != 1 or array.dtype.kind not in "fiu":
        return None
    number = array.reshape(()).item()
    if isinstance(number, bool) or not math.isfinite(number) or number != int(number):
        return None
    return int(number)


def _array(value: Any) -> np.ndarray | None:
    """``value`` as a NumPy array (a Tensor's, a number's, or through ``__array__``, as a
    PyTorch tensor gives), or None."""
    if isinstance(value, Tensor):
        return value._data
    if isinstance(value, (np.ndarray, numbers.Real)) or hasattr(value, "__array__"):
        try:
            return np.asarray(value)
        except (TypeError, ValueError, RuntimeError):
            return None
    return None


def _zero_gradient(p: Tensor) -> None:
    """Zero ``p``'s gradient in place; one that is part of a graph is detached first, as
    PyTorch's ``zero_grad(set_to_none=False)`` does (here: replaced by a zero array)."""
    grad = p._grad
    if type(grad) is np.ndarray:
        grad.fill(0)
    elif grad.requires_grad:  # from backward(create_graph=True): cut it off its graph
        p._grad = np.zeros_like(grad._data)
    else:
        grad._data.fill(0)
        mark_changed((grad,))
