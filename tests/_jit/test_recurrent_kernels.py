"""The LSTM and GRU layers' step kernels (``lstm_step_*``, ``gru_step_*``) against the NumPy
lines of ``ops.LSTMLayer`` and ``ops.GRULayer``: forward and every gradient, float32 and
float64, with and without biases, strided states, one step and an empty batch; bit for bit
(the same operations, NumPy's ``tanh`` between the loops)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba")

from tensorgrad import _jit, ops
from tests._jit.test_kernels import DTYPES, assert_bitwise_equal, both_ways

#: (steps, batch, input, hidden)
SHAPES = [(6, 4, 5, 7), (1, 1, 1, 1), (3, 0, 2, 3)]


def _inputs(dtype, shape, gates, n_states, bias, strided):
    steps, batch, size, hidden = shape
    rng = np.random.default_rng(sum(shape) + gates)

    def draw(*dims, scale=1.0):
        return (rng.standard_normal(dims) * scale).astype(dtype)

    x = draw(steps, batch, size)
    states = []
    for _ in range(n_states):
        state = draw(batch, 2 * hidden)[:, ::2] if strided else draw(batch, hidden)
        states.append(state)
    weights = [draw(gates * hidden, size, scale=0.5), draw(gates * hidden, hidden, scale=0.5)]
    biases = [draw(gates * hidden), draw(gates * hidden)] if bias else [None, None]
    return [x, *states, *weights, *biases]


def _forward_backward(op_type, inputs, reverse):
    op = op_type(reverse)
    out = op.forward(*inputs)
    op.needs_input_grad = [a is not None for a in inputs]
    grad = np.random.default_rng(9).standard_normal(out.shape).astype(out.dtype)
    grads = op.backward(grad, out, *inputs)
    return [out, *(g for g in grads if g is not None)]


@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "strided"])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
@pytest.mark.parametrize("shape", SHAPES, ids=["6x4", "size1", "empty_batch"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "op_type, gates, n_states, kernels",
    [
        (ops.LSTMLayer, 4, 2, {"lstm_step_forward", "lstm_step_backward"}),
        (ops.GRULayer, 3, 1, {"gru_step_forward", "gru_step_backward"}),
    ],
    ids=["lstm", "gru"],
)
def test_layer_kernels_equal_the_numpy_lines(
    monkeypatch, ran, op_type, gates, n_states, kernels, dtype, shape, bias, strided, reverse
):
    inputs = _inputs(dtype, shape, gates, n_states, bias, strided)
    plain, fused = both_ways(monkeypatch, lambda: _forward_backward(op_type, inputs, reverse))
    assert set(ran) == kernels
    assert len(plain) == len(fused) == 1 + n_states + 1 + 2 + (2 if bias else 0)
    assert_bitwise_equal(fused, plain)


def test_a_failing_step_kernel_leaves_the_numpy_lines(monkeypatch):
    """A kernel that fails (here: replaced by one that raises) warns once; the layer's
    result is the NumPy lines'."""
    inputs = _inputs(np.float64, (3, 2, 2, 3), 4, 2, True, False)
    monkeypatch.setattr(_jit, "ENABLED", False)
    plain = _forward_backward(ops.LSTMLayer, inputs, False)

    def broken(*args):
        raise TypeError("cannot compile this here")

    monkeypatch.setattr(_jit, "ENABLED", True)
    monkeypatch.setattr(_jit, "_kernels", {"lstm_step_forward": broken})
    with pytest.warns(RuntimeWarning, match="lstm_step_forward"):
        fused = _forward_backward(ops.LSTMLayer, inputs, False)
    assert_bitwise_equal(fused, plain)
