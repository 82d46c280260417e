"""Making tensors (``tensorgrad/core/creation.py``, and ``backend.as_array`` under it): dtype
inference by PyTorch's rules, checked without PyTorch (``test_torch_parity.py`` compares
with PyTorch itself)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorgrad as tg


@pytest.mark.parametrize(
    ("data", "dtype", "shape"),
    [
        pytest.param([np.ones(2, np.float32), np.zeros(2, np.float32)], "float32", (2, 2),
                     id="float32_arrays"),
        pytest.param([np.ones(2), np.zeros(2)], "float64", (2, 2), id="float64_arrays"),
        pytest.param([np.array([1, 2]), [3, 4]], "int64", (2, 2), id="array_and_list"),
        pytest.param([[np.array([True])], [np.array([False])]], "bool", (2, 1, 1), id="nested"),
        pytest.param([tg.tensor(1.0), tg.tensor(2.0)], "float32", (2,), id="0d_tensors"),
        pytest.param([tg.tensor(1.0, dtype=tg.float64), 2], "float64", (2,), id="0d_and_int"),
        pytest.param([tg.tensor(1), 2.5], "float32", (2,), id="int_0d_and_float"),
    ],
)  # fmt: skip
def test_tensor_of_a_list_of_arrays_or_0d_tensors(data, dtype, shape):
    """Arrays in a list are one more level of nesting, and keep their dtype (as NumPy
    scalars and 0-d tensors do), as ``torch.tensor`` reads them."""
    t = tg.tensor(data)
    assert (str(t.dtype), t.shape) == (dtype, shape)
    np.testing.assert_array_equal(t.numpy(), np.array([np.asarray(v) for v in data], dtype))


def test_tensor_of_a_list_holding_a_tensor_with_dimensions_is_refused():
    with pytest.raises(ValueError, match="only one element tensors can be converted"):
        tg.tensor([tg.tensor([1.0, 2.0])])
