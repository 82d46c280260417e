"""Registry entries for ``tensorgrad/ops/shape.py``: reshape and view, transposes and
permutations, flatten/squeeze/unsqueeze, broadcasting, joins and split.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import tensorgrad as tg
from tensorgrad import ops
from tensorgrad.core.engine import apply as _apply
from tests.ops.registry.core import (
    ErrorInput,
    OpInfo,
    Sample,
    exempt,
    register,
    shape_samples,
    uniform,
)

# ---- shape ops ---------------------------------------------------------------------------
register(
    OpInfo(
        "reshape",
        lambda x, shape: x.reshape(shape),
        lambda x, shape: np.reshape(x, shape),
        shape_samples(
            [
                ("matrix", (2, 3), {"shape": (3, 2)}, "C"),
                ("infer", (6,), {"shape": (2, -1, 3)}, "C"),
                ("to_0d", (1,), {"shape": ()}, "C"),
                ("from_0d", (), {"shape": (1, 1)}, "C"),
                ("empty", (0, 3), {"shape": (3, 0)}, "C"),
                ("transposed", (3, 4), {"shape": (12,)}, "T"),
                ("strided", (2, 4), {"shape": (4, 2)}, "S"),
                ("same_shape", (2, 3), {"shape": (2, 3)}, "C"),
            ]
        ),
        errors=(
            ErrorInput(
                (np.ones((2, 3)),),
                RuntimeError,
                r"^reshape: shape \(4,\) is invalid for input of size 6",
                {"shape": (4,)},
                "wrong_size",
            ),
        ),
    )
)
register(
    OpInfo(
        "view",
        lambda x, shape: x.view(*shape),
        lambda x, shape: np.reshape(x, shape),
        shape_samples(
            [
                ("matrix", (2, 3), {"shape": (6,)}, "C"),
                ("transposed_rows", (3, 4), {"shape": (3, 1, 4)}, "T"),
            ]
        ),
        errors=(
            ErrorInput(
                (np.asfortranarray(np.ones((3, 4))),),
                RuntimeError,
                r"^view: view size is not compatible with input tensor's size and stride .* "
                r"Use \.reshape\(\.\.\.\) instead\. \(shape \(3, 4\) .* as \(2, 6\)\)",
                {"shape": (2, 6)},
                "needs_a_copy",
            ),
        ),
    )
)
register(
    OpInfo(
        "transpose",
        lambda x, axes: _apply(ops.Transpose(axes or None), x),
        lambda x, axes: np.transpose(x, axes or None),
        shape_samples(
            [
                ("reverse", (2, 3, 4), {"axes": ()}, "C"),
                ("permute", (2, 3, 4), {"axes": (1, 0, 2)}, "C"),
                ("negative", (2, 3, 4), {"axes": (-1, 0, 1)}, "C"),
                ("0d", (), {"axes": ()}, "C"),
                ("size1", (1, 1), {"axes": (1, 0)}, "C"),
                ("vector", (5,), {"axes": ()}, "C"),
                ("empty", (0, 3), {"axes": (1, 0)}, "C"),
                ("transposed", (3, 4), {"axes": ()}, "T"),
            ]
        ),
        errors=(
            ErrorInput(
                (np.ones((2, 3)),),
                ValueError,
                r"^transpose: repeated axis in \(0, 0\)",
                {"axes": (0, 0)},
                "repeated_axis",
            ),
            ErrorInput(
                (np.ones((2, 3)),),
                IndexError,
                r"^transpose: axis 2 is out of range for a tensor of 2 dimensions",
                {"axes": (0, 2)},
                "axis_out_of_range",
            ),
            ErrorInput(
                (np.ones((2, 3)),),
                ValueError,
                r"^transpose: axes \(0,\) do not match a tensor of 2 dimensions",
                {"axes": (0,)},
                "too_few_axes",
            ),
        ),
    )
)
register(
    OpInfo(
        "permute",
        lambda x: x.permute(2, 0, 1),
        lambda x: np.transpose(x, (2, 0, 1)),
        shape_samples(
            [
                ("3d", (2, 3, 4), {}, "C"),
                ("size1", (1, 1, 1), {}, "C"),
                ("empty", (2, 0, 3), {}, "C"),
            ]
        ),
    )
)
register(
    OpInfo(
        "T",
        lambda x: x.T,
        lambda x: x.T,
        shape_samples(
            [
                ("matrix", (2, 3), {}, "C"),
                ("vector", (4,), {}, "C"),
                ("0d", (), {}, "C"),
                ("3d", (2, 3, 4), {}, "S"),
            ]
        ),
    )
)
register(
    OpInfo(
        "swapaxes",
        lambda x, a, b: x.swapaxes(a, b),
        lambda x, a, b: np.swapaxes(x, a, b),
        shape_samples(
            [
                ("first_last", (2, 3, 4), {"a": 0, "b": 2}, "C"),
                ("negative", (2, 3, 4), {"a": -1, "b": 0}, "C"),
                ("same_axis", (2, 3), {"a": 1, "b": 1}, "C"),
                ("empty", (0, 3), {"a": 0, "b": 1}, "C"),
                ("size1", (1, 1), {"a": 0, "b": 1}, "C"),
                ("transposed", (3, 4), {"a": 0, "b": 1}, "T"),
            ]
        ),
        errors=(
            ErrorInput(
                (np.ones((2, 3)),),
                IndexError,
                r"^transpose: axis 3 is out of range for a tensor of 2 dimensions",
                {"a": 0, "b": 3},
                "axis_out_of_range",
            ),
        ),
    )
)


def _size1_axes(x: np.ndarray, axis: Any) -> Any:
    """PyTorch's squeeze: of the named axes, only those of size 1."""
    if axis is None:
        return None
    axes = (axis,) if isinstance(axis, int) else axis
    return tuple(a for a in axes if x.shape[a] == 1)


def _flatten_ref(x, start=0, end=-1):
    if x.ndim == 0:
        return x.reshape(1)
    end = end % x.ndim
    return (
        x.reshape(*x.shape[:start], -1, *x.shape[end + 1 :])
        if x.size
        else x.reshape(
            *x.shape[:start], int(np.prod(x.shape[start : end + 1])), *x.shape[end + 1 :]
        )
    )


register(
    OpInfo(
        "flatten",
        lambda x, start=0, end=-1: x.flatten(start, end),
        _flatten_ref,
        shape_samples(
            [
                ("all", (2, 3, 4), {}, "C"),
                ("middle", (2, 3, 4, 2), {"start": 1, "end": 2}, "C"),
                ("from1", (2, 3, 4), {"start": 1}, "C"),
                ("size1", (1, 1, 1), {"start": 1}, "C"),
                ("0d", (), {}, "C"),
                ("empty", (2, 0, 3), {"start": 1}, "C"),
                ("transposed", (3, 4), {}, "T"),
            ]
        ),
        errors=(
            ErrorInput(
                (np.ones((2, 3, 4)),),
                ValueError,
                r"^flatten: start_dim 2 comes after end_dim 1",
                {"start": 2, "end": 1},
                "start_after_end",
            ),
        ),
    )
)
register(
    OpInfo(
        "squeeze",
        lambda x, axis=None: x.squeeze(axis),
        lambda x, axis=None: np.squeeze(x, _size1_axes(x, axis)),
        shape_samples(
            [
                ("all", (1, 3, 1), {}, "C"),
                ("axis0", (1, 3, 1), {"axis": 0}, "C"),
                ("axis_tuple", (1, 3, 1), {"axis": (0, -1)}, "C"),
                ("0d", (), {}, "C"),
                ("size1", (1,), {}, "C"),
                ("nothing", (2, 3), {}, "C"),
                ("empty", (0, 1), {"axis": 1}, "C"),
                ("transposed", (2, 1, 3), {"axis": 1}, "T"),
                ("not_size1_stays", (2, 3), {"axis": 0}, "C"),  # PyTorch's rule: no error
            ]
        ),
    )
)
register(
    OpInfo(
        "unsqueeze",
        lambda x, axis: x.unsqueeze(axis),
        lambda x, axis: np.expand_dims(x, axis),
        shape_samples(
            [
                ("front", (2, 3), {"axis": 0}, "C"),
                ("back", (2, 3), {"axis": -1}, "C"),
                ("middle", (2, 3), {"axis": 1}, "C"),
                ("end", (2, 3), {"axis": 2}, "C"),
                ("0d", (), {"axis": 0}, "C"),
                ("empty", (0,), {"axis": 1}, "C"),
                ("size1", (1,), {"axis": 0}, "C"),
                ("transposed", (3, 4), {"axis": 1}, "T"),
            ]
        ),
        errors=(
            ErrorInput(
                (np.ones((2, 3)),),
                IndexError,
                r"^unsqueeze: dimension 4 is out of range",
                {"axis": 4},
                "axis_out_of_range",
            ),
        ),
    )
)
register(
    OpInfo(
        "broadcast_to",
        lambda x, shape: x.broadcast_to(shape),
        lambda x, shape: np.broadcast_to(x, shape),
        shape_samples(
            [
                ("lead_and_size1", (3, 1), {"shape": (2, 3, 4)}, "C"),
                ("from_0d", (), {"shape": (2, 3)}, "C"),
                ("size1_to_empty", (1,), {"shape": (0,)}, "C"),
                ("to_empty", (2, 1), {"shape": (2, 0)}, "C"),
                ("empty", (0, 1), {"shape": (2, 0, 3)}, "C"),
                ("same", (2, 3), {"shape": (2, 3)}, "C"),
                ("transposed", (3, 4), {"shape": (2, 3, 4)}, "T"),
            ]
        ),
        errors=(
            ErrorInput(
                (np.ones((2, 3)),),
                ValueError,
                r"^broadcast_to: cannot broadcast a tensor of shape \(2, 3\) to \(4, 3\)",
                {"shape": (4, 3)},
                "incompatible",
            ),
        ),
    )
)
register(
    OpInfo(
        "expand",
        lambda x: x.expand(2, 3, 4),
        lambda x: np.broadcast_to(x, (2, 3, 4)),
        shape_samples(
            [("size1_axis", (3, 1), {}, "C"), ("0d", (), {}, "C"), ("size1", (1,), {}, "C")]
        ),
    )
)


def _join_samples(cases, rng: np.random.Generator) -> list[Sample]:
    return [
        Sample(tuple(uniform(rng, s) for s in shapes), {"axis": axis}, desc, tuple(layouts))
        for desc, shapes, axis, layouts in cases
    ]


register(
    OpInfo(
        "concatenate",
        lambda *xs, axis: tg.concatenate(xs, axis=axis),
        lambda *xs, axis: np.concatenate(xs, axis=axis),
        lambda rng: _join_samples(
            [
                ("axis0", [(2, 3), (1, 3)], 0, "CC"),
                ("three_negative_axis", [(2, 3), (2, 0), (2, 2)], -1, "CCC"),
                ("vectors", [(3,), (2,)], 0, "CC"),
                ("single", [(2, 2)], 1, "C"),
                ("size1", [(1,), (1,)], 0, "CC"),
                ("empty", [(0, 3), (0, 3)], 0, "CC"),
                ("views", [(3, 4), (3, 4)], 1, "TS"),
            ],
            rng,
        ),
        errors=(
            ErrorInput(
                (np.ones((2, 3)), np.ones((3, 2))),
                ValueError,
                r"^concatenate: shapes \[\(2, 3\), \(3, 2\)\] differ outside axis 0",
                {"axis": 0},
                "shape_mismatch",
            ),
            ErrorInput(
                (np.ones(()), np.ones(())),
                ValueError,
                r"^concatenate: zero-dimensional tensors cannot be concatenated",
                {"axis": 0},
                "0d",
            ),
            ErrorInput(
                (), ValueError, r"^concatenate: needs at least one tensor", {"axis": 0}, "nothing"
            ),
            ErrorInput(
                (np.ones((2, 3)), np.ones((2, 3))),
                IndexError,
                r"^concatenate: axis 2 is out of range for a tensor of 2 dimensions",
                {"axis": 2},
                "axis_out_of_range",
            ),
        ),
    )
)
register(
    OpInfo(
        "cat",
        lambda x, y, axis: tg.cat([x, y], axis=axis),
        lambda x, y, axis: np.concatenate([x, y], axis=axis),
        lambda rng: _join_samples([("pair", [(2, 3), (2, 1)], 1, "CC")], rng),
    )
)
register(
    OpInfo(
        "stack",
        lambda *xs, axis: tg.stack(xs, axis=axis),
        lambda *xs, axis: np.stack(xs, axis=axis),
        lambda rng: _join_samples(
            [
                ("axis0", [(2, 3), (2, 3)], 0, "CC"),
                ("axis1_three", [(2, 3), (2, 3), (2, 3)], 1, "CCC"),
                ("axis_neg", [(2, 3), (2, 3)], -1, "CC"),
                ("0d", [(), ()], 0, "CC"),
                ("size1", [(1,), (1,)], 0, "CC"),
                ("empty", [(0, 2), (0, 2)], 1, "CC"),
                ("views", [(3, 4), (3, 4)], 2, "TS"),
            ],
            rng,
        ),
        errors=(
            ErrorInput(
                (np.ones((2, 3)), np.ones((3, 2))),
                ValueError,
                r"^stack: all tensors must have the same shape, got \[\(2, 3\), \(3, 2\)\]",
                {"axis": 0},
                "shape_mismatch",
            ),
            ErrorInput(
                (), ValueError, r"^stack: needs at least one tensor", {"axis": 0}, "nothing"
            ),
            ErrorInput(
                (np.ones(2), np.ones(2)),
                IndexError,
                r"^stack: axis 2 is out of range for a tensor of 2 dimensions",
                {"axis": 2},
                "axis_out_of_range",
            ),
        ),
    )
)


def _split_ref(x, sections, axis):
    if isinstance(sections, int):
        bounds = list(range(sections, x.shape[axis], sections))
    else:
        bounds = list(np.cumsum(sections)[:-1])
    return np.split(x, bounds, axis=axis)


register(
    OpInfo(
        "split",
        lambda x, sections, axis: tg.split(x, sections, axis=axis),
        _split_ref,
        shape_samples(
            [
                ("size", (5, 3), {"sections": 2, "axis": 0}, "C"),
                ("sections", (2, 3), {"sections": [1, 2], "axis": 1}, "C"),
                ("empty_section", (2, 3), {"sections": [0, 3], "axis": -1}, "C"),
                ("size1", (1,), {"sections": 1, "axis": 0}, "C"),
                ("empty", (2, 0), {"sections": 2, "axis": 1}, "C"),
                ("transposed", (4, 3), {"sections": [3, 1], "axis": 0}, "T"),
            ]
        ),
        errors=(
            ErrorInput(
                (np.ones((2, 3)),),
                ValueError,
                r"^split: section sizes \[1, 1\] do not add up to the length 3 of dim 1",
                {"sections": [1, 1], "axis": 1},
                "sections_do_not_add_up",
            ),
            ErrorInput(
                (np.ones((2, 3)),),
                ValueError,
                r"^split: split size must be positive, got 0",
                {"sections": 0, "axis": 0},
                "zero_size",
            ),
            ErrorInput(
                (np.ones((2, 3)),),
                IndexError,
                r"^split: axis 2 is out of range",
                {"sections": 1, "axis": 2},
                "axis_out_of_range",
            ),
        ),
    )
)


exempt("0-d", "a 0-d tensor has no axes to swap", "swapaxes")
exempt("0-d", "a 0-d tensor has no axis to split along", "split")
exempt("0-d", "0-d tensors cannot be concatenated (an error input)", "concatenate")
exempt("0-d", "needs 3 axes; transpose covers 0-d", "permute")
exempt("0-d", "alias of broadcast_to", "expand")
for _feature in ("0-d", "empty", "size-1", "non-contiguous"):
    exempt(_feature, "an alias of concatenate", "cat")
for _feature in ("0-d", "empty", "size-1"):
    exempt(_feature, "an alias of reshape", "view")
for _feature in ("size-1", "non-contiguous"):
    exempt(_feature, "an alias of transpose", "permute")
for _feature in ("empty", "size-1"):
    exempt(_feature, "an alias of transpose", "T")
for _feature in ("empty", "non-contiguous"):
    exempt(_feature, "an alias of broadcast_to", "expand")
