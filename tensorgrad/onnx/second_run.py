"""The export's second run: the model once more, on other input values and, along the dynamic
axes, other sizes; then each recorded node is read beside its twin from that run.

What it tells the export:

- **what the file may hold as a constant.** A constant (an array an op was given, an op's
  setting, a lookup's indices) that differs between the runs was computed from the inputs
  by a path tensorgrad does not record (``.numpy()``, ``.item()``, a comparison) or is
  random; frozen into the file it would be wrong for other inputs, so it is refused, unless
  it is one of three patterns that follow a dynamic size: ``arange(n)`` (a position index)
  and an array of one value (``zeros(batch, hidden)``), which become ``Range`` and
  ``ConstantOfShape`` of that size, and a table cut to the size (minGPT's causal mask,
  ``bias[:, :, :T, :T] == 0``: the second run's, with the smaller size, is the leading
  corner of the first's), which is kept at the size it was exported with and cut in the
  graph: such a file takes sizes up to that one (export at the largest, the block size);
- **which sizes are dynamic.** An axis whose size differs between the runs follows a
  dynamic input axis; a reshape's target, an expand's shape and a slice's bounds (``[:T]``)
  are then computed in the graph from the input's ``Shape`` instead of written as numbers;
- **whether the graph is one graph.** A forward that records other ops for other values
  branches on them (``if x.sum() > 0``), which one ONNX graph cannot follow: refused.

The second run's sizes: per named dynamic axis, a size of its own below the given one (one
less for the first name, two less for the second, ...; above it where that would leave less
than 2, never 1, which would broadcast), so that a size seen in both runs names its axis. The
values: floats scaled by factors in [0.5, 1.5) (signs kept), integers and booleans moved one
place along their last axis (the same values, so indices stay in range); along a resized
axis the given values repeat.

A third run, on other values and sizes again, checks the written file: where ONNX Runtime
is installed (the ``onnx`` extra brings it), the exported graph runs on that run's inputs and
must give its outputs (to 1e-3 of their scale: a check of the graph, not of rounding), or the
export is refused (:func:`check_with_runtime`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tensorgrad.core.tensor import Tensor
from tensorgrad.onnx.graph import Graph

_NOT_SETTINGS = frozenset({"saved", "needs_input_grad", "inputs", "parents", "_seq"})


def settings_of(op: Any) -> dict[str, Any]:
    """An op's settings: its attributes but what forward and backward leave on it."""
    return {k: v for k, v in vars(op).items() if k not in _NOT_SETTINGS}


def same(a: Any, b: Any) -> bool:
    """Whether two settings or constants are equal (arrays by value, NaNs equal)."""
    if isinstance(a, Tensor) or isinstance(b, Tensor):
        if not (isinstance(a, Tensor) and isinstance(b, Tensor)):
            return False
        return a is b or same(a._data, b._data)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
            return False
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return a is b


def other_shapes(
    inputs: Sequence[Tensor],
    in_names: Sequence[str],
    dynamic: Mapping[str, Mapping[int, str]],
    run: int = 2,
) -> tuple[list[tuple[int, ...]], dict[str, tuple[int, int]]]:
    """The input shapes of the second run (``run=2``) or of the third, the check by ONNX
    Runtime (``run=3``), and per dynamic axis name its (given, other) sizes.

    The k-th name (of n) moves by k + 1 in the second run and by n + k + 1 in the third,
    down where that leaves at least 2, else up: each name moves by its own amount, so no
    size that a sum or difference of another makes (``T − 1`` beside a batch one smaller)
    is taken for it in both runs."""
    labels = list(dict.fromkeys(label for name in in_names
                                for label in dynamic.get(name, {}).values()))  # fmt: skip
    sizes: dict[str, tuple[int, int]] = {}
    shapes = []
    for t, name in zip(inputs, in_names):
        shape = list(t.shape)
        for axis, label in dynamic.get(name, {}).items():
            if label not in sizes:
                given = shape[axis]
                step = labels.index(label) + 1 + (len(labels) if run == 3 else 0)
                sizes[label] = (given, given - step if given - step >= 2 else given + step)
            shape[axis] = sizes[label][1]
        shapes.append(tuple(shape))
    return shapes, sizes


def other_values(copy: Tensor, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """The second run's values for one input (see the module's docstring)."""
    array = copy.numpy()
    for axis, size in enumerate(shape):
        if size != array.shape[axis]:
            array = np.take(array, np.arange(size) % max(array.shape[axis], 1), axis=axis)
    if array.dtype.kind in "fc":
        return (array * rng.uniform(0.5, 1.5, array.shape)).astype(array.dtype)
    return np.roll(array, 1, axis=-1) if array.ndim else array.copy()


class Sizes:
    """The dynamic input axes, as the graph computes them: ``size(a, b)`` is the ONNX value
    (int64, shape (1,)) of the dynamic input axis that was ``a`` in the first run and ``b``
    in the second, made on first use from the input's ``Shape``; None if no axis was."""

    def __init__(
        self,
        graph: Graph,
        inputs: Sequence[Tensor],
        others: Sequence[Tensor],
        in_names: Sequence[str],
        dynamic: Mapping[str, Mapping[int, str]],
    ) -> None:
        self.graph = graph
        self.axes: dict[tuple[int, int], tuple[str, int]] = {}
        for t, o, name in zip(inputs, others, in_names):
            for axis in dynamic.get(name, {}):
                self.axes.setdefault((t.shape[axis], o.shape[axis]), (name, axis))
        self.made: dict[tuple[str, int], str] = {}

    def __bool__(self) -> bool:
        return bool(self.axes)

    def size(self, a: int, b: int) -> str | None:
        found = self.axes.get((int(a), int(b)))
        if found is None:
            return None
        if found not in self.made:
            name, axis = found
            shape = self.graph.add("Shape", [name], "")
            index = self.graph.ints([axis], "graph.shape")
            self.made[found] = self.graph.add("Gather", [shape, index], "", axis=0)
        return self.made[found]

    def shape(self, first: Sequence[int], second: Sequence[int]) -> str | None:
        """An int64 shape value, axis by axis a number where the runs agree and a dynamic
        input size where they do not; None if one of those sizes is no input's."""
        if tuple(first) == tuple(second):
            return self.graph.ints(list(first), "graph.shape")
        parts = []
        for a, b in zip(first, second):
            if a == b:
                parts.append(self.graph.ints([a], "graph.shape"))
            else:
                size = self.size(a, b)
                if size is None:
                    return None
                parts.append(size)
        return self.graph.add("Concat", parts, "", axis=0)

    def tracked(self, first: Any, second: Any) -> str | None:
        """A constant that differs between the runs only as a dynamic size does, as the
        graph's own computation: ``arange(n)`` (any shape with one axis of n) as ``Range``,
        an array of one value as ``ConstantOfShape``, a table whose leading corner the second
        run's is as a ``Slice`` of it; None for anything else."""
        a, b = np.asarray(first), np.asarray(second)
        if a.ndim != b.ndim or a.dtype != b.dtype or a.ndim == 0 or not a.size or not b.size:
            return None
        graph = self.graph
        if a.dtype.kind in "iu" and _is_arange(a) and _is_arange(b):
            axes = [k for k in range(a.ndim) if a.shape[k] != 1 or b.shape[k] != 1]
            if len(axes) != 1 or a.shape[axes[0]] == b.shape[axes[0]]:
                return None
            size = self.size(a.shape[axes[0]], b.shape[axes[0]])
            if size is None:
                return None
            scalar = graph.add("Squeeze", [size, graph.ints([0], "graph.shape")], "")
            zero = graph.constant(np.asarray(0, np.int64), "graph.constant")
            one = graph.constant(np.asarray(1, np.int64), "graph.constant")
            out = graph.add("Range", [zero, scalar, one], "")
            if a.dtype != np.int64:
                onnx = graph.onnx
                out = graph.add("Cast", [out], "", to=onnx.helper.np_dtype_to_tensor_dtype(a.dtype))
            shape = [-1 if k == axes[0] else 1 for k in range(a.ndim)]
            return graph.add("Reshape", [out, graph.ints(shape, "graph.shape")], "")
        flat_a, flat_b = a.reshape(-1), b.reshape(-1)
        if same(flat_a, np.full_like(flat_a, flat_a[0])) and same(
            flat_b, np.full_like(flat_b, flat_a[0])
        ):
            shape = self.shape(a.shape, b.shape)
            if shape is None:
                return None
            from onnx import numpy_helper

            fill = numpy_helper.from_array(flat_a[:1].copy(), "value")
            return graph.add("ConstantOfShape", [shape], "", value=fill)
        if all(q <= p for p, q in zip(a.shape, b.shape)):
            crop = a[tuple(slice(0, q) for q in b.shape)]
            if same(crop, b):  # a table cut to a dynamic size: ``bias[:, :, :T, :T]``
                ends = []
                for p, q in zip(a.shape, b.shape):
                    end = graph.ints([p], "graph.shape") if p == q else self.size(p, q)
                    if end is None:
                        return None
                    ends.append(end)
                table = graph.constant(a, "graph.constant")
                starts = graph.ints([0] * a.ndim, "graph.shape")
                axes = graph.ints(list(range(a.ndim)), "graph.shape")
                ends_value = graph.add("Concat", ends, "", axis=0)
                return graph.add("Slice", [table, starts, ends_value, axes], "")
        return None


def _is_arange(array: np.ndarray) -> bool:
    return bool(np.array_equal(array.reshape(-1), np.arange(array.size)))


def check_with_runtime(
    data: bytes, in_names: Sequence[str], inputs: Sequence[Tensor], outputs: Sequence[Tensor],
    out_names: Sequence[str], sizes: Mapping[str, tuple[int, int]],
) -> None:  # fmt: skip
    """Run the exported graph in ONNX Runtime on the third run's inputs and compare with the
    third run's outputs; nothing happens where ONNX Runtime is not installed."""
    try:
        import onnxruntime
    except ImportError:
        return
    from tensorgrad.onnx.errors import OnnxExporterError

    quiet = onnxruntime.SessionOptions()
    quiet.log_severity_level = 3  # errors only: an output declared static is no warning here
    session = onnxruntime.InferenceSession(
        data, sess_options=quiet, providers=["CPUExecutionProvider"]
    )
    run_options = onnxruntime.RunOptions()
    run_options.log_severity_level = 3
    feeds = {name: t.numpy() for name, t in zip(in_names, inputs)}
    got = session.run(None, feeds, run_options)
    for name, value, want in zip(out_names, got, outputs):
        want = want.numpy()
        scale = float(np.max(np.abs(want[np.isfinite(want)]), initial=0.0)) if want.size else 0.0
        close = value.shape == want.shape and (
            np.array_equal(value, want)
            if want.dtype.kind not in "fc"
            else np.allclose(value, want, rtol=1e-3, atol=1e-3 * scale + 1e-6, equal_nan=True)
        )
        if not close:
            other = ", ".join(f"{label} {b}" for label, (_, b) in sizes.items())
            detail = (
                f"shape {value.shape} instead of {want.shape}"
                if value.shape != want.shape
                else f"largest difference {float(np.nanmax(np.abs(value - want))):.3g}"
            )
            raise OnnxExporterError(
                f"export: the exported graph, run by ONNX Runtime on other inputs"
                f"{f' ({other})' if other else ''}, does not give what the model gives for "
                f"them (output {name!r}: {detail}): the model computes something the export "
                "does not follow; nothing was written"
            )
