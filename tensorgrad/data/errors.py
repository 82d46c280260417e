"""Exceptions raised by ``tensorgrad.data``.

Each one names the file or the places involved, so that a user can act on the message alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


class DatasetError(ValueError):
    """A data file exists but is unusable: corrupt, truncated, or not what it should hold."""

    def __init__(self, path: str | Path, reason: str) -> None:
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{self.path}: {reason}")


class DownloadError(OSError):
    """Every mirror failed for one file; ``failures`` holds ``(url, reason)`` per attempt."""

    def __init__(self, filename: str, failures: Sequence[tuple[str, str]]) -> None:
        self.filename = filename
        self.failures = list(failures)
        lines = [f"could not download {filename}:"]
        lines += [f"  {url}: {reason}" for url, reason in self.failures]
        super().__init__("\n".join(lines))

    def __str__(self) -> str:
        return str(self.args[0])


class DatasetNotFoundError(FileNotFoundError):
    """A dataset was neither found on disk nor downloaded; the message says where and why."""

    def __init__(
        self, message: str, searched: Sequence[Path] = (), download_error: str | None = None
    ) -> None:
        self.searched = list(searched)
        self.download_error = download_error
        super().__init__(message)

    def __str__(self) -> str:
        return str(self.args[0])
