"""Running ``tests/distributed/worker.py`` (or another script) under ``mpiexec -n 2``, always
with a hard timeout, and never leaving a process behind.

``mpiexec`` (MPICH's Hydra) starts each rank in a session of its own, so killing the
launcher's process group would not reach them: every rank writes its process id to the output
folder first (a file ``pid-<pid>``), and :func:`run` and :meth:`Launch.finish` end any of them
that is still alive when they return.
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
    return Launch([str(WORKER), ",".join(scenarios), str(out)], out, env).finish(timeout)


class Launch:
    """``mpiexec -n ranks python SCRIPT ARGS...`` (``argv`` is the script and its arguments),
    started at once, its output (stdout and stderr together) collected by a thread. The
    script writes ``pid-<pid>`` into ``out`` on every rank, so that :meth:`finish` can end
    the ranks that outlive the launcher."""

    def __init__(
        self, argv: list[str], out: Path, env: dict[str, str] | None = None, ranks: int = RANKS
    ) -> None:
        import threading

        self.script, self.out = argv[0], out
        self.start = time.perf_counter()
        self.lines: list[str] = []
        self.process = subprocess.Popen(
            [require_mpi(), "-n", str(ranks), sys.executable, *argv],
            cwd=ROOT,
            env=_environment(env),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line)

    def output(self) -> str:
        return "".join(self.lines)

    def read_until(self, text: str, timeout: float) -> str:
        """The output so far, once it holds ``text`` (the test fails after ``timeout``
        seconds, or when the launcher ends first)."""
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            if text in self.output():
                return self.output()
            if self.process.poll() is not None and not self.reader.is_alive():
                break
            time.sleep(0.02)
        result = self.finish(1, check=False)
        pytest.fail(f"no {text!r} in the output after {timeout} s:\n{result.output}")

    def signal(self, signum: int) -> None:
        """Send ``signum`` to the launcher (``mpiexec`` forwards SIGINT and SIGTERM to every
        rank)."""
        self.process.send_signal(signum)

    def finish(self, timeout: float, check: bool = True) -> Result:
        """Wait for the launcher to end (at most ``timeout`` seconds: then the test fails,
        unless ``check`` is False) and end what is left of the ranks."""
        hung = False
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            hung = True
        finally:
            _stop(self.process)
            _end_ranks(self.out, self.script)
        self.reader.join(timeout=10)
        seconds = time.perf_counter() - self.start
        if hung and check:
            pytest.fail(
                f"mpiexec still running after {timeout} s (a hang); output:\n{self.output()}"
            )
        return Result(self.process.returncode, self.output(), seconds)


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


def _end_ranks(out: Path, script: str = str(WORKER)) -> None:
    """Kill any rank of this run that outlived the launcher (checked by its command line, so
    a recycled process id is left alone)."""
    for marker in out.glob("pid-*"):
        pid = int(marker.name.rsplit("-", 1)[1])
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if script.encode() not in f.read():
                    continue
            os.kill(pid, signal.SIGKILL)
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
