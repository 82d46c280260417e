"""Dataset, TensorDataset and DataLoader: batches, order, fast path, argument checks.

PyTorch's semantics (samplers, collation, error types) are compared with PyTorch itself in
test_data_pytorch.py.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import tensorgrad
from tensorgrad.data import DataLoader, Dataset, TensorDataset, stack_samples
from tensorgrad.data.collate import batch_to_tensors


class NumpyLoader:
    """A DataLoader whose batches are read back as lists of NumPy arrays."""

    def __init__(self, dataset, *args, **kwargs) -> None:
        self.loader = DataLoader(dataset, *args, **kwargs)

    def __len__(self) -> int:
        return len(self.loader)

    def __iter__(self):
        # map() keeps iter() eager, as the loader's own iterator is.
        return map(lambda batch: [t.data for t in batch], iter(self.loader))


numpy_loader = NumpyLoader


def xy(n: int = 10) -> tuple[np.ndarray, np.ndarray]:
    x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    y = np.arange(n, dtype=np.int64)
    return x, y


class Squares(Dataset):
    """A dataset with per-item access only."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.calls = 0

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int):
        self.calls += 1
        return np.array([index, index * index], dtype=np.float32), index


class FakeTensor:
    """Another library's tensor: read through its ``numpy()``, as PyTorch's would be."""

    def __init__(self, data: np.ndarray) -> None:
        self._array = data

    def numpy(self) -> np.ndarray:
        return self._array


# TensorDataset


def test_tensor_dataset_items_and_batches() -> None:
    x, y = xy()
    ds = TensorDataset(x, y)
    assert len(ds) == 10
    item = ds[3]
    np.testing.assert_array_equal(item[0], x[3])
    assert item[1] == 3
    bx, by = ds.get_batch(np.array([4, 0, 9]))
    np.testing.assert_array_equal(bx, x[[4, 0, 9]])
    np.testing.assert_array_equal(by, [4, 0, 9])


def test_tensor_dataset_does_not_copy_and_reads_tensors() -> None:
    x, y = xy()
    ds = TensorDataset(FakeTensor(x), y)
    assert ds.arrays[0] is x and ds.arrays[1] is y
    ds_lists = TensorDataset([[1, 2], [3, 4]], [0, 1])
    assert ds_lists.arrays[0].shape == (2, 2)


def test_tensor_dataset_length_mismatch_names_lengths() -> None:
    x, _ = xy(10)
    with pytest.raises(ValueError, match=r"same first dimension, got lengths 10, 9, 10"):
        TensorDataset(x, np.zeros(9), np.zeros(10))


def test_tensor_dataset_needs_arrays_with_rows() -> None:
    with pytest.raises(ValueError, match="at least one array"):
        TensorDataset()
    with pytest.raises(ValueError, match="array 1 is 0-dimensional"):
        TensorDataset(np.zeros(3), np.float32(2.0))


def test_dataset_base_class_as_pytorch() -> None:
    # Not abstract, as in PyTorch: a subclass may define only what its use needs.
    with pytest.raises(NotImplementedError, match="Dataset must define __getitem__"):
        Dataset()[0]


def test_tensor_dataset_items_are_tensors_sharing_memory() -> None:
    from tensorgrad import Tensor

    x, y = xy()
    ds = TensorDataset(x, tensorgrad.tensor(y))
    item_x, item_y = ds[2]
    assert isinstance(item_x, Tensor) and isinstance(item_y, Tensor)
    assert np.shares_memory(item_x.data, x)
    assert item_y.shape == () and item_y.item() == 2
    tensors = ds.tensors
    assert tensors is ds.tensors and tensors[1].dtype == np.int64
    assert np.shares_memory(tensors[0].data, x)


# DataLoader: order, coverage, length


@pytest.mark.parametrize(
    ("n", "batch_size", "drop_last", "expected"),
    [(10, 3, False, 4), (10, 3, True, 3), (9, 3, False, 3), (9, 3, True, 3), (2, 5, True, 0)],
)
def test_len(n, batch_size, drop_last, expected) -> None:
    loader = numpy_loader(TensorDataset(*xy(n)), batch_size, drop_last=drop_last)
    assert len(loader) == expected
    assert len(list(loader)) == expected


def test_empty_dataset() -> None:
    loader = numpy_loader(TensorDataset(np.zeros((0, 3))), 4)
    assert len(loader) == 0
    assert list(loader) == []
    # PyTorch's RandomSampler refuses to draw zero samples.
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        DataLoader(TensorDataset(np.zeros((0, 3))), 4, shuffle=True, seed=0)


def test_sequential_batches() -> None:
    x, y = xy(10)
    batches = list(numpy_loader(TensorDataset(x, y), 4))
    assert [b[1].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    np.testing.assert_array_equal(batches[1][0], x[4:8])
    assert batches[0][0].dtype == np.float32 and batches[0][1].dtype == np.int64


@pytest.mark.parametrize("drop_last", [False, True])
def test_shuffled_epoch_covers_each_item_once(drop_last: bool) -> None:
    x, y = xy(103)
    loader = numpy_loader(TensorDataset(x, y), 10, shuffle=True, drop_last=drop_last, seed=1)
    for _ in range(3):
        batches = list(loader)
        labels = np.concatenate([b[1] for b in batches])
        for bx, by in batches:
            np.testing.assert_array_equal(bx, x[by])
        if drop_last:
            assert all(len(b[1]) == 10 for b in batches)
            assert len(labels) == 100 and len(set(labels.tolist())) == 100
        else:
            assert sorted(labels.tolist()) == list(range(103))
            assert len(batches[-1][1]) == 3


def epochs(loader: DataLoader, n: int) -> list[list[int]]:
    return [np.concatenate([b[1] for b in loader]).tolist() for _ in range(n)]


def test_seed_makes_shuffling_reproducible() -> None:
    ds = TensorDataset(*xy(50))
    first = epochs(numpy_loader(ds, 7, shuffle=True, seed=123), 3)
    again = epochs(numpy_loader(ds, 7, shuffle=True, seed=123), 3)
    assert first == again
    assert first[0] != first[1] != first[2], "each epoch draws a new permutation"
    assert first[0] != list(range(50))
    assert epochs(numpy_loader(ds, 7, shuffle=True, seed=124), 1)[0] != first[0]


def test_generator_argument() -> None:
    ds = TensorDataset(*xy(50))
    by_int = epochs(numpy_loader(ds, 8, shuffle=True, generator=5), 2)
    by_gen = epochs(numpy_loader(ds, 8, shuffle=True, generator=np.random.default_rng(5)), 2)
    by_seed = epochs(numpy_loader(ds, 8, shuffle=True, seed=5), 2)
    assert by_int == by_gen == by_seed


def test_permutation_is_drawn_when_iteration_starts() -> None:
    ds = TensorDataset(*xy(30))
    a = numpy_loader(ds, 30, shuffle=True, seed=9)
    b = numpy_loader(ds, 30, shuffle=True, seed=9)
    it1, it2 = iter(a), iter(a)
    second = next(it2)[1].tolist()
    first = next(it1)[1].tolist()
    assert [first, second] == epochs(b, 2)


def test_fast_path_fetches_whole_batches() -> None:
    class Counting(TensorDataset):
        def __init__(self, *arrays) -> None:
            super().__init__(*arrays)
            self.batch_calls = 0

        def __getitem__(self, index):
            raise AssertionError("the loader must not fetch items one by one")

        def get_batch(self, indices):
            self.batch_calls += 1
            return super().get_batch(indices)

    ds = Counting(*xy(100))
    assert len(list(numpy_loader(ds, 16, shuffle=True, seed=0))) == 7
    assert ds.batch_calls == 7


def test_per_item_path_stacks_fields() -> None:
    ds = Squares(5)
    batches = list(numpy_loader(ds, 2))
    assert ds.calls == 5
    values, labels = batches[1]
    np.testing.assert_array_equal(values, [[2, 4], [3, 9]])
    np.testing.assert_array_equal(labels, [2, 3])


def test_stack_samples_structures() -> None:
    samples = [{"x": np.ones(2) * i, "y": i} for i in range(3)]
    out = stack_samples(samples)
    assert out["x"].shape == (3, 2) and out["y"].tolist() == [0, 1, 2]
    assert stack_samples([FakeTensor(np.zeros(2)), FakeTensor(np.ones(2))]).shape == (2, 2)
    with pytest.raises(ValueError, match="different numbers of fields"):
        stack_samples([(1, 2), (1,)])


# DataLoader: argument checking


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"batch_size": 0}, ValueError, "batch_size must be a positive int, got 0"),
        ({"batch_size": -2}, ValueError, "batch_size must be a positive int, got -2"),
        ({"batch_size": 2.0}, ValueError, "batch_size must be a positive int, got 2.0"),
        ({"batch_size": True}, ValueError, "batch_size must be a positive int"),
        ({"batch_size": "8"}, ValueError, "batch_size must be a positive int, got '8'"),
        ({"shuffle": "yes"}, TypeError, "shuffle must be True or False"),
        ({"drop_last": 1}, ValueError, "drop_last should be a boolean value"),
        ({"seed": 1, "generator": 2}, ValueError, "seed or generator, not both"),
        ({"generator": "rng"}, TypeError, "generator must be a numpy.random.Generator"),
        ({"seed": 1.5}, TypeError, "generator must be a numpy.random.Generator or an int"),
        ({"collate_fn": 3}, TypeError, "collate_fn must be callable"),
        ({"worker_init_fn": 3}, TypeError, "worker_init_fn must be callable"),
        ({"num_workers": -1}, ValueError, "num_workers option should be non-negative"),
        ({"num_workers": 1.5}, TypeError, "num_workers must be an int"),
        ({"timeout": -1}, ValueError, "timeout option should be non-negative"),
        ({"prefetch_factor": 2}, ValueError, "prefetch_factor option could only be specified"),
        ({"num_workers": 2, "prefetch_factor": -1}, ValueError, "should be non-negative"),
        ({"persistent_workers": True}, ValueError, "persistent_workers option needs num_workers"),
        ({"multiprocessing_context": "fork"}, ValueError, "can only be used with multi-process"),
        (
            {"num_workers": 1, "multiprocessing_context": "nope"},
            ValueError,
            "should specify a valid start method",
        ),
        ({"num_workers": 1, "multiprocessing_context": 3}, TypeError, "valid context object"),
        ({"sampler": [0, 1], "shuffle": True}, ValueError, "mutually exclusive with shuffle"),
        ({"batch_sampler": [[0, 1]], "batch_size": 2}, ValueError, "batch_sampler option is"),
        ({"batch_sampler": [[0, 1]], "shuffle": True}, ValueError, "batch_sampler option is"),
        ({"batch_sampler": [[0, 1]], "sampler": [0]}, ValueError, "batch_sampler option is"),
        ({"batch_sampler": [[0, 1]], "drop_last": True}, ValueError, "batch_sampler option is"),
        ({"batch_size": None, "drop_last": True}, ValueError, "disables auto-batching"),
    ],
)
def test_argument_errors(kwargs, error, match) -> None:
    with pytest.raises(error, match=match):
        DataLoader(TensorDataset(*xy()), **kwargs)


def test_dataset_must_be_a_dataset() -> None:
    with pytest.raises(TypeError, match="must have __getitem__ .* got int"):
        DataLoader(3)

    class NoLength(Dataset):
        def __getitem__(self, index):
            return np.float32(index)

    with pytest.raises(TypeError, match="NoLength has no __len__; give it one, or pass a sampler"):
        DataLoader(NoLength())
    batches = [b.data.tolist() for b in DataLoader(NoLength(), batch_size=2, sampler=[4, 1, 3])]
    assert batches == [[4.0, 1.0], [3.0]]


def test_numpy_integer_batch_size() -> None:
    loader = DataLoader(TensorDataset(*xy()), np.int64(5))
    assert loader.batch_size == 5 and len(loader) == 2


# Tensors


def test_fast_path_batches_wrap_owned_arrays_and_copy_views() -> None:
    from tensorgrad import Tensor

    owned = np.arange(6, dtype=np.float32)
    base = np.arange(12, dtype=np.float32)
    view = base[:6]
    out = batch_to_tensors({"a": owned, "b": (view, "label")})
    a, (b, label) = out["a"], out["b"]
    assert isinstance(a, Tensor) and isinstance(b, Tensor) and label == "label"
    assert np.shares_memory(a.numpy(), owned)  # a fresh batch array: no second copy
    assert not np.shares_memory(b.numpy(), base)  # a view of someone's data: copied
    assert a.dtype == np.float32 and b.dtype == np.float32


def test_loader_batches_do_not_share_memory_with_the_dataset() -> None:
    x, y = xy(8)
    for bx, by in DataLoader(TensorDataset(x, y), batch_size=4, shuffle=True, seed=0):
        assert not np.shares_memory(bx.numpy(), x) and not np.shares_memory(by.numpy(), y)


def test_batches_are_tensors_with_dtypes_kept() -> None:
    if not callable(getattr(tensorgrad, "tensor", None)):
        pytest.skip("the tensor engine (tensorgrad.tensor) is not available yet")
    from tensorgrad import Tensor

    x, y = xy(6)
    bx, by = next(iter(DataLoader(TensorDataset(x, y), batch_size=4)))
    assert isinstance(bx, Tensor) and isinstance(by, Tensor)
    assert bx.numpy().dtype == np.float32 and by.numpy().dtype == np.int64
    np.testing.assert_array_equal(bx.numpy(), x[:4])
    np.testing.assert_array_equal(by.numpy(), y[:4])


def test_import_is_light() -> None:
    # scikit-learn and urllib are imported only when the digits are loaded or a file is
    # downloaded.
    code = (
        "import sys, tensorgrad.data; "
        "heavy = ['sklearn', 'urllib.request', 'http.client']; "
        "print([m for m in heavy if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
