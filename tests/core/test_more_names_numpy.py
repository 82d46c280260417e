"""PyTorch's less common math, scattering and shape functions without PyTorch: values against
NumPy (and SciPy) references, result dtypes, and gradients of the compositions the op registry
does not cover, by ``gradcheck`` in float64. (With PyTorch installed,
``test_more_pytorch_names.py`` compares the same names with PyTorch itself.)"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tensorgrad as tg
import tensorgrad.nn.functional as F
from tensorgrad.autograd import gradcheck
from tensorgrad.core.node import Node

_RNG = np.random.default_rng(7)
M = _RNG.standard_normal((3, 4))
A = _RNG.standard_normal((2, 3, 4))
V = _RNG.standard_normal(5)
INTS = _RNG.integers(-5, 6, (3, 4))
BITS = _RNG.integers(0, 64, (3, 4))
IMG = _RNG.standard_normal((2, 4, 5, 6))
SEQ = _RNG.standard_normal((2, 3, 8))
SPECIAL = np.array([0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan])


def t(a: Any) -> tg.Tensor:
    return tg.tensor(np.asarray(a))


def _np_softplus(x):
    return np.logaddexp(0, x)


#: (id, tensorgrad's result, NumPy's) — compared in value and dtype
VALUES: list[tuple[str, Callable[[], Any], Callable[[], Any]]] = [
    (
        "bitwise_and",
        lambda: t(BITS).bitwise_and(t(BITS.T.copy().T[::-1].copy())),
        lambda: BITS & BITS[::-1],
    ),
    (
        "bitwise_or_xor_not",
        lambda: (tg.bitwise_or(t(BITS), 5), t(BITS).bitwise_xor(3), t(BITS).bitwise_not()),
        lambda: (BITS | 5, BITS ^ 3, ~BITS),
    ),
    (
        "shifts",
        lambda: (t(BITS).bitwise_left_shift(2), tg.bitwise_right_shift(t(BITS), 1)),
        lambda: (BITS << 2, BITS >> 1),
    ),
    (
        "signbit_inf",
        lambda: (t(SPECIAL).signbit(), t(SPECIAL).isposinf(), t(SPECIAL).isneginf()),
        lambda: (np.signbit(SPECIAL), np.isposinf(SPECIAL), np.isneginf(SPECIAL)),
    ),
    (
        "nan_to_num",
        lambda: t(SPECIAL).nan_to_num(1.0, 2.0, -3.0),
        lambda: np.nan_to_num(SPECIAL, nan=1.0, posinf=2.0, neginf=-3.0),
    ),
    ("nan_to_num_default", lambda: t(SPECIAL).nan_to_num(), lambda: np.nan_to_num(SPECIAL)),
    (
        "heaviside",
        lambda: t([-1.0, 0.0, 2.0]).heaviside(t([0.5])),
        lambda: np.heaviside([-1.0, 0.0, 2.0], 0.5),
    ),
    ("nextafter", lambda: tg.nextafter(t(M), t(M * 0)), lambda: np.nextafter(M, 0)),
    ("float_power", lambda: t(INTS).float_power(2), lambda: INTS.astype(np.float64) ** 2),
    (
        "fmax_fmin",
        lambda: (
            t([1.0, np.nan, 2.0]).fmax(t([np.nan, 3.0, 1.0])),
            tg.fmin(t([1.0, np.nan]), t([np.nan, np.nan])),
        ),
        lambda: (
            np.fmax([1.0, np.nan, 2.0], [np.nan, 3.0, 1.0]),
            np.fmin([1.0, np.nan], [np.nan, np.nan]),
        ),
    ),
    (
        "frac_fix",
        lambda: (t(M * 3).frac(), t(M * 3).fix(), t(M).sgn()),
        lambda: (M * 3 - np.trunc(M * 3), np.trunc(M * 3), np.sign(M)),
    ),
    (
        "exp2_deg_rad",
        lambda: (t(M).exp2(), t(M).deg2rad(), t(M).rad2deg()),
        lambda: (2.0**M, np.deg2rad(M), np.rad2deg(M)),
    ),
    (
        "logit",
        lambda: (t([0.2, 0.5, 0.9]).logit(), t([0.0, 1.0]).logit(0.1)),
        lambda: (
            np.log(np.array([0.2, 0.5, 0.9]) / (1 - np.array([0.2, 0.5, 0.9]))),
            np.log(np.array([0.1, 0.9]) / np.array([0.9, 0.1])),
        ),
    ),
    (
        "int_math_is_float32",
        lambda: (t(INTS).atan(), t(INTS).exp2()),
        lambda: (np.arctan(INTS).astype(np.float32), np.exp2(INTS).astype(np.float32)),
    ),
    (
        "count_nonzero",
        lambda: (t(INTS).count_nonzero(), tg.count_nonzero(t(INTS), 1)),
        lambda: (np.int64(np.count_nonzero(INTS)), np.count_nonzero(INTS, 1)),
    ),
    (
        "nansum_nanmean",
        lambda: (t(np.where(M > 1, np.nan, M)).nansum(1), t(np.where(M > 1, np.nan, M)).nanmean()),
        lambda: (np.nansum(np.where(M > 1, np.nan, M), 1), np.nanmean(np.where(M > 1, np.nan, M))),
    ),
    (
        "std_var_mean",
        lambda: (*tg.std_mean(t(A), 1), *tg.var_mean(t(A), correction=0)),
        lambda: (A.std(1, ddof=1), A.mean(1), A.var(), A.mean()),
    ),
    (
        "trace",
        lambda: (t(M).trace(), t(INTS).trace()),
        lambda: (np.trace(M), np.int64(np.trace(INTS))),
    ),
    (
        "cumprod",
        lambda: (t(A).cumprod(1), t(INTS).cumprod(0)),
        lambda: (np.cumprod(A, 1), np.cumprod(INTS, 0)),
    ),
    (
        "cummax_values_indices",
        lambda: t([1.0, 1.0, 0.5, 3.0, 2.0]).cummax(0),
        lambda: (np.array([1.0, 1.0, 1.0, 3.0, 3.0]), np.array([0, 1, 1, 3, 3])),
    ),
    (
        "cummin_nan",
        lambda: t([2.0, np.nan, 1.0]).cummin(0),
        lambda: (np.array([2.0, np.nan, np.nan]), np.array([0, 1, 1])),
    ),
    (
        "logcumsumexp",
        lambda: t([-1000.0, 0.0, 1000.0]).logcumsumexp(0),
        lambda: np.logaddexp.accumulate([-1000.0, 0.0, 1000.0]),
    ),
    (
        "median_kthvalue",
        lambda: (t([3.0, 1.0, 4.0, 2.0]).median(), *t(M).kthvalue(2, 1)),
        lambda: (np.float64(2.0), np.sort(M, 1)[:, 1], np.argsort(M, 1)[:, 1]),
    ),
    ("median_dim", lambda: t(M).median(0), lambda: (np.sort(M, 0)[1], np.argsort(M, 0)[1])),
    ("median_nan", lambda: t([1.0, np.nan, 0.5]).median(), lambda: np.float64(np.nan)),
    ("aminmax", lambda: tuple(t(M).aminmax(dim=1)), lambda: (M.min(1), M.max(1))),
    ("argwhere", lambda: tg.argwhere(t(INTS)), lambda: np.argwhere(INTS)),
    (
        "tile",
        lambda: (t(M).tile(2), tg.tile(t(M), (2, 1, 3))),
        lambda: (np.tile(M, 2), np.tile(M, (2, 1, 3))),
    ),
    (
        "movedim",
        lambda: (t(A).movedim(0, 2), tg.moveaxis(t(A), (0, 1), (2, 0))),
        lambda: (np.moveaxis(A, 0, 2), np.moveaxis(A, (0, 1), (2, 0))),
    ),
    (
        "rot90",
        lambda: (t(A).rot90(), t(A).rot90(-1, (1, 2)), t(A).rot90(2)),
        lambda: (np.rot90(A), np.rot90(A, -1, (1, 2)), np.rot90(A, 2)),
    ),
    ("flips", lambda: (t(M).fliplr(), t(M).flipud()), lambda: (np.fliplr(M), np.flipud(M))),
    (
        "tensor_split",
        lambda: t(A).tensor_split(3, 2) + tg.tensor_split(t(A), [1, 3], dim=2),
        lambda: tuple(np.array_split(A, 3, 2)) + tuple(np.split(A, [1, 3], 2)),
    ),
    ("diag_embed", lambda: t(M).diag_embed(1), lambda: np.stack([np.diag(r, 1) for r in M])),
    (
        "diagflat_ravel",
        lambda: (t(M[:2, :2]).diagflat(-1), t(M).ravel()),
        lambda: (np.diagflat(M[:2, :2], -1), M.ravel()),
    ),
    (
        "atleast",
        lambda: (tg.atleast_1d(t(1.5)), tg.atleast_2d(t(V)), tg.atleast_3d(t(M))),
        lambda: (np.atleast_1d(1.5), np.atleast_2d(V), np.atleast_3d(M)),
    ),
    (
        "stacks",
        lambda: (
            tg.hstack([t(V), t(V)]),
            tg.vstack([t(V), t(V)]),
            tg.dstack([t(M), t(M)]),
            tg.column_stack([t(V), t(V)]),
        ),
        lambda: (np.hstack([V, V]), np.vstack([V, V]), np.dstack([M, M]), np.column_stack([V, V])),
    ),
    (
        "broadcast_tensors",
        lambda: tg.broadcast_tensors(t(M[:, :1]), t(V[:4])),
        lambda: tuple(np.broadcast_arrays(M[:, :1], V[:4])),
    ),
    (
        "products",
        lambda: (
            t(M).mv(t(V[:4])),
            tg.inner(t(M), t(A)),
            tg.vdot(t(V), t(V)),
            tg.kron(t(M), t(V[:2])),
        ),
        lambda: (M @ V[:4], np.inner(M, A), np.vdot(V, V), np.kron(M, V[:2])),
    ),
    (
        "add_products",
        lambda: (
            tg.addmm(t(M[:, :3]), t(M), t(M.T[:, :3]), beta=0.5, alpha=2),
            tg.addmv(t(V[:3]), t(M), t(V[:4])),
            tg.baddbmm(t(A[:, :, :3]), t(A), t(A.transpose(0, 2, 1)[:, :, :3])),
        ),
        lambda: (
            0.5 * M[:, :3] + 2 * M @ M.T[:, :3],
            V[:3] + M @ V[:4],
            A[:, :, :3] + A @ A.transpose(0, 2, 1)[:, :, :3],
        ),
    ),
    (
        "addmm_beta_0_ignores_nan",
        lambda: tg.addmm(t(np.full((3, 3), np.nan)), t(M), t(M.T[:, :3]), beta=0),
        lambda: M @ M.T[:, :3],
    ),
    (
        "cross_default_dim",
        lambda: tg.cross(t(A[:, :3]), t(A[:, :3][::-1].copy())),
        lambda: np.cross(A[:, :3], A[:, :3][::-1], axis=1),
    ),
    (
        "einsum",
        lambda: (
            tg.einsum("bij,bkj->bik", t(A), t(A)),
            tg.einsum("ii->i", t(M[:3, :3])),
            tg.einsum("...i,i", t(A), t(V[:4])),
        ),
        lambda: (
            np.einsum("bij,bkj->bik", A, A),
            np.einsum("ii->i", M[:3, :3]),
            np.einsum("...i,i", A, V[:4]),
        ),
    ),
    (
        "take",
        lambda: (t(M).take(t([[0, 5], [11, -1]])), tg.take_along_dim(t(M), t([[1], [0], [3]]), 1)),
        lambda: (
            np.take(M, [[0, 5], [11, -1]]),
            np.take_along_axis(M, np.array([[1], [0], [3]]), 1),
        ),
    ),
    (
        "scatter",
        lambda: t(M).scatter(1, t([[3, 0], [1, 2], [0, 0]]), 9.0),
        lambda: np.array(
            [[9.0, M[0, 1], M[0, 2], 9.0], [M[1, 0], 9.0, 9.0, M[1, 3]], [9.0, *M[2, 1:]]]
        ),
    ),
    (
        "index_add_fill_copy",
        lambda: (
            t(M).index_add(0, t([2, 2]), t(M[:2])),
            t(M).index_fill(1, t([0]), -1.0),
            t(M).index_copy(0, t([1]), t(M[:1] * 0)),
        ),
        lambda: (
            M + np.stack([np.zeros(4), np.zeros(4), M[0] + M[1]]),
            np.concatenate([np.full((3, 1), -1.0), M[:, 1:]], 1),
            np.stack([M[0], np.zeros(4), M[2]]),
        ),
    ),
    (
        "masked_scatter",
        lambda: t(M).masked_scatter(t(M > 0), t(np.arange(12.0))),
        lambda: np.where(M > 0, np.cumsum(M > 0).reshape(3, 4) - 1.0, M),
    ),
    (
        "index_put",
        lambda: t(M).index_put((t([0, 0]), t([1, 1])), t(2.0), accumulate=True),
        lambda: M + np.eye(3, 4, 1)[:, :] * 0 + np.pad([[0, 4.0]], ((0, 2), (0, 2))),
    ),
    (
        "logspace",
        lambda: (tg.logspace(0, 2, 3), tg.logspace(0, 3, 4, base=2.0, dtype=tg.float64)),
        lambda: (np.logspace(0, 2, 3, dtype=np.float32), np.logspace(0, 3, 4, base=2.0)),
    ),
    (
        "tril_triu_indices",
        lambda: (tg.tril_indices(3, 4), tg.triu_indices(3, 3, 1)),
        lambda: (np.stack(np.tril_indices(3, 0, 4)), np.stack(np.triu_indices(3, 1, 3))),
    ),
    (
        "cdist",
        lambda: tg.cdist(t(M), t(A[0])),
        lambda: np.sqrt(((M[:, None] - A[0][None]) ** 2).sum(-1)),
    ),
    # nn.functional
    (
        "activations",
        lambda: (
            F.hardtanh(t(M * 2)),
            F.relu6(t(M * 5)),
            F.logsigmoid(t(M * 40)),
            F.mish(t(M)),
            F.softsign(t(M)),
            F.tanhshrink(t(M)),
        ),
        lambda: (
            np.clip(M * 2, -1, 1),
            np.clip(M * 5, 0, 6),
            -_np_softplus(-M * 40),
            M * np.tanh(_np_softplus(M)),
            M / (1 + np.abs(M)),
            M - np.tanh(M),
        ),
    ),
    (
        "selu_celu_glu",
        lambda: (F.selu(t(M)), F.celu(t(M), 0.5), F.glu(t(M))),
        lambda: (
            1.0507009873554805 * np.where(M > 0, M, 1.6732632423543772 * np.expm1(M)),
            np.where(M > 0, M, 0.5 * np.expm1(M / 0.5)),
            M[:, :2] / (1 + np.exp(-M[:, 2:])),
        ),
    ),
    (
        "hard_shrinks",
        lambda: (
            F.hardsigmoid(t(M * 4)),
            F.hardswish(t(M * 4)),
            F.hardshrink(t(M)),
            F.softshrink(t(M), 0.3),
            F.threshold(t(M), 0.1, -2.0),
        ),
        lambda: (
            np.clip(M * 4 + 3, 0, 6) / 6,
            M * 4 * np.clip(M * 4 + 3, 0, 6) / 6,
            np.where(np.abs(M) > 0.5, M, 0),
            np.sign(M) * np.maximum(np.abs(M) - 0.3, 0),
            np.where(M > 0.1, M, -2.0),
        ),
    ),
    (
        "softmin_normalize",
        lambda: (F.softmin(t(M), 1), F.normalize(t(M)), F.normalize(t(M), p=1, dim=0)),
        lambda: (
            np.exp(-M) / np.exp(-M).sum(1, keepdims=True),
            M / np.linalg.norm(M, axis=1, keepdims=True),
            M / np.abs(M).sum(0, keepdims=True),
        ),
    ),
    (
        "distances",
        lambda: (
            F.cosine_similarity(t(M), t(M[::-1].copy())),
            F.pairwise_distance(t(M), t(M[::-1].copy())),
        ),
        lambda: (
            (M * M[::-1]).sum(1) / np.linalg.norm(M, axis=1) / np.linalg.norm(M[::-1], axis=1),
            np.linalg.norm(M - M[::-1] + 1e-6, axis=-1),
        ),
    ),
    (
        "instance_rms_norm",
        lambda: (F.instance_norm(t(SEQ)), F.rms_norm(t(SEQ), (8,), eps=1e-6)),
        lambda: (
            (SEQ - SEQ.mean(-1, keepdims=True)) / np.sqrt(SEQ.var(-1, keepdims=True) + 1e-5),
            SEQ / np.sqrt((SEQ**2).mean(-1, keepdims=True) + 1e-6),
        ),
    ),
    (
        "local_response_norm",
        lambda: F.local_response_norm(t(SEQ), 2, 0.5, 0.75, 1.0),
        lambda: (
            SEQ
            / (
                1.0
                + 0.5 / 2 * (SEQ**2 + np.concatenate([np.zeros((2, 1, 8)), SEQ[:, :-1] ** 2], 1))
            )
            ** 0.75
        ),
    ),
    (
        "pool1d",
        lambda: (F.max_pool1d(t(SEQ), 2), F.avg_pool1d(t(SEQ), 4, 2)),
        lambda: (
            SEQ.reshape(2, 3, 4, 2).max(-1),
            np.stack([SEQ[..., i : i + 4].mean(-1) for i in (0, 2, 4)], -1),
        ),
    ),
    (
        "adaptive_max_pool2d",
        lambda: F.adaptive_max_pool2d(t(IMG), (1, 2)),
        lambda: np.stack([IMG[..., :3].max((-1, -2)), IMG[..., 3:].max((-1, -2))], -1)[:, :, None],
    ),
    (
        "lp_pool2d",
        lambda: F.lp_pool2d(t(np.abs(IMG)), 3, (5, 3)),
        lambda: np.stack(
            [(np.abs(IMG[..., j : j + 3]) ** 3).sum((-1, -2)) ** (1 / 3) for j in (0, 3)], -1
        )[:, :, None],
    ),
    (
        "soft_margin_loss",
        lambda: F.soft_margin_loss(t(M), t(np.sign(M[::-1]))),
        lambda: np.mean(_np_softplus(-M * np.sign(M[::-1]))),
    ),
]


def _flatten(value: Any) -> list[Any]:
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in _flatten(v)]
    return [value]


@pytest.mark.parametrize(("ours", "expected"), [pytest.param(o, e, id=i) for i, o, e in VALUES])
def test_name_matches_numpy(ours, expected):
    with np.errstate(all="ignore"):
        got, want = _flatten(ours()), _flatten(expected())
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        w = np.asarray(w)
        assert isinstance(g, tg.Tensor)
        assert g.shape == w.shape
        if w.dtype.kind in "biu":
            assert g.dtype == w.dtype
            np.testing.assert_array_equal(g.numpy(), w)
        else:
            assert g.dtype == (w.dtype if w.dtype != np.float32 else np.float32)
            np.testing.assert_allclose(
                g.numpy(), w, rtol=1e-6 if g.dtype == np.float32 else 1e-10, atol=1e-12
            )


#: the compositions outside the op registry, checked by gradcheck (float64)
GRADIENTS: list[tuple[str, Callable[..., Any], tuple]] = [
    ("hardtanh", lambda x: F.hardtanh(x * 2), (M,)),
    ("logsigmoid_mish", lambda x: F.logsigmoid(x) + F.mish(x), (M,)),
    ("selu_celu", lambda x: F.selu(x) + F.celu(x, 0.7), (M,)),
    ("glu", lambda x: F.glu(x, 0), (A[:, :2],)),
    ("hardswish", lambda x: F.hardswish(x * 2), (M,)),
    (
        "shrinks",
        lambda x: F.softshrink(x, 0.3) + F.hardshrink(x, 0.2) + F.softsign(x) + F.tanhshrink(x),
        (M,),
    ),
    ("softmin_threshold", lambda x: F.softmin(x, 1) + F.threshold(x, 0.0, 1.0), (M,)),
    ("normalize", lambda x: F.normalize(x, dim=-1), (A,)),
    ("pairwise_distance", lambda x, y: F.pairwise_distance(x, y), (M, M[[2, 0, 1]])),
    ("instance_norm", lambda x: F.instance_norm(x), (SEQ,)),
    ("local_response_norm", lambda x: F.local_response_norm(x, 3), (SEQ,)),
    ("pools", lambda x: F.max_pool1d(x, 2).sum() + F.avg_pool1d(x, 3, 1, 1).sum(), (SEQ,)),
    ("adaptive_max_pool2d", lambda x: F.adaptive_max_pool2d(x, (2, 3)), (IMG[:1],)),
    ("lp_pool2d", lambda x: F.lp_pool2d(x.abs() + 0.5, 2, 2), (IMG[:1],)),
    ("soft_margin_loss", lambda x: F.soft_margin_loss(x, t(np.sign(M[::-1]))), (M,)),
    ("float_power_frac_exp2", lambda x: x.abs().float_power(1.5) + (x * 3).frac() + x.exp2(), (M,)),
    ("logit_deg2rad", lambda x: (x.sigmoid()).logit(0.05) + x.deg2rad(), (M,)),
    ("nan_to_num_nansum", lambda x: x.nan_to_num().nansum(1) + x.nanmean(), (M,)),
    ("fmax_fmin", lambda x, y: x.fmax(y) + x.fmin(y * 0.5), (M, M[[2, 0, 1]])),
    (
        "trace_products",
        lambda x, v: x.mv(v).sum() + x.trace() + tg.inner(x, x).sum() + tg.vdot(v, v),
        (M[:, :3], V[:3]),
    ),
    (
        "add_products",
        lambda b, x, y: tg.addmm(b, x, y, beta=0.5, alpha=2),
        (M[:, :3], M, M.T[:, :3].copy()),
    ),
    (
        "shapes",
        lambda x: (
            x.tile(2, 1).sum(0)
            + x.rot90().T
            + x.fliplr()
            + x.movedim(0, 1).T
            + x.ravel().reshape(3, 4)
        ),
        (M,),
    ),
    (
        "tensor_split_diag",
        lambda x: (
            tg.cat(list(x.tensor_split(3, 1)), 1) + x.diag_embed().sum(-1) + x.diagflat()[:3, :4]
        ),
        (M,),
    ),
    (
        "stacks",
        lambda v, w: tg.hstack([v, w]).sum() + tg.vstack([v, w]).sum(0) + tg.dstack([v, w]).sum(),
        (V, V[::-1].copy()),
    ),
    (
        "take",
        lambda x: (
            x.take(t([[0, 5], [11, 5]])).sum() + x.take_along_dim(t([[1], [0], [3]]), 1).sum()
        ),
        (M,),
    ),
    (
        "nextafter_xlogy_zero",
        lambda x, y: x.nextafter(y) + tg.xlogy(x * 0, y.abs() + 0.5),
        (M, M[::-1] + 0.25),  # (no ties: there PyTorch's gradient is 0, the slope 1)
    ),
]


@pytest.mark.parametrize(("fn", "arrays"), [pytest.param(f, a, id=i) for i, f, a in GRADIENTS])
def test_composition_gradients(fn, arrays):
    inputs = [tg.tensor(np.array(a, dtype=np.float64), requires_grad=True) for a in arrays]
    assert gradcheck(fn, inputs)


def test_cumprod_gradient_at_zeros_is_exact():
    """d/dx_k of Π_{i ≤ j} x_i leaves x_k out: exact where factors are 0 (not 0/0)."""
    x = tg.tensor([2.0, 0.0, 3.0, 0.0, 5.0], dtype=tg.float64, requires_grad=True)
    x.cumprod(0).sum().backward()
    # outputs: 2, 0, 0, 0, 0; only the first zero's factor matters after it: 2 + 2·3
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 2 + 6, 0.0, 0.0, 0.0])


def test_logcumsumexp_gradient_is_finite_far_out():
    x = tg.tensor([-1000.0, 0.0, 1000.0], dtype=tg.float64, requires_grad=True)
    x.logcumsumexp(0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 1.0, 1.0])


def test_median_without_dim_shares_ties():
    x = tg.tensor([1.0, 2.0, 2.0, 3.0, 5.0], dtype=tg.float64, requires_grad=True)
    x.median().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 0.5, 0.5, 0.0, 0.0])


def test_in_place_forms_record_the_change():
    x = tg.tensor([0.1, 0.5, -0.3], dtype=tg.float64, requires_grad=True)
    y = x * 1
    y.asin_()
    y.index_add_(0, tg.tensor([0, 0]), x[:2])
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 1 / np.sqrt(1 - x.numpy() ** 2) + [1, 1, 0])


def test_in_place_forms_refuse_a_leaf_that_requires_grad():
    x = tg.tensor([0.1, 0.5], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        x.asin_()
    with pytest.raises(RuntimeError, match="leaf"):
        x.index_fill_(0, tg.tensor([0]), 1.0)


def test_einsum_is_a_few_matmuls():
    """einsum records matmuls, permutes and reshapes: no op of its own to keep in sync."""
    a = tg.randn(2, 3, 4, requires_grad=True)
    out = tg.einsum("bij,bjk->bik", a, a.transpose(1, 2))
    names, stack, seen = set(), [out.grad_fn], set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen or not isinstance(node, Node):
            continue
        seen.add(id(node))
        names.add(node.op.name)
        stack.extend(node.parents or ())
    assert "matmul" in names and names <= {"matmul", "reshape", "transpose", "broadcastto"}


def test_einsum_broadcasts_a_size_1_dim_against_any_size_zero_too():
    """PyTorch's einsum broadcasts a subscript of size 1 against the other operand's size,
    0 included (an empty contraction: zeros)."""
    np.testing.assert_array_equal(tg.einsum("ij,ij->i", tg.ones(2, 1), tg.ones(2, 3)), [3, 3])
    for a, b in [((2, 1), (2, 0)), ((2, 0), (2, 1))]:
        out = tg.einsum("...i,...i->...", tg.ones(*a), tg.ones(*b))
        assert out.shape == (2,) and not out.numpy().any()


def test_einsum_errors_name_the_problem():
    with pytest.raises(RuntimeError, match="subscript j has size 3 for operand 1"):
        tg.einsum("ij,ij->", tg.ones(2, 4), tg.ones(2, 3))
    with pytest.raises(RuntimeError, match="output subscript k does not appear"):
        tg.einsum("ij->k", tg.ones(2, 3))
    with pytest.raises(TypeError, match="sublist format"):
        tg.einsum(tg.ones(2), [0])


def test_type_promotion_helpers():
    assert tg.result_type(t(INTS), 2.5) == tg.float32
    assert tg.result_type(t(INTS).int(), t(np.int64(3))) == tg.int32
    assert tg.promote_types(tg.uint8, tg.int8) == tg.int16
    assert tg.can_cast(tg.int32, tg.float32) and not tg.can_cast(tg.float64, tg.int64)
    assert tg.can_cast(tg.float64, tg.float32)  # same category: allowed, as PyTorch


def test_new_layers_have_pytorchs_parameters():
    norm = tg.nn.GroupNorm(2, 4)
    assert [n for n, _ in norm.named_parameters()] == ["weight", "bias"]
    assert tg.nn.RMSNorm(6).weight.shape == (6,)
    assert sorted(tg.nn.InstanceNorm2d(3, track_running_stats=True).state_dict()) == [
        "num_batches_tracked",
        "running_mean",
        "running_var",
    ]
    assert list(tg.nn.InstanceNorm1d(3).state_dict()) == []
    assert math.isclose(tg.nn.CELU(0.5).alpha, 0.5)
    assert repr(tg.nn.Hardtanh(-2.0, 2.0)) == "Hardtanh(min_val=-2.0, max_val=2.0)"


def test_scatter_reduce_prod_gradient_at_zeros_is_exact():
    """Each factor's gradient is the product of the others, also where some are 0."""
    x = tg.tensor([2.0, 0.0, 3.0], dtype=tg.float64, requires_grad=True)
    src = tg.tensor([0.0, 1.5, 2.0, 3.0], dtype=tg.float64, requires_grad=True)
    out = x.scatter_reduce(0, tg.tensor([0, 0, 1, 0]), src, "prod")
    np.testing.assert_allclose(out.detach().numpy(), [0.0, 0.0, 3.0])
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 2.0, 1.0])  # at 0: 0·1.5·3; 2; nothing
    np.testing.assert_allclose(src.grad.numpy(), [9.0, 0.0, 0.0, 0.0])  # 2·1.5·3 for the zero


def test_cumprod_second_derivative_at_zeros():
    x = tg.tensor(
        [[1.5, 0.0, 2.0, -1.0], [0.0, 2.0, 0.0, 3.0]], dtype=tg.float64, requires_grad=True
    )
    assert tg.autograd.gradgradcheck(lambda t: t.cumprod(1), [x])
