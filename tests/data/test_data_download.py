"""Downloads against a local HTTP server on 127.0.0.1: mirrors, checksums, atomicity."""

from __future__ import annotations

import hashlib
import os
import socket
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from tensorgrad.data import (
    MD5,
    MIRRORS,
    DatasetNotFoundError,
    DownloadError,
    download_file,
    load_dataset,
    load_mnist,
    md5sum,
)

FILES = (
    "train-images-idx3-ubyte.gz",
    "train-labels-idx1-ubyte.gz",
    "t10k-images-idx3-ubyte.gz",
    "t10k-labels-idx1-ubyte.gz",
)


def listing(directory: Path) -> list[str]:
    """Every file under ``directory``, hidden temporary files included."""
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*") if p.is_file())


def md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


# download_file


def test_download_file_success(tmp_path, http_server) -> None:
    body = b"some bytes" * 1000
    http_server.routes["/f.bin"] = body
    lines = []
    dest = tmp_path / "new" / "dir" / "f.bin"
    url = download_file([http_server.url + "/f.bin"], dest, md5(body), progress=lines.append)
    assert url == http_server.url + "/f.bin"
    assert dest.read_bytes() == body
    assert md5sum(dest) == md5(body)
    assert listing(tmp_path) == ["new/dir/f.bin"]
    assert lines == [f"downloading {http_server.url}/f.bin"]
    umask = os.umask(0o022)
    os.umask(umask)
    assert dest.stat().st_mode & 0o777 == 0o666 & ~umask, "not a private temporary file's mode"


def test_checksum_mismatch_leaves_nothing(tmp_path, http_server) -> None:
    http_server.routes["/f.bin"] = b"tampered"
    (tmp_path / "d").mkdir()
    with pytest.raises(DownloadError) as info:
        download_file([http_server.url + "/f.bin"], tmp_path / "d" / "f.bin", "0" * 32)
    message = str(info.value)
    assert message.startswith("could not download f.bin:\n")
    assert f"checksum mismatch: expected MD5 {'0' * 32}, got {md5(b'tampered')}" in message
    assert listing(tmp_path) == []
    assert info.value.failures[0][0] == http_server.url + "/f.bin"


def test_404_then_next_mirror(tmp_path, http_server) -> None:
    http_server.routes["/b/f.bin"] = b"payload"
    urls = [http_server.url + "/a/f.bin", http_server.url + "/b/f.bin"]
    assert download_file(urls, tmp_path / "f.bin", md5(b"payload")) == urls[1]
    assert http_server.requests == ["/a/f.bin", "/b/f.bin"]
    assert listing(tmp_path) == ["f.bin"]


@pytest.mark.parametrize(
    ("route", "reason"),
    [
        (404, "HTTP error 404: Not Found"),
        (500, "HTTP error 500: Internal Server Error"),
        (("cut", b"x" * 5000, 1000), "transfer cut off after 1000 of 5000 bytes"),
    ],
)
def test_failures_are_reported_and_leave_nothing(tmp_path, http_server, route, reason) -> None:
    http_server.routes["/f.bin"] = route
    with pytest.raises(DownloadError) as info:
        download_file([http_server.url + "/f.bin"], tmp_path / "f.bin", None)
    assert f"{http_server.url}/f.bin: {reason}" in str(info.value)
    assert listing(tmp_path) == []


def test_connection_refused(tmp_path, free_port) -> None:
    url = f"http://127.0.0.1:{free_port}/f.bin"
    with pytest.raises(DownloadError) as info:
        download_file([url], tmp_path / "sub" / "f.bin", None, timeout=2)
    assert f"{url}: cannot connect: [Errno 111] Connection refused" in str(info.value)
    assert not (tmp_path / "sub").exists()


def test_timeout(tmp_path) -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/f.bin"
        with pytest.raises(DownloadError, match="timed out"):
            download_file([url], tmp_path / "f.bin", None, timeout=0.3)
    assert listing(tmp_path) == []


def test_no_mirrors(tmp_path) -> None:
    with pytest.raises(DownloadError, match="no download URL is configured"):
        download_file([], tmp_path / "f.bin", None)


def test_interrupt_leaves_nothing(tmp_path, monkeypatch) -> None:
    class Interrupted:
        def __init__(self) -> None:
            self.headers: dict[str, str] = {}

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def read1(self, size):
            raise KeyboardInterrupt

    monkeypatch.setattr(urllib.request, "urlopen", lambda *a, **k: Interrupted())
    with pytest.raises(KeyboardInterrupt):
        download_file(["http://127.0.0.1:9/f.bin"], tmp_path / "f.bin", None)
    assert listing(tmp_path) == []


def test_existing_file_is_replaced_only_when_verified(tmp_path, http_server) -> None:
    dest = tmp_path / "f.bin"
    dest.write_bytes(b"old")
    http_server.routes["/f.bin"] = b"new"
    with pytest.raises(DownloadError):
        download_file([http_server.url + "/f.bin"], dest, md5(b"other"))
    assert dest.read_bytes() == b"old"
    download_file([http_server.url + "/f.bin"], dest, md5(b"new"))
    assert dest.read_bytes() == b"new"


# Datasets


def test_mnist_download_then_reuse(tmp_path, serve_mnist) -> None:
    server, arrays = serve_mnist
    ds = load_mnist(tmp_path / "root", mirrors=server.url + "/good")
    target = tmp_path / "root" / "mnist"
    assert ds.source == f"downloaded from {server.url}/good/ into {target}"
    assert listing(tmp_path / "root") == sorted(f"mnist/{f}" for f in FILES)
    np.testing.assert_array_equal(ds.train_labels, arrays["train_labels"])
    np.testing.assert_array_equal(ds.test_images, arrays["test_images"] / np.float32(255))
    assert len(server.requests) == 4

    again = load_mnist(tmp_path / "root", mirrors=server.url + "/good")
    assert again.source == str(target) and len(server.requests) == 4


def test_default_target_is_the_cache(tmp_path, serve_mnist, monkeypatch) -> None:
    server, _ = serve_mnist
    monkeypatch.setenv("TENSORGRAD_MNIST_MIRROR", f"{server.url}/none, {server.url}/good")
    ds = load_dataset("mnist")
    target = tmp_path / "xdg-cache" / "tensorgrad" / "mnist"
    assert ds.source == f"downloaded from {server.url}/good/ into {target}"
    assert "/none/train-images-idx3-ubyte.gz" in server.requests


def test_data_env_is_the_target(tmp_path, serve_mnist, monkeypatch) -> None:
    server, _ = serve_mnist
    monkeypatch.setitem(MIRRORS, "mnist", (server.url + "/good/",))
    monkeypatch.setenv("TENSORGRAD_DATA", str(tmp_path / "env"))
    assert load_dataset("auto").source.endswith(f"into {tmp_path / 'env' / 'mnist'}")


def test_root_named_after_the_dataset_is_the_target(tmp_path, serve_mnist) -> None:
    server, _ = serve_mnist
    ds = load_mnist(tmp_path / "MNIST", mirrors=[server.url + "/good/"])
    assert ds.source.endswith(f"into {tmp_path / 'MNIST'}")
    assert listing(tmp_path / "MNIST") == sorted(FILES)


def test_only_missing_files_are_downloaded(tmp_path, serve_mnist, mnist_files) -> None:
    server, _ = serve_mnist
    files, _ = mnist_files
    target = tmp_path / "xdg-cache" / "tensorgrad" / "mnist"
    target.mkdir(parents=True)
    for name in FILES[:3]:
        (target / name).write_bytes(files[name])
    load_mnist(mirrors=server.url + "/good")
    assert server.requests == ["/good/t10k-labels-idx1-ubyte.gz"]


def test_checksum_mismatch_via_loader(tmp_path, serve_mnist, monkeypatch) -> None:
    server, _ = serve_mnist
    monkeypatch.setitem(MD5["mnist"], "train-labels-idx1-ubyte.gz", "f" * 32)
    with pytest.raises(DatasetNotFoundError) as info:
        load_mnist(tmp_path / "root", mirrors=server.url + "/good")
    message = str(info.value)
    assert "could not download train-labels-idx1-ubyte.gz" in message
    assert f"checksum mismatch: expected MD5 {'f' * 32}" in message
    assert listing(tmp_path / "root") == ["mnist/train-images-idx3-ubyte.gz"], (
        "verified files are kept, the bad one is not"
    )
    assert server.requests == [
        "/good/train-images-idx3-ubyte.gz",
        "/good/train-labels-idx1-ubyte.gz",
    ]


def test_first_mirror_404s(tmp_path, serve_mnist) -> None:
    server, _ = serve_mnist
    ds = load_mnist(tmp_path, mirrors=[server.url + "/gone", server.url + "/good"])
    assert ds.source.startswith(f"downloaded from {server.url}/good/ into")
    assert server.requests[:2] == [
        "/gone/train-images-idx3-ubyte.gz",
        "/good/train-images-idx3-ubyte.gz",
    ]


def test_server_down(tmp_path, free_port) -> None:
    url = f"http://127.0.0.1:{free_port}/mnist/"
    with pytest.raises(DatasetNotFoundError) as info:
        load_mnist(tmp_path / "root", mirrors=url, timeout=2)
    message = str(info.value)
    assert f"{url}train-images-idx3-ubyte.gz: cannot connect: [Errno 111] Connection refused" in (
        message
    )
    assert f"download them from {url} into {tmp_path / 'root' / 'mnist'}/" in message
    assert not (tmp_path / "root").exists()
