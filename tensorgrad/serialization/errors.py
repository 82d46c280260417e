"""What a file that is not a checkpoint is, in words, and the error that says so."""

from __future__ import annotations


class CheckpointError(ValueError):
    """The file is not a checkpoint tensorgrad reads, or it is truncated, corrupt or too new."""


#: how any pickle protocol from 2 on writes PyTorch's magic number 0x1950a86a20f9469cfc6c
_MAGIC = b"\x8a\x0a" + (0x1950A86A20F9469CFC6C).to_bytes(10, "little")


def sniff(head: bytes) -> str:
    """What the first bytes of a file say it is: ``"zip"``, ``"torch-legacy"`` (PyTorch's
    format before 1.6: pickles one after another), ``"tar"`` (PyTorch's before 0.4),
    ``"npy"``, ``"safetensors"``, ``"empty"``, ``"text"`` or ``"unknown"``."""
    if not head:
        return "empty"
    if head[:4] == b"PK\x03\x04" or head[:4] == b"PK\x05\x06":
        return "zip"
    if head[:1] == b"\x80" and _MAGIC in head[:40]:  # a pickle of PyTorch's magic number
        return "torch-legacy"
    if head[:6] == b"\x93NUMPY":
        return "npy"
    if (
        len(head) >= 10
        and head[8:10] in (b'{"', b"{'", b"{ ")
        and int.from_bytes(head[:8], "little") < 1 << 28
    ):
        return "safetensors"
    if len(head) > 262 and head[257:262] == b"ustar":
        return "tar"
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        return "unknown"
    return "text" if text.isprintable() or text.strip().isprintable() or "\n" in text else "unknown"


def not_a_checkpoint(path: str, kind: str, head: bytes) -> CheckpointError:
    """The error for a file whose first bytes say it is none of the formats :func:`load`
    reads, naming what it is and what to do."""
    what = {
        "empty": "an empty file (was it written completely?)",
        "npy": "a NumPy .npy file, not a checkpoint: load it with np.load",
        "safetensors": "a safetensors file: load it with tensorgrad.safetensors.load_file",
        "tar": "a PyTorch file in the tar format of PyTorch before 0.4, which tensorgrad does "
        "not read: load it in PyTorch and save it again with torch.save",
    }.get(kind)
    if what is None and kind == "text":
        start = head[:60].decode("utf-8", "replace").strip()
        looks = (
            " (an HTML page: a failed download?)"
            if start.lower().startswith(("<!doctype", "<html"))
            else ""
        )
        what = f"a text file{looks}, not a checkpoint; it starts {start[:40]!r}"
    if what is None:
        what = (
            "not a checkpoint: neither PyTorch's format (a zip archive, or the older pickle "
            "format), nor tensorgrad's, nor safetensors"
        )
    return CheckpointError(f"{path}: {what}")
