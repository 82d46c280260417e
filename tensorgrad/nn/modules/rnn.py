"""Recurrent layers: ``RNN``, ``LSTM``, ``GRU`` and their one-step cells, as PyTorch's.

Parameter names, shapes, gate order and initialisation are PyTorch's, so state dicts load
both ways: for layer k (and ``_reverse`` for the second direction), ``weight_ih_l{k}``
(gates × input), ``weight_hh_l{k}`` (gates × hidden), ``bias_ih_l{k}`` and ``bias_hh_l{k}``,
with the gates stacked (input, forget, cell, output) for the LSTM and (reset, update, new)
for the GRU; everything starts in U(−1/√hidden, 1/√hidden).

A layer computes the input's product with ``weight_ih`` for the whole sequence at once
(one BLAS product), then loops over time: per step one product with ``weight_hh`` and one
fused op for the gate arithmetic (``ops.LSTMCell``, ``ops.GRUCell``; the plain RNN's
``tanh(a)`` or ``relu(a)`` is one op already). Sequences run time-major as flattened rows,
so a :class:`~tensorgrad.nn.utils.rnn.PackedSequence` and a padded batch take the same path:
step t runs on the ``batch_sizes[t]`` rows still going. A padded batch through ``LSTM`` or
``GRU`` runs each layer's direction as one op instead (``ops.LSTMLayer``, ``ops.GRULayer``:
the same arithmetic, no graph node per step; :data:`FUSED_LSTM_LAYER` switches it).
"""

from __future__ import annotations

import math
import numbers
import warnings
from typing import Any

import numpy as np

from tensorgrad import array_backend, ops
from tensorgrad.core import batching
from tensorgrad.core.engine import apply, as_tensor
from tensorgrad.core.engine import state as engine_state
from tensorgrad.core.forward import state as forward_state
from tensorgrad.core.functions import cat, stack
from tensorgrad.core.tensor import Tensor
from tensorgrad.nn import functional as F
from tensorgrad.nn import init
from tensorgrad.nn.modules.module import Module
from tensorgrad.nn.parameter import Parameter
from tensorgrad.nn.utils.rnn import PackedSequence

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _step(mode: str, x_gates: Tensor, h: Tensor, c: Tensor | None, w_hh: Tensor, b_hh: Any):
    """One time step of a cell: the new (h, c) (c is None but for the LSTM)."""
    h_gates = F.linear(h, w_hh, b_hh)
    if mode == "LSTM":
        hc = apply(ops.LSTMCell(), x_gates, h_gates, c)
        return hc[0], hc[1]
    if mode == "GRU":
        return apply(ops.GRUCell(), x_gates, h_gates, h), None
    a = x_gates + h_gates
    return (a.tanh() if mode == "RNN_TANH" else a.relu()), None


#: run each layer of nn.LSTM (nn.GRU) as one op over the whole sequence (ops.LSTMLayer,
#: ops.GRULayer): no graph node per step, the weights' gradients as whole-sequence GEMMs;
#: off: a product and a cell op per step, as nn.LSTMCell composes them
FUSED_LSTM_LAYER = True
FUSED_GRU_LAYER = True


#: split the whole sequence's input projection into its time steps by halving, not one slice
#: per step: each slice's VJP scatters into zeros of what it was cut from, so T slices of the
#: whole cost T² (a 35-step word model: 35 full-size scatters a layer), halving T·log₂ T
HALVING_SPLIT = True


def _step_rows(x: Tensor, offsets: list[int]) -> list[Tensor]:
    """The rows ``x[offsets[t] : offsets[t + 1]]`` of each step t, cut by repeated halving
    (an explicit stack, no recursion): every slice is taken of a piece about twice its size."""
    steps = len(offsets) - 1
    if not HALVING_SPLIT or steps <= 2:
        return [x[offsets[t] : offsets[t + 1]] for t in range(steps)]
    pieces: list[Tensor] = [None] * steps  # type: ignore[list-item]
    pending = [(x, 0, steps)]  # (the rows of steps first .. stop, first, stop)
    while pending:
        rows, first, stop = pending.pop()
        if stop - first == 1:
            pieces[first] = rows
            continue
        middle = (first + stop) // 2
        cut = offsets[middle] - offsets[first]
        pending.append((rows[:cut], first, middle))
        pending.append((rows[cut:], middle, stop))
    return pieces


def _run_direction(
    mode: str,
    data: Tensor,
    batch_sizes: list[int],
    h0: Tensor,
    c0: Tensor | None,
    weights: list,
    reverse: bool,
) -> tuple[Tensor, Tensor, Tensor | None]:
    """One direction of one layer over time-major rows ``data`` (N, in): the outputs
    (N, hidden) and the final states (B, hidden), each sequence's taken at its last step."""
    w_ih, w_hh, b_ih, b_hh = weights
    offsets = np.concatenate([[0], np.cumsum(batch_sizes)]).tolist()
    steps = len(batch_sizes)
    x_gates = _step_rows(F.linear(data, w_ih, b_ih), offsets)
    outputs: list[Tensor] = [None] * steps  # type: ignore[list-item]
    uniform = steps == 0 or batch_sizes[-1] == batch_sizes[0]
    if not reverse:
        h, c = h0, c0
        finished_h: list[Tensor] = []
        finished_c: list[Tensor] = []
        for t in range(steps):
            size = batch_sizes[t]
            if not uniform and size < h.shape[0]:  # sequences that ended: keep their state
                finished_h.append(h[size:])
                h = h[:size]
                if c is not None:
                    finished_c.append(c[size:])
                    c = c[:size]
            h, c = _step(mode, x_gates[t], h, c, w_hh, b_hh)
            outputs[t] = h
        if finished_h:
            h = cat([h, *reversed(finished_h)])
            if c is not None:
                c = cat([c, *reversed(finished_c)])
    else:
        size = batch_sizes[-1] if steps else h0.shape[0]
        h = h0 if uniform else h0[:size]
        c = c0 if (uniform or c0 is None) else c0[:size]
        for t in reversed(range(steps)):
            grown = batch_sizes[t]
            if not uniform and grown > h.shape[0]:  # sequences that start later, from h0
                h = cat([h, h0[h.shape[0] : grown]])
                if c is not None:
                    c = cat([c, c0[c.shape[0] : grown]])
            h, c = _step(mode, x_gates[t], h, c, w_hh, b_hh)
            outputs[t] = h
    if steps == 0:
        out = Tensor(np.zeros((0, h0.shape[-1]), dtype=h0.dtype))
    else:
        out = outputs[0] if steps == 1 else cat(outputs)
    return out, h, c


class RNNBase(Module):
    """What ``RNN``, ``LSTM`` and ``GRU`` share: parameters, checks and the layer loop."""

    def __init__(
        self,
        mode: str,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        if device is not None:
            array_backend.as_device(device)
        dtype = array_backend.as_dtype(dtype) or array_backend.DEFAULT_FLOAT
        if (
            not isinstance(dropout, numbers.Number)
            or isinstance(dropout, bool)
            or not 0 <= dropout <= 1
        ):
            raise ValueError(
                "dropout should be a number in range [0, 1] representing the probability of "
                "an element being zeroed"
            )
        if dropout > 0 and num_layers == 1:
            warnings.warn(
                "dropout option adds dropout after all but last recurrent layer, so non-zero "
                f"dropout expects num_layers greater than 1, but got dropout={dropout} and "
                f"num_layers={num_layers}",
                UserWarning,
                stacklevel=3,
            )
        for what, value in (("hidden_size", hidden_size), ("num_layers", num_layers)):
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"{what} should be of type int, got: {type(value).__name__}")
            if value <= 0:
                raise ValueError(f"{what} must be greater than zero")
        if proj_size < 0:
            raise ValueError(
                "proj_size should be a positive integer or zero to disable projections"
            )
        if proj_size > 0:
            raise NotImplementedError(
                f"{type(self).__name__}: proj_size > 0 (LSTM with projections) is not "
                "supported by tensorgrad"
            )
        self.mode = mode
        self.input_size, self.hidden_size = input_size, hidden_size
        self.num_layers, self.bias = num_layers, bias
        self.batch_first, self.dropout = batch_first, float(dropout)
        self.bidirectional, self.proj_size = bidirectional, proj_size
        directions = 2 if bidirectional else 1
        gate_size = _GATES[mode] * hidden_size
        self._flat_weights_names: list[str] = []
        self._all_weights: list[list[str]] = []
        for layer in range(num_layers):
            for direction in range(directions):
                layer_input = input_size if layer == 0 else hidden_size * directions
                suffix = "_reverse" if direction == 1 else ""
                shapes = [
                    (f"weight_ih_l{layer}{suffix}", (gate_size, layer_input)),
                    (f"weight_hh_l{layer}{suffix}", (gate_size, hidden_size)),
                ]
                if bias:
                    shapes += [
                        (f"bias_ih_l{layer}{suffix}", (gate_size,)),
                        (f"bias_hh_l{layer}{suffix}", (gate_size,)),
                    ]
                for name, shape in shapes:
                    setattr(self, name, Parameter(array_backend.zeros(shape, dtype)))
                names = [name for name, _ in shapes]
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0.0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def flatten_parameters(self) -> None:
        """Accepted for PyTorch's programs; the weights are already used as they are."""

    @property
    def _flat_weights(self) -> list[Tensor]:
        return [getattr(self, name) for name in self._flat_weights_names]

    @property
    def all_weights(self) -> list[list[Parameter]]:
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def _layer_weights(self, index: int) -> list:
        names = self._all_weights[index]
        if self.bias:
            return [getattr(self, n) for n in names]
        return [getattr(self, names[0]), getattr(self, names[1]), None, None]

    # ---------------------------------------------------------------- checks
    def _check_input(self, x: Tensor) -> None:
        weight = getattr(self, self._flat_weights_names[0])
        if x.dtype != weight.dtype:  # PyTorch's ValueError, before F.linear's RuntimeError
            raise ValueError(
                f"RNN input dtype ({x.dtype}) does not match weight dtype ({weight.dtype}). "
                f"Convert input: input.to({weight.dtype}), or convert model: model.to({x.dtype})"
            )
        if x.shape[-1] != self.input_size:
            raise RuntimeError(
                f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                f"got {x.shape[-1]}"
            )

    def _expected_hidden(self, batch: int) -> tuple[int, int, int]:
        return (self.num_layers * (2 if self.bidirectional else 1), batch, self.hidden_size)

    @staticmethod
    def _check_hidden(hx: Tensor, expected: tuple, what: str = "hidden") -> None:
        if tuple(hx.shape) != expected:
            raise RuntimeError(f"Expected {what} size {expected}, got {list(hx.shape)}")

    # ---------------------------------------------------------------- forward
    def _prepare(self, input: Any, hx_count: int, hx: Any) -> tuple:
        """The input as time-major rows, its batch sizes, the initial states (time-major
        batch, sorted for a packed input) and how to shape the result."""
        name = type(self).__name__
        if isinstance(input, PackedSequence):
            data = input.data
            batch_sizes = input.batch_sizes._data.tolist()
            batch = batch_sizes[0] if batch_sizes else 0
            unbatched = False
            self._check_input(data)
            layout = ("packed", input)
        else:
            x = as_tensor(input)
            if x.ndim not in (2, 3):
                raise ValueError(
                    f"{name}: Expected input to be 2D or 3D, got {x.ndim}D input instead"
                )
            unbatched = x.ndim == 2
            if unbatched:
                x = x.unsqueeze(1)
            elif self.batch_first:
                x = x.transpose(0, 1)
            self._check_input(x)
            steps, batch = x.shape[0], x.shape[1]
            data = x.reshape(steps * batch, x.shape[2])
            batch_sizes = [batch] * steps
            layout = ("padded", unbatched, steps, batch)
        expected = self._expected_hidden(batch)
        if hx is None:
            zeros = Tensor(np.zeros(expected, dtype=data.dtype))
            states = [zeros] * hx_count
        else:
            given = list(hx) if hx_count == 2 else [hx]
            if hx_count == 2 and (not isinstance(hx, (tuple, list)) or len(given) != 2):
                raise RuntimeError(f"{name}: expected hx to be a tuple (h_0, c_0)")
            states = []
            for k, state in enumerate(given):
                state = as_tensor(state)
                want = 2 if unbatched else 3
                if state.ndim != want:
                    kind = "unbatched 2-D" if unbatched else "batched 3-D"
                    raise RuntimeError(
                        f"For {kind} input, hx{'' if hx_count == 1 else f'[{k}]'} should also "
                        f"be {want}-D but got {state.ndim}-D tensor"
                    )
                if unbatched:
                    state = state.unsqueeze(1)
                what = "hidden" if hx_count == 1 else f"hidden[{k}]"
                self._check_hidden(state, expected, what)
                if layout[0] == "packed" and input.sorted_indices is not None:
                    state = state[:, input.sorted_indices._data]
                states.append(state)
        return data, batch_sizes, states, layout

    def _finish(self, out: Tensor, finals: list, layout: tuple) -> tuple:
        if layout[0] == "packed":
            packed = layout[1]
            if packed.unsorted_indices is not None:
                finals = [f[:, packed.unsorted_indices._data] for f in finals]
            output = PackedSequence(
                out, packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices
            )
            return output, finals
        _, unbatched, steps, batch = layout
        output = out.reshape(steps, batch, out.shape[-1])
        if unbatched:
            return output.squeeze(1), [f.squeeze(1) for f in finals]
        if self.batch_first:
            output = output.transpose(0, 1)
        return output, finals

    def _fused(self, layout: tuple) -> bool:
        """Whether this call runs each layer as one op (``ops.LSTMLayer``, ``ops.GRULayer``):
        for a padded batch of at least one step (a packed one's steps shrink; no step
        leaves the weights out of the graph), outside forward mode, and inside vmap only
        with weights shared by the samples (the batch joins the layer's; weights per
        sample, as per-sample gradients have, take the per-step ops' rules)."""
        switch = {"LSTM": FUSED_LSTM_LAYER, "GRU": FUSED_GRU_LAYER}.get(self.mode, False)
        return (
            switch
            and layout[0] == "padded"
            and layout[2] > 0
            and not (engine_state.vmapping and any(map(batching.levels_of, self._flat_weights)))
            and not forward_state.level
        )

    def _fused_direction(
        self, x: Tensor, h0: Tensor, c0: Tensor | None, weights: list, reverse: bool
    ) -> tuple[Tensor, Tensor, Tensor | None]:
        """One direction of one layer as one op (``ops.LSTMLayer``, ``ops.GRULayer``) over
        time-major ``x`` (steps, batch, features): the outputs and the final states, as
        :func:`_run_direction` gives them."""
        steps = x.shape[0]
        if c0 is not None:
            out = apply(ops.LSTMLayer(reverse=reverse), x, h0, c0, *weights)
            return out[:steps], out[steps], out[steps + 1]
        out = apply(ops.GRULayer(reverse=reverse), x, h0, *weights)
        return out[:steps], out[steps], None

    def _run(self, input: Any, hx: Any) -> tuple:
        lstm = self.mode == "LSTM"
        data, batch_sizes, states, layout = self._prepare(input, 2 if lstm else 1, hx)
        fused = self._fused(layout)
        if fused:  # time-major (steps, batch, features) throughout
            _, _, steps, batch = layout
            data = data.reshape(steps, batch, data.shape[-1])
        directions = 2 if self.bidirectional else 1
        final_h: list[Tensor] = []
        final_c: list[Tensor] = []
        for layer in range(self.num_layers):
            outs = []
            for direction in range(directions):
                k = layer * directions + direction
                h0 = states[0][k]
                c0 = states[1][k] if lstm else None
                weights = self._layer_weights(k)
                if fused:
                    out, h, c = self._fused_direction(data, h0, c0, weights, direction == 1)
                else:
                    out, h, c = _run_direction(
                        self.mode, data, batch_sizes, h0, c0, weights, direction == 1
                    )
                outs.append(out)
                final_h.append(h)
                if lstm:
                    final_c.append(c)
            data = outs[0] if directions == 1 else cat(outs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                data = F.dropout(data, self.dropout, training=True)
        finals = [stack(final_h)] + ([stack(final_c)] if lstm else [])
        if fused:
            data = data.reshape(steps * batch, data.shape[-1])
        return self._finish(data, finals, layout)

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            text += f", num_layers={self.num_layers}"
        if self.bias is not True:
            text += f", bias={self.bias}"
        if self.batch_first is not False:
            text += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            text += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            text += f", bidirectional={self.bidirectional}"
        return text


class RNN(RNNBase):
    """An Elman RNN, ``h_t = tanh(x_t W_ihᵀ + b_ih + h_{t−1} W_hhᵀ + b_hh)`` (or ReLU), with
    PyTorch's signature: ``RNN(input_size, hidden_size, num_layers=1, nonlinearity='tanh',
    bias=True, batch_first=False, dropout=0.0, bidirectional=False)``. ``forward(input,
    hx=None)`` returns ``(output, h_n)``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(
                f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or 'relu'."
            )
        super().__init__(mode, *args, **kwargs)

    def forward(self, input: Any, hx: Tensor | None = None) -> tuple:
        output, (h_n,) = self._run(input, hx)
        return output, h_n

    def extra_repr(self) -> str:
        text = super().extra_repr()
        return text if self.nonlinearity == "tanh" else f"{text}, nonlinearity={self.nonlinearity}"


class LSTM(RNNBase):
    """A long short-term memory layer with PyTorch's signature: ``LSTM(input_size,
    hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
    bidirectional=False, proj_size=0)`` (``proj_size > 0`` is refused). ``forward(input,
    hx=None)`` with ``hx = (h_0, c_0)`` returns ``(output, (h_n, c_n))``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__("LSTM", *args, **kwargs)

    def forward(self, input: Any, hx: tuple | None = None) -> tuple:
        output, (h_n, c_n) = self._run(input, hx)
        return output, (h_n, c_n)


class GRU(RNNBase):
    """A gated recurrent unit layer with PyTorch's signature: ``GRU(input_size, hidden_size,
    num_layers=1, bias=True, batch_first=False, dropout=0.0, bidirectional=False)``.
    ``forward(input, hx=None)`` returns ``(output, h_n)``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input: Any, hx: Tensor | None = None) -> tuple:
        output, (h_n,) = self._run(input, hx)
        return output, h_n


# --------------------------------------------------------------------------- cells
class RNNCellBase(Module):
    """What the one-step cells share: ``weight_ih``, ``weight_hh``, ``bias_ih``, ``bias_hh``."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool,
        num_chunks: int,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        if device is not None:
            array_backend.as_device(device)
        dtype = array_backend.as_dtype(dtype) or array_backend.DEFAULT_FLOAT
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        gates = num_chunks * hidden_size
        self.weight_ih = Parameter(array_backend.zeros((gates, input_size), dtype))
        self.weight_hh = Parameter(array_backend.zeros((gates, hidden_size), dtype))
        if bias:
            self.bias_ih = Parameter(array_backend.zeros((gates,), dtype))
            self.bias_hh = Parameter(array_backend.zeros((gates,), dtype))
        else:
            self.bias_ih = self.bias_hh = None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0.0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _batched(self, input: Any, hx: Any, count: int) -> tuple:
        name = type(self).__name__
        x = as_tensor(input)
        if x.ndim not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {x.ndim}D instead")
        unbatched = x.ndim == 1
        if unbatched:
            x = x.unsqueeze(0)
        if x.shape[1] != self.input_size:
            raise RuntimeError(
                f"input has inconsistent input_size: got {x.shape[1]} expected {self.input_size}"
            )
        batch = x.shape[0]
        if hx is None:
            zeros = Tensor(np.zeros((batch, self.hidden_size), dtype=x.dtype))
            return x, [zeros] * count, unbatched
        given = list(hx) if count == 2 else [hx]
        states = []
        for k, state in enumerate(given):
            state = as_tensor(state)
            want = 1 if unbatched else 2
            if state.ndim != want:
                raise RuntimeError(
                    f"{name}: Expected hidden{k} to be {want}D for an input of shape "
                    f"{tuple(input.shape)}, got shape {tuple(state.shape)}"
                )
            if unbatched:
                state = state.unsqueeze(0)
            if state.shape[0] != batch:
                raise RuntimeError(
                    f"Input batch size {batch} doesn't match hidden{k} batch size {state.shape[0]}"
                )
            if state.shape[1] != self.hidden_size:
                raise RuntimeError(
                    f"hidden{k} has inconsistent hidden_size: got {state.shape[1]}, expected "
                    f"{self.hidden_size}"
                )
            states.append(state)
        return x, states, unbatched

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            text += f", bias={self.bias}"
        nonlinearity = getattr(self, "nonlinearity", "tanh")
        if nonlinearity != "tanh":
            text += f", nonlinearity={nonlinearity}"
        return text


class RNNCell(RNNCellBase):
    """One step of an Elman RNN: ``h' = tanh(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh)`` (or ReLU)."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        nonlinearity: str = "tanh",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        self.nonlinearity = nonlinearity
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)

    def forward(self, input: Any, hx: Tensor | None = None) -> Tensor:
        x, (h,), unbatched = self._batched(input, hx, 1)
        mode = "RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU"
        x_gates = F.linear(x, self.weight_ih, self.bias_ih)
        h, _ = _step(mode, x_gates, h, None, self.weight_hh, self.bias_hh)
        return h.squeeze(0) if unbatched else h


class LSTMCell(RNNCellBase):
    """One LSTM step: ``forward(input, (h, c))`` returns ``(h', c')``; the gate arithmetic
    is one fused op."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input: Any, hx: tuple | None = None) -> tuple:
        x, (h, c), unbatched = self._batched(input, hx, 2)
        x_gates = F.linear(x, self.weight_ih, self.bias_ih)
        h, c = _step("LSTM", x_gates, h, c, self.weight_hh, self.bias_hh)
        return (h.squeeze(0), c.squeeze(0)) if unbatched else (h, c)


class GRUCell(RNNCellBase):
    """One GRU step: ``forward(input, h)`` returns ``h'``; the gate arithmetic is one op."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input: Any, hx: Tensor | None = None) -> Tensor:
        x, (h,), unbatched = self._batched(input, hx, 1)
        x_gates = F.linear(x, self.weight_ih, self.bias_ih)
        h, _ = _step("GRU", x_gates, h, None, self.weight_hh, self.bias_hh)
        return h.squeeze(0) if unbatched else h


__all__ = ["GRU", "LSTM", "RNN", "GRUCell", "LSTMCell", "RNNBase", "RNNCell", "RNNCellBase"]
