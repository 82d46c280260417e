"""``export``: run the model once, recording, and turn the recorded graph into an ONNX model.

How it works:

1. ``args`` are copied into fresh leaf tensors; floating ones require grad, so that every op
   on them is recorded (tensorgrad records only where a gradient will be needed). The model
   runs once under ``tg.enable_grad()``, in its current mode (``model.eval()`` first for
   inference: batch norm's running statistics, dropout off). Each module's ``forward`` is
   wrapped for that run only, so that every recorded node is known by the module that ran it.
2. The nodes reachable from the outputs are collected without recursion and taken in
   recording order (every node was recorded after the nodes it was computed from).
3. Each node's op goes to its converter (:mod:`tensorgrad.onnx.converters`, by exact op type),
   which adds ONNX nodes; leaves are the graph's inputs (the copies of ``args``) or
   initializers (parameters and buffers under their ``state_dict`` names, other constants
   under the module's name). An op with no converter raises ``UnsupportedOperatorError``.
4. ``onnx.checker.check_model`` checks the result before it is written (atomically).

One small accessor, :func:`record_of`, reads a node: whether the node is a record holding its
op in ``.op`` (``tensorgrad.core.node.Node``) or the op itself (as before that record), the
walk is the same.
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

import tensorgrad as tg
from tensorgrad.core import engine
from tensorgrad.core.tensor import Tensor
from tensorgrad.onnx.converters import CONVERTERS
from tensorgrad.onnx.errors import OnnxExporterError, UnsupportedOperatorError
from tensorgrad.onnx.graph import CallInfo, Graph, NodeInfo, value_info
from tensorgrad.onnx.modules import MODULE_CONVERTERS

DEFAULT_OPSET = 17  #: the opset written unless ``opset_version`` says otherwise
MIN_OPSET = 13  #: the oldest opset the converters write (Softmax's per-axis meaning, Unsqueeze)
EXTRA = "onnx"

_exporting = False


def is_in_onnx_export() -> bool:
    """Whether an export's forward pass is running now (``torch.onnx.is_in_onnx_export``)."""
    return _exporting


def onnx_package() -> Any:
    """The ``onnx`` package, or an ImportError that names the extra to install."""
    try:
        import onnx
    except ImportError as exc:
        raise ImportError(
            f"tensorgrad.onnx needs the onnx package: pip install 'tensorgrad[{EXTRA}]' "
            "(onnx, and onnxruntime to run the exported model)"
        ) from exc
    return onnx


# ----------------------------------------------------------------------------- the graph
def node_of(tensor: Tensor) -> Any:
    """The graph node that made ``tensor`` (None for a leaf)."""
    return tensor._node


def record_of(node: Any) -> tuple[Any, Sequence[Any], Sequence[Any]]:
    """``(op, parents, inputs)`` of a recorded node: the Op instance, per input the node that
    made it (or the leaf Tensor, or None for a constant), and the raw input values."""
    return getattr(node, "op", node), node.parents, node.inputs


def _order(node: Any) -> int:
    """The node's tick on the recording clock (``seq`` on a node record, ``_seq`` where the
    op object itself is the node)."""
    for holder in (node, record_of(node)[0]):
        for name in ("seq", "_seq"):
            tick = getattr(holder, name, None)
            if isinstance(tick, int):
                return tick
    raise OnnxExporterError(f"export: cannot tell when the node {node!r} was recorded")


def _is_node(parent: Any) -> bool:
    return parent is not None and not isinstance(parent, Tensor)


def recorded_nodes(outputs: Sequence[Tensor], calls: Sequence[Any] = ()) -> list[Any]:
    """Every node the outputs were computed through, in recording order (iteratively); the
    results of whole-module ``calls`` count as computed from the call's arguments (an
    embedding's indices are not a recorded input of its lookup)."""
    extra: dict[int, list[Any]] = {}
    for call in calls:
        made_from = [n for n in call.input_nodes.values() if n is not None]
        for node in call.output_nodes:
            if node is not None:
                extra.setdefault(id(node), []).extend(made_from)
    seen: dict[int, Any] = {}
    stack = [n for n in map(node_of, outputs) if n is not None]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen[id(node)] = node
        stack.extend(p for p in record_of(node)[1] if _is_node(p) and id(p) not in seen)
        stack.extend(extra.get(id(node), ()))
    return sorted(seen.values(), key=_order)


def _tensors(value: Any) -> Iterator[Tensor]:
    """The Tensors in a forward's arguments or result (nested tuples, lists, dicts)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Tensor):
            yield item
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, Mapping):
            stack.extend(item.values())


class ModuleCall:
    """One call of a module that is converted as a whole (``nn.LSTM`` to ONNX's LSTM,
    ``nn.Embedding`` to a Gather of its indices): its arguments and result as the forward
    saw them, the node that made each Tensor among them at the time of the call, and the
    nodes it recorded inside, which the export skips."""

    def __init__(
        self,
        module: Any,
        path: str,
        where: str,
        args: tuple,
        kwargs: dict,
        input_nodes: dict[int, Any],
        result: Any,
        inside: set[int],
    ) -> None:
        self.module, self.path, self.where = module, path, where
        self.args, self.kwargs, self.result = args, kwargs, result
        self.input_nodes = input_nodes  # id(tensor) → its node then (None for a leaf)
        self.outputs = list(_tensors(result))
        self.output_nodes = [node_of(t) for t in self.outputs]
        self.inside = inside


class _ModuleNames:
    """While active, every module's ``forward`` notes which recorded nodes it made: those
    between its inputs and its outputs not claimed by an inner module (claimed first, as
    inner forwards return first). Fused runs in ``Sequential`` belong to the Sequential."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.owner: dict[int, tuple[str, str]] = {}  # node → (module path, label for errors)
        self.wrapped: list[tuple[Any, Any]] = []
        self.calls: list[ModuleCall] = []  # the calls of modules converted as a whole

    def describe(self, node: Any) -> tuple[str, str]:
        """``(path, label)`` of the module that made ``node``: ``("0.conv", "0.conv
        (Conv2d)")``; the model itself has the path ``""``."""
        return self.owner.get(id(node), ("", ""))

    def _claim(self, result: Any, start: int, owner: tuple[str, str]) -> set[int]:
        """Give the nodes that ``result`` was computed through since the clock's tick
        ``start`` (the call's beginning) and that no inner module claimed to ``owner``;
        returns their ids. The walk goes through the inner modules' nodes, so that the ops
        of this module's own forward between them are found too."""
        claimed: set[int] = set()
        seen: set[int] = set()
        stack = [n for n in map(node_of, _tensors(result)) if n is not None]
        while stack:
            node = stack.pop()
            if id(node) in seen or _order(node) < start:
                continue
            seen.add(id(node))
            if id(node) not in self.owner:
                self.owner[id(node)] = owner
                claimed.add(id(node))
            stack.extend(p for p in record_of(node)[1] if _is_node(p))
        return claimed

    def __enter__(self) -> _ModuleNames:
        for name, module in self.model.named_modules():
            owner = (name, f"{name or 'the model'} ({type(module).__name__})")
            original = module.__dict__.get("forward")
            bound = module.forward

            def forward(
                *args: Any, _bound: Any = bound, _owner: tuple = owner, _module: Any = module,
                **kwargs: Any,
            ):  # fmt: skip
                inputs = {id(t): node_of(t) for t in _tensors((args, kwargs))}
                start = next(engine.clock)  # older than every node this call records
                result = _bound(*args, **kwargs)
                claimed = self._claim(result, start, _owner)
                if type(_module) in MODULE_CONVERTERS:
                    self.calls.append(ModuleCall(_module, *_owner, args, kwargs, inputs,
                                                 result, claimed))  # fmt: skip
                return result

            object.__setattr__(module, "forward", forward)
            self.wrapped.append((module, original))
        return self

    def __exit__(self, *exc: Any) -> None:
        for module, original in self.wrapped:
            if original is None:
                module.__dict__.pop("forward", None)
            else:
                object.__setattr__(module, "forward", original)
        self.wrapped.clear()


# ----------------------------------------------------------------------------- arguments
def _split_args(args: Any, kwargs: Mapping[str, Any] | None) -> tuple[tuple, dict]:
    """PyTorch's conventions: a lone tensor, or a tuple whose last item may be a dict of
    keyword arguments."""
    if isinstance(args, (Tensor, np.ndarray)):
        args = (args,)
    elif isinstance(args, list):
        args = tuple(args)
    elif not isinstance(args, tuple):
        raise TypeError(f"export: args must be a Tensor or a tuple, got {type(args).__name__}")
    extra = dict(kwargs or {})
    if args and isinstance(args[-1], Mapping):
        extra = {**dict(args[-1]), **extra}
        args = args[:-1]
    return args, extra


def _copy(value: Any, where: str) -> Tensor:
    """A fresh leaf holding ``value``'s array, recorded through: a floating one requires
    grad; an integer or boolean one (token indices) is marked as if it did, for the export's
    run only, so that what the forward computes from it (``idx[:, 1:]``, ``idx + 1``) is
    recorded too instead of being frozen into the file as a constant."""
    if isinstance(value, Tensor):
        array = value.numpy()
    elif isinstance(value, np.ndarray):
        array = value
    else:
        raise TypeError(f"export: {where} must be a Tensor or an array, got {type(value).__name__}")
    array = np.array(array, copy=True)
    copy = tg.tensor(array, requires_grad=array.dtype.kind == "f")
    copy._requires_grad = True
    return copy


def _perturbed(copy: Tensor, rng: np.random.Generator) -> Tensor:
    """Other values of the same shape and kind for the check run: floats scaled by factors
    in [0.5, 1.5) (signs kept), integers and booleans moved one place along the last axis
    (the same values, so indices stay in range)."""
    array = copy.numpy()
    if array.dtype.kind in "fc":
        other = (array * rng.uniform(0.5, 1.5, array.shape)).astype(array.dtype)
    elif array.ndim:
        other = np.roll(array, 1, axis=-1)
    else:
        other = array.copy()
    return _copy(other, "")


def _names(given: Sequence[str] | None, count: int, stem: str) -> list[str]:
    names = list(given or [])
    if len(names) > count:
        raise ValueError(f"export: {len(names)} {stem}_names for {count} {stem}s")
    default = [stem] if count == 1 else [f"{stem}_{i}" for i in range(count)]
    names += default[len(names) :]
    if len(set(names)) != len(names):
        raise ValueError(f"export: {stem} names must be different, got {names}")
    return names


def _dynamic(dynamic_axes: Mapping[str, Any] | None, ranks: dict[str, int]) -> dict:
    """``{name: {axis: dim_param}}`` from PyTorch's forms (a list of axes, or a dict of axis →
    name), checked against the graph's inputs and outputs and their ranks."""
    result: dict[str, dict[int, str]] = {}
    for name, axes in (dynamic_axes or {}).items():
        if name not in ranks:
            raise ValueError(
                f"export: dynamic_axes names {name!r}, which is neither an input nor an output "
                f"(those are {', '.join(ranks)})"
            )
        if isinstance(axes, Mapping):
            chosen = {int(a): str(label) for a, label in axes.items()}
        else:
            chosen = {int(a): f"{name}_dynamic_axes_{i + 1}" for i, a in enumerate(axes)}
        rank = ranks[name]
        for axis in chosen:
            if not -rank <= axis < rank:
                raise ValueError(f"export: dynamic axis {axis} of {name!r}, which has {rank} axes")
        result[name] = {a % rank: label for a, label in chosen.items()}
    return result


def _refuse_training_dropout(model: Any) -> None:
    for name, module in model.named_modules():
        if "Dropout" in type(module).__name__ and module.training and getattr(module, "p", 0):
            raise OnnxExporterError(
                f"export: {name or 'the model'} ({type(module).__name__}) is in training mode, "
                "so its random mask would be exported as a constant; call model.eval() first"
            )


# ----------------------------------------------------------------------------- building
def export(
    model: Any,
    args: Any,
    f: str | os.PathLike | io.IOBase,
    *,
    kwargs: Mapping[str, Any] | None = None,
    export_params: bool = True,
    verbose: bool = False,
    input_names: Sequence[str] | None = None,
    output_names: Sequence[str] | None = None,
    opset_version: int | None = None,
    dynamic_axes: Mapping[str, Any] | None = None,
) -> None:
    """Export ``model`` (a Module, or any callable of Tensors) run on ``args`` to ONNX in
    ``f`` (a path or a binary file), as ``torch.onnx.export`` does: ``input_names`` and
    ``output_names`` name the graph's values (default ``input``/``output``, numbered when
    several), ``dynamic_axes`` makes axes symbolic (``{"input": {0: "batch"}, "output":
    {0: "batch"}}``, or lists of axes), ``export_params=False`` makes the parameters graph
    inputs instead of stored weights. The model runs in its current mode: call
    ``model.eval()`` first to export inference (a dropout in training mode is refused).

    Raises ``UnsupportedOperatorError`` for an op with no ONNX mapping, naming the op and the
    module that ran it; ``onnx.checker`` checks the model before anything is written.

    The model runs twice: on ``args``, recorded into the graph, and on other values of the
    same shapes (floats scaled, integer indices moved along their last axis), to check that
    every constant the file would hold is the same in both runs; one that is not came from
    the inputs by a path tensorgrad does not record (a comparison, ``.numpy()``, randomness),
    and the export is refused instead of freezing it."""
    onnx = onnx_package()
    opset = DEFAULT_OPSET if opset_version is None else int(opset_version)
    newest = onnx.defs.onnx_opset_version()
    if not MIN_OPSET <= opset <= newest:
        raise ValueError(
            f"export: opset_version {opset_version} is not supported: tensorgrad writes opsets "
            f"{MIN_OPSET} to {newest} (the installed onnx's newest)"
        )
    positional, keywords = _split_args(args, kwargs)
    copies = [_copy(v, f"args[{i}]") for i, v in enumerate(positional)]
    keyword_copies = {k: _copy(v, f"kwargs[{k!r}]") for k, v in keywords.items()}
    inputs = copies + list(keyword_copies.values())
    in_names = _names(input_names, len(inputs), "input")
    is_module = hasattr(model, "named_modules")
    if is_module:
        _refuse_training_dropout(model)
    outputs, names = _run(model, copies, keyword_copies)
    out_names = _names(output_names, len(outputs), "output")
    if set(in_names) & set(out_names):
        raise ValueError(f"export: a name is both an input and an output: {in_names}, {out_names}")
    ranks = {n: t.ndim for n, t in zip(in_names, inputs)} | {
        n: t.ndim for n, t in zip(out_names, outputs)
    }
    dynamic = _dynamic(dynamic_axes, ranks)
    graph = Graph(onnx, opset)
    graph.taken.update(in_names + out_names)
    proto = _build(graph, model, names, inputs, in_names, outputs, out_names, dynamic,
                   export_params)  # fmt: skip
    # once more on other values of the same shapes: what the file holds as constants must
    # not have changed (else it came from the inputs by a path that was not recorded)
    rng = np.random.default_rng(0)
    other_copies = [_perturbed(c, rng) for c in copies]
    other_keywords = {k: _perturbed(c, rng) for k, c in keyword_copies.items()}
    others = other_copies + list(other_keywords.values())
    other_outputs, other_names = _run(model, other_copies, other_keywords)
    _same_constants((inputs, outputs, names), (others, other_outputs, other_names), model)
    onnx.checker.check_model(proto)
    data = proto.SerializeToString()
    if verbose:
        print(onnx.helper.printable_graph(proto.graph))
    if hasattr(f, "write"):
        f.write(data)
    else:
        from tensorgrad.serialization import write_atomically

        write_atomically(f, data)


def _run(model: Any, copies: list[Tensor], keyword_copies: dict[str, Tensor]) -> tuple:
    """Run the model once on the copies, recording: its output Tensors and, for a Module,
    the modules that made each node (None for a plain function)."""
    global _exporting
    is_module = hasattr(model, "named_modules")
    names = _ModuleNames(model) if is_module else None
    # frozen parameters are recorded through too (an embedding loaded with freeze=True),
    # for this run only
    frozen = [p for p in model.parameters() if not p._requires_grad] if is_module else []
    for parameter in frozen:
        parameter._requires_grad = True
    _exporting = True
    try:
        with tg.enable_grad(), names or contextlib.nullcontext():
            # the model gets clones (recorded: Identity in ONNX), so that it may change its
            # inputs in place (``relu_``), which a leaf that requires grad refuses
            args_in = [c.clone() for c in copies]
            kwargs_in = {k: c.clone() for k, c in keyword_copies.items()}
            result = model(*args_in, **kwargs_in)
    finally:
        _exporting = False
        for parameter in frozen:
            parameter._requires_grad = False
    if isinstance(result, Tensor):
        return [result], names
    if isinstance(result, (tuple, list)) and all(isinstance(r, Tensor) for r in result):
        return list(result), names
    raise OnnxExporterError(
        f"export: the model must return a Tensor or a tuple of Tensors, got {type(result).__name__}"
    )


def _build(
    graph: Graph,
    model: Any,
    names: _ModuleNames | None,
    inputs: list[Tensor],
    in_names: list[str],
    outputs: list[Tensor],
    out_names: list[str],
    dynamic: dict[str, dict[int, str]],
    export_params: bool,
) -> Any:
    onnx = graph.onnx
    values: dict[int, str] = {id(t): n for t, n in zip(inputs, in_names)}
    stored: dict[int, str] = {}
    if names is not None:
        stored = {id(p): n for n, p in model.named_parameters()}
        stored |= {id(b): n for n, b in model.named_buffers() if b is not None}
    extra_inputs: list[Any] = []
    dependent: dict[int, bool] = {id(t): True for t in inputs}
    dynamic_batch = any(0 in dynamic.get(n, {}) for n in in_names)

    def leaf(t: Tensor, where: str) -> str:
        name = values.get(id(t))
        if name is None:
            if id(t) in stored and not export_params:
                name = graph.fresh(stored[id(t)])
                extra_inputs.append(value_info(onnx, name, t.numpy(), {}))
            elif id(t) in stored:
                name = graph.constant(t.numpy(), stored[id(t)])
            else:
                name = graph.constant(t.numpy(), f"{where or 'graph'}.constant")
            values[id(t)] = name
        return name

    def call_input(call: ModuleCall, t: Tensor) -> tuple[str, bool]:
        """The value name of a whole-module call's argument, and whether it depends on the
        graph's inputs."""
        node = call.input_nodes.get(id(t))
        if node is None:
            return leaf(t, call.path), dependent.get(id(t), False)
        if id(node) not in values:
            raise OnnxExporterError(
                f"export: an argument of {call.where} was made by an op the export has not "
                "converted before the call"
            )
        return values[id(node)], dependent[id(node)]

    inside: dict[int, ModuleCall] = {}
    for call in names.calls if names is not None else ():
        inside.update(dict.fromkeys(call.inside, call))
    converted: set[int] = set()
    nodes = recorded_nodes(outputs, names.calls if names is not None else ())
    results: dict[int, Any] = {}  # a node's output array, as its users (or the outputs) saw it
    for node in nodes:
        for parent, array in zip(record_of(node)[1], record_of(node)[2]):
            if _is_node(parent):
                results[id(parent)] = array
    for t in outputs:
        if node_of(t) is not None:
            results[id(node_of(t))] = t._data
    for call in names.calls if names is not None else ():
        for t in _tensors((call.args, call.kwargs)):
            if call.input_nodes.get(id(t)) is not None:
                results.setdefault(id(call.input_nodes[id(t)]), t._data)
    for node in nodes:
        call = inside.get(id(node))
        if call is not None:  # recorded inside a module converted as a whole
            if id(call) not in converted:
                converted.add(id(call))
                info = CallInfo(graph, call, lambda t, c=call: call_input(c, t), dynamic_batch)
                made = MODULE_CONVERTERS[type(call.module)](info)
                depends = any(info.dependent)
                for t, name in made:
                    made_by = node_of_output(call, t)
                    if made_by is not None:
                        values[id(made_by)], dependent[id(made_by)] = name, depends
            continue
        op, parents, arrays = record_of(node)
        path, where = names.describe(node) if names is not None else ("", "")
        info = NodeInfo(graph, op, arrays, results[id(node)], where, path)
        info.dynamic_batch = dynamic_batch
        for parent, array in zip(parents, arrays):
            constant = None
            if parent is None:
                info.sources.append(array)
                info.dependent.append(False)
                constant = array
            elif isinstance(parent, Tensor):
                info.sources.append(leaf(parent, info.module_path))
                info.dependent.append(dependent.get(id(parent), False))
                if id(parent) not in stored and id(parent) not in dependent:
                    constant = array
            elif id(parent) not in values:
                raise OnnxExporterError(
                    f"export: the op {op.name!r}{info.ran_in()} uses a value made inside "
                    f"{inside[id(parent)].where}, which is exported as a whole: only what it "
                    "returns has an ONNX value"
                )
            else:
                info.sources.append(values[id(parent)])
                info.dependent.append(dependent[id(parent)])
            info.constants.append(constant)
        dependent[id(node)] = any(info.dependent)
        if dynamic_batch:
            _refuse_batch_constants(info)
        converter = CONVERTERS.get(type(op))
        if converter is None:
            raise UnsupportedOperatorError(
                f"export: the op {op.name!r} ({type(op).__name__}){info.ran_in()} has no ONNX "
                "mapping in tensorgrad.onnx; the model cannot be exported"
            )
        values[id(node)] = converter(info)
    graph_outputs = []
    for t, name in zip(outputs, out_names):
        node = node_of(t)
        if not (dependent.get(id(node), False) if node is not None else id(t) in dependent):
            raise OnnxExporterError(
                f"export: the output {name!r} does not depend on the inputs in what the forward "
                "pass recorded (what is computed outside tensorgrad's ops, through .numpy() or "
                ".item(), is a constant to it), so it would be exported as a constant"
            )
        source = values[id(node)] if node is not None else leaf(t, "")
        graph.nodes.append(
            onnx.helper.make_node("Identity", [source], [name], name=graph.fresh(f"/{name}"))
        )
        graph_outputs.append(value_info(onnx, name, t.numpy(), dynamic.get(name, {})))
    graph_inputs = [
        value_info(onnx, n, t.numpy(), dynamic.get(n, {})) for t, n in zip(inputs, in_names)
    ]
    title = type(model).__name__ if names is not None else getattr(model, "__name__", "model")
    proto_graph = onnx.helper.make_graph(
        graph.nodes, title, graph_inputs + extra_inputs, graph_outputs, graph.initializers
    )
    proto = onnx.helper.make_model(
        proto_graph,
        opset_imports=[onnx.helper.make_opsetid("", graph.opset)],
        producer_name="tensorgrad",
        producer_version=tg.__version__,
    )
    # the oldest IR version that holds this opset, so that older runtimes read the file
    proto.ir_version = onnx.helper.find_min_ir_version_for(list(proto.opset_import))
    return proto


def node_of_output(call: ModuleCall, tensor: Tensor) -> Any:
    """The node that made ``tensor``, one of ``call``'s results, when the call returned."""
    for t, node in zip(call.outputs, call.output_nodes):
        if t is tensor:
            return node
    raise OnnxExporterError(f"export: {call.where} did not return this tensor")


# ----------------------------------------------------------------------------- the check run
_NOT_SETTINGS = frozenset({"saved", "needs_input_grad", "inputs", "parents", "_seq"})


def _same(a: Any, b: Any) -> bool:
    """Whether two op settings or constants are equal (arrays by value, NaNs equal)."""
    if isinstance(a, Tensor) or isinstance(b, Tensor):
        return a is b or (
            isinstance(a, Tensor) and isinstance(b, Tensor) and _same(a._data, b._data)
        )
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
            return False
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return a is b


def _recorded_constants(inputs: list[Tensor], outputs: list[Tensor], names: Any) -> list:
    """What one run would freeze into the file, in recording order: per node outside the
    whole-module calls, ``(label, op type, op settings, constant inputs)``, and per such
    call its arguments that are neither the graph's inputs nor recorded values. Leaves are
    kept as Tensors (a parameter is the same object in both runs)."""
    given = {id(t): k for k, t in enumerate(inputs)}
    skip: set[int] = set()
    items: list = []
    for call in names.calls if names is not None else ():
        skip |= call.inside
        fixed = [t for t in _tensors((call.args, call.kwargs)) if call.input_nodes[id(t)] is None]
        items.append((call.where, type(call.module), {}, [given.get(id(t), t) for t in fixed]))
    for node in recorded_nodes(outputs, names.calls if names is not None else ()):
        if id(node) in skip:
            continue
        op, parents, arrays = record_of(node)
        where = names.describe(node)[1] if names is not None else ""
        settings = {k: v for k, v in vars(op).items() if k not in _NOT_SETTINGS}
        constants = []
        for k, (parent, array) in enumerate(zip(parents, arrays)):
            if parent is None:
                constants.append((k, array))
            elif isinstance(parent, Tensor):
                known = ("input", given[id(parent)]) if id(parent) in given else parent
                constants.append((k, known))
        items.append((where, type(op), settings, constants))
    return items


def _same_constants(first: tuple, second: tuple, model: Any) -> None:
    """Refuse an export whose constants changed when the model ran on other input values."""
    one, two = _recorded_constants(*first), _recorded_constants(*second)
    for k, (a, b) in enumerate(zip(one, two)):
        where, kind, settings, constants = a
        label = f", run by {where}," if where else ""
        if kind is not b[1] or len(constants) != len(b[3]) or settings.keys() != b[2].keys():
            raise OnnxExporterError(
                "export: the forward pass recorded other ops for other input values "
                f"({kind.__name__}{label} at step {k}, then {b[1].__name__}): it branches on the "
                "inputs' values, which one ONNX graph cannot follow"
            )
        changed = [key for key in settings if not _same(settings[key], b[2][key])]
        changed += [f"input {c[0]}" for c, d in zip(constants, b[3]) if not _same(c, d)]
        if changed:
            name = getattr(kind, "name", kind.__name__)
            raise OnnxExporterError(
                f"export: {name!r} ({kind.__name__}){label} holds a constant "
                f"({', '.join(map(str, changed))}) that changed when the export ran the model "
                "again on other input values: it is "
                "computed from the inputs outside what tensorgrad records (a comparison, "
                ".numpy(), .item()) or it is random, and it would be frozen into the file"
            )
    if len(one) != len(two):
        raise OnnxExporterError(
            "export: the forward pass recorded another number of ops for other input values: "
            "it branches on the inputs' values, which one ONNX graph cannot follow"
        )


def _refuse_batch_constants(info: NodeInfo) -> None:
    """A constant shaped like a batch-dependent operand (a dropout mask, ``zeros(n, ...)``)
    would be wrong for any other batch size: with a dynamic batch axis, refuse it."""
    shapes = [np.shape(a) for a, d in zip(info.arrays, info.dependent) if d]
    for source in info.constants:
        if not isinstance(source, np.ndarray) or source.ndim == 0:
            continue
        for shape in shapes:
            if len(shape) == source.ndim and shape[0] == source.shape[0] != 1:
                raise OnnxExporterError(
                    f"export: the op {info.op.name!r}{info.ran_in()} takes a constant of shape "
                    f"{source.shape}, whose first axis is the batch's: it would be wrong for "
                    "other batch sizes, and the batch axis is dynamic (make it a buffer of the "
                    "model, or export with a fixed batch)"
                )
