"""Samplers: the order in which a DataLoader visits a dataset, as in PyTorch.

A sampler is an iterable of indices (or, for a batch sampler, of lists of indices) with a
``__len__``. Random samplers draw from a ``numpy.random.Generator``: the one given as
``generator`` (a Generator, a ``tensorgrad.Generator`` or an int seed), or else tensorgrad's
global generator, the one :func:`tensorgrad.manual_seed` seeds, so that ``tg.manual_seed(s)``
makes shuffling reproducible as ``torch.manual_seed(s)`` does. The numbers differ from PyTorch's.
"""

from __future__ import annotations

import itertools
import numbers
from collections.abc import Iterable, Iterator, Sequence, Sized
from typing import Any

import numpy as np

from tensorgrad.core.generator import Generator

__all__ = [
    "BatchSampler",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "SubsetRandomSampler",
    "WeightedRandomSampler",
]


def as_generator(generator: Any, what: str) -> np.random.Generator | None:
    """``generator`` as a ``numpy.random.Generator``: a Generator as it is, a
    ``tensorgrad.Generator`` as the NumPy generator it wraps (reseeded in place, so later
    ``manual_seed`` calls count), an int as a seed, None as None (the caller then draws from
    the global generator at each use)."""
    if generator is None or isinstance(generator, np.random.Generator):
        return generator
    if isinstance(generator, Generator):
        return generator.numpy_generator
    if isinstance(generator, numbers.Integral) and not isinstance(generator, bool):
        return np.random.default_rng(int(generator))
    raise TypeError(
        f"{what}: generator must be a numpy.random.Generator or an int seed (or a "
        f"tensorgrad.Generator), got {generator!r}"
    )


def _rng(generator: np.random.Generator | None) -> np.random.Generator:
    if generator is not None:
        return generator
    from tensorgrad import array_backend

    return array_backend.rng()


class Sampler:
    """Base class of samplers: an ``__iter__`` over indices, usually a ``__len__``."""

    def __init__(self, data_source: Sized | None = None) -> None:
        pass

    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")


class SequentialSampler(Sampler):
    """``0, 1, ..., len(data_source) - 1``, in order."""

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation of ``range(len(data_source))``, drawn anew for every iteration.

    With ``replacement``, ``num_samples`` indices drawn independently; without, as many
    permutations as needed for ``num_samples`` (default: the length). The draw happens when
    the iterator is made, so iterators made one after the other get successive permutations.
    """

    def __init__(
        self,
        data_source: Sized,
        replacement: bool = False,
        num_samples: int | None = None,
        generator: np.random.Generator | int | None = None,
    ) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = as_generator(generator, "RandomSampler")
        if not isinstance(replacement, bool):
            raise TypeError(
                f"replacement should be a boolean value, but got replacement={replacement}"
            )
        n = self.num_samples
        if not isinstance(n, numbers.Integral) or isinstance(n, bool) or n <= 0:
            raise ValueError(
                f"num_samples should be a positive integer value, but got num_samples={n}"
            )

    @property
    def num_samples(self) -> int:
        if self._num_samples is None:
            return len(self.data_source)
        return self._num_samples

    def __iter__(self) -> Iterator[int]:
        n, count = len(self.data_source), int(self.num_samples)
        rng = _rng(self.generator)
        if self.replacement:
            return iter(rng.integers(0, n, size=count).tolist())
        orders = [rng.permutation(n) for _ in range(count // n)]
        if count % n:
            orders.append(rng.permutation(n)[: count % n])
        return itertools.chain.from_iterable(order.tolist() for order in orders)

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given ``indices`` in a random order, drawn anew for every iteration."""

    def __init__(
        self, indices: Sequence[int], generator: np.random.Generator | int | None = None
    ) -> None:
        self.indices = indices
        self.generator = as_generator(generator, "SubsetRandomSampler")

    def __iter__(self) -> Iterator[int]:
        order = _rng(self.generator).permutation(len(self.indices)).tolist()
        return (self.indices[i] for i in order)

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices into ``weights``, each drawn with probability proportional to
    its weight; with or without replacement."""

    def __init__(
        self,
        weights: Sequence[float],
        num_samples: int,
        replacement: bool = True,
        generator: np.random.Generator | int | None = None,
    ) -> None:
        if (
            not isinstance(num_samples, numbers.Integral)
            or isinstance(num_samples, bool)
            or num_samples <= 0
        ):
            raise ValueError(
                f"num_samples should be a positive integer value, but got num_samples={num_samples}"
            )
        if not isinstance(replacement, bool):
            raise ValueError(
                f"replacement should be a boolean value, but got replacement={replacement}"
            )
        from tensorgrad.data.collate import _unwrap

        array = np.asarray(_unwrap(weights), dtype=np.float64)
        if array.ndim != 1:
            raise ValueError(
                f"weights should be a 1d sequence but given weights have shape {array.shape}"
            )
        if not np.all(np.isfinite(array)) or np.any(array < 0) or not array.sum() > 0:
            raise RuntimeError(
                "WeightedRandomSampler: weights must be finite, non-negative and not all zero"
            )
        if not replacement and num_samples > np.count_nonzero(array):
            raise RuntimeError(
                f"WeightedRandomSampler: cannot draw {num_samples} samples without replacement "
                f"from {np.count_nonzero(array)} non-zero weights"
            )
        self.weights = array
        self.num_samples = int(num_samples)
        self.replacement = replacement
        self.generator = as_generator(generator, "WeightedRandomSampler")

    def __iter__(self) -> Iterator[int]:
        p = self.weights / self.weights.sum()
        drawn = _rng(self.generator).choice(
            len(p), size=self.num_samples, replace=self.replacement, p=p
        )
        return iter(drawn.tolist())

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Group the indices of ``sampler`` into lists of ``batch_size``; with ``drop_last``,
    a last, shorter list is dropped."""

    def __init__(self, sampler: Sampler | Iterable[int], batch_size: int, drop_last: bool) -> None:
        if (
            not isinstance(batch_size, numbers.Integral)
            or isinstance(batch_size, bool)
            or batch_size <= 0
        ):
            raise ValueError(
                f"batch_size should be a positive integer value, but got batch_size={batch_size!r}"
            )
        if not isinstance(drop_last, bool):
            raise ValueError(
                f"drop_last should be a boolean value, but got drop_last={drop_last!r}"
            )
        self.sampler = sampler
        self.batch_size = int(batch_size)
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        # The sampler's iterator is made now, not at the first next(): a random sampler draws
        # its permutation when the loader's iterator is created.
        return self._batches(iter(self.sampler))

    def _batches(self, indices: Iterator[int]) -> Iterator[list[int]]:
        size = self.batch_size
        while batch := list(itertools.islice(indices, size)):
            if len(batch) < size and self.drop_last:
                return
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)  # type: ignore[arg-type]
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
