"""Registry entries for ``tensorgrad/ops/index.py``: indexing (basic, masks, integer arrays)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tests.ops.registry.core import ErrorInput, OpInfo, Sample, register, uniform

_MASK = np.array([[True, False, True, False, True]] * 2 + [[False] * 5] * 2)
#: (description, index) into a (4, 5, 3) array
INDEX_CASES: list[tuple[str, Any]] = [
    ("int", 1),
    ("negative_int", -1),
    ("slice", slice(1, 3)),
    ("step", (slice(None), slice(None, None, 2))),
    ("negative_step", (slice(None, None, -1), 2)),
    ("none", (None, 1)),
    ("ellipsis", (Ellipsis, 0)),
    ("int_ellipsis_none", (1, Ellipsis, None)),
    ("empty_slice", slice(2, 2)),
    ("all_ints", (3, 4, 2)),
    ("bool_mask_full", "full_mask"),
    ("bool_mask_2d", _MASK),
    ("bool_mask_axis0", np.array([True, False, True, True])),
    ("bool_mask_all_false", np.zeros(4, dtype=bool)),
    ("int_array_repeated", np.array([0, 2, 0, 3, 0])),
    ("int_arrays_repeated", (np.array([0, 0, 1, 0]), np.array([1, 1, 2, 1]))),
    ("int_array_2d_repeated", np.array([[1, 1], [2, 1]])),
    ("mixed_slice_array", (slice(None), np.array([4, 4, 0]))),
    ("mixed_int_array", (1, np.array([3, 3]), slice(0, 2))),
    ("empty_int_array", np.array([], dtype=np.int64)),
    ("size1_int_array", np.array([2])),
]


def _index_samples(rng: np.random.Generator) -> list[Sample]:
    result = []
    for desc, index in INDEX_CASES:
        x = uniform(rng, (4, 5, 3))
        if isinstance(index, str):
            index = rng.random((4, 5, 3)) < 0.4
        result.append(Sample((x,), {"index": index}, desc))
    result.append(Sample((uniform(rng, (5,)),), {"index": 2}, "vector_to_0d"))
    result.append(Sample((uniform(rng, ()),), {"index": ()}, "0d_empty_tuple"))
    result.append(Sample((uniform(rng, ()),), {"index": None}, "0d_none"))
    result.append(
        Sample((uniform(rng, (3, 4)),), {"index": (slice(None), 1)}, "transposed", ("T",))
    )
    result.append(
        Sample((uniform(rng, (3, 4)),), {"index": np.array([2, 2, 0])}, "strided", ("S",))
    )
    result.append(Sample((uniform(rng, (0, 3)),), {"index": (slice(None), 1)}, "empty_input"))
    result.append(Sample((uniform(rng, (1,)),), {"index": np.array([0, 0])}, "size1_input"))
    return result


register(
    OpInfo(
        "getitem",
        lambda x, index: x[index],
        lambda x, index: x[index],
        _index_samples,
        errors=(
            ErrorInput(
                (np.ones((2, 3)),),
                IndexError,
                r"^getitem: index 5 is out of bounds for axis 0 with size 2",
                {"index": 5},
                "out_of_bounds",
            ),
            ErrorInput(
                (np.ones((2, 3)),),
                IndexError,
                r"^getitem: too many indices",
                {"index": (0, 0, 0)},
                "too_many_indices",
            ),
            ErrorInput(
                (np.ones((2, 3)),),
                IndexError,
                r"^getitem: boolean index did not match",
                {"index": np.array([True, False, True])},
                "mask_shape",
            ),
            ErrorInput(
                (np.ones((2, 3)),),
                IndexError,
                r"^getitem: index 7 is out of bounds",
                {"index": np.array([0, 7])},
                "int_array_out_of_bounds",
            ),
        ),
    )
)
