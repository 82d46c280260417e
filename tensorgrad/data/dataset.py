"""Datasets, shaped like PyTorch's ``torch.utils.data.dataset``.

A map-style dataset is anything with ``__getitem__`` (and, for the default samplers,
``__len__``); an iterable-style one subclasses :class:`IterableDataset`. A dataset that can
also fetch a whole batch at once, ``get_batch(indices)``, returning NumPy arrays as
:func:`~tensorgrad.data.default_collate` would have stacked them from the items (as
:class:`TensorDataset` does, with one fancy index per array), is read that way by
:class:`~tensorgrad.data.DataLoader`: at hundreds of batches a second, a Python loop over
the items of every batch would cost more than the training step.
"""

from __future__ import annotations

import bisect
import itertools
import math
import numbers
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from tensorgrad.data.sampler import _rng, as_generator

__all__ = [
    "ChainDataset",
    "ConcatDataset",
    "Dataset",
    "IterableDataset",
    "Subset",
    "TensorDataset",
    "batch_getter",
    "random_split",
]


def _defined_in(cls: type, name: str) -> type | None:
    return next((c for c in cls.__mro__ if name in c.__dict__), None)


def batch_getter(dataset: Any) -> Callable[[np.ndarray], Any] | None:
    """The dataset's ``get_batch``, if it has one that stands for its ``__getitem__``.

    A subclass that overrides ``__getitem__`` but inherits ``get_batch`` would have its
    ``__getitem__`` bypassed, so then there is none and items are read one by one.
    """
    get_batch = getattr(dataset, "get_batch", None)
    if not callable(get_batch):
        return None
    batch_owner = _defined_in(type(dataset), "get_batch")
    item_owner = _defined_in(type(dataset), "__getitem__")
    if batch_owner and item_owner and not issubclass(batch_owner, item_owner):
        return None
    return get_batch


class Dataset:
    """Base class of map-style datasets: ``ds[i]`` for ``0 <= i < len(ds)``.

    Subclasses define ``__getitem__`` and usually ``__len__``; ``a + b`` concatenates two
    datasets into a :class:`ConcatDataset`.
    """

    def __getitem__(self, index: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")

    def __add__(self, other: Dataset) -> ConcatDataset:
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """Base class of datasets read as a stream: subclasses define ``__iter__``."""

    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")

    def __add__(self, other: Dataset) -> ChainDataset:  # type: ignore[override]
        return ChainDataset([self, other])


def _as_array(value: Any, position: int) -> np.ndarray:
    """The ndarray behind an ndarray, a Tensor (its ``numpy()``) or an array-like."""
    if isinstance(value, np.ndarray):
        return value
    to_numpy = getattr(value, "numpy", None)
    data = to_numpy() if callable(to_numpy) else None
    if isinstance(data, np.ndarray):
        return data
    try:
        return np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"TensorDataset: argument {position} is not array-like: {exc}") from exc


class TensorDataset(Dataset):
    """Rows of several Tensors (or arrays) of equal length: ``ds[i]`` is ``(a[i], b[i], ...)``.

    The data is kept as it is, not copied: ``tensors`` holds Tensors (those given, or Tensors
    wrapping the arrays given) and ``arrays`` the NumPy arrays behind them. Items are Tensors
    sharing memory with the dataset, as in PyTorch; :meth:`get_batch` gives a batch as NumPy
    arrays, with one fancy index per array.
    """

    def __init__(self, *tensors: Any) -> None:
        if not tensors:
            raise ValueError("TensorDataset needs at least one array")
        converted = tuple(_as_array(a, i) for i, a in enumerate(tensors))
        for i, a in enumerate(converted):
            if a.ndim == 0:
                raise ValueError(f"TensorDataset: array {i} is 0-dimensional; it has no rows")
        lengths = [a.shape[0] for a in converted]
        if len(set(lengths)) > 1:
            raise ValueError(
                "TensorDataset: all arrays must have the same first dimension, got lengths "
                + ", ".join(str(n) for n in lengths)
            )
        self.arrays: tuple[np.ndarray, ...] = converted
        self._given = tensors
        self._tensors: tuple[Any, ...] | None = None

    @property
    def tensors(self) -> tuple[Any, ...]:
        """The data as Tensors: those given, and the arrays given wrapped (not copied)."""
        if self._tensors is None:
            from tensorgrad import Tensor

            self._tensors = tuple(
                t if isinstance(t, Tensor) else Tensor(a)
                for t, a in zip(self._given, self.arrays, strict=True)
            )
        return self._tensors

    def __len__(self) -> int:
        return int(self.arrays[0].shape[0])

    def __getitem__(self, index: Any) -> tuple[Any, ...]:
        from tensorgrad import Tensor

        items = []
        for given, array in zip(self._given, self.arrays, strict=True):
            if isinstance(given, Tensor) and given.requires_grad:
                items.append(given[index])  # recorded, so that gradients reach the data
            else:
                items.append(Tensor(array[index]))
        return tuple(items)

    def get_batch(self, indices: np.ndarray) -> tuple[np.ndarray, ...]:
        """The rows ``indices`` of every array, with one fancy index per array."""
        return tuple(a[indices] for a in self.arrays)


class ConcatDataset(Dataset):
    """Several map-style datasets one after the other."""

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = list(datasets)
        if len(self.datasets) == 0:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = list(itertools.accumulate(len(d) for d in self.datasets))

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx: int) -> Any:
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        if idx >= len(self):
            raise IndexError(f"index {idx} is out of range for a dataset of length {len(self)}")
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][idx - start]


class ChainDataset(IterableDataset):
    """Several iterable datasets one after the other."""

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = datasets

    def __iter__(self) -> Iterator[Any]:
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self) -> int:
        total = 0
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            total += len(d)  # type: ignore[arg-type]
        return total


class Subset(Dataset):
    """The items of ``dataset`` at ``indices``: ``subset[i]`` is ``dataset[indices[i]]``.

    When ``dataset`` has ``get_batch``, so has the subset (it maps the indices through).
    """

    def __init__(self, dataset: Dataset, indices: Sequence[int]) -> None:
        if type(self).__getitem__ is not Subset.__getitem__ and (
            type(self).__getitems__ is Subset.__getitems__
        ):
            raise NotImplementedError(
                f"{type(self).__name__} overrides __getitem__ but not __getitems__; the "
                "DataLoader reads a Subset through __getitems__. Define it too, e.g.:\n"
                "    def __getitems__(self, indices):\n"
                "        return [self.__getitem__(idx) for idx in indices]"
            )
        self.dataset = dataset
        self.indices = indices
        self._index_cache: tuple[Any, np.ndarray] | None = None

    def __getitem__(self, idx: Any) -> Any:
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list[int]) -> list[Any]:
        getitems = getattr(self.dataset, "__getitems__", None)
        if callable(getitems):
            return getitems([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self) -> int:
        return len(self.indices)

    @property
    def get_batch(self) -> Callable[[np.ndarray], Any]:
        """The underlying dataset's ``get_batch`` through the indices (an AttributeError,
        so that ``hasattr`` is False, when the underlying dataset has none)."""
        inner = batch_getter(self.dataset)
        if inner is None:
            raise AttributeError(f"{type(self.dataset).__name__} has no get_batch")

        def get_batch(indices: np.ndarray) -> Any:
            return inner(self._index_array()[indices])

        return get_batch

    def _index_array(self) -> np.ndarray:
        # Converted once per indices object: a list of 60,000 ints costs milliseconds.
        if self._index_cache is None or self._index_cache[0] is not self.indices:
            from tensorgrad.data.collate import _unwrap

            array = np.asarray(_unwrap(self.indices), dtype=np.int64)
            self._index_cache = (self.indices, array)
        return self._index_cache[1]


def _split_lengths(n: int, lengths: Sequence[float]) -> list[int]:
    """Fractions summing to 1 as PyTorch turns them into lengths: floors, then the remainder
    handed out one by one from the first split on."""
    sizes = []
    for i, frac in enumerate(lengths):
        if frac < 0 or frac > 1:
            raise ValueError(f"Fraction at index {i} is not between 0 and 1")
        sizes.append(math.floor(n * frac))
    for i in range(n - sum(sizes)):
        sizes[i % len(sizes)] += 1
    for i, size in enumerate(sizes):
        if size == 0:
            warnings.warn(
                f"Length of split at index {i} is 0. This might result in an empty dataset.",
                stacklevel=3,
            )
    return sizes


def random_split(
    dataset: Dataset,
    lengths: Sequence[int | float],
    generator: np.random.Generator | int | None = None,
) -> list[Subset]:
    """Split ``dataset`` at random into non-overlapping :class:`Subset` s of ``lengths``.

    ``lengths`` are counts summing to ``len(dataset)``, or fractions summing to 1 (turned into
    counts as PyTorch does). The permutation comes from ``generator`` (a NumPy Generator or
    an int seed), else from the global generator that :func:`tensorgrad.manual_seed` seeds.
    """
    lengths = list(lengths)
    for value in lengths:
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"random_split: lengths must be numbers, got {value!r}")
    n = len(dataset)  # type: ignore[arg-type]
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        lengths = _split_lengths(n, lengths)
    if sum(lengths) != n:
        raise ValueError(
            "Sum of input lengths does not equal the length of the input dataset! "
            f"(lengths {lengths} sum to {sum(lengths)}, the dataset has {n} items)"
        )
    for value in lengths:
        if value < 0 or value != int(value):
            raise ValueError(f"random_split: lengths must be non-negative integers, got {value}")
    order = _rng(as_generator(generator, "random_split")).permutation(n).tolist()
    ends = itertools.accumulate(int(v) for v in lengths)
    return [Subset(dataset, order[end - int(v) : end]) for end, v in zip(ends, lengths)]
