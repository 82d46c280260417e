"""tensorgrad.safetensors: round trips, state dicts that load into PyTorch and back, and clear
errors for files that are truncated, corrupt or not safetensors at all."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.serialization import CheckpointError
from tests import export_models as zoo

safetensors = pytest.importorskip("safetensors")
from tensorgrad.safetensors import DIGEST_KEY, load_file, load_metadata, save_file  # noqa: E402


def test_round_trip_keeps_values_dtypes_shapes_and_metadata(tmp_path):
    tensors = {
        "w": tg.tensor(np.arange(6, dtype=np.float32).reshape(2, 3)),
        "d": np.linspace(0, 1, 5),  # a plain array, float64
        "count": tg.tensor(np.array(7, dtype=np.int64)),  # 0-d stays 0-d
        "mask": np.array([True, False]),
        "half": np.ones(3, np.float16),
        "strided": np.arange(12.0, dtype=np.float32).reshape(3, 4)[:, ::2],
    }
    path = tmp_path / "t.safetensors"
    save_file(tensors, path, metadata={"format": "pt", "note": "hi"})
    back = load_file(path)
    assert sorted(back) == sorted(tensors)
    for name, value in tensors.items():
        expected = value.numpy() if isinstance(value, tg.Tensor) else value
        assert isinstance(back[name], tg.Tensor)
        assert back[name].dtype == expected.dtype and back[name].shape == expected.shape
        np.testing.assert_array_equal(back[name].numpy(), expected)
    assert load_metadata(path) == {"format": "pt", "note": "hi"}
    # the package's own reader agrees, and sees tensorgrad's checksum entry
    from safetensors import safe_open

    with safe_open(str(path), "np") as f:
        assert DIGEST_KEY in f.metadata()
        np.testing.assert_array_equal(f.get_tensor("d"), tensors["d"])


def test_bad_arguments_are_refused_before_any_file(tmp_path):
    path = tmp_path / "x.safetensors"
    with pytest.raises(TypeError, match="keys must be strings"):
        save_file({1: np.ones(1)}, path)
    with pytest.raises(TypeError, match="'a' is a list"):
        save_file({"a": [1.0]}, path)
    with pytest.raises(TypeError, match="metadata must map strings to strings"):
        save_file({"a": np.ones(1)}, path, metadata={"epoch": 3})
    with pytest.raises(ValueError, match="tensorgrad's own"):
        save_file({"a": np.ones(1)}, path, metadata={DIGEST_KEY: "x"})
    assert not os.listdir(tmp_path)
    with pytest.raises(RuntimeError, match="CPU only"):
        load_file(path, device="cuda")


def test_truncated_corrupt_and_foreign_files_name_the_file(tmp_path):
    path = tmp_path / "m.safetensors"
    save_file({"w": np.arange(100, dtype=np.float32)}, path)
    data = path.read_bytes()
    cases = {
        "empty.safetensors": (b"", "empty file"),
        "short.safetensors": (data[:5], "not a safetensors file"),
        "header.safetensors": (data[:40], "truncated"),
        "body.safetensors": (data[:-10], "truncated or corrupt"),
        "flipped.safetensors": (data[:-1] + bytes([data[-1] ^ 1]), "checksum does not match"),
        "npz.safetensors": (b"PK\x03\x04" + b"\0" * 60, "tg.load"),
        "text.safetensors": (b"hello world, not tensors", "not a safetensors file"),
    }
    for name, (content, message) in cases.items():
        bad = tmp_path / name
        bad.write_bytes(content)
        with pytest.raises(CheckpointError, match=message) as info:
            load_file(bad)
        assert str(bad) in str(info.value)
    broken_json = data[:8] + b"{" + data[9:]
    broken_json = broken_json.replace(b'"dtype"', b'"dtype', 1)
    (tmp_path / "json.safetensors").write_bytes(broken_json)
    with pytest.raises(CheckpointError, match="corrupt safetensors file"):
        load_file(tmp_path / "json.safetensors")
    with pytest.raises(FileNotFoundError):
        load_file(tmp_path / "missing.safetensors")


def test_files_from_the_package_itself_load(tmp_path):
    from safetensors.numpy import save_file as package_save

    path = tmp_path / "foreign.safetensors"
    package_save({"a": np.arange(4, dtype=np.int32)}, str(path), metadata={"k": "v"})
    np.testing.assert_array_equal(load_file(path)["a"].numpy(), np.arange(4))
    assert load_metadata(path) == {"k": "v"}


def test_a_failed_save_keeps_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "m.safetensors"
    save_file({"w": np.ones(3, np.float32)}, path)
    before = path.read_bytes()

    def fail(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(OSError, match="No space"):
        save_file({"w": np.zeros(3, np.float32)}, path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["m.safetensors"]


@pytest.mark.parametrize("name", ["mlp", "cnn", "norm_gelu"])
def test_state_dicts_move_both_ways_between_tensorgrad_and_pytorch(tmp_path, name):
    torch = pytest.importorskip("torch")
    import safetensors.torch

    model = zoo.trained(name)
    x = zoo.sample(name, 5, seed=9)
    with tg.no_grad():
        expected = model(tg.tensor(x)).numpy()
    path = tmp_path / "tg.safetensors"
    save_file(model.state_dict(), path)
    twin = zoo.torch_twin(model)
    twin.load_state_dict(safetensors.torch.load_file(str(path)))
    twin.eval()
    with torch.no_grad():
        np.testing.assert_allclose(twin(torch.from_numpy(x)).numpy(), expected, atol=1e-5)

    # the reverse: PyTorch's weights (after a training step of its own) into tensorgrad
    twin.train()
    torch_opt = torch.optim.SGD(twin.parameters(), lr=0.05)
    twin(torch.from_numpy(zoo.sample(name, 8, seed=4))).pow(2).mean().backward()
    torch_opt.step()
    twin.eval()
    back = tmp_path / "torch.safetensors"
    safetensors.torch.save_file(twin.state_dict(), str(back))
    fresh = zoo.MODELS[name][0]().eval()
    result = fresh.load_state_dict(load_file(back))
    assert not result.missing_keys and not result.unexpected_keys
    with torch.no_grad():
        reference = twin(torch.from_numpy(x)).numpy()
    with tg.no_grad():
        np.testing.assert_allclose(fresh(tg.tensor(x)).numpy(), reference, atol=1e-5)
    if name in ("cnn", "norm_gelu"):  # the buffers came along
        bn = next(k for k in fresh.state_dict() if k.endswith("num_batches_tracked"))
        assert int(fresh.state_dict()[bn].item()) == 3


def test_without_torch_the_state_dict_round_trips(tmp_path):
    model = zoo.trained("cnn")
    path = tmp_path / "cnn.safetensors"
    save_file(model.state_dict(), path)
    fresh = zoo.cnn().eval()
    fresh.load_state_dict(load_file(path))
    x = tg.tensor(zoo.sample("cnn", 3))
    with tg.no_grad():
        np.testing.assert_array_equal(fresh(x).numpy(), model(x).numpy())
    state = fresh.state_dict()
    assert json.dumps(sorted(state)) == json.dumps(sorted(model.state_dict()))


def _outputs(result) -> list[np.ndarray]:
    results = result if isinstance(result, tuple) else (result,)
    return [r.detach().numpy() if hasattr(r, "detach") else r.numpy() for r in results]


@pytest.mark.parametrize("name", ["CharGPT", "MinGPT", "WordLM"])
def test_sequence_models_move_both_ways_between_tensorgrad_and_pytorch(tmp_path, name):
    """The GPTs (tied head, minGPT's mask buffer) and the LSTM language model: the same
    code builds the PyTorch twin (tests/export_models.py), the state dicts line up."""
    torch = pytest.importorskip("torch")
    import safetensors.torch

    model = zoo.sequence_model(name)
    arrays = zoo.sequence_inputs(name, 3, seed=9)
    with tg.no_grad():
        expected = _outputs(model(*map(tg.tensor, arrays)))
    path = tmp_path / "tg.safetensors"
    save_file(model.state_dict(), path)
    twin = zoo.sequence_classes(torch)[name]()
    result = twin.load_state_dict(safetensors.torch.load_file(str(path)))
    assert not result.missing_keys and not result.unexpected_keys
    twin.eval()
    with torch.no_grad():
        for got, want in zip(_outputs(twin(*map(torch.from_numpy, arrays))), expected):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)

    # the reverse: PyTorch's weights, after an AdamW step of its own, into tensorgrad
    twin.train()
    torch_opt = torch.optim.AdamW(twin.parameters(), lr=0.01)
    out = twin(*map(torch.from_numpy, zoo.sequence_inputs(name, 4, seed=4)))
    (out[0] if isinstance(out, tuple) else out).pow(2).mean().backward()
    torch_opt.step()
    twin.eval()
    back = tmp_path / "torch.safetensors"
    # safetensors.torch refuses tensors that share memory (the tied head): save copies
    state = {k: v.detach().clone().contiguous() for k, v in twin.state_dict().items()}
    safetensors.torch.save_file(state, str(back))
    fresh = zoo.sequence_classes(tg)[name]().eval()
    result = fresh.load_state_dict(load_file(back))
    assert not result.missing_keys and not result.unexpected_keys
    with torch.no_grad():
        reference = _outputs(twin(*map(torch.from_numpy, arrays)))
    with tg.no_grad():
        for got, want in zip(_outputs(fresh(*map(tg.tensor, arrays))), reference):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["CharGPT", "MinGPT", "WordLM"])
def test_without_torch_sequence_models_round_trip(tmp_path, name):
    model = zoo.sequence_model(name)
    path = tmp_path / f"{name}.safetensors"
    save_file(model.state_dict(), path)
    fresh = zoo.sequence_classes(tg)[name]().eval()
    fresh.load_state_dict(load_file(path))
    arrays = zoo.sequence_inputs(name, 2, seed=1)
    with tg.no_grad():
        for got, want in zip(_outputs(fresh(*map(tg.tensor, arrays))),
                             _outputs(model(*map(tg.tensor, arrays)))):  # fmt: skip
            np.testing.assert_array_equal(got, want)
    if name != "WordLM":  # the tie survives loading
        tied = fresh.head if name == "CharGPT" else fresh.lm_head
        embedding = fresh.wte if name == "CharGPT" else fresh.transformer.wte
        assert tied.weight is embedding.weight
