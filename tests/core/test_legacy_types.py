"""PyTorch's legacy tensor types (``tg.FloatTensor``, ``tg.LongTensor``, ...): constructors,
``isinstance`` by dtype and ``x.type(tg.LongTensor)``; against PyTorch where installed."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import tensorgrad as tg

NAMES = {
    "FloatTensor": "float32",
    "DoubleTensor": "float64",
    "HalfTensor": "float16",
    "LongTensor": "int64",
    "IntTensor": "int32",
    "ShortTensor": "int16",
    "CharTensor": "int8",
    "ByteTensor": "uint8",
    "BoolTensor": "bool",
}


@pytest.mark.parametrize("name", sorted(NAMES))
def test_each_type_makes_and_recognises_its_dtype(name):
    kind = getattr(tg, name)
    assert kind.dtype == np.dtype(NAMES[name]) and repr(kind) == f"<class 'torch.{name}'>"
    assert pickle.loads(pickle.dumps(kind)) is kind
    sized = kind(2, 3)
    assert sized.shape == (2, 3) and sized.dtype == kind.dtype and not sized.numpy().any()
    assert kind(tg.Size([4])).shape == (4,) and kind().shape == (0,)
    data = kind([1, 0])
    assert data.dtype == kind.dtype and data.tolist() == [1, 0]
    assert isinstance(data, kind) and isinstance(data, tg.Tensor)
    others = [getattr(tg, n) for n in NAMES if n != name]
    assert not any(isinstance(data, other) for other in others)
    assert kind(data) is data
    assert tg.ones(2, dtype=tg.float64).type(kind).dtype == kind.dtype


def test_legacy_construction_as_programs_write_it():
    """word_language_model's ONNX dummy input, and PyTorch's errors."""
    dummy = tg.LongTensor(35 * 1).zero_().view(-1, 1)
    assert dummy.shape == (35, 1) and dummy.dtype == tg.int64
    assert tg.LongTensor([1.7, -2.2]).tolist() == [1, -2]  # truncated, as PyTorch
    assert tg.FloatTensor((2, 3)).tolist() == [2.0, 3.0]  # a tuple is data, a Size is a size
    with pytest.raises(TypeError, match="expected a tensor of dtype float32, got float64"):
        tg.FloatTensor(tg.ones(2, dtype=tg.float64))
    with pytest.raises(TypeError, match="data must be a sequence"):
        tg.LongTensor(2.5)
    with pytest.raises(tg.UnsupportedError):
        tg.FloatTensor(2, device="cuda")


def test_legacy_types_agree_with_pytorch():
    torch = pytest.importorskip("torch")
    for name in NAMES:
        ours, theirs = getattr(tg, name), getattr(torch, name)
        assert ours.dtype == np.dtype(str(theirs.dtype).removeprefix("torch."))
        assert ours(2, 3).shape == tuple(theirs(2, 3).shape)
        assert ours([1, 0]).tolist() == theirs([1, 0]).tolist()
        assert tg.ones(2).type(ours).type() == torch.ones(2).type(theirs).type()
    assert tg.LongTensor([1.7, -2.2]).tolist() == torch.LongTensor([1.7, -2.2]).tolist()
    assert tg.FloatTensor((2, 3)).tolist() == torch.FloatTensor((2, 3)).tolist()
