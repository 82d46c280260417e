"""PyTorch's checkpoint files, both ways: what tg.save writes, torch.load(weights_only=True)
reads, and what torch.save wrote (the zip format and the format before PyTorch 1.6), tg.load
reads without importing torch. Every dtype, storages shared between tensors and views,
parameters, a nanoGPT-style checkpoint resumed across the two, and what a weights-only load
refuses. The first half needs no PyTorch: its files are written here, by tensorgrad's writer
or by hand in PyTorch's layout; the second half compares with PyTorch where it is installed."""

from __future__ import annotations

import io
import math
import os
import pickle
import pickletools
import sys
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import nn
from tensorgrad.serialization import CheckpointError, pickling
from tensorgrad.serialization.pickling import TorchName

DTYPES = [
    "float64",
    "float32",
    "float16",
    "int64",
    "int32",
    "int16",
    "int8",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "bool",
]


def values(dtype: str) -> np.ndarray:
    """A 2×3 array of ``dtype`` with its extremes in it."""
    if dtype == "bool":
        return np.array([[True, False, True], [False, False, True]])
    info = np.finfo(dtype) if dtype.startswith("float") else np.iinfo(dtype)
    return np.array([[0, 1, info.max], [info.min, 7, 3]], dtype=dtype)


def save_and_load(obj, **load_args):
    buffer = io.BytesIO()
    tg.save(obj, buffer)
    buffer.seek(0)
    return tg.load(buffer, **load_args), buffer.getvalue()


def storage_names(data: bytes) -> list[str]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return [name for name in archive.namelist() if "/data/" in name]


# --------------------------------------------------------------------- files written here
@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_round_trips_as_tensor_and_as_array(dtype):
    array = values(dtype)
    back, _ = save_and_load({"t": tg.tensor(array), "a": array, "s": array[1, 2]})
    assert type(back["t"]) is tg.Tensor and back["t"].dtype == array.dtype
    assert back["t"].numpy().tobytes() == array.tobytes() and back["t"].shape == (2, 3)
    assert type(back["a"]) is np.ndarray and back["a"].dtype == array.dtype
    assert back["a"].tobytes() == array.tobytes()
    assert type(back["s"]) is type(array[1, 2]) and back["s"] == array[1, 2]


def test_tensors_sharing_memory_are_one_storage_and_share_it_again():
    base = tg.arange(12.0).reshape(3, 4)
    views = {
        "base": base,
        "rows": base[1:],
        "t": base.T,
        "every_other": base[:, ::2],
        "array": base.numpy()[2],
        "zero_d": base[2, 3],
    }
    back, data = save_and_load(views)
    assert storage_names(data) == ["archive/data/0"]  # written once
    for name, view in views.items():
        np.testing.assert_array_equal(np.asarray(back[name]), np.asarray(view), err_msg=name)
        assert back[name].shape == view.shape
    loaded_base = back["base"].numpy()
    loaded_base[2, 0] = -1.0  # one buffer: the change shows through every view
    assert back["rows"][1, 0].item() == -1.0 and back["t"][0, 2].item() == -1.0
    assert back["every_other"][2, 0].item() == -1.0 and back["array"][0] == -1.0


@pytest.mark.parametrize("mmap", [False, True])
def test_what_was_loaded_is_saved_again_with_its_sharing(tmp_path, mmap):
    """A loaded file's tensors view its storages' bytes: saved again, one storage still."""
    base = tg.arange(12.0).reshape(3, 4)
    tg.save(
        {"base": base, "rows": base[1:], "t": base.T, "i": tg.tensor([1, 2])}, tmp_path / "a.pt"
    )
    loaded = tg.load(tmp_path / "a.pt", mmap=mmap)
    back, data = save_and_load(loaded)
    assert storage_names(data) == ["archive/data/0", "archive/data/1"]
    assert np.shares_memory(back["base"].numpy(), back["t"].numpy())
    assert back["rows"].tolist() == base[1:].tolist() and back["i"].tolist() == [1, 2]
    float_bytes = loaded["base"].numpy().view(np.int32)  # another dtype on the same bytes
    back, data = save_and_load({"f": loaded["base"], "as_int": float_bytes})
    assert len(storage_names(data)) == 2 and back["as_int"].tobytes() == float_bytes.tobytes()


def test_tied_parameters_of_a_state_dict_stay_tied():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(7, 4)
            self.head = nn.Linear(4, 7, bias=False)
            self.head.weight = self.wte.weight

    model = Tied()
    back, data = save_and_load(
        {"params": model.state_dict(keep_vars=True), "detached": model.head.weight.detach()}
    )
    assert storage_names(data) == ["archive/data/0"]
    assert back["params"]["wte.weight"] is back["params"]["head.weight"]
    assert type(back["params"]["wte.weight"]) is nn.Parameter
    assert np.shares_memory(back["params"]["wte.weight"].numpy(), back["detached"].numpy())


def test_parameters_load_as_parameters():
    back, _ = save_and_load(
        {
            "p": nn.Parameter(tg.ones(2)),
            "frozen": nn.Parameter(tg.ones(1), requires_grad=False),
            "t": tg.ones(2, requires_grad=True),
        }
    )
    assert type(back["p"]) is nn.Parameter and back["p"].requires_grad
    assert type(back["frozen"]) is nn.Parameter and not back["frozen"].requires_grad
    assert type(back["t"]) is tg.Tensor and back["t"].requires_grad


def test_the_pickle_names_nothing_but_pytorchs_tensor_names_and_containers():
    state = {
        "model": nn.Linear(2, 2).state_dict(),
        "step": tg.tensor(3.0),
        "u": tg.tensor(np.zeros(2, np.uint16)),
        "dtype": tg.float32,
        "betas": (0.9, 0.99),
        "p": nn.Parameter(tg.ones(1)),
    }
    _, data = save_and_load(state)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        ops = list(pickletools.genops(archive.read("archive/data.pkl")))
    names = {arg for op, arg, _ in ops if op.name == "GLOBAL"}
    assert names == {
        "collections OrderedDict",
        "torch._utils _rebuild_tensor_v2",
        "torch FloatStorage",
        "torch._utils _rebuild_tensor_v3",
        "torch.storage UntypedStorage",
        "torch uint16",
        "torch float32",
        "torch._utils _rebuild_parameter",
    }
    assert ops[0][0].name == "PROTO" and ops[0][1] == 2  # PyTorch's default protocol


class Call:
    """Pickled as the call ``func(*args)``: PyTorch's names are :class:`TorchName`\\ s."""

    def __init__(self, func, *args):
        self.func, self.args = func, args

    def __reduce__(self):
        return self.func, self.args


def storage(storage_type: str, key: str, numel: int, location: str = "cpu"):
    module = "torch.storage" if storage_type == "UntypedStorage" else "torch"
    return pickling._StorageRef(("storage", TorchName(module, storage_type), key, location, numel))


def tensor(store, offset, size, stride, requires_grad=False):
    rebuild = TorchName("torch._utils", "_rebuild_tensor_v2")
    return Call(rebuild, store, offset, size, stride, requires_grad, OrderedDict())


def hand_made(obj, storages, folder="archive", byteorder: str | None = "little") -> bytes:
    """A file in PyTorch's zip layout, its pickle naming PyTorch's functions by hand."""
    buffer = io.BytesIO()
    pickling.TorchPickler(buffer, 2, pickling.StorageWriter()).dump(obj)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr(f"{folder}/data.pkl", buffer.getvalue())
        if byteorder is not None:
            archive.writestr(f"{folder}/byteorder", byteorder)
        for key, data in storages.items():
            archive.writestr(f"{folder}/data/{key}", data)
        archive.writestr(f"{folder}/version", "3\n")
    return out.getvalue()


def load_bytes(data: bytes, **kwargs):
    return tg.load(io.BytesIO(data), **kwargs)


def test_files_as_other_pytorch_versions_write_them():
    """Another top folder, no byteorder entry (older files), a big-endian file, bfloat16
    (loaded as float32: exactly, a bfloat16 is the upper half of a float32), an untyped
    storage with ``_rebuild_tensor_v3``, the old ``_rebuild_tensor`` and a parameter through
    ``_rebuild_from_type_v2``."""
    f32 = np.array([1.5, -2.0, 3.25], dtype=np.float32)
    bf16 = (np.array([1.5, -2.0, 1e30, -0.0], dtype=np.float32).view(np.uint32) >> 16).astype("<u2")
    u16 = np.array([1, 65535], dtype="<u2")
    v3 = TorchName("torch._utils", "_rebuild_tensor_v3")
    parameter = TorchName("torch._utils", "_rebuild_parameter")
    obj = {
        "f32": tensor(storage("FloatStorage", "0", 3), 1, (2,), (1,)),
        "bf16": tensor(storage("BFloat16Storage", "1", 4), 0, (2, 2), (2, 1)),
        "u16": Call(
            v3,
            storage("UntypedStorage", "2", 4),
            0,
            (2,),
            (1,),
            False,
            OrderedDict(),
            TorchName("torch", "uint16"),
        ),
        "old": Call(
            TorchName("torch._utils", "_rebuild_tensor"),
            storage("FloatStorage", "0", 3),
            0,
            (3,),
            (1,),
        ),
        "param": Call(
            TorchName("torch._tensor", "_rebuild_from_type_v2"),
            parameter,
            TorchName("torch.nn.parameter", "Parameter"),
            (tensor(storage("FloatStorage", "0", 3), 0, (1,), (1,)), True, OrderedDict()),
            {},
        ),
    }
    data = {"0": f32.tobytes(), "1": bf16.tobytes(), "2": u16.tobytes()}
    for folder, byteorder in [("archive", "little"), ("my_run_ckpt", None)]:
        back = load_bytes(hand_made(obj, data, folder, byteorder))
        assert back["f32"].tolist() == [-2.0, 3.25] and back["old"].tolist() == [1.5, -2.0, 3.25]
        assert back["bf16"].dtype == np.float32
        assert back["bf16"].numpy().ravel().tobytes() == (bf16.astype(np.uint32) << 16).tobytes()
        assert back["bf16"].tolist()[0] == [1.5, -2.0]
        assert back["u16"].dtype == np.uint16 and back["u16"].tolist() == [1, 65535]
        assert type(back["param"]) is nn.Parameter and back["param"].tolist() == [1.5]
        assert np.shares_memory(back["f32"].numpy(), back["old"].numpy())
    big = {
        "0": f32.astype(">f4").tobytes(),
        "1": bf16.astype(">u2").tobytes(),
        "2": u16.astype(">u2").tobytes(),
    }
    back = load_bytes(hand_made(obj, big, byteorder="big"))
    assert back["f32"].tolist() == [-2.0, 3.25] and back["bf16"].tolist()[0] == [1.5, -2.0]


@pytest.mark.parametrize(
    "size, stride, offset",
    [((4,), (1,), 0), ((2,), (3,), 0), ((1,), (1,), 3), ((2,), (-1,), 1), ((2,), (1,), -1)],
)
def test_views_outside_their_storage_are_refused(size, stride, offset):
    data = hand_made(
        {"x": tensor(storage("FloatStorage", "0", 3), offset, size, stride)},
        {"0": np.zeros(3, np.float32).tobytes()},
    )
    with pytest.raises(
        CheckpointError, match="a PyTorch checkpoint, but truncated or corrupt: a tensor"
    ):
        load_bytes(data)


def test_a_storage_of_the_wrong_size_is_refused():
    data = hand_made(
        {"x": tensor(storage("FloatStorage", "0", 4), 0, (4,), (1,))},
        {"0": np.zeros(3, np.float32).tobytes()},
    )
    with pytest.raises(CheckpointError, match="storage archive/data/0 holds 12 bytes, not 16"):
        load_bytes(data)


def test_dtypes_tensorgrad_has_no_tensors_of_are_named():
    data = hand_made(
        {"z": tensor(storage("ComplexFloatStorage", "0", 1), 0, (1,), (1,))},
        {"0": np.zeros(1, np.complex64).tobytes()},
    )
    with pytest.raises(
        CheckpointError, match="that tensorgrad cannot load: it holds a complex64 tensor"
    ):
        load_bytes(data)
    sparse = hand_made({"s": Call(TorchName("torch._utils", "_rebuild_sparse_tensor"), 1, 2)}, {})
    with pytest.raises(CheckpointError, match="it holds a sparse tensor"):
        load_bytes(sparse)


MALICIOUS = [
    (os.system, "posix.system" if os.name == "posix" else "nt.system"),
    (eval, "builtins.eval"),
    (getattr, "builtins.getattr"),
    (__import__("subprocess").Popen, "subprocess.Popen"),
]


@pytest.mark.parametrize(("func", "name"), MALICIOUS, ids=[name for _, name in MALICIOUS])
def test_a_malicious_pickle_is_refused_naming_the_global_and_nothing_runs(tmp_path, func, name):
    marker = tmp_path / "pwned"
    command = f"open({str(marker)!r}, 'w')" if func is eval else f"touch {marker}"
    payload = Call(func, command) if func is not getattr else Call(func, [], "append")
    obj = {
        "model": {"w": tensor(storage("FloatStorage", "0", 1), 0, (1,), (1,))},
        "evil": [payload],
    }
    data = hand_made(obj, {"0": np.ones(1, np.float32).tobytes()})
    with pytest.raises(
        pickle.UnpicklingError, match=rf"Unsupported global: GLOBAL {name} was not an allowed"
    ):
        load_bytes(data)
    assert not marker.exists()
    with pytest.raises(pickle.UnpicklingError, match=f"GLOBAL {name}"):
        load_bytes(data, weights_only=True, map_location="cpu", mmap=False)
    assert not marker.exists()


def test_pytorchs_own_classes_are_never_imported(tmp_path):
    data = hand_made({"m": Call(TorchName("torch.nn.modules.linear", "Linear"))}, {})
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL torch.nn.modules.linear.Linear"):
        load_bytes(data)
    with pytest.raises(
        pickle.UnpicklingError, match="PyTorch's class torch.nn.modules.linear.Linear.*state_dict"
    ):
        load_bytes(data, weights_only=False)


def cuda_file() -> bytes:
    return hand_made(
        {"w": tensor(storage("FloatStorage", "0", 2, "cuda:0"), 0, (2,), (1,))},
        {"0": np.array([1, 2], np.float32).tobytes()},
    )


def test_map_location_as_pytorch_takes_it():
    data = cuda_file()
    with pytest.raises(RuntimeError, match=r"a CUDA device \(cuda:0\).*map_location='cpu'"):
        load_bytes(data)
    seen = []

    def keep(storage, location):
        seen.append((storage, location))
        return storage

    for location in (
        "cpu",
        tg.device("cpu"),
        {"cuda:0": "cpu"},
        keep,
        lambda storage, loc: storage,
    ):
        assert load_bytes(data, map_location=location)["w"].tolist() == [1.0, 2.0]
    assert len(seen) == 1 and seen[0][1] == "cuda:0" and seen[0][0].array.tolist() == [1.0, 2.0]
    with pytest.raises(RuntimeError, match="map_location='cpu'"):
        load_bytes(data, map_location=lambda storage, loc: None)  # None: the default, as PyTorch
    with pytest.raises(TypeError, match="map_location returned a str"):
        load_bytes(data, map_location=lambda storage, loc: "cuda")
    with pytest.raises(tg.UnsupportedError):
        load_bytes(data, map_location="cuda")
    with pytest.raises(tg.UnsupportedError):
        load_bytes(data, map_location={"cuda:0": "cuda:1"})


def test_mmap_maps_the_storages_copy_on_write(tmp_path):
    path = tmp_path / "ckpt.pt"
    tg.save({"w": tg.arange(1000.0), "v": tg.arange(6).reshape(2, 3)}, path)
    before = path.read_bytes()
    back = tg.load(path, mmap=True)
    array = back["w"].numpy()
    base = array
    while not isinstance(base, np.memmap):
        base = base.base
    assert (
        base.mode == "c"
        and array.tolist() == list(range(1000))
        and back["v"].tolist() == [[0, 1, 2], [3, 4, 5]]
    )
    array[0] = 42.0  # writable, and the file does not change
    del back, array, base
    assert path.read_bytes() == before
    with open(path, "rb") as f, pytest.raises(ValueError, match="must be a file path.*mmap"):
        tg.load(f, mmap=True)


def test_the_format_before_pytorch_1_6_round_trips(tmp_path):
    base = tg.arange(6.0)
    state = {
        "w": base,
        "v": base[2:],
        "n": 3,
        "p": nn.Parameter(tg.ones(2)),
        "i": tg.tensor([1, 2]),
    }
    path = tmp_path / "old.pt"
    tg.save(state, path, _use_new_zipfile_serialization=False)
    assert not zipfile.is_zipfile(path)
    back = tg.load(path)
    assert (
        back["v"].tolist() == [2.0, 3.0, 4.0, 5.0]
        and back["n"] == 3
        and type(back["p"]) is nn.Parameter
    )
    assert back["i"].dtype == np.int64 and np.shares_memory(back["w"].numpy(), back["v"].numpy())
    data = path.read_bytes()
    for keep in (0.5, 0.99):
        path.write_bytes(data[: int(len(data) * keep)])
        with pytest.raises(
            CheckpointError,
            match=r"old\.pt: a PyTorch checkpoint \(the format before PyTorch 1\.6\), but trunc",
        ):
            tg.load(path)
    with pytest.raises(
        TypeError, match="NumPy arrays and scalars cannot be saved in PyTorch's format before 1.6"
    ):
        tg.save({"a": np.ones(2)}, tmp_path / "x.pt", _use_new_zipfile_serialization=False)
    path.write_bytes(data)
    with pytest.raises(RuntimeError, match="mmap can only be used"):
        tg.load(path, mmap=True)
    tg.save(state, path, _use_new_zipfile_serialization=False, pickle_protocol=4)
    assert tg.load(path)["v"].tolist() == [2.0, 3.0, 4.0, 5.0]  # any protocol


def test_loading_never_imports_torch(tmp_path):
    """Even where PyTorch is installed: its names stand for tensorgrad's code."""
    import subprocess

    code = (
        "import sys\n"
        "sys.modules['torch'] = None  # importing it would fail\n"
        "import tensorgrad as tg\n"
        f"path = {str(tmp_path / 'x.pt')!r}\n"
        "tg.save({'w': tg.ones(2), 'p': tg.nn.Parameter(tg.zeros(1)), 'dtype': tg.float32}, path)\n"
        "back = tg.load(path)\n"
        "assert back['w'].tolist() == [1.0, 1.0] and back['dtype'] == tg.float32, back\n"
    )
    subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        env={**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(tg.__file__))},
    )


def test_save_refuses_other_pickle_modules():
    with pytest.raises(TypeError, match="pickle_module='json' is not supported"):
        tg.save({"a": 1}, io.BytesIO(), pickle_module=__import__("json"))


# --------------------------------------------------------------------- against PyTorch
@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def torch_round_trip(torch, obj, legacy=False):
    buffer = io.BytesIO()
    torch.save(obj, buffer, _use_new_zipfile_serialization=not legacy)
    buffer.seek(0)
    return tg.load(buffer), buffer.getvalue()


@pytest.mark.parametrize("legacy", [False, True], ids=["zip", "legacy"])
@pytest.mark.parametrize("dtype", [*DTYPES, "bfloat16"])
def test_pytorch_files_load_every_dtype(torch, dtype, legacy):
    array = values("float32" if dtype == "bfloat16" else dtype)
    theirs = torch.from_numpy(array).to(getattr(torch, dtype))
    back, _ = torch_round_trip(
        torch, {"x": theirs, "zero_d": theirs[1, 1], "empty": theirs[:0]}, legacy
    )
    expected = theirs.float() if dtype == "bfloat16" else theirs
    assert type(back["x"]) is tg.Tensor and back["x"].dtype == np.dtype(
        str(expected.dtype).removeprefix("torch.")
    )
    assert back["x"].numpy().tobytes() == expected.numpy().tobytes()
    assert back["zero_d"].shape == () and back["zero_d"].item() == expected[1, 1].item()
    assert back["empty"].shape == (0, 3)


@pytest.mark.parametrize("dtype", DTYPES)
def test_tensorgrad_files_load_in_pytorch_weights_only_every_dtype(torch, dtype):
    array = values(dtype)
    buffer = io.BytesIO()
    tg.save({"t": tg.tensor(array), "a": array, "zero_d": tg.tensor(array)[1, 1]}, buffer)
    buffer.seek(0)
    theirs = torch.load(buffer, weights_only=True)
    for name in ("t", "a"):
        assert theirs[name].dtype == getattr(torch, dtype)
        assert theirs[name].numpy().tobytes() == array.tobytes()
    assert theirs["zero_d"].shape == () and theirs["zero_d"].item() == array[1, 1]


def test_complex_pytorch_tensors_are_named(torch):
    with pytest.raises(
        CheckpointError, match="it holds a complex64 tensor, and tensorgrad has no complex"
    ):
        torch_round_trip(torch, {"z": torch.zeros(2, dtype=torch.complex64)})


@pytest.mark.parametrize("legacy", [False, True], ids=["zip", "legacy"])
def test_pytorch_views_share_one_buffer_in_tensorgrad(torch, legacy):
    base = torch.arange(24.0).reshape(4, 6)
    views = {
        "base": base,
        "rows": base[1:3],
        "t": base.t(),
        "cols": base[:, 1::2],
        "expanded": base[0, :1].expand(3, 2),
        "p": torch.nn.Parameter(base[3]),
    }
    back, _ = torch_round_trip(torch, views, legacy)
    for name, view in views.items():
        assert back[name].shape == tuple(view.shape), name
        np.testing.assert_array_equal(back[name].numpy(), view.detach().numpy(), err_msg=name)
        assert np.shares_memory(back[name].numpy(), back["base"].numpy()), name
    assert type(back["p"]) is nn.Parameter and back["p"].requires_grad


def test_tensorgrad_views_share_one_storage_in_pytorch(torch):
    base = tg.arange(24.0).reshape(4, 6)
    buffer = io.BytesIO()
    tg.save(
        {
            "base": base,
            "rows": base[1:3],
            "t": base.T,
            "cols": base[:, 1::2],
            "p": nn.Parameter(tg.ones(3)),
        },
        buffer,
    )
    buffer.seek(0)
    theirs = torch.load(buffer, weights_only=True)
    pointer = theirs["base"].untyped_storage().data_ptr()
    for name in ("rows", "t", "cols"):
        assert theirs[name].untyped_storage().data_ptr() == pointer, name
        np.testing.assert_array_equal(
            theirs[name].numpy(),
            np.asarray({"rows": base[1:3], "t": base.T, "cols": base[:, 1::2]}[name]),
        )
    assert theirs["cols"].stride() == (6, 2) and theirs["t"].stride() == (1, 6)
    assert isinstance(theirs["p"], torch.nn.Parameter) and theirs["p"].requires_grad


def test_a_legacy_tensorgrad_file_loads_in_pytorch(torch):
    buffer = io.BytesIO()
    base = tg.arange(4.0)
    tg.save({"w": base, "v": base[1:], "n": 2}, buffer, _use_new_zipfile_serialization=False)
    buffer.seek(0)
    theirs = torch.load(buffer, weights_only=True)
    assert theirs["v"].tolist() == [1.0, 2.0, 3.0] and theirs["n"] == 2
    assert theirs["v"].untyped_storage().data_ptr() == theirs["w"].untyped_storage().data_ptr()


def test_a_malicious_pytorch_file_is_refused_by_both(torch, tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pt"
    torch.save({"w": torch.ones(2), "x": Call(os.system, f"touch {marker}")}, path)
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL posix.system"):
        tg.load(path)
    with pytest.raises(pickle.UnpicklingError, match="posix.system"):
        torch.load(path, weights_only=True)
    assert not marker.exists()


def test_damaged_pytorch_files_are_refused(torch, tmp_path):
    path = tmp_path / "sd.pt"
    torch.save({"w": torch.arange(1000.0)}, path)
    data = path.read_bytes()
    for keep in (0.2, 0.6, 0.999):
        path.write_bytes(data[: int(len(data) * keep)])
        with pytest.raises(
            CheckpointError, match=r"sd\.pt: a PyTorch checkpoint, but truncated or corrupt"
        ):
            tg.load(path)
    damaged = bytearray(data)
    damaged[data.index(np.arange(1000.0, dtype=np.float32).tobytes()) + 1234] ^= 0x20
    path.write_bytes(bytes(damaged))
    with pytest.raises(CheckpointError, match=r"Bad CRC-32 for sd/data/0"):
        tg.load(path)


def test_pytorch_files_saved_without_crcs_load(torch, tmp_path):
    """``set_crc32_options(False)`` writes every CRC-32 as 0: such a file has nothing to check."""
    torch.serialization.set_crc32_options(False)
    try:
        torch.save({"w": torch.arange(4.0)}, tmp_path / "fast.pt")
    finally:
        torch.serialization.set_crc32_options(True)
    with zipfile.ZipFile(tmp_path / "fast.pt") as archive:
        assert {info.CRC for info in archive.infolist()} == {0}
    assert tg.load(tmp_path / "fast.pt")["w"].tolist() == [0.0, 1.0, 2.0, 3.0]


@pytest.mark.parametrize("direction", ["pytorch_to_tensorgrad", "tensorgrad_to_pytorch"])
def test_sgd_with_momentum_state_moves_across(torch, direction):
    tg.manual_seed(0)
    ours = nn.Linear(3, 2)
    theirs = torch.nn.Linear(3, 2).double()
    ours = ours.to(tg.float64) if hasattr(ours, "to") else ours
    with torch.no_grad():
        theirs.weight.copy_(torch.from_numpy(ours.weight.numpy().astype(np.float64)))
        theirs.bias.copy_(torch.from_numpy(ours.bias.numpy().astype(np.float64)))
    ours.load_state_dict({k: tg.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    our_opt = tg.optim.SGD(ours.parameters(), lr=0.1, momentum=0.9, nesterov=True)
    their_opt = torch.optim.SGD(theirs.parameters(), lr=0.1, momentum=0.9, nesterov=True)
    x = np.random.default_rng(0).standard_normal((5, 3))

    def step(model, opt, lib):
        loss = (model(lib.tensor(x)) ** 2).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()

    source, target = (
        (their_opt, our_opt) if direction == "pytorch_to_tensorgrad" else (our_opt, their_opt)
    )
    step(theirs, their_opt, torch)
    step(ours, our_opt, tg)
    buffer = io.BytesIO()
    (torch.save if source is their_opt else tg.save)(source.state_dict(), buffer)
    buffer.seek(0)
    loaded = tg.load(buffer) if target is our_opt else torch.load(buffer, weights_only=True)
    target.load_state_dict(loaded)
    step(theirs, their_opt, torch)
    step(ours, our_opt, tg)
    np.testing.assert_allclose(
        ours.weight.numpy(), theirs.weight.detach().numpy(), rtol=1e-12, atol=1e-12
    )


# --------------------------------------------------------------------- a nanoGPT checkpoint
def make_gpt(lib, n_layer=2, n_head=2, n_embd=16, vocab_size=11, block_size=8):
    """nanoGPT's model (karpathy/nanoGPT model.py, without dropout), written once for both
    libraries: the same module names, so the same state_dict keys."""
    torch_nn, F = lib.nn, lib.nn.functional

    class CausalSelfAttention(torch_nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = torch_nn.Linear(n_embd, 3 * n_embd)
            self.c_proj = torch_nn.Linear(n_embd, n_embd)
            mask = lib.tril(lib.ones(block_size, block_size)).view(1, 1, block_size, block_size)
            self.register_buffer("bias", mask)

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(n_embd, dim=2)
            k = k.view(B, T, n_head, C // n_head).transpose(1, 2)
            q = q.view(B, T, n_head, C // n_head).transpose(1, 2)
            v = v.view(B, T, n_head, C // n_head).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = F.softmax(att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf")), dim=-1)
            return self.c_proj((att @ v).transpose(1, 2).contiguous().view(B, T, C))

    class Block(torch_nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.attn = torch_nn.LayerNorm(n_embd), CausalSelfAttention()
            self.ln_2 = torch_nn.LayerNorm(n_embd)
            self.mlp = torch_nn.ModuleDict(
                {
                    "c_fc": torch_nn.Linear(n_embd, 4 * n_embd),
                    "c_proj": torch_nn.Linear(4 * n_embd, n_embd),
                }
            )

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp.c_proj(F.gelu(self.mlp.c_fc(self.ln_2(x))))

    class GPT(torch_nn.Module):
        def __init__(self):
            super().__init__()
            self.transformer = torch_nn.ModuleDict(
                {
                    "wte": torch_nn.Embedding(vocab_size, n_embd),
                    "wpe": torch_nn.Embedding(block_size, n_embd),
                    "h": torch_nn.ModuleList([Block() for _ in range(n_layer)]),
                    "ln_f": torch_nn.LayerNorm(n_embd),
                }
            )
            self.lm_head = torch_nn.Linear(n_embd, vocab_size, bias=False)
            self.transformer.wte.weight = self.lm_head.weight  # weight tying

        def forward(self, idx, targets):
            x = self.transformer.wte(idx) + self.transformer.wpe(
                lib.arange(0, idx.size(1), dtype=lib.long)
            )
            for block in self.transformer.h:
                x = block(x)
            logits = self.lm_head(self.transformer.ln_f(x))
            return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))

    return GPT()


def configure_optimizers(lib, model):
    """nanoGPT's AdamW: weight decay for the matrices, none for the rest."""
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.1},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]
    return lib.optim.AdamW(groups, lr=1e-3, betas=(0.9, 0.95))


def train_step(lib, model, optimizer, batch):
    loss = model(lib.tensor(batch[0]), lib.tensor(batch[1]))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss


MODEL_ARGS = {
    "n_layer": 2,
    "n_head": 2,
    "n_embd": 16,
    "block_size": 8,
    "bias": True,
    "vocab_size": 11,
    "dropout": 0.0,
}
CONFIG = {
    "batch_size": 4,
    "learning_rate": 1e-3,
    "dataset": "shakespeare_char",
    "compile": False,
    "betas": (0.9, 0.95),
    "out_dir": "out-shakespeare-char",
}


def batches(count=5):
    rng = np.random.default_rng(0)
    return [(rng.integers(0, 11, (4, 8)), rng.integers(0, 11, (4, 8))) for _ in range(count)]


def pytorch_run(torch, float64):
    torch.manual_seed(0)
    model = make_gpt(torch)
    model = model.double() if float64 else model
    optimizer = configure_optimizers(torch, model)
    return model, optimizer


def tensorgrad_run(float64):
    model = make_gpt(tg)
    if float64:
        for p in model.parameters():
            p.data = tg.tensor(p.numpy().astype(np.float64))
        model.transformer.wte.weight = model.lm_head.weight
    return model, configure_optimizers(tg, model)


def assert_same_weights(ours, theirs, atol):
    for name, value in theirs.state_dict().items():
        np.testing.assert_allclose(
            ours.state_dict()[name].numpy(), value.numpy(), rtol=0, atol=atol, err_msg=name
        )


@pytest.mark.parametrize("float64", [False, True], ids=["float32", "float64"])
def test_a_pytorch_nanogpt_checkpoint_resumes_in_tensorgrad(torch, tmp_path, float64):
    """torch.save in nanoGPT's train.py, then resuming (init_from='resume') in tensorgrad: the
    weights and the optimizer's moments load exactly; the next step matches PyTorch's."""
    data = batches()
    model, optimizer = pytorch_run(torch, float64)
    for batch in data[:3]:
        loss = train_step(torch, model, optimizer, batch)
    checkpoint = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "model_args": MODEL_ARGS,
        "iter_num": 250,
        "best_val_loss": loss.detach(),
        "config": CONFIG,
    }
    torch.save(checkpoint, tmp_path / "ckpt.pt")

    loaded = tg.load(tmp_path / "ckpt.pt", map_location="cpu")
    assert (
        loaded["iter_num"] == 250
        and loaded["model_args"] == MODEL_ARGS
        and loaded["config"] == CONFIG
    )
    assert loaded["best_val_loss"].shape == () and loaded["best_val_loss"].item() == loss.item()
    ours, our_optimizer = tensorgrad_run(float64)
    ours.load_state_dict(loaded["model"])
    our_optimizer.load_state_dict(loaded["optimizer"])
    assert_same_weights(ours, model, atol=0)
    for p, theirs in zip(ours.parameters(), model.parameters(), strict=True):
        state = optimizer.state[theirs]
        assert our_optimizer.state[p]["exp_avg"].tobytes() == state["exp_avg"].numpy().tobytes()
        assert our_optimizer.state[p]["step"] == 3
    ours_next = train_step(tg, ours, our_optimizer, data[3]).item()
    theirs_next = train_step(torch, model, optimizer, data[3]).item()
    assert ours_next == pytest.approx(theirs_next, rel=1e-12 if float64 else 1e-5)
    assert_same_weights(ours, model, atol=1e-12 if float64 else 1e-4)


@pytest.mark.parametrize("float64", [False, True], ids=["float32", "float64"])
def test_a_tensorgrad_nanogpt_checkpoint_resumes_in_pytorch(torch, tmp_path, float64):
    data = batches()
    torch_model, _ = pytorch_run(torch, float64)
    ours, our_optimizer = tensorgrad_run(float64)
    ours.load_state_dict({k: tg.tensor(v.numpy()) for k, v in torch_model.state_dict().items()})
    for batch in data[:3]:
        loss = train_step(tg, ours, our_optimizer, batch)
    checkpoint = {
        "model": ours.state_dict(),
        "optimizer": our_optimizer.state_dict(),
        "model_args": MODEL_ARGS,
        "iter_num": 250,
        "best_val_loss": loss.detach(),
        "config": CONFIG,
    }
    tg.save(checkpoint, tmp_path / "ckpt.pt")

    loaded = torch.load(tmp_path / "ckpt.pt", weights_only=True)
    assert (
        loaded["iter_num"] == 250
        and loaded["model_args"] == MODEL_ARGS
        and loaded["config"] == CONFIG
    )
    assert loaded["best_val_loss"].item() == loss.item()
    model, optimizer = pytorch_run(torch, float64)
    model.load_state_dict(loaded["model"])
    optimizer.load_state_dict(loaded["optimizer"])
    assert model.lm_head.weight is model.transformer.wte.weight
    assert_same_weights(ours, model, atol=0)
    ours_next = train_step(tg, ours, our_optimizer, data[3]).item()
    theirs_next = train_step(torch, model, optimizer, data[3]).item()
    assert ours_next == pytest.approx(theirs_next, rel=1e-12 if float64 else 1e-5)
    assert_same_weights(ours, model, atol=1e-12 if float64 else 1e-4)
