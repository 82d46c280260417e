"""``export``: run the model, recording, and turn the recorded graph into an ONNX model.

How it works:

1. ``args`` are copied into fresh leaf tensors that are recorded through: floating ones
   require grad, integer ones (token indices) are marked as if they did, and so are frozen
   parameters, for the export's runs only (tensorgrad records only where a gradient will be
   needed). The model runs under ``tg.enable_grad()``, in its current mode (``model.eval()``
   first for inference: batch norm's running statistics, dropout off). Each module's
   ``forward`` is wrapped for the run, so that every recorded node is known by the module
   that ran it, and the calls of the modules converted as a whole
   (:mod:`tensorgrad.onnx.modules`: embeddings, recurrent layers) are kept with their
   arguments and results.
2. The model runs a second time, on other values and other sizes along the dynamic axes
   (:mod:`tensorgrad.onnx.second_run`); its nodes are paired with the first run's. A third
   run checks the written graph in ONNX Runtime (step 5). The buffers are restored after the
   first run, so that running statistics move once.
3. The nodes reachable from the outputs are collected without recursion and taken in
   recording order (every node was recorded after the nodes it was computed from).
4. Each node's op goes to its converter (:mod:`tensorgrad.onnx.converters`, by exact op type),
   which adds ONNX nodes; a whole-module call's inner nodes are skipped and the call goes to
   its module's converter instead. Leaves are the graph's inputs (the copies of ``args``) or
   initializers (parameters and buffers under their ``state_dict`` names, other constants
   under the module's name). An op with no converter raises ``UnsupportedOperatorError``; a
   constant or setting that differs in the second run, and that no converter made follow a
   dynamic size, raises ``OnnxExporterError``.
5. ``onnx.checker.check_model`` checks the result, and ONNX Runtime runs it on the third
   run's inputs (where installed), before it is written (atomically).

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
from tensorgrad.core.pytree import tree_flatten, tree_unflatten
from tensorgrad.core.tensor import Tensor
from tensorgrad.onnx import second_run
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

    The model runs three times: on ``args``, recorded into the graph; on other values (and
    other sizes along the dynamic axes), to find what follows the dynamic sizes and to check
    that every constant the file would hold is the same in both runs; and once more, to check
    the file in ONNX Runtime where it is installed (:mod:`tensorgrad.onnx.second_run`; with
    ``export_params=False`` the file has no weights to run with, and is not run).

    Raises ``UnsupportedOperatorError`` for an op with no ONNX mapping, naming the op and the
    module that ran it, and ``OnnxExporterError`` for a constant that came from the inputs
    or a forward that branches on them; ``onnx.checker`` checks the model before anything is
    written."""
    onnx = onnx_package()
    opset = DEFAULT_OPSET if opset_version is None else int(opset_version)
    newest = onnx.defs.onnx_opset_version()
    if not MIN_OPSET <= opset <= newest:
        raise ValueError(
            f"export: opset_version {opset_version} is not supported: tensorgrad writes opsets "
            f"{MIN_OPSET} to {newest} (the installed onnx's newest)"
        )
    positional, keywords = _split_args(args, kwargs)
    positional, structure = tree_flatten(list(positional))  # (h, c): two graph inputs
    copies = [_copy(v, f"args[{i}]") for i, v in enumerate(positional)]
    keyword_copies = {k: _copy(v, f"kwargs[{k!r}]") for k, v in keywords.items()}
    inputs = copies + list(keyword_copies.values())
    in_names = _names(input_names, len(inputs), "input")
    is_module = hasattr(model, "named_modules")
    if is_module:
        _refuse_training_dropout(model)
    first = _run(model, inputs, copies, keyword_copies, structure)
    outputs = first.outputs
    out_names = _names(output_names, len(outputs), "output")
    if set(in_names) & set(out_names):
        raise ValueError(f"export: a name is both an input and an output: {in_names}, {out_names}")
    ranks = {n: t.ndim for n, t in zip(in_names, inputs)} | {
        n: t.ndim for n, t in zip(out_names, outputs)
    }
    dynamic = _dynamic(dynamic_axes, ranks)
    with _buffers_kept(model):  # the runs after the first change no running statistics
        second = _other_run(model, copies, keyword_copies, in_names, dynamic, 2, structure)
        graph = Graph(onnx, opset)
        graph.taken.update(in_names + out_names)
        proto = _build(graph, model, first, second, in_names, out_names, dynamic, export_params)
        onnx.checker.check_model(proto)
        data = proto.SerializeToString()
        if export_params:
            third = _other_run(model, copies, keyword_copies, in_names, dynamic, 3, structure)
            sizes = second_run.other_shapes(inputs, in_names, dynamic, 3)[1]
            second_run.check_with_runtime(data, in_names, third.inputs, third.outputs,
                                          out_names, sizes)  # fmt: skip
    if verbose:
        print(onnx.helper.printable_graph(proto.graph))
    if hasattr(f, "write"):
        f.write(data)
    else:
        from tensorgrad.serialization import write_atomically

        write_atomically(f, data)


class _Run:
    """One run of the model: its inputs (the copies), outputs, the modules that made each
    node (None for a plain function), and the nodes in recording order."""

    def __init__(self, inputs: list[Tensor], outputs: list[Tensor], names: Any) -> None:
        self.inputs, self.outputs, self.names = inputs, outputs, names
        self.calls: list[ModuleCall] = names.calls if names is not None else []
        self.nodes = recorded_nodes(outputs, self.calls)
        self.inside: dict[int, ModuleCall] = {}
        for call in self.calls:
            self.inside.update(dict.fromkeys(call.inside, call))
        #: the nodes outside the whole-module calls: the second run's are paired with these
        self.outside = [n for n in self.nodes if id(n) not in self.inside]
        self.results: dict[int, Any] = {}  # a node's output, as its users (or outputs) saw it
        for node in self.nodes:
            for parent, array in zip(record_of(node)[1], record_of(node)[2]):
                if _is_node(parent):
                    self.results[id(parent)] = array
        for t in outputs:
            if node_of(t) is not None:
                self.results[id(node_of(t))] = t._data
        for call in self.calls:
            for t in _tensors((call.args, call.kwargs)):
                if call.input_nodes.get(id(t)) is not None:
                    self.results.setdefault(id(call.input_nodes[id(t)]), t._data)


def _run(
    model: Any,
    inputs: list[Tensor],
    copies: list[Tensor],
    keyword_copies: dict[str, Tensor],
    structure: Any = None,
) -> _Run:
    """Run the model once on the copies, recording."""
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
            if structure is not None:
                args_in = tree_unflatten(args_in, structure)
            kwargs_in = {k: c.clone() for k, c in keyword_copies.items()}
            result = model(*args_in, **kwargs_in)
    finally:
        _exporting = False
        for parameter in frozen:
            parameter._requires_grad = False
    outputs = _flattened(result)
    if outputs is None:
        raise OnnxExporterError(
            "export: the model must return a Tensor or (nested) tuples of Tensors, got "
            f"{type(result).__name__}"
        )
    return _Run(inputs, outputs, names)


def _flattened(result: Any) -> list[Tensor] | None:
    """The Tensors of a Tensor or of nested tuples and lists of them, in order, as the
    graph's outputs (``(output, (h_n, c_n))`` gives three); None for anything else."""
    flat: list[Tensor] = []
    stack = [result]
    while stack:
        item = stack.pop()
        if isinstance(item, Tensor):
            flat.append(item)
        elif isinstance(item, (tuple, list)):
            stack.extend(reversed(item))
        else:
            return None
    return flat


@contextlib.contextmanager
def _buffers_kept(model: Any) -> Iterator[None]:
    """The model's buffers as they were on entry, again on exit (a batch norm in training
    mode updates its running statistics in every run)."""
    kept = [(b, b._data.copy()) for b in model.buffers() if b is not None] if hasattr(
        model, "buffers") else []  # fmt: skip
    try:
        yield
    finally:
        for buffer, data in kept:
            if buffer._data.shape == data.shape:
                np.copyto(buffer._data, data)


def _other_run(
    model: Any,
    copies: list[Tensor],
    keyword_copies: dict[str, Tensor],
    in_names: list[str],
    dynamic: dict[str, dict[int, str]],
    run: int,
    structure: Any = None,
) -> _Run:
    """The model once more, on other values and sizes (:mod:`tensorgrad.onnx.second_run`):
    the second run (``run=2``) or the third, ONNX Runtime's check (``run=3``)."""
    inputs = copies + list(keyword_copies.values())
    shapes, sizes = second_run.other_shapes(inputs, in_names, dynamic, run)
    rng = np.random.default_rng(run)
    others = [_copy(second_run.other_values(t, shape, rng), "") for t, shape in zip(inputs, shapes)]
    positional = others[: len(copies)]
    keywords = dict(zip(keyword_copies, others[len(copies) :]))
    try:
        return _run(model, others, positional, keywords, structure)
    except Exception as exc:
        if not sizes:
            raise
        other = ", ".join(f"{label} {b} instead of {a}" for label, (a, b) in sizes.items())
        raise OnnxExporterError(
            "export: to find what follows the dynamic axes, the export runs the model again "
            f"with other sizes ({other}), and that run failed: {type(exc).__name__}: {exc}"
        ) from exc


def _branches(where: str, step: int, kind: str, other: str) -> OnnxExporterError:
    label = f", run by {where}," if where else ""
    return OnnxExporterError(
        f"export: the forward pass recorded other ops for other input values ({kind}{label} "
        f"at step {step}, then {other}): it branches on the inputs' values, which one ONNX "
        "graph cannot follow"
    )


def _changed_constant(what: str, where: str, changed: list[str], sizes: bool) -> Exception:
    label = f", run by {where}," if where else ""
    other = "values and sizes along the dynamic axes" if sizes else "values"
    return OnnxExporterError(
        f"export: {what}{label} holds a constant ({', '.join(changed)}) that changed when the "
        f"export ran the model again with other input {other}: it is computed from the inputs "
        "outside what tensorgrad records (a comparison, .numpy(), .item(), a size turned into "
        "a number the graph cannot follow) or it is random, and it would be frozen into the "
        "file"
    )


def _build(
    graph: Graph,
    model: Any,
    first: _Run,
    second: _Run,
    in_names: list[str],
    out_names: list[str],
    dynamic: dict[str, dict[int, str]],
    export_params: bool,
) -> Any:
    onnx = graph.onnx
    names, inputs, outputs = first.names, first.inputs, first.outputs
    values: dict[int, str] = {id(t): n for t, n in zip(inputs, in_names)}
    stored: dict[int, str] = {}
    if names is not None:
        stored = {id(p): n for n, p in model.named_parameters()}
        stored |= {id(b): n for n, b in model.named_buffers() if b is not None}
    extra_inputs: list[Any] = []
    dependent: dict[int, bool] = {id(t): True for t in inputs}
    dynamic_batch = any(0 in dynamic.get(n, {}) for n in in_names)
    sizes = second_run.Sizes(graph, inputs, second.inputs, in_names, dynamic)
    given = {id(t): k for k, t in enumerate(inputs)}
    other_given = {id(t): k for k, t in enumerate(second.inputs)}

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

    def is_constant_leaf(t: Any) -> bool:
        return isinstance(t, Tensor) and id(t) not in stored and id(t) not in given

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

    def convert_call(call: ModuleCall, twin: ModuleCall | None) -> None:
        if twin is None or type(twin.module) is not type(call.module):
            raise _branches(call.where, 0, type(call.module).__name__, "another module")
        mine = list(_tensors((call.args, call.kwargs)))
        theirs = list(_tensors((twin.args, twin.kwargs)))
        if len(mine) != len(theirs):
            raise _branches(call.where, 0, type(call.module).__name__, "other arguments")
        for k, (t, o) in enumerate(zip(mine, theirs)):
            if call.input_nodes[id(t)] is not None or not is_constant_leaf(t):
                continue
            if id(t) not in values and not second_run.same(t._data, o._data):
                tracked = sizes.tracked(t._data, o._data)
                if tracked is None:
                    raise _changed_constant(
                        type(call.module).__name__, call.where, [f"argument {k}"], bool(sizes)
                    )
                values[id(t)] = tracked
        info = CallInfo(graph, call, lambda t: call_input(call, t), dynamic_batch)
        made = MODULE_CONVERTERS[type(call.module)](info)
        depends = any(info.dependent)
        for t, name in made:
            made_by = node_of_output(call, t)
            if made_by is not None:
                values[id(made_by)], dependent[id(made_by)] = name, depends

    twins = dict(zip(map(id, first.outside), second.outside))
    call_twins = dict(zip(map(id, first.calls), second.calls))
    converted: set[int] = set()
    step = 0
    for node in first.nodes:
        call = first.inside.get(id(node))
        if call is not None:  # recorded inside a module converted as a whole
            if id(call) not in converted:
                converted.add(id(call))
                convert_call(call, call_twins.get(id(call)))
            continue
        step += 1
        op, parents, arrays = record_of(node)
        path, where = names.describe(node) if names is not None else ("", "")
        twin = twins.get(id(node))
        if twin is None or type(record_of(twin)[0]) is not type(op):
            other = "nothing" if twin is None else type(record_of(twin)[0]).__name__
            raise _branches(where, step, type(op).__name__, other)
        other_op, other_parents, other_arrays = record_of(twin)
        info = NodeInfo(graph, op, arrays, first.results[id(node)], where, path)
        info.dynamic_batch = dynamic_batch
        info.other_arrays, info.other_output = other_arrays, second.results[id(twin)]
        info.other_op = other_op
        info.sizes = sizes
        settings, other_settings = second_run.settings_of(op), second_run.settings_of(other_op)
        if settings.keys() != other_settings.keys():
            raise _branches(where, step, type(op).__name__, "other settings")
        info.changed = {k for k in settings if not second_run.same(settings[k], other_settings[k])}
        changed: list[str] = []
        for k, (parent, array) in enumerate(zip(parents, arrays)):
            source, depends, constant = None, False, None
            if parent is None or is_constant_leaf(parent):
                other = other_parents[k] if k < len(other_parents) else None
                if _is_node(other) or (isinstance(other, Tensor) and id(other) in other_given):
                    raise _branches(where, step, type(op).__name__, "a value for a constant")
                mine = array if parent is None else parent._data
                theirs = other_arrays[k] if other is None else other._data
                if id(parent) in values or second_run.same(mine, theirs):  # a true constant
                    source = array if parent is None else leaf(parent, info.module_path)
                    constant = array if parent is None or id(parent) not in dependent else None
                else:  # it follows a dynamic size, or it is refused
                    source = sizes.tracked(mine, theirs) if isinstance(mine, np.ndarray) else None
                    if source is None:
                        changed.append(f"input {k}")
            elif isinstance(parent, Tensor):  # a parameter, a buffer, a graph input
                source, depends = leaf(parent, info.module_path), dependent.get(id(parent), False)
            elif id(parent) not in values:
                raise OnnxExporterError(
                    f"export: the op {op.name!r}{info.ran_in()} uses a value made inside "
                    f"{first.inside[id(parent)].where}, which is exported as a whole: only what "
                    "it returns has an ONNX value"
                )
            else:
                source, depends = values[id(parent)], dependent[id(parent)]
            info.sources.append(source)
            info.dependent.append(depends)
            info.constants.append(constant)
        dependent[id(node)] = any(info.dependent)
        converter = CONVERTERS.get(type(op))
        if converter is None:
            raise UnsupportedOperatorError(
                f"export: the op {op.name!r} ({type(op).__name__}){info.ran_in()} has no ONNX "
                "mapping in tensorgrad.onnx; the model cannot be exported"
            )
        if changed:  # refused; the converter first, whose refusal of a setting says more
            try:
                converter(info)
            except UnsupportedOperatorError:
                raise
            except Exception:  # it could not run without the refused input
                pass
            raise _changed_constant(f"{op.name!r} ({type(op).__name__})", where, changed,
                                    bool(sizes))  # fmt: skip
        values[id(node)] = converter(info)
        unexplained = sorted(info.changed - info.explained)
        if unexplained:
            raise _changed_constant(f"{op.name!r} ({type(op).__name__})", where,
                                    [f"its {k}" for k in unexplained], bool(sizes))  # fmt: skip
    if len(first.outside) != len(second.outside) or len(first.calls) != len(second.calls):
        raise OnnxExporterError(
            "export: the forward pass recorded another number of ops for other input values: "
            "it branches on the inputs' values, which one ONNX graph cannot follow"
        )
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
