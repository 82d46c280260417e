"""Atomic writes: a file is written to a hidden temporary beside its target
(``.<name>.<host>-<pid>-<random>.tmp``, a name no loader looks for), synced to disk and renamed
over the target, so that a crash, a kill or an error leaves either the old file or the new one,
never a partial file. A temporary left by a process that was killed is removed by the next
write to the same target on the same machine. ``tg.save``, safetensors and ONNX files use it."""

from __future__ import annotations

import contextlib
import errno
import os
import re
from collections.abc import Iterator
from typing import IO

PathLike = str | os.PathLike


def _host() -> str:
    import platform

    return re.sub(r"[^A-Za-z0-9_]", "_", platform.node())[:32] or "host"


def _temporary_prefix(target: str) -> str:
    """``.<name>.`` (the name cut to 100 characters): the start of the target's temporaries."""
    return f".{os.path.basename(target)[:100]}."


def _create_temporary(target: str) -> tuple[int, str]:
    """A new file next to ``target`` (so the rename is atomic), with normal permissions and a
    hidden ``.tmp`` name that says which process made it. Errors name the target."""
    import secrets

    directory = os.path.dirname(target)
    prefix = _temporary_prefix(target) + f"{_host()}-{os.getpid()}-"
    while True:
        temporary = os.path.join(directory, f"{prefix}{secrets.token_hex(6)}.tmp")
        try:
            return os.open(temporary, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666), temporary
        except FileExistsError:
            continue
        except FileNotFoundError:
            raise FileNotFoundError(
                errno.ENOENT, f"cannot save: the directory {directory} does not exist", target
            ) from None
        except OSError as exc:
            raise type(exc)(
                exc.errno,
                f"cannot save: cannot create files in {directory} ({exc.strerror})",
                target,
            ) from None


def _process_is_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return True
    except OSError:
        return False  # it exists (perhaps another user's)
    return False


def _remove_stale_temporaries(target: str) -> None:
    """Remove temporaries of ``target`` left by killed processes of this machine (POSIX only:
    elsewhere, and for other machines' files, they are only ignored)."""
    if os.name != "posix":
        return
    directory = os.path.dirname(target)
    prefix = _temporary_prefix(target) + _host() + "-"
    with contextlib.suppress(OSError):
        for name in os.listdir(directory):
            if not (name.startswith(prefix) and name.endswith(".tmp")):
                continue
            pid = name[len(prefix) :].split("-", 1)[0]
            if pid.isdigit() and int(pid) != os.getpid() and _process_is_gone(int(pid)):
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(directory, name))


def _sync_directory(directory: str) -> None:
    """Make the rename itself durable (POSIX); a no-op where directories cannot be opened."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def atomic_file(path: PathLike) -> Iterator[IO[bytes]]:
    """``with atomic_file(path) as file: ...``: ``file`` (open for reading and writing) becomes
    ``path`` when the block ends without an error; on any error, nothing is left behind."""
    target = os.path.abspath(os.fspath(path))
    if os.path.isdir(target):
        raise IsADirectoryError(
            errno.EISDIR, "cannot save: the target is a directory", os.fspath(path)
        )
    fd, temporary = _create_temporary(target)
    try:
        with os.fdopen(fd, "w+b") as file:
            yield file
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    _sync_directory(os.path.dirname(target))
    _remove_stale_temporaries(target)


def write_atomically(path: PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (for the other formats tensorgrad writes:
    safetensors, ONNX)."""
    with atomic_file(path) as file:
        file.write(data)
