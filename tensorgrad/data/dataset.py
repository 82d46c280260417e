"""Datasets and the batch loader, shaped like PyTorch's.

A dataset is anything with ``__len__`` and ``__getitem__``. A dataset that can also fetch a
whole batch at once, ``get_batch(indices)`` (as :class:`TensorDataset` does, with one fancy
index per array), is read that way by :class:`DataLoader`: at hundreds of batches a second,
a Python loop over the items of every batch would cost more than the training step.
"""

from __future__ import annotations

import abc
import numbers
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

__all__ = ["DataLoader", "Dataset", "TensorDataset", "default_collate", "stack_samples"]


class Dataset(abc.ABC):
    """Base class of map-style datasets: ``len(ds)`` items, ``ds[i]`` for ``0 <= i < len``."""

    @abc.abstractmethod
    def __getitem__(self, index: int) -> Any:
        """The item at ``index``."""

    @abc.abstractmethod
    def __len__(self) -> int:
        """The number of items."""


def _as_array(value: Any, position: int) -> np.ndarray:
    """The ndarray behind an ndarray, a Tensor (its ``.data``) or an array-like."""
    if isinstance(value, np.ndarray):
        return value
    data = getattr(value, "data", None)
    if isinstance(data, np.ndarray):
        return data
    try:
        return np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"TensorDataset: argument {position} is not array-like: {exc}") from exc


class TensorDataset(Dataset):
    """Rows of several arrays (or Tensors) of equal length: ``ds[i]`` is ``(a[i], b[i], ...)``.

    The arrays are kept as they are, not copied; Tensors are read through their ``.data``.
    Items and batches are NumPy arrays; :class:`DataLoader` turns batches into Tensors.
    """

    def __init__(self, *arrays: Any) -> None:
        if not arrays:
            raise ValueError("TensorDataset needs at least one array")
        converted = tuple(_as_array(a, i) for i, a in enumerate(arrays))
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

    def __len__(self) -> int:
        return int(self.arrays[0].shape[0])

    def __getitem__(self, index: int) -> tuple[np.ndarray, ...]:
        return tuple(a[index] for a in self.arrays)

    def get_batch(self, indices: np.ndarray) -> tuple[np.ndarray, ...]:
        """The rows ``indices`` of every array, with one fancy index per array."""
        return tuple(a[indices] for a in self.arrays)


def _unwrap(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value
    data = getattr(value, "data", None)
    return data if isinstance(data, np.ndarray) else value


def stack_samples(samples: list[Any]) -> Any:
    """Stack a list of items into a batch of arrays, field by field.

    Items may be arrays, numbers, Tensors, or tuples/lists/dicts of those; a tuple of fields
    becomes a tuple of stacked arrays. Used by :class:`DataLoader` for datasets that have no
    ``get_batch``.
    """
    first = samples[0]
    if isinstance(first, Mapping):
        return {key: stack_samples([s[key] for s in samples]) for key in first}
    if isinstance(first, tuple | list):
        width = len(first)
        if any(len(s) != width for s in samples):
            raise ValueError("DataLoader: items of one batch have different numbers of fields")
        return tuple(stack_samples(list(field)) for field in zip(*samples, strict=True))
    return np.stack([np.asarray(_unwrap(s)) for s in samples])


def default_collate(batch: Any) -> Any:
    """Turn every ndarray in a batch (or in its tuples, lists, dicts) into a Tensor.

    An array that owns its memory (what fancy indexing and stacking make) is wrapped as it is;
    a view, which could share memory with the dataset, is copied. The tensor engine is
    imported here, not at module import, so that the data package loads without it. Arrays
    keep their dtype: float32 images stay float32, int64 labels stay int64.
    """
    from tensorgrad import Tensor, tensor

    return _convert(batch, lambda a: Tensor(a) if a.flags.owndata else tensor(a))


def _convert(batch: Any, tensor: Callable[[np.ndarray], Any]) -> Any:
    if isinstance(batch, np.ndarray):
        return tensor(batch)
    if isinstance(batch, Mapping):
        return {key: _convert(value, tensor) for key, value in batch.items()}
    if isinstance(batch, tuple | list):
        return type(batch)(_convert(value, tensor) for value in batch)
    return batch


def _check_flag(name: str, value: Any) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"DataLoader: {name} must be True or False, got {value!r}")
    return bool(value)


class DataLoader:
    """Iterate over a dataset in batches, optionally shuffled.

    ``batch_size`` items per batch; the last batch is smaller unless ``drop_last``. With
    ``shuffle``, each epoch (each ``iter(loader)``) draws a new permutation from one
    ``np.random.Generator``: pass ``seed`` (or ``generator``, a Generator or an int seed) and
    the sequence of epochs is reproducible. ``collate_fn`` is applied to each batch of NumPy
    arrays; the default, :func:`default_collate`, makes Tensors of them, and
    ``collate_fn=lambda batch: batch`` keeps the arrays.
    """

    def __init__(
        self,
        dataset: Any,
        batch_size: int = 1,
        shuffle: bool = False,
        drop_last: bool = False,
        *,
        seed: int | None = None,
        generator: np.random.Generator | int | None = None,
        collate_fn: Callable[[Any], Any] | None = None,
    ) -> None:
        if not (hasattr(dataset, "__len__") and hasattr(dataset, "__getitem__")):
            raise TypeError(
                f"DataLoader: dataset must have __len__ and __getitem__, "
                f"got {type(dataset).__name__}"
            )
        if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral):
            raise TypeError(f"DataLoader: batch_size must be an int, got {batch_size!r}")
        if batch_size <= 0:
            raise ValueError(f"DataLoader: batch_size must be positive, got {batch_size}")
        if seed is not None and generator is not None:
            raise ValueError("DataLoader: pass seed or generator, not both")
        if generator is None:
            generator = seed
        if generator is not None and not isinstance(generator, np.random.Generator):
            if isinstance(generator, bool) or not isinstance(generator, numbers.Integral):
                raise TypeError(
                    "DataLoader: generator must be a numpy.random.Generator or an int seed, "
                    f"got {generator!r}"
                )
            generator = np.random.default_rng(int(generator))
        if collate_fn is not None and not callable(collate_fn):
            raise TypeError(f"DataLoader: collate_fn must be callable, got {collate_fn!r}")
        self.dataset = dataset
        self.batch_size = int(batch_size)
        self.shuffle = _check_flag("shuffle", shuffle)
        self.drop_last = _check_flag("drop_last", drop_last)
        self.generator: np.random.Generator = (
            generator if generator is not None else np.random.default_rng()
        )
        self.collate_fn: Callable[[Any], Any] = collate_fn or default_collate

    def __len__(self) -> int:
        n = len(self.dataset)
        if self.drop_last:
            return n // self.batch_size
        return -(-n // self.batch_size)

    def __iter__(self) -> Iterator[Any]:
        # The permutation is drawn here, not on the first next(), so that epochs follow the
        # order in which iterators are created.
        n = len(self.dataset)
        order = self.generator.permutation(n) if self.shuffle else np.arange(n)
        return self._batches(order)

    def _batches(self, order: np.ndarray) -> Iterator[Any]:
        get_batch = getattr(self.dataset, "get_batch", None)
        collate = self.collate_fn
        stop = len(self) * self.batch_size
        for start in range(0, stop, self.batch_size):
            indices = order[start : start + self.batch_size]
            if get_batch is not None:
                batch = get_batch(indices)
            else:
                batch = stack_samples([self.dataset[int(i)] for i in indices])
            yield collate(batch)
