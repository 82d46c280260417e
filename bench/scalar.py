"""The scalar engine ``tensorgrad.scalar.Value``: cost per op against micrograd's design, and a
chain a million ops deep.

The chain repeats four ops: multiply by a constant, add the input ``x`` (a second use of a
leaf, as weights are used), tanh, subtract a constant. Every op is one graph node, so build
time per op is the Python cost of a node and backward time per op the cost of ordering the
graph and applying the chain rule once. The gradient is checked against forward-mode
derivatives carried along in plain floats.

The reference is an engine in micrograd's design (:class:`ClosureValue`, written here: each
op's backward a closure over its operands, the operands kept in a set, constants wrapped in
a Value), with the one change a 100,000-op chain needs: an iterative topological sort
instead of a recursive one. Both engines build and differentiate the same chain in
turn, round after round, so the ratio does not depend on how fast the machine is that day.
"""

from __future__ import annotations

import argparse
import gc
import math
import statistics
import sys
import time

from bench import common

#: the chain's ops on a Value ``y`` given the input ``x``
STEPS = (
    lambda y, x: y * 1.01,
    lambda y, x: y + x,
    lambda y, x: y.tanh(),
    lambda y, x: y - 0.1,
)


class ClosureValue:
    """The reference engine, written here in micrograd's design: each result keeps a set of
    the Values it came from and a closure that sends its gradient to them; a constant
    operand becomes a Value of its own. Only the chain's ops; backward orders the graph by a
    depth-first walk with an explicit stack."""

    def __init__(self, data, parents=()):
        self.data = data
        self.grad = 0
        self.parents = set(parents)
        self.send_grad = lambda: None

    @staticmethod
    def wrap(operand):
        return operand if isinstance(operand, ClosureValue) else ClosureValue(operand)

    def __add__(self, other):
        other = self.wrap(other)
        result = ClosureValue(self.data + other.data, (self, other))

        def send_grad():
            self.grad += result.grad
            other.grad += result.grad

        result.send_grad = send_grad
        return result

    def __mul__(self, other):
        other = self.wrap(other)
        result = ClosureValue(self.data * other.data, (self, other))

        def send_grad():
            self.grad += other.data * result.grad
            other.grad += self.data * result.grad

        result.send_grad = send_grad
        return result

    def __neg__(self):
        return self * -1

    def __sub__(self, other):
        return self + (-other)  # a constant is negated as a number, then wrapped

    def tanh(self):
        result = ClosureValue(math.tanh(self.data), (self,))

        def send_grad():
            self.grad += (1 - result.data**2) * result.grad

        result.send_grad = send_grad
        return result

    def backward(self):
        order, seen, pending = [], set(), [(self, False)]
        while pending:
            node, parents_done = pending.pop()
            if parents_done:
                order.append(node)  # after every Value it was computed from
            elif node not in seen:
                seen.add(node)
                pending.append((node, True))
                pending.extend((parent, False) for parent in node.parents)
        self.grad = 1
        for node in reversed(order):
            node.send_grad()


def build(n: int, x):
    """``n`` ops starting from the leaf ``x``."""
    y = x
    for i in range(n):
        y = STEPS[i % 4](y, x)
    return y


def expected(n: int, x: float) -> tuple[float, float]:
    """The chain's value and its derivative in x, by forward mode in plain floats."""
    value, slope = x, 1.0
    for i in range(n):
        step = i % 4
        if step == 0:
            value, slope = value * 1.01, slope * 1.01
        elif step == 1:
            value, slope = value + x, slope + 1.0
        elif step == 2:
            value = math.tanh(value)
            slope *= 1.0 - value * value
        else:
            value -= 0.1
    return value, slope


def measure(n: int, value_type: type | None = None) -> tuple[float, float, float, bool]:
    """Seconds to build, to backward and to free an ``n``-op chain of ``value_type`` values
    (tensorgrad's by default), and whether the value and gradient are right."""
    if value_type is None:
        from tensorgrad.scalar import Value as value_type

    x = value_type(0.3)
    start = time.perf_counter()
    y = build(n, x)
    built = time.perf_counter()
    y.backward()
    backward = time.perf_counter()
    value, slope = expected(n, 0.3)
    correct = math.isclose(y.data, value, rel_tol=1e-9) and math.isclose(
        x.grad, slope, rel_tol=1e-9, abs_tol=1e-12
    )
    start_free = time.perf_counter()
    del y
    freed = time.perf_counter()
    return built - start, backward - built, freed - start_free, correct


def _per_op_row(label: str, runs: list, n: int) -> tuple[list[str], list[float]]:
    """A table row of µs per op (build, backward, free, total) and the per-round
    build + backward seconds."""
    parts = [common.Summary.of(r[i] for r in runs).scaled(1e6 / n) for i in range(3)]
    total = common.Summary.of(r[0] + r[1] + r[2] for r in runs).scaled(1e6 / n)
    row = [
        label,
        *(common.number(part.median, 2) for part in (*parts, total)),
        "yes" if all(r[3] for r in runs) else "**NO**",
    ]
    return row, [r[0] + r[1] for r in runs]


def run(args: argparse.Namespace) -> str:
    config = common.settings(args)
    short = config.pick(full=100_000, quick=100_000, smoke=1_000)
    long = config.pick(full=1_000_000, quick=1_000_000, smoke=20_000)

    ours, reference = [], []
    for round_ in range(config.repeats):  # in turn, the first alternating
        pair = [(ours, None), (reference, ClosureValue)]
        for runs, value_type in pair if round_ % 2 == 0 else pair[::-1]:
            runs.append(measure(short, value_type))
            gc.collect()  # closure graphs are cycles: collect them outside either timing
    our_row, our_times = _per_op_row(
        f"tensorgrad, {short:,}-op chain (µs/op, median of {config.repeats})", ours, short
    )
    reference_row, reference_times = _per_op_row(
        f"micrograd's design, {short:,}-op chain (µs/op)", reference, short
    )
    speedup = common.paired_ratios(reference_times, our_times)
    per_op = statistics.median(our_times) * 1e6 / short

    *seconds, correct_long = measure(long)
    long_row = [
        f"tensorgrad, {long:,}-op chain (seconds, one run)",
        *(common.number(s, 3) for s in (*seconds, sum(seconds))),
        "yes" if correct_long else "**NO**",
    ]
    headers = ["", "build", "backward", "free", "total", "value and gradient right"]
    return "\n".join(
        [
            "## Scalar engine (`tensorgrad.scalar.Value`)\n",
            "A chain cycling through `y * 1.01`, `y + x`, `y.tanh()`, `y - 0.1`; *free* is "
            "dropping the last reference to the graph. The gradient is compared with "
            f"forward-mode derivatives in plain floats (relative 1e-9). Recursion limit: "
            f"{sys.getrecursionlimit()}, far below the chain's depth. The reference is "
            "an engine in micrograd's design (a closure per op) with an iterative "
            "topological sort, timed in turn with "
            "tensorgrad's on the same chain.\n",
            common.table(headers, [our_row, reference_row, long_row]),
            f"Build + backward: {common.number(per_op, 2)} µs/op, "
            f"{common.ratio(speedup)} micrograd's speed (target: no slower, ≥1×: "
            f"{common.verdict(speedup.median, 1.0)}).\n",
        ]
    )
