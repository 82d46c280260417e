"""``nn.Embedding`` and ``F.embedding``: lookups, the padding row's gradient, ``max_norm``,
``from_pretrained``, state dicts and errors, against PyTorch where it is installed."""

from __future__ import annotations

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import nn
from tensorgrad.nn import functional as F


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def test_lookup_shape_values_and_gradient():
    weight = tg.tensor(np.arange(12.0).reshape(4, 3), requires_grad=True)
    index = tg.tensor([[1, 3, 1], [0, 0, 2]])
    out = F.embedding(index, weight)
    assert out.shape == (2, 3, 3)
    np.testing.assert_array_equal(out.detach().numpy(), weight.detach().numpy()[index.numpy()])
    out.sum().backward()
    np.testing.assert_array_equal(weight.grad.numpy()[:, 0], [2.0, 2.0, 1.0, 1.0])  # counts
    assert tg.autograd.gradcheck(lambda w: F.embedding(index, w), (weight.double(),))


def test_the_padding_row_gets_no_gradient_and_starts_at_zero():
    tg.manual_seed(0)
    layer = nn.Embedding(5, 2, padding_idx=-2)
    assert layer.padding_idx == 3 and layer.weight.numpy()[3].tolist() == [0.0, 0.0]
    layer(tg.tensor([3, 1, 3, 4])).sum().backward()
    assert layer.weight.grad.numpy()[:, 0].tolist() == [0.0, 1.0, 0.0, 0.0, 1.0]


def test_agrees_with_pytorch_values_gradients_and_state_dict(torch):
    tg.manual_seed(1)
    ours = nn.Embedding(7, 4, padding_idx=2).double()
    theirs = torch.nn.Embedding(7, 4, padding_idx=2).double()
    theirs.load_state_dict({k: torch.from_numpy(v.numpy()) for k, v in ours.state_dict().items()})
    index = np.array([[2, 0, 6], [5, 2, 2]])
    a, b = ours(tg.tensor(index)), theirs(torch.from_numpy(index))
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    upstream = np.random.default_rng(0).standard_normal(a.shape)
    a.backward(tg.tensor(upstream))
    b.backward(torch.from_numpy(upstream))
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=1e-12)
    assert repr(ours) == repr(theirs) == "Embedding(7, 4, padding_idx=2)"
    assert list(ours.state_dict()) == list(theirs.state_dict())


def test_max_norm_renormalizes_the_rows_looked_up_as_pytorch(torch):
    values = np.random.default_rng(2).standard_normal((5, 3)) * 3
    ours, theirs = tg.tensor(values.copy()), torch.tensor(values.copy())
    index = [1, 1, 4]
    a = F.embedding(tg.tensor(index), ours, max_norm=1.5, norm_type=1.0)
    b = torch.nn.functional.embedding(torch.tensor(index), theirs, max_norm=1.5, norm_type=1.0)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)  # the table, changed
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)
    assert np.array_equal(ours.numpy()[[0, 2, 3]], values[[0, 2, 3]])  # rows not looked up


def test_from_pretrained_copies_and_freezes(torch):
    table = tg.tensor([[1.0, 2.0], [3.0, 4.0]])
    frozen = nn.Embedding.from_pretrained(table)
    assert not frozen.weight.requires_grad and frozen.weight.tolist() == table.tolist()
    table[0, 0] = 9.0
    assert frozen.weight.numpy()[0, 0] == 1.0  # a copy
    trained = nn.Embedding.from_pretrained(table, freeze=False, padding_idx=1)
    assert trained.weight.requires_grad and repr(trained) == repr(
        torch.nn.Embedding.from_pretrained(torch.ones(2, 2), freeze=False, padding_idx=1)
    )
    with pytest.raises(AssertionError, match="Embeddings parameter is expected to be 2-dim"):
        nn.Embedding.from_pretrained(tg.ones(3))


def test_errors_name_what_is_wrong():
    weight = tg.ones(4, 2)
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(tg.tensor([4]), weight)
    with pytest.raises(RuntimeError, match="'indices' to have one of the following scalar types"):
        F.embedding(tg.tensor([1.0]), weight)
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        nn.Embedding(4, 2, padding_idx=4)
    with pytest.raises(tg.UnsupportedError, match="sparse gradients are not supported"):
        F.embedding(tg.tensor([1]), weight, sparse=True)
