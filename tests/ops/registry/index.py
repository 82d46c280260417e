"""Registry entries for ``tensorgrad/ops/index.py``: indexing (basic, masks, integer arrays),
its scatter (index_add), writing (setitem, and copy_into_view: an in-place change through a
view written back to its base), gather and scatter_add."""

from __future__ import annotations

from typing import Any

import numpy as np

import tensorgrad as tg
from tensorgrad import ops
from tensorgrad.core.engine import apply as _apply
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


# ---- index_add: the scatter behind indexing's VJP ----------------------------------------
#: the indexing cases index_add runs on: each kind of index once, and the repeats
_INDEX_ADD_CASES = (
    "int", "step", "negative_step", "int_ellipsis_none", "empty_slice", "bool_mask_full",
    "bool_mask_2d", "int_array_repeated", "int_arrays_repeated", "int_array_2d_repeated",
    "mixed_int_array", "empty_int_array",
)  # fmt: skip


def _index_add_samples(rng: np.random.Generator) -> list[Sample]:
    """Values of ``x[index]``'s shape for indexing cases, scattered into (4, 5, 3)."""
    result = []
    for desc, index in INDEX_CASES:
        if desc not in _INDEX_ADD_CASES:
            continue
        if isinstance(index, str):
            index = rng.random((4, 5, 3)) < 0.4
        shape = np.zeros((4, 5, 3))[index].shape
        result.append(Sample((uniform(rng, shape),), {"shape": (4, 5, 3), "index": index}, desc))
    result.append(Sample((uniform(rng, ()),), {"shape": (), "index": ()}, "0d"))
    result.append(Sample((uniform(rng, (1,)),), {"shape": (3,), "index": np.array([1])}, "size1"))
    everything = (slice(None), slice(None))
    kwargs = {"shape": (3, 4), "index": everything}
    result.append(Sample((uniform(rng, (3, 4)),), kwargs, "transposed", ("T",)))
    return result


def _index_add_ref(values, shape, index):
    result = np.zeros(shape)
    np.add.at(result, index, values)
    return result


register(
    OpInfo(
        "index_add",  # no method of its own: the VJP of x[index], recorded by create_graph
        lambda values, shape, index: _apply(ops.IndexAdd(shape, index), values),
        _index_add_ref,
        _index_add_samples,
        errors=(
            ErrorInput(
                (np.ones(3),),
                ValueError,
                r"^index_add: array is not broadcastable to correct shape",
                {"shape": (2, 4), "index": np.array([0, 1])},
                "values_shape",
            ),
        ),
    )
)


# ---- setitem: x[index] = value, recorded ---------------------------------------------------
#: (description, shape of x, index, shape of the value, layouts)
_SETITEM_CASES: list[tuple[str, tuple, Any, tuple, str]] = [
    ("int", (4, 3), 1, (3,), "CC"),
    ("slice", (4, 3), slice(1, 3), (2, 3), "CC"),
    ("step_bcast_value", (4, 3), (slice(None, None, 2), 0), (), "CC"),
    ("ellipsis_row_value", (2, 3, 2), (Ellipsis, 0), (3,), "CC"),
    ("leading_ones_value", (4, 3), slice(0, 2), (1, 1, 3), "CC"),
    ("mask", (4, 3), "mask", "masked", "CC"),
    ("mask_bcast_value", (4, 3), "mask", (), "CC"),
    ("mask_rows", (4, 3), np.array([True, False, False, True]), (1, 3), "CC"),
    ("int_array", (5, 2), np.array([3, 0, 4]), (3, 2), "CC"),
    ("int_arrays", (3, 4), (np.array([0, 2]), np.array([3, 1])), (2,), "CC"),
    ("0d", (), (), (), "CC"),
    ("0d_ellipsis", (), Ellipsis, (), "CC"),
    ("size1", (1,), 0, (), "CC"),
    ("empty_index", (4, 3), slice(2, 2), (3,), "CC"),
    ("empty_x", (0, 3), slice(None), (3,), "CC"),
    ("views", (3, 4), (slice(None), 1), (3,), "TS"),
]


def _setitem_samples(rng: np.random.Generator) -> list[Sample]:
    result = []
    for desc, shape, index, value_shape, layouts in _SETITEM_CASES:
        if isinstance(index, str):
            index = rng.random(shape) < 0.5
        if value_shape == "masked":
            value_shape = (int(index.sum()),)
        args = (uniform(rng, shape), uniform(rng, value_shape))
        result.append(Sample(args, {"index": index}, desc, tuple(layouts)))
    # repeated integer indices: the last write wins (NumPy's order; PyTorch leaves it
    # unspecified), and every write gets the gradient as in PyTorch: a convention, not the
    # derivative, so no gradient checks (test_backward.py tests it by value)
    for desc, value_shape in (("int_array_repeated", (3, 2)), ("repeated_bcast_value", ())):
        args = (uniform(rng, (4, 2)), uniform(rng, value_shape))
        result.append(Sample(args, {"index": np.array([2, 0, 2])}, desc, grad=False))
    return result


def _setitem(x, value, index):
    out = x.clone()  # a non-leaf: writing into it is recorded
    out[index] = value
    return out


def _setitem_ref(x, value, index):
    out = x.copy()
    out[index] = value  # NumPy's assignment drops a value's leading 1s, as PyTorch's does
    return out


register(
    OpInfo(
        "setitem",
        _setitem,
        _setitem_ref,
        _setitem_samples,
        errors=(
            ErrorInput(
                (np.ones((2, 3)), np.ones(())),
                IndexError,
                r"^setitem_: index 5 is out of bounds for axis 0 with size 2",
                {"index": 5},
                "out_of_bounds",
            ),
            ErrorInput(
                (np.ones((2, 3)), np.ones(4)),
                ValueError,
                r"^setitem_: could not broadcast input array from shape \(4,\) into shape "
                r"\(3,\)",
                {"index": 0},
                "value_shape",
            ),
            ErrorInput(
                (np.ones((2, 3)), np.ones(())),
                IndexError,
                r"^setitem_: boolean index did not match",
                {"index": np.array([True, False, True])},
                "mask_shape",
            ),
            ErrorInput(
                (np.ones((2, 3)), np.ones(())),
                IndexError,
                r"^setitem_: too many indices",
                {"index": (0, 0, 0)},
                "too_many_indices",
            ),
        ),
    )
)


# ---- copy_into_view: an in-place change through a view, written back to its base ---------
def _through_view(base_shape: tuple, view: str):
    """The view of a (cloned) base that ``copy_into_view``'s samples change in place."""
    views = {
        "slice": lambda t: t[1:3],
        "column": lambda t: t[:, 1],
        "transposed": lambda t: t.T,
        "chain": lambda t: t[1:].T[0],  # a slice of a transpose of a slice
        "reshaped": lambda t: t.reshape(-1)[::2],
        "all_0d": lambda t: t[...],
        "empty": lambda t: t[2:2],
    }
    return views[view]


#: (description, shape of the base, view, shape of the value, in-place op)
_VIEW_CASES = [
    ("slice_mul", (4, 3), "slice", (2, 3), "mul_"),
    ("column_add_bcast", (3, 4), "column", (), "add_"),
    ("transposed_copy", (2, 3), "transposed", (3, 2), "copy_"),
    ("chain_mul", (4, 3), "chain", (3,), "mul_"),
    ("reshaped_sub", (2, 4), "reshaped", (4,), "sub_"),
    ("0d_mul", (), "all_0d", (), "mul_"),
    ("size1_copy", (1,), "slice", (1,), "copy_"),
    ("empty_mul", (4, 3), "empty", (3,), "mul_"),
    ("empty_base_mul", (0, 3), "slice", (3,), "mul_"),
    ("views_add", (3, 4), "column", (3,), "add_"),
]


def _copy_into_view_samples(rng: np.random.Generator) -> list[Sample]:
    result = []
    for desc, shape, view, value_shape, method in _VIEW_CASES:
        layouts = "TS" if desc.startswith("views") else "CC"
        args = (uniform(rng, shape), uniform(rng, value_shape))
        result.append(Sample(args, {"view": view, "method": method}, desc, tuple(layouts)))
    return result


def _copy_into_view(x, value, view, method, clone=True):
    base = x.clone() if clone else x
    getattr(_through_view(x.shape, view)(base), method)(value)
    return base


def _copy_into_view_ref(x, value, view, method):
    base = x.copy()
    region = {
        "slice": lambda t: t[1:3],
        "column": lambda t: t[:, 1],
        "transposed": lambda t: t.T,
        "chain": lambda t: t[1:].T[0],
        "reshaped": lambda t: t.reshape(-1)[::2],
        "all_0d": lambda t: t[...],
        "empty": lambda t: t[2:2],
    }[view](base)
    ufunc = {"mul_": np.multiply, "add_": np.add, "sub_": np.subtract}.get(method)
    region[...] = value if ufunc is None else ufunc(region, value)
    return base


register(
    OpInfo(
        "copy_into_view",
        _copy_into_view,
        _copy_into_view_ref,
        _copy_into_view_samples,
        errors=(
            ErrorInput(
                (np.ones((4, 3)), np.ones(())),
                RuntimeError,
                r"^mul_: a view of a leaf Tensor that requires grad is being used in an "
                r"in-place operation",
                {"view": "slice", "method": "mul_", "clone": False},
                "view_of_a_leaf",
            ),
            ErrorInput(
                (np.ones((4, 3)), np.ones(4)),
                ValueError,
                r"^mul_: operands could not be broadcast together",
                {"view": "slice", "method": "mul_"},
                "value_shape",
            ),
        ),
    )
)


# ---- gather and scatter_add ----------------------------------------------------------------
#: (description, shape of x, dim, index, layout)
_GATHER_CASES: list[tuple[str, tuple, int, Any, str]] = [
    ("rows", (3, 4), 0, [[0, 2, 1, 0], [2, 2, 0, 1]], "C"),
    ("cols_repeated", (3, 4), 1, [[3, 3], [0, 0], [1, 3]], "C"),
    ("negative_dim", (2, 3, 2), -1, [[[1], [0], [1]], [[0], [0], [1]]], "C"),
    ("smaller_index", (3, 4), 0, [[1, 0]], "C"),  # index smaller than x off the dim
    ("vector", (5,), 0, [4, 0, 0, 2], "C"),
    ("0d", (), 0, 0, "C"),
    ("0d_input_1d_index", (), 0, [0, 0], "C"),
    ("size1", (1,), 0, [0], "C"),
    ("empty_index", (3, 4), 0, np.zeros((0, 4), dtype=np.int64), "C"),
    ("empty_input", (0, 3), 1, np.zeros((0, 2), dtype=np.int64), "C"),
    ("int32_index", (3, 4), 1, np.array([[0], [3], [2]], dtype=np.int32), "C"),
    ("transposed", (3, 4), 0, [[2, 0, 1, 1]], "T"),
    ("strided", (2, 5), 1, [[4, 4, 0], [1, 2, 3]], "S"),
]


def _gather_samples(rng: np.random.Generator) -> list[Sample]:
    return [
        Sample((uniform(rng, shape),), {"dim": dim, "index": np.asarray(index)}, desc, (lay,))
        for desc, shape, dim, index, lay in _GATHER_CASES
    ]


def _gather_ref(x, dim, index):
    """out[i][j] = x[index[i][j]][j] (for dim 0), by an explicit loop over index."""
    x1, index1 = np.atleast_1d(x), np.atleast_1d(index)
    out = np.empty(index1.shape)
    for position in np.ndindex(index1.shape):
        source = list(position)
        source[dim] = index1[position]
        out[position] = x1[tuple(source)]
    return out.reshape(np.shape(index))


_INDEX_ERRORS = [  # (description, shape of x, dim, index, error, message after "name: ")
    ("float_index", (2, 3), 0, np.array([[0.5]]), tg.DtypeError,
     r"index must be an integer tensor, got float64"),
    ("ndim_mismatch", (2, 3), 0, np.array([0]), RuntimeError,
     r"index has 1 dimensions, the input 2 \(they must match\)"),
    ("index_too_large", (2, 3), 0, np.array([[0, 1, 0, 1]]), RuntimeError,
     r"index of shape \(1, 4\) is larger than the input of shape \(2, 3\) in dimension 1"),
    ("out_of_bounds", (2, 3), 0, np.array([[2]]), RuntimeError,
     r"index 2 is out of bounds for dimension 0 with size 2"),
    ("negative_index", (2, 3), 1, np.array([[-1]]), RuntimeError,
     r"index -1 is out of bounds for dimension 1 with size 3"),
    ("dim_out_of_range", (2, 3), 2, np.array([[0]]), IndexError,
     r"axis 2 is out of range for a tensor of 2 dimensions"),
]  # fmt: skip

register(
    OpInfo(
        "gather",
        lambda x, dim, index: x.gather(dim, tg.tensor(index)),
        _gather_ref,
        _gather_samples,
        errors=tuple(
            ErrorInput((np.ones(s),), e, rf"^gather: {m}", {"dim": d, "index": i}, desc)
            for desc, s, d, i, e, m in _INDEX_ERRORS
        ),
    )
)


def _scatter_add_samples(rng: np.random.Generator) -> list[Sample]:
    result = []
    for desc, shape, dim, index, layout in _GATHER_CASES:
        index = np.asarray(index)
        src_shape = index.shape
        if desc == "rows":
            src_shape = (3, 5)  # src larger than index: the rest of src is not used
        args = (uniform(rng, shape), uniform(rng, src_shape))
        result.append(Sample(args, {"dim": dim, "index": index}, desc, (layout, "C")))
    return result


def _scatter_add_ref(x, src, dim, index):
    """out[index[i][j]][j] += src[i][j] (for dim 0), by an explicit loop over index."""
    out, index1, src1 = np.atleast_1d(x).copy(), np.atleast_1d(index), np.atleast_1d(src)
    for position in np.ndindex(index1.shape):
        target = list(position)
        target[dim] = index1[position]
        out[tuple(target)] += src1[position]
    return out.reshape(np.shape(x))


register(
    OpInfo(
        "scatter_add",
        lambda x, src, dim, index: x.scatter_add(dim, tg.tensor(index), src),
        _scatter_add_ref,
        _scatter_add_samples,
        errors=(
            *(
                ErrorInput(
                    (np.ones(s), np.ones((2, 3))),
                    e,
                    rf"^scatter_add: {m}",
                    {"dim": d, "index": i},
                    desc,
                )
                for desc, s, d, i, e, m in _INDEX_ERRORS
            ),
            ErrorInput(
                (np.ones((2, 3)), np.ones((1, 1))),
                RuntimeError,
                r"^scatter_add: index of shape \(1, 2\) is larger than src of shape \(1, 1\)",
                {"dim": 0, "index": np.array([[0, 1]])},
                "src_too_small",
            ),
        ),
    )
)
