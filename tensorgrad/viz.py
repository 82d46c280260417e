"""Draw a computation graph: Graphviz DOT text of a scalar ``Value`` graph or a tensor graph.

``to_dot(root)`` returns the DOT text; ``render(root, path)`` writes it and, when Graphviz's
``dot`` program is installed, the picture. Values and tensors are drawn as boxes, the ops that
made them as ellipses, with edges from inputs to op to output.

Tensors are duck-typed, so this module imports neither NumPy nor the tensor engine: anything
with a ``_node`` attribute is a tensor; ``_node`` is the node (the record of the op's call)
that made it, None for a leaf. A node's ``op`` is its op, drawn by its class name; its
``parents`` hold one entry per input: the node that made it, a leaf tensor, or None for a
constant; its ``out`` is its output array. ``parents`` is None once a backward pass has
freed the graph; the drawing stops there.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path

from tensorgrad.scalar import Value


def to_dot(root: object) -> str:
    """DOT text of the graph that computed ``root``, a ``Value`` or a tensor."""
    if isinstance(root, Value):
        return _value_dot(root)
    if hasattr(root, "_node"):
        return _tensor_dot(root)
    raise TypeError(f"to_dot expects a Value or a tensor, got {type(root).__name__}")


def render(root: object, path: str | os.PathLike[str], format: str = "svg") -> Path:
    """Write ``<path>.dot`` and, with Graphviz's ``dot``, ``<path>.<format>``; return the latter.

    A ``path`` that already ends in ``.<format>`` is used as it is. Files are written to a
    temporary name and then renamed, so a failure leaves no partial file. Without ``dot`` on
    PATH the DOT file is still written, and a RuntimeError says how to install Graphviz.
    """
    if not format.isalnum():
        raise ValueError(f"format must be a Graphviz output format such as svg, got {format!r}")
    path = Path(path)
    base = path.with_name(path.stem) if path.suffix == f".{format}" else path
    dot_path = base.with_name(f"{base.name}.dot")
    out_path = base.with_name(f"{base.name}.{format}")
    _write_atomic(dot_path, lambda tmp: tmp.write_text(to_dot(root), encoding="utf-8"))
    dot = shutil.which("dot")
    if dot is None:
        raise RuntimeError(
            f"Graphviz's `dot` program was not found, so no {format} file was made; the DOT "
            f"text was written to {dot_path}. Install Graphviz (apt-get install graphviz, or "
            f"brew install graphviz), or run: dot -T{format} {dot_path} -o {out_path}"
        )

    def run_dot(tmp: Path) -> None:
        done = subprocess.run(
            [dot, f"-T{format}", str(dot_path), "-o", str(tmp)],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"dot failed (exit {done.returncode}): {done.stderr.strip()}")

    _write_atomic(out_path, run_dot)
    return out_path


def _write_atomic(path: Path, write: Callable[[Path], object]) -> None:
    """Have ``write`` fill a temporary file next to ``path``, then rename it into place."""
    # A fresh name rather than mkstemp's file, which would keep mode 0600 after the rename.
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _walk(root: object, inputs_of: Callable[[object], Iterable[object]]) -> list[object]:
    """Every node reachable from ``root``, in discovery order, each once (iterative)."""
    seen = {id(root)}
    order, stack = [], [root]
    while stack:
        node = stack.pop()
        order.append(node)
        for parent in reversed(tuple(inputs_of(node))):  # reversed: first input found first
            if id(parent) not in seen:
                seen.add(id(parent))
                stack.append(parent)
    return order


def _quote(lines: Iterable[str]) -> str:
    """A DOT string literal: the lines joined by DOT's newline escape."""
    escaped = (line.replace("\\", "\\\\").replace('"', '\\"') for line in lines)
    return '"' + "\\n".join(escaped) + '"'


def _num(x: float) -> str:
    return f"{x:.6g}"


_HEADER = [
    "digraph tensorgrad {",
    "  rankdir=LR;",
    '  node [fontname="Helvetica", fontsize=10];',
]


def _value_dot(root: Value) -> str:
    nodes = _walk(root, lambda v: v._children)
    ids = {id(v): f"v{i}" for i, v in enumerate(nodes)}
    lines = list(_HEADER)
    for v in nodes:
        name = ids[id(v)]
        label = [v.label] if v.label else []
        label += [f"data {_num(v.data)}", f"grad {_num(v.grad)}"]
        extra = ", penwidth=2" if v is root else ""
        lines.append(f"  {name} [shape=box, label={_quote(label)}{extra}];")
        if v._children:
            lines.append(f"  {name}_op [shape=ellipse, label={_quote([v._op])}];")
            lines.append(f"  {name}_op -> {name};")
            lines.extend(f"  {ids[id(child)]} -> {name}_op;" for child in v._children)
    lines.append("}")
    return "\n".join(lines) + "\n"


def _graph_inputs(item: object) -> tuple:
    """The graph items an item was computed from: a node's parents (nodes and leaf tensors);
    for a tensor made by a node, that node; nothing for a leaf."""
    if hasattr(item, "_node"):  # a tensor
        return () if item._node is None else (item._node,)
    parents = getattr(item, "parents", None)
    return tuple(p for p in parents if p is not None) if parents else ()


def _tensor_label(t: object) -> list[str]:
    """dtype and shape; for a 0-d tensor its value; its gradient's value or shape if it has one."""
    shape = tuple(getattr(t, "shape", ()))
    label = [f"{getattr(t, 'dtype', '?')} {shape}"]
    value = _scalar(getattr(t, "data", None)) if shape == () else None
    if value is not None:
        label.append(f"data {value}")
    grad = getattr(t, "grad", None)
    if grad is not None:
        grad_value = _scalar(getattr(grad, "data", grad)) if shape == () else None
        label.append(f"grad {grad_value}" if grad_value is not None else f"grad {shape}")
    return label


def _scalar(x: object) -> str | None:
    try:
        return _num(float(x))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def _tensor_dot(root: object) -> str:
    items = _walk(root, _graph_inputs)
    ids = {id(item): f"t{i}" for i, item in enumerate(items)}
    lines = list(_HEADER)
    constants = 0
    for item in items:
        name = ids[id(item)]
        if hasattr(item, "_node"):  # a tensor: a box (a leaf's in blue when it wants a grad)
            style = ", penwidth=2" if item is root else ""
            if item._node is None and getattr(item, "requires_grad", False):
                style += ', style=filled, fillcolor="lightblue"'
            lines.append(f"  {name} [shape=box, label={_quote(_tensor_label(item))}{style}];")
            if item._node is not None:
                lines.append(f"  {ids[id(item._node)]}_op -> {name};")
            continue
        parents = getattr(item, "parents", None)  # a node: its op, and its output if no tensor
        if parents is None:
            op_label = [type(item.op).__name__, "(graph freed by backward)"]
            lines.append(f"  {name}_op [shape=ellipse, style=dashed, label={_quote(op_label)}];")
        else:
            label = _quote([type(item.op).__name__])
            lines.append(f"  {name}_op [shape=ellipse, label={label}];")
        out = getattr(item, "out", None)
        if not (hasattr(root, "_node") and root._node is item):
            label = [f"{getattr(out, 'dtype', '?')} {tuple(getattr(out, 'shape', ()))}"]
            lines.append(f"  {name} [shape=box, label={_quote(label)}];")
            lines.append(f"  {name}_op -> {name};")
        for parent in parents or ():
            if parent is None:
                constant = f"c{constants}"
                constants += 1
                lines.append(f'  {constant} [shape=plaintext, label="const"];')
                lines.append(f"  {constant} -> {name}_op [style=dotted];")
            else:
                lines.append(f"  {ids[id(parent)]} -> {name}_op;")
    lines.append("}")
    return "\n".join(lines) + "\n"
