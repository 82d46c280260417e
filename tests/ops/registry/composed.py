"""Registry entries for the functions composed of existing ops (no VJP of their own):
the registry's gradient checks cover the compositions too. einsum and tensordot (permutes,
reshapes, one batched matmul per pair), order statistics (a gather), two-operand math,
products, and the nn.functional normalisations and distances."""

from __future__ import annotations

import numpy as np

import tensorgrad as tg
import tensorgrad.nn.functional as F
from tests.ops.registry.core import (
    ErrorInput,
    OpInfo,
    Sample,
    binary_samples,
    distinct,
    exempt,
    pair,
    positive,
    register,
    uniform,
)


def _samples(*cases):
    """``(description, [shapes], kwargs, layouts)`` → samples of uniform values."""

    def samples(rng):
        return [
            Sample(tuple(uniform(rng, s) for s in shapes), dict(kw), desc, tuple(lay))
            for desc, shapes, kw, lay in cases
        ]

    return samples


# ---- einsum and tensordot ------------------------------------------------------------------
register(
    OpInfo(
        "einsum",
        lambda *ts, eq: tg.einsum(eq, *ts),
        lambda *arrays, eq: np.einsum(eq, *arrays),
        _samples(
            ("batched_matmul", [(2, 3, 4), (2, 4, 5)], {"eq": "bij,bjk->bik"}, "TC"),
            ("attention", [(2, 2, 3, 4), (2, 2, 5, 4)], {"eq": "bhqd,bhkd->bhqk"}, "CS"),
            ("left_stored_transposed", [(3, 2), (3, 4)], {"eq": "ji,jk->ik"}, "CC"),
            ("both_stored_transposed", [(3, 2), (4, 3)], {"eq": "ji,kj->ik"}, "CT"),
            ("trace", [(3, 3)], {"eq": "ii"}, "C"),
            ("diagonal", [(3, 3, 2)], {"eq": "iij->ji"}, "C"),
            ("outer_implicit", [(3,), (4,)], {"eq": "i,j"}, "CC"),
            ("sum_all", [(2, 3)], {"eq": "ij->"}, "C"),
            ("ellipsis", [(2, 1, 3, 4), (4, 2)], {"eq": "...ij,jk->...ik"}, "CC"),
            ("three", [(2, 3), (3, 4), (4, 2)], {"eq": "ab,bc,ca->"}, "CCC"),
            ("broadcast_size1", [(1, 3), (2, 3)], {"eq": "ij,ij->i"}, "CC"),
            ("0d", [(), (3,)], {"eq": ",i->i"}, "CC"),
            ("size1", [(1,), (1, 1)], {"eq": "i,ij->j"}, "CC"),
            ("empty", [(0, 3), (3, 2)], {"eq": "ij,jk->ik"}, "CC"),
            ("empty_contracted", [(2, 0), (0, 3)], {"eq": "ij,jk->ik"}, "CC"),
        ),
    )
)
register(
    OpInfo(
        "tensordot",
        lambda a, b, dims: tg.tensordot(a, b, dims),
        lambda a, b, dims: np.tensordot(a, b, dims),
        _samples(
            ("two", [(2, 3, 4), (3, 4, 2)], {"dims": 2}, "TC"),
            ("pairs", [(2, 3, 4), (4, 3)], {"dims": ([1, 2], [1, 0])}, "CS"),
            ("outer", [(), (3,)], {"dims": 0}, "CC"),
            ("size1", [(1,), (1,)], {"dims": 1}, "CC"),
            ("empty", [(0, 3), (3,)], {"dims": 1}, "CC"),
        ),
    )
)

# ---- order statistics (a gather at the selected element) -----------------------------------
_ORDER_CASES = [
    ("rows", (2, 5), 1, False, "C"),
    ("first_keepdim", (4, 3), 0, True, "C"),
    ("0d", (), 0, False, "C"),
    ("size1", (1,), 0, False, "C"),
    ("transposed", (3, 4), -1, False, "T"),
    ("strided", (2, 5), 1, True, "S"),
    ("empty_other_axis", (0, 3), 1, False, "C"),
]


def _order_samples(rng):
    return [
        Sample((distinct(rng, s),), {"dim": d, "keepdim": k}, desc, (lay,))
        for desc, s, d, k, lay in _ORDER_CASES
    ]


def _lower_median(x, dim, keepdim):
    if not x.ndim:
        return x.copy()
    n = x.shape[dim]
    return np.take(np.sort(x, axis=dim), [(n - 1) // 2], axis=dim).squeeze(() if keepdim else dim)


register(
    OpInfo(
        "median_dim",
        lambda x, dim, keepdim: x.median(dim, keepdim).values,
        _lower_median,
        _order_samples,
        second_order="piecewise linear: the second derivative is 0 wherever it is defined",
    )
)
register(
    OpInfo(
        "kthvalue",
        lambda x, dim, keepdim: x.kthvalue(1, dim, keepdim)[0],
        lambda x, dim, keepdim: x.min(axis=dim, keepdims=keepdim) if x.ndim else x.copy(),
        _order_samples,
        second_order="piecewise linear: the second derivative is 0 wherever it is defined",
    )
)
exempt(
    "empty",
    "the order statistics need elements to select (an empty dim is an error)",
    "median_dim",
    "kthvalue",
)

# ---- two operands --------------------------------------------------------------------------
register(
    OpInfo("hypot", lambda x, y: x.hypot(y), np.hypot, binary_samples(pair(positive, uniform)))
)
register(
    OpInfo(
        "logaddexp",
        lambda x, y: tg.logaddexp(x, y),
        np.logaddexp,
        binary_samples(pair(lambda r, s: uniform(r, s, -20, 20), uniform)),
    )
)
register(
    OpInfo(
        "logaddexp2",
        lambda x, y: tg.logaddexp2(x, y),
        np.logaddexp2,
        binary_samples(pair(lambda r, s: uniform(r, s, -20, 20), uniform)),
    )
)
register(
    OpInfo(
        "xlogy",
        lambda x, y: x.xlogy(y),
        lambda x, y: x * np.log(y),
        binary_samples(pair(uniform, positive)),
    )
)
register(
    OpInfo(
        "lerp",
        lambda x, y: x.lerp(y, y.sigmoid()) if isinstance(y, tg.Tensor) else x.lerp(y, 0.3),
        lambda x, y: np.where(
            np.abs(s := 1 / (1 + np.exp(-y))) < 0.5, x + s * (y - x), y - (y - x) * (1 - s)
        ),
        binary_samples(pair()),
    )
)
register(
    OpInfo(
        "copysign",
        lambda x, y: x.copysign(y),
        np.copysign,
        binary_samples(lambda rng, sx, sy: (uniform(rng, sx) + 3.0, uniform(rng, sy))),
        second_order="piecewise linear: the second derivative is 0 wherever it is defined",
    )
)

register(
    OpInfo(
        "nextafter",
        lambda x, y: x.nextafter(y),
        np.nextafter,
        binary_samples(pair()),
        second_order="locally the identity: the second derivative is 0",
    )
)

# ---- products ------------------------------------------------------------------------------
register(
    OpInfo(
        "kron",
        lambda a, b: a.kron(b),
        np.kron,
        _samples(
            ("matrices", [(2, 3), (3, 2)], {}, "TC"),
            ("ranks", [(2,), (2, 3)], {}, "CS"),
            ("0d", [(), (3,)], {}, "CC"),
            ("size1", [(1,), (1, 1)], {}, "CC"),
            ("empty", [(0, 2), (2, 2)], {}, "CC"),
        ),
    )
)
register(
    OpInfo(
        "cross",
        lambda a, b: tg.cross(a, b, dim=-1),
        lambda a, b: np.cross(a, b),
        _samples(
            ("vectors", [(3,), (3,)], {}, "CC"),
            ("batch", [(4, 3), (1, 3)], {}, "TC"),
            ("broadcast", [(2, 1, 3), (1, 2, 3)], {}, "CC"),
            ("size1_batch", [(1, 3), (1, 3)], {}, "CC"),
            ("empty", [(0, 3), (1, 3)], {}, "CC"),
            ("strided", [(2, 3), (2, 3)], {}, "SC"),
        ),
    )
)
exempt("0-d", "a cross product needs vectors of 3", "cross")
exempt("size-1", "a cross product needs vectors of 3", "cross")


def _cdist_reference(a, b, p):
    diff = np.abs(a[..., :, None, :] - b[..., None, :, :])
    return (diff**p).sum(-1) ** (1 / p)


register(
    OpInfo(
        "cdist",
        lambda a, b, p: tg.cdist(a, b, p),
        _cdist_reference,
        _samples(
            ("euclid", [(3, 4), (5, 4)], {"p": 2.0}, "TC"),
            ("l1_batched", [(2, 3, 2), (2, 4, 2)], {"p": 1.0}, "CS"),
            ("p3", [(3, 2), (2, 2)], {"p": 3.0}, "CC"),
            ("size1", [(1, 1), (1, 1)], {"p": 2.0}, "CC"),
            ("empty", [(0, 2), (3, 2)], {"p": 2.0}, "CC"),
        ),
    )
)
exempt("0-d", "cdist needs (…, P, M) matrices", "cdist")


# ---- normalisations and distances ----------------------------------------------------------
def _group_norm_reference(x, w, b, groups):
    n, c = x.shape[:2]
    g = x.reshape(n, groups, -1)
    out = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5)).reshape(
        x.shape
    )
    shape = (c,) + (1,) * (x.ndim - 2)
    return out * w.reshape(shape) + b.reshape(shape)


register(
    OpInfo(
        "group_norm",
        lambda x, w, b, groups: F.group_norm(x, groups, w, b),
        _group_norm_reference,
        _samples(
            ("images", [(2, 4, 3, 3), (4,), (4,)], {"groups": 2}, "CCC"),
            ("sequence", [(2, 6, 5), (6,), (6,)], {"groups": 3}, "TCC"),
            ("one_group", [(3, 2, 4), (2,), (2,)], {"groups": 1}, "SCC"),
            ("size1_channels", [(2, 1, 5), (1,), (1,)], {"groups": 1}, "CCC"),
        ),
        errors=(
            ErrorInput(
                (np.ones((1, 2, 1)), np.ones(2), np.ones(2)),
                ValueError,
                r"^group_norm: Expected more than 1 value per channel when training, got input "
                r"size \[1, 2, 1\]",
                {"groups": 2},
                "one_value_per_group",
            ),
        ),
    )
)
exempt("0-d", "group norm needs (N, C, ...) input", "group_norm")
exempt("empty", "group norm of nothing is nothing", "group_norm")


def _rms_reference(x, w, dims):
    axes = tuple(range(x.ndim - dims, x.ndim))
    return x / np.sqrt((x * x).mean(axes, keepdims=True) + 1e-6) * w


register(
    OpInfo(
        "rms_norm",
        lambda x, w, dims: F.rms_norm(x, w.shape, w, eps=1e-6),
        _rms_reference,
        _samples(
            ("last", [(3, 4), (4,)], {"dims": 1}, "TC"),
            ("last_two", [(2, 3, 4), (3, 4)], {"dims": 2}, "CS"),
            ("0d_weight", [(3, 1), (1,)], {"dims": 1}, "CC"),
            ("empty", [(0, 4), (4,)], {"dims": 1}, "CC"),
            ("size1", [(1,), (1,)], {"dims": 1}, "CC"),
        ),
    )
)
exempt("0-d", "rms norm needs a normalized shape", "rms_norm")


def _cosine_reference(a, b, dim):
    a, b = np.broadcast_arrays(a, b)
    na = np.maximum(np.sqrt((a * a).sum(dim, keepdims=True)), 1e-8)
    nb = np.maximum(np.sqrt((b * b).sum(dim, keepdims=True)), 1e-8)
    return ((a / na) * (b / nb)).sum(dim)


register(
    OpInfo(
        "cosine_similarity",
        lambda a, b, dim: F.cosine_similarity(a, b, dim),
        _cosine_reference,
        _samples(
            ("rows", [(3, 4), (3, 4)], {"dim": 1}, "TC"),
            ("broadcast", [(2, 3, 4), (1, 4)], {"dim": -1}, "CS"),
            ("size1", [(1, 1), (1, 1)], {"dim": 1}, "CC"),
            ("0d", [(), ()], {"dim": 0}, "CC"),
            ("empty", [(0, 3), (3,)], {"dim": 1}, "CC"),
        ),
    )
)
