"""Single ops: the fixed cost per op on tiny tensors, and throughput on large ones.

On a (4, 4) tensor NumPy's own work is a microsecond or so, so the time tensorgrad adds
(making the Tensor, recording the op, the backward sweep) is what shows. On large tensors the
arithmetic dominates and tensorgrad should be as fast as the NumPy calls it makes. Each op is
compared with the bare NumPy forward call and with its forward and backward written by hand,
after checking that the hand-written gradients are the ones tensorgrad computes.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable

import numpy as np

from bench import common

Fn = Callable[..., object]


@dataclasses.dataclass(frozen=True)
class Case:
    """One op: how tensorgrad, NumPy and PyTorch spell it, and its backward by hand.

    ``numpy_backward(grad, out, *inputs)`` returns the gradient of every input as a ``.grad``
    must hold it: an array of its own, not a view of ``grad`` nor shared with another input.
    ``torch`` defaults to the tensorgrad spelling (the APIs agree on most methods).
    """

    name: str
    inputs: tuple[np.ndarray, ...]
    tensorgrad: Fn
    numpy: Fn
    numpy_backward: Fn
    torch: Fn | None = None


def _rows_zeros(a: np.ndarray, rows: object, g: np.ndarray) -> np.ndarray:
    out = np.zeros_like(a)
    out[rows] = g
    return out


def _scatter_add(a: np.ndarray, index: np.ndarray, g: np.ndarray) -> np.ndarray:
    out = np.zeros_like(a)
    np.add.at(out, index, g)
    return out


def _argmax_backward(g: np.ndarray, a: np.ndarray) -> np.ndarray:
    out = np.zeros_like(a)
    out[np.arange(len(a)), a.argmax(axis=1)] = g
    return out


def _log_softmax(a: np.ndarray) -> np.ndarray:
    shifted = a - a.max(axis=1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


def _cross_entropy_backward(a: np.ndarray, target: np.ndarray) -> np.ndarray:
    probs = np.exp(_log_softmax(a))
    probs[np.arange(len(a)), target] -= 1
    return probs / len(a)


def elementwise_cases(shape: tuple[int, ...], rng: np.random.Generator) -> list[Case]:
    a, b = (rng.standard_normal(shape, dtype=np.float32) for _ in range(2))
    return [
        Case("add", (a, b), lambda x, y: x + y, np.add, lambda g, o, x, y: (g.copy(), g.copy())),
        Case("mul", (a, b), lambda x, y: x * y, np.multiply, lambda g, o, x, y: (g * y, g * x)),
        Case("exp", (a,), lambda x: x.exp(), np.exp, lambda g, o, x: (g * o,)),
        Case("relu", (a,), lambda x: x.relu(), lambda x: np.maximum(x, 0),
             lambda g, o, x: (g * (x > 0),)),
        Case("tanh", (a,), lambda x: x.tanh(), np.tanh, lambda g, o, x: (g * (1 - o * o),)),
    ]  # fmt: skip


def reduction_cases(shape: tuple[int, int], rng: np.random.Generator) -> list[Case]:
    a = rng.standard_normal(shape, dtype=np.float32)
    return [
        Case("sum", (a,), lambda x: x.sum(), lambda x: x.sum(),
             lambda g, o, x: (np.full_like(x, g),)),
        Case("sum(axis=1)", (a,), lambda x: x.sum(1), lambda x: x.sum(axis=1),
             lambda g, o, x: (np.repeat(g[:, None], x.shape[1], axis=1),)),
        Case("max(axis=1)", (a,), lambda x: x.amax(1), lambda x: x.max(axis=1),
             lambda g, o, x: (_argmax_backward(g, x),), torch=lambda x: x.amax(1)),
        Case("log_softmax(axis=1)", (a,), lambda x: x.log_softmax(1), _log_softmax,
             lambda g, o, x: (g - np.exp(o) * g.sum(axis=1, keepdims=True),)),
    ]  # fmt: skip


def indexing_cases(shape: tuple[int, int], rows: int, rng: np.random.Generator) -> list[Case]:
    a = rng.standard_normal(shape, dtype=np.float32)
    index = rng.integers(0, shape[0], rows)  # with repeats: the gradient must add them up
    torch = common.torch()
    torch_index = None if torch is None else torch.from_numpy(index)
    half = slice(0, shape[0] // 2)
    return [
        Case("slice x[:n/2]", (a,), lambda x: x[half], lambda x: x[half],
             lambda g, o, x: (_rows_zeros(x, half, g),)),
        Case("gather x[idx]", (a,), lambda x: x[index], lambda x: x[index],
             lambda g, o, x: (_scatter_add(x, index, g),), torch=lambda x: x[torch_index]),
    ]  # fmt: skip


def matmul_case(n: int, rng: np.random.Generator) -> Case:
    a, b = (rng.standard_normal((n, n), dtype=np.float32) for _ in range(2))
    return Case(
        f"matmul {n}x{n}", (a, b), lambda x, y: x @ y, np.matmul,
        lambda g, o, x, y: (g @ y.T, x.T @ g),
    )  # fmt: skip


def nn_cases(batch: int, features: int, rng: np.random.Generator) -> list[Case]:
    from tensorgrad.nn import functional as F

    x, w = (rng.standard_normal((batch, features), dtype=np.float32) for _ in range(2))
    bias = rng.standard_normal(features, dtype=np.float32)
    target = rng.integers(0, features, batch)
    torch = common.torch()
    if torch is None:
        torch_linear = torch_ce = None
    else:
        torch_target = torch.from_numpy(target)
        torch_linear = torch.nn.functional.linear

        def torch_ce(z):
            return torch.nn.functional.cross_entropy(z, torch_target)

    return [
        Case("linear", (x, w, bias), F.linear, lambda x, w, b: x @ w.T + b,
             lambda g, o, x, w, b: (g @ w, g.T @ x, g.sum(axis=0)), torch=torch_linear),
        Case("cross_entropy", (x,), lambda z: F.cross_entropy(z, target),
             lambda z: -_log_softmax(z)[np.arange(len(z)), target].mean(),
             lambda g, o, z: (g * _cross_entropy_backward(z, target),), torch=torch_ce),
    ]  # fmt: skip


def small_cases(rng: np.random.Generator) -> list[Case]:
    return [
        *elementwise_cases((4, 4), rng),
        matmul_case(4, rng),
        *reduction_cases((4, 4), rng),
        Case("reshape", (rng.standard_normal((4, 4), dtype=np.float32),),
             lambda x: x.reshape(16), lambda x: x.reshape(16),
             lambda g, o, x: (g.reshape(x.shape).copy(),)),
        *indexing_cases((4, 4), 4, rng),
        *nn_cases(4, 4, rng),
    ]  # fmt: skip


def large_cases(config: common.Settings, rng: np.random.Generator) -> list[Case]:
    side = config.pick(full=1000, quick=1000, smoke=32)
    matmuls = config.pick(full=(512, 1024), quick=(512, 1024), smoke=(32,))
    return [
        *elementwise_cases((side, side), rng),
        *reduction_cases((side, side), rng),
        *indexing_cases((side * 10, side // 10), side * 10, rng),
        *(matmul_case(n, rng) for n in matmuls),
        *nn_cases(side // 2, side // 2, rng)[:1],
    ]


# --------------------------------------------------------------------------- measuring
class Runner:
    """The steps to time for one case, on each side."""

    def __init__(self, case: Case) -> None:
        import tensorgrad as tg

        self.case = case
        self.leaves = [tg.tensor(a, requires_grad=True) for a in case.inputs]
        out = case.numpy(*case.inputs)
        self.ones = np.ones_like(out)  # the backward seed; tensorgrad and PyTorch take None for 0-d
        self.seed = None if np.ndim(out) == 0 else self.ones
        torch = common.torch()
        self.torch_leaves = None
        if torch is not None:
            self.torch_leaves = [torch.tensor(a, requires_grad=True) for a in case.inputs]
            self.torch_seed = None if self.seed is None else torch.from_numpy(self.seed)

    def numpy_forward(self) -> None:
        self.case.numpy(*self.case.inputs)

    def numpy_both(self) -> None:
        inputs = self.case.inputs
        out = self.case.numpy(*inputs)
        self.case.numpy_backward(self.ones, out, *inputs)

    def tensorgrad_forward(self) -> None:
        self.case.tensorgrad(*self.leaves)

    def tensorgrad_both(self) -> None:
        self.case.tensorgrad(*self.leaves).backward(self.seed)
        for leaf in self.leaves:
            leaf.grad = None

    def torch_both(self) -> None:
        (self.case.torch or self.case.tensorgrad)(*self.torch_leaves).backward(self.torch_seed)
        for leaf in self.torch_leaves:
            leaf.grad = None

    def check(self) -> None:
        """The hand-written backward must compute what tensorgrad does, or the comparison is
        of different work."""
        inputs = self.case.inputs
        out = self.case.numpy(*inputs)
        expected = self.case.numpy_backward(self.ones, out, *inputs)
        self.case.tensorgrad(*self.leaves).backward(self.seed)
        for leaf, grad in zip(self.leaves, expected, strict=True):
            error = common.relative_error(leaf.grad.numpy(), grad)
            leaf.grad = None
            if not error <= 1e-5:
                raise common.DisagreementError(
                    f"ops: {self.case.name}: tensorgrad's gradient differs from the hand-written "
                    f"one (relative error {error:.1e}); refusing to report timings"
                )

    def tasks(self) -> dict[str, Fn]:
        tasks = {
            "numpy_forward": self.numpy_forward,
            "tensorgrad_forward": self.tensorgrad_forward,
            "numpy_both": self.numpy_both,
            "tensorgrad_both": self.tensorgrad_both,
        }
        if self.torch_leaves is not None:
            tasks["torch_both"] = self.torch_both
        return tasks


def measure(
    case: Case, repeats: int, seconds: float, pause: float = 0.0
) -> dict[str, common.Summary]:
    """Seconds per call of each task (median and range over ``repeats`` interleaved rounds)
    and, under ``ratio:<task>``, NumPy's time over the task's, paired by round."""
    runner = Runner(case)
    runner.check()
    calls = {name: common.calls_for(task, seconds) for name, task in runner.tasks().items()}
    tasks = {name: common.repeated(task, calls[name]) for name, task in runner.tasks().items()}
    times = common.interleaved(tasks, repeats, warmup=0, pause=pause)
    per_call = {name: [t / calls[name] for t in times[name]] for name in times}
    result = {name: common.Summary.of(values) for name, values in per_call.items()}
    for name, values in per_call.items():
        reference = per_call["numpy_forward" if "forward" in name else "numpy_both"]
        result[f"ratio:{name}"] = common.paired_ratios(reference, values)
    return result


def _small_table(cases: list[Case], config: common.Settings) -> str:
    seconds = config.pick(full=0.02, quick=0.01, smoke=0.001)
    has_torch = common.torch() is not None
    rows = []
    for case in cases:
        m = measure(case, config.repeats, seconds)
        us = {name: s.scaled(1e6) for name, s in m.items()}
        overhead = us["tensorgrad_both"].median - us["numpy_both"].median
        rows.append([
            case.name,
            common.number(us["numpy_forward"].median, 2),
            common.number(us["tensorgrad_forward"].median, 2),
            common.number(us["numpy_both"].median, 2),
            common.number(us["tensorgrad_both"].median, 2),
            common.number(us["torch_both"].median, 2) if has_torch else "n/a",
            common.number(overhead, 2),
        ])  # fmt: skip
    headers = [
        "op", "NumPy fwd", "tensorgrad fwd", "NumPy fwd+bwd (by hand)", "tensorgrad fwd+bwd",
        "PyTorch fwd+bwd", "tensorgrad overhead",
    ]  # fmt: skip
    return common.table(headers, rows)


def _large_table(cases: list[Case], config: common.Settings) -> str:
    seconds = config.pick(full=0.05, quick=0.02, smoke=0.001)
    has_torch = common.torch() is not None
    rows = []
    for case in cases:
        m = measure(case, config.repeats, seconds, config.pause)
        rows.append([
            case.name,
            common.number(m["numpy_forward"].median * 1e3),
            common.ratio(m["ratio:tensorgrad_forward"]),
            common.number(m["numpy_both"].median * 1e3),
            common.ratio(m["ratio:tensorgrad_both"]),
            common.ratio(m["ratio:torch_both"]) if has_torch else "n/a",
        ])  # fmt: skip
    headers = [
        "op", "NumPy fwd (ms)", "tensorgrad fwd × NumPy", "NumPy fwd+bwd (ms)",
        "tensorgrad fwd+bwd × NumPy", "PyTorch fwd+bwd × NumPy",
    ]  # fmt: skip
    return common.table(headers, rows)


def run(args: argparse.Namespace) -> str:
    config = common.settings(args)
    rng = np.random.default_rng(0)
    side = config.pick(full=1000, quick=1000, smoke=32)
    return "\n".join(
        [
            "## Single ops\n",
            "**Per-op cost on (4, 4) float32 tensors**, µs per call (median of "
            f"{config.repeats} interleaved repeats). *fwd* is the forward call alone (tensorgrad "
            "records the graph: its inputs require grad); *fwd+bwd* adds the backward pass, "
            "seeded with ones, until every input holds its gradient. *Overhead* is tensorgrad's "
            "fwd+bwd minus NumPy's by hand.\n",
            _small_table(small_cases(rng), config),
            f"**Throughput on large tensors** ({side}x{side} float32 unless named; gather: "
            f"{side * 10} random rows, with repeats, of a ({side * 10}, {side // 10}) array; "
            f"linear: ({side // 2}, {side // 2}) input and weight). "
            "Ratios are NumPy's time over the other's, paired by repeat: above 1 is faster than "
            "NumPy, median (min–max).\n",
            _large_table(large_cases(config, rng), config),
        ]
    )
