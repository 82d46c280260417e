"""tensorgrad.data against torch.utils.data, where PyTorch is installed: the same batches,
lengths, dtypes and error types for the same arguments."""

from __future__ import annotations

import warnings
from collections import namedtuple

import numpy as np
import pytest

import tensorgrad as tg
import tensorgrad.data as tgd

torch = pytest.importorskip("torch")
tud = pytest.importorskip("torch.utils.data")

Pair = namedtuple("Pair", ["a", "b"])


def both_datasets(n: int = 10):
    x = np.arange(n * 2, dtype=np.float32).reshape(n, 2)
    y = np.arange(n)
    return tgd.TensorDataset(x, y), tud.TensorDataset(torch.from_numpy(x), torch.from_numpy(y))


def numpy_of(batch):
    """A batch (of tensorgrad or torch tensors) as nested lists of arrays, for comparison."""
    if isinstance(batch, dict):
        return {k: numpy_of(v) for k, v in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(numpy_of(b) for b in batch))
    if isinstance(batch, list | tuple):
        return type(batch)(numpy_of(b) for b in batch)
    if isinstance(batch, (torch.Tensor, tg.Tensor)):
        return batch.numpy()
    return batch


def assert_same(ours, theirs) -> None:
    assert type(ours) is type(theirs), (type(ours), type(theirs))
    if isinstance(ours, dict):
        assert ours.keys() == theirs.keys()
        for key in ours:
            assert_same(ours[key], theirs[key])
    elif isinstance(ours, list | tuple):
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs, strict=True):
            assert_same(a, b)
    elif isinstance(ours, np.ndarray):
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
        np.testing.assert_array_equal(ours, theirs)
    else:
        assert ours == theirs


@pytest.mark.parametrize(
    "samples",
    [
        [1, 2, 3],
        [0.5, 1.5],
        [True, False],
        [True, 2],
        [1, 2.5],
        [np.float32(1), np.float32(2)],
        [np.int32(3), np.int32(4)],
        [np.float32(1), np.float64(2)],
        [np.zeros((2, 3), np.float32), np.ones((2, 3), np.float32)],
        [np.arange(3), np.arange(3) + 1],
        [(np.zeros(2), 1), (np.ones(2), 2)],
        [[np.zeros(2), 1.0], [np.ones(2), 2.0]],
        [{"x": np.zeros(2), "y": 3, "s": "a"}, {"x": np.ones(2), "y": 4, "s": "b"}],
        [Pair(1, 2.0), Pair(3, 4.0)],
        [("a", b"x"), ("b", b"y")],
    ],
)
def test_default_collate_as_pytorch(samples) -> None:
    assert_same(numpy_of(tgd.default_collate(samples)), numpy_of(tud.default_collate(samples)))


@pytest.mark.parametrize(
    "samples",
    [[np.zeros(3), np.zeros(4)], [(1, 2), (1,)], [None, None], [np.array(["a"]), np.array(["b"])]],
)
def test_default_collate_errors_as_pytorch(samples) -> None:
    with pytest.raises(Exception) as theirs:
        tud.default_collate(samples)
    with pytest.raises(theirs.type):
        tgd.default_collate(samples)


def test_default_convert_as_pytorch() -> None:
    sample = (np.arange(3), 1, "s", {"k": np.float32(2)})
    assert_same(numpy_of(tgd.default_convert(sample)), numpy_of(tud.default_convert(sample)))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"batch_size": 3},
        {"batch_size": 3, "drop_last": True},
        {"batch_size": 10},
        {"batch_size": 20},
        {"batch_size": 4, "sampler": [9, 0, 5, 5, 2]},
        {"batch_sampler": [[1, 2, 3], [7], [0, 0]]},
        {"batch_size": None},
        {"batch_size": None, "sampler": [3, 1]},
    ],
)
def test_batches_and_lengths_as_pytorch(kwargs) -> None:
    ours_ds, theirs_ds = both_datasets()
    ours, theirs = tgd.DataLoader(ours_ds, **kwargs), tud.DataLoader(theirs_ds, **kwargs)
    assert len(ours) == len(theirs)
    ours_batches = [numpy_of(b) for b in ours]
    theirs_batches = [numpy_of(b) for b in theirs]
    # PyTorch's items are tuples of tensors; without batching they stay tuples.
    if kwargs.get("batch_size", 1) is None and "batch_sampler" not in kwargs:
        theirs_batches = [list(b) for b in theirs_batches]
    assert_same(ours_batches, theirs_batches)


def test_shuffled_epochs_cover_the_data_as_pytorch() -> None:
    ours_ds, theirs_ds = both_datasets(23)
    for drop_last in (False, True):
        ours = tgd.DataLoader(ours_ds, 5, shuffle=True, drop_last=drop_last, seed=0)
        theirs = tud.DataLoader(theirs_ds, 5, shuffle=True, drop_last=drop_last)
        assert len(ours) == len(theirs)
        ours_sizes = [len(b[1]) for b in ours]
        assert ours_sizes == [len(b[1]) for b in theirs]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"batch_size": 0},
        {"batch_size": -2},
        {"batch_size": 2.0},
        {"batch_size": True},
        {"batch_size": "8"},
        {"drop_last": 1},
        {"num_workers": -1},
        {"timeout": -1},
        {"prefetch_factor": 2},
        {"num_workers": 2, "prefetch_factor": -1},
        {"persistent_workers": True},
        {"multiprocessing_context": "fork"},
        {"num_workers": 1, "multiprocessing_context": "nope"},
        {"num_workers": 1, "multiprocessing_context": 3},
        {"sampler": [0, 1], "shuffle": True},
        {"batch_sampler": [[0, 1]], "batch_size": 2},
        {"batch_sampler": [[0, 1]], "shuffle": True},
        {"batch_sampler": [[0, 1]], "sampler": [0]},
        {"batch_sampler": [[0, 1]], "drop_last": True},
        {"batch_size": None, "drop_last": True},
    ],
)
def test_argument_errors_as_pytorch(kwargs) -> None:
    ours_ds, theirs_ds = both_datasets()
    with pytest.raises(Exception) as theirs:
        tud.DataLoader(theirs_ds, **kwargs)
    with pytest.raises(theirs.type):
        tgd.DataLoader(ours_ds, **kwargs)


def test_empty_dataset_with_shuffle_as_pytorch() -> None:
    with pytest.raises(ValueError):
        tud.DataLoader(tud.TensorDataset(torch.zeros(0, 3)), 4, shuffle=True)
    with pytest.raises(ValueError):
        tgd.DataLoader(tgd.TensorDataset(np.zeros((0, 3))), 4, shuffle=True)


def test_iterable_dataset_as_pytorch() -> None:
    class Ours(tgd.IterableDataset):
        def __iter__(self):
            return iter(range(7))

        def __len__(self) -> int:
            return 7

    class Theirs(tud.IterableDataset):
        def __iter__(self):
            return iter(range(7))

        def __len__(self) -> int:
            return 7

    for kwargs in ({"batch_size": 3}, {"batch_size": 3, "drop_last": True}, {"batch_size": None}):
        ours, theirs = tgd.DataLoader(Ours(), **kwargs), tud.DataLoader(Theirs(), **kwargs)
        assert len(ours) == len(theirs)
        assert_same([numpy_of(b) for b in ours], [numpy_of(b) for b in theirs])
    with pytest.raises(ValueError):
        tud.DataLoader(Theirs(), shuffle=True)
    with pytest.raises(ValueError):
        tgd.DataLoader(Ours(), shuffle=True)


@pytest.mark.parametrize(
    ("n", "lengths"),
    [
        (10, [0.3, 0.7]),
        (10, [0.33, 0.33, 0.34]),
        (7, [0.5, 0.5]),
        (5, [0.1, 0.1, 0.8]),
        (101, [0.8, 0.1, 0.1]),
        (3, [0.25, 0.25, 0.25, 0.25]),
        (10, [4, 6]),
    ],
)
def test_random_split_lengths_as_pytorch(n, lengths) -> None:
    with warnings.catch_warnings(record=True) as theirs_warned:
        warnings.simplefilter("always")
        theirs = tud.random_split(range(n), lengths)
    with warnings.catch_warnings(record=True) as ours_warned:
        warnings.simplefilter("always")
        ours = tgd.random_split(range(n), lengths, generator=0)
    assert [len(p) for p in ours] == [len(p) for p in theirs]
    assert [str(w.message) for w in ours_warned] == [str(w.message) for w in theirs_warned]


@pytest.mark.parametrize("lengths", [[4, 5], [-0.5, 1.5]])
def test_random_split_errors_as_pytorch(lengths) -> None:
    with pytest.raises(Exception) as theirs:
        tud.random_split(range(10), lengths)
    with pytest.raises(theirs.type):
        tgd.random_split(range(10), lengths)


def test_concat_dataset_as_pytorch() -> None:
    ours = tgd.ConcatDataset([range(2), range(3)])
    theirs = tud.ConcatDataset([range(2), range(3)])
    assert [ours[i] for i in range(-5, 5)] == [theirs[i] for i in range(-5, 5)]
    assert ours.cumulative_sizes == theirs.cumulative_sizes
    for index in (-6, 5):
        with pytest.raises(Exception) as raised:
            theirs[index]
        with pytest.raises(raised.type):
            ours[index]


def test_samplers_as_pytorch() -> None:
    for drop_last in (False, True):
        ours = list(tgd.BatchSampler(tgd.SequentialSampler(range(10)), 3, drop_last))
        assert ours == list(tud.BatchSampler(tud.SequentialSampler(range(10)), 3, drop_last))
    ours_random = tgd.RandomSampler(range(5), num_samples=12, generator=0)
    theirs_random = tud.RandomSampler(range(5), num_samples=12)
    assert len(ours_random) == len(theirs_random) == 12
    assert sorted(list(ours_random)[:10]) == sorted(list(theirs_random)[:10])
    for args in ((range(3), 1), (range(3), False, 0)):
        with pytest.raises(Exception) as theirs:
            tud.RandomSampler(*args)
        with pytest.raises(theirs.type):
            tgd.RandomSampler(*args)
