"""What the MPI launcher (``mpiexec``, ``mpirun``, ``srun``) tells a process about its world.

Launchers put the world size and the process's rank in its environment before MPI starts.
Reading them needs no MPI, so ``init_process_group`` can decide without importing mpi4py
whether this process is one of several (then MPI is needed) or alone (then a world of one
needs nothing), and can check afterwards that MPI sees the world the launcher started: an
mpi4py built for one MPI but started by another MPI's ``mpiexec`` sees a world of one in every
process, and would train N separate models without a word.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping

#: (launcher, world size variable, rank variable), in the order they are looked for
LAUNCHER_VARIABLES: tuple[tuple[str, str, str], ...] = (
    ("mpiexec (MPICH, Intel MPI)", "PMI_SIZE", "PMI_RANK"),
    ("mpirun (Open MPI)", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"),
    ("mpirun (MVAPICH)", "MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_RANK"),
    ("srun (SLURM)", "SLURM_STEP_NUM_TASKS", "SLURM_PROCID"),
)
#: PMIx launchers (Open MPI 5's mpirun, ``srun --mpi=pmix``) name the rank but not the size
PMIX_RANK = "PMIX_RANK"
#: ``mpi`` forces MPI without a recognised launcher; ``local`` forces a world of one
BACKEND_VARIABLE = "TENSORGRAD_DISTRIBUTED"


@dataclasses.dataclass(frozen=True)
class Launch:
    """How this process was started: by which launcher, in a world of what size, as which
    rank (``None`` where the launcher does not say)."""

    launcher: str
    size: int | None
    rank: int | None


def _int(value: str | None, name: str) -> int | None:
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise RuntimeError(
            f"init_process_group: environment variable {name}={value!r} is not an integer"
        ) from None


def detect(environ: Mapping[str, str] | None = None) -> Launch | None:
    """The launcher that started this process, or None when there is none (a plain
    ``python train.py``)."""
    environ = os.environ if environ is None else environ
    for launcher, size_name, rank_name in LAUNCHER_VARIABLES:
        if size_name in environ:
            return Launch(
                launcher,
                _int(environ[size_name], size_name),
                _int(environ.get(rank_name), rank_name),
            )
    if PMIX_RANK in environ:
        return Launch("a PMIx launcher", None, _int(environ[PMIX_RANK], PMIX_RANK))
    return None


def forced_backend(environ: Mapping[str, str] | None = None) -> str | None:
    """``"mpi"`` or ``"local"`` when ``TENSORGRAD_DISTRIBUTED`` says so, else None."""
    environ = os.environ if environ is None else environ
    value = environ.get(BACKEND_VARIABLE, "").strip().lower()
    if value in ("", "auto"):
        return None
    if value not in ("mpi", "local"):
        raise RuntimeError(
            f"init_process_group: {BACKEND_VARIABLE}={value!r}: expected 'mpi', 'local' or 'auto'"
        )
    return value
