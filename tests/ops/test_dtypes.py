"""The dtype tables (PyTorch's OpInfo ``dtypes`` and ``backward_dtypes``): each registry
entry's claim, in ``tests/ops/registry/dtypes.py``, of the dtypes its forward accepts and
those its backward differentiates, checked both ways on every dtype tensorgrad has.

A claimed dtype runs (and, where PyTorch is installed and runs the entry's ``fn``, gives
PyTorch's result dtype); an unclaimed one raises, with PyTorch's error type. Where PyTorch
runs the entry, the claim is checked against what PyTorch's kernel accepts, so the table is
PyTorch's, not a record of what tensorgrad happens to do.

The samples are the entry's first non-empty sample, as values 1 to 4 in integer dtypes (no
division by zero, inside every domain) and True in bool.
"""

from __future__ import annotations

import types
import warnings
from typing import Any

import numpy as np
import pytest

import tensorgrad as tg
from tests.ops.registry import REGISTRY, OpInfo, Sample, outputs
from tests.ops.registry.dtypes import (
    ALL,
    DELIBERATE,
    FLOATING,
    OPEN,
    OPEN_AGAINST_TORCH,
    claim,
)

DTYPES = ALL

#: the errors an unsupported dtype raises, in both libraries
REFUSALS = (TypeError, RuntimeError, NotImplementedError, ValueError)


def dtype_sample(info: OpInfo) -> Sample:
    samples = info.samples()
    return next((s for s in samples if s.size), samples[0])


def _arrays(sample: Sample, dtype: str) -> list[np.ndarray]:
    arrays = sample.arrays(np.float64)
    if dtype == "bool":
        return [np.ones(np.shape(a), dtype=bool) for a in arrays]
    if dtype.startswith(("int", "uint")):
        return [(np.abs(np.round(2 * a)) % 4 + 1).astype(dtype) for a in arrays]
    return [a.astype(dtype) for a in arrays]


def attempt(info: OpInfo, dtype: str, backward: bool) -> str:
    """``"ok:<dtypes>"`` (the results' dtypes, or the gradients' for ``backward``), or
    ``"error:<type>"``: what tensorgrad does with the sample in ``dtype``."""
    sample = dtype_sample(info)
    try:
        tensors = [tg.tensor(a, requires_grad=backward) for a in _arrays(sample, dtype)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            results = outputs(info.call(tensors, sample))
            if not backward:
                return "ok:" + ",".join(str(r.dtype) for r in results)
            recorded = [r for r in results if r.requires_grad]
            tg.backward(recorded, [tg.ones(r.shape, dtype=r.dtype) for r in recorded])
            return "ok:" + ",".join(str(t.grad.dtype) for t in tensors if t.grad is not None)
    except REFUSALS as exc:
        return f"error:{_refusal(exc)}"


def _refusal(exc: Exception) -> str:
    """The PyTorch error type an exception stands for (tensorgrad's ShapeError and the
    like are subclasses of PyTorch's type and of NumPy's)."""
    for kind in (NotImplementedError, RuntimeError, TypeError, ValueError):
        if isinstance(exc, kind):
            return kind.__name__
    return type(exc).__name__


def calls_ops(fn: Any) -> bool:
    """Whether ``fn`` runs a tensorgrad op itself (``_apply(ops.Linear(), ...)``), which no
    renaming turns into PyTorch's."""
    return bool({"_apply", "apply", "ops"} & set(fn.__code__.co_names))


def in_torch(torch: Any, fn: Any) -> Any:
    """``fn`` with the names ``tg`` and ``F`` of its module bound to PyTorch's."""
    scope = {**fn.__globals__, "tg": torch, "F": torch.nn.functional}
    return types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)


def torch_attempt(torch: Any, info: OpInfo, dtype: str, backward: bool) -> str:
    """As :func:`attempt`, in PyTorch; ``"untranslated"`` when the entry's ``fn`` does not
    run there (or gives another result) on its float64 sample."""
    sample = dtype_sample(info)
    try:
        tensors = [torch.tensor(a, requires_grad=backward) for a in _arrays(sample, dtype)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            results = outputs(in_torch(torch, info.fn)(*tensors, **sample.kwargs))
            if not backward:
                return "ok:" + ",".join(str(r.dtype).removeprefix("torch.") for r in results)
            recorded = [r for r in results if r.requires_grad]
            torch.autograd.backward(recorded, [torch.ones_like(r) for r in recorded])
            grads = [t.grad for t in tensors if t.grad is not None]
            return "ok:" + ",".join(str(g.dtype).removeprefix("torch.") for g in grads)
    except Exception as exc:  # a refusal, or a call PyTorch spells otherwise
        return f"error:{_refusal(exc)}"


def translates(torch: Any, info: OpInfo, backward: bool) -> bool:
    """Whether the entry's ``fn`` runs in PyTorch as in tensorgrad on its float64 sample
    (forward, or forward and backward); computed once per entry."""
    key = (info.name, backward)
    if key not in _TRANSLATES:
        _TRANSLATES[key] = _translates(torch, info, backward)
    return _TRANSLATES[key]


_TRANSLATES: dict[tuple[str, bool], bool] = {}


def _translates(torch: Any, info: OpInfo, backward: bool) -> bool:
    """Whether the entry's ``fn`` runs in PyTorch as in tensorgrad on its float64 sample
    (forward, or forward and backward)."""
    if calls_ops(info.fn):
        return False
    sample = dtype_sample(info)
    ours = outputs(info.call(sample.tensors(requires_grad=False), sample))
    try:
        theirs = outputs(
            in_torch(torch, info.fn)(*map(torch.tensor, sample.arrays()), **sample.kwargs)
        )
        theirs = [np.asarray(t.detach().numpy() if hasattr(t, "detach") else t) for t in theirs]
    except Exception:
        return False
    if len(ours) != len(theirs) or not all(
        np.shape(a) == np.shape(b) and np.allclose(a.numpy(), b, equal_nan=True)
        for a, b in zip(ours, theirs)
    ):
        return False
    return not backward or torch_attempt(torch, info, "float64", True).startswith("ok")


def _cases(backward: bool, against_torch: bool = False) -> list[Any]:
    dtypes = FLOATING if backward else DTYPES
    return [
        pytest.param(
            info, dtype, id=f"{info.name}-{dtype}", marks=_marks(info, dtype, against_torch)
        )
        for info in REGISTRY
        if not backward or info.differentiable
        for dtype in dtypes
    ]


def _marks(info: OpInfo, dtype: str, against_torch: bool) -> list[Any]:
    if against_torch and dtype in DELIBERATE.get(info.name, ((), ""))[0]:
        return [pytest.mark.skip(reason=DELIBERATE[info.name][1])]
    for table in (OPEN, OPEN_AGAINST_TORCH) if against_torch else (OPEN,):
        if dtype in table.get(info.name, ((), ""))[0]:
            return [pytest.mark.xfail(reason=table[info.name][1], strict=False)]
    return []


@pytest.mark.parametrize(("info", "dtype"), _cases(backward=False))
def test_forward_dtypes(info, dtype):
    supported = claim(info).forward
    got = attempt(info, dtype, backward=False)
    if dtype in supported:
        assert got.startswith("ok"), f"{info.name} claims {dtype} but refuses it: {got}"
    else:
        assert got.startswith("error"), f"{info.name} does not claim {dtype} but runs: {got}"


@pytest.mark.parametrize(("info", "dtype"), _cases(backward=True))
def test_backward_dtypes(info, dtype):
    supported = claim(info).backward
    got = attempt(info, dtype, backward=True)
    if dtype in supported:
        assert got.startswith("ok"), f"{info.name} claims {dtype} gradients but: {got}"
        assert set(got.removeprefix("ok:").split(",")) <= {dtype}, got
    else:
        assert got.startswith("error"), f"{info.name} does not claim {dtype} but runs: {got}"


@pytest.mark.parametrize(("info", "dtype"), _cases(backward=False, against_torch=True))
def test_forward_dtypes_are_pytorchs(info, dtype):
    torch = pytest.importorskip("torch")
    if not translates(torch, info, backward=False):
        pytest.skip(f"{info.name}'s fn has no PyTorch spelling (the API's fuzz compares it)")
    theirs = torch_attempt(torch, info, dtype, backward=False)
    assert (dtype in claim(info).forward) == theirs.startswith("ok"), (
        f"{info.name} in {dtype}: the table says {sorted(claim(info).forward)}, PyTorch {theirs}"
    )
    assert attempt(info, dtype, backward=False) == theirs  # the result dtype, or error type


@pytest.mark.parametrize(("info", "dtype"), _cases(backward=True, against_torch=True))
def test_backward_dtypes_are_pytorchs(info, dtype):
    torch = pytest.importorskip("torch")
    if not translates(torch, info, backward=True):
        pytest.skip(f"{info.name}'s fn has no PyTorch spelling (the API's fuzz compares it)")
    theirs = torch_attempt(torch, info, dtype, backward=True)
    assert (dtype in claim(info).backward) == theirs.startswith("ok"), (
        f"{info.name} in {dtype}: the table says {sorted(claim(info).backward)}, PyTorch {theirs}"
    )


def test_integer_tensors_cannot_require_grad_as_in_pytorch():
    with pytest.raises(RuntimeError, match="only floating-point tensors can require grad"):
        tg.tensor([1, 2], requires_grad=True)
