"""Pytrees: nested tuples, lists and dicts of leaves, flattened to a list and rebuilt.

What ``tg.func``'s transforms use for their arguments and outputs, vmap's batching for the
arguments of a method it runs per sample, and the ONNX export for nested arguments.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def tree_flatten(tree: Any) -> tuple[list, Any]:
    """The leaves of nested tuples, lists and dicts, and a spec to rebuild them."""
    if isinstance(tree, (tuple, list)):
        leaves, specs = [], []
        for item in tree:
            sub, spec = tree_flatten(item)
            leaves += sub
            specs.append((len(sub), spec))
        return leaves, (type(tree), specs)
    if isinstance(tree, dict):
        keys = list(tree)
        leaves, spec = tree_flatten([tree[k] for k in keys])
        return leaves, (dict, keys, spec)
    return [tree], None


def tree_unflatten(leaves: Sequence[Any], spec: Any) -> Any:
    """The inverse of :func:`tree_flatten`."""
    if spec is None:
        return leaves[0]
    if spec[0] is dict:
        _, keys, inner = spec
        return dict(zip(keys, tree_unflatten(leaves, inner), strict=True))
    kind, specs = spec
    items, start = [], 0
    for count, sub in specs:
        items.append(tree_unflatten(leaves[start : start + count], sub))
        start += count
    return kind(*items) if hasattr(kind, "_fields") else kind(items)  # a named tuple: fields
