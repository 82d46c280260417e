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
