"""``Optimizer``: parameter groups, per-parameter state, and saving both for resuming.

Optimizers touch only the ``.data`` and ``.grad`` arrays of their parameters: ``step()``
updates ``p.data`` in place with NumPy ufuncs (the array keeps its identity and dtype), records
no graph, skips parameters without a gradient, and marks each updated parameter as changed
in place (``_version``), so a graph that saved the old values notices.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from tensorgrad.core.engine import data_of as _DATA
from tensorgrad.core.engine import grad_array as _grad_array
from tensorgrad.core.tensor import Tensor
from tensorgrad.grad_mode import enable_grad
from tensorgrad.optim._axpy import _WRITEABLE


def _check_nonnegative(name: str, value: float) -> None:
    if not value >= 0.0:
        raise ValueError(f"Invalid {name}: {value} (must be >= 0)")


class Optimizer:
    """Base class: subclasses set ``defaults`` and write ``_update(group)``.

    ``params`` is an iterable of parameters, or of dicts (parameter groups) each with a
    ``"params"`` list and any hyper-parameters that differ from the defaults.
    """

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        if isinstance(params, Tensor):
            raise TypeError(
                "params must be an iterable of Tensors or of dicts, got a single Tensor; "
                "pass [tensor]"
            )
        self.defaults = dict(defaults)
        self.state: dict[Tensor, dict[str, Any]] = {}
        self.param_groups: list[dict[str, Any]] = []
        self._scratch: dict[Tensor, tuple[np.ndarray, np.ndarray]] = {}  # (for array, scratch)
        self._flat: dict[int, Any] = {}  # flat state of a group, by its first parameter's id
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters with its own hyper-parameters (e.g. a new layer's lr)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param group must be a dict, got {type(param_group).__name__}")
        params = param_group.get("params")
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, (set, frozenset)):
            raise TypeError("optimizer parameters must be an ordered collection, not a set")
        params = list(params or ())
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, got {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("optimizer can't optimize a non-leaf Tensor")
        ids = [id(p) for p in params]
        if len(set(ids)) != len(ids):
            raise ValueError("a parameter appears twice in one parameter group")
        existing = {id(p) for group in self.param_groups for p in group["params"]}
        if existing.intersection(ids):
            raise ValueError("some parameters appear in more than one parameter group")
        group = {**self.defaults, **param_group, "params": params}
        self._validate(group)
        self.param_groups.append(group)

    def _validate(self, group: dict[str, Any]) -> None:
        """Check a group's hyper-parameters (subclasses add their own checks)."""
        _check_nonnegative("learning rate", group["lr"])

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear gradients: set them to None (PyTorch's default), or zero them in place."""
        for group in self.param_groups:
            for p in group["params"]:
                if set_to_none or p._grad is None:
                    p._grad = None
                else:
                    _grad_array(p).fill(0)

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
            params = group["params"]
            if all(map(_WRITEABLE, map(_DATA, params))):  # the usual case, in C
                continue
            for i, p in enumerate(params):
                if p._grad is not None and not p._data.flags.writeable:
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

    def _tmp(self, p: Tensor) -> np.ndarray:
        """A scratch array shaped like ``p``, reused across steps to avoid temporaries."""
        entry = self._scratch.get(p)
        if entry is None or entry[0] is not p._data:  # new, or ``p.data`` was replaced
            entry = self._scratch[p] = (p._data, np.empty_like(p._data))
        return entry[1]

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
        PyTorch's layout: parameters are numbered in group order, state values are copies."""
        index = {id(p): i for i, p in enumerate(self._params())}
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
            if id(p) in index
        }
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore hyper-parameters and per-parameter state saved by :meth:`state_dict`.

        The optimizer must have been built over parameters of the same shapes in the same
        groups; floating state is cast to each parameter's dtype.
        """
        groups, saved_groups = self.param_groups, state_dict["param_groups"]
        if len(groups) != len(saved_groups):
            raise ValueError(
                f"load_state_dict: the saved state has {len(saved_groups)} parameter groups, "
                f"this optimizer {len(groups)}"
            )
        for i, (group, saved) in enumerate(zip(groups, saved_groups, strict=True)):
            if len(group["params"]) != len(saved["params"]):
                raise ValueError(
                    f"load_state_dict: parameter group {i} has {len(group['params'])} "
                    f"parameters, the saved group {len(saved['params'])}"
                )
        params = {}
        for group, saved in zip(groups, saved_groups, strict=True):
            params.update(zip(saved["params"], group["params"], strict=True))
        new_state: dict[Tensor, dict[str, Any]] = {}
        for key, values in state_dict["state"].items():
            p = params.get(int(key))
            if p is None:
                raise ValueError(f"load_state_dict: state for unknown parameter index {key}")
            new_state[p] = {}
            for name, value in values.items():
                if isinstance(value, (np.ndarray, Tensor)):
                    array = value._data if isinstance(value, Tensor) else value
                    if array.shape != p.shape:
                        raise ValueError(
                            f"load_state_dict: state {name!r} of parameter {key} has shape "
                            f"{array.shape}, the parameter {p.shape}"
                        )
                    dtype = p.dtype if array.dtype.kind == "f" else array.dtype
                    value = np.array(array, dtype=dtype, copy=True)
                else:
                    value = copy.deepcopy(value)
                new_state[p][name] = value
        for group, saved in zip(groups, saved_groups, strict=True):
            group.update({k: copy.deepcopy(v) for k, v in saved.items() if k != "params"})
        self.state = new_state

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines.extend(f"    {k}: {v}" for k, v in sorted(group.items()) if k != "params")
        return "\n".join([*lines, ")"])
