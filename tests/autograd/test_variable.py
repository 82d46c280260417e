"""``tg.autograd.Variable`` (PyTorch's deprecated wrapper: a detached tensor) and
``autograd.grad``'s deprecated ``only_inputs``, as old programs use them."""

from __future__ import annotations

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.autograd import Variable


def test_variable_is_a_detached_tensor():
    x = tg.ones(2, requires_grad=True)
    y = x * 2
    v = Variable(y)
    assert v.grad_fn is None and not v.requires_grad and v is not y
    assert np.shares_memory(v.numpy(), y.detach().numpy())
    w = Variable(tg.ones(2), requires_grad=True)
    assert w.requires_grad and w.is_leaf
    assert isinstance(w, Variable) and isinstance(tg.zeros(1), Variable)
    assert not isinstance(3, Variable)
    assert Variable().shape == (0,) and Variable().dtype == tg.float32
    assert Variable(tg.ones(2, dtype=tg.int64)).dtype == tg.int64
    with pytest.warns(UserWarning, match="volatile was removed"):
        assert not Variable(tg.ones(2), volatile=True).requires_grad
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got int"):
        Variable(3)


def test_grad_takes_pytorchs_deprecated_only_inputs():
    """WGAN-GP's gradient penalty: ``autograd.grad(..., create_graph=True,
    retain_graph=True, only_inputs=True)``."""
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    (g,) = tg.autograd.grad((x**2).sum(), x, None, True, True, True)
    np.testing.assert_allclose(g.numpy(), [2.0, 4.0])
    with pytest.warns(FutureWarning, match="only_inputs argument is deprecated"):
        tg.autograd.grad((x**2).sum(), x, only_inputs=False)


def test_variable_and_only_inputs_agree_with_pytorch():
    torch = pytest.importorskip("torch")
    from torch.autograd import Variable as TorchVariable

    for make in (lambda m, V: V(m.ones(2) * 3), lambda m, V: V(m.ones(2), requires_grad=True)):
        ours, theirs = make(tg, Variable), make(torch, TorchVariable)
        assert ours.requires_grad == theirs.requires_grad and ours.is_leaf == theirs.is_leaf
    xt = torch.tensor([1.0, 2.0], requires_grad=True)
    (gt,) = torch.autograd.grad((xt**3).sum(), xt, None, True, True, True)
    xg = tg.tensor([1.0, 2.0], requires_grad=True)
    (gg,) = tg.autograd.grad((xg**3).sum(), xg, None, True, True, True)
    np.testing.assert_allclose(gg.detach().numpy(), gt.detach().numpy())
