"""Property-based tests: broadcasting binary ops and matmul on shapes hypothesis draws.

For add and mul the gradient is compared with an independent NumPy computation: each input
element's gradient is the sum of the upstream gradient over the output elements it was
broadcast to (found with ``np.bincount`` over the broadcast element indices, not with the
``sum_to`` helper the ops use).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes

import tensorgrad as tg
from tensorgrad import ops
from tensorgrad.autograd.finite_differences import gradcheck
from tensorgrad.core.engine import apply as _apply

SETTINGS = settings(max_examples=40, deadline=None)


def bce_with_logits(x, y):
    return _apply(ops.BinaryCrossEntropyWithLogits(), x, y)


BINARY = {
    "add": lambda x, y: x + y,
    "sub": lambda x, y: x - y,
    "mul": lambda x, y: x * y,
    "div": lambda x, y: x / y,
    "pow": lambda x, y: x**y,
    "maximum": tg.maximum,
    "minimum": tg.minimum,
    "bce_with_logits": bce_with_logits,
}

broadcast_pairs = mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, max_side=3)


def values_for(name, shape_x, shape_y, seed):
    """Inputs in each op's domain, with no ties between x and y (for maximum and minimum)."""
    rng = np.random.default_rng(seed)
    x = 0.2 * rng.integers(-8, 8, shape_x) + 0.05 + rng.uniform(-0.02, 0.02, shape_x)
    y = 0.2 * rng.integers(-8, 8, shape_y) + 0.15 + rng.uniform(-0.02, 0.02, shape_y)
    if name == "pow":
        x = np.abs(x) + 0.3
    if name == "div":
        y = np.where(np.abs(y) < 0.3, 0.5, y)
    return x, y


def broadcast_sum(upstream: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum ``upstream`` over every output element each element of ``shape`` was copied to."""
    size = int(np.prod(shape, dtype=np.int64))
    owners = np.broadcast_to(np.arange(size).reshape(shape), upstream.shape)
    return np.bincount(owners.ravel(), weights=upstream.ravel(), minlength=size).reshape(shape)


@pytest.mark.parametrize("name", list(BINARY))
@SETTINGS
@given(shapes=broadcast_pairs, seed=st.integers(0, 2**32 - 1))
def test_binary_gradient_shapes_and_values(name, shapes, seed):
    (shape_x, shape_y), out_shape = shapes.input_shapes, shapes.result_shape
    x_val, y_val = values_for(name, shape_x, shape_y, seed)
    x, y = tg.Tensor(x_val, requires_grad=True), tg.Tensor(y_val, requires_grad=True)
    out = BINARY[name](x, y)
    assert out.shape == out_shape
    upstream = np.random.default_rng(seed).standard_normal(out_shape)
    out.backward(upstream)
    assert x.grad.shape == shape_x and y.grad.shape == shape_y
    if name == "add":
        # the same sums, possibly added in another order: equal up to rounding
        np.testing.assert_allclose(
            x.grad.numpy(), broadcast_sum(upstream, shape_x), rtol=1e-12, atol=1e-13
        )
        np.testing.assert_allclose(
            y.grad.numpy(), broadcast_sum(upstream, shape_y), rtol=1e-12, atol=1e-13
        )
    elif name == "mul":
        y_b, x_b = np.broadcast_to(y_val, out_shape), np.broadcast_to(x_val, out_shape)
        np.testing.assert_allclose(
            x.grad.numpy(), broadcast_sum(upstream * y_b, shape_x), rtol=1e-12, atol=1e-13
        )
        np.testing.assert_allclose(
            y.grad.numpy(), broadcast_sum(upstream * x_b, shape_y), rtol=1e-12, atol=1e-13
        )
    else:
        assert gradcheck(
            BINARY[name],
            [x.detach().requires_grad_(), y.detach().requires_grad_()],
            atol=1e-6,
            rtol=1e-6,
            seed=seed,
        )


# matmul: NumPy's signature with optional core dimensions and broadcast batch dimensions
matmul_shapes = mutually_broadcastable_shapes(signature=np.matmul.signature, max_dims=2, max_side=3)


@SETTINGS
@given(shapes=matmul_shapes, seed=st.integers(0, 2**32 - 1))
def test_matmul_forward_and_backward(shapes, seed):
    shape_x, shape_y = shapes.input_shapes
    rng = np.random.default_rng(seed)
    x_val, y_val = rng.standard_normal(shape_x), rng.standard_normal(shape_y)
    x, y = tg.Tensor(x_val, requires_grad=True), tg.Tensor(y_val, requires_grad=True)
    out = x @ y
    np.testing.assert_allclose(out.numpy(), np.matmul(x_val, y_val), rtol=1e-12, atol=1e-12)
    assert out.shape == shapes.result_shape
    out.backward(np.ones(out.shape))
    assert x.grad.shape == shape_x and y.grad.shape == shape_y
    assert gradcheck(
        lambda a, b: a @ b,
        [x.detach().requires_grad_(), y.detach().requires_grad_()],
        atol=1e-6,
        rtol=1e-6,
        seed=seed,
        n_directions=2,
    )


@SETTINGS
@given(shapes=matmul_shapes, seed=st.integers(0, 2**32 - 1))
def test_matmul_float32_stays_float32(shapes, seed):
    shape_x, shape_y = shapes.input_shapes
    rng = np.random.default_rng(seed)
    x = tg.Tensor(rng.standard_normal(shape_x).astype(np.float32), requires_grad=True)
    y = tg.Tensor(rng.standard_normal(shape_y).astype(np.float32), requires_grad=True)
    out = x @ y
    assert out.dtype == np.float32
    out.backward(np.ones(out.shape, np.float32))
    assert x.grad.dtype == np.float32 and y.grad.dtype == np.float32


@SETTINGS
@given(
    shape=st.lists(st.integers(0, 3), min_size=0, max_size=4).map(tuple),
    data=st.data(),
)
def test_sum_gradient_broadcasts_back(shape, data):
    ndim = len(shape)
    axes = data.draw(
        st.none()
        | st.sets(st.integers(0, max(ndim - 1, 0)), max_size=ndim).map(lambda s: tuple(sorted(s)))
        if ndim
        else st.none()
    )
    keepdims = data.draw(st.booleans())
    x = tg.Tensor(np.random.default_rng(0).standard_normal(shape), requires_grad=True)
    out = x.sum(axis=axes, keepdims=keepdims)
    axes = None if axes == () else axes  # the method reads dim=() as PyTorch does: all
    np.testing.assert_allclose(out.numpy(), np.sum(x.numpy(), axis=axes, keepdims=keepdims))
    upstream = np.random.default_rng(1).standard_normal(out.shape)
    out.backward(upstream)
    kept = np.sum(np.zeros(shape), axis=axes, keepdims=True).shape
    np.testing.assert_array_equal(x.grad.numpy(), np.broadcast_to(upstream.reshape(kept), shape))
