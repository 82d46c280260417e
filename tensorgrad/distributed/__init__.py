"""Data-parallel training across processes, on MPI, with ``torch.distributed``'s names.

    import tensorgrad.distributed as dist
    dist.init_process_group()          # under mpiexec: its ranks; without one: a world of one
    rank, world = dist.get_rank(), dist.get_world_size()
    dist.all_reduce(tensor)            # in place: the sum over the ranks
    dist.destroy_process_group()

Importing this package imports no MPI: ``init_process_group`` imports mpi4py (which starts
MPI) only when an MPI launcher started the process. See docs/distributed.md.
"""

from tensorgrad.distributed.process_group import (
    DEFAULT_TIMEOUT,
    ReduceOp,
    Work,
    all_gather,
    all_gather_object,
    all_reduce,
    barrier,
    broadcast,
    broadcast_object_list,
    destroy_process_group,
    get_backend,
    get_rank,
    get_world_size,
    init_process_group,
    is_available,
    is_initialized,
    is_mpi_available,
)

__all__ = [
    "DEFAULT_TIMEOUT",
    "ReduceOp",
    "Work",
    "all_gather",
    "all_gather_object",
    "all_reduce",
    "barrier",
    "broadcast",
    "broadcast_object_list",
    "destroy_process_group",
    "get_backend",
    "get_rank",
    "get_world_size",
    "init_process_group",
    "is_available",
    "is_initialized",
    "is_mpi_available",
]
