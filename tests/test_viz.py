"""Tests of the Graphviz DOT export: the DOT text of scalar and tensor graphs, and rendering
with Graphviz present, absent, failing (a fake ``dot``), and for real when it is installed."""

from __future__ import annotations

import ast
import os
import re
import shutil
import stat
import sys
from pathlib import Path

import pytest

from tensorgrad import viz
from tensorgrad.scalar import Value
from tensorgrad.viz import render, to_dot

ROOT = Path(__file__).resolve().parents[1]


def node_lines(dot: str) -> list[str]:
    return [line for line in dot.splitlines() if "[shape=" in line]


def edge_lines(dot: str) -> list[str]:
    return [line for line in dot.splitlines() if "->" in line]


def a_b_a() -> Value:
    a, b = Value(2.0, label="a"), Value(3.0, label="b")
    L = a * b * a
    L.backward()
    return L


# -- scalar graphs ---------------------------------------------------------------------------


def test_value_graph_nodes_edges_and_labels():
    dot = to_dot(a_b_a())
    assert dot.startswith("digraph tensorgrad {") and dot.rstrip().endswith("}")
    # 4 values (a, b, a*b, L) + 2 op nodes; edges: op -> output twice, 4 inputs into the ops
    assert len(node_lines(dot)) == 6
    assert len(edge_lines(dot)) == 6
    assert '"a\\ndata 2\\ngrad 12"' in dot
    assert '"b\\ndata 3\\ngrad 4"' in dot
    assert '"data 6\\ngrad 2"' in dot
    assert '"data 12\\ngrad 1", penwidth=2' in dot  # the root is drawn bold
    assert dot.count('label="*"') == 2


def test_a_value_used_twice_by_one_op_gets_two_edges():
    a = Value(3.0, label="a")
    dot = to_dot(a * a)
    assert len(node_lines(dot)) == 3
    assert edge_lines(dot).count("  v1 -> v0_op;") == 2


def test_labels_are_escaped():
    dot = to_dot(Value(1.0, label='say "hi" \\ bye') + 1)
    assert 'say \\"hi\\" \\\\ bye' in dot


def test_deep_value_graph_needs_no_recursion():
    v = Value(0.0)
    for _ in range(5000):
        v = v + 1
    assert len(node_lines(to_dot(v))) == 5001 + 5000


def test_to_dot_rejects_other_objects():
    with pytest.raises(TypeError, match="expects a Value or a tensor, got int"):
        to_dot(3)


# -- tensor graphs (fakes with the tensor engine's contract) ---------------------------------


class FakeArray:
    def __init__(self, shape):
        self.shape, self.dtype = shape, "float64"


class FakeOp:
    """A node: its op (itself, here), its parents (nodes, leaf tensors, None for constants)
    and its output array."""

    def __init__(self, out_shape, *parents):
        self.op, self.parents, self.out = self, parents, FakeArray(out_shape)


class MatMul(FakeOp):
    pass


class Mul(FakeOp):
    pass


class Sum(FakeOp):
    pass


class FakeTensor:
    def __init__(self, shape, node=None, requires_grad=False, grad=None, data=None):
        self.shape, self._node, self.requires_grad, self.grad = shape, node, requires_grad, grad
        self.dtype = "float64"
        self.data = data


def fake_graph() -> tuple[FakeTensor, FakeTensor]:
    x = FakeTensor((4, 3), requires_grad=True, grad=FakeTensor((4, 3)))
    w = FakeTensor((3, 2), requires_grad=True)
    product = MatMul((4, 2), x, w)
    doubled = Mul((4, 2), product, None)  # z = y * 2
    s = FakeTensor((), node=Sum((), doubled), requires_grad=True, data=1.5)
    return s, x


def test_tensor_graph_nodes_edges_and_labels():
    s, _ = fake_graph()
    dot = to_dot(s)
    # 5 tensors + 3 ops + 1 constant; edges: 3 op -> output, 2 + 2 + 1 inputs
    assert len(node_lines(dot)) == 9
    assert len(edge_lines(dot)) == 8
    for name in ("MatMul", "Mul", "Sum"):
        assert f'label="{name}"' in dot
    assert '"float64 ()\\ndata 1.5", penwidth=2' in dot
    assert '"float64 (4, 3)\\ngrad (4, 3)", style=filled' in dot  # a leaf that requires grad
    assert '"float64 (3, 2)", style=filled' in dot
    assert 'label="const"' in dot and "[style=dotted]" in dot


def test_tensor_graph_stops_where_backward_freed_it():
    s, _ = fake_graph()
    s._node.parents = None
    dot = to_dot(s)
    assert len(node_lines(dot)) == 2
    assert "Sum\\n(graph freed by backward)" in dot and "style=dashed" in dot
    assert edge_lines(dot) == ["  t1_op -> t0;"]


def test_a_leaf_tensor_alone():
    dot = to_dot(FakeTensor((2,), requires_grad=False))
    assert len(node_lines(dot)) == 1 and not edge_lines(dot)


def test_real_tensor_graph_if_available():
    tensor = pytest.importorskip("tensorgrad.core.tensor")
    x = tensor.Tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    w = tensor.Tensor([[0.5], [-1.0]], requires_grad=True)
    loss = ((x @ w) * 2.0).sum()
    dot = to_dot(loss)
    ops = re.findall(r'_op \[shape=ellipse, label="(\w+)"', dot)
    assert len(ops) == 3 and "MatMul" in ops and type(loss._node.op).__name__ in ops
    boxes = [line for line in node_lines(dot) if "shape=box" in line]
    assert len(boxes) == 5  # x, w, x @ w, (x @ w) * 2, the sum
    assert sum("style=filled" in line for line in boxes) == 2  # the leaves x and w
    loss.backward()
    if loss._node.parents is None:  # the graph was freed: the drawing stops at the root's op
        assert "graph freed by backward" in to_dot(loss)
        assert len(node_lines(to_dot(loss))) == 2


# -- rendering -------------------------------------------------------------------------------


FAKE_DOT = """\
import sys
args = sys.argv[1:]
source = open(args[1]).read()
with open(args[args.index("-o") + 1], "w") as out:
    if FAIL:
        out.write("<svg>")  # a partial file, as a crashing program might leave
        sys.exit("Error: syntax error in line 1")
    out.write("<svg>" + source + "</svg>")
"""


def fake_dot(bindir: Path, fail: bool = False) -> None:
    """A stand-in for Graphviz's ``dot``: wraps the DOT text in <svg>, or fails half-way."""
    script = bindir / "dot"
    script.write_text(f"#!{sys.executable}\nFAIL = {fail}\n{FAKE_DOT}")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)


def test_render_without_graphviz_writes_dot_and_says_how_to_install(tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match="`dot` program was not found") as err:
        render(a_b_a(), tmp_path / "graph")
    message = str(err.value)
    assert str(tmp_path / "graph.dot") in message
    assert "apt-get install graphviz" in message and "brew install graphviz" in message
    assert (tmp_path / "graph.dot").read_text() == to_dot(a_b_a())
    assert sorted(os.listdir(tmp_path)) == ["graph.dot"]  # no svg, no temporary files


@pytest.mark.skipif(os.name == "nt", reason="the fake dot is a script with a shebang line")
def test_render_runs_dot_and_writes_atomically(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake_dot(bindir)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    result = render(a_b_a(), out_dir / "graph.svg")
    assert result == out_dir / "graph.svg"
    assert result.read_text() == f"<svg>{to_dot(a_b_a())}</svg>"
    assert sorted(os.listdir(out_dir)) == ["graph.dot", "graph.svg"]
    assert render(a_b_a(), str(out_dir / "other"), format="png") == out_dir / "other.png"


@pytest.mark.skipif(os.name == "nt", reason="the fake dot is a script with a shebang line")
def test_render_failure_leaves_no_partial_file(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake_dot(bindir, fail=True)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    with pytest.raises(RuntimeError, match=r"dot failed \(exit 1\): Error: syntax error"):
        render(a_b_a(), out_dir / "graph")
    assert sorted(os.listdir(out_dir)) == ["graph.dot"]


def test_render_rejects_a_bad_format(tmp_path):
    with pytest.raises(ValueError, match="format must be"):
        render(a_b_a(), tmp_path / "graph", format="svg -o /etc/x")


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_render_real_svg(tmp_path):
    out = render(a_b_a(), tmp_path / "graph")
    assert out == tmp_path / "graph.svg"
    assert "<svg" in out.read_text()


def test_viz_imports_only_stdlib_and_the_scalar_engine():
    tree = ast.parse((ROOT / "tensorgrad" / "viz.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module]
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            assert top in sys.stdlib_module_names or name == "tensorgrad.scalar", name
    assert viz.to_dot is to_dot
