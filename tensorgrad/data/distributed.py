"""``DistributedSampler``: each rank's share of a dataset's indices, as PyTorch's.

Every rank makes the same permutation (seeded by ``seed + epoch``, so call ``set_epoch`` at
the start of each epoch for a new one), pads it by repeating its start until it divides
evenly (or, with ``drop_last``, cuts the tail), and takes every ``num_replicas``-th index from
position ``rank`` on. So the shards are disjoint but for the padding, together cover the whole
dataset, and have equal lengths, so that every rank runs the same number of steps.

The index assignment is PyTorch's exactly; the shuffled order itself comes from NumPy's
generator, not from ``torch.randperm``, so it differs from PyTorch's for the same seed.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np

__all__ = ["DistributedSampler"]


class DistributedSampler:
    """The indices of ``dataset`` (anything with ``len``) that rank ``rank`` of
    ``num_replicas`` takes, for a ``DataLoader``'s ``sampler=``. ``num_replicas`` and
    ``rank`` default to the process group's (``tensorgrad.distributed``)."""

    def __init__(
        self,
        dataset: Any,
        num_replicas: int | None = None,
        rank: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
    ) -> None:
        if num_replicas is None or rank is None:
            from tensorgrad import distributed  # only when needed: it imports no MPI itself

            if num_replicas is None:
                num_replicas = distributed.get_world_size()
            if rank is None:
                rank = distributed.get_rank()
        if not isinstance(num_replicas, (int, np.integer)) or num_replicas < 1:
            raise ValueError(
                f"DistributedSampler: num_replicas must be a positive integer, got {num_replicas!r}"
            )
        if rank >= num_replicas or rank < 0:
            raise ValueError(
                f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]"
            )
        self.dataset = dataset
        self.num_replicas = int(num_replicas)
        self.rank = int(rank)
        self.epoch = 0
        self.drop_last = drop_last
        size = len(dataset)
        if self.drop_last and size % self.num_replicas != 0:
            # the largest equal shares: the tail that would not divide evenly is left out
            self.num_samples = math.ceil((size - self.num_replicas) / self.num_replicas)
        else:
            self.num_samples = math.ceil(size / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[int]:
        size = len(self.dataset)
        if self.shuffle:
            # the same permutation on every rank: seeded by seed and epoch alone
            generator = np.random.default_rng(self.seed + self.epoch)
            indices = generator.permutation(size).tolist()
        else:
            indices = list(range(size))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[: self.total_size]
        if len(indices) != self.total_size:
            raise RuntimeError(
                f"DistributedSampler: the dataset has {size} items now, {self.total_size} "
                "were planned (with padding) when the sampler was made; make a new sampler "
                "after the dataset changes size"
            )
        return iter(indices[self.rank : self.total_size : self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Use ``epoch``'s permutation from now on (call it at the start of each epoch, with
        the same value on every rank)."""
        self.epoch = epoch
