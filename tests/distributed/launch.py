"""Running ``tests/distributed/worker.py`` under ``mpiexec -n 2``, always with a hard timeout,
and never leaving a process behind.

``mpiexec`` (MPICH's Hydra) starts each rank in a session of its own, so killing the
launcher's process group would not reach them: every rank writes its process id to the output
folder first, and :func:`run` ends any of them that is still alive when it returns.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).with_name("worker.py")
RANKS = 2


def mpiexec() -> str | None:
    """The ``mpiexec`` next to this Python (pip's ``mpich`` puts it there), else on PATH."""
    beside = Path(sys.executable).with_name("mpiexec")
    return str(beside) if beside.exists() else shutil.which("mpiexec")


def require_mpi() -> str:
    """Skip the test unless mpi4py and an ``mpiexec`` are installed."""
    pytest.importorskip("mpi4py", reason="needs mpi4py: pip install 'tensorgrad[distributed]'")
    found = mpiexec()
    if found is None:
        pytest.skip("needs mpiexec: pip install 'tensorgrad[distributed]'")
    return found


@dataclasses.dataclass
class Result:
    returncode: int
    output: str
    seconds: float


def _environment(extra: dict[str, str] | None) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PMI_", "PMIX_", "OMPI_", "MV2_", "SLURM_", "TENSORGRAD_DIST"))
    }
    # one BLAS thread per rank: two ranks on two cores
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env.update(extra or {})
    return env


def run(
    scenarios: list[str], out: Path, timeout: float, env: dict[str, str] | None = None
) -> Result:
    """Run the worker's ``scenarios`` on two ranks; the launcher is stopped after ``timeout``
    seconds (the test then fails: nothing here should ever hang)."""
    command = [require_mpi(), "-n", str(RANKS), sys.executable, str(WORKER)]
    command += [",".join(scenarios), str(out)]
    start = time.perf_counter()
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        env=_environment(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _stop(process)
        output, _ = process.communicate()
        pytest.fail(f"mpiexec still running after {timeout} s (a hang); output:\n{output}")
    finally:
        _stop(process)
        _end_ranks(out)
    return Result(process.returncode, output, time.perf_counter() - start)


def _stop(process: subprocess.Popen) -> None:
    """SIGTERM to the launcher (Hydra then ends its ranks), SIGKILL if that is not enough."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _end_ranks(out: Path) -> None:
    """Kill any rank of this run that outlived the launcher (checked by its command line, so
    a recycled process id is left alone)."""
    for marker in out.glob("pid-*"):
        pid = int(marker.name.rsplit("-", 1)[1])
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if str(WORKER).encode() not in f.read():
                    continue
            os.kill(pid, signal.SIGKILL)
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
