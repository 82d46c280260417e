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

from tensorgrad import _jit
from tensorgrad._native import threads
from tensorgrad.ops.base import Op, shape_of
from tensorgrad.ops.linear import _linear, _linear_jvp, _linear_vjp
from tensorgrad.ops.norm import _fusable


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


def _lstm_gate_grads(dh: Any, dc: Any, i: Any, f: Any, g: Any, o: Any, tanh_c: Any, c: Any):
    """The LSTM cell's VJP (see :class:`LSTMCell`): the gates' pre-activations' gradient
    ``da`` and the previous cell state's ``dc·f``, from ``dh'``, ``dc'`` and the step's
    activations and previous cell state ``c``."""
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
    return d_gates, dc * f


def _gru_gate_grads(grad: Any, h: Any, h_n: Any, r: Any, z: Any, n: Any):
    """The GRU cell's VJP (see :class:`GRUCell`): the gradients of x_gates, of h_gates and
    the direct one of h, from ``dh'``, the previous state ``h``, ``h_n`` and the gates."""
    dn = grad * (1.0 - z) * (1.0 - n * n)
    dz = grad * (h - n) * z * (1.0 - z)
    dr = dn * h_n * r * (1.0 - r)
    dx_gates = np.concatenate([dr, dz, dn], axis=-1)
    dh_gates = np.concatenate([dr, dz, dn * r], axis=-1)
    return dx_gates, dh_gates, grad * z


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

    @staticmethod
    def next_states(x_gates: Any, h_gates: Any, c: Any, hidden: int) -> tuple:
        """The step's ``(h', c')`` with operators only (forward mode's loop)."""
        i, f, g, o = LSTMCell._activations(x_gates, h_gates, hidden)
        c_new = f * c + i * g
        return o * np.tanh(c_new), c_new

    def backward(self, grad, out, x_gates, h_gates, c):
        if isinstance(x_gates, np.ndarray) and isinstance(h_gates, np.ndarray):
            i, f, g, o, tanh_c = self.saved
        else:  # recorded: recompute, so that second derivatives see the inputs
            i, f, g, o = self._activations(x_gates, h_gates, shape_of(c)[-1])
            tanh_c = np.tanh(f * c + i * g)
        d_gates, dc = _lstm_gate_grads(grad[0], grad[1], i, f, g, o, tanh_c, c)
        nx, nh, nc = self.needs_input_grad
        return (d_gates if nx else None, d_gates if nh else None, dc if nc else None)

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

    @staticmethod
    def next_states(x_gates: Any, h_gates: Any, h: Any, hidden: int) -> tuple:
        """The step's ``(h',)`` with operators only (forward mode's loop)."""
        _, z, n = GRUCell._activations(x_gates, h_gates, hidden)
        return (n + z * (h - n),)

    def backward(self, grad, out, x_gates, h_gates, h):
        hidden = shape_of(h)[-1]
        if isinstance(x_gates, np.ndarray) and isinstance(h_gates, np.ndarray):
            r, z, n = self.saved
        else:
            r, z, n = self._activations(x_gates, h_gates, hidden)
        dx_gates, dh_gates, dh = _gru_gate_grads(grad, h, h_gates[..., 2 * hidden :], r, z, n)
        nx, nh, nstate = self.needs_input_grad
        return (dx_gates if nx else None, dh_gates if nh else None, dh if nstate else None)

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


# --------------------------------------------------------------------------- whole layers
def _check_layer(name: str, n_gates: int, x: Any, states: tuple, w_ih: Any, w_hh: Any) -> tuple:
    """(steps, batch, hidden) after checking that the layer's shapes fit together."""
    xs, ws, hs = shape_of(x), shape_of(w_ih), shape_of(w_hh)
    hidden = hs[1] if len(hs) == 2 else -1
    if (
        len(xs) != 3
        or len(ws) != 2
        or ws != (n_gates * hidden, xs[2])
        or hs != (n_gates * hidden, hidden)
        or any(shape_of(s) != (xs[1], hidden) for s in states)
    ):
        raise ValueError(
            f"{name}: expected x (steps, batch, input), states (batch, hidden), weight_ih "
            f"({n_gates}·hidden, input) and weight_hh ({n_gates}·hidden, hidden), got "
            f"{xs}, {', '.join(str(shape_of(s)) for s in states)}, {ws} and {hs}"
        )
    return xs[0], xs[1], hidden


def _order(steps: int, reverse: bool) -> range:
    return range(steps - 1, -1, -1) if reverse else range(steps)


def _input_gates(x: Any, w_ih: Any, b_ih: Any) -> Any:
    """``x W_ihᵀ + b_ih`` of every step in one product: (steps, batch, gates)."""
    steps, batch, size = shape_of(x)
    rows = _linear("lstm_layer", x.reshape(steps * batch, size), w_ih, b_ih)
    return rows.reshape(steps, batch, shape_of(w_ih)[0])


def _hidden_gates(h: Any, w_hh: Any, b_hh: Any) -> Any:
    """``h W_hhᵀ + b_hh``: one step's product of the hidden state (the loops of both layers'
    forward and forward mode)."""
    gates = h @ w_hh.T
    return gates if b_hh is None else gates + b_hh


def _layer_weight_grads(needs: list, d_x: Any, d_h: Any, x: Any, h_prev: Any, w_ih: Any) -> tuple:
    """(dx, dW_ih, dW_hh, db_ih, db_hh) from the gates' gradients of every step, (steps,
    batch, gates), for the input's and the hidden state's products (``d_x``, ``d_h``; the
    same array for the LSTM), each only where needed, in whole-sequence products."""
    steps, batch, size = shape_of(x)
    gates = shape_of(w_ih)[0]
    rows_x = d_x.reshape(steps * batch, gates)
    rows_h = rows_x if d_h is d_x else d_h.reshape(steps * batch, gates)
    dx, dw_ih, db_ih = _linear_vjp(
        rows_x, x.reshape(steps * batch, size), w_ih, needs[0], needs[3], needs[5]
    )
    hidden = shape_of(h_prev)[-1]
    _, dw_hh, db_hh = _linear_vjp(
        rows_h, h_prev.reshape(steps * batch, hidden), w_ih, False, needs[4], needs[6]
    )
    if db_ih is not None and db_hh is not None and d_h is d_x:
        db_hh = db_ih * 1.0
    return (None if dx is None else dx.reshape(shape_of(x)), dw_ih, dw_hh, db_ih, db_hh)


class LSTMLayer(Op):
    """A whole LSTM layer over a sequence, one direction, as one op:
    ``(x, h0, c0, W_ih, W_hh, b_ih, b_hh) -> out`` with x (steps, batch, input) and the
    states (batch, hidden); the biases may be None. ``out`` (steps + 2, batch, hidden) holds
    each step's h, then the final h and the final c. ``reverse`` runs time backwards.

    Why: composed of a product, a slice and an :class:`LSTMCell` per step, a 35-step layer
    records over a hundred nodes, and backward walks each with its Python overhead; here the
    input's product is one GEMM for all steps, each step one GEMM with ``W_hh`` and the
    cell's arithmetic, and backward one reverse loop of the cell's VJP and a GEMM, then the
    weights' gradients as three whole-sequence GEMMs. The arithmetic is the cell's own
    (``LSTMCell._activations``, :func:`_lstm_gate_grads`); with the ``[jit]`` extra each
    step's is one numba loop around NumPy's ``tanh`` (tensorgrad/_jit), the same numbers.
    """

    name = "lstm_layer"
    uses_output = True  # each step's h, for W_hh's gradient
    batching = "recurrent_layer"  # shared weights: the vmap batch joins the layer's batch

    def __init__(self, reverse: bool = False) -> None:
        self.reverse = reverse

    def forward(self, x, h0, c0, w_ih, w_hh, b_ih=None, b_hh=None):
        steps, batch, hidden = _check_layer(self.name, 4, x, (h0, c0), w_ih, w_hh)
        x_gates = _input_gates(x, w_ih, b_ih)
        dtype = x_gates.dtype
        out = np.empty((steps + 2, batch, hidden), dtype)
        acts = np.empty((steps, batch, 4 * hidden), dtype)  # i, f, g, o of each step
        tanh_c = np.empty((steps, batch, hidden), dtype)
        cells = np.empty((steps, batch, hidden), dtype)  # each step's new c
        fused = _jit.ENABLED and _fusable(x_gates, h0, c0, w_hh, *_given(b_hh))
        bias = _bias(b_hh, 4 * hidden, dtype) if fused else None
        h, c = h0, c0
        w_hh_t = w_hh.T
        for t in _order(steps, self.reverse):
            h_gates = threads.matmul(h, w_hh_t)
            if fused and _jit.run(
                "lstm_step_forward", x_gates[t], h_gates, bias, c, acts[t], tanh_c[t],
                out[t], cells[t],
            ):  # fmt: skip
                pass  # the lines below in three loops around NumPy's tanh (tensorgrad/_jit)
            else:
                if b_hh is not None:
                    h_gates += b_hh
                i, f, g, o = LSTMCell._activations(x_gates[t], h_gates, hidden)
                np.multiply(f, c, out=cells[t])
                cells[t] += i * g
                np.tanh(cells[t], out=tanh_c[t])
                np.multiply(o, tanh_c[t], out=out[t])
                acts[t] = np.concatenate([i, f, g, o], axis=-1)
            h, c = out[t], cells[t]
        out[steps], out[steps + 1] = h, c
        self.saved = (acts, tanh_c, cells)
        return out

    def _previous(self, seq: Any, first: Any, steps: int) -> Any:
        """(steps, batch, hidden): what each step started from, in time order: ``first``
        for the first step run, else the neighbouring step's value in ``seq``."""
        if steps == 0:
            return seq[:0]
        if self.reverse:
            return np.concatenate([seq[1:steps], first[None]])
        return np.concatenate([first[None], seq[: steps - 1]])

    def backward(self, grad, out, x, h0, c0, w_ih, w_hh, b_ih=None, b_hh=None):
        steps = shape_of(x)[0]
        if type(x) is np.ndarray and type(grad) is np.ndarray:
            acts, tanh_c, cells = self.saved
            steps_acts = None
        else:  # recorded (create_graph): recompute from the inputs, for second derivatives
            steps_acts = self._recompute(x, h0, c0, w_ih, w_hh, b_ih, b_hh)
            acts = tanh_c = cells = None
            out = steps_acts[-1]
        hidden = shape_of(h0)[-1]
        h_prev = self._previous(out, h0, steps)
        c_prev = None if cells is None else self._previous(cells, c0, steps)
        fused = steps_acts is None and _jit.ENABLED and _fusable(grad, acts, w_hh)
        d_gates = np.empty(acts.shape, acts.dtype) if steps_acts is None else [None] * steps
        dh_next, dc = grad[steps], grad[steps + 1]
        if fused:
            dc = dc.copy()  # updated in place by the kernel
        for t in _order(steps, not self.reverse):
            if fused and _jit.run(
                "lstm_step_backward", grad[t], dh_next, dc, acts[t], tanh_c[t], c_prev[t],
                d_gates[t],
            ):  # fmt: skip
                pass  # the lines below in one loop (tensorgrad/_jit)
            else:
                dh = grad[t] + dh_next
                if steps_acts is None:
                    i, f, g, o = (acts[t][:, k * hidden : (k + 1) * hidden] for k in range(4))
                    d, dc = _lstm_gate_grads(dh, dc, i, f, g, o, tanh_c[t], c_prev[t])
                    d_gates[t] = d
                else:
                    i, f, g, o, tanh, c_before = steps_acts[t]
                    d_gates[t], dc = _lstm_gate_grads(dh, dc, i, f, g, o, tanh, c_before)
            dh_next = threads.matmul(d_gates[t], w_hh)
        if steps_acts is not None:
            d_gates = np.stack(d_gates) if steps else grad[:0] @ w_hh.T * 0.0
        needs = self.needs_input_grad
        dx, dw_ih, dw_hh, db_ih, db_hh = _layer_weight_grads(
            needs, d_gates, d_gates, x, h_prev, w_ih
        )
        return (
            dx,
            dh_next if needs[1] else None,
            dc if needs[2] else None,
            dw_ih,
            dw_hh,
            db_ih,
            db_hh,
        )

    def _recompute(self, x, h0, c0, w_ih, w_hh, b_ih, b_hh) -> list:
        """The forward again with operators only (Tensors in a recorded backward): each
        step's ``(i, f, g, o, tanh c', c)`` in time order, then the output."""
        steps = shape_of(x)[0]
        hidden = shape_of(h0)[-1]
        x_gates = _input_gates(x, w_ih, b_ih)
        found: list = [None] * steps
        hs: list = [None] * steps
        h, c = h0, c0
        for t in _order(steps, self.reverse):
            h_gates = _hidden_gates(h, w_hh, b_hh)
            i, f, g, o = LSTMCell._activations(x_gates[t], h_gates, hidden)
            c_new = f * c + i * g
            tanh = np.tanh(c_new)
            found[t] = (i, f, g, o, tanh, c)
            h, c = o * tanh, c_new
            hs[t] = h
        return [*found, np.stack([*hs, h, c])]

    def jvp(self, tangents, out, x, h0, c0, w_ih, w_hh, b_ih=None, b_hh=None):
        """Forward mode, step by step: the input's and the hidden state's products'
        tangents by the product rule, through :meth:`LSTMCell.jvp`."""
        return _layer_jvp(
            LSTMCell(), self.reverse, tangents, out, x, (h0, c0), w_ih, w_hh, b_ih, b_hh
        )


class GRULayer(Op):
    """A whole GRU layer over a sequence, one direction, as one op:
    ``(x, h0, W_ih, W_hh, b_ih, b_hh) -> out`` with x (steps, batch, input), h0 (batch,
    hidden), the biases possibly None; ``out`` (steps + 1, batch, hidden) holds each step's
    h, then the final h. As :class:`LSTMLayer`, for the same reason, with
    :class:`GRUCell`'s arithmetic (:func:`_gru_gate_grads`)."""

    name = "gru_layer"
    uses_output = True
    batching = "recurrent_layer"

    def __init__(self, reverse: bool = False) -> None:
        self.reverse = reverse

    def forward(self, x, h0, w_ih, w_hh, b_ih=None, b_hh=None):
        steps, batch, hidden = _check_layer(self.name, 3, x, (h0,), w_ih, w_hh)
        x_gates = _input_gates(x, w_ih, b_ih)
        dtype = x_gates.dtype
        out = np.empty((steps + 1, batch, hidden), dtype)
        acts = np.empty((steps, batch, 3 * hidden), dtype)  # r, z, n of each step
        h_new = np.empty((steps, batch, hidden), dtype)  # each step's h_n = (h W_hhᵀ + b)_n
        fused = _jit.ENABLED and _fusable(x_gates, h0, w_hh, *_given(b_hh))
        bias = _bias(b_hh, 3 * hidden, dtype) if fused else None
        h = h0
        w_hh_t = w_hh.T
        for t in _order(steps, self.reverse):
            h_gates = threads.matmul(h, w_hh_t)
            if fused and _jit.run(
                "gru_step_forward", x_gates[t], h_gates, bias, h, acts[t], h_new[t], out[t]
            ):
                pass  # the lines below in three loops around NumPy's tanh (tensorgrad/_jit)
            else:
                if b_hh is not None:
                    h_gates += b_hh
                r, z, n = GRUCell._activations(x_gates[t], h_gates, hidden)
                np.add(n, z * (h - n), out=out[t])
                acts[t] = np.concatenate([r, z, n], axis=-1)
                h_new[t] = h_gates[:, 2 * hidden :]
            h = out[t]
        out[steps] = h
        self.saved = (acts, h_new)
        return out

    _previous = LSTMLayer._previous

    def backward(self, grad, out, x, h0, w_ih, w_hh, b_ih=None, b_hh=None):
        steps, hidden = shape_of(x)[0], shape_of(h0)[-1]
        if type(x) is np.ndarray and type(grad) is np.ndarray:
            acts, h_new = self.saved
            steps_acts = None
        else:  # recorded (create_graph): recompute from the inputs, for second derivatives
            steps_acts = self._recompute(x, h0, w_ih, w_hh, b_ih, b_hh)
            acts = h_new = None
            out = steps_acts[-1]
        h_prev = self._previous(out, h0, steps)
        fused = steps_acts is None and _jit.ENABLED and _fusable(grad, acts, w_hh)
        if steps_acts is None:
            dx_gates, dh_gates = np.empty(acts.shape, acts.dtype), np.empty(acts.shape, acts.dtype)
        else:
            dx_gates, dh_gates = [None] * steps, [None] * steps
        direct = np.empty(shape_of(h0), acts.dtype) if fused else None
        dh_next = grad[steps]
        for t in _order(steps, not self.reverse):
            if fused and _jit.run(
                "gru_step_backward", grad[t], dh_next, h_prev[t], acts[t], h_new[t],
                dx_gates[t], dh_gates[t], direct,
            ):  # fmt: skip
                dh_next = threads.matmul(dh_gates[t], w_hh)
                dh_next += direct
                continue  # the lines below in one loop (tensorgrad/_jit)
            dh = grad[t] + dh_next
            if steps_acts is None:
                r, z, n = (acts[t][:, k * hidden : (k + 1) * hidden] for k in range(3))
                h_n = h_new[t]
            else:
                r, z, n, h_n = steps_acts[t]
            dx_gates[t], dh_gates[t], dh = _gru_gate_grads(dh, h_prev[t], h_n, r, z, n)
            dh_next = threads.matmul(dh_gates[t], w_hh) + dh
        if steps_acts is not None:
            empty = grad[:0] @ w_hh.T * 0.0
            dx_gates = np.stack(dx_gates) if steps else empty
            dh_gates = np.stack(dh_gates) if steps else empty
        needs = self.needs_input_grad
        needs7 = [needs[0], False, False, needs[2], needs[3], needs[4], needs[5]]
        dx, dw_ih, dw_hh, db_ih, db_hh = _layer_weight_grads(
            needs7, dx_gates, dh_gates, x, h_prev, w_ih
        )
        return (dx, dh_next if needs[1] else None, dw_ih, dw_hh, db_ih, db_hh)

    def _recompute(self, x, h0, w_ih, w_hh, b_ih, b_hh) -> list:
        """The forward again with operators only: each step's ``(r, z, n, h_n)`` in time
        order, then the output."""
        steps, hidden = shape_of(x)[0], shape_of(h0)[-1]
        x_gates = _input_gates(x, w_ih, b_ih)
        found: list = [None] * steps
        hs: list = [None] * steps
        h = h0
        for t in _order(steps, self.reverse):
            h_gates = _hidden_gates(h, w_hh, b_hh)
            r, z, n = GRUCell._activations(x_gates[t], h_gates, hidden)
            found[t] = (r, z, n, h_gates[:, 2 * hidden :])
            h = n + z * (h - n)
            hs[t] = h
        return [*found, np.stack([*hs, h])]

    def jvp(self, tangents, out, x, h0, w_ih, w_hh, b_ih=None, b_hh=None):
        """Forward mode, step by step through :meth:`GRUCell.jvp`."""
        return _layer_jvp(GRUCell(), self.reverse, tangents, out, x, (h0,), w_ih, w_hh, b_ih, b_hh)


def _layer_jvp(
    cell: Op, reverse: bool, tangents: tuple, out: Any, x: Any, states: tuple, *weights: Any
) -> Any:
    """Both layers' forward mode, step by step: the input's and the hidden state's products'
    tangents by the product rule, then the cell's JVP (:meth:`LSTMCell.jvp`,
    :meth:`GRUCell.jvp`) and its step (:meth:`LSTMCell.next_states`, ...). ``states`` are
    (h, c) or (h,), the cell's own state last; the result stacks each step's h's tangent,
    then the final states'."""
    if all(t is None for t in tangents):
        return None
    w_ih, w_hh, b_ih, b_hh = weights
    count = len(states)
    tx, state_tangents = tangents[0], list(tangents[1 : 1 + count])
    tw_ih, tw_hh, tb_ih, tb_hh = tangents[1 + count :]
    steps, hidden = shape_of(x)[0], shape_of(states[0])[-1]
    x_gates = _input_gates(x, w_ih, b_ih)
    tx_gates = _linear_jvp((tx, tw_ih, tb_ih), x, w_ih)
    found: list = [None] * steps
    for t in _order(steps, reverse):
        h = states[0]
        h_gates = _hidden_gates(h, w_hh, b_hh)
        th_gates = _linear_jvp((state_tangents[0], tw_hh, tb_hh), h, w_hh)
        tangent = cell.jvp(
            (None if tx_gates is None else tx_gates[t], th_gates, state_tangents[-1]), None,
            x_gates[t], h_gates, states[-1],
        )  # fmt: skip
        states = cell.next_states(x_gates[t], h_gates, states[-1], hidden)
        state_tangents = [tangent[0], tangent[1]] if count == 2 else [tangent]
        found[t] = state_tangents[0]
    zero = np.zeros(shape_of(states[0]), getattr(out, "dtype", np.float64))
    return np.stack([*found, *(zero if t is None else t for t in state_tangents)])


def _given(*values: Any) -> tuple:
    """The values that are not None (an absent bias)."""
    return tuple(v for v in values if v is not None)


def _bias(bias: Any, size: int, dtype: Any) -> np.ndarray:
    """The bias, or zeros where there is none (a kernel takes one always)."""
    return np.zeros(size, dtype) if bias is None else bias
