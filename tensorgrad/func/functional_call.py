"""``functional_call``: a module called with some parameters and buffers replaced."""

from __future__ import annotations

from typing import Any


def functional_call(
    module: Any,
    parameter_and_buffer_dicts: Any,
    args: Any = None,
    kwargs: dict | None = None,
    *,
    tie_weights: bool = True,
    strict: bool = False,
) -> Any:
    """Call ``module`` with some of its parameters and buffers replaced by the tensors in
    ``parameter_and_buffer_dicts`` (a dict of names as ``named_parameters`` gives them, or
    a sequence of such dicts), then put the originals back."""
    dicts = (
        [parameter_and_buffer_dicts]
        if isinstance(parameter_and_buffer_dicts, dict)
        else list(parameter_and_buffer_dicts)
    )
    replacements: dict[str, Any] = {}
    for d in dicts:
        for name in d:
            if name in replacements:
                raise ValueError(
                    f"functional_call: {name} appeared in multiple dictionaries; behavior of "
                    "functional call is ambiguous"
                )
        replacements.update(d)
    known = dict(module.named_parameters(remove_duplicate=False))
    known.update(dict(module.named_buffers(remove_duplicate=False)))
    if tie_weights:  # a tied parameter replaced under one name is replaced under all
        by_id: dict[int, list[str]] = {}
        for name, tensor in known.items():
            by_id.setdefault(id(tensor), []).append(name)
        for name in list(replacements):
            if name in known:
                for alias in by_id[id(known[name])]:
                    replacements.setdefault(alias, replacements[name])
    if strict:
        missing = sorted(set(known) - set(replacements))
        unexpected = sorted(set(replacements) - set(known))
        if missing or unexpected:
            raise RuntimeError(
                "functional_call: Error(s) in reparametrizing for "
                f"{type(module).__name__}: missing keys {missing}, unexpected keys {unexpected}"
            )
    modules = dict(module.named_modules(remove_duplicate=False))
    swapped = []
    try:
        for name, value in replacements.items():
            owner_name, _, attr = name.rpartition(".")
            owner = modules.get(owner_name)
            if owner is None or not hasattr(owner, attr):
                raise AttributeError(
                    f"functional_call: {type(module).__name__} has no parameter or buffer {name!r}"
                )
            swapped.append((owner, attr, owner.__dict__.get(attr)))
            object.__setattr__(owner, attr, value)
        args = () if args is None else args if isinstance(args, tuple) else (args,)
        return module(*args, **(kwargs or {}))
    finally:
        for owner, attr, original in reversed(swapped):
            object.__setattr__(owner, attr, original)
