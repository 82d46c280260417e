"""The gate arithmetic of the LSTM and GRU cells, each as one op with one VJP.

A recurrent layer runs one step per time step, and a step is a handful of elementwise ops on
small (batch, hidden) arrays: composed from primitives, an LSTM step records about a dozen
nodes, each with its own Python overhead in forward and again in backward. Here the gates
are one node. The matrix products stay outside, as BLAS products the layer computes (the
input's for the whole sequence at once, before the time loop; the hidden state's per step):
the ops take the two pre-activations ``x_gates = x W_ihᵀ + b_ih`` and
``h_gates = h W_hhᵀ + b_hh``, gates side by side along the last axis in PyTorch's order.

Both forwards are written with operators and ``np.tanh`` only (the sigmoid as
``(1 + tanh(a/2)) / 2``, which cannot overflow), so they also run on Tensors and on arrays
of the scalar engine's values; backward reuses the activations forward kept in ``saved``,
and recomputes them from the inputs when it is itself being recorded (``create_graph``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorgrad.ops.base import Op, shape_of


def _sigmoid(a: Any) -> Any:
    return 0.5 * (np.tanh(0.5 * a) + 1.0)


def _check_gates(name: str, n_gates: int, x_gates: Any, h_gates: Any, state: Any) -> int:
    """The hidden size, after checking that the shapes fit together (a clear error naming
    them, instead of a broadcast that silently mixes batch rows)."""
    xs, hs, ss = shape_of(x_gates), shape_of(h_gates), shape_of(state)
    if not xs or xs[-1] % n_gates or xs != hs or ss != (*xs[:-1], xs[-1] // n_gates):
        raise ValueError(
            f"{name}: expected x_gates and h_gates of one shape (..., {n_gates}·hidden) and a "
            f"state of shape (..., hidden), got {xs}, {hs} and {ss}"
        )
    return xs[-1] // n_gates


class LSTMCell(Op):
    """The LSTM cell's gates: ``(x_gates, h_gates, c) -> stack([h', c'])``.

    With ``a = x_gates + h_gates`` split into (input, forget, cell, output) as PyTorch's
    ``weight_ih``: ``i, f, o = σ(a_i), σ(a_f), σ(a_o)``, ``g = tanh(a_g)``,
    ``c' = f c + i g``, ``h' = o tanh(c')``. The output stacks h' and c' on a new first axis
    (shape ``(2, ..., hidden)``). Given ``dh'`` and ``dc'``, the VJP is
    ``dc = dc' + dh' o (1 − tanh²c')``; ``da_i = dc g i(1−i)``, ``da_f = dc c f(1−f)``,
    ``da_g = dc i (1−g²)``, ``da_o = dh' tanh(c') o(1−o)``; the gradient of both gate
    inputs is ``da`` and that of c is ``dc f``. ``saved`` keeps ``(i, f, g, o, tanh c')``.
    """

    name = "lstm_cell"
    batching = "stacked_gates"

    def forward(self, x_gates, h_gates, c):
        hidden = _check_gates(self.name, 4, x_gates, h_gates, c)
        i, f, g, o = self._activations(x_gates, h_gates, hidden)
        c_new = f * c + i * g
        tanh_c = np.tanh(c_new)
        self.saved = (i, f, g, o, tanh_c)
        return np.stack([o * tanh_c, c_new])

    @staticmethod
    def _activations(x_gates: Any, h_gates: Any, hidden: int) -> tuple:
        a = x_gates + h_gates
        i = _sigmoid(a[..., :hidden])
        f = _sigmoid(a[..., hidden : 2 * hidden])
        g = np.tanh(a[..., 2 * hidden : 3 * hidden])
        o = _sigmoid(a[..., 3 * hidden :])
        return i, f, g, o

    def backward(self, grad, out, x_gates, h_gates, c):
        if isinstance(x_gates, np.ndarray) and isinstance(h_gates, np.ndarray):
            i, f, g, o, tanh_c = self.saved
        else:  # recorded: recompute, so that second derivatives see the inputs
            i, f, g, o = self._activations(x_gates, h_gates, shape_of(c)[-1])
            tanh_c = np.tanh(f * c + i * g)
        dh, dc = grad[0], grad[1]
        dc = dc + dh * o * (1.0 - tanh_c * tanh_c)
        d_gates = np.concatenate(
            [
                dc * g * i * (1.0 - i),
                dc * c * f * (1.0 - f),
                dc * i * (1.0 - g * g),
                dh * tanh_c * o * (1.0 - o),
            ],
            axis=-1,
        )
        nx, nh, nc = self.needs_input_grad
        return (d_gates if nx else None, d_gates if nh else None, dc * f if nc else None)

    def jvp(self, tangents, out, x_gates, h_gates, c):
        """Forward mode: ``dc' = f'·c + f·ċ + i'·g + i·g'``, ``dh' = o'·tanh c' +
        o (1 − tanh²c') dc'``, with each gate's tangent its derivative times ``ȧ``."""
        tx, th, tc = tangents
        if tx is None and th is None and tc is None:
            return None
        hidden = shape_of(c)[-1]
        i, f, g, o = self._activations(x_gates, h_gates, hidden)
        tanh_c = np.tanh(f * c + i * g)
        dc = 0.0 if tc is None else f * tc
        do = 0.0
        if tx is not None or th is not None:
            ta = tx if th is None else th if tx is None else tx + th
            ti, tf, tg, to = (ta[..., k * hidden : (k + 1) * hidden] for k in range(4))
            dc = dc + tf * f * (1.0 - f) * c + ti * i * (1.0 - i) * g + tg * (1.0 - g * g) * i
            do = to * o * (1.0 - o) * tanh_c
        dh = do + o * (1.0 - tanh_c * tanh_c) * dc
        return np.stack([np.broadcast_to(dh, shape_of(c)), np.broadcast_to(dc, shape_of(c))])


class GRUCell(Op):
    """The GRU cell's gates: ``(x_gates, h_gates, h) -> h'``.

    Gates in PyTorch's order (reset, update, new): ``r = σ(x_r + h_r)``,
    ``z = σ(x_z + h_z)``, ``n = tanh(x_n + r h_n)`` (the reset gate scales the hidden
    product including its bias ``b_hn``), ``h' = (1 − z) n + z h``. The VJP, with
    ``dn = dh'(1 − z)(1 − n²)``: ``dz = dh'(h − n) z(1−z)``, ``dr = dn h_n r(1−r)``;
    x_gates gets ``(dr, dz, dn)``, h_gates ``(dr, dz, dn r)`` and h ``dh' z``. ``saved``
    keeps ``(r, z, n)``; ``h_n`` is read from the input.
    """

    name = "gru_cell"
    batching = "leading"

    def forward(self, x_gates, h_gates, h):
        hidden = _check_gates(self.name, 3, x_gates, h_gates, h)
        r, z, n = self._activations(x_gates, h_gates, hidden)
        self.saved = (r, z, n)
        return n + z * (h - n)

    @staticmethod
    def _activations(x_gates: Any, h_gates: Any, hidden: int) -> tuple:
        rz = _sigmoid(x_gates[..., : 2 * hidden] + h_gates[..., : 2 * hidden])
        r, z = rz[..., :hidden], rz[..., hidden:]
        n = np.tanh(x_gates[..., 2 * hidden :] + r * h_gates[..., 2 * hidden :])
        return r, z, n

    def backward(self, grad, out, x_gates, h_gates, h):
        hidden = shape_of(h)[-1]
        if isinstance(x_gates, np.ndarray) and isinstance(h_gates, np.ndarray):
            r, z, n = self.saved
        else:
            r, z, n = self._activations(x_gates, h_gates, hidden)
        h_n = h_gates[..., 2 * hidden :]
        dn = grad * (1.0 - z) * (1.0 - n * n)
        dz = grad * (h - n) * z * (1.0 - z)
        dr = dn * h_n * r * (1.0 - r)
        nx, nh, nstate = self.needs_input_grad
        return (
            np.concatenate([dr, dz, dn], axis=-1) if nx else None,
            np.concatenate([dr, dz, dn * r], axis=-1) if nh else None,
            grad * z if nstate else None,
        )

    def jvp(self, tangents, out, x_gates, h_gates, h):
        """Forward mode: ``dh' = (1 − z)·ṅ + ż·(h − n) + z·ḣ`` with ``ṙ, ż`` the sigmoids'
        derivatives times their pre-activations' tangents and
        ``ṅ = (1 − n²)(ẋ_n + ṙ h_n + r ḣ_n)``."""
        tx, th, tstate = tangents
        if tx is None and th is None and tstate is None:
            return None
        hidden = shape_of(h)[-1]
        r, z, n = self._activations(x_gates, h_gates, hidden)
        h_n = h_gates[..., 2 * hidden :]
        result = 0.0 if tstate is None else z * tstate
        if tx is not None or th is not None:
            zero = np.zeros(shape_of(x_gates), dtype=getattr(x_gates, "dtype", np.float64))
            tx = zero if tx is None else tx
            th = zero if th is None else th
            ta = tx[..., : 2 * hidden] + th[..., : 2 * hidden]
            tr = ta[..., :hidden] * r * (1.0 - r)
            tz = ta[..., hidden:] * z * (1.0 - z)
            tn = (1.0 - n * n) * (tx[..., 2 * hidden :] + tr * h_n + r * th[..., 2 * hidden :])
            result = result + (1.0 - z) * tn + tz * (h - n)
        return np.broadcast_to(result, shape_of(h)) * 1.0
