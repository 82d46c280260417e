"""Downloading a file from a list of mirrors, verified by MD5, written atomically.

The file is streamed into a hidden temporary file in the target directory, its checksum is
checked, and only then is it renamed into place with :func:`os.replace`. Whatever goes wrong
(an HTTP error, a refused connection, a timeout, a transfer that stalls or trickles, a
cut-off transfer, a checksum mismatch, an interrupt) the temporary file is removed, so a
partial download is never mistaken for data, and the next mirror is tried.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from tensorgrad.data.errors import DownloadError

__all__ = ["DEFAULT_TIMEOUT", "MIN_PROGRESS", "download_file", "md5sum"]

#: Seconds to wait for a connection or for the next bytes of a transfer.
DEFAULT_TIMEOUT = 10.0
#: Bytes that must arrive in every ``timeout`` seconds of a transfer: a server that trickles
#: slower (never silent long enough to time out) is abandoned as stalled.
MIN_PROGRESS = 64 * 1024
_CHUNK = 1 << 20
_USER_AGENT = "tensorgrad"


def md5sum(path: str | os.PathLike[str]) -> str:
    """The MD5 hex digest of a file (as ``md5sum`` prints it)."""
    import hashlib

    digest = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def download_file(
    urls: Sequence[str],
    dest: str | os.PathLike[str],
    md5: str | None,
    timeout: float = DEFAULT_TIMEOUT,
    progress: Callable[[str], None] | None = None,
) -> str:
    """Download ``dest`` from the first of ``urls`` that works; return that URL.

    The content must have the MD5 hex digest ``md5`` (no check when it is None). Raises
    :class:`DownloadError`, listing every URL tried and why it failed, when none works.
    """
    import http.client
    import urllib.error

    dest = Path(dest)
    failures: list[tuple[str, str]] = []
    if not urls:
        raise DownloadError(dest.name, [("(no mirror)", "no download URL is configured")])
    # Directories this call creates are removed again if nothing could be downloaded.
    created = [d for d in (dest.parent, *dest.parent.parents) if not d.exists()]
    for url in urls:
        if progress is not None:
            progress(f"downloading {url}")
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)
            _fetch(url, dest, md5, timeout)
        except (_ChecksumMismatch, _TransferError) as exc:
            failures.append((url, str(exc)))
        except urllib.error.HTTPError as exc:
            failures.append((url, f"HTTP error {exc.code}: {exc.reason}"))
        except urllib.error.URLError as exc:
            failures.append((url, f"cannot connect: {exc.reason}"))
        except TimeoutError:
            failures.append((url, f"timed out after {timeout:g} s"))
        except http.client.IncompleteRead as exc:
            failures.append((url, f"transfer cut off after {len(exc.partial)} bytes"))
        except (OSError, ValueError, http.client.HTTPException) as exc:
            failures.append((url, f"{type(exc).__name__}: {exc}"))
        else:
            return url
    for directory in created:
        try:
            directory.rmdir()
        except OSError:
            break
    raise DownloadError(dest.name, failures)


class _ChecksumMismatch(ValueError):
    pass


class _TransferError(OSError):
    pass


def _fetch(url: str, dest: Path, md5: str | None, timeout: float) -> None:
    """One attempt: stream ``url`` into a temporary file beside ``dest``, verify, rename."""
    import hashlib
    import time
    import urllib.request

    request = urllib.request.Request(url, headers={"User-Agent": _USER_AGENT})
    # Not tempfile.mkstemp: its files are private (0600), and the data should get the usual
    # permissions, so that a shared data directory stays readable by all.
    tmp = dest.parent / f".{dest.name}.{os.getpid()}.{os.urandom(4).hex()}.part"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        digest = hashlib.md5(usedforsecurity=False)
        received = 0
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(request, timeout=timeout) as resp:
            announced = resp.headers.get("Content-Length")
            window_start, window_bytes = time.monotonic(), 0
            while chunk := resp.read1(_CHUNK):  # what has arrived, without waiting for more
                received += len(chunk)
                digest.update(chunk)
                out.write(chunk)
                window_bytes += len(chunk)
                elapsed = time.monotonic() - window_start
                if elapsed >= timeout:
                    if window_bytes < MIN_PROGRESS:
                        raise _TransferError(
                            f"stalled: {window_bytes} bytes in {elapsed:.1f} s (a transfer must "
                            f"bring {MIN_PROGRESS} bytes every {timeout:g} s)"
                        )
                    window_start, window_bytes = time.monotonic(), 0
        # http.client ends a read at a closed connection without complaint, even short of
        # the announced length.
        if announced is not None and announced.isdigit() and received < int(announced):
            raise _TransferError(f"transfer cut off after {received} of {announced} bytes")
        if md5 is not None and digest.hexdigest() != md5.lower():
            raise _ChecksumMismatch(
                f"checksum mismatch: expected MD5 {md5.lower()}, got {digest.hexdigest()}"
            )
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
