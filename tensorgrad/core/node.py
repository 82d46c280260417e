"""The graph's node: one recorded call of an op, and what the engine keeps about it.

An op (``tensorgrad.ops``) is the primitive: forward, VJP and what they share. A *node* is
one use of an op in a graph, the engine's record of it: the op, where each input came from,
the input and output arrays, the output's version counter and the node's tick on the
recording clock. The sweep reads nodes; ops never see them. A tensor's ``grad_fn`` is its
node.

Edges point backwards only (a node knows its parents, not its children), so a graph has no
reference cycles and is freed by reference counting.
"""

from __future__ import annotations

from typing import Any


class Node:
    """One recorded op. ``parents`` holds, per input, the node that made it, the leaf tensor
    itself, or None for a constant; ``inputs`` the raw input arrays; ``out`` the output
    array. Backward without ``retain_graph`` frees ``parents``, ``inputs`` and ``out`` (and
    the op's ``saved``); ``failed`` then says why, if it freed part of a graph and failed."""

    __slots__ = (
        "__weakref__",
        "failed",
        "hooks",
        "in_versions",
        "inputs",
        "op",
        "out",
        "out_versions",
        "parents",
        "retained",
        "seq",
        "tangent",
        "trace",
    )

    def __init__(
        self, op: Any, parents: list, inputs: list, out: Any, out_versions: Any, seq: int
    ) -> None:
        self.op = op
        self.parents: list | None = parents
        self.inputs: list | None = inputs
        self.out = out
        self.out_versions = out_versions  #: the version counter of the output's memory
        self.seq = seq  #: the node's tick on the recording clock (newer nodes, larger ticks)
        #: the inputs' version counters, when the node keeps its own (an in-place op that
        #: copied the value it overwrote); None: each parent's
        self.in_versions: list | None = None
        self.hooks: list | None = None  #: gradient hooks of the tensor this node made
        self.retained: Any = None  #: a weak reference to that tensor when it ``retain_grad()``
        self.trace: str | None = None  #: where it was created, in anomaly-detection mode
        self.failed = ""  #: why a backward through this node failed after freeing part of it
        #: the output's tangent, in forward mode (``core.forward``), for backward with
        #: ``create_graph``: forward-over-reverse
        self.tangent: Any = None

    @property
    def name(self) -> str:
        """The op's name, as error messages and ``grad_fn`` show it."""
        return self.op.name

    def __repr__(self) -> str:
        return repr(self.op)
