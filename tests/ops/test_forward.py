"""Every registered op's forward against its NumPy reference, in float64 and float32."""

from __future__ import annotations

import numpy as np
import pytest

import tensorgrad as tg
from tests.ops.registry import COVERAGE_EXEMPT, REGISTRY, cases, outputs, quiet
from tests.tolerance import assert_sums_close

#: float64 results may differ from the reference by rounding (a different but exact formula);
#: float32 ones are compared normwise, within the rounding of sums as long as the inputs (an
#: output element of conv2d or matmul sums many products: elementwise, a cancelling element
#: would fail by an amount that depends on the order of the terms)
TOLERANCE = {np.float64: {"rtol": 1e-10, "atol": 1e-12}}


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
@pytest.mark.parametrize(("info", "sample"), cases())
def test_forward_matches_numpy(info, sample, dtype):
    arrays = sample.arrays(dtype)
    with quiet(sample):
        result = outputs(info.call([tg.Tensor(a) for a in arrays], sample))
    # the reference runs in float64 on the very same (possibly float32-rounded) values
    expected = outputs(info.reference([a.astype(np.float64) for a in arrays], sample))
    assert len(result) == len(expected)
    out_dtype = np.dtype(info.out_dtype or dtype)
    for got, want in zip(result, expected, strict=True):
        assert isinstance(got, tg.Tensor)
        assert got.dtype == out_dtype, f"{info.name}: {dtype.__name__} in, {got.dtype} out"
        assert got.shape == np.shape(want)
        if out_dtype.kind in "iu":
            np.testing.assert_array_equal(got.numpy(), want)
        elif dtype == np.float32:
            # an output may sum every element of the largest input, after the few roundings
            # of a pointwise formula (gelu's tanh form has a dozen)
            terms = max([int(np.size(a)) for a in arrays] or [1]) + 8
            assert_sums_close(got.numpy(), want, terms, err_msg=info.name)
        else:
            np.testing.assert_allclose(got.numpy(), want, **TOLERANCE[dtype])


@pytest.mark.parametrize(("info", "sample"), cases())
def test_recording_does_not_change_the_result(info, sample):
    with quiet(sample):
        plain = outputs(info.call(sample.tensors(requires_grad=False), sample))
        recorded = outputs(info.call(sample.tensors(requires_grad=True), sample))
    for a, b in zip(plain, recorded, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        assert not a.requires_grad
        assert b.requires_grad == info.records


@pytest.mark.parametrize(("info", "sample"), cases(differentiable=True, grad=True))
def test_forward_and_backward_leave_inputs_unchanged(info, sample):
    tensors = sample.tensors()
    before = [t.numpy().copy() for t in tensors]
    results = [o for o in outputs(info.call(tensors, sample)) if o.requires_grad]
    tg.backward(results, [np.ones(o.shape) for o in results])
    for t, original in zip(tensors, before, strict=True):
        np.testing.assert_array_equal(t.numpy(), original)


def _has(feature: str, array: np.ndarray) -> bool:
    if feature == "0-d":
        return array.ndim == 0
    if feature == "empty":
        return array.size == 0
    if feature == "size-1":
        return array.size == 1 and array.ndim > 0
    return not array.flags.c_contiguous


@pytest.mark.parametrize("feature", list(COVERAGE_EXEMPT))
def test_registry_covers(feature):
    """Every op has a sample with a 0-d, an empty, a size-1 and a non-contiguous input."""
    missing = []
    for info in REGISTRY:
        if info.name in COVERAGE_EXEMPT[feature]:
            continue
        arrays = [a for s in info.samples() for a in s.arrays()]
        if not any(_has(feature, a) for a in arrays):
            missing.append(info.name)
    assert not missing, f"no {feature} sample for {missing}"


def test_clamp_is_clip():
    assert tg.clamp is tg.clip


def test_gather_and_scatter_add_treat_0d_as_one_element():
    """PyTorch's rule: a 0-d input, index or source counts as one dimension of size 1."""
    x = tg.tensor(1.5, dtype=tg.float64)
    assert x.gather(0, tg.tensor(0)).shape == ()
    np.testing.assert_array_equal(x.gather(0, tg.tensor([0, 0])).numpy(), [1.5, 1.5])
    np.testing.assert_array_equal(tg.tensor([1.0, 2.0]).gather(0, tg.tensor(1)).numpy(), 2.0)
    out = x.scatter_add(0, tg.tensor(0), tg.tensor(2.0, dtype=tg.float64))
    assert out.shape == () and out.item() == 3.5
