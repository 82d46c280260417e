"""tg.load still reads tensorgrad's earlier checkpoints: ``.npz`` archives with a
``__tensorgrad__`` JSON entry (format versions 1 to 3; versions 2 and 3 end with a SHA-256 of
the whole file in the zip comment). The files are written here as those versions wrote them."""

from __future__ import annotations

import hashlib
import io
import json
import pickle
import zipfile

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import nn
from tensorgrad.serialization import CheckpointError


def write_version_1(path, obj_meta_root, arrays, version=1):
    """A file as tensorgrad wrote it before checksums (format version 1)."""
    meta = {"format": "tensorgrad.checkpoint", "version": version, "root": obj_meta_root}
    with zipfile.ZipFile(path, "w") as archive:
        for name, array in {
            "__tensorgrad__": np.frombuffer(json.dumps(meta).encode(), np.uint8),
            **arrays,
        }.items():
            with archive.open(name + ".npy", "w") as entry:
                np.lib.format.write_array(entry, array)


def write_version_2(path, root, arrays, version=2):
    """A file as tensorgrad wrote it with checksums: version 1's archive, its zip comment the
    SHA-256 of every byte before the digest."""
    buffer = io.BytesIO()
    write_version_1(buffer, root, arrays, version)
    with zipfile.ZipFile(buffer, "a") as archive:
        archive.comment = b"tensorgrad-sha256:" + b"0" * 64
    data = buffer.getvalue()
    digest = hashlib.sha256(data[:-64]).hexdigest().encode()
    path.write_bytes(data[:-64] + digest)
    return data[:-64] + digest


def test_version_2_state_dicts_load_and_resume_a_model(tmp_path):
    tg.manual_seed(0)
    model = nn.Linear(3, 2)
    weights = {name: t.numpy() for name, t in model.state_dict().items()}
    root = [
        "dict",
        [
            [
                "str",
                "model",
                ["dict", [["str", name, ["tensor", f"model/{name}", False]] for name in weights]],
            ],
            ["str", "epoch", ["int", 3]],
            ["str", "state", ["dict", [["int", 0, ["dict", [["str", "step", ["int", 4]]]]]]]],
            ["str", "betas", ["tuple", [["float", 0.9], ["float", 0.999]]]],
            ["str", "scalar", ["scalar", "scalar"]],
            ["str", "param", ["parameter", "param", True]],
        ],
    ]
    arrays = {f"model/{name}": array for name, array in weights.items()}
    arrays |= {"scalar": np.asarray(np.float32(2.5)), "param": np.ones(2)}
    path = tmp_path / "old.npz"
    write_version_2(path, root, arrays)
    back = tg.load(path)
    other = nn.Linear(3, 2)
    other.load_state_dict(back["model"])
    np.testing.assert_array_equal(other.weight.numpy(), model.weight.numpy())
    assert (
        back["epoch"] == 3 and back["state"] == {0: {"step": 4}} and back["betas"] == (0.9, 0.999)
    )
    assert back["scalar"] == np.float32(2.5) and back["scalar"].dtype == np.float32
    assert isinstance(back["param"], nn.Parameter) and back["param"].requires_grad


def test_version_3_pickled_entries_load_weights_only_when_they_are_plain(tmp_path):
    buffer = io.BytesIO()
    pickle.dump({"tags": {"a", "b"}}, buffer, protocol=2)
    path = tmp_path / "v3.npz"
    write_version_2(
        path,
        ["pickle", "data~pickle"],
        {"data~pickle": np.frombuffer(buffer.getvalue(), np.uint8)},
        version=3,
    )
    assert tg.load(path) == {"tags": {"a", "b"}}
    buffer = io.BytesIO()
    pickle.dump(np.array([1, "a"], dtype=object), buffer, protocol=2)
    write_version_2(
        path,
        ["pickle", "data~pickle"],
        {"data~pickle": np.frombuffer(buffer.getvalue(), np.uint8)},
        version=3,
    )
    with pytest.raises(pickle.UnpicklingError, match="numpy"):
        tg.load(path)
    assert tg.load(path, weights_only=False).tolist() == [1, "a"]


def test_a_changed_byte_breaks_the_version_2_checksum(tmp_path):
    path = tmp_path / "old.npz"
    data = write_version_2(path, ["array", "w"], {"w": np.arange(3.0)})
    damaged = bytearray(data)
    damaged[len(data) // 2] ^= 1
    path.write_bytes(bytes(damaged))
    with pytest.raises(CheckpointError, match=r"old\.npz: corrupt checkpoint: its SHA-256"):
        tg.load(path)


def test_pickled_arrays_are_never_loaded(tmp_path):
    path = tmp_path / "evil.npz"
    meta = {"format": "tensorgrad.checkpoint", "version": 1, "root": ["array", "x"]}
    np.savez(
        path,
        __tensorgrad__=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8),
        x=np.array([{"a": 1}], dtype=object),
    )
    with pytest.raises(CheckpointError, match="corrupt"):
        tg.load(path)


def test_version_1_files_still_load(tmp_path):
    path = tmp_path / "old.npz"
    root = ["dict", [["str", "w", ["array", "w"]], ["str", "epoch", ["int", 4]]]]
    write_version_1(path, root, {"w": np.arange(3.0)})
    back = tg.load(path)
    assert back["epoch"] == 4
    np.testing.assert_array_equal(back["w"], [0, 1, 2])
    data = bytearray(path.read_bytes())  # their guarantee is the zip CRC: data flips are seen
    data[data.index(np.arange(3.0).tobytes()) + 3] ^= 0x10
    path.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="truncated or corrupt"):
        tg.load(path)


def test_a_version_2_file_without_its_trailer_is_refused(tmp_path):
    path = tmp_path / "ckpt.npz"
    write_version_2(path, ["array", "w"], {"w": np.arange(3.0)})
    with zipfile.ZipFile(path, "a") as archive:
        archive.comment = b""  # a tool rewrote the archive and dropped the checksum
    with pytest.raises(CheckpointError, match="checksum trailer is missing or damaged"):
        tg.load(path)


def test_deeply_nested_metadata_is_a_checkpoint_error(tmp_path):
    path = tmp_path / "deep.npz"
    # json.dumps itself would recurse: build the text by hand
    text = '{"format": "tensorgrad.checkpoint", "version": 1, "root": '
    text += '["list", [' * 100_000 + '["none"]' + "]]" * 100_000 + "}"
    with zipfile.ZipFile(path, "w") as archive, archive.open("__tensorgrad__.npy", "w") as f:
        np.lib.format.write_array(f, np.frombuffer(text.encode(), dtype=np.uint8))
    with pytest.raises(CheckpointError, match="nested too deeply"):
        tg.load(path)
    moderate = tmp_path / "moderate.npz"  # deep enough for _decode, not for json
    text = '{"format": "tensorgrad.checkpoint", "version": 1, "root": '
    text += '["list", [' * 300 + '["none"]' + "]]" * 300 + "}"
    with zipfile.ZipFile(moderate, "w") as archive, archive.open("__tensorgrad__.npy", "w") as f:
        np.lib.format.write_array(f, np.frombuffer(text.encode(), dtype=np.uint8))
    with pytest.raises(CheckpointError, match="nested more than 200 levels"):
        tg.load(moderate)


def test_newer_version_names_the_file_and_the_versions(tmp_path):
    path = tmp_path / "future.npz"
    write_version_1(path, ["none"], {}, version=4)
    with pytest.raises(
        CheckpointError, match=r"future\.npz: .*version 4, newer .*versions 1, 2, 3"
    ):
        tg.load(path)


def test_bad_metadata_is_refused(tmp_path):
    def write(meta):
        path = tmp_path / "m.npz"
        with zipfile.ZipFile(path, "w") as archive, archive.open("__tensorgrad__.npy", "w") as f:
            np.lib.format.write_array(f, np.frombuffer(meta.encode(), dtype=np.uint8))
        return path

    with pytest.raises(CheckpointError, match="unknown metadata format"):
        tg.load(write(json.dumps({"format": "other"})))
    with pytest.raises(CheckpointError, match="version 99, newer than this tensorgrad reads"):
        tg.load(write(json.dumps({"format": "tensorgrad.checkpoint", "version": 99})))
    with pytest.raises(CheckpointError, match="corrupt checkpoint structure"):
        tg.load(
            write(
                json.dumps(
                    {"format": "tensorgrad.checkpoint", "version": 1, "root": ["array", "gone"]}
                )
            )
        )
    with pytest.raises(CheckpointError, match="truncated or corrupt"):
        tg.load(write("{not json"))
