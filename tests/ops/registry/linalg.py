"""Registry entries for ``tensorgrad/ops/linalg.py``: matmul."""

from __future__ import annotations

import numpy as np

import tensorgrad as tg
from tests.ops.registry.core import ErrorInput, OpInfo, Sample, Shape, exempt, register, uniform

# ---- matmul ------------------------------------------------------------------------------
MATMUL_SHAPES: list[tuple[str, Shape, Shape, str]] = [
    ("1d_1d", (3,), (3,), "CC"),
    ("1d_2d", (3,), (3, 4), "CC"),
    ("2d_1d", (4, 3), (3,), "CC"),
    ("2d_2d", (2, 3), (3, 4), "CC"),
    ("size1", (1, 1), (1, 1), "CC"),
    ("batched", (2, 2, 3), (2, 3, 2), "CC"),
    ("batched_bcast", (2, 1, 3, 4), (5, 4, 2), "CC"),
    ("batched_2d", (2, 3, 4), (4, 2), "CC"),
    ("batched_1d_right", (2, 3, 4), (4,), "CC"),
    ("1d_batched", (3,), (2, 3, 4), "CC"),
    ("empty_rows", (0, 3), (3, 2), "CC"),
    ("empty_inner", (2, 0), (0, 3), "CC"),
    ("transposed", (3, 4), (4, 2), "TS"),
]
register(
    OpInfo(
        "matmul",
        lambda x, y: x @ y,
        np.matmul,
        lambda rng: [
            Sample((uniform(rng, sx), uniform(rng, sy)), {}, d, tuple(lay))
            for d, sx, sy, lay in MATMUL_SHAPES
        ],
        errors=(
            ErrorInput(
                (np.ones((2, 3)), np.ones((4, 5))),
                ValueError,
                r"^matmul: shapes \(2, 3\) and \(4, 5\) cannot be multiplied: inner "
                r"dimensions differ \(3 vs 4\)",
                desc="inner_mismatch",
            ),
            ErrorInput(
                (np.ones((2, 3, 4)), np.ones((3, 4, 5))),
                ValueError,
                r"^matmul: shapes \(2, 3, 4\) and \(3, 4, 5\) cannot be multiplied: batch "
                r"dimensions do not broadcast",
                desc="batch_mismatch",
            ),
            ErrorInput(
                (np.ones(3), np.ones(4)),
                ValueError,
                r"^matmul: shapes \(3,\) and \(4,\) cannot be multiplied",
                desc="vectors",
            ),
            ErrorInput(
                (np.ones(()), np.ones(3)),
                ValueError,
                r"^matmul: both operands need at least 1 dimension, got shapes \(\) and "
                r"\(3,\)",
                desc="0d",
            ),
        ),
    )
)
register(
    OpInfo(
        "tg_matmul",
        lambda x, y: tg.matmul(x, y),
        np.matmul,
        lambda rng: [Sample((uniform(rng, (2, 3)), uniform(rng, (3,))), {}, "2d_1d")],
    )
)


exempt("0-d", "needs operands of at least 1 dimension (an error input)", "matmul")
for _feature in ("0-d", "empty", "size-1", "non-contiguous"):
    exempt(_feature, "an alias of matmul", "tg_matmul")
