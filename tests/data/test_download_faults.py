"""A download server on 127.0.0.1 that misbehaves: it stalls before or in the middle of the
body, trickles bytes too slowly to finish, drops or resets the connection, and sends wrong
bytes. After each: a DownloadError that names the mirror and what went wrong, no file and no
temporary left behind, and the next mirror tried (and used when it works)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from tensorgrad.data import DownloadError, download_file

BODY = bytes(range(256)) * 64  # 16 KiB
MD5 = hashlib.md5(BODY).hexdigest()
GOOD_HEADERS = f"HTTP/1.1 200 OK\r\nContent-Length: {len(BODY)}\r\n\r\n".encode()


class RawServer:
    """Accepts connections on 127.0.0.1 and runs ``behave(connection)`` on each."""

    def __init__(self, behave: Callable[[socket.socket, threading.Event], None]) -> None:
        self.behave = behave
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.socket.getsockname()[1]}/file.bin"
        self.stop = threading.Event()
        self.connections = 0
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        self.socket.settimeout(0.05)
        while not self.stop.is_set():
            try:
                connection, _ = self.socket.accept()
            except TimeoutError:
                continue
            self.connections += 1
            with connection:
                connection.recv(65536)  # the request
                with contextlib.suppress(OSError):  # the client may give up first
                    self.behave(connection, self.stop)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=5)
        self.socket.close()


@pytest.fixture
def serve() -> Iterator[Callable[[Callable[[socket.socket, threading.Event], None]], RawServer]]:
    servers: list[RawServer] = []

    def start(behave: Callable[[socket.socket, threading.Event], None]) -> RawServer:
        servers.append(RawServer(behave))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def good(connection: socket.socket, stop: threading.Event) -> None:
    connection.sendall(GOOD_HEADERS + BODY)


def stall_in_the_body(connection: socket.socket, stop: threading.Event) -> None:
    connection.sendall(GOOD_HEADERS + BODY[:5000])
    stop.wait(2)  # silence, with the connection open


def stall_before_the_headers(connection: socket.socket, stop: threading.Event) -> None:
    stop.wait(2)


def trickle(connection: socket.socket, stop: threading.Event) -> None:
    connection.sendall(GOOD_HEADERS)
    for i in range(len(BODY)):  # one byte every 20 ms: never silent long enough to time out
        connection.sendall(BODY[i : i + 1])
        if stop.wait(0.02):
            return


def drop_without_length(connection: socket.socket, stop: threading.Event) -> None:
    connection.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + BODY[:7000])


def drop_with_length(connection: socket.socket, stop: threading.Event) -> None:
    connection.sendall(GOOD_HEADERS + BODY[:7000])


def reset(connection: socket.socket, stop: threading.Event) -> None:
    connection.sendall(GOOD_HEADERS + BODY[:3000])
    time.sleep(0.05)
    connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def wrong_bytes(connection: socket.socket, stop: threading.Event) -> None:
    connection.sendall(GOOD_HEADERS + BODY[:-1] + b"\x00")


def garbage_headers(connection: socket.socket, stop: threading.Event) -> None:
    connection.sendall(b"\x00\xffnot http at all\r\n\r\n")


FAULTS = {
    "stall in the body": (stall_in_the_body, "timed out after 0.3 s"),
    "stall before the headers": (stall_before_the_headers, "timed out after 0.3 s"),
    "trickle": (trickle, "stalled: "),
    "drop without a length": (drop_without_length, "checksum mismatch"),
    "drop with a length": (drop_with_length, "transfer cut off after 7000 of 16384 bytes"),
    "reset": (reset, "Connection reset by peer"),
    "wrong bytes": (wrong_bytes, "checksum mismatch: expected MD5 " + MD5),
    "garbage instead of HTTP": (garbage_headers, "BadStatusLine"),
}


def leftovers(directory) -> list[str]:
    return sorted(os.listdir(directory))


@pytest.mark.parametrize("fault", FAULTS)
def test_a_misbehaving_mirror_fails_cleanly_and_the_next_one_is_used(tmp_path, serve, fault):
    behave, reason = FAULTS[fault]
    bad, fine = serve(behave), serve(good)
    target = tmp_path / "data" / "file.bin"
    started = time.monotonic()
    with pytest.raises(DownloadError) as info:
        download_file([bad.url], target, MD5, timeout=0.3)
    assert time.monotonic() - started < 3  # no hang
    message = str(info.value)
    assert message.startswith("could not download file.bin:")
    assert f"{bad.url}: " in message and reason in message, message
    assert not (tmp_path / "data").exists()  # no file, no temporary, no empty directory
    assert download_file([bad.url, fine.url], target, MD5, timeout=0.3) == fine.url
    assert target.read_bytes() == BODY and leftovers(target.parent) == ["file.bin"]


def test_a_mirror_that_stalls_cannot_spoil_an_existing_file(tmp_path, serve):
    target = tmp_path / "file.bin"
    target.write_bytes(b"the old, verified contents")
    for behave in (stall_in_the_body, reset, wrong_bytes):
        with pytest.raises(DownloadError):
            download_file([serve(behave).url], target, MD5, timeout=0.3)
        assert target.read_bytes() == b"the old, verified contents"
        assert leftovers(tmp_path) == ["file.bin"]
