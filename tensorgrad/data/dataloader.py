"""The DataLoader: a dataset read in batches, with PyTorch's signature and semantics.

Batches are loaded in the calling process. ``num_workers``, ``pin_memory``,
``persistent_workers``, ``prefetch_factor``, ``timeout``, ``worker_init_fn``,
``multiprocessing_context``, ``pin_memory_device`` and ``in_order`` are checked as PyTorch
checks them and otherwise ignored: tensorgrad runs on the CPU (there is no device memory to
pin), and with batches fetched by one fancy index per array (``get_batch``) loading takes a
few percent of a training step, less than what worker processes would cost to start and to
send batches back through pipes on a machine whose cores the NumPy step already uses.
"""

from __future__ import annotations

import itertools
import numbers
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from tensorgrad.data.collate import batch_to_tensors, default_collate, default_convert
from tensorgrad.data.dataset import IterableDataset, batch_getter
from tensorgrad.data.sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    as_generator,
)

__all__ = ["DataLoader", "get_worker_info"]

# Attributes PyTorch refuses to change once the loader is made (its iterators read them).
_FROZEN = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers")


def get_worker_info() -> None:
    """Information about the current loader worker: always None, since batches are loaded
    in the calling process (as in PyTorch's main process)."""
    return None


def _flag(name: str, value: Any) -> bool:
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, numbers.Integral) and value in (0, 1):
        return bool(value)
    raise TypeError(f"DataLoader: {name} must be True or False, got {value!r}")


def _check_workers(
    num_workers: Any,
    timeout: Any,
    prefetch_factor: Any,
    persistent_workers: Any,
    multiprocessing_context: Any,
) -> int | None:
    """PyTorch's checks of the worker options; returns the effective prefetch_factor."""
    if isinstance(num_workers, bool) or not isinstance(num_workers, numbers.Integral):
        raise TypeError(f"DataLoader: num_workers must be an int, got {num_workers!r}")
    if num_workers < 0:
        raise ValueError(
            "num_workers option should be non-negative; "
            "use num_workers=0 to disable multiprocessing."
        )
    if not isinstance(timeout, numbers.Real):
        raise TypeError(f"DataLoader: timeout must be a number, got {timeout!r}")
    if timeout < 0:
        raise ValueError("timeout option should be non-negative")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError(
            "prefetch_factor option could only be specified in multiprocessing."
            "let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None."
        )
    if num_workers > 0 and prefetch_factor is None:
        prefetch_factor = 2
    elif prefetch_factor is not None and prefetch_factor < 0:
        raise ValueError("prefetch_factor option should be non-negative")
    if persistent_workers and num_workers == 0:
        raise ValueError("persistent_workers option needs num_workers > 0")
    if multiprocessing_context is not None:
        if num_workers == 0:
            raise ValueError(
                "multiprocessing_context can only be used with multi-process loading "
                f"(num_workers > 0), but got num_workers={num_workers}"
            )
        import multiprocessing
        import multiprocessing.context

        if isinstance(multiprocessing_context, str):
            methods = multiprocessing.get_all_start_methods()
            if multiprocessing_context not in methods:
                raise ValueError(
                    "multiprocessing_context option should specify a valid start method in "
                    f"{methods!r}, but got multiprocessing_context={multiprocessing_context!r}"
                )
        elif not isinstance(multiprocessing_context, multiprocessing.context.BaseContext):
            raise TypeError(
                "multiprocessing_context option should be a valid context object or a string "
                f"specifying the start method, but got "
                f"multiprocessing_context={multiprocessing_context}"
            )
    return prefetch_factor


class DataLoader:
    """Iterate over a dataset in batches of Tensors, as PyTorch's ``DataLoader``.

    ``batch_size`` items per batch (the last one smaller unless ``drop_last``); ``shuffle``
    draws a new order for every epoch (every ``iter(loader)``) from ``generator`` (a NumPy
    Generator, or an int seed; ``seed=`` is the same as an int ``generator=``), else from the
    global generator that :func:`tensorgrad.manual_seed` seeds. ``sampler`` (indices) or
    ``batch_sampler`` (lists of indices) replace the default order. ``collate_fn`` receives
    the list of samples of a batch; the default, :func:`default_collate`, stacks them into
    Tensors. ``batch_size=None`` turns batching off: each sample is converted on its own.

    A dataset with a ``get_batch(indices)`` method (such as :class:`TensorDataset`) is read a
    batch at a time, when ``collate_fn`` is the default. The worker options are accepted and
    ignored (see the module's docstring): batches are always loaded in the calling process.
    """

    def __init__(
        self,
        dataset: Any,
        batch_size: int | None = 1,
        shuffle: bool | None = None,
        sampler: Sampler | Any | None = None,
        batch_sampler: Sampler | Any | None = None,
        num_workers: int = 0,
        collate_fn: Callable[[Any], Any] | None = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: Callable[[int], None] | None = None,
        multiprocessing_context: Any = None,
        generator: np.random.Generator | int | None = None,
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
        pin_memory_device: str = "",
        in_order: bool = True,
        seed: int | None = None,
    ) -> None:
        prefetch_factor = _check_workers(
            num_workers, timeout, prefetch_factor, persistent_workers, multiprocessing_context
        )
        iterable = isinstance(dataset, IterableDataset)
        if iterable:
            if shuffle not in (False, None):
                raise ValueError(
                    "DataLoader with IterableDataset: expected unspecified shuffle option, "
                    f"but got shuffle={shuffle}"
                )
            if sampler is not None:
                raise ValueError(
                    "DataLoader with IterableDataset: expected unspecified sampler option, "
                    f"but got sampler={sampler}"
                )
            if batch_sampler is not None:
                raise ValueError(
                    "DataLoader with IterableDataset: expected unspecified batch_sampler "
                    f"option, but got batch_sampler={batch_sampler}"
                )
        elif not hasattr(dataset, "__getitem__"):
            raise TypeError(
                "DataLoader: dataset must have __getitem__ (a map-style dataset) or be an "
                f"IterableDataset, got {type(dataset).__name__}"
            )
        elif sampler is None and batch_sampler is None and not hasattr(dataset, "__len__"):
            raise TypeError(
                f"DataLoader: dataset {type(dataset).__name__} has no __len__; give it one, "
                "or pass a sampler"
            )
        shuffle = False if shuffle is None else _flag("shuffle", shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "batch_sampler option is mutually exclusive with batch_size, shuffle, "
                    "sampler, and drop_last"
                )
            batch_size, drop_last = None, False
        elif batch_size is None:
            if drop_last:
                raise ValueError(
                    "batch_size=None option disables auto-batching and is mutually exclusive "
                    "with drop_last"
                )
        elif (
            isinstance(batch_size, bool)
            or not isinstance(batch_size, numbers.Integral)
            or batch_size <= 0
        ):
            raise ValueError(f"DataLoader: batch_size must be a positive int, got {batch_size!r}")
        if not isinstance(drop_last, bool | np.bool_):
            raise ValueError(
                f"drop_last should be a boolean value, but got drop_last={drop_last!r}"
            )
        if seed is not None and generator is not None:
            raise ValueError("DataLoader: pass seed or generator, not both")
        generator = as_generator(seed if generator is None else generator, "DataLoader")
        if collate_fn is not None and not callable(collate_fn):
            raise TypeError(f"DataLoader: collate_fn must be callable, got {collate_fn!r}")
        if worker_init_fn is not None and not callable(worker_init_fn):
            raise TypeError(f"DataLoader: worker_init_fn must be callable, got {worker_init_fn!r}")

        if sampler is None and not iterable:
            sampler = (
                RandomSampler(dataset, generator=generator)
                if shuffle
                else SequentialSampler(dataset)
            )
        if batch_size is not None and batch_sampler is None and not iterable:
            batch_sampler = BatchSampler(sampler, int(batch_size), bool(drop_last))

        self.dataset = dataset
        self.batch_size = None if batch_size is None else int(batch_size)
        self.drop_last = bool(drop_last)
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        self.num_workers = int(num_workers)
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.persistent_workers = persistent_workers
        self.in_order = in_order
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn: Callable[[Any], Any] = collate_fn
        self._initialized = True

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _FROZEN and self.__dict__.get("_initialized", False):
            raise ValueError(
                f"{name} attribute should not be set after {type(self).__name__} is initialized"
            )
        super().__setattr__(name, value)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None or (
            isinstance(self.dataset, IterableDataset) and self.batch_size is not None
        )

    def __len__(self) -> int:
        if isinstance(self.dataset, IterableDataset):
            n = len(self.dataset)  # type: ignore[arg-type]
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        return len(self.sampler)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[Any]:
        if isinstance(self.dataset, IterableDataset):
            return self._stream(iter(self.dataset))
        if self.batch_sampler is None:
            return self._items(iter(self.sampler))  # type: ignore[arg-type]
        # The index iterator is made here, not at the first next(), so that a shuffled
        # epoch's order follows the order in which iterators are created.
        return self._batches(iter(self.batch_sampler))

    def _items(self, indices: Iterator[Any]) -> Iterator[Any]:
        for index in indices:
            yield self.collate_fn(self.dataset[index])

    def _batches(self, batches: Iterator[Any]) -> Iterator[Any]:
        dataset, collate = self.dataset, self.collate_fn
        get_batch = batch_getter(dataset) if collate is default_collate else None
        get_items = getattr(dataset, "__getitems__", None)
        for indices in batches:
            if get_batch is not None:
                # Speed: one fancy index per array instead of a Python loop over the items;
                # get_batch returns what default_collate would stack from the items.
                yield batch_to_tensors(get_batch(np.asarray(indices, dtype=np.int64)))
            elif callable(get_items):
                yield collate(get_items(list(indices)))
            else:
                yield collate([dataset[i] for i in indices])

    def _stream(self, items: Iterator[Any]) -> Iterator[Any]:
        if self.batch_size is None:
            for item in items:
                yield self.collate_fn(item)
            return
        while batch := list(itertools.islice(items, self.batch_size)):
            if len(batch) < self.batch_size and self.drop_last:
                return
            yield self.collate_fn(batch)
