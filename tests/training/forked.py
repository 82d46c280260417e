"""Run the command line in a forked child process, to kill it or signal it.

A fork starts in milliseconds with tensorgrad and scikit-learn already imported (a fresh
``python -m tensorgrad`` spends about two seconds importing), so the fault-injection tests can
kill many runs and stay fast. The child is a real process: SIGKILL ends it as it would end any
training run, and its signal handlers are its own.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import time
from pathlib import Path

import numpy as np

import tensorgrad as tg

CAN_FORK = "fork" in multiprocessing.get_all_start_methods()
_FORK = multiprocessing.get_context("fork") if CAN_FORK else None
_warm: list[bool] = []


def _warm_up() -> None:
    """Import what every child needs (scikit-learn's is most of it) once, in the parent."""
    if not _warm:
        from tensorgrad.data import load_digits
        from tensorgrad.training import commands  # noqa: F401

        load_digits()
        _warm.append(True)


def _child(argv: list[str], log: str) -> None:
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115 - the child's own
    sys.stderr = sys.stdout
    signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a fresh interpreter
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    from tensorgrad import cli

    try:
        status = cli.main(argv)
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else 1
    sys.stdout.flush()
    os._exit(status)


class Child:
    """A forked ``tensorgrad`` command: ``argv`` as after the program name."""

    def __init__(self, argv: list[str], log: Path) -> None:
        _warm_up()
        self.log = log
        self.process = _FORK.Process(target=_child, args=(argv, str(log)), daemon=True)
        self.process.start()

    def signal(self, signum: int) -> None:
        os.kill(self.process.pid, signum)

    def wait(self, timeout: float = 60) -> int:
        """The exit status: the code, or minus the signal number that killed it."""
        self.process.join(timeout)
        if self.process.exitcode is None:
            self.process.kill()
            self.process.join()
            raise AssertionError(f"the child hung; its output:\n{self.output()}")
        return self.process.exitcode

    def finished(self) -> bool:
        return self.process.exitcode is not None

    def wait_up_to(self, seconds: float) -> bool:
        """Wait ``seconds`` at most; whether the child has ended."""
        self.process.join(seconds)
        return self.finished()

    def output(self) -> str:
        return self.log.read_text() if self.log.exists() else ""

    def wait_for(self, condition, timeout: float = 30) -> bool:
        """Poll ``condition()`` until it holds (True) or the child ends first (False)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if condition():
                return True
            if not self.process.is_alive():
                return condition()
            time.sleep(0.002)
        raise AssertionError(f"timed out waiting; the child's output:\n{self.output()}")


def run(argv: list[str], log: Path) -> tuple[int, str]:
    child = Child(argv, log)
    status = child.wait()
    return status, child.output()


def temporaries(directory: Path) -> list[str]:
    return sorted(name for name in os.listdir(directory) if name.endswith(".tmp"))


def same_weights(a: Path, b: Path) -> bool:
    """Whether two --save files hold the same weights, bit for bit."""
    x, y = tg.load(a)["model"], tg.load(b)["model"]
    return list(x) == list(y) and all(
        x[k].dtype == y[k].dtype and np.asarray(x[k]).tobytes() == np.asarray(y[k]).tobytes()
        for k in x
    )
