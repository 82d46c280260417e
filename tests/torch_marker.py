"""The ``torch`` marker: every test that compares with PyTorch carries it, so that
``pytest -m torch`` (``make test-torch``) runs exactly the comparisons.

A test is marked when PyTorch appears in what it runs: its function's code (``import torch``,
``pytest.importorskip("torch")``, a global that is a PyTorch object), the helpers, fixtures,
parameters and test-package functions that code reaches, its module's top level, or a
``skipif`` whose reason names PyTorch. That is read from the code objects, not guessed from
text. As a backstop, a test that skips for want of PyTorch without the marker fails: the
PyTorch pass would never run it, so CI's passes without PyTorch catch it the day it lands.
"""

from __future__ import annotations

import inspect
import types
from typing import Any

import pytest

_TEST_PACKAGE = "tests"


def _is_torch_object(value: Any) -> bool:
    """A PyTorch module, or a class or function defined in one."""
    if isinstance(value, types.ModuleType):
        name = value.__name__
    else:
        name = getattr(value, "__module__", None) if callable(value) else None
    return isinstance(name, str) and (name == "torch" or name.startswith("torch."))


def _code_objects(code: types.CodeType):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_objects(const)


def _reaches_torch(obj: Any, seen: set[int]) -> bool:
    """Whether ``obj`` (a function, a class, a fixture, a parameter value) runs PyTorch,
    following the test package's own helpers it names."""
    if id(obj) in seen:
        return False
    seen.add(id(obj))
    if _is_torch_object(obj):
        return True
    if isinstance(obj, (list, tuple)):
        return any(_reaches_torch(o, seen) for o in obj)
    if isinstance(obj, (staticmethod, classmethod)):
        obj = obj.__func__
    if inspect.isclass(obj):
        if not obj.__module__.startswith(_TEST_PACKAGE):
            return False
        return any(_reaches_torch(v, seen) for v in vars(obj).values() if callable(v))
    function = inspect.unwrap(obj) if callable(obj) else None
    code = getattr(function, "__code__", None)
    if code is None or not getattr(function, "__module__", "").startswith(_TEST_PACKAGE):
        return False
    scope = getattr(function, "__globals__", {})
    for part in _code_objects(code):
        for const in part.co_consts:
            if isinstance(const, str) and (const == "torch" or const.startswith("torch.")):
                return True  # pytest.importorskip("torch"), import_module("torch.nn")
        for name in part.co_names:
            if name == "torch":
                return True  # import torch, torch.tensor(...)
            if name in scope and _reaches_torch(scope[name], seen):
                return True
    return any(_reaches_torch(cell.cell_contents, seen) for cell in function.__closure__ or ())


def _module_imports_torch(module: types.ModuleType | None) -> bool:
    return module is not None and any(_is_torch_object(v) for v in vars(module).values())


#: verdicts on the objects many items share (a parametrized test's function, its class and
#: module), by id, each kept with its object so that the id is not reused: collection asks
#: for each of some 40,000 items
_shared_verdicts: dict[tuple[str, int], tuple[Any, bool]] = {}


def _shared(kind: str, obj: Any) -> bool:
    key = (kind, id(obj))
    if key not in _shared_verdicts:
        verdict = _module_imports_torch(obj) if kind == "module" else _reaches_torch(obj, set())
        _shared_verdicts[key] = (obj, verdict)
    return _shared_verdicts[key][1]


def uses_torch(item: pytest.Item) -> bool:
    """Whether a collected test compares with (or otherwise needs) PyTorch."""
    if _shared("module", getattr(item, "module", None)):
        return True
    for mark in item.iter_markers("skipif"):
        if "torch" in str(mark.kwargs.get("reason", "")).lower():
            return True
    if _shared("function", getattr(item, "function", None)):
        return True
    if _shared("class", getattr(item, "cls", None)):
        return True
    seen: set[int] = set()
    definitions = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
    for name in getattr(item, "fixturenames", ()):
        if any(_reaches_torch(d.func, seen) for d in definitions.get(name, ())):
            return True
    params = getattr(getattr(item, "callspec", None), "params", {})
    return any(_reaches_torch(v, seen) for v in params.values())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if uses_torch(item):
            item.add_marker(pytest.mark.torch)


def _skipped_for_torch(report: pytest.TestReport) -> bool:
    if not report.skipped or not isinstance(report.longrepr, tuple):
        return False
    reason = str(report.longrepr[-1]).lower()
    # importorskip's reason, or the suite's own "PyTorch is not installed"
    return "could not import 'torch" in reason or "torch is not installed" in reason


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    outcome = yield
    report = outcome.get_result()
    if _skipped_for_torch(report) and item.get_closest_marker("torch") is None:
        report.outcome = "failed"
        report.longrepr = (
            f"{item.nodeid} skips for want of PyTorch ({report.longrepr[-1]}) but has no "
            "`torch` marker, so `make test-torch` would never run it: tests/torch_marker.py "
            "finds PyTorch in the test's code, its helpers, fixtures and parameters; name it "
            "there (or mark the test with @pytest.mark.torch)"
        )
