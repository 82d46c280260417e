"""The registry covers every op: each ``Op`` subclass defined in ``tensorgrad.ops`` appears as a
node in the graph that some registered sample records.

Every sample runs forward with recording on; the node types are collected by walking each
output's graph (``grad_fn``, then each node's ``parents``) with an explicit stack. An op that
no entry reaches fails the test by name, so a new op cannot ship without its forward, VJP,
scalar-engine and error checks.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import pkgutil
import warnings

import numpy as np

import tensorgrad as tg
from tensorgrad import ops
from tensorgrad.core.node import Node
from tests.ops.registry import REGISTRY, outputs

#: Op subclasses that are not ops themselves but shared bases of ops, never recorded as they
#: are (each concrete subclass is checked instead). Listed by hand, so that a new private op
#: is not skipped by accident.
NOT_OPS = {
    "tensorgrad.ops.conv._Window": "the base of Unfold and Fold",
    "tensorgrad.ops.conv._ConvSettings": "the base of Conv2d and Conv2dPerSample (their settings)",
    "tensorgrad.ops.pool._Pool": "the base of MaxPool2d and the average pools",
    "tensorgrad.ops.pool._Average": "the base of AvgPool2d and AvgPool2dBackward",
    "tensorgrad.ops.reduce._Reduction": "the base of the reductions",
    "tensorgrad.ops.reduce._Extremum": "the base of Max and Min",
}


def qualified(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def defined_ops() -> set[type]:
    """Every ``Op`` subclass defined in a module of the ``tensorgrad.ops`` package."""
    for module in pkgutil.iter_modules(ops.__path__):
        importlib.import_module(f"tensorgrad.ops.{module.name}")
    found, stack = set(), [ops.Op]
    while stack:
        for sub in stack.pop().__subclasses__():
            if sub not in found:
                found.add(sub)
                stack.append(sub)
    return {c for c in found if c.__module__.startswith("tensorgrad.ops.")}


def node_types(tensor: tg.Tensor) -> set[type]:
    """The types of the ops of the nodes in ``tensor``'s recorded graph."""
    seen, types, stack = set(), set(), [tensor.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen or not isinstance(node, Node):
            continue  # a constant, a leaf tensor, or a node already visited
        seen.add(id(node))
        types.add(type(node.op))
        stack.extend(node.parents or ())
    return types


@functools.cache
def recorded_types() -> frozenset[type]:
    """The node types recorded by every registered sample."""
    types = set()
    for info in REGISTRY:
        for sample in info.samples():
            tensors = sample.tensors(requires_grad=info.records)
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore", RuntimeWarning)
                results = outputs(info.call(tensors, sample))
            for result in results:
                types |= node_types(result)
    return frozenset(types)


def missing_ops(recorded: frozenset[type]) -> list[str]:
    return sorted(qualified(c) for c in defined_ops() - recorded if qualified(c) not in NOT_OPS)


def test_every_op_has_a_registry_entry():
    missing = missing_ops(recorded_types())
    assert not missing, (
        f"Op subclasses that no registry entry records: {missing}; add an entry to the "
        "family's module in tests/ops/registry/"
    )


def test_the_check_reports_an_op_without_an_entry():
    """Take one op's entries away: the check names that op (it can fail)."""
    recorded = recorded_types()
    assert ops.Sin in recorded
    newly_missing = set(missing_ops(recorded - {ops.Sin})) - set(missing_ops(recorded))
    assert newly_missing == {"tensorgrad.ops.elementwise.Sin"}


def test_the_allowlist_names_only_real_shared_bases():
    """Every allowlisted class exists, is an Op subclass with subclasses, and is never recorded."""
    by_name = {qualified(c): c for c in defined_ops()}
    for name in NOT_OPS:
        assert name in by_name, f"{name} is no longer an Op subclass in tensorgrad.ops"
        assert inspect.isclass(by_name[name]) and by_name[name].__subclasses__(), name
    assert not {by_name[name] for name in NOT_OPS} & recorded_types()


def test_node_types_walks_a_graph_without_recursion():
    x = tg.tensor(np.ones(3), requires_grad=True)
    y = x
    for _ in range(5000):
        y = y * 1.0
    assert node_types((y + x.exp()).sum()) == {ops.Mul, ops.Add, ops.Exp, ops.Sum}
