"""Grad mode (``tensorgrad/grad_mode.py``): ``no_grad`` and ``enable_grad`` as context
managers and decorators."""

from __future__ import annotations

import numpy as np
import pytest

import tensorgrad as tg


def leaf(value, dtype=tg.float64):
    return tg.tensor(np.asarray(value, dtype=dtype), requires_grad=True)


def test_no_grad_context_and_decorator():
    x = leaf([1.0])
    with tg.no_grad():
        y = x * 2
        assert not tg.is_grad_enabled()
        with tg.enable_grad():
            z = x * 2
    assert tg.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None
    assert z.requires_grad

    @tg.no_grad()
    def infer(t):
        return t * 3

    assert not infer(x).requires_grad
    assert tg.is_grad_enabled()


def test_no_grad_restores_state_after_exception():
    with pytest.raises(ZeroDivisionError), tg.no_grad():
        raise ZeroDivisionError
    assert tg.is_grad_enabled()
