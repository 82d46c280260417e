"""Registry entries for ``tensorgrad/ops/norm.py``: the normalisation core of batch and layer
norm, on its own and inside ``F.layer_norm`` and training-mode ``F.batch_norm``."""

from __future__ import annotations

import numpy as np

from tensorgrad import ops
from tensorgrad.core.engine import apply as _apply
from tensorgrad.nn import functional as F
from tests.ops.registry.core import ErrorInput, OpInfo, Sample, exempt, register, uniform


def _normalize_ref(x, axes, eps):
    mean = np.mean(x, axis=axes, keepdims=True)
    var = np.mean((x - mean) ** 2, axis=axes, keepdims=True)  # biased, as batch norm's
    return (x - mean) / np.sqrt(var + eps)


#: (description, shape, axes, eps, layout)
_NORMALIZE_CASES = [
    ("batch_1d", (4, 3), (0,), 1e-5, "C"),
    ("batch_2d", (2, 3, 2, 2), (0, 2, 3), 1e-5, "C"),
    ("layer", (2, 3, 4), (1, 2), 1e-5, "C"),
    ("last_axis_large_eps", (3, 5), (1,), 0.1, "C"),
    ("0d", (), (), 1e-5, "C"),
    ("size1_axis", (3, 1), (1,), 1e-5, "C"),  # one element: the output is 0
    ("size1", (1,), (0,), 1e-5, "C"),
    ("empty_batch", (0, 3), (1,), 1e-5, "C"),
    ("transposed", (3, 4), (0,), 1e-5, "T"),
    ("strided", (2, 6), (1,), 1e-5, "S"),
]

register(
    OpInfo(
        "normalize",
        lambda x, axes, eps: _apply(ops.Normalize(axes, eps), x),
        _normalize_ref,
        lambda rng: [
            Sample((uniform(rng, shape),), {"axes": axes, "eps": eps}, desc, (layout,))
            for desc, shape, axes, eps, layout in _NORMALIZE_CASES
        ],
        errors=(
            ErrorInput(
                (np.ones((2, 3)),),
                IndexError,
                r"^normalize: axis 2 is out of bounds for array of dimension 2",
                {"axes": (2,), "eps": 1e-5},
                "axis_out_of_range",
            ),
        ),
    )
)


def _affine_samples(rng: np.random.Generator, cases) -> list[Sample]:
    """(input, weight, bias) samples; weight and bias have ``param_shape``."""
    return [
        Sample(
            (uniform(rng, shape), uniform(rng, param_shape), uniform(rng, param_shape)),
            kwargs,
            desc,
            tuple(layouts),
        )
        for desc, shape, param_shape, kwargs, layouts in cases
    ]


_LAYER_NORM_CASES = [
    ("last", (2, 3), (3,), {"normalized_shape": (3,)}, "CCC"),
    ("last_two", (2, 3, 4), (3, 4), {"normalized_shape": (3, 4)}, "CCC"),
    ("list_shape", (4, 2), (2,), {"normalized_shape": [2]}, "CCC"),
    ("size1", (1,), (1,), {"normalized_shape": (1,)}, "CCC"),
    ("empty_batch", (0, 3), (3,), {"normalized_shape": (3,)}, "CCC"),
    ("views", (3, 4), (4,), {"normalized_shape": (4,)}, "TSC"),
]

register(
    OpInfo(
        "layer_norm",
        lambda x, w, b, normalized_shape: F.layer_norm(x, normalized_shape, w, b),
        lambda x, w, b, normalized_shape: (
            _normalize_ref(x, tuple(range(x.ndim - w.ndim, x.ndim)), 1e-5) * w + b
        ),
        lambda rng: _affine_samples(rng, _LAYER_NORM_CASES),
        errors=(
            ErrorInput(
                (np.ones((2, 3)), np.ones(4), np.ones(4)),
                ValueError,
                r"^layer_norm: input of shape \(2, 3\) does not end with normalized_shape "
                r"\(4,\)",
                {"normalized_shape": (4,)},
                "shape_mismatch",
            ),
            ErrorInput(
                (np.ones((4, 2)), np.ones(2), np.ones(2)),
                TypeError,
                r"^layer_norm\(\): argument 'normalized_shape' \(position 2\) must be tuple of "
                r"ints, not int",
                {"normalized_shape": 2},
                "int_shape",  # PyTorch's parser; the module LayerNorm(2) takes an int
            ),
        ),
    )
)

_BATCH_NORM_CASES = [
    ("1d", (4, 3), (3,), {}, "CCC"),
    ("2d", (2, 3, 2, 2), (3,), {}, "CCC"),
    ("sequence", (2, 2, 3), (2,), {}, "CCC"),
    ("size1_channel", (3, 1), (1,), {}, "CCC"),
    ("views", (4, 3), (3,), {}, "TSS"),
]


def _batch_norm_ref(x, w, b):
    axes = (0, *range(2, x.ndim))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    return _normalize_ref(x, axes, 1e-5) * w.reshape(shape) + b.reshape(shape)


register(
    OpInfo(
        "batch_norm_train",
        lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
        _batch_norm_ref,
        lambda rng: _affine_samples(rng, _BATCH_NORM_CASES),
        errors=(
            ErrorInput(
                (np.ones((1, 3)), np.ones(3), np.ones(3)),
                ValueError,
                r"^batch_norm: expected more than 1 value per channel when training, got "
                r"input of shape \(1, 3\)",
                {},
                "one_value_per_channel",
            ),
            ErrorInput(
                (np.ones(3), np.ones(3), np.ones(3)),
                ValueError,
                r"^batch_norm: expected input of shape \(N, C, \.\.\.\), got \(3,\)",
                {},
                "1d_input",
            ),
        ),
    )
)

exempt("0-d", "the input is at least 1-D (a normalized_shape to end with)", "layer_norm")
exempt("0-d", "the input is (N, C, ...) (a 1-D input is an error input)", "batch_norm_train")
exempt("empty", "training needs more than one value per channel", "batch_norm_train")
