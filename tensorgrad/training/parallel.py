"""Where a run meets the other processes of a data-parallel run (``mpiexec -n K``).

A single process is rank 0 of a world of 1, and every method here is then the identity. A
data-parallel world (to come: ``tensorgrad.distributed``) subclasses :class:`World`: every
rank draws the same global batch (the loaders share the seed), computes on its own rows of it
(:meth:`World.shard`), averages the gradients before the optimizer steps
(:meth:`World.average_gradients`) and sums the per-batch counts for the epoch line
(:meth:`World.sum`); only rank 0 prints and writes files (:attr:`World.is_main`), and a
checkpoint taken there holds everything every rank needs, as all ranks keep the same state.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class World:
    """This process's place among the processes of a run: rank 0 of 1."""

    rank: int = 0
    size: int = 1

    @property
    def is_main(self) -> bool:
        """Whether this process prints and writes files (checkpoints, --save, --plot)."""
        return self.rank == 0

    def shard(self, batch_size: int) -> slice:
        """The rows of a global batch of ``batch_size`` rows that this rank computes on."""
        return slice(0, batch_size)

    def average_gradients(self, params: Sequence[Any]) -> None:
        """Make every rank's gradients the mean over ranks (nothing to do for one process)."""

    def any(self, flag: bool) -> bool:
        """Whether ``flag`` is set on some rank (a stop request must stop every rank)."""
        return flag

    def sum(self, values: Sequence[float]) -> list[float]:
        """Sum per-rank numbers (loss sums, counts) over the ranks."""
        return list(values)


SINGLE_PROCESS = World()
