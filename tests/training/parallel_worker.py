"""The program that ``tests/training/test_world.py`` runs on every rank under ``mpiexec``:
the ``tensorgrad train`` command (``tensorgrad.cli.main``), with faults injected.

    mpiexec -n 2 python tests/training/parallel_worker.py FAULTS OUTDIR train ARGS...

``FAULTS`` is ``none`` or a comma-separated list of ``KIND@RANK:STEP``: ``nan`` makes rank
RANK's batch of step STEP NaN, ``sigterm`` / ``sigint`` send that signal to rank RANK before
step STEP, ``kill`` kills rank RANK (SIGKILL) before step STEP; ``nodata@RANK`` makes loading
the dataset fail on rank RANK. Every file ``tg.save`` writes is recorded in
``OUTDIR/writes-rank<r>``, one path a line.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path


def main() -> int:
    faults, out, argv = sys.argv[1], Path(sys.argv[2]), sys.argv[3:]
    (out / f"pid-{os.getpid()}").touch()  # for the launcher to end this process, if need be
    from tensorgrad.distributed import launcher

    launch = launcher.detect()
    rank = launch.rank if launch is not None and launch.rank is not None else 0

    import numpy as np

    import tensorgrad as tg
    import tensorgrad.data
    from tensorgrad import cli
    from tensorgrad.training import loop

    save = tg.save

    def recorded_save(obj, path, *args, **kwargs):
        with open(out / f"writes-rank{rank}", "a") as f:
            f.write(f"{path}\n")
        return save(obj, path, *args, **kwargs)

    tg.save = recorded_save
    at_step: dict[int, str] = {}
    for fault in faults.split(",") if faults != "none" else []:
        kind, _, where = fault.partition("@")
        fault_rank, _, step = where.partition(":")
        if int(fault_rank) != rank:
            continue
        if kind == "nodata":

            def missing(*args, **kwargs):
                raise tensorgrad.data.DatasetNotFoundError(
                    f"the dataset is not on the machine of rank {rank}"
                )

            tensorgrad.data.load_dataset = missing
        else:
            at_step[int(step)] = kind

    def before_step(self, run, x, y):
        kind = at_step.get(run.progress.step + 1)
        if kind == "nan":
            x._data[...] = np.nan
        elif kind in ("sigterm", "sigint"):
            signal.raise_signal(signal.SIGTERM if kind == "sigterm" else signal.SIGINT)
        elif kind == "kill":
            os.kill(os.getpid(), signal.SIGKILL)

    loop.Hooks.before_step = before_step
    return cli.main(argv)


if __name__ == "__main__":
    sys.exit(main())
