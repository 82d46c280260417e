"""The ONNX graph being built, and what a converter knows of the node it converts.

:class:`Graph` holds the nodes and initializers and hands out unique value names;
:class:`NodeInfo` is one recorded tensorgrad node as a converter sees it
(:mod:`tensorgrad.onnx.converters`), with helpers that add ONNX nodes in the name of the
module that ran it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from tensorgrad.onnx.errors import UnsupportedOperatorError


class Graph:
    """The ONNX graph being built: nodes, initializers and unique names."""

    def __init__(self, onnx: Any, opset: int) -> None:
        self.onnx, self.opset = onnx, opset
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self.taken: set[str] = set()
        self.counts: dict[str, int] = {}  # per hint, the last number given

    def fresh(self, hint: str) -> str:
        """``hint``, or ``hint_2``, ``hint_3``... : the first not taken."""
        name, k = hint, self.counts.get(hint, 1)
        while name in self.taken:
            k += 1
            name = f"{hint}_{k}"
        self.counts[hint] = k
        self.taken.add(name)
        return name

    def constant(self, value: Any, hint: str, dtype: Any = None) -> str:
        """An initializer holding ``value`` (an array, or a number made ``dtype``)."""
        from onnx import numpy_helper

        array = np.asarray(value, dtype=dtype) if dtype is not None else np.asarray(value)
        name = self.fresh(hint)
        array = array if array.flags.c_contiguous else array.copy(order="C")  # 0-d stays 0-d
        self.initializers.append(numpy_helper.from_array(array, name))
        return name

    def ints(self, values: Sequence[int], hint: str) -> str:
        return self.constant(np.asarray(values, np.int64), hint)

    def add(self, op_type: str, inputs: Sequence[str], where: str, outputs: int = 1, **attrs):
        """Add a node; returns its output's name (a list of them for ``outputs > 1``)."""
        base = f"/{where}/{op_type}" if where else f"/{op_type}"
        names = [self.fresh(f"{base}_output_{i}") for i in range(outputs)]
        node = self.onnx.helper.make_node(
            op_type, list(inputs), names, name=self.fresh(base), **attrs
        )
        self.nodes.append(node)
        return names[0] if outputs == 1 else names


class _Adds:
    """What both kinds of converter use to add nodes and constants in the name of the
    module that ran what they convert (``module_path``; ``output_dtype`` for numbers)."""

    graph: Graph
    module_path: str
    output_dtype: Any

    def add(self, op_type: str, inputs: Sequence[str], outputs: int = 1, **attrs: Any) -> Any:
        return self.graph.add(op_type, inputs, self.module_path, outputs, **attrs)

    def constant(self, value: Any, dtype: Any = None) -> str:
        dtype = self.output_dtype if dtype is None and not isinstance(value, np.ndarray) else dtype
        return self.graph.constant(value, f"{self.module_path or 'graph'}.constant", dtype)

    def ints(self, values: Sequence[int]) -> str:
        return self.graph.ints(values, f"{self.module_path or 'graph'}.shape")

    @property
    def opset(self) -> int:
        return self.graph.opset


class NodeInfo(_Adds):
    """What a converter knows of one recorded node: its op, the raw inputs and output, the
    value name of each input (made on first use for constants), which inputs depend on the
    graph's inputs, and the module that ran it (``where`` for errors, ``module_path`` for
    node names)."""

    def __init__(
        self, graph: Graph, op: Any, arrays: Sequence[Any], output: Any, where: str, path: str = ""
    ) -> None:
        self.graph, self.op, self.arrays, self.output = graph, op, arrays, output
        self.output_dtype = getattr(output, "dtype", None)
        self.where, self.module_path = where, path
        self.sources: list[Any] = []  # per input: a value name, or a constant to make one of
        self.dependent: list[bool] = []
        self.constants: list[Any] = []  # per input: its array when a constant, else None
        self.dynamic_batch = False  #: whether the graph's batch axis (0) is dynamic
        #: the twin node's inputs and output in the export's second run, on other values and
        #: other sizes along the dynamic axes (:mod:`tensorgrad.onnx.second_run`)
        self.other_arrays: Sequence[Any] = arrays
        self.other_op: Any = op
        self.other_output: Any = output
        self.sizes: Any = None  #: the dynamic input sizes (``second_run.Sizes``)
        #: the op's settings that differ in the second run, and those the converter made
        #: follow the dynamic sizes (the rest are refused as constants that changed)
        self.changed: set[str] = set()
        self.explained: set[str] = set()

    def name(self, i: int) -> str:
        """The value name of input ``i`` ("" for a missing optional input)."""
        if i >= len(self.sources):
            return ""
        source = self.sources[i]
        if isinstance(source, str):
            return source
        if source is None:
            return ""
        dtype = None if isinstance(source, np.ndarray) else self.output.dtype
        name = self.graph.constant(source, f"{self.module_path or 'graph'}.constant", dtype)
        self.sources[i] = name
        return name

    def refuse(self, why: str) -> UnsupportedOperatorError:
        return UnsupportedOperatorError(
            f"export: the op {self.op.name!r} ({type(self.op).__name__}){self.ran_in()} {why}"
        )

    def shapes(self, i: int | None = None) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Input ``i``'s shape (the output's for None) in the two runs."""
        if i is None:
            return np.shape(self.output), np.shape(self.other_output)
        return np.shape(self.arrays[i]), np.shape(self.other_arrays[i])

    def ran_in(self) -> str:
        return f", run by {self.where}," if self.where else ""


class CallInfo(_Adds):
    """What a whole-module converter (:mod:`tensorgrad.onnx.modules`) knows of one call of
    its module: the module, the call's arguments and result (``call.args``, ``call.kwargs``,
    ``call.result``), and :meth:`value`, the ONNX value of a Tensor argument or parameter.
    The converter returns ``(result Tensor, value name)`` pairs for what it computed."""

    def __init__(
        self, graph: Graph, call: Any, value: Callable[[Any], tuple], dynamic_batch: bool
    ) -> None:
        self.graph, self.call, self.module = graph, call, call.module
        self.where, self.module_path = call.where, call.path
        self.output_dtype = None
        self._value = value
        self.dependent: list[bool] = []  # per value asked for: whether it depends on inputs
        self.dynamic_batch = dynamic_batch

    def value(self, tensor: Any) -> str:
        name, depends = self._value(tensor)
        self.dependent.append(depends)
        return name

    def refuse(self, why: str) -> UnsupportedOperatorError:
        return UnsupportedOperatorError(f"export: {self.where} {why}")


def elem_type(onnx: Any, dtype: np.dtype) -> int:
    return onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def value_info(onnx: Any, name: str, array: np.ndarray, dynamic: Mapping[int, str]) -> Any:
    shape = [dynamic.get(axis, size) for axis, size in enumerate(array.shape)]
    return onnx.helper.make_tensor_value_info(name, elem_type(onnx, array.dtype), shape)
