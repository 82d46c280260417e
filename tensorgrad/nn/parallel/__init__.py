"""Data parallelism across processes: ``DistributedDataParallel``, as ``torch.nn.parallel``.

Importing this package imports no MPI (``tensorgrad.distributed`` starts it on demand).
"""

from tensorgrad.nn.parallel.distributed import (
    DistributedDataParallel,
    consume_prefix_in_state_dict_if_present,
)

__all__ = ["DistributedDataParallel", "consume_prefix_in_state_dict_if_present"]
