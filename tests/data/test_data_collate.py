"""default_collate and default_convert: PyTorch's rules for turning samples into Tensors."""

from __future__ import annotations

from collections import OrderedDict, namedtuple

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import Tensor
from tensorgrad.data import DataLoader, Dataset, default_collate, default_convert, stack_samples

Point = namedtuple("Point", ["x", "y"])


def test_python_numbers() -> None:
    ints = default_collate([1, 2, 3])
    assert isinstance(ints, Tensor) and ints.dtype == np.int64 and ints.data.tolist() == [1, 2, 3]
    floats = default_collate([0.5, 2.0])
    assert floats.dtype == np.float64 and floats.data.tolist() == [0.5, 2.0]
    assert default_collate([True, False]).dtype == np.bool_
    assert default_collate([True, 2]).dtype == np.int64
    mixed = default_collate([1, 2.5])  # torch.tensor([1, 2.5]): the default float dtype
    assert mixed.dtype == np.float32 and mixed.data.tolist() == [1.0, 2.5]


def test_numpy_scalars_keep_their_dtype() -> None:
    assert default_collate([np.float32(1), np.float32(2)]).dtype == np.float32
    assert default_collate([np.int32(1), np.int32(2)]).dtype == np.int32
    assert default_collate([np.float32(1), np.float64(2)]).dtype == np.float64


def test_arrays_and_tensors_are_stacked_into_new_memory() -> None:
    base = np.arange(12, dtype=np.float32).reshape(4, 3)
    out = default_collate([base[0], base[2]])
    assert out.shape == (2, 3) and out.dtype == np.float32
    np.testing.assert_array_equal(out.data, base[[0, 2]])
    assert not np.shares_memory(out.data, base)
    t = default_collate([tg.tensor(base[1]), tg.tensor(base[3])])
    np.testing.assert_array_equal(t.data, base[[1, 3]])
    zero_d = default_collate([tg.tensor(np.int64(4)), tg.tensor(np.int64(5))])
    assert zero_d.shape == (2,) and zero_d.dtype == np.int64


def test_tensors_that_require_grad_are_stacked_in_the_graph() -> None:
    a = tg.tensor([1.0, 2.0], requires_grad=True)
    b = tg.tensor([3.0, 4.0], requires_grad=True)
    out = default_collate([a, b])
    assert out.requires_grad
    (out * tg.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    np.testing.assert_array_equal(a.grad.data, [1.0, 2.0])
    np.testing.assert_array_equal(b.grad.data, [3.0, 4.0])


def test_structures() -> None:
    samples = [(np.ones(2) * i, i, {"name": f"s{i}", "w": float(i)}) for i in range(3)]
    x, y, meta = default_collate(samples)  # a tuple comes back as a list
    assert isinstance(default_collate(samples), list)
    assert x.shape == (3, 2) and x.dtype == np.float64
    assert y.dtype == np.int64 and y.data.tolist() == [0, 1, 2]
    assert meta["name"] == ["s0", "s1", "s2"] and meta["w"].dtype == np.float64
    points = default_collate([Point(1, 2.0), Point(3, 4.0)])
    assert isinstance(points, Point) and points.x.data.tolist() == [1, 3]
    ordered = default_collate([OrderedDict(a=1), OrderedDict(a=2)])
    assert isinstance(ordered, OrderedDict) and ordered["a"].data.tolist() == [1, 2]
    nested = default_collate([[np.zeros(2), [1, 2]], [np.ones(2), [3, 4]]])
    assert nested[1][0].data.tolist() == [1, 3] and nested[1][1].data.tolist() == [2, 4]


def test_samples_of_different_shapes_name_the_shapes_and_the_field() -> None:
    samples = [(np.zeros(3), 0), (np.zeros(3), 1), (np.zeros(4), 2)]
    with pytest.raises(
        RuntimeError,
        match=r"different shapes in field \[0\]: sample 0 has shape \(3,\), sample 2 has "
        r"shape \(4,\)\. Give the DataLoader a collate_fn that pads",
    ):
        default_collate(samples)
    with pytest.raises(RuntimeError, match=r"in field \['img'\]: sample 0 has shape \(2, 2\)"):
        default_collate([{"img": np.zeros((2, 2))}, {"img": np.zeros((2, 3))}])
    with pytest.raises(RuntimeError, match=r"sample 1 has shape \(1,\)"):
        default_collate([tg.zeros(2), tg.zeros(1)])


def test_a_loader_over_samples_of_different_shapes_raises_a_clear_error() -> None:
    class Ragged(Dataset):
        def __len__(self) -> int:
            return 4

        def __getitem__(self, index: int):
            return np.zeros(index + 1, dtype=np.float32), index

    with pytest.raises(RuntimeError, match=r"sample 0 has shape \(1,\), sample 1 has shape"):
        next(iter(DataLoader(Ragged(), batch_size=2)))
    # One sample per batch, or a collate_fn of one's own, is fine.
    assert [x.shape for x, _ in DataLoader(Ragged(), batch_size=1)][-1] == (1, 4)
    padded = DataLoader(Ragged(), batch_size=4, collate_fn=lambda batch: len(batch))
    assert list(padded) == [4]


def test_errors() -> None:
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal"):
        default_collate([(1, 2), (1,)])
    with pytest.raises(TypeError, match="batch must contain tensors, numpy arrays, numbers"):
        default_collate([None, None])
    with pytest.raises(TypeError, match="found <U1"):
        default_collate([np.array(["a"]), np.array(["b"])])
    with pytest.raises(TypeError, match="samples mix numbers and str"):
        default_collate([1, "a"])
    with pytest.raises(TypeError, match="expected a list of samples, got dict"):
        default_collate({"a": 1})
    with pytest.raises(ValueError, match="the batch is empty"):
        default_collate([])


def test_default_convert() -> None:
    array = np.arange(3)
    out = default_convert((array, 1, "s", {"k": np.float32(2)}))
    assert isinstance(out, list)  # a tuple becomes a list, as in PyTorch
    assert isinstance(out[0], Tensor) and np.shares_memory(out[0].data, array)
    assert out[1] == 1 and out[2] == "s"
    assert isinstance(out[3]["k"], Tensor) and out[3]["k"].dtype == np.float32
    t = tg.zeros(2)
    assert default_convert(t) is t
    assert isinstance(default_convert(Point(np.zeros(1), 2)), Point)


def test_stack_samples_gives_numpy_batches() -> None:
    out = stack_samples([(np.ones(2), 1), (np.zeros(2), 2)])
    assert isinstance(out, tuple) and isinstance(out[0], np.ndarray)
    assert out[0].shape == (2, 2) and out[1].tolist() == [1, 2]
    with pytest.raises(RuntimeError, match="different shapes"):
        stack_samples([np.ones(2), np.ones(3)])
