"""Registry entries for ``tensorgrad/ops/recurrent.py``: the LSTM and GRU cells' gate
arithmetic, on their own and inside the ``nn.LSTMCell``/``nn.GRUCell`` steps."""

from __future__ import annotations

import numpy as np

from tensorgrad import ops
from tensorgrad.core.engine import apply as _apply
from tests.ops.registry.core import ErrorInput, OpInfo, Sample, exempt, register, uniform


def _sigmoid(a):
    return 1.0 / (1.0 + np.exp(-a))


def _lstm_ref(x_gates, h_gates, c):
    i, f, g, o = np.split(x_gates + h_gates, 4, axis=-1)
    c_new = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
    return np.stack([_sigmoid(o) * np.tanh(c_new), c_new])


def _gru_ref(x_gates, h_gates, h):
    xr, xz, xn = np.split(x_gates, 3, axis=-1)
    hr, hz, hn = np.split(h_gates, 3, axis=-1)
    r, z = _sigmoid(xr + hr), _sigmoid(xz + hz)
    n = np.tanh(xn + r * hn)
    return (1 - z) * n + z * h


#: (description, leading shape, hidden, layouts)
_CELL_CASES = [
    ("batch", (3,), 2, "CCC"),
    ("unbatched", (), 3, "CCC"),
    ("size1", (1,), 1, "CCC"),
    ("empty_batch", (0,), 2, "CCC"),
    ("sequence_batch", (2, 3), 2, "CCC"),
    ("views", (3,), 2, "TSC"),
]


def _cell_samples(gates: int):
    def samples(rng: np.random.Generator) -> list[Sample]:
        return [
            Sample(
                (
                    uniform(rng, (*lead, gates * hidden)),
                    uniform(rng, (*lead, gates * hidden)),
                    uniform(rng, (*lead, hidden)),
                ),
                {},
                desc,
                tuple(layouts),
            )
            for desc, lead, hidden, layouts in _CELL_CASES
        ]

    return samples


def _shape_error(name: str, gates: int) -> ErrorInput:
    return ErrorInput(
        (np.ones((2, 4 * gates)), np.ones((2, 4 * gates)), np.ones((3, 4))),
        ValueError,
        rf"^{name}: expected x_gates and h_gates of one shape \(\.\.\., {gates}·hidden\) and a "
        rf"state of shape \(\.\.\., hidden\), got \(2, {4 * gates}\), \(2, {4 * gates}\) and "
        r"\(3, 4\)",
        desc="state_shape",
    )


register(
    OpInfo(
        "lstm_cell",
        lambda x, h, c: _apply(ops.LSTMCell(), x, h, c),
        _lstm_ref,
        _cell_samples(4),
        errors=(
            _shape_error("lstm_cell", 4),
            ErrorInput(
                (np.ones((2, 6)), np.ones((2, 6)), np.ones((2, 1))),
                ValueError,
                r"^lstm_cell: expected x_gates and h_gates of one shape",
                desc="gates_not_a_multiple_of_4",
            ),
        ),
    )
)
register(
    OpInfo(
        "gru_cell",
        lambda x, h, state: _apply(ops.GRUCell(), x, h, state),
        _gru_ref,
        _cell_samples(3),
        errors=(_shape_error("gru_cell", 3),),
    )
)

exempt("0-d", "the gates are (..., gates·hidden): at least one axis", "lstm_cell", "gru_cell")


def _layer_ref(cell, n_states: int):
    """A whole layer by the cell's reference, step after step: each step's h, then the final
    states."""

    def ref(x, *args, reverse=False):
        states, (w_ih, w_hh, b_ih, b_hh) = list(args[:n_states]), args[n_states:]
        hs = [None] * len(x)
        for t in range(len(x))[::-1] if reverse else range(len(x)):
            new = cell(x[t] @ w_ih.T + b_ih, states[0] @ w_hh.T + b_hh, states[-1])
            states = [new[0], new[1]] if n_states == 2 else [new]
            hs[t] = states[0]
        return np.stack([*hs, *states])

    return ref


#: (description, steps, batch, input, hidden, reverse, layouts of x, h0 and W_hh)
_LAYER_CASES = [
    ("forward", 3, 2, 3, 2, False, "CCC"),
    ("reverse", 3, 2, 2, 3, True, "CCC"),
    ("one_step_size1", 1, 1, 1, 1, False, "CCC"),
    ("no_steps", 0, 2, 3, 2, False, "CCC"),
    ("empty_batch", 2, 0, 3, 2, False, "CCC"),
    ("views", 2, 2, 3, 2, True, "SST"),
]


def _layer_samples(gates: int, n_states: int):
    def samples(rng: np.random.Generator) -> list[Sample]:
        result = []
        for desc, steps, batch, size, hidden, reverse, (lx, lh, lw) in _LAYER_CASES:
            args = (
                uniform(rng, (steps, batch, size)),
                *(uniform(rng, (batch, hidden)) for _ in range(n_states)),
                uniform(rng, (gates * hidden, size), -0.8, 0.8),
                uniform(rng, (gates * hidden, hidden), -0.8, 0.8),
                uniform(rng, (gates * hidden,), -0.5, 0.5),
                uniform(rng, (gates * hidden,), -0.5, 0.5),
            )
            layouts = (lx, *(lh,) * n_states, "C", lw, "C", "C")
            result.append(Sample(args, {"reverse": reverse}, desc, layouts))
        return result

    return samples


def _layer_error(name: str, gates: int, n_states: int) -> ErrorInput:
    states = (np.ones((2, 3)),) * n_states
    return ErrorInput(
        (np.ones((4, 2, 5)), *states, np.ones((gates * 2, 5)), np.ones((gates * 2, 2))),
        ValueError,
        rf"^{name}: expected x \(steps, batch, input\), states \(batch, hidden\)",
        desc="state_shape",
    )


register(
    OpInfo(
        "lstm_layer",
        lambda x, h, c, *w, reverse=False: _apply(ops.LSTMLayer(reverse), x, h, c, *w),
        _layer_ref(_lstm_ref, 2),
        _layer_samples(4, 2),
        errors=(_layer_error("lstm_layer", 4, 2),),
    )
)
register(
    OpInfo(
        "gru_layer",
        lambda x, h, *w, reverse=False: _apply(ops.GRULayer(reverse), x, h, *w),
        _layer_ref(_gru_ref, 1),
        _layer_samples(3, 1),
        errors=(_layer_error("gru_layer", 3, 1),),
    )
)
exempt("0-d", "a layer's input is (steps, batch, input): three axes", "lstm_layer", "gru_layer")
