"""The worlds collectives run in, on NumPy arrays: a world of one, and MPI through mpi4py.

``tensorgrad.distributed`` turns Tensors into arrays and calls one of these. Every collective
starts a request and returns a :class:`Pending`; ``wait()`` finishes it. The MPI world never
blocks inside MPI: it polls its request from Python, so that while it waits it can notice
what a blocking MPI call cannot, and fail with a message instead of hanging:

* a rank that left the world (it called ``destroy_process_group`` or its Python exited, say
  by ``sys.exit`` in the middle of training) sends every other rank a *leave notice* on a
  communicator of its own; a rank waiting in a collective for it sees the notice and raises;
* a collective that takes longer than the timeout of ``init_process_group`` raises;
* an exception that nobody catches on any rank aborts every rank (``MPI_Abort``) with a
  message naming the rank and the error (see :meth:`MPIWorld.install_failure_handlers`);
  a rank killed by a signal is reported by the launcher, which ends the others at once.

Polling costs nothing measurable against MPI's own blocking wait, which spins too (see
docs/distributed.md); after a millisecond of waiting the loop yields the core at each turn,
so that a rank waiting for a slow one does not slow down a machine with more ranks than cores.
"""

from __future__ import annotations

import atexit
import os
import pickle
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

#: the tag of leave notices on the control communicator
LEAVE_TAG = 1
#: spin this long before yielding the core at each turn of a wait
SPIN_SECONDS = 1e-3
#: after a leave notice, how long a collective under way may still take to complete: the
#: notice and the last data travel on different communicators, so the notice can arrive
#: first even when the leaving rank took its full part in this collective
DRAIN_SECONDS = 2.0
#: ``TENSORGRAD_DISTRIBUTED_DEBUG=1``: each rank says which process it is when the world starts
#: (a launcher reports a killed rank by process id and host, not by rank)
DEBUG_VARIABLE = "TENSORGRAD_DISTRIBUTED_DEBUG"

#: what a leave notice says: why the rank left
_LEFT_BY = {0: "called destroy_process_group", 1: "exited without destroy_process_group"}


class Pending:
    """A collective under way. ``wait()`` finishes it, then runs ``finish`` (a copy back from
    a contiguous buffer, say) once."""

    __slots__ = ("_finish", "_keep", "_request", "_what", "_world")

    def __init__(
        self,
        world: Any,
        request: Any,
        what: str,
        finish: Callable[[], None] | None = None,
        keep: Any = None,
    ) -> None:
        self._world, self._request, self._what, self._finish = world, request, what, finish
        self._keep = keep  # the buffers MPI works on, alive until the request is done

    def wait(self, timeout: float | None = None) -> None:
        if self._request is not None:
            self._world.wait(self._request, self._what, timeout)
            self._request = self._keep = None
        finish, self._finish = self._finish, None
        if finish is not None:
            finish()

    def test(self) -> bool:
        """Whether the collective has completed (finishing it if so); never blocks."""
        if self._request is not None and not self._request.Test():
            return False
        self.wait()
        return True


def _done(finish: Callable[[], None] | None = None) -> Pending:
    return Pending(None, None, "", finish)


class LocalWorld:
    """A world of one process: every collective is complete at once, and its result is the
    input (a reduction over one contribution, a broadcast from oneself). Needs no MPI."""

    backend = "local"
    rank = 0
    size = 1
    host = ""

    def allreduce(self, array: np.ndarray, op: str, what: str) -> Pending:
        return _done()

    def broadcast(self, array: np.ndarray, src: int, what: str) -> Pending:
        return _done()

    def allgather(self, send: np.ndarray, receive: Sequence[np.ndarray], what: str) -> Pending:
        return _done(lambda: np.copyto(receive[0], send.reshape(receive[0].shape)))

    def barrier(self, what: str) -> Pending:
        return _done()

    def allgather_object(self, obj: Any, what: str) -> list[Any]:
        return [pickle.loads(pickle.dumps(obj))]  # a copy, as every rank gets one under MPI

    def broadcast_object(self, obj: Any, src: int, what: str) -> Any:
        return obj

    def leave(self) -> None:
        pass

    def install_failure_handlers(self) -> None:
        pass

    def remove_failure_handlers(self) -> None:
        pass


class MPIWorld:
    """The processes of ``MPI.COMM_WORLD``, through mpi4py (imported here, and only here)."""

    backend = "mpi"

    def __init__(self, timeout: float) -> None:
        from mpi4py import MPI  # starts MPI (MPI_Init) the first time

        self._mpi = MPI
        world = MPI.COMM_WORLD
        self.rank: int = world.Get_rank()
        self.size: int = world.Get_size()
        self.host: str = MPI.Get_processor_name()
        self.timeout = timeout
        # our own communicators: a user's mpi4py messages on COMM_WORLD never mix with ours
        self._comm = world.Dup()
        self._control = world.Dup()
        self._status = MPI.Status()
        self.left: dict[int, str] = {}  #: rank → why it left, for each leave notice arrived
        self.broken: str | None = None  #: why this world cannot be used any more
        self.closed = False
        self._previous_excepthook: Any = None
        self._installed_excepthook: Any = None
        if os.environ.get(DEBUG_VARIABLE, "") not in ("", "0"):
            _say(f"rank {self.rank} of {self.size} is process {os.getpid()} on {self.host}")

    # ----------------------------------------------------------------- waiting
    def _check_usable(self, what: str) -> None:
        if self.closed:
            raise RuntimeError(f"{what}: the process group has been destroyed")
        if self.broken is not None:
            raise RuntimeError(f"{what}: the process group is broken: {self.broken}")
        if self._receive_leave_notices() or self.left:
            raise RuntimeError(
                f"{what}: {self._who_left()} before this collective; every rank must run the "
                "same collectives in the same order"
            )

    def _who_left(self) -> str:
        return "; ".join(f"rank {rank} {why}" for rank, why in sorted(self.left.items()))

    def _receive_leave_notices(self) -> bool:
        """Take in the leave notices that have arrived; True if any did."""
        mpi, status, arrived = self._mpi, self._status, False
        while self._control.Iprobe(mpi.ANY_SOURCE, LEAVE_TAG, status):
            source = status.Get_source()
            reason = np.zeros(1, np.uint8)
            self._control.Recv([reason, mpi.BYTE], source, LEAVE_TAG)
            self.left[source] = _LEFT_BY.get(int(reason[0]), "left")
            arrived = True
        return arrived

    def wait(self, request: Any, what: str, timeout: float | None = None) -> None:
        """Wait for ``request``, polling; raise if a rank leaves meanwhile or time runs out."""
        if request.Test():
            return
        timeout = self.timeout if timeout is None else timeout
        start = time.perf_counter()
        notice_at = None
        while not request.Test():
            now = time.perf_counter()
            if notice_at is None:
                if self._receive_leave_notices():
                    notice_at = now
            elif now - notice_at > DRAIN_SECONDS:
                self.broken = f"{self._who_left()} during {what}"
                raise RuntimeError(
                    f"{what}: {self._who_left()} while rank {self.rank} was waiting for it in "
                    "this collective; every rank must run the same collectives in the same "
                    "order"
                )
            if now - start > timeout:
                self.broken = f"{what} timed out"
                raise RuntimeError(
                    f"{what}: timed out after {timeout:g} s waiting for the other ranks "
                    f"(rank {self.rank} of {self.size}; the timeout is init_process_group's)"
                )
            if now - start > SPIN_SECONDS:
                os.sched_yield()

    # ----------------------------------------------------------------- collectives
    def allreduce(self, array: np.ndarray, op: str, what: str) -> Pending:
        self._check_usable(what)
        buffer = _contiguous(array)
        mpi_op = getattr(self._mpi, op.upper())
        request = self._comm.Iallreduce(self._mpi.IN_PLACE, buffer, op=mpi_op)
        return Pending(self, request, what, _copy_back(buffer, array), buffer)

    def broadcast(self, array: np.ndarray, src: int, what: str) -> Pending:
        self._check_usable(what)
        buffer = _contiguous(array)
        request = self._comm.Ibcast(buffer, root=src)
        finish = None if src == self.rank else _copy_back(buffer, array)
        return Pending(self, request, what, finish, buffer)

    def allgather(self, send: np.ndarray, receive: Sequence[np.ndarray], what: str) -> Pending:
        """Gather ``send`` of every rank into ``receive[rank]`` (sizes may differ by rank)."""
        self._check_usable(what)
        counts = [r.size for r in receive]
        displacements = np.concatenate([[0], np.cumsum(counts[:-1], dtype=np.int64)]).tolist()
        gathered = np.empty(sum(counts), send.dtype)
        flat = np.ascontiguousarray(send).reshape(-1)
        request = self._comm.Iallgatherv(flat, [gathered, (counts, displacements)])

        def finish() -> None:
            for r, start, count in zip(receive, displacements, counts):
                np.copyto(r, gathered[start : start + count].reshape(r.shape))

        return Pending(self, request, what, finish, (flat, gathered))

    def barrier(self, what: str) -> Pending:
        self._check_usable(what)
        return Pending(self, self._comm.Ibarrier(), what)

    def allgather_object(self, obj: Any, what: str) -> list[Any]:
        """Every rank's ``obj`` (pickled), in rank order."""
        payload = np.frombuffer(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL), np.uint8)
        sizes = np.zeros(self.size, np.int64)
        self.allgather(np.array([payload.size], np.int64), list(sizes.reshape(-1, 1)), what).wait()
        parts = [np.empty(int(n), np.uint8) for n in sizes]
        self.allgather(payload, parts, what).wait()
        return [pickle.loads(part.tobytes()) for part in parts]

    def broadcast_object(self, obj: Any, src: int, what: str) -> Any:
        """Rank ``src``'s ``obj`` (pickled), on every rank."""
        payload = np.frombuffer(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL), np.uint8)
        size = np.array([payload.size if self.rank == src else 0], np.int64)
        self.broadcast(size, src, what).wait()
        buffer = payload.copy() if self.rank == src else np.empty(int(size[0]), np.uint8)
        self.broadcast(buffer, src, what).wait()
        return obj if self.rank == src else pickle.loads(buffer.tobytes())

    # ----------------------------------------------------------------- leaving and failing
    def leave(self, exiting: bool = False) -> None:
        """Leave the world together with the other ranks: tell each that this rank is done
        (``exiting``: because Python exits), and wait until each has said the same. A rank
        still waiting for this one in a collective gets the notice and raises, which
        (uncaught) aborts every rank."""
        if self.closed:
            return
        mpi = self._mpi
        reason = np.array([1 if exiting else 0], np.uint8)
        sends = [
            self._control.Isend([reason, mpi.BYTE], peer, LEAVE_TAG)
            for peer in range(self.size)
            if peer != self.rank
        ]
        start = time.perf_counter()
        while True:
            self._receive_leave_notices()
            if len(self.left) >= self.size - 1:
                break
            waited = time.perf_counter() - start
            if waited > self.timeout:
                missing = sorted(set(range(self.size)) - set(self.left) - {self.rank})
                self.broken = "leaving timed out"
                raise RuntimeError(
                    f"destroy_process_group: rank {self.rank} waited {self.timeout:g} s for "
                    f"rank(s) {', '.join(map(str, missing))} to leave the process group too"
                )
            if waited > SPIN_SECONDS:
                time.sleep(1e-3)  # leaving is not a race: sleep rather than spin
        mpi.Request.Waitall(sends)
        self._comm.Free()
        self._control.Free()
        self.closed = True

    def abort(self, message: str) -> None:
        """Print ``message`` and end every rank of the world (``MPI_Abort``)."""
        self.closed = True  # nothing is left to do at exit
        _say(f"{message}; aborting all {self.size} ranks (MPI_Abort)")
        # MPI_Abort makes the launcher kill every process at once, and output still on its
        # way from this rank to the launcher can be lost with it: give it a moment to arrive
        time.sleep(0.2)
        self._mpi.COMM_WORLD.Abort(1)
        os._exit(1)  # MPI_Abort does not return; should it, this process must still end

    def install_failure_handlers(self) -> None:
        """Make an uncaught exception on any rank end every rank at once (the alternative is
        a hang: the other ranks wait forever in their next collective), and make this rank
        leave the world when Python exits without ``destroy_process_group``."""
        self._previous_excepthook = sys.excepthook

        def excepthook(kind: type[BaseException], error: BaseException, tb: Any) -> None:
            self._previous_excepthook(kind, error, tb)  # the traceback first
            if not self.closed:
                self.abort(f"rank {self.rank} of {self.size} failed with {_describe(error)}")

        self._installed_excepthook = excepthook
        sys.excepthook = excepthook
        atexit.register(self._at_exit)

    def remove_failure_handlers(self) -> None:
        if sys.excepthook is self._installed_excepthook:
            sys.excepthook = self._previous_excepthook
        atexit.unregister(self._at_exit)

    def _at_exit(self) -> None:
        """Python is exiting with the process group still up."""
        if self.closed:
            return
        if self.broken is not None:  # a collective was left under way: MPI cannot finish
            self.abort(f"rank {self.rank} of {self.size} exited after an error ({self.broken})")
            return
        try:
            self.leave(exiting=True)
        except BaseException as error:
            self.abort(f"rank {self.rank} of {self.size} failed to leave: {_describe(error)}")


def _contiguous(array: np.ndarray) -> np.ndarray:
    return array if array.flags.c_contiguous else np.ascontiguousarray(array)


def _copy_back(buffer: np.ndarray, array: np.ndarray) -> Callable[[], None] | None:
    if buffer is array:
        return None
    return lambda: np.copyto(array, buffer)


def _describe(error: BaseException) -> str:
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _say(message: str) -> None:
    sys.stderr.write(f"tensorgrad.distributed: {message}\n")
    sys.stderr.flush()
