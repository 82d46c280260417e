"""Stopping a run cleanly on SIGINT (Ctrl-C) or SIGTERM.

The first signal only sets a flag: the trainer finishes its step, writes a checkpoint and
stops. A second signal stops at once (:class:`Interrupted`, raised wherever the program is,
even in the middle of writing the checkpoint, whose temporary file is then removed: the
previous checkpoint stays as it was).
"""

from __future__ import annotations

import signal
import sys
import threading
from types import FrameType, TracebackType
from typing import Any, TextIO

#: The exit status of a process stopped by each signal, as shells report it (128 + number).
EXIT_STATUS = {signal.SIGINT: 130, signal.SIGTERM: 143}


class Interrupted(KeyboardInterrupt):
    """A second SIGINT or SIGTERM: the run stops at once. ``signum`` says which."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(f"stopped at once by {signal.Signals(signum).name}")

    @property
    def exit_status(self) -> int:
        return EXIT_STATUS.get(self.signum, 128 + self.signum)


class GracefulStop:
    """A context manager that turns SIGINT and SIGTERM into a request to stop (``requested``).

    Handlers can only be installed from the main thread; elsewhere (or with ``enabled``
    False) the signals keep their usual effect and ``requested`` stays None.
    """

    def __init__(self, enabled: bool = True, stream: TextIO | None = None) -> None:
        self.enabled = enabled
        self.stream = stream
        self.requested: int | None = None
        self._previous: dict[int, Any] = {}

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.requested is not None:
            raise Interrupted(signum)
        self.requested = signum
        stream = self.stream or sys.stderr
        stream.write(
            f"\n{signal.Signals(signum).name}: stopping after this step to write the checkpoint "
            "(press Ctrl-C again to stop at once)\n"
        )
        stream.flush()

    def __enter__(self) -> GracefulStop:
        if self.enabled and threading.current_thread() is threading.main_thread():
            for signum in EXIT_STATUS:
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()
