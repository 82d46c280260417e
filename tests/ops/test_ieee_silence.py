"""IEEE results without NumPy's RuntimeWarnings: where PyTorch returns ±inf or NaN silently
(``log(0)``, ``1 / 0``, ``sqrt(-1)``, ``exp(1000)``, ``atanh(1)``, a NaN cast to int64, ...),
tensorgrad returns the same values, in forward, backward and forward mode, and warns of
nothing. Each case runs with warnings as errors, against its IEEE values written out here
and, where PyTorch is installed, against PyTorch's values and gradients.

What PyTorch refuses (an integer divided by zero, an integer to a negative power) stays an
error: the end of this file checks that too.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import tensorgrad as tg
import tensorgrad.autograd.forward_ad as fwAD

inf, nan = math.inf, math.nan


@dataclass(frozen=True)
class Case:
    """``fn(lib, *tensors)`` with ``lib`` tensorgrad or torch, on ``inputs`` (one list of
    values per tensor), and what it must give: ``values``, and ``grads`` (one per input) for
    an upstream gradient of ones. ``unary`` cases are elementwise functions of one input,
    whose forward-mode tangent along ones is the gradient itself."""

    name: str
    fn: Callable[..., Any]
    inputs: tuple[list, ...]
    values: list
    grads: tuple[list, ...]
    dtype: str = "float32"
    unary: bool = True


CASES = [
    Case("log", lambda lib, x: lib.log(x), ([0.0, -1.0, 1.0],), [-inf, nan, 0.0],
         ([inf, -1.0, 1.0],)),
    Case("log_float64", lambda lib, x: lib.log(x), ([0.0, -0.0, -1.0],), [-inf, -inf, nan],
         ([inf, -inf, -1.0],), "float64"),
    Case("log_subnormal", lambda lib, x: lib.log(x), ([1e-45],), [-103.27893],
         ([inf],)),  # 1 / 1.4e-45 is beyond float32's range
    Case("log2", lambda lib, x: lib.log2(x), ([0.0, -1.0, 2.0],), [-inf, nan, 1.0],
         ([inf, -1 / math.log(2), 0.5 / math.log(2)],)),
    Case("log10", lambda lib, x: lib.log10(x), ([0.0, 10.0],), [-inf, 1.0],
         ([inf, 0.1 / math.log(10)],)),
    Case("log1p", lambda lib, x: lib.log1p(x), ([-1.0, -2.0, 0.0],), [-inf, nan, 0.0],
         ([inf, -1.0, 1.0],)),
    Case("sqrt", lambda lib, x: lib.sqrt(x), ([-1.0, 0.0, 4.0],), [nan, 0.0, 2.0],
         ([nan, inf, 0.25],)),
    Case("rsqrt", lambda lib, x: lib.rsqrt(x), ([0.0, -1.0, 4.0],), [inf, nan, 0.5],
         ([-inf, nan, -0.0625],)),
    Case("reciprocal", lambda lib, x: lib.reciprocal(x), ([0.0, -0.0, 2.0],),
         [inf, -inf, 0.5], ([-inf, -inf, -0.25],)),
    Case("div_by_zero_number", lambda lib, x: x / 0, ([1.0, -1.0, 0.0],), [inf, -inf, nan],
         ([inf, inf, inf],)),
    Case("div_by_zero_tensor", lambda lib, x, y: x / y, ([1.0, -1.0, 0.0], [0.0, 0.0, 0.0]),
         [inf, -inf, nan], ([inf, inf, inf], [-inf, inf, nan]), unary=False),
    Case("exp", lambda lib, x: lib.exp(x), ([1000.0, 0.0],), [inf, 1.0], ([inf, 1.0],)),
    Case("exp_float64", lambda lib, x: lib.exp(x), ([1000.0],), [inf], ([inf],), "float64"),
    Case("expm1", lambda lib, x: lib.expm1(x), ([1000.0, 0.0],), [inf, 0.0], ([inf, 1.0],)),
    Case("exp2", lambda lib, x: lib.exp2(x), ([200.0, 1.0],), [inf, 2.0],
         ([inf, 2 * math.log(2)],)),
    Case("pow_minus_one", lambda lib, x: x.pow(-1), ([0.0, -0.0, 2.0],), [inf, -inf, 0.5],
         ([-inf, -inf, -0.25],)),
    Case("pow_half", lambda lib, x: x.pow(0.5), ([-1.0, 0.0, 4.0],), [nan, 0.0, 2.0],
         ([nan, inf, 0.25],)),
    Case("pow_overflow", lambda lib, x: x.pow(2), ([1e30, 3.0],), [inf, 9.0], ([2e30, 6.0],)),
    Case("pow_tensors", lambda lib, x, y: lib.pow(x, y), ([0.0, -1.0, 2.0], [-1.0, 0.5, 3.0]),
         [inf, nan, 8.0], ([-inf, nan, 12.0], [-inf, nan, 8 * math.log(2)]), unary=False),
    Case("atanh", lambda lib, x: lib.atanh(x), ([1.0, -1.0, 2.0, 0.0],), [inf, -inf, nan, 0.0],
         ([inf, inf, -1 / 3, 1.0],)),
    Case("asin", lambda lib, x: lib.asin(x), ([1.0, -1.0, 2.0, 0.0],),
         [math.pi / 2, -math.pi / 2, nan, 0.0], ([inf, inf, nan, 1.0],)),
    Case("acos", lambda lib, x: lib.acos(x), ([1.0, -1.0, 2.0, 0.0],),
         [0.0, math.pi, nan, math.pi / 2], ([-inf, -inf, nan, -1.0],)),
    Case("acosh", lambda lib, x: lib.acosh(x), ([1.0, 0.5, 2.0],), [0.0, nan, math.acosh(2)],
         ([inf, nan, 1 / math.sqrt(3)],)),
    Case("sinh", lambda lib, x: lib.sinh(x), ([100.0, -100.0, 0.0],), [inf, -inf, 0.0],
         ([inf, inf, 1.0],)),
    Case("cosh", lambda lib, x: lib.cosh(x), ([100.0, -100.0, 0.0],), [inf, inf, 1.0],
         ([inf, -inf, 0.0],)),
    Case("atan_huge", lambda lib, x: lib.atan(x), ([1e30, -1e30],),
         [math.pi / 2, -math.pi / 2], ([0.0, 0.0],)),  # 1 / (1 + x²): x² overflows
    Case("asinh_huge", lambda lib, x: lib.asinh(x), ([1e30],), [math.asinh(1e30)], ([0.0],)),
    Case("erf_huge", lambda lib, x: lib.erf(x), ([1e30, -1e30],), [1.0, -1.0], ([0.0, 0.0],)),
    Case("erfc_huge", lambda lib, x: lib.erfc(x), ([1e30, -1e30],), [0.0, 2.0], ([0.0, 0.0],)),
    Case("gelu_tanh_huge", lambda lib, x: lib.nn.functional.gelu(x, approximate="tanh"),
         ([1e30, -1e30],), [1e30, 0.0], ([nan, nan],)),
    Case("gelu_huge", lambda lib, x: lib.nn.functional.gelu(x), ([1e30, -1e30],),
         [1e30, 0.0], ([1.0, 0.0],)),
    Case("atan2_origin", lambda lib, y, x: lib.atan2(y, x),
         ([0.0, 0.0, -0.0, 1.0, 1e-30], [0.0, -0.0, 0.0, 0.0, 1e-30]),
         [0.0, math.pi, -0.0, math.pi / 2, math.pi / 4],
         ([0.0, 0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, -1.0, 0.0]), unary=False),
    Case("remainder_by_zero", lambda lib, x, y: lib.remainder(x, y), ([1.0, -1.0], [0.0, 0.0]),
         [nan, nan], ([1.0, 1.0], [-inf, inf]), unary=False),
    Case("fmod_by_zero", lambda lib, x, y: lib.fmod(x, y), ([1.0, -1.0], [0.0, 0.0]),
         [nan, nan], ([1.0, 1.0], [-inf, inf]), unary=False),
    Case("logit", lambda lib, x: lib.logit(x), ([0.0, 1.0, 0.5],), [-inf, inf, 0.0],
         ([inf, inf, 4.0],)),
    Case("prod_overflow", lambda lib, x: lib.prod(x), ([1e20, 1e20],), inf, ([inf, inf],),
         unary=False),
    Case("cumprod_overflow", lambda lib, x: lib.cumprod(x, 0), ([1e20, 1e20],), [1e20, inf],
         ([inf, inf],), unary=False),
    Case("mean_of_nothing", lambda lib, x: x.mean(), ([],), nan, ([],), unary=False),
    Case("mse_loss_of_nothing", lambda lib, x: lib.nn.functional.mse_loss(x, x.detach()),
         ([],), nan, ([],), unary=False),
    Case("softmax_masked_row", lambda lib, x: lib.softmax(x, 0), ([-inf, -inf],), [nan, nan],
         ([nan, nan],), unary=False),
    Case("log_softmax_masked_row", lambda lib, x: lib.log_softmax(x, 0), ([-inf, -inf],),
         [nan, nan], ([nan, nan],), unary=False),
    Case("logsumexp_masked_row", lambda lib, x: lib.logsumexp(x, 0), ([-inf, -inf],), -inf,
         ([nan, nan],), unary=False),
    Case("cross_entropy_masked_row",
         lambda lib, x: lib.nn.functional.cross_entropy(x, lib.tensor([0])),
         ([[-inf, -inf, -inf]],), nan, ([[nan, nan, nan]],), unary=False),
    Case("cast_float64_to_float32", lambda lib, x: x.float(), ([1e300, -1e300, 1.0],),
         [inf, -inf, 1.0], ([1.0, 1.0, 1.0],), "float64"),
    Case("cast_float32_to_float16", lambda lib, x: x.half(), ([1e5, 1.0],), [inf, 1.0],
         ([1.0, 1.0],)),
]  # fmt: skip


def _run(case: Case) -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
    """The case's values, its gradients for upstream ones, and its forward-mode tangent along
    ones, all computed with every warning an error."""
    dtype = getattr(tg, case.dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        xs = [tg.tensor(v, dtype=dtype, requires_grad=True) for v in case.inputs]
        out = case.fn(tg, *xs)
        out.backward(tg.ones_like(out))
        with fwAD.dual_level():
            duals = [fwAD.make_dual(tg.tensor(v, dtype=dtype), tg.ones_like(x))
                     for v, x in zip(case.inputs, xs)]  # fmt: skip
            tangent = fwAD.unpack_dual(case.fn(tg, *duals)).tangent
    return out.detach().numpy(), [x.grad.numpy() for x in xs], tangent.numpy()


def _close(got: np.ndarray, expected: Any) -> None:
    """Equal up to rounding, with infinities of the same sign and NaN where NaN is expected."""
    expected = np.asarray(expected, dtype=np.float64)
    np.testing.assert_allclose(got.astype(np.float64), expected, rtol=2e-6, atol=0)


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_ieee_values_without_warnings(case):
    values, grads, tangent = _run(case)
    _close(values, case.values)
    for got, expected in zip(grads, case.grads, strict=True):
        _close(got, expected)
        assert got.dtype == np.dtype(case.dtype)
    if case.unary:  # J·1 of an elementwise function is its derivative: the gradient
        _close(tangent, case.grads[0])


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_values_and_gradients_are_pytorchs(case):
    torch = pytest.importorskip("torch")
    values, grads, _ = _run(case)
    xs = [torch.tensor(v, dtype=getattr(torch, case.dtype), requires_grad=True)
          for v in case.inputs]  # fmt: skip
    out = case.fn(torch, *xs)
    out.backward(torch.ones_like(out))
    _close(values, out.detach().numpy())
    for got, x in zip(grads, xs, strict=True):
        _close(got, x.grad.numpy())


# ------------------------------------------------------------------ casts and conversions
SPECIALS = [nan, inf, -inf, 1e20, -1e20, 2.5, -2.5]


@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "uint8", "bool"])
@pytest.mark.parametrize("source", ["float32", "float64"])
def test_casts_of_nan_and_inf_to_integers_are_silent(source, dtype):
    x = tg.tensor(SPECIALS, dtype=getattr(tg, source), requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = x.to(getattr(tg, dtype))
        converted = tg.tensor(np.array(SPECIALS, dtype=source), dtype=getattr(tg, dtype))
    assert result.dtype == converted.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(result.numpy()[-2:], converted.numpy()[-2:])
    if dtype in ("int64", "int32"):
        assert result.numpy()[-2:].tolist() == [2, -2]  # truncated towards zero


@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_casts_of_nan_and_inf_give_pytorchs_integers(dtype):
    # NaN, ±inf and values out of range have no integer: the result is the platform's
    # conversion (the minimum integer on x86), the same for NumPy and PyTorch
    torch = pytest.importorskip("torch")
    ours = tg.tensor(SPECIALS).to(getattr(tg, dtype)).numpy()
    theirs = torch.tensor(SPECIALS).to(getattr(torch, dtype)).numpy()
    np.testing.assert_array_equal(ours, theirs)


def test_numbers_beyond_float32_become_inf_silently():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scalar = tg.tensor(1e300)
        listed = tg.tensor([1e300, -1e300, 1.0])
        half = tg.tensor([1e5], dtype=tg.float16)
        from_float64 = tg.tensor(np.array([1e300]), dtype=tg.float32)
    assert scalar.dtype == tg.float32 and scalar.item() == inf
    assert listed.tolist() == [inf, -inf, 1.0] and half.tolist() == [inf]
    assert from_float64.tolist() == [inf]


# ------------------------------------------------------------------ errors stay errors
ERRORS = [
    ("floor_divide_int_by_zero", lambda lib: lib.tensor([1]) // 0),
    ("remainder_int_by_zero", lambda lib: lib.tensor([1]) % 0),
    ("fmod_int_by_zero", lambda lib: lib.fmod(lib.tensor([1]), lib.tensor([0]))),
    ("pow_int_negative", lambda lib: lib.tensor([0, 2]) ** -1),
]


@pytest.mark.parametrize(("name", "call"), ERRORS, ids=[name for name, _ in ERRORS])
def test_what_pytorch_refuses_stays_an_error(name, call):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeError):
            call(tg)


@pytest.mark.parametrize(("name", "call"), ERRORS, ids=[name for name, _ in ERRORS])
def test_pytorch_refuses_them_too(name, call):
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError):
        call(torch)
