"""Registry entries for ``tensorgrad/ops/scatter.py`` (scatter_reduce's prod, amax, amin;
bincount) and for the scattering composed of set-item and index-add (scatter,
scatter_reduce's sum and mean, index_add, index_copy, index_fill, masked_scatter, index_put)."""

from __future__ import annotations

import numpy as np

import tensorgrad as tg
from tests.ops.registry.core import (
    PIECEWISE_LINEAR,
    ErrorInput,
    OpInfo,
    Sample,
    distinct,
    exempt,
    register,
)

_INDEX = np.array([[0, 1, 2, 0], [2, 0, 2, 1]])


def _scatter_reference(x, src, dim, index, reduce, include_self):
    """A loop over the index: PyTorch's definition, element by element."""
    x = np.array(x, dtype=np.float64, copy=True)
    out = x.reshape(x.shape or (1,)).copy()
    src1 = src.reshape(src.shape or (1,))
    index1 = index.reshape(index.shape or (1,))
    groups: dict[tuple, list[float]] = {}
    for position in np.ndindex(*index1.shape):
        target = list(position)
        target[dim] = index1[position]
        groups.setdefault(tuple(target), []).append(src1[position])
    for target, values in groups.items():
        own = [out[target]] if include_self else []
        values = own + values
        if reduce == "prod":
            out[target] = np.prod(values)
        elif reduce == "amax":
            out[target] = max(values)
        elif reduce == "amin":
            out[target] = min(values)
        elif reduce == "sum":
            out[target] = sum(values)
        elif reduce == "mean":
            out[target] = sum(values) / len(values)
        else:  # a plain scatter: the last value written
            out[target] = values[-1]
    return out.reshape(x.shape)


def _scatter_samples(reduce, include_self):
    def samples(rng):
        result = [
            Sample(
                (distinct(rng, (3, 4)), distinct(rng, (2, 4))), {"dim": 0, "index": _INDEX}, "rows"
            ),
            Sample(
                (distinct(rng, (3, 4)), distinct(rng, (2, 4))),
                {"dim": 1, "index": _INDEX[:, :3] % 3},
                "columns_src_larger",
            ),
            Sample(
                (distinct(rng, (4, 3)), distinct(rng, (3, 4))),
                {"dim": -2, "index": _INDEX.T[:3] % 3},
                "transposed",
                ("T", "S"),
            ),
            Sample((np.array(1.5), np.array(-0.5)), {"dim": 0, "index": np.array(0)}, "0d"),
            Sample(
                (distinct(rng, (1,)), distinct(rng, (1,))),
                {"dim": 0, "index": np.array([0])},
                "size1",
            ),
            Sample(
                (distinct(rng, (3, 2)), np.zeros((0, 2))),
                {"dim": 0, "index": np.zeros((0, 2), np.int64)},
                "empty_index",
            ),
        ]
        for s in result:
            s.kwargs.update(reduce=reduce, include_self=include_self)
        return result

    return samples


def _scatter_reduce(x, src, dim, index, reduce, include_self):
    return x.scatter_reduce(dim, tg.tensor(index), src, reduce, include_self=include_self)


for _reduce in ("prod", "amax", "amin", "sum", "mean"):
    for _include in (True, False):
        register(
            OpInfo(
                f"scatter_reduce_{_reduce}{'' if _include else '_exclude_self'}",
                _scatter_reduce,
                _scatter_reference,
                _scatter_samples(_reduce, _include),
                errors=(
                    ErrorInput(
                        (np.ones((2, 3)), np.ones((2, 3))),
                        RuntimeError,
                        r"^scatter_reduce: index 3 is out of bounds for dimension 1 with size 3",
                        {
                            "dim": 1,
                            "index": np.array([[0, 3, 1], [0, 0, 0]]),
                            "reduce": _reduce,
                            "include_self": _include,
                        },
                        "index_out_of_bounds",
                    ),
                ),
                second_order="" if _reduce in ("sum", "mean", "prod") else PIECEWISE_LINEAR,
            )
        )


def _plain_scatter_samples(rng):
    """Indices without repeated targets: where two sources land on one element, the value is
    one of them and the gradient goes to both (PyTorch's rule), which finite differences
    cannot confirm."""
    unique = np.array([[0, 2, 1, 0], [2, 0, 0, 1]])
    result = [
        Sample((distinct(rng, (3, 4)), distinct(rng, (2, 4))), {"dim": 0, "index": unique}, "rows"),
        Sample(
            (distinct(rng, (3, 4)), distinct(rng, (2, 5))),
            {"dim": 1, "index": np.array([[3, 0, 1], [2, 1, 0]])},
            "columns_src_larger",
        ),
        Sample(
            (distinct(rng, (4, 3)), distinct(rng, (2, 3))),
            {"dim": -2, "index": unique[:, :3]},
            "transposed",
            ("T", "S"),
        ),
        Sample((np.array(1.5), np.array(-0.5)), {"dim": 0, "index": np.array(0)}, "0d"),
        Sample(
            (distinct(rng, (1,)), distinct(rng, (1,))), {"dim": 0, "index": np.array([0])}, "size1"
        ),
        Sample(
            (distinct(rng, (3, 2)), np.zeros((0, 2))),
            {"dim": 0, "index": np.zeros((0, 2), np.int64)},
            "empty_index",
        ),
    ]
    for s in result:
        s.kwargs.update(reduce=None, include_self=False)
    return result


register(
    OpInfo(
        "scatter",
        lambda x, src, dim, index, reduce, include_self: x.scatter(dim, tg.tensor(index), src),
        lambda x, src, dim, index, reduce, include_self: _scatter_reference(
            x, src, dim, index, None, False
        ),
        _plain_scatter_samples,
        errors=(
            ErrorInput(
                (np.ones((2, 3)), np.ones((2, 3))),
                RuntimeError,
                r"^scatter\(\): Expected dtype int64 for index, got float64",
                {
                    "dim": 1,
                    "index": np.array([[0.0, 1.0, 1.0]]),
                    "reduce": None,
                    "include_self": False,
                },
                "float_index",
            ),
        ),
    )
)


def _index_samples(rng):
    return [
        Sample(
            (distinct(rng, (3, 4)), distinct(rng, (3, 4))),
            {"dim": 0, "index": np.array([2, 0, 2])},
            "rows_repeated",
        ),
        Sample(
            (distinct(rng, (3, 4)), distinct(rng, (3, 2))),
            {"dim": 1, "index": np.array([3, 0])},
            "columns",
            ("T", "S"),
        ),
        Sample((np.array(1.5), np.array(-0.5)), {"dim": 0, "index": np.array(0)}, "0d"),
        Sample(
            (distinct(rng, (1,)), distinct(rng, (1,))), {"dim": 0, "index": np.array([0])}, "size1"
        ),
        Sample(
            (distinct(rng, (3, 2)), np.zeros((0, 2))),
            {"dim": 0, "index": np.zeros(0, np.int64)},
            "empty_index",
        ),
    ]


def _index_add_reference(x, source, dim, index, alpha=1.0):
    out = np.array(x, copy=True)
    view = np.moveaxis(out.reshape(out.shape or (1,)), dim, 0)
    src = np.moveaxis(source.reshape(source.shape or (1,)), dim, 0)
    for i, target in enumerate(np.reshape(index, -1)):
        view[target] += alpha * src[i]
    return out


def _index_copy_reference(x, source, dim, index):
    out = np.array(x, copy=True)
    view = np.moveaxis(out.reshape(out.shape or (1,)), dim, 0)
    src = np.moveaxis(source.reshape(source.shape or (1,)), dim, 0)
    for i, target in enumerate(np.reshape(index, -1)):
        view[target] = src[i]
    return out


register(
    OpInfo(
        "index_add_along_dim",
        lambda x, s, dim, index: x.index_add(dim, tg.tensor(index), s, alpha=-1.5),
        lambda x, s, dim, index: _index_add_reference(x, s, dim, index, -1.5),
        _index_samples,
        errors=(
            ErrorInput(
                (np.ones((2, 3)), np.ones((2, 2))),
                RuntimeError,
                r"^index_add\(\): index 3 is out of bounds for dimension 1 with size 3",
                {"dim": 1, "index": np.array([0, 3])},
                "index_out_of_bounds",
            ),
            ErrorInput(
                (np.ones((2, 3)), np.ones((2, 3))),
                RuntimeError,
                r"^index_add\(\): source of shape \(2, 3\) does not match",
                {"dim": 1, "index": np.array([0, 2])},
                "source_shape",
            ),
        ),
    )
)
register(
    OpInfo(
        "index_copy",
        lambda x, s, dim, index: x.index_copy(dim, tg.tensor(index), s),
        _index_copy_reference,
        lambda rng: [s for s in _index_samples(rng) if s.desc != "rows_repeated"],
    )
)


def _index_fill_reference(x, value, dim, index):
    out = np.array(x, copy=True)
    view = np.moveaxis(out.reshape(out.shape or (1,)), dim, 0)
    for target in np.reshape(index, -1):
        view[target] = value
    return out


def _index_fill(x, *value, dim, index, number=None):
    return x.index_fill(dim, tg.tensor(index), value[0] if value else number)


def _index_fill_ref(x, *value, dim, index, number=None):
    return _index_fill_reference(x, value[0] if value else number, dim, index)


register(
    OpInfo(
        "index_fill",
        _index_fill,
        _index_fill_ref,
        lambda rng: [
            Sample(
                (distinct(rng, (3, 4)), np.array(0.5)),
                {"dim": 0, "index": np.array([2, 0])},
                "rows",
            ),
            Sample(
                (distinct(rng, (3, 4)),),
                {"dim": 1, "index": np.array([3]), "number": -1.5},
                "column",
                ("T",),
            ),
            Sample(
                (distinct(rng, (2, 5)),),
                {"dim": 1, "index": np.array([1, 4]), "number": 2.0},
                "strided",
                ("S",),
            ),
            Sample((np.array(1.5), np.array(-0.5)), {"dim": 0, "index": np.array(0)}, "0d"),
            Sample(
                (distinct(rng, (1,)), np.array(3.0)), {"dim": 0, "index": np.array([0])}, "size1"
            ),
            Sample(
                (distinct(rng, (3, 2)), np.array(1.0)),
                {"dim": 0, "index": np.zeros(0, np.int64)},
                "empty_index",
            ),
            Sample((np.zeros((0, 3)), np.array(1.0)), {"dim": 1, "index": np.array([2])}, "empty"),
        ],
    )
)


def _masked_scatter_reference(x, source, mask):
    out = np.array(np.broadcast_to(x, np.broadcast_shapes(x.shape, mask.shape)), copy=True)
    flags = np.broadcast_to(mask, out.shape)
    out[flags] = source.reshape(-1)[: int(flags.sum())]
    return out


register(
    OpInfo(
        "masked_scatter",
        lambda x, s, mask: x.masked_scatter(tg.tensor(mask), s),
        _masked_scatter_reference,
        lambda rng: [
            Sample(
                (distinct(rng, (3, 4)), distinct(rng, (12,))),
                {"mask": rng.random((3, 4)) < 0.5},
                "matrix",
            ),
            Sample(
                (distinct(rng, (3, 4)), distinct(rng, (2, 6))),
                {"mask": rng.random(4) < 0.5},
                "broadcast_mask",
                ("T", "S"),
            ),
            Sample((np.array(1.5), np.array([2.0])), {"mask": np.array(True)}, "0d"),
            Sample((distinct(rng, (1,)), distinct(rng, (1,))), {"mask": np.array([True])}, "size1"),
            Sample(
                (np.zeros((0, 3)), distinct(rng, (2,))), {"mask": np.zeros((0, 3), bool)}, "empty"
            ),
        ],
        errors=(
            ErrorInput(
                (np.ones(3), np.ones(1)),
                RuntimeError,
                r"^masked_scatter: expected source to have at least as many elements as ones",
                {"mask": np.array([True, False, True])},
                "source_too_small",
            ),
        ),
    )
)
register(
    OpInfo(
        "index_put_accumulate",
        lambda x, v, rows, cols: x.index_put(
            (tg.tensor(rows), tg.tensor(cols)), v, accumulate=True
        ),
        lambda x, v, rows, cols: (lambda out: (np.add.at(out, (rows, cols), v), out)[1])(x.copy()),
        lambda rng: [
            Sample(
                (distinct(rng, (3, 4)), distinct(rng, (3,))),
                {"rows": np.array([0, 2, 0]), "cols": np.array([1, 1, 1])},
                "repeated",
            ),
            Sample(
                (distinct(rng, (3, 4)), np.array(0.5)),
                {"rows": np.array([1, 2]), "cols": np.array([0, 3])},
                "0d_value",
                ("T",),
            ),
            Sample(
                (distinct(rng, (2, 5)), distinct(rng, (1,))),
                {"rows": np.array([1]), "cols": np.array([4])},
                "size1",
                ("S",),
            ),
            Sample(
                (distinct(rng, (2, 3)), np.zeros(0)),
                {"rows": np.zeros(0, np.int64), "cols": np.zeros(0, np.int64)},
                "empty",
            ),
        ],
    )
)
exempt("0-d", "addresses a matrix by two index tensors", "index_put_accumulate")


# ---- bincount ------------------------------------------------------------------------------
def _count_samples(rng):
    """Values k + 0.5, which ``long()`` truncates to k; scaled by 0.998 (vmap's variants,
    tests/core/test_batching.py) they still do."""
    return [
        Sample((np.array([0.5, 3.5, 1.5, 1.5, 0.5]),), {"minlength": 0}, "vector"),
        Sample((np.array([2.5]),), {"minlength": 0}, "size1"),
        Sample((np.array([1.5, 4.5]),), {"minlength": 7}, "minlength_larger"),
        Sample((np.array([1.5, 4.5, 0.5]),), {"minlength": 2}, "minlength_smaller"),
        Sample((np.zeros(0),), {"minlength": 3}, "empty"),
        Sample((np.array([0.5, 2.5, 2.5, 1.5]),), {"minlength": 0}, "strided", ("S",)),
    ]


register(
    OpInfo(
        "bincount",
        lambda x, minlength: tg.bincount(x.long(), minlength=minlength),
        lambda x, minlength: np.bincount(x.astype(np.int64), minlength=minlength),
        _count_samples,
        errors=(
            ErrorInput(
                (np.array([-1.5, 0.5]),),
                RuntimeError,
                r"^bincount only supports 1-d non-negative integral inputs: got the negative "
                r"value -1",
                {"minlength": 0},
                "negative_value",
            ),
            ErrorInput(
                (np.array([[0.5, 1.5]]),),
                RuntimeError,
                r"^bincount only supports 1-d non-negative integral inputs: got a tensor of 2 "
                r"dimensions \(shape \(1, 2\)\)",
                {"minlength": 0},
                "not_1d",
            ),
            ErrorInput(
                (np.array([0.5]),),
                RuntimeError,
                r"^bincount: minlength should be >= 0, got -1",
                {"minlength": -1},
                "negative_minlength",
            ),
        ),
        differentiable=False,
        second_order="not differentiable: integer counts",
        out_dtype=np.int64,
    )
)

_BINS = np.array([0, 2, 2, 4, 1])


def _weight_samples(rng):
    return [
        Sample((distinct(rng, (5,)),), {"input": _BINS, "minlength": 0}, "vector"),
        Sample((distinct(rng, (1,)),), {"input": np.array([3]), "minlength": 0}, "size1"),
        Sample((distinct(rng, (5,)),), {"input": _BINS, "minlength": 8}, "minlength_larger"),
        Sample((distinct(rng, (5,)),), {"input": _BINS, "minlength": 0}, "strided", ("S",)),
    ]


register(
    OpInfo(
        "bincount_weights",
        lambda w, input, minlength: tg.bincount(tg.tensor(input), w, minlength),
        lambda w, input, minlength: np.bincount(input, w, minlength),
        _weight_samples,
        errors=(
            ErrorInput(
                (np.ones(3),),
                RuntimeError,
                r"^bincount: weights should be 1-d and have the same length as input: got "
                r"weights of shape \(3,\) for an input of shape \(5,\)",
                {"input": _BINS, "minlength": 0},
                "weights_of_another_length",
            ),
        ),
        differentiable=False,
        no_derivative="PyTorch defines no derivative for bincount: backward refuses",
    )
)
exempt("0-d", "bincount counts the elements of a 1-D tensor", "bincount", "bincount_weights")
exempt(
    "empty",
    "an empty input gives int64 zeros whatever the weights, PyTorch's rule (the entry "
    "bincount has it; tests/core/test_bincount.py)",
    "bincount_weights",
)
