"""PyTorch's less common math, scattering and shape functions against PyTorch itself (float64;
skipped where PyTorch is not installed): values, result dtypes, gradients of a weighted sum of
the outputs, and error types. Each case is one function of the library (``tg`` or ``torch``), so
the very same code runs on both; the NumPy-only checks of the same names are in
``test_more_names_numpy.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tensorgrad as tg

torch = pytest.importorskip("torch")

from tests.core.test_torch_parity import evaluate  # noqa: E402 - after the skip

_RNG = np.random.default_rng(2222)
A = _RNG.standard_normal((2, 3, 4))
M = _RNG.standard_normal((3, 4))
S = _RNG.standard_normal((4, 4))
V = _RNG.standard_normal(5)
W = _RNG.standard_normal(5)
U = _RNG.uniform(-0.9, 0.9, (3, 4))  # inside (−1, 1): asin, atanh, erfinv
P = _RNG.uniform(0.3, 3.0, (3, 4))  # positive: lgamma, digamma, acosh - 1
INTS = _RNG.integers(-5, 6, (3, 4))
BITS = _RNG.integers(0, 64, (3, 4))
MASK = M > 0
IMG = _RNG.standard_normal((2, 4, 5, 6))
SEQ = _RNG.standard_normal((2, 4, 9))
INDEX = np.array([[0, 1, 2, 0], [2, 0, 2, 1]])
SPECIAL = np.array([0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan])

F = "nn.functional"


def fn_of(lib: Any) -> Any:
    return lib.nn.functional


#: (id, function of (lib, *tensors), inputs); floating inputs require grad
CASES: list[tuple[str, Callable[..., Any], tuple]] = [
    # ---- inverse trig and hyperbolic
    ("asin_acos_atan", lambda lib, x: (x.asin(), x.acos(), x.atan(), lib.arcsin(x)), (U,)),
    ("sinh_cosh", lambda lib, x: (x.sinh(), lib.cosh(x)), (M,)),
    ("asinh_atanh", lambda lib, x, u: (x.asinh(), u.atanh(), lib.arctanh(u)), (M, U)),
    ("acosh", lambda lib, x: (x + 1).acosh(), (P,)),
    (
        "atan2",
        lambda lib, y, x: (y.atan2(x), lib.atan2(y, x), lib.arctan2(x, y)),
        (M, M[::-1].copy()),
    ),
    ("atan2_broadcast", lambda lib, y, x: lib.atan2(y, x), (A, V[:4].copy())),
    ("atan2_ints", lambda lib, y, x: lib.atan2(y, x), (INTS, INTS.T.copy().T + 1)),
    ("trig_ints", lambda lib, x: (x.atan(), x.sinh(), x.asinh()), (INTS,)),
    # ---- special functions
    ("erf_erfc", lambda lib, x: (x.erf(), x.erfc(), lib.erf(x), lib.erfc(x)), (M,)),
    ("erfinv", lambda lib, x: x.erfinv(), (U,)),
    ("lgamma_digamma", lambda lib, x: (x.lgamma(), x.digamma(), lib.lgamma(x)), (P,)),
    ("lgamma_negative", lambda lib, x: x.lgamma(), (np.array([-0.5, -1.5, -2.7]),)),
    ("polygamma", lambda lib, x: (lib.polygamma(1, x), x.polygamma(2)), (P,)),
    ("i0", lambda lib, x: (x.i0(), lib.i0(x)), (M * 3,)),
    ("sinc", lambda lib, x: (x.sinc(), lib.sinc(x)), (np.array([0.0, 0.3, -1.7, 2.0, 1e-9]),)),
    ("exp2", lambda lib, x: (x.exp2(), lib.exp2(x)), (M,)),
    ("logit", lambda lib, x: (x.logit(), x.logit(0.1), lib.logit(x, eps=0.25)), ((U + 1) / 2,)),
    ("deg_rad", lambda lib, x: (x.deg2rad(), lib.rad2deg(x)), (M,)),
    ("frac", lambda lib, x: (x.frac(), lib.frac(x * 3)), (M * 3,)),
    ("fix_sgn", lambda lib, x: (x.fix(), x.sgn(), lib.fix(x)), (M * 3,)),
    ("signbit_inf", lambda lib, x: (x.signbit(), x.isposinf(), lib.isneginf(x)), (SPECIAL,)),
    ("nan_to_num", lambda lib, x: (x.nan_to_num(), x.nan_to_num(1.0, 2.0, -3.0)), (SPECIAL,)),
    ("nan_to_num_float32", lambda lib, x: x.float().nan_to_num(), (SPECIAL,)),
    # ---- two operands
    ("remainder", lambda lib, x, y: (x.remainder(y), lib.remainder(x, 0.7), x.fmod(y)), (M * 3, P)),
    ("remainder_ints", lambda lib, x: (x.remainder(3), x.fmod(-3), lib.remainder(x, -2)), (INTS,)),
    ("floor_divide", lambda lib, x: (x.floor_divide(2), lib.floor_divide(x, -3)), (INTS,)),
    (
        "copysign",
        lambda lib, x, y: (x.copysign(y), lib.copysign(x, -1.0)),
        (M + 0.1, M[::-1].copy()),
    ),
    ("hypot", lambda lib, x, y: (x.hypot(y), lib.hypot(x, y)), (M, M[::-1].copy())),
    ("logaddexp", lambda lib, x, y: (x.logaddexp(y), lib.logaddexp2(x, y)), (M * 30, A[0] * 30)),
    ("logaddexp_inf", lambda lib, x: x.logaddexp(x), (np.array([-np.inf, np.inf, 1.0]),)),
    (
        "xlogy",
        lambda lib, x, y: (x.xlogy(y), lib.xlogy(x, 2.0)),
        (np.array([0.0, 1.5, 2.0]), np.array([3.0, 0.5, np.nan])),
    ),
    (
        "xlogy_zero",
        lambda lib, x, y: lib.xlogy(x, y.detach()),
        (np.array([0.0, 0.0, 1.0]), np.array([0.0, 2.0, 1.0])),
    ),
    (
        "heaviside",
        lambda lib, x, v: x.detach().heaviside(v.detach()),
        (np.array([-1.0, 0.0, 2.0, np.nan]), np.array([0.5])),
    ),
    ("index_fill_negative_index", lambda lib, x: x.index_fill(0, lib.tensor([-1]), 2.0), (M,)),
    ("nextafter", lambda lib, x, y: lib.nextafter(x, y), (M, M * 0)),
    ("float_power", lambda lib, x, y: (x.float_power(2), lib.float_power(x, y)), (P, M)),
    ("float_power_int", lambda lib, x: x.float_power(2), (INTS,)),
    (
        "fmax_fmin",
        lambda lib, x, y: (x.fmax(y), lib.fmin(x, y)),
        (np.array([1.0, np.nan, 2.0, np.nan]), np.array([np.nan, 3.0, 2.0, np.nan])),
    ),
    (
        "fmax_ties",
        lambda lib, x, y: (lib.fmax(x, y), lib.fmin(x, y)),
        (np.array([1.0, 2.0]), np.array([1.0, 3.0])),
    ),
    (
        "lerp",
        lambda lib, x, y: (x.lerp(y, 0.3), lib.lerp(x, y, 0.8), x.lerp(y, y.sigmoid())),
        (M, M[::-1].copy()),
    ),
    (
        "bitwise",
        lambda lib, x, y: (
            x.bitwise_and(y),
            lib.bitwise_or(x, y),
            x.bitwise_xor(5),
            x.bitwise_not(),
        ),
        (BITS, BITS.T.copy().T[::-1].copy()),
    ),
    (
        "bitwise_bool",
        lambda lib, m: (m.bitwise_and(~m), m.bitwise_not(), m.bitwise_xor(True)),
        (MASK,),
    ),
    ("shifts", lambda lib, x: (x.bitwise_left_shift(2), lib.bitwise_right_shift(x, 1)), (BITS,)),
    # ---- scans and order statistics
    ("cumprod", lambda lib, x: (x.cumprod(0), x.cumprod(dim=-1), lib.cumprod(x, 1)), (A,)),
    (
        "cumprod_zeros",
        lambda lib, x: x.cumprod(1),
        (
            np.array(
                [[1.5, 0.0, 2.0, 0.0, 3.0], [0.0, 2.0, 3.0, 4.0, 0.5], [2.0, 3.0, 1.0, 0.5, 0.0]]
            ),
        ),
    ),
    ("cumprod_int", lambda lib, x: x.cumprod(0), (INTS,)),
    (
        "cumprod_small_ints",
        lambda lib, x, m: (x.int().cumprod(1), x.byte().cumprod(0), m.cumprod(1)),
        (BITS % 4, MASK),
    ),
    ("nansum_small_ints", lambda lib, x: (x.byte().nansum(), x.int().nansum(0)), (BITS,)),
    ("sgn_of_bools", lambda lib, m: m.sgn(), (MASK,)),
    ("cummax_cummin", lambda lib, x: (x.cummax(1), x.cummin(dim=0), lib.cummax(x, -1)), (A,)),
    (
        "cummax_ties_nan",
        lambda lib, x: (x.cummax(0), x.cummin(0)),
        (np.array([1.0, 1.0, 0.5, np.nan, 2.0, np.nan]),),
    ),
    ("cummax_int", lambda lib, x: x.cummax(1), (INTS,)),
    ("logcumsumexp", lambda lib, x: (x.logcumsumexp(1), lib.logcumsumexp(x * 100, 0)), (A,)),
    (
        "logcumsumexp_extreme",
        lambda lib, x: x.logcumsumexp(0),
        (np.array([-1000.0, 0.0, 1000.0, -np.inf]),),
    ),
    ("median", lambda lib, x: (x.median(), x.median(1), x.median(dim=0, keepdim=True)), (A,)),
    ("median_even", lambda lib, x: (x.median(), x.median(0)), (np.array([3.0, 1.0, 4.0, 2.0]),)),
    ("median_int", lambda lib, x: (x.median(), x.median(1)), (INTS,)),
    (
        "kthvalue",
        lambda lib, x: (x.kthvalue(2), x.kthvalue(1, 0), lib.kthvalue(x, 3, 2, True)),
        (A,),
    ),
    (
        "aminmax",
        lambda lib, x: (x.aminmax(), lib.aminmax(x, dim=1), x.aminmax(dim=0, keepdim=True)),
        (A,),
    ),
    (
        "count_nonzero",
        lambda lib, x: (x.count_nonzero(), lib.count_nonzero(x, 1), x.count_nonzero((0, 1))),
        (INTS,),
    ),
    (
        "nansum_nanmean",
        lambda lib, x: (x.nansum(), x.nanmean(1), lib.nansum(x, 0, keepdim=True)),
        (np.where(np.eye(3, 4, dtype=bool) | (M > 1), np.nan, M),),
    ),
    (
        "std_var_mean",
        lambda lib, x: (
            lib.std_mean(x),
            lib.var_mean(x, 1),
            lib.std_mean(x, dim=0, unbiased=False),
        ),
        (A,),
    ),
    ("trace", lambda lib, x, i: (x.trace(), lib.trace(i)), (M, INTS)),
    # ---- scatter and index
    (
        "scatter",
        lambda lib, x, s: (
            x.scatter(0, lib.tensor(INDEX[:, :3].copy()), s[:, :3]),
            x.scatter(1, lib.tensor(INDEX[:2, :2].copy()), 2.5),
        ),
        (M, _RNG.standard_normal((2, 4))),
    ),
    (
        "scatter_reduce_sum_mean",
        lambda lib, x, s: tuple(
            x.scatter_reduce(0, lib.tensor(INDEX), s, r, include_self=b)
            for r in ("sum", "mean")
            for b in (True, False)
        ),
        (M, _RNG.standard_normal((2, 4))),
    ),
    (
        "scatter_reduce_max_min",
        lambda lib, x, s: tuple(
            x.scatter_reduce(0, lib.tensor(INDEX), s, r, include_self=b)
            for r in ("amax", "amin")
            for b in (True, False)
        ),
        (M, _RNG.standard_normal((2, 4))),
    ),
    (
        "scatter_reduce_prod",
        lambda lib, x, s: tuple(
            x.scatter_reduce(1, lib.tensor(INDEX[:, :3].copy()), s, "prod", include_self=b)
            for b in (True, False)
        ),
        (M, _RNG.standard_normal((2, 3))),
    ),
    (
        "scatter_reduce_prod_zeros",
        lambda lib, x, s: x.scatter_reduce(0, lib.tensor([0, 0, 1, 0]), s, "prod"),
        (np.array([2.0, 0.0, 3.0]), np.array([0.0, 1.5, 2.0, 3.0])),
    ),
    (
        "scatter_add_",
        lambda lib, x, s: x.clone().scatter_add_(0, lib.tensor(INDEX), s),
        (M, _RNG.standard_normal((2, 4))),
    ),
    (
        "scatter_",
        lambda lib, x, s: x.clone().scatter_(1, lib.tensor(INDEX[:, :2].copy()), s),
        (M, _RNG.standard_normal((2, 2))),
    ),
    (
        "scatter_reduce_keyword",
        lambda lib, x, s: x.detach().scatter(0, lib.tensor(INDEX), s.detach(), reduce="add"),
        (M, _RNG.standard_normal((2, 4))),
    ),
    (
        "index_add",
        lambda lib, x, s: (
            x.index_add(0, lib.tensor([2, 0, 2]), s),
            lib.index_add(x, 0, lib.tensor([1, 1, 0]), s, alpha=-2),
        ),
        (M, _RNG.standard_normal((3, 4))),
    ),
    (
        "index_add_dim1",
        lambda lib, x, s: x.clone().index_add_(1, lib.tensor([3, 0]), s),
        (M, _RNG.standard_normal((3, 2))),
    ),
    (
        "index_copy_fill",
        lambda lib, x, s: (
            x.index_copy(1, lib.tensor([3, 0]), s),
            x.index_fill(0, lib.tensor([2]), -1.0),
        ),
        (M, _RNG.standard_normal((3, 2))),
    ),
    (
        "index_fill_tensor",
        lambda lib, x, v: x.index_fill(1, lib.tensor([0, 2]), v),
        (M, np.array(1.5)),
    ),
    (
        "masked_scatter",
        lambda lib, x, s: x.masked_scatter(lib.tensor(MASK), s),
        (M, _RNG.standard_normal(12)),
    ),
    (
        "masked_scatter_broadcast",
        lambda lib, x, s: x.masked_scatter(lib.tensor(MASK[0]), s),
        (M, _RNG.standard_normal(12)),
    ),
    (
        "index_put",
        lambda lib, x, v: (
            x.clone().index_put_(
                (lib.tensor([0, 2, 0]), lib.tensor([1, 1, 1])), v, accumulate=True
            ),
            x.index_put((lib.tensor([1]),), v[:1]),
        ),
        (M, np.array([1.0, 2.0, 3.0])),
    ),
    (
        "take",
        lambda lib, x: (x.take(lib.tensor([[0, 5], [11, -1]])), lib.take(x, lib.tensor([3, 3]))),
        (M,),
    ),
    (
        "take_along_dim",
        lambda lib, x: (
            x.take_along_dim(lib.tensor([[1], [0], [3]]), 1),
            lib.take_along_dim(x, lib.tensor([0, 7])),
        ),
        (M,),
    ),
    (
        "take_along_dim_broadcast",
        lambda lib, x: lib.take_along_dim(x, lib.tensor([[[0], [2], [1]]]), dim=2),
        (A,),
    ),
    ("argwhere", lambda lib, x: (lib.argwhere(x), x.argwhere()), (INTS,)),
    # ---- shapes
    ("tile", lambda lib, x: (x.tile(2), x.tile((2, 1, 3)), lib.tile(x, (1, 2))), (M,)),
    (
        "movedim",
        lambda lib, x: (x.movedim(0, 2), x.moveaxis((0, 1), (2, 0)), lib.movedim(x, -1, 0)),
        (A,),
    ),
    (
        "rot90",
        lambda lib, x: (x.rot90(), x.rot90(2), x.rot90(3, (1, 2)), lib.rot90(x, -1, [0, 2])),
        (A,),
    ),
    ("flips", lambda lib, x: (x.fliplr(), lib.flipud(x)), (M,)),
    (
        "tensor_split",
        lambda lib, x: (
            x.tensor_split(3, 2),
            lib.tensor_split(x, [1, 3], dim=2),
            x.tensor_split(5),
        ),
        (A,),
    ),
    (
        "diag_embed",
        lambda lib, x: (x.diag_embed(), lib.diag_embed(x, 1), x.diag_embed(-1, 0, 2)),
        (M,),
    ),
    ("diagflat", lambda lib, x: (x.diagflat(), lib.diagflat(x, -2)), (M[:2, :2].copy(),)),
    ("ravel_H", lambda lib, x: (x.ravel(), lib.ravel(x.T), x.H, x.mH), (M,)),
    (
        "atleast",
        lambda lib, s, v, x: (
            lib.atleast_1d(s),
            lib.atleast_2d(v),
            lib.atleast_3d(x),
            lib.atleast_3d(v),
            lib.atleast_2d(s, v),
        ),
        (np.array(1.5), V, M),
    ),
    (
        "stacks",
        lambda lib, v, w: (
            lib.hstack([v, w]),
            lib.vstack((v, w)),
            lib.dstack([v, w]),
            lib.column_stack([v, w]),
            lib.row_stack([v, w]),
        ),
        (V, W),
    ),
    (
        "stacks_2d",
        lambda lib, x, y: (
            lib.hstack([x, y]),
            lib.vstack([x, y]),
            lib.dstack([x, y]),
            lib.column_stack([x, y]),
        ),
        (M, M * 2),
    ),
    (
        "broadcast_tensors",
        lambda lib, x, y: lib.broadcast_tensors(x, y),
        (M[:, :1].copy(), V[:4].copy()),
    ),
    ("broadcast_shapes", lambda lib: lib.broadcast_shapes((2, 1), (3,), (1, 1, 1)), ()),
    # ---- products
    ("mv", lambda lib, x, v: (x.mv(v), lib.mv(x, v)), (M, V[:4].copy())),
    ("inner", lambda lib, x, y, v: (lib.inner(x, y), x.inner(x), lib.inner(v, v)), (M, A, V)),
    ("vdot", lambda lib, v, w: (lib.vdot(v, w), v.vdot(w)), (V, W)),
    (
        "kron",
        lambda lib, x, y, v: (lib.kron(x, y), x.kron(v), lib.kron(v, x)),
        (M[:2, :2].copy(), M, V[:2].copy()),
    ),
    (
        "addmm",
        lambda lib, b, x, y: (
            lib.addmm(b, x, y),
            b.addmm(x, y, beta=0.5, alpha=2),
            lib.addmm(b[0], x, y),
        ),
        (M[:, :3].copy(), M, M.T.copy()[:, :3].copy()),
    ),
    (
        "addmv_baddbmm",
        lambda lib, b, x, v, c, p, q: (lib.addmv(b, x, v, alpha=3), lib.baddbmm(c, p, q, beta=2)),
        (
            M[:, 0].copy(),
            M,
            V[:4].copy(),
            A[:, :, :3].copy(),
            A,
            A.transpose(0, 2, 1)[:, :, :3].copy(),
        ),
    ),
    (
        "einsum",
        lambda lib, x, y: (
            lib.einsum("bij,bjk->bik", x, y),
            lib.einsum("ijk->kj", x),
            lib.einsum("bij,bkj", x, x),
            lib.einsum("...j,...j->...", x, x),
        ),
        (A, A.transpose(0, 2, 1).copy()),
    ),
    (
        "einsum_trace_outer",
        lambda lib, s, v, w: (
            lib.einsum("ii", s),
            lib.einsum("ii->i", s),
            lib.einsum("i,j->ij", v, w),
            lib.einsum("i,i->", v, w),
            lib.einsum(" i , j ", v, w),
        ),
        (S, V, W),
    ),
    ("einsum_three", lambda lib, x, y, z: lib.einsum("ab,bc,cd->ad", x, y, z), (M, M.T.copy(), M)),
    ("einsum_list", lambda lib, x, y: lib.einsum("ij,jk", [x, y]), (M, M.T.copy())),
    (
        "einsum_attention",
        lambda lib, q, k: lib.einsum("bhqd,bhkd->bhqk", q, k).softmax(-1),
        (IMG, IMG[:, :, :3].copy()),
    ),
    (
        "einsum_broadcast_size1",
        lambda lib, x, y: lib.einsum("ij,ij->i", x, y),
        (M[:, :1].copy(), M),
    ),
    (
        "tensordot",
        lambda lib, x, y: (
            lib.tensordot(x, y.T, 1),
            lib.tensordot(x, x, ([0, 2], [0, 2])),
            lib.tensordot(x, x, 3),
        ),
        (A, M),
    ),
    (
        "cross",
        lambda lib, x, y: (
            lib.cross(x, y, dim=1),
            x.cross(y, 1),
            lib.linalg.cross(x, y, dim=1) if lib is torch else x.cross(y, 1),
        ),
        (A[:, :3].copy(), A[:, :3].copy()[::-1].copy()),
    ),
    (
        "cdist",
        lambda lib, x, y: (lib.cdist(x, y), lib.cdist(x, y, p=1), lib.cdist(x, y, 3.0)),
        (M, _RNG.standard_normal((5, 4))),
    ),
    # ---- creation and types
    (
        "logspace",
        lambda lib: (
            lib.logspace(0, 2, 5),
            lib.logspace(-1, 1, 3, base=2.0),
            lib.logspace(0, 3, 4, dtype=lib.float64),
        ),
        (),
    ),
    (
        "tril_triu_indices",
        lambda lib: (lib.tril_indices(3, 4), lib.tril_indices(4, 3, -1), lib.triu_indices(3, 3, 1)),
        (),
    ),
    (
        "result_type",
        lambda lib, x, i: tuple(
            str(d).removeprefix("torch.")
            for d in (lib.result_type(x, i), lib.result_type(i, 2.5), lib.result_type(i, 2))
        ),
        (M, INTS),
    ),
    (
        "promote_can_cast",
        lambda lib: (
            str(lib.promote_types(lib.int32, lib.float32)).removeprefix("torch."),
            str(lib.promote_types(lib.uint8, lib.int8)).removeprefix("torch."),
            lib.can_cast(lib.float64, lib.int32),
            lib.can_cast(lib.int32, lib.float32),
            lib.can_cast(lib.float64, lib.float32),
        ),
        (),
    ),
    # ---- in place
    ("inplace_unary", lambda lib, x: (x * 1).asin_().atan_().sinh_(), (U,)),
    (
        "inplace_binary",
        lambda lib, x, y: ((x * 1).atan2_(y), (x * 1).lerp_(y, 0.5), (x * 3).fmod_(1.5)),
        (M, M[::-1].copy()),
    ),
    # ---- nn.functional: activations
    (
        "hardtanh_relu6",
        lambda lib, x: (
            fn_of(lib).hardtanh(x * 3),
            fn_of(lib).hardtanh(x, -0.5, 0.2),
            fn_of(lib).relu6(x * 5),
        ),
        (M,),
    ),
    (
        "hardtanh_threshold_ints",
        lambda lib, i: (
            fn_of(lib).hardtanh(i),
            fn_of(lib).relu6(i * 2),
            fn_of(lib).threshold(i, 0, 9),
        ),
        (INTS,),
    ),
    ("logsigmoid_mish", lambda lib, x: (fn_of(lib).logsigmoid(x * 30), fn_of(lib).mish(x)), (M,)),
    (
        "selu_celu",
        lambda lib, x: (fn_of(lib).selu(x), fn_of(lib).celu(x), fn_of(lib).celu(x, 0.5)),
        (M,),
    ),
    ("glu", lambda lib, x: (fn_of(lib).glu(x), fn_of(lib).glu(x, 0)), (A[:, :2].copy(),)),
    (
        "hard_sigmoid_swish",
        lambda lib, x: (fn_of(lib).hardsigmoid(x * 4), fn_of(lib).hardswish(x * 4)),
        (M,),
    ),
    (
        "shrinks",
        lambda lib, x: (
            fn_of(lib).hardshrink(x),
            fn_of(lib).softshrink(x, 0.3),
            fn_of(lib).tanhshrink(x),
            fn_of(lib).softsign(x),
        ),
        (M,),
    ),
    (
        "threshold_softmin",
        lambda lib, x: (
            fn_of(lib).threshold(x, 0.1, -2.0),
            fn_of(lib).softmin(x, 1),
            fn_of(lib).softmin(x, dim=0),
        ),
        (M,),
    ),
    (
        "normalize",
        lambda lib, x: (
            fn_of(lib).normalize(x),
            fn_of(lib).normalize(x, p=1, dim=-1),
            fn_of(lib).normalize(x * 0),
        ),
        (A,),
    ),
    (
        "cosine_similarity",
        lambda lib, x, y: (
            fn_of(lib).cosine_similarity(x, y),
            fn_of(lib).cosine_similarity(x, y[:1], dim=-1),
        ),
        (A, A[::-1].copy()),
    ),
    (
        "cosine_similarity_zero",
        lambda lib, x, y: fn_of(lib).cosine_similarity(x, y * 0, dim=0),
        (V, W),
    ),
    (
        "pairwise_distance",
        lambda lib, x, y: (
            fn_of(lib).pairwise_distance(x, y),
            fn_of(lib).pairwise_distance(x, y, p=1, keepdim=True),
        ),
        (M, M[::-1].copy()),
    ),
    # ---- nn.functional: normalisation
    (
        "group_norm",
        lambda lib, x, w, b: (
            fn_of(lib).group_norm(x, 2, w, b),
            fn_of(lib).group_norm(x, 4),
            fn_of(lib).group_norm(x, 1, eps=0.1),
        ),
        (IMG, V[:4].copy(), W[:4].copy()),
    ),
    (
        "instance_norm",
        lambda lib, x, w, b: (
            fn_of(lib).instance_norm(x),
            fn_of(lib).instance_norm(x, weight=w, bias=b),
        ),
        (IMG, V[:4].copy(), W[:4].copy()),
    ),
    (
        "rms_norm",
        lambda lib, x, w: (
            fn_of(lib).rms_norm(x, (4,)),
            fn_of(lib).rms_norm(x, [3, 4], w, eps=1e-3),
        ),
        (A, M),
    ),
    (
        "local_response_norm",
        lambda lib, x: (
            fn_of(lib).local_response_norm(x, 3),
            fn_of(lib).local_response_norm(x, 2, 0.1, 0.5, 2.0),
        ),
        (IMG,),
    ),
    (
        "local_response_norm_3d",
        lambda lib, x: fn_of(lib).local_response_norm(x, 5, alpha=1.0),
        (SEQ,),
    ),
    # ---- nn.functional: pooling and losses
    (
        "max_avg_pool1d",
        lambda lib, x: (
            fn_of(lib).max_pool1d(x, 3),
            fn_of(lib).max_pool1d(x, 2, 1, 1),
            fn_of(lib).avg_pool1d(x, 3, 2),
            fn_of(lib).avg_pool1d(x, 2, padding=1, count_include_pad=False),
        ),
        (SEQ,),
    ),
    ("max_pool1d_indices", lambda lib, x: fn_of(lib).max_pool1d(x, 3, return_indices=True), (SEQ,)),
    (
        "adaptive_max_pool2d",
        lambda lib, x: (
            fn_of(lib).adaptive_max_pool2d(x, 2),
            fn_of(lib).adaptive_max_pool2d(x, (3, 4), return_indices=True),
            fn_of(lib).adaptive_max_pool2d(x[0], (None, 4)),
        ),
        (IMG,),
    ),
    (
        "lp_pool2d",
        lambda lib, x: (
            fn_of(lib).lp_pool2d(x, 2, 2),
            fn_of(lib).lp_pool2d(x.abs(), 3, (2, 3), stride=1),
        ),
        (IMG,),
    ),
    (
        "soft_margin_loss",
        lambda lib, x, y: (
            fn_of(lib).soft_margin_loss(x, y.detach().sign()),
            fn_of(lib).soft_margin_loss(x * 30, y.detach().sign(), reduction="none"),
            fn_of(lib).soft_margin_loss(x, y.detach().sign(), reduction="sum"),
        ),
        (M, M[::-1].copy()),
    ),
]


#: cases where PyTorch's own kernel is less accurate, with the tolerance they need: its
#: trigamma and polygamma series agree with SciPy's to about 1e-9 relative; its hardsigmoid
#: backward multiplies by the float32 constant 1/6 even in float64 (1.7e-8 relative)
LOOSE = {"lgamma_digamma": 1e-8, "polygamma": 1e-8, "hard_sigmoid_swish": 1e-7}


def assert_same(name: str, fn: Callable[..., Any], *arrays: Any) -> None:
    """Outputs (dtype, shape, values, or plain values) and gradients equal PyTorch's."""
    with np.errstate(all="ignore"):
        ours, our_grads = evaluate(tg, fn, arrays)
        theirs, their_grads = evaluate(torch, fn, arrays)
    assert len(ours) == len(theirs)
    rtol = LOOSE.get(name, 1e-12)
    for a, b in zip(ours, theirs, strict=True):
        if isinstance(b, tuple) and len(b) == 3 and isinstance(b[2], np.ndarray):
            assert a[0] == b[0], f"dtype {a[0]}, PyTorch's {b[0]}"
            assert a[1] == b[1], f"shape {a[1]}, PyTorch's {b[1]}"
            tolerance = 1e-6 if a[0] in ("float32", "float16") else rtol
            np.testing.assert_allclose(a[2], b[2], rtol=tolerance, atol=tolerance)
        else:
            assert a == b
    for g, h in zip(our_grads, their_grads, strict=True):
        np.testing.assert_allclose(g, h, rtol=rtol, atol=rtol)


@pytest.mark.filterwarnings("ignore:The reduce argument of torch.scatter")
@pytest.mark.parametrize(
    ("name", "fn", "arrays"), [pytest.param(i, f, a, id=i) for i, f, a in CASES]
)
def test_name_matches_pytorch(name, fn, arrays):
    assert_same(name, fn, *arrays)


# --------------------------------------------------------------------------- bad calls
#: calls PyTorch refuses: tensorgrad must raise the same exception type (or a subclass)
ERRORS: list[tuple[str, Callable[..., Any]]] = [
    ("remainder_int_by_zero", lambda lib: lib.tensor(INTS).remainder(0)),
    ("bitwise_of_floats", lambda lib: lib.tensor(M).bitwise_and(lib.tensor(M))),
    ("bitwise_not_of_floats", lambda lib: lib.tensor(M).bitwise_not()),
    ("hypot_of_ints", lambda lib: lib.hypot(lib.tensor([3]), lib.tensor([4]))),
    ("frac_of_ints", lambda lib: lib.tensor(INTS).frac()),
    ("fix_of_bools", lambda lib: lib.tensor(MASK).fix()),
    ("logaddexp_of_ints", lambda lib: lib.logaddexp(lib.tensor(INTS), lib.tensor(INTS))),
    ("logcumsumexp_of_ints", lambda lib: lib.tensor(INTS).logcumsumexp(0)),
    ("nextafter_of_ints", lambda lib: lib.nextafter(lib.tensor(INTS), lib.tensor(INTS))),
    ("shift_of_bools", lambda lib: lib.tensor(MASK).bitwise_left_shift(lib.tensor(MASK))),
    ("trace_of_bool", lambda lib: lib.tensor(MASK[:, :3]).trace()),
    ("lerp_number_end", lambda lib: lib.lerp(lib.tensor(M), 3.0, 0.5)),
    ("polygamma_negative_n", lambda lib: lib.polygamma(-1, lib.tensor(P))),
    (
        "heaviside_mixed_dtypes",
        lambda lib: lib.tensor(M).heaviside(lib.tensor([1], dtype=lib.int64)),
    ),
    ("lerp_mixed_dtypes", lambda lib: lib.tensor(M).lerp(lib.tensor(M).float(), 0.5)),
    ("cumprod_dim_out_of_range", lambda lib: lib.tensor(M).cumprod(2)),
    ("cummax_dim_out_of_range", lambda lib: lib.tensor(M).cummax(-3)),
    ("kthvalue_k_out_of_range", lambda lib: lib.tensor(M).kthvalue(5)),
    ("median_of_empty_dim", lambda lib: lib.tensor(np.ones((0, 3))).median(0)),
    ("scatter_float_index", lambda lib: lib.tensor(M).scatter(0, lib.tensor(M), lib.tensor(M))),
    ("scatter_index_out_of_bounds", lambda lib: lib.tensor(M).scatter(0, lib.tensor([[3]]), 1.0)),
    ("scatter_index_ndim", lambda lib: lib.tensor(M).scatter(0, lib.tensor([0]), 1.0)),
    (
        "scatter_src_dtype",
        lambda lib: lib.tensor(M).scatter(0, lib.tensor([[0]]), lib.tensor([[1.0]]).float()),
    ),
    (
        "scatter_reduce_bad_reduce",
        lambda lib: lib.tensor(M).scatter_reduce(0, lib.tensor(INDEX), lib.tensor(M), "median"),
    ),
    (
        "index_add_out_of_bounds",
        lambda lib: lib.tensor(M).index_add(0, lib.tensor([3]), lib.tensor(M[:1])),
    ),
    (
        "index_add_wrong_source",
        lambda lib: lib.tensor(M).index_add(0, lib.tensor([0, 1]), lib.tensor(M[:1])),
    ),
    (
        "index_add_negative_index",
        lambda lib: lib.tensor(M).index_add(0, lib.tensor([-1]), lib.tensor(M[:1])),
    ),
    (
        "index_copy_negative_index",
        lambda lib: lib.tensor(M).index_copy(0, lib.tensor([-1]), lib.tensor(M[:1])),
    ),
    (
        "index_copy_out_of_bounds",
        lambda lib: lib.tensor(M).index_copy(0, lib.tensor([3]), lib.tensor(M[:1])),
    ),
    ("index_fill_out_of_bounds", lambda lib: lib.tensor(M).index_fill(0, lib.tensor([3]), 1.0)),
    (
        "index_add_2d_index",
        lambda lib: lib.tensor(M).index_add(0, lib.tensor([[0]]), lib.tensor(M[:1])),
    ),
    (
        "index_fill_1d_value",
        lambda lib: lib.tensor(M).index_fill(0, lib.tensor([0]), lib.tensor([1.0])),
    ),
    (
        "masked_scatter_small_source",
        lambda lib: lib.tensor(M).masked_scatter(lib.tensor(MASK), lib.tensor([1.0])),
    ),
    (
        "masked_scatter_float_mask",
        lambda lib: lib.tensor(M).masked_scatter(lib.tensor(M), lib.tensor(M)),
    ),
    ("take_out_of_range", lambda lib: lib.tensor(M).take(lib.tensor([12]))),
    ("take_float_index", lambda lib: lib.tensor(M).take(lib.tensor([0.5]))),
    (
        "index_copy_count",
        lambda lib: lib.tensor(M).index_copy(0, lib.tensor([0]), lib.tensor(M)),
    ),
    (
        "index_copy_rank",
        lambda lib: lib.tensor(M).index_copy(0, lib.tensor([0]), lib.tensor(M[0])),
    ),
    (
        "index_copy_slices",
        lambda lib: lib.tensor(M).index_copy(0, lib.tensor([0]), lib.tensor(M[:, :2])),
    ),
    ("cumprod__of_bools", lambda lib: lib.tensor([True, False]).cumprod_(0)),
    ("cumsum__of_bools", lambda lib: lib.tensor([True, False]).cumsum_(0)),
    (
        "local_response_norm_int8",
        lambda lib: lib.nn.functional.local_response_norm(lib.ones(1, 2, 3, dtype=lib.int8), 2),
    ),
    (
        "lp_pool2d_int32_integer_power",
        lambda lib: lib.nn.functional.lp_pool2d(lib.ones(1, 2, 2, 2, dtype=lib.int32), 2, 2),
    ),
    ("take_along_dim_ndim", lambda lib: lib.tensor(M).take_along_dim(lib.tensor([0]), 1)),
    ("movedim_repeated", lambda lib: lib.tensor(A).movedim((0, 0), (1, 2))),
    ("movedim_lengths", lambda lib: lib.tensor(A).movedim((0, 1), (1,))),
    ("rot90_same_dims", lambda lib: lib.tensor(A).rot90(1, (1, 1))),
    ("rot90_of_1d", lambda lib: lib.tensor(V).rot90()),
    ("fliplr_of_1d", lambda lib: lib.tensor(V).fliplr()),
    ("tensor_split_of_0d", lambda lib: lib.tensor(1.0).tensor_split(2)),
    ("tensor_split_zero_sections", lambda lib: lib.tensor(V).tensor_split(0)),
    ("diag_embed_same_dims", lambda lib: lib.tensor(M).diag_embed(0, 1, 1)),
    ("H_of_3d", lambda lib: lib.tensor(A).H),
    ("mv_of_3d", lambda lib: lib.tensor(A).mv(lib.tensor(V[:4]))),
    ("inner_shapes", lambda lib: lib.inner(lib.tensor(M), lib.tensor(V))),
    ("cross_no_size_3", lambda lib: lib.cross(lib.tensor(M), lib.tensor(M), dim=1)),
    (
        "cross_dtypes",
        lambda lib: lib.cross(lib.tensor(A[:, :3]), lib.tensor(A[:, :3]).float(), dim=1),
    ),
    ("tensordot_mismatch", lambda lib: lib.tensordot(lib.tensor(A), lib.tensor(M), 1)),
    ("tensordot_negative_dims", lambda lib: lib.tensordot(lib.tensor(A), lib.tensor(M), -1)),
    ("cdist_columns", lambda lib: lib.cdist(lib.tensor(M), lib.tensor(A[0].T.copy()))),
    ("cdist_of_1d", lambda lib: lib.cdist(lib.tensor(V), lib.tensor(V))),
    ("einsum_too_many_operands", lambda lib: lib.einsum("ij", lib.tensor(M), lib.tensor(M))),
    ("einsum_wrong_ndim", lambda lib: lib.einsum("ijk", lib.tensor(M))),
    ("einsum_sizes", lambda lib: lib.einsum("ij,ij->", lib.tensor(M), lib.tensor(M.T.copy()))),
    ("einsum_unknown_output", lambda lib: lib.einsum("ij->k", lib.tensor(M))),
    ("einsum_dtypes", lambda lib: lib.einsum("ij,ij->", lib.tensor(M), lib.tensor(M).float())),
    ("hstack_of_nothing", lambda lib: lib.hstack([])),
    ("broadcast_tensors_mismatch", lambda lib: lib.broadcast_tensors(lib.tensor(M), lib.tensor(V))),
    ("glu_odd", lambda lib: lib.nn.functional.glu(lib.tensor(V))),
    ("group_norm_groups", lambda lib: lib.nn.functional.group_norm(lib.tensor(IMG), 3)),
    ("group_norm_of_1d", lambda lib: lib.nn.functional.group_norm(lib.tensor(V), 1)),
    ("rms_norm_shape", lambda lib: lib.nn.functional.rms_norm(lib.tensor(M), (3,))),
    ("max_pool1d_of_4d", lambda lib: lib.nn.functional.max_pool1d(lib.tensor(IMG), 2)),
    ("softshrink_negative", lambda lib: lib.nn.functional.softshrink(lib.tensor(M), -1.0)),
    ("hardtanh_bounds", lambda lib: lib.nn.functional.hardtanh(lib.tensor(M), 1.0, -1.0)),
    ("dropout1d_of_4d", lambda lib: lib.nn.functional.dropout1d(lib.tensor(IMG))),
    ("alpha_dropout_p", lambda lib: lib.nn.functional.alpha_dropout(lib.tensor(M), 1.5, True)),
    ("group_norm_module_groups", lambda lib: lib.nn.GroupNorm(3, 4)),
]


@pytest.mark.parametrize("call", [pytest.param(f, id=i) for i, f in ERRORS])
def test_bad_call_raises_pytorchs_error_type(call):
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(Exception) as ours:
        call(tg)
    assert isinstance(ours.value, type(theirs.value)), (type(ours.value), type(theirs.value))


# --------------------------------------------------------------------------- layers
#: (id, constructor of (lib), input) for the new layers: parameters, buffers, output
LAYERS: list[tuple[str, Callable[..., Any], np.ndarray]] = [
    ("GroupNorm", lambda lib: lib.nn.GroupNorm(2, 4), IMG),
    ("GroupNorm_no_affine", lambda lib: lib.nn.GroupNorm(4, 4, affine=False, eps=1e-3), IMG),
    ("RMSNorm", lambda lib: lib.nn.RMSNorm(6), IMG),
    ("RMSNorm_two_dims", lambda lib: lib.nn.RMSNorm([5, 6], eps=1e-4), IMG),
    ("InstanceNorm2d", lambda lib: lib.nn.InstanceNorm2d(4), IMG),
    (
        "InstanceNorm2d_affine_stats",
        lambda lib: lib.nn.InstanceNorm2d(4, affine=True, track_running_stats=True),
        IMG,
    ),
    ("InstanceNorm1d", lambda lib: lib.nn.InstanceNorm1d(4), SEQ),
    ("InstanceNorm1d_unbatched", lambda lib: lib.nn.InstanceNorm1d(4), SEQ[0]),
    ("LocalResponseNorm", lambda lib: lib.nn.LocalResponseNorm(3), IMG),
    ("MaxPool1d", lambda lib: lib.nn.MaxPool1d(3, 2, 1), SEQ),
    ("AvgPool1d", lambda lib: lib.nn.AvgPool1d(2), SEQ),
    ("AdaptiveMaxPool2d", lambda lib: lib.nn.AdaptiveMaxPool2d((2, 3)), IMG),
    ("LPPool2d", lambda lib: lib.nn.LPPool2d(2, 2), IMG),
    ("Hardtanh", lambda lib: lib.nn.Hardtanh(-0.5, 0.5), M),
    ("ReLU6", lambda lib: lib.nn.ReLU6(), M * 5),
    ("LogSigmoid", lambda lib: lib.nn.LogSigmoid(), M),
    ("Mish", lambda lib: lib.nn.Mish(), M),
    ("SELU", lambda lib: lib.nn.SELU(), M),
    ("CELU", lambda lib: lib.nn.CELU(0.5), M),
    ("GLU", lambda lib: lib.nn.GLU(), M),
    ("Hardsigmoid", lambda lib: lib.nn.Hardsigmoid(), M * 4),
    ("Hardswish", lambda lib: lib.nn.Hardswish(), M * 4),
    ("Hardshrink", lambda lib: lib.nn.Hardshrink(0.3), M),
    ("Softshrink", lambda lib: lib.nn.Softshrink(), M),
    ("Softsign", lambda lib: lib.nn.Softsign(), M),
    ("Tanhshrink", lambda lib: lib.nn.Tanhshrink(), M),
    ("Threshold", lambda lib: lib.nn.Threshold(0.2, -1.0), M),
    ("Softmin", lambda lib: lib.nn.Softmin(dim=1), M),
    ("AlphaDropout_eval", lambda lib: lib.nn.AlphaDropout(0.3).eval(), M),
    ("Dropout1d_eval", lambda lib: lib.nn.Dropout1d(0.3).eval(), SEQ),
]


@pytest.mark.parametrize(("make", "data"), [pytest.param(f, d, id=i) for i, f, d in LAYERS])
def test_layer_matches_pytorch(make, data):
    """Same parameter and buffer names and shapes, the same output and input gradient (the
    layers' parameters start as PyTorch's: ones and zeros)."""
    ours, theirs = make(tg), make(torch)
    assert [(n, tuple(p.shape)) for n, p in ours.named_parameters()] == [
        (n, tuple(p.shape)) for n, p in theirs.named_parameters()
    ]
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    ours.double()
    theirs.double()
    x_ours = tg.tensor(data, requires_grad=True)
    x_theirs = torch.tensor(data, requires_grad=True)
    out_ours, out_theirs = ours(x_ours), theirs(x_theirs)
    out_ours = out_ours[0] if isinstance(out_ours, tuple) else out_ours
    out_theirs = out_theirs[0] if isinstance(out_theirs, tuple) else out_theirs
    np.testing.assert_allclose(
        out_ours.detach().numpy(), out_theirs.detach().numpy(), rtol=1e-10, atol=1e-12
    )
    weights = np.random.default_rng(3).standard_normal(out_ours.shape)
    (out_ours * tg.tensor(weights)).sum().backward()
    (out_theirs * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(x_ours.grad.numpy(), x_theirs.grad.numpy(), rtol=1e-7, atol=1e-10)
    for (name, p), q in zip(ours.named_parameters(), theirs.parameters(), strict=True):
        np.testing.assert_allclose(
            p.grad.numpy(), q.grad.numpy(), rtol=1e-10, atol=1e-10, err_msg=name
        )
    for name, buffer in theirs.named_buffers():
        np.testing.assert_allclose(
            ours.state_dict()[name].numpy(), buffer.numpy(), rtol=1e-10, err_msg=name
        )


def test_instance_norm_running_statistics_match_pytorch():
    ours = tg.nn.InstanceNorm2d(4, track_running_stats=True).double()
    theirs = torch.nn.InstanceNorm2d(4, track_running_stats=True).double()
    for scale in (1.0, 3.0):
        ours(tg.tensor(IMG * scale))
        theirs(torch.tensor(IMG * scale))
    for name, buffer in theirs.state_dict().items():
        np.testing.assert_allclose(ours.state_dict()[name].numpy(), buffer.numpy(), rtol=1e-12)
    ours.eval()
    theirs.eval()
    np.testing.assert_allclose(
        ours(tg.tensor(IMG)).numpy(), theirs(torch.tensor(IMG)).numpy(), rtol=1e-10
    )


def test_alpha_dropout_keeps_selu_statistics():
    """Not PyTorch's random stream, so compare the property it is built for: SELU's fixed
    point (mean 0, variance 1) survives the dropout."""
    tg.manual_seed(0)
    x = tg.randn(200_000, dtype=tg.float64)
    out = tg.nn.functional.alpha_dropout(x, 0.2, training=True).numpy()
    assert abs(out.mean()) < 0.01 and abs(out.var() - 1) < 0.01
    alpha, p = 1.7580993408473766, 0.2
    a = 1 / np.sqrt((alpha**2 * p + 1) * (1 - p))
    dropped = np.isclose(out, -alpha * a * (1 - p))  # where every dropped unit lands
    assert abs(dropped.mean() - p) < 0.01
