"""Making tensors (``tensorgrad/core/creation.py``, and ``array_backend.as_array`` under it): the
factories, and dtype inference by PyTorch's rules, checked without PyTorch
(``test_torch_parity.py`` compares with PyTorch itself)."""

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


# ----------------------------------------------------------------------- dtypes, shapes and values
@pytest.mark.parametrize(
    ("data", "dtype"),
    [
        (1.5, np.float32),
        (3, np.int64),
        ([1, 2, 3], np.int64),
        ([1, 2.5], np.float32),
        ([True, 2], np.int64),
        ([[1.0, 2.0]], np.float32),
        ([True, False], np.bool_),
        (np.float64(2.0), np.float64),
        (np.arange(3, dtype=np.float64), np.float64),
        (np.arange(3, dtype=np.float32), np.float32),
        (np.arange(3), np.int64),
        (np.array([True]), np.bool_),
    ],
)
def test_tensor_dtype_rules(data, dtype):
    assert tg.tensor(data).dtype == dtype


def test_tensor_copies_its_data():
    array = np.zeros(3)
    t = tg.tensor(array)
    array[0] = 1
    assert t.numpy()[0] == 0


def test_explicit_dtype():
    assert tg.tensor([1, 2], dtype=tg.float64).dtype == np.float64
    assert tg.tensor([1.7, 2.2], dtype="int64").tolist() == [1, 2]


def test_bad_data_is_refused():
    with pytest.raises(TypeError, match="cannot make a tensor from str"):
        tg.tensor("abc")
    with pytest.raises(TypeError, match="not a dtype"):
        tg.tensor([1.0], dtype="not-a-type")
    with pytest.raises(TypeError, match=r"tensors hold bool, integer or float data, not object"):
        tg.tensor(np.array([object()]))


@pytest.mark.parametrize(
    ("make", "shape", "dtype"),
    [
        (lambda: tg.zeros(2, 3), (2, 3), np.float32),
        (lambda: tg.zeros((2, 3)), (2, 3), np.float32),
        (lambda: tg.ones(4, dtype=tg.float64), (4,), np.float64),
        (lambda: tg.full((2, 2), 7.0), (2, 2), np.float32),
        (lambda: tg.zeros_like(tg.ones(3, dtype=tg.int64)), (3,), np.int64),
        (lambda: tg.ones_like(np.zeros((1, 2))), (1, 2), np.float64),
        (lambda: tg.arange(5), (5,), np.int64),
        (lambda: tg.arange(0.0, 1.0, 0.25), (4,), np.float32),
        (lambda: tg.eye(3), (3, 3), np.float32),
        (lambda: tg.rand(2, 5), (2, 5), np.float32),
        (lambda: tg.randn(3, dtype=tg.float64), (3,), np.float64),
        (lambda: tg.zeros(0, 3), (0, 3), np.float32),
    ],
)
def test_creation_functions(make, shape, dtype):
    t = make()
    assert t.shape == shape
    assert t.dtype == dtype


def test_creation_values():
    np.testing.assert_array_equal(tg.full((2,), 7.0).numpy(), [7.0, 7.0])
    np.testing.assert_array_equal(tg.eye(2).numpy(), np.eye(2))
    np.testing.assert_array_equal(tg.arange(1, 7, 2).numpy(), [1, 3, 5])
    assert tg.rand(1000).numpy().min() >= 0 and tg.rand(1000).numpy().max() < 1


def test_manual_seed_makes_random_tensors_repeatable():
    tg.manual_seed(123)
    a = tg.randn(5)
    tg.manual_seed(123)
    b = tg.randn(5)
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_bad_shapes_and_steps():
    with pytest.raises(
        RuntimeError, match="zeros: trying to create a tensor with negative dimension -1"
    ):
        tg.zeros(-1)
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        tg.arange(0, 5, 0)
    with pytest.raises(TypeError, match="randn: dtype must be float32 or float64"):
        tg.randn(2, dtype=tg.int64)
