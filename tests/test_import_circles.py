"""No two modules of tensorgrad import each other, directly or around a circle, counting the
imports made inside functions too (what ``../shared/tools/layers.py`` reports as "circles
inside one room"): a circle means neither module can be understood, or imported, alone."""

from __future__ import annotations

import ast
from pathlib import Path

import tensorgrad

PACKAGE = Path(tensorgrad.__file__).parent


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports() -> dict[str, set[str]]:
    """Each module's imports of other tensorgrad modules (``from a import b`` counts as
    ``a.b`` where that is a module, else as ``a``; a package's ``__init__`` importing its own
    modules is no circle with them)."""
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join([*package[: len(package) - node.level + 1], base]).strip(".")
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    targets.add(full if full in files else base)
        resolved = set()
        for target in targets:
            while target and target not in files:
                target = target.rpartition(".")[0]
            if target and target != name and target != "tensorgrad":
                resolved.add(target)
        graph[name] = resolved
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_module_imports_itself_around_a_circle():
    assert _circles(_imports()) == []


def test_the_circle_finder_finds_one():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
