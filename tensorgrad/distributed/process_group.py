"""The default process group and the collectives on Tensors, with ``torch.distributed``'s
names, signatures and semantics.

``init_process_group`` decides, from the environment alone, which world this process is in:

* started by an MPI launcher (``mpiexec``, ``mpirun``, ``srun``; see
  :mod:`tensorgrad.distributed.launcher`): MPI, through mpi4py, with the launcher's ranks.
  mpi4py missing is an error when the launcher started more than one process (each would
  train alone), and so is an MPI that sees a world of another size than the launcher started;
* started without one (``python train.py``): a world of one, which imports no MPI and works
  everywhere, with or without mpi4py installed;
* ``TENSORGRAD_DISTRIBUTED=mpi`` or ``=local`` in the environment overrides the choice.

Collectives change their tensors in place, as in PyTorch: the arrays are written directly,
even for leaves that require grad (a collective is no differentiable op), and each changed
tensor's version moves on, so a graph that saved the old values refuses to use them.
"""

from __future__ import annotations

import datetime
import enum
import importlib.util
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tensorgrad.core.engine import mark_changed
from tensorgrad.core.tensor import Tensor
from tensorgrad.distributed import launcher
from tensorgrad.distributed.worlds import LocalWorld, MPIWorld, Pending

#: PyTorch's default timeout for backends other than NCCL
DEFAULT_TIMEOUT = datetime.timedelta(minutes=30)
_NOT_INITIALIZED = (
    "Default process group has not been initialized, please make sure to call init_process_group."
)


class ReduceOp(enum.Enum):
    """How ``all_reduce`` combines the ranks' values. ``AVG`` (the sum divided by the world
    size) is for floating-point tensors only; the bitwise ops for integer and bool tensors
    (on bool tensors ``SUM`` and ``MAX`` are a logical or, ``PRODUCT`` and ``MIN`` an and)."""

    SUM = "sum"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"
    BAND = "band"
    BOR = "bor"
    BXOR = "bxor"
    AVG = "avg"


#: ReduceOp → the MPI op, by the dtype's kind
_MPI_OPS = {
    "f": {"sum": "sum", "product": "prod", "min": "min", "max": "max", "avg": "sum"},
    "i": {"sum": "sum", "product": "prod", "min": "min", "max": "max"}
    | {"band": "band", "bor": "bor", "bxor": "bxor"},
    "b": {"sum": "lor", "max": "lor", "bor": "lor", "product": "land", "min": "land"}
    | {"band": "land", "bxor": "lxor"},
}
_MPI_OPS["u"] = _MPI_OPS["i"]


class Work:
    """A collective started with ``async_op=True``: ``wait()`` finishes it (the tensors hold
    the result afterwards), ``is_completed()`` asks without blocking."""

    def __init__(self, pending: Pending, then: Callable[[], None]) -> None:
        self._pending, self._then, self._done = pending, then, False

    def wait(self, timeout: datetime.timedelta | None = None) -> bool:
        if not self._done:
            self._pending.wait(None if timeout is None else _seconds(timeout, "wait"))
            self._done = True
            self._then()
        return True

    def is_completed(self) -> bool:
        if not self._done and self._pending.test():
            self.wait()
        return self._done

    def is_success(self) -> bool:
        return self.is_completed()


class _Group:
    """The default process group: the world it runs in, and how it was made."""

    def __init__(self, world: LocalWorld | MPIWorld, timeout: float) -> None:
        self.world = world
        self.timeout = timeout


_default: _Group | None = None


# --------------------------------------------------------------------- the process group
def is_available() -> bool:
    """True: the package always works, as a world of one at least (MPI is needed for more)."""
    return True


def is_mpi_available() -> bool:
    """Whether mpi4py is installed (checked without importing it, which would start MPI)."""
    return importlib.util.find_spec("mpi4py") is not None


def is_initialized() -> bool:
    """Whether ``init_process_group`` has been called (and the group not destroyed since)."""
    return _default is not None


def init_process_group(
    backend: str | None = None,
    init_method: str | None = None,
    timeout: datetime.timedelta | None = None,
    world_size: int = -1,
    rank: int = -1,
    store: Any = None,
    group_name: str = "",
    pg_options: Any = None,
    device_id: Any = None,
) -> None:
    """Start the default process group: all the processes the MPI launcher started, or this
    process alone when there is no launcher (see the module's docstring).

    ``backend`` is ``"mpi"`` (or None, for the same). The ranks and the world size come from
    the launcher: ``world_size`` and ``rank``, when given, must agree with it. ``timeout``
    (default 30 minutes) bounds every wait in a collective; a rank that waits longer raises.
    ``init_method`` may only be None or ``"env://"``; ``store``, ``pg_options`` and
    ``device_id`` only None (CPU processes that MPI connects need none of them);
    ``group_name`` is ignored (deprecated in PyTorch).
    """
    global _default
    if _default is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if backend is not None and str(backend).lower() != "mpi":
        raise ValueError(
            f"init_process_group: backend {backend!r} is not available; tensorgrad's only "
            "backend is 'mpi' (without an MPI launcher the world of one needs none)"
        )
    if init_method not in (None, "env://"):
        raise ValueError(
            f"init_process_group: init_method={init_method!r}: the mpi backend takes the ranks "
            "from the MPI launcher; leave init_method None"
        )
    for name, value in (("store", store), ("pg_options", pg_options), ("device_id", device_id)):
        if value is not None:
            raise ValueError(f"init_process_group: {name} must be None with the mpi backend")
    seconds = _seconds(DEFAULT_TIMEOUT if timeout is None else timeout, "init_process_group")
    launch = launcher.detect()
    world = _make_world(launch, launcher.forced_backend(), seconds)
    world.install_failure_handlers()
    problem = _check_world(world, launch, world_size, rank)
    if problem is not None:
        if isinstance(world, MPIWorld):
            # the other ranks may be waiting for this one already: exiting now aborts them all
            world.broken = str(problem)
        raise problem
    _default = _Group(world, seconds)


def _make_world(
    launch: launcher.Launch | None, forced: str | None, seconds: float
) -> LocalWorld | MPIWorld:
    if forced == "local":
        return LocalWorld()
    if forced is None and launch is None:
        return LocalWorld()
    if not is_mpi_available():
        if forced is None and launch is not None and launch.size == 1:
            return LocalWorld()
        started = (
            f"{launch.launcher} started this process as one of {launch.size or 'several'}"
            if launch is not None
            else f"{launcher.BACKEND_VARIABLE}=mpi asks for MPI"
        )
        raise RuntimeError(
            f"init_process_group: {started}, but mpi4py is not installed, so the processes "
            "cannot work together; install it with: pip install 'tensorgrad[distributed]'"
        )
    return MPIWorld(seconds)


def _check_world(
    world: LocalWorld | MPIWorld, launch: launcher.Launch | None, world_size: int, rank: int
) -> Exception | None:
    """What is wrong with ``world``, as the error to raise (None: nothing)."""
    launched = launch.size if launch is not None else None
    if isinstance(world, MPIWorld) and launched is not None and launched != world.size:
        return RuntimeError(
            f"init_process_group: {launch.launcher} started {launch.size} processes, but "
            f"MPI sees a world of {world.size}: mpi4py was built for another MPI than the "
            "launcher's (use the mpiexec of the MPI that mpi4py uses, e.g. the one installed "
            "next to python by 'pip install tensorgrad[distributed]'), or srun needs "
            "--mpi=pmi2 or --mpi=pmix"
        )
    if world_size != -1 and world_size != world.size:
        return ValueError(
            f"init_process_group: world_size={world_size}, but the launcher started "
            f"{world.size} process(es); leave world_size and rank out with the mpi backend"
        )
    if rank != -1 and rank != world.rank:
        return ValueError(
            f"init_process_group: rank={rank}, but the launcher made this process rank "
            f"{world.rank}; leave world_size and rank out with the mpi backend"
        )
    return None


def destroy_process_group(group: Any = None) -> None:
    """End the default process group. Under MPI every rank must call it (it waits until every
    rank has): a rank still waiting for this one in a collective raises instead of hanging.
    Python's exit does the same for a group that is still up."""
    global _default
    if _default is None:
        raise ValueError(f"destroy_process_group: {_NOT_INITIALIZED}")
    _check_group(group, "destroy_process_group")
    world = _default.world
    _default = None
    world.remove_failure_handlers()
    world.leave()


def get_rank(group: Any = None) -> int:
    """This process's rank, 0 to ``get_world_size() - 1``."""
    return _world("get_rank", group).rank


def get_world_size(group: Any = None) -> int:
    """The number of processes in the group."""
    return _world("get_world_size", group).size


def get_backend(group: Any = None) -> str:
    """``"mpi"``, or ``"local"`` for a world of one without MPI."""
    return _world("get_backend", group).backend


def _world(what: str, group: Any) -> LocalWorld | MPIWorld:
    if _default is None:
        raise ValueError(_NOT_INITIALIZED)
    _check_group(group, what)
    return _default.world


def _check_group(group: Any, what: str) -> None:
    if group is not None:
        raise ValueError(
            f"{what}: group={group!r}: tensorgrad has one process group, the default one "
            "(group=None)"
        )


def _seconds(timeout: Any, what: str) -> float:
    if not isinstance(timeout, datetime.timedelta):
        raise TypeError(
            f"{what}: timeout must be a datetime.timedelta, got {type(timeout).__name__}"
        )
    seconds = timeout.total_seconds()
    if seconds <= 0:
        raise ValueError(f"{what}: timeout must be positive, got {timeout}")
    return seconds


# --------------------------------------------------------------------- collectives
def _array(tensor: Any, what: str, name: str = "tensor") -> np.ndarray:
    """The array a collective writes into: the tensor's own."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{what}: {name} must be a tensorgrad Tensor, got {type(tensor).__name__}")
    array = tensor._data
    if not array.flags.writeable:
        raise ValueError(f"{what}: {name} is read-only (its array cannot be written in place)")
    return array


def _changed(*tensors: Tensor) -> Callable[[], None]:
    return lambda: mark_changed(tensors)


def _run(pending: Pending, then: Callable[[], None], async_op: bool) -> Work | None:
    work = Work(pending, then)
    if async_op:
        return work
    work.wait()
    return None


def all_reduce(
    tensor: Tensor, op: ReduceOp = ReduceOp.SUM, group: Any = None, async_op: bool = False
) -> Work | None:
    """Combine ``tensor`` across the ranks with ``op``, in place: afterwards it holds the same
    result on every rank (the sum of every rank's tensor, by default)."""
    world = _world("all_reduce", group)
    array = _array(tensor, "all_reduce")
    if not isinstance(op, ReduceOp):
        raise TypeError(f"all_reduce: op must be a ReduceOp, got {op!r}")
    mpi_op = _MPI_OPS.get(array.dtype.kind, {}).get(op.value)
    if mpi_op is None:
        raise RuntimeError(f"all_reduce: ReduceOp.{op.name} is not defined for {array.dtype}")
    changed = _changed(tensor)
    then = changed
    if op is ReduceOp.AVG:

        def then() -> None:
            np.divide(array, world.size, out=array)
            changed()

    return _run(world.allreduce(array, mpi_op, "all_reduce"), then, async_op)


def broadcast(
    tensor: Tensor,
    src: int | None = None,
    group: Any = None,
    async_op: bool = False,
    group_src: int | None = None,
) -> Work | None:
    """Copy rank ``src``'s ``tensor`` into ``tensor`` on every other rank (same shape and
    dtype on every rank)."""
    world = _world("broadcast", group)
    source = _source_rank(src, group_src, world.size, "broadcast")
    array = _array(tensor, "broadcast")
    then = _changed(tensor) if world.rank != source else (lambda: None)
    return _run(world.broadcast(array, source, "broadcast"), then, async_op)


def _source_rank(src: int | None, group_src: int | None, size: int, what: str) -> int:
    if src is not None and group_src is not None:
        raise ValueError("Can't specify both group_rank and global_rank")
    source = src if src is not None else group_src
    if source is None:
        raise ValueError("Must specify global_rank or group_rank")
    if not isinstance(source, (int, np.integer)) or not 0 <= source < size:
        raise ValueError(f"{what}: src={source!r} is not a rank of this world of {size}")
    return int(source)


def all_gather(
    tensor_list: Sequence[Tensor], tensor: Tensor, group: Any = None, async_op: bool = False
) -> Work | None:
    """Fill ``tensor_list[r]`` with rank r's ``tensor``, on every rank. The list has one
    tensor per rank, all of ``tensor``'s dtype; their sizes may differ from rank to rank, as
    long as ``tensor_list[r]`` has the size of rank r's ``tensor``."""
    world = _world("all_gather", group)
    array = _array(tensor, "all_gather")
    if not isinstance(tensor_list, (list, tuple)) or len(tensor_list) != world.size:
        count = len(tensor_list) if isinstance(tensor_list, (list, tuple)) else "no list of"
        raise ValueError(
            f"all_gather: tensor_list must hold one tensor per rank ({world.size}), got {count}"
        )
    outputs = [_array(t, "all_gather", f"tensor_list[{i}]") for i, t in enumerate(tensor_list)]
    dtypes = {o.dtype for o in outputs} | {array.dtype}
    if len(dtypes) > 1:
        raise RuntimeError(
            "all_gather: Invalid usage of tensors with different dtypes: "
            + ", ".join(sorted(map(str, dtypes)))
        )
    if outputs[world.rank].size != array.size:
        raise ValueError(
            f"all_gather: tensor has {array.size} elements but tensor_list[{world.rank}] "
            f"(this rank's place) has {outputs[world.rank].size}"
        )
    pending = world.allgather(array, outputs, "all_gather")
    return _run(pending, _changed(*tensor_list), async_op)


def barrier(
    group: Any = None,
    async_op: bool = False,
    device_ids: Any = None,
    timeout: datetime.timedelta | None = None,
) -> Work | None:
    """Wait until every rank has reached its barrier."""
    world = _world("barrier", group)
    if device_ids is not None:
        raise ValueError("barrier: device_ids must be None (tensorgrad runs on the CPU)")
    seconds = None if timeout is None else _seconds(timeout, "barrier")
    pending = world.barrier("barrier")
    if async_op:
        return Work(pending, lambda: None)
    pending.wait(seconds)
    return None


def all_gather_object(object_list: list[Any], obj: Any, group: Any = None) -> None:
    """Fill ``object_list`` (one place per rank) with every rank's ``obj`` (pickled)."""
    world = _world("all_gather_object", group)
    if not isinstance(object_list, list) or len(object_list) != world.size:
        raise ValueError(
            f"all_gather_object: object_list must be a list with one place per rank ({world.size})"
        )
    object_list[:] = world.allgather_object(obj, "all_gather_object")


def broadcast_object_list(
    object_list: list[Any],
    src: int | None = None,
    group: Any = None,
    device: Any = None,
    group_src: int | None = None,
) -> None:
    """Replace ``object_list``'s items by rank ``src``'s (pickled), on every rank (the lists
    must have the same length on every rank)."""
    world = _world("broadcast_object_list", group)
    source = _source_rank(src, group_src, world.size, "broadcast_object_list")
    if not isinstance(object_list, list):
        raise TypeError("broadcast_object_list: object_list must be a list")
    items = world.broadcast_object(list(object_list), source, "broadcast_object_list")
    if len(items) != len(object_list):
        raise ValueError(
            f"broadcast_object_list: rank {source} sent {len(items)} objects, this rank's list "
            f"has {len(object_list)} places"
        )
    object_list[:] = items
