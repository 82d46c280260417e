"""nn.utils: gradient clipping (PyTorch's rule) and parameter vectors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import nn
from tensorgrad.nn.utils import (
    clip_grad_norm_,
    clip_grad_value_,
    parameters_to_vector,
    vector_to_parameters,
)


def params_with_grads(*grads):
    params = []
    for g in grads:
        p = nn.Parameter(np.zeros(np.shape(g), dtype=np.float32))
        p.grad = np.asarray(g, dtype=np.float32)
        params.append(p)
    return params


def test_clip_grad_norm_scales_when_the_norm_is_too_large():
    params = params_with_grads([3.0, 0.0], [[4.0]])  # joint 2-norm 5
    total = clip_grad_norm_(params, max_norm=1.0)
    assert isinstance(total, tg.Tensor) and total.item() == pytest.approx(5.0)
    scale = 1.0 / (5.0 + 1e-6)
    np.testing.assert_allclose(params[0].grad.numpy(), [3 * scale, 0.0], rtol=1e-6)
    np.testing.assert_allclose(params[1].grad.numpy(), [[4 * scale]], rtol=1e-6)
    assert params[0].grad.dtype == np.float32


def test_clip_grad_norm_leaves_small_gradients_alone():
    params = params_with_grads([0.3, 0.4])
    total = clip_grad_norm_(params, max_norm=1.0)
    assert total.item() == pytest.approx(0.5)
    np.testing.assert_array_equal(params[0].grad.numpy(), np.float32([0.3, 0.4]))


def test_clip_grad_norm_other_orders_and_missing_grads():
    params = params_with_grads([1.0, -2.0], [3.0])
    params.append(nn.Parameter(np.zeros(2, dtype=np.float32)))  # no grad: skipped
    assert clip_grad_norm_(params, 100.0, norm_type=1).item() == pytest.approx(6.0)
    assert clip_grad_norm_(params, 100.0, norm_type=math.inf).item() == pytest.approx(3.0)
    clip_grad_norm_(params, 1.5, norm_type="inf")
    np.testing.assert_allclose(params[1].grad.numpy(), [1.5], rtol=1e-5)
    assert clip_grad_norm_(params[2], 1.0).item() == 0.0


def test_clip_grad_norm_non_finite():
    params = params_with_grads([np.inf, 1.0])
    with pytest.raises(RuntimeError, match="error_if_nonfinite"):
        clip_grad_norm_(params, 1.0, error_if_nonfinite=True)


def test_clip_grad_value():
    params = params_with_grads([-3.0, 0.5, 2.0])
    clip_grad_value_(params, 1.0)
    np.testing.assert_array_equal(params[0].grad.numpy(), [-1.0, 0.5, 1.0])


def test_parameters_to_vector_and_back():
    model = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1))
    vector = parameters_to_vector(model.parameters())
    assert vector.shape == (3 * 2 + 2 + 2 + 1,)
    vector_to_parameters(vector * 2.0, model.parameters())
    np.testing.assert_allclose(parameters_to_vector(model.parameters()).numpy(), 2 * vector.numpy())
    with pytest.raises(ValueError, match="vector has 3 elements, the parameters 11"):
        vector_to_parameters(tg.zeros(3), model.parameters())
