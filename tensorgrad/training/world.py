"""Where a run meets the other processes of a data-parallel run (``mpiexec -n N``).

A single process is rank 0 of a world of 1, and every method here is then the identity: the
run computes exactly what it computed before data parallelism existed. A data-parallel world
(:class:`DataParallelWorld`, on :mod:`tensorgrad.distributed`) keeps the run's recipe whole:

* ``--batch-size`` is the **global** batch, the samples of one optimizer step over all ranks.
  Every rank draws the same global batch from the same shuffling loader (same seed, same
  generator, the state a checkpoint saves) and computes on its own rows of it
  (:meth:`World.shard`), so a run on N ranks trains on the same batches as one process, and a
  checkpoint does not depend on N: it resumes on any number of ranks that divides the batch.
* The model is wrapped in ``DistributedDataParallel`` (:meth:`World.wrap`), which averages
  the gradients inside ``backward``; each rank's loss is weighted by its share of the batch
  (:meth:`World.weigh`), so that the average is the gradient of the mean loss over the global
  batch even when the last batch of an epoch does not split evenly.
* Decisions are taken together: the loss, the counts and the stop signal of every rank travel in
  one small exchange per step (:meth:`World.gather`), so a non-finite loss or a SIGINT on any
  rank stops every rank after the same step; a failure before training (data not found, say)
  or while rank 0 writes a file is shared with :meth:`World.agree`.
* Only rank 0 prints and writes files (:attr:`World.is_main`); a checkpoint taken there holds
  everything every rank needs, as all ranks keep the same state (with, in addition, each
  rank's random generator, for dropout: :meth:`World.random_states`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


class BatchSplitError(ValueError):
    """The global batch does not divide evenly between the ranks."""


class PeerFailed(RuntimeError):
    """Another rank failed: this rank stops too (rank 0 prints ``ranks_report``)."""

    def __init__(self, report: str) -> None:
        self.ranks_report = report
        super().__init__(report)


def split_problem(batch_size: int, ranks: int) -> str | None:
    """Why ``ranks`` ranks cannot share a global batch of ``batch_size`` (None: they can)."""
    if batch_size % ranks == 0:
        return None
    lower = batch_size - batch_size % ranks
    suggestions = [f"{n} ({n // ranks} per rank)" for n in (lower, lower + ranks) if n > 0]
    divisors = [n for n in range(1, min(batch_size, 64) + 1) if batch_size % n == 0]
    return (
        f"--batch-size {batch_size} is the global batch (the samples of one step, over all "
        f"ranks), and {ranks} ranks cannot share it evenly: use {' or '.join(suggestions)}, "
        f"or a number of ranks that divides {batch_size} ({', '.join(map(str, divisors))}"
        + (", ..." if batch_size > 64 else "")
        + ")"
    )


def share(batch_size: int, rank: int, ranks: int) -> slice:
    """Rank ``rank``'s rows of a batch: contiguous, the first ``batch_size % ranks`` ranks
    taking one more (only the last batch of an epoch can be uneven, as the global batch
    divides by the number of ranks; when it is smaller than that, the last ranks get none)."""
    base, extra = divmod(batch_size, ranks)
    start = rank * base + min(rank, extra)
    return slice(start, start + base + (rank < extra))


class World:
    """This process's place among the processes of a run: rank 0 of 1."""

    rank: int = 0
    size: int = 1

    def __init__(self, owns_group: bool = False) -> None:
        self._owns_group = owns_group

    @property
    def is_main(self) -> bool:
        """Whether this process prints and writes files (checkpoints, --save, --plot)."""
        return self.rank == 0

    def shard(self, batch_size: int) -> slice:
        """The rows of a global batch of ``batch_size`` rows that this rank computes on."""
        return slice(0, batch_size)

    def wrap(self, model: Any) -> Any:
        """The module the training step calls: ``model`` itself, or its DDP wrapper."""
        return model

    def weigh(self, loss: Any, rows: int, batch_size: int) -> Any:
        """The loss to differentiate on this rank, so that the ranks' gradients average to the
        gradient of the mean loss over the global batch."""
        return loss

    def average_gradients(self, params: Sequence[Any]) -> None:
        """Make every rank's gradients the mean over ranks (nothing to do for one process)."""

    def any(self, flag: bool) -> bool:
        """Whether ``flag`` is set on some rank (a stop request must stop every rank)."""
        return flag

    def gather(self, values: Sequence[float]) -> list[list[float]]:
        """Every rank's ``values``, in rank order (the same list on every rank)."""
        return [list(values)]

    def agree(self, error: BaseException | None) -> None:
        """Share whether a step (setup, writing a file) failed on some rank; if one did, raise
        on every rank: this rank's own ``error``, the others :class:`PeerFailed`. Every rank
        must call it at the same point; a lone process just raises ``error``. The exception
        raised carries ``ranks_report``, the message for rank 0 to print for all."""
        if error is not None:
            raise error

    def random_states(self, state: Any) -> list[Any] | None:
        """Every rank's random generator state (``state`` on this rank), or None alone."""
        return None

    def own_random_stream(self, seed: int, step: int | None = None) -> None:
        """Give this rank a random stream (dropout) of its own: nothing to do for rank 0."""

    def close(self) -> None:
        """End the process group if :func:`join` started it."""
        if self._owns_group:
            import tensorgrad.distributed as dist

            self._owns_group = False
            if dist.is_initialized():
                dist.destroy_process_group()


SINGLE_PROCESS = World()


class DataParallelWorld(World):
    """Rank ``rank`` of ``size`` > 1 processes of :mod:`tensorgrad.distributed`'s default
    process group (which must be initialized)."""

    def __init__(self, owns_group: bool = False) -> None:
        import tensorgrad.distributed as dist

        super().__init__(owns_group)
        self._dist = dist
        self.rank = dist.get_rank()
        self.size = dist.get_world_size()

    def shard(self, batch_size: int) -> slice:
        return share(batch_size, self.rank, self.size)

    def wrap(self, model: Any) -> Any:
        from tensorgrad.nn.parallel import DistributedDataParallel

        return DistributedDataParallel(model)

    def weigh(self, loss: Any, rows: int, batch_size: int) -> Any:
        # DDP averages the ranks' gradients: rank r's mean loss counts size·rows/batch_size
        # times, which is 1 when the batch splits evenly (then nothing is multiplied)
        weight = self.size * rows / batch_size
        return loss if weight == 1 else loss * weight

    def average_gradients(self, params: Sequence[Any]) -> None:
        """Nothing: DistributedDataParallel averaged them during ``backward``."""

    def any(self, flag: bool) -> bool:
        return any(row[0] for row in self.gather([float(flag)]))

    def gather(self, values: Sequence[float]) -> list[list[float]]:
        from tensorgrad.core.tensor import Tensor

        mine = Tensor(np.asarray(values, dtype=np.float64))
        rows = [Tensor(np.empty(len(values), np.float64)) for _ in range(self.size)]
        self._dist.all_gather(rows, mine)
        return [row.numpy().tolist() for row in rows]

    def agree(self, error: BaseException | None) -> None:
        messages = self._dist_objects(None if error is None else str(error))
        failed = {rank: message for rank, message in enumerate(messages) if message is not None}
        if not failed:
            return
        if len(failed) == self.size and len(set(failed.values())) == 1:
            report = failed[0]  # every rank, the same error: say it once
        else:
            report = "\n".join(f"rank {rank}: {message}" for rank, message in failed.items())
        if error is None:
            raise PeerFailed(report)
        error.ranks_report = report  # type: ignore[attr-defined]
        raise error

    def _dist_objects(self, obj: Any) -> list[Any]:
        gathered: list[Any] = [None] * self.size
        self._dist.all_gather_object(gathered, obj)
        return gathered

    def random_states(self, state: Any) -> list[Any] | None:
        return self._dist_objects(state)

    def own_random_stream(self, seed: int, step: int | None = None) -> None:
        """Ranks other than 0 draw dropout masks from a stream seeded by (seed, rank) (and the
        step, when a resume cannot give this rank the stream it had): rank 0 keeps the single
        process's stream, and no two ranks drop the same units of their rows."""
        if self.rank == 0:
            return
        import tensorgrad as tg

        entropy = [seed, self.rank] if step is None else [seed, self.rank, step]
        derived = np.random.SeedSequence(entropy).generate_state(1, np.uint64)[0]
        tg.manual_seed(int(derived) >> 1)


def join() -> World:
    """The world of this process, for the ``train`` command: starts the default process group
    (the MPI launcher's ranks, or a world of one without a launcher, which imports no MPI) and
    returns :class:`DataParallelWorld` on several ranks, a plain :class:`World` on one.
    :meth:`World.close` ends the group again."""
    import tensorgrad.distributed as dist

    owns = not dist.is_initialized()
    if owns:
        dist.init_process_group()
    if dist.get_world_size() == 1:
        return World(owns_group=owns)
    return DataParallelWorld(owns_group=owns)


def current_world() -> World:
    """The world of an initialized default process group (for :func:`train` called from a
    script under ``mpiexec``); a single process when there is none."""
    import tensorgrad.distributed as dist

    if dist.is_initialized() and dist.get_world_size() > 1:
        return DataParallelWorld()
    return SINGLE_PROCESS
