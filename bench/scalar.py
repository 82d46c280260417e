"""The scalar engine ``tensorgrad.scalar.Value``: cost per op, and a chain a million ops deep.

The chain repeats four ops: multiply by a constant, add the input ``x`` (a second use of a
leaf, as weights are used), tanh, subtract a constant. Every op is one graph node, so build
time per op is the Python cost of a node and backward time per op the cost of ordering the
graph and applying the chain rule once. The gradient is checked against forward-mode
derivatives carried along in plain floats.
"""

from __future__ import annotations

import argparse
import math
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


def measure(n: int) -> tuple[float, float, float, bool]:
    """Seconds to build, to backward and to free an ``n``-op chain, and whether the value and
    gradient are right."""
    from tensorgrad.scalar import Value

    x = Value(0.3)
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


def run(args: argparse.Namespace) -> str:
    config = common.settings(args)
    short = config.pick(full=100_000, quick=100_000, smoke=1_000)
    long = config.pick(full=1_000_000, quick=1_000_000, smoke=20_000)

    runs = [measure(short) for _ in range(config.repeats)]
    build_s, backward_s, free_s = (common.Summary.of(r[i] for r in runs) for i in range(3))
    total = common.Summary.of(r[0] + r[1] + r[2] for r in runs)
    per_op = [s.scaled(1e6 / short) for s in (build_s, backward_s, free_s, total)]
    correct = all(r[3] for r in runs)
    short_row = [
        f"{short:,}-op chain (µs/op, median of {config.repeats})",
        *(common.number(s.median, 2) for s in per_op),
        "yes" if correct else "**NO**",
    ]

    *seconds, correct_long = measure(long)
    long_row = [
        f"{long:,}-op chain (seconds, one run)",
        *(common.number(s, 3) for s in (*seconds, sum(seconds))),
        "yes" if correct_long else "**NO**",
    ]
    headers = ["", "build", "backward", "free", "total", "value and gradient right"]
    target = per_op[0].median + per_op[1].median
    return "\n".join(
        [
            "## Scalar engine (`tensorgrad.scalar.Value`)\n",
            "A chain cycling through `y * 1.01`, `y + x`, `y.tanh()`, `y - 0.1`; *free* is "
            "dropping the last reference to the graph. The gradient is compared with "
            f"forward-mode derivatives in plain floats (relative 1e-9). Recursion limit: "
            f"{sys.getrecursionlimit()}, far below the chain's depth.\n",
            common.table(headers, [short_row, long_row]),
            f"Build + backward: {common.number(target, 2)} µs/op (target ≈10 µs/op or better: "
            f"{common.verdict(target, 10.0, higher_is_better=False)}).\n",
        ]
    )
