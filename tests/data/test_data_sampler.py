"""Samplers, Subset, ConcatDataset, random_split, IterableDataset and the loader's options."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorgrad as tg
from tensorgrad.data import (
    BatchSampler,
    ChainDataset,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    Sampler,
    SequentialSampler,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    get_worker_info,
    random_split,
)


def labels_of(loader) -> list[list[int]]:
    return [batch[-1].numpy().tolist() for batch in loader]


def dataset(n: int = 10) -> TensorDataset:
    return TensorDataset(np.arange(n * 2, dtype=np.float32).reshape(n, 2), np.arange(n))


class Items(Dataset):
    """Per-item access only; item i is (i as float32 pair, i)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int):
        return np.array([index, -index], dtype=np.float32), index


class Stream(IterableDataset):
    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self) -> int:
        return self.n


# Samplers


def test_sequential_and_batch_sampler() -> None:
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3]
    assert len(SequentialSampler(range(4))) == 4
    assert list(BatchSampler(SequentialSampler(range(10)), 3, False)) == [
        [0, 1, 2],
        [3, 4, 5],
        [6, 7, 8],
        [9],
    ]
    assert list(BatchSampler(range(10), 3, True)) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert len(BatchSampler(range(10), 3, True)) == 3
    assert len(BatchSampler(range(10), 3, False)) == 4


@pytest.mark.parametrize(
    ("args", "match"),
    [((0, False), "batch_size should be a positive integer"), ((2, 1), "drop_last should be")],
)
def test_batch_sampler_errors(args, match) -> None:
    with pytest.raises(ValueError, match=match):
        BatchSampler(range(4), *args)


def test_random_sampler() -> None:
    sampler = RandomSampler(range(20), generator=0)
    first, second = list(sampler), list(sampler)
    assert sorted(first) == sorted(second) == list(range(20)) and first != second
    assert list(RandomSampler(range(20), generator=0)) == first
    longer = list(RandomSampler(range(5), num_samples=12, generator=1))
    assert len(longer) == 12 and sorted(longer[:10]) == sorted(2 * list(range(5)))
    drawn = list(RandomSampler(range(3), replacement=True, num_samples=50, generator=2))
    assert len(drawn) == 50 and set(drawn) == {0, 1, 2}
    with pytest.raises(TypeError, match="replacement should be a boolean value"):
        RandomSampler(range(3), replacement=1)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value"):
        RandomSampler(range(3), num_samples=0)
    with pytest.raises(TypeError, match="generator must be a numpy.random.Generator"):
        RandomSampler(range(3), generator="seed")


def test_random_sampler_without_generator_follows_manual_seed() -> None:
    tg.manual_seed(7)
    first = list(RandomSampler(range(30)))
    tg.manual_seed(7)
    assert list(RandomSampler(range(30))) == first


def test_subset_and_weighted_samplers() -> None:
    picked = list(SubsetRandomSampler([10, 20, 30, 40], generator=3))
    assert sorted(picked) == [10, 20, 30, 40] and len(SubsetRandomSampler([1, 2])) == 2
    weighted = list(WeightedRandomSampler([0.0, 1.0, 3.0], 400, generator=4))
    assert set(weighted) == {1, 2} and 0.65 < weighted.count(2) / 400 < 0.85
    unique = list(WeightedRandomSampler([1, 1, 1, 0], 3, replacement=False, generator=5))
    assert sorted(unique) == [0, 1, 2]
    with pytest.raises(RuntimeError, match="cannot draw 4 samples without replacement"):
        WeightedRandomSampler([1, 1, 1, 0], 4, replacement=False)
    with pytest.raises(ValueError, match="weights should be a 1d sequence"):
        WeightedRandomSampler([[1.0]], 1)
    with pytest.raises(RuntimeError, match="non-negative"):
        WeightedRandomSampler([1.0, -1.0], 1)


def test_custom_sampler_subclass() -> None:
    class Backwards(Sampler):
        def __init__(self, n: int) -> None:
            self.n = n

        def __iter__(self):
            return iter(range(self.n - 1, -1, -1))

        def __len__(self) -> int:
            return self.n

    loader = DataLoader(dataset(5), batch_size=2, sampler=Backwards(5))
    assert labels_of(loader) == [[4, 3], [2, 1], [0]] and len(loader) == 3
    with pytest.raises(NotImplementedError):
        iter(Sampler())


# The loader's options


def test_loader_attributes() -> None:
    ds = dataset()
    loader = DataLoader(ds, batch_size=4, shuffle=True, num_workers=2, pin_memory=True)
    assert loader.dataset is ds and loader.batch_size == 4 and loader.drop_last is False
    assert isinstance(loader.sampler, RandomSampler) and loader.sampler.data_source is ds
    assert isinstance(loader.batch_sampler, BatchSampler) and loader.prefetch_factor == 2
    assert loader.num_workers == 2 and loader.pin_memory is True
    assert isinstance(DataLoader(ds).sampler, SequentialSampler)
    for name in ("batch_size", "dataset", "sampler", "batch_sampler", "drop_last"):
        with pytest.raises(ValueError, match=f"{name} attribute should not be set after"):
            setattr(loader, name, None)
    loader.num_workers = 0  # not frozen in PyTorch either


def test_worker_options_are_accepted_and_batches_are_the_same() -> None:
    ds = dataset(9)
    plain = labels_of(DataLoader(ds, batch_size=4, shuffle=True, seed=3))
    with_workers = DataLoader(
        ds,
        batch_size=4,
        shuffle=True,
        num_workers=2,
        pin_memory=True,
        timeout=5,
        worker_init_fn=lambda worker_id: None,
        multiprocessing_context="spawn",
        generator=3,
        prefetch_factor=4,
        persistent_workers=True,
        pin_memory_device="",
        in_order=False,
    )
    assert labels_of(with_workers) == plain
    assert get_worker_info() is None


def test_shuffle_without_a_seed_follows_manual_seed() -> None:
    ds = dataset(40)
    tg.manual_seed(11)
    first = labels_of(DataLoader(ds, batch_size=40, shuffle=True))
    tg.manual_seed(11)
    assert labels_of(DataLoader(ds, batch_size=40, shuffle=True)) == first
    assert first != [list(range(40))]


def test_sampler_and_batch_sampler() -> None:
    ds = dataset(10)
    assert labels_of(DataLoader(ds, batch_size=2, sampler=[9, 0, 5])) == [[9, 0], [5]]
    loader = DataLoader(ds, batch_sampler=[[1, 2, 3], [7]])
    assert labels_of(loader) == [[1, 2, 3], [7]]
    assert loader.batch_size is None and len(loader) == 2


def test_no_automatic_batching() -> None:
    loader = DataLoader(Items(3), batch_size=None)
    items = list(loader)
    assert len(loader) == 3 and len(items) == 3
    x, label = items[2]
    assert isinstance(x, tg.Tensor) and x.shape == (2,) and label == 2


def test_iterable_dataset() -> None:
    loader = DataLoader(Stream(7), batch_size=3)
    assert [b.numpy().tolist() for b in loader] == [[0, 1, 2], [3, 4, 5], [6]]
    assert len(loader) == 3
    dropping = DataLoader(Stream(7), batch_size=3, drop_last=True)
    assert [b.numpy().tolist() for b in dropping] == [[0, 1, 2], [3, 4, 5]] and len(dropping) == 2
    assert list(DataLoader(Stream(2), batch_size=None)) == [0, 1]
    for kwargs in ({"shuffle": True}, {"sampler": [0]}, {"batch_sampler": [[0]]}):
        with pytest.raises(ValueError, match="DataLoader with IterableDataset: expected"):
            DataLoader(Stream(3), **kwargs)
    chained = Stream(2) + Stream(3)
    assert isinstance(chained, ChainDataset) and list(chained) == [0, 1, 0, 1, 2]
    assert len(chained) == 5
    with pytest.raises(AssertionError, match="ChainDataset only supports IterableDataset"):
        list(ChainDataset([dataset(2)]))


def test_getitems_is_used_for_batches() -> None:
    class Batched(Items):
        calls = 0

        def __getitem__(self, index: int):
            raise AssertionError("read through __getitems__")

        def __getitems__(self, indices: list[int]):
            Batched.calls += 1
            return [super(Batched, self).__getitem__(i) for i in indices]

    loader = DataLoader(Batched(5), batch_size=2)
    assert labels_of(loader) == [[0, 1], [2, 3], [4]] and Batched.calls == 3


# The fast path


class CountingItems(TensorDataset):
    """A TensorDataset that counts per-item and per-batch reads."""

    def __init__(self, *arrays) -> None:
        super().__init__(*arrays)
        self.item_calls = self.batch_calls = 0

    def __getitem__(self, index):
        self.item_calls += 1
        return super().__getitem__(index)

    def get_batch(self, indices):
        self.batch_calls += 1
        return super().get_batch(indices)


def test_fast_path_and_per_item_path_give_identical_batches() -> None:
    from tensorgrad.data import default_collate

    x = np.random.default_rng(0).standard_normal((23, 2, 3)).astype(np.float32)
    y = np.arange(23) % 4
    fast_ds, slow_ds = CountingItems(x, y), CountingItems(x, y)
    fast = list(DataLoader(fast_ds, batch_size=5, shuffle=True, seed=2))
    # A collate_fn other than the default itself turns the fast path off.
    slow = list(DataLoader(slow_ds, 5, shuffle=True, seed=2, collate_fn=default_collate.__call__))
    assert fast_ds.batch_calls == 5 and fast_ds.item_calls == 0
    assert slow_ds.batch_calls == 0 and slow_ds.item_calls == 23
    assert len(fast) == len(slow) == 5
    for (fx, fy), (sx, sy) in zip(fast, slow, strict=True):
        assert fx.dtype == sx.dtype == np.float32 and fy.dtype == sy.dtype == np.int64
        np.testing.assert_array_equal(fx.numpy(), sx.numpy())
        np.testing.assert_array_equal(fy.numpy(), sy.numpy())


def test_subclass_overriding_getitem_is_read_item_by_item() -> None:
    class Doubled(TensorDataset):
        def __getitem__(self, index):
            x, y = super().__getitem__(index)
            return x * 2, y

    (x,) = [b[0] for b in DataLoader(Doubled(np.ones((3, 1), np.float32), np.arange(3)), 3)]
    np.testing.assert_array_equal(x.numpy(), np.full((3, 1), 2.0))


# Datasets built from datasets


def test_subset() -> None:
    ds = CountingItems(np.arange(10, dtype=np.float32), np.arange(10) * 10)
    sub = Subset(ds, [7, 2, 5])
    assert len(sub) == 3 and sub[0][1].item() == 70
    assert labels_of(DataLoader(sub, batch_size=2)) == [[70, 20], [50]]
    assert ds.batch_calls == 2  # the subset passes the fast path through
    items = Subset(Items(6), [5, 1])
    assert not hasattr(items, "get_batch")
    assert labels_of(DataLoader(items, batch_size=2)) == [[5, 1]]
    assert [s[1] for s in items.__getitems__([1, 0])] == [1, 5]

    class Overriding(Subset):
        def __getitem__(self, idx):
            return super().__getitem__(idx)

    with pytest.raises(NotImplementedError, match="overrides __getitem__ but not __getitems__"):
        Overriding(ds, [0])


def test_concat_dataset() -> None:
    both = ConcatDataset([Items(2), Items(3)])
    assert len(both) == 5 and both.cumulative_sizes == [2, 5]
    assert [both[i][1] for i in range(5)] == [0, 1, 0, 1, 2]
    assert both[-1][1] == 2 and both[-5][1] == 0
    assert isinstance(Items(1) + Items(2), ConcatDataset)
    with pytest.raises(ValueError, match="absolute value of index should not exceed"):
        both[-6]
    with pytest.raises(IndexError, match="index 5 is out of range for a dataset of length 5"):
        both[5]
    with pytest.raises(AssertionError, match="datasets should not be an empty iterable"):
        ConcatDataset([])
    with pytest.raises(AssertionError, match="does not support IterableDataset"):
        ConcatDataset([Stream(2)])
    assert labels_of(DataLoader(both, batch_size=5)) == [[0, 1, 0, 1, 2]]


@pytest.mark.parametrize(
    ("n", "lengths", "expected"),
    [
        (10, [3, 7], [3, 7]),
        (10, [0.3, 0.7], [3, 7]),
        (10, [0.33, 0.33, 0.34], [4, 3, 3]),
        (7, [0.5, 0.5], [4, 3]),
        (5, [0.2, 0.2, 0.6], [1, 1, 3]),
    ],
)
def test_random_split_lengths(n, lengths, expected) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parts = random_split(Items(n), lengths, generator=0)
    assert [len(p) for p in parts] == expected
    seen = sorted(i for p in parts for i in p.indices)
    assert seen == list(range(n))


def test_random_split_reproducible_and_errors() -> None:
    a = [p.indices for p in random_split(Items(20), [5, 15], generator=1)]
    b = [p.indices for p in random_split(Items(20), [5, 15], generator=np.random.default_rng(1))]
    assert a == b
    tg.manual_seed(2)
    c = [p.indices for p in random_split(Items(20), [0.5, 0.5])]
    tg.manual_seed(2)
    assert [p.indices for p in random_split(Items(20), [0.5, 0.5])] == c
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        random_split(Items(2), [1.0, 0.0])
    with pytest.raises(ValueError, match=r"Sum of input lengths does not equal .* sum to 9"):
        random_split(Items(10), [4, 5])
    with pytest.raises(ValueError, match="Fraction at index 0 is not between 0 and 1"):
        random_split(Items(10), [-0.5, 1.5])
    with pytest.raises(TypeError, match="lengths must be numbers"):
        random_split(Items(10), ["5", 5])


# Properties


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 40),
    batch_size=st.integers(1, 12),
    drop_last=st.booleans(),
    shuffle=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_an_epoch_visits_every_item_once_in_full_batches(n, batch_size, drop_last, shuffle, seed):
    loader = DataLoader(dataset(n), batch_size, shuffle=shuffle, drop_last=drop_last, seed=seed)
    batches = labels_of(loader)
    assert len(batches) == len(loader)
    visited = [i for batch in batches for i in batch]
    assert len(set(visited)) == len(visited)  # nothing twice
    assert len(visited) == (n - n % batch_size if drop_last else n)
    assert all(len(b) == batch_size for b in batches[:-1] if b)
    if not shuffle:
        assert visited == list(range(len(visited)))
    per_item = labels_of(
        DataLoader(Items(n), batch_size, shuffle=shuffle, drop_last=drop_last, seed=seed)
    )
    assert per_item == batches  # the fast path and the item-by-item path agree


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 200), cuts=st.lists(st.integers(1, 20), min_size=1, max_size=5))
def test_random_split_by_fractions_covers_the_dataset(n, cuts):
    fractions = [c / sum(cuts) for c in cuts]
    if not (math.isclose(sum(fractions), 1) and sum(fractions) <= 1):
        return  # rounding pushed the sum over 1: PyTorch treats these as counts
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # splits of length 0 warn
        parts = random_split(Items(n), fractions, generator=0)
    sizes = [len(p) for p in parts]
    assert sum(sizes) == n
    assert all(abs(size - f * n) <= len(cuts) for size, f in zip(sizes, fractions))
    assert sorted(i for p in parts for i in p.indices) == list(range(n))


def test_random_sampler_with_a_huge_num_samples_draws_lazily() -> None:
    """minGPT's and makemore's "infinite" sampler: num_samples=int(1e10) with replacement."""
    sampler = RandomSampler(range(50), replacement=True, num_samples=int(1e10), generator=0)
    assert len(sampler) == int(1e10)
    first = list(itertools.islice(iter(sampler), 10_000))
    assert len(first) == 10_000 and set(first) == set(range(50))
    again = RandomSampler(range(50), replacement=True, num_samples=int(1e10), generator=0)
    assert list(itertools.islice(iter(again), 10_000)) == first  # seeded: reproducible
    short = RandomSampler(range(50), replacement=True, num_samples=5000, generator=0)
    assert list(short) == first[:5000]  # a chunked stream: the prefix does not depend on length
    tg.manual_seed(3)
    loader = DataLoader(
        TensorDataset(tg.arange(50)), batch_size=8,
        sampler=RandomSampler(range(50), replacement=True, num_samples=int(1e10)),
    )  # fmt: skip
    batches = iter(loader)
    (batch,) = next(batches)
    assert batch.shape == (8,) and len(loader) == int(1e10) // 8
    tg.manual_seed(3)
    (again_batch,) = next(iter(DataLoader(
        TensorDataset(tg.arange(50)), batch_size=8,
        sampler=RandomSampler(range(50), replacement=True, num_samples=int(1e10)),
    )))  # fmt: skip
    assert again_batch.tolist() == batch.tolist()


def test_random_sampler_iterators_draw_their_own_stream() -> None:
    """The stream is seeded when the iterator is made: interleaved draws from the global
    generator (dropout, say) do not change the order, and successive iterators differ."""
    tg.manual_seed(11)
    sampler = RandomSampler(range(100), num_samples=250)
    it = iter(sampler)
    head = [next(it) for _ in range(5)]
    tg.rand(1000)  # someone else draws meanwhile
    rest = list(it)
    tg.manual_seed(11)
    assert list(RandomSampler(range(100), num_samples=250)) == head + rest
    assert sorted((head + rest)[:200]) == sorted(2 * list(range(100)))
    assert list(sampler) != head + rest


def test_weighted_random_sampler_with_a_huge_num_samples_draws_lazily() -> None:
    sampler = WeightedRandomSampler([0.0, 1.0, 3.0], int(1e10), generator=4)
    drawn = list(itertools.islice(iter(sampler), 20_000))
    assert set(drawn) == {1, 2} and abs(drawn.count(2) / 20_000 - 0.75) < 0.02
