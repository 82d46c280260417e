"""tg.save / tg.load: round trips, atomic writes, refusing foreign or damaged files, and
resuming training from a checkpoint exactly where it stopped."""

from __future__ import annotations

import io
import json
import os
import struct
import subprocess
import sys
import zipfile

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import nn, optim
from tensorgrad.nn import functional as F
from tensorgrad.serialization import CheckpointError, atomic, torch_zip

needs_fork = pytest.mark.skipif(os.name != "posix", reason="needs os.fork and SIGKILL (POSIX)")


def test_nested_structures_round_trip(tmp_path):
    obj = {
        "weights": {
            "0.weight": np.arange(6, dtype=np.float32).reshape(2, 3),
            "0.bias": np.zeros(2),
        },
        "counts": np.array([1, 2], dtype=np.int64),
        "flags": np.array([True, False]),
        "epoch": 3,
        "big": 2**70,
        "lr": 0.1,
        "nan": float("nan"),
        "name": "mnist-mlp",
        "none": None,
        "ok": True,
        "betas": (0.9, 0.999),
        "history": [1.5, [2, "x"], {"deep": np.ones(1)}],
        "state": {0: {"step": 4}, 7: {}},
        "scalar": np.float32(2.5),
        "tensor": tg.tensor([1.0, 2.0]),
        "param": nn.Parameter(np.ones(2, dtype=np.float64)),
    }
    path = tmp_path / "ckpt.npz"
    tg.save(obj, path)
    back = tg.load(path)
    assert list(back) == list(obj)
    np.testing.assert_array_equal(back["weights"]["0.weight"], obj["weights"]["0.weight"])
    assert back["weights"]["0.weight"].dtype == np.float32
    assert back["weights"]["0.bias"].dtype == np.float64
    assert back["counts"].dtype == np.int64 and back["flags"].dtype == np.bool_
    assert back["epoch"] == 3 and back["big"] == 2**70 and back["lr"] == 0.1
    assert np.isnan(back["nan"]) and back["name"] == "mnist-mlp"
    assert back["none"] is None and back["ok"] is True
    assert back["betas"] == (0.9, 0.999) and isinstance(back["betas"], tuple)
    assert back["history"][:2] == [1.5, [2, "x"]]
    np.testing.assert_array_equal(back["history"][2]["deep"], [1.0])
    assert back["state"] == {0: {"step": 4}, 7: {}}  # integer keys stay integers
    assert back["scalar"] == np.float32(2.5) and back["scalar"].dtype == np.float32
    assert type(back["tensor"]) is tg.Tensor and back["tensor"].tolist() == [1.0, 2.0]
    assert isinstance(back["param"], nn.Parameter) and back["param"].requires_grad
    assert back["param"].dtype == np.float64


def test_the_file_is_pytorchs_zip_layout(tmp_path):
    """PyTorch's entries, in its order, stored uncompressed, storages on 64-byte boundaries."""
    path = tmp_path / "model.ckpt"  # any name: nothing is appended
    model = nn.Sequential(nn.Linear(3, 2))
    tg.save({"model": model.state_dict(), "epoch": 1}, path)
    assert os.listdir(tmp_path) == ["model.ckpt"]
    data = path.read_bytes()
    with zipfile.ZipFile(path) as archive:
        infos = archive.infolist()
        assert [info.filename for info in infos] == [
            "archive/data.pkl", "archive/.format_version", "archive/.storage_alignment",
            "archive/byteorder", "archive/data/0", "archive/data/1", "archive/version",
            "archive/.data/serialization_id",
        ]  # fmt: skip
        assert all(info.compress_type == zipfile.ZIP_STORED for info in infos)
        assert archive.read("archive/byteorder") == b"little"
        assert archive.read("archive/version") == b"3\n"
        for info in infos[4:6]:
            start = data.index(archive.read(info))
            assert start % 64 == 0
            name_length, extra_length = struct.unpack(
                "<HH", data[info.header_offset + 26 : info.header_offset + 30]
            )
            assert info.header_offset + 30 + name_length + extra_length == start


def test_keys_that_collide_or_clash_with_numpy_keywords(tmp_path):
    obj = {"a/b": np.ones(1), "a": {"b": np.zeros(1)}, "file": np.full(1, 2.0), "__tensorgrad__": 1}
    tg.save(obj, tmp_path / "x.npz")
    back = tg.load(tmp_path / "x.npz")
    assert back["a/b"][0] == 1.0 and back["a"]["b"][0] == 0.0 and back["file"][0] == 2.0
    assert back["__tensorgrad__"] == 1
    tg.save(np.arange(3), tmp_path / "bare.npz")
    np.testing.assert_array_equal(tg.load(tmp_path / "bare.npz"), [0, 1, 2])


def test_model_state_dict_round_trip(tmp_path):
    tg.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2))
    model(tg.randn((16, 4)))  # move the running statistics
    tg.save(model.state_dict(), tmp_path / "m.npz")
    tg.manual_seed(1)
    other = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2))
    other.load_state_dict(tg.load(tmp_path / "m.npz"))
    for (name, a), b in zip(model.state_dict().items(), other.state_dict().values(), strict=True):
        np.testing.assert_array_equal(a, b, err_msg=name)
        assert a.dtype == b.dtype


def test_unpicklable_values_are_refused_before_anything_is_written(tmp_path):
    with pytest.raises(TypeError, match="cannot save a function at 'config/hook'.*pickled"):
        tg.save({"config": {"hook": lambda x: x}}, tmp_path / "x.npz")
    model = nn.Linear(2, 2)
    model.callback = lambda: None  # a module holding a lambda cannot be pickled
    with pytest.raises(TypeError, match=r"cannot save a Linear at 'model'.*state_dict\(\) instead"):
        tg.save({"model": model}, tmp_path / "x.npz")
    with pytest.raises(TypeError, match="cannot save a generator"):
        tg.save((i for i in range(3)), tmp_path / "x.npz")
    assert os.listdir(tmp_path) == []


def test_a_failed_write_leaves_no_file_and_no_temporary(tmp_path, monkeypatch):
    write = torch_zip.write

    def fail_half_way(file, records, compressed=False):
        write(file, records[:3], compressed)
        raise OSError("disk full")

    monkeypatch.setattr(torch_zip, "write", fail_half_way)
    with pytest.raises(OSError, match="disk full"):
        tg.save({"a": np.ones(1000), "b": np.ones(1000)}, tmp_path / "ckpt.pt")
    assert os.listdir(tmp_path) == []


def test_a_failed_write_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.pt"
    tg.save({"epoch": 1}, path)

    def fail(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(torch_zip, "write", fail)
    with pytest.raises(KeyboardInterrupt):
        tg.save({"epoch": 2}, path)
    assert os.listdir(tmp_path) == ["ckpt.pt"]
    monkeypatch.undo()
    assert tg.load(path) == {"epoch": 1}


def test_overwriting_replaces_the_file(tmp_path):
    path = tmp_path / "ckpt.npz"
    tg.save({"epoch": 1}, path)
    tg.save({"epoch": 2}, path)
    assert tg.load(path) == {"epoch": 2} and os.listdir(tmp_path) == ["ckpt.npz"]


def test_compressed_checkpoints_load_too(tmp_path):
    tg.save({"w": np.zeros(10_000)}, tmp_path / "small.npz", compressed=True)
    tg.save({"w": np.zeros(10_000)}, tmp_path / "plain.npz")
    assert os.path.getsize(tmp_path / "small.npz") < os.path.getsize(tmp_path / "plain.npz") / 10
    np.testing.assert_array_equal(tg.load(tmp_path / "small.npz")["w"], 0.0)


def test_files_that_are_not_checkpoints_say_what_they_are(tmp_path):
    def refused(name, data, pattern):
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(CheckpointError, match=pattern):
            tg.load(path)

    refused("notes.txt", b"hello", r"notes\.txt: a text file, not a checkpoint; it starts 'hello'")
    refused("empty.pt", b"", r"empty\.pt: an empty file")
    refused("page.pt", b"<!DOCTYPE html><html>Not Found</html>", r"an HTML page: a failed download")
    refused("noise.pt", bytes(range(256)) * 4, r"noise\.pt: not a checkpoint: neither PyTorch")
    header = json.dumps({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}).encode()
    refused("m.safetensors", len(header).to_bytes(8, "little") + header + bytes(4),
            r"a safetensors file: load it with tensorgrad\.safetensors\.load_file")  # fmt: skip
    np.save(tmp_path / "a.npy", np.ones(2))
    with pytest.raises(CheckpointError, match=r"a NumPy \.npy file, not a checkpoint: .*np\.load"):
        tg.load(tmp_path / "a.npy")
    np.savez(tmp_path / "plain.npz", a=np.ones(2))
    with pytest.raises(CheckpointError, match=r"a NumPy \.npz archive, not a checkpoint.*np\.load"):
        tg.load(tmp_path / "plain.npz")
    with zipfile.ZipFile(tmp_path / "script.pt", "w") as archive:  # torch.jit.save's layout
        archive.writestr("model/constants.pkl", b"")
        archive.writestr("model/code/__torch__.py", b"")
    with pytest.raises(CheckpointError, match=r"a TorchScript archive .*state_dict"):
        tg.load(tmp_path / "script.pt")
    with zipfile.ZipFile(tmp_path / "other.zip", "w") as archive:
        archive.writestr("readme.txt", b"hi")
    with pytest.raises(CheckpointError, match=r"a zip archive, but not a checkpoint"):
        tg.load(tmp_path / "other.zip")
    with pytest.raises(FileNotFoundError):
        tg.load(tmp_path / "missing.pt")
    assert issubclass(CheckpointError, ValueError)


@pytest.mark.parametrize("keep", [0.3, 0.9, 0.999])
def test_truncated_files_are_refused(tmp_path, keep):
    path = tmp_path / "ckpt.npz"
    tg.save({"w": np.arange(1000.0), "epoch": 3}, path)
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])
    with pytest.raises(CheckpointError, match="truncated or corrupt"):
        tg.load(path)


def flipped(data: bytes, bit: int) -> bytes:
    out = bytearray(data)
    out[bit // 8] ^= 1 << (bit % 8)
    return bytes(out)


def entry_data_ranges(data: bytes) -> list[range]:
    """Where each zip entry's bytes lie in the file (what the CRC-32s cover)."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        ranges = []
        for info in archive.infolist():
            at = info.header_offset + 26
            name_length, extra_length = struct.unpack("<HH", data[at : at + 4])
            start = info.header_offset + 30 + name_length + extra_length
            ranges.append(range(start, start + info.file_size))
    return ranges


def same_checkpoint(a, b) -> bool:
    return (a["epoch"] == b["epoch"] and a["name"] == b["name"]
            and np.asarray(a["w"]).tobytes() == np.asarray(b["w"]).tobytes())  # fmt: skip


def test_a_bit_flipped_anywhere_is_refused_or_changes_nothing(tmp_path):
    """Sampled bits over the whole file: a flip in any entry's bytes (the pickle, a storage,
    byteorder) is refused by its CRC-32; a flip elsewhere (zip headers, padding, the central
    directory) is refused too or leaves what loads exactly as it was: never a wrong value."""
    path = tmp_path / "ckpt.pt"
    original = {"w": tg.arange(50.0), "epoch": 3, "name": "x"}
    tg.save(original, path)
    data = path.read_bytes()
    covered = entry_data_ranges(data)
    rng = np.random.default_rng(0)
    inside = [8 * int(rng.choice(r)) + int(rng.integers(8)) for r in covered for _ in range(3)]
    anywhere = rng.choice(8 * len(data), size=150, replace=False).tolist()
    for bit in [*inside, *anywhere, 0, 8 * len(data) - 1]:
        path.write_bytes(flipped(data, bit))
        in_an_entry = any(bit // 8 in r for r in covered)
        try:
            back = tg.load(path)
        except CheckpointError as exc:
            assert str(exc).startswith(f"{path}: ")
            continue
        assert not in_an_entry, f"bit {bit} inside an entry was not caught"
        assert same_checkpoint(back, original), f"bit {bit} changed what loads"
    path.write_bytes(data)
    assert tg.load(path)["epoch"] == 3


@pytest.mark.slow
def test_every_single_bit_flip_is_refused_or_changes_nothing(tmp_path):
    path = tmp_path / "ckpt.pt"
    original = {"w": tg.arange(4.0), "epoch": 3, "name": "x"}
    tg.save(original, path)
    data = path.read_bytes()
    covered = entry_data_ranges(data)
    for bit in range(8 * len(data)):
        path.write_bytes(flipped(data, bit))
        try:
            back = tg.load(path)
        except CheckpointError:
            continue
        assert not any(bit // 8 in r for r in covered) and same_checkpoint(back, original), bit


def test_a_damaged_storage_names_its_crc(tmp_path):
    path = tmp_path / "ckpt.pt"
    tg.save({"w": tg.arange(1000.0)}, path)
    data = bytearray(path.read_bytes())
    data[data.index(np.arange(1000.0, dtype=np.float32).tobytes()) + 2001] ^= 0x04
    path.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=r"ckpt\.pt: a PyTorch checkpoint, but truncated "
                       r"or corrupt: Bad CRC-32 for archive/data/0"):  # fmt: skip
        tg.load(path)


def test_a_structure_that_contains_itself_round_trips(tmp_path):
    """Pickle keeps identity, as PyTorch's files do: a list inside itself, one tensor twice."""
    loop: list = [1]
    loop.append(loop)
    shared = tg.ones(2)
    tg.save({"a": loop, "x": shared, "y": shared}, tmp_path / "x.pt")
    back = tg.load(tmp_path / "x.pt")
    assert back["a"][1] is back["a"] and back["a"][0] == 1
    assert back["x"] is back["y"]


def test_saving_a_structure_nested_too_deeply_is_a_clear_error(tmp_path):
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(ValueError, match="nested too deeply"):
        tg.save(deep, tmp_path / "x.pt")
    assert os.listdir(tmp_path) == []


def test_saving_into_a_missing_directory_names_the_target(tmp_path):
    target = tmp_path / "missing" / "model.npz"
    with pytest.raises(FileNotFoundError) as info:
        tg.save({"a": 1}, target)
    assert info.value.filename == str(target)
    assert "directory" in str(info.value) and str(tmp_path / "missing") in str(info.value)
    assert ".tmp" not in str(info.value)


def test_saving_onto_a_directory_is_refused_and_leaves_nothing(tmp_path):
    (tmp_path / "d").mkdir()
    with pytest.raises(IsADirectoryError, match="the target is a directory"):
        tg.save({"a": 1}, tmp_path / "d")
    assert os.listdir(tmp_path) == ["d"] and os.listdir(tmp_path / "d") == []


@pytest.mark.skipif(os.name != "posix", reason="stale temporaries are only ignored off POSIX")
def test_stale_temporaries_of_killed_processes_are_removed_and_never_loaded(tmp_path):
    path = tmp_path / "ckpt.npz"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    stale = tmp_path / f".ckpt.npz.{atomic._host()}-{dead}-0123456789ab.tmp"
    stale.write_bytes(b"PK\x03\x04 half a checkpoint")
    live = tmp_path / f".ckpt.npz.{atomic._host()}-{os.getppid()}-0123456789ab.tmp"
    live.write_bytes(b"being written by a live process")
    other = tmp_path / f".other.npz.{atomic._host()}-{dead}-0123456789ab.tmp"
    other.write_bytes(b"another target's")
    with pytest.raises(CheckpointError):
        tg.load(stale)
    tg.save({"epoch": 1}, path)
    assert sorted(os.listdir(tmp_path)) == sorted(["ckpt.npz", live.name, other.name])


# --------------------------------------------------------------------- resuming training
OPTIMIZERS = {
    "adam": lambda params: optim.Adam(params, lr=0.01, weight_decay=1e-4),
    # plain momentum: the unbroken run takes SGD's flat-buffer path, the resumed one (whose
    # state comes from load_state_dict) the per-parameter path; they must agree to the bit
    "sgd": lambda params: optim.SGD(params, lr=0.01, momentum=0.9),
    "rmsprop": lambda params: optim.RMSprop(params, lr=0.01, momentum=0.5),
}


def make_run(seed: int = 0, optimizer: str = "adam"):
    tg.manual_seed(seed)
    model = nn.Sequential(nn.Linear(6, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 3))
    opt = OPTIMIZERS[optimizer](model.parameters())
    schedule = optim.lr_scheduler.OneCycleLR(opt, max_lr=0.05, total_steps=12)
    return model, opt, schedule


def batches():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((12, 8, 6)).astype(np.float32)
    y = rng.integers(0, 3, (12, 8))
    return list(zip(x, y, strict=True))


def train(model, opt, schedule, data):
    losses = []
    for x, y in data:
        loss = F.cross_entropy(model(tg.tensor(x)), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        schedule.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("optimizer", list(OPTIMIZERS))
def test_resumed_training_continues_identically(tmp_path, optimizer):
    data = batches()
    unbroken = make_run(optimizer=optimizer)
    straight = train(*unbroken, data)

    model, opt, schedule = make_run(optimizer=optimizer)
    first = train(model, opt, schedule, data[:5])
    checkpoint = {
        "model": model.state_dict(),
        "optimizer": opt.state_dict(),
        "scheduler": schedule.state_dict(),
        "epoch": 5,
    }
    tg.save(checkpoint, tmp_path / "ckpt.npz")
    del model, opt, schedule

    model, opt, schedule = make_run(seed=123, optimizer=optimizer)  # all overwritten
    state = tg.load(tmp_path / "ckpt.npz")
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["optimizer"])
    schedule.load_state_dict(state["scheduler"])
    assert state["epoch"] == 5
    rest = train(model, opt, schedule, data[5:])
    assert first + rest == straight  # exactly: same float32 arithmetic in the same order
    final = model.state_dict()
    for name, value in unbroken[0].state_dict().items():
        assert np.asarray(value).tobytes() == np.asarray(final[name]).tobytes(), name


# --------------------------------------------------------------------- kill -9 while saving
def _save_forever(path: str) -> None:
    """The child: save ever newer versions of a large checkpoint to ``path``."""
    for version in range(1_000_000):
        tg.save({"version": version, "w": np.full(1_000_000, version, dtype=np.float64)}, path)


def kill_while_saving(tmp_path, seed: int) -> bool:
    """Kill -9 a process in the middle of saving; the file must be a whole version."""
    import multiprocessing
    import signal
    import time

    path = tmp_path / "big.npz"
    path.unlink(missing_ok=True)
    child = multiprocessing.get_context("fork").Process(target=_save_forever, args=(str(path),))
    child.start()
    deadline = time.monotonic() + 30
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.001)
    time.sleep(np.random.default_rng(seed).uniform(0, 0.1))
    os.kill(child.pid, signal.SIGKILL)
    child.join()
    assert child.exitcode == -signal.SIGKILL
    stale = [name for name in os.listdir(tmp_path) if name.endswith(".tmp")]
    back = tg.load(path)  # never half-written: one whole version
    assert back["w"].shape == (1_000_000,) and (back["w"] == back["version"]).all()
    tg.save({"version": -1}, path)  # the next save removes the killed process's temporary
    assert os.listdir(tmp_path) == ["big.npz"]
    return bool(stale)


@needs_fork
def test_kill_9_in_the_middle_of_a_large_save_keeps_a_whole_file(tmp_path):
    caught_mid_write = sum(kill_while_saving(tmp_path, seed) for seed in range(3))
    assert caught_mid_write >= 1  # 8 MB writes: most kills land inside one


@needs_fork
@pytest.mark.slow
def test_kill_9_while_saving_many_times(tmp_path):
    assert sum(kill_while_saving(tmp_path, seed) for seed in range(3, 33)) >= 15
