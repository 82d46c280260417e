"""The PyTorch-named Tensor methods and functions against PyTorch itself (float64; skipped
where PyTorch is not installed): values, result dtypes, gradients (the backward of a
weighted sum of the outputs) and error types for bad calls; ``tg.tensor``'s dtype
inference against ``torch.tensor``; and the type promotion of binary ops against
``torch.result_type``.

Each case is one function of the library (``tg`` or ``torch``) and its tensors, so the very
same code runs on both.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorgrad as tg

torch = pytest.importorskip("torch")

_RNG = np.random.default_rng(1915)
A = _RNG.standard_normal((2, 3, 4))  # distinct values: no ties for max, sort, topk
M = _RNG.standard_normal((3, 4))
V = _RNG.standard_normal(5)
INTS = _RNG.integers(-5, 6, (3, 4))
MASK = M > 0
WITH_ZEROS = np.where(np.abs(M) < 0.5, 0.0, M)  # rows with none, one and several zeros


def dtype_name(dtype: Any) -> str:
    """A dtype of either library as NumPy spells it ('float32', 'int64', 'bool')."""
    return str(dtype).removeprefix("torch.")


def leaves(lib: Any, arrays: tuple[np.ndarray, ...]) -> list[Any]:
    """The arrays as tensors of ``lib``; floating ones require grad."""
    return [
        lib.tensor(a.copy(), requires_grad=a.dtype.kind == "f") if isinstance(a, np.ndarray) else a
        for a in arrays
    ]


def flat(result: Any) -> list[Any]:
    """A result (a tensor, a number, a shape, or a tuple of them) as a flat list."""
    if isinstance(result, (tuple, list)) and not isinstance(result, (torch.Size, tg.Size)):
        return [item for part in result for item in flat(part)]
    return [result]


def evaluate(lib: Any, fn: Callable[..., Any], arrays: tuple) -> tuple[list, list]:
    """``fn(lib, *tensors)``'s outputs (as comparable values) and its inputs' gradients of
    the weighted sum of the floating outputs that require grad."""
    tensors = leaves(lib, arrays)
    outputs = flat(fn(lib, *tensors))
    described, loss = [], None
    weights = np.random.default_rng(0)
    for out in outputs:
        if isinstance(out, (tg.Tensor, torch.Tensor)):
            array = out.detach().numpy().copy()
            described.append((dtype_name(out.dtype), array.shape, array))
            if out.requires_grad:
                w = weights.standard_normal(array.shape)
                term = (out * lib.tensor(w, dtype=out.dtype)).sum()
                loss = term if loss is None else loss + term
        else:
            described.append(tuple(out) if isinstance(out, (torch.Size, tg.Size)) else out)
    if loss is not None:
        loss.backward()
    grads = []
    for t in tensors:
        if isinstance(t, (tg.Tensor, torch.Tensor)) and t.requires_grad:
            grads.append(np.zeros(t.shape) if t.grad is None else t.grad.numpy().copy())
    return described, grads


def assert_same(fn: Callable[..., Any], *arrays: Any) -> None:
    ours, our_grads = evaluate(tg, fn, arrays)
    theirs, their_grads = evaluate(torch, fn, arrays)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs, strict=True):
        if isinstance(b, tuple) and len(b) == 3 and isinstance(b[2], np.ndarray):
            assert a[0] == b[0], f"dtype {a[0]}, PyTorch's {b[0]}"
            assert a[1] == b[1], f"shape {a[1]}, PyTorch's {b[1]}"
            tolerance = 1e-6 if a[0] in ("float32", "float16") else 1e-12  # libm's rounding
            np.testing.assert_allclose(a[2], b[2], rtol=tolerance, atol=tolerance)
        else:
            assert a == b
            assert type(a) is type(b) or (isinstance(a, int) and isinstance(b, int))
    for g, h in zip(our_grads, their_grads, strict=True):
        np.testing.assert_allclose(g, h, rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------- methods
#: (id, function of (lib, *tensors), inputs); floating inputs require grad
METHODS: list[tuple[str, Callable[..., Any], tuple]] = [
    # sizes
    ("size", lambda lib, x: x.size(), (A,)),
    ("size_dim", lambda lib, x: (x.size(1), x.size(-1)), (A,)),
    ("dim_numel", lambda lib, x: (x.dim(), x.numel(), x.ndim), (A,)),
    # reductions: dim/keepdim, NumPy's axis/keepdims, tuples of dims, all elements
    ("sum", lambda lib, x: (x.sum(), x.sum(1), x.sum(dim=(0, 2), keepdim=True)), (A,)),
    ("sum_axis", lambda lib, x: x.sum(axis=-1, keepdims=True), (A,)),
    ("sum_int", lambda lib, x: (x.sum(), x.sum(0)), (INTS,)),
    ("sum_bool", lambda lib, x: x.sum(dim=1), (MASK,)),
    ("sum_dtype", lambda lib, x: x.sum(dtype=lib.float64), (INTS,)),
    ("mean", lambda lib, x: (x.mean(), x.mean(dim=1, keepdim=True), x.mean(axis=(0, 1))), (A,)),
    ("mean_int_dtype", lambda lib, x: x.mean(dtype=lib.float64), (INTS,)),
    ("var", lambda lib, x: (x.var(), x.var(1), x.var(dim=0, unbiased=False)), (A,)),
    ("var_correction", lambda lib, x: x.var(dim=(0, 2), correction=0, keepdim=True), (A,)),
    ("std", lambda lib, x: (x.std(), x.std(dim=2, keepdim=True), x.std(axis=0)), (A,)),
    ("std_unbiased", lambda lib, x: x.std(1, unbiased=False), (A,)),
    ("logsumexp", lambda lib, x: (x.logsumexp(1), x.logsumexp(dim=(0, 2), keepdim=True)), (A,)),
    ("amax", lambda lib, x: (x.amax(), x.amax(dim=1), x.amax(dim=(0, 2), keepdim=True)), (A,)),
    ("amin", lambda lib, x: (x.amin(dim=-1), x.amin(axis=0, keepdims=True)), (A,)),
    ("max", lambda lib, x: x.max(), (A,)),
    ("max_dim", lambda lib, x: x.max(dim=1), (A,)),
    ("max_dim_keepdim", lambda lib, x: x.max(2, keepdim=True), (A,)),
    ("max_axis", lambda lib, x: x.max(axis=0, keepdims=True), (A,)),
    ("max_named", lambda lib, x: (x.max(1).values, x.max(1).indices), (A,)),
    ("max_tensor", lambda lib, x, y: x.max(y), (M, M[::-1].copy())),
    ("min", lambda lib, x: (x.min(), x.min(dim=-1), x.min(0, keepdim=True)), (A,)),
    ("argmax", lambda lib, x: (x.argmax(), x.argmax(1), x.argmax(dim=2, keepdim=True)), (A,)),
    ("argmax_axis", lambda lib, x: x.argmax(axis=0, keepdims=True), (A,)),
    ("argmin", lambda lib, x: (x.argmin(), x.argmin(-1), x.argmin(dim=0, keepdim=True)), (A,)),
    ("any_all", lambda lib, x: (x.any(), x.all(), x.any(dim=1), x.all(1, keepdim=True)), (MASK,)),
    # shapes
    ("view", lambda lib, x: (x.view(6, 4), x.view(-1), x.view((4, -1))), (A,)),
    ("view_as", lambda lib, x, y: x.view_as(y), (A[0].copy(), M)),
    ("reshape_as", lambda lib, x, y: x.reshape_as(y), (A[0].copy(), M.T.copy())),
    ("expand", lambda lib, x: (x.expand(2, 5, 4), x.expand(-1, 5, -1)), (A[:, :1].copy(),)),
    ("expand_new_dims", lambda lib, x: x.expand(3, 2, 3, 4), (A,)),
    ("expand_as", lambda lib, x, y: x.expand_as(y), (M[:1].copy(), M)),
    ("repeat", lambda lib, x: (x.repeat(2, 1, 1, 2), x.repeat(1, 2, 3)), (A,)),
    ("permute", lambda lib, x: (x.permute(2, 0, 1), x.permute((1, 0, 2))), (A,)),
    ("transpose", lambda lib, x: (x.transpose(0, 2), x.transpose(-1, 1)), (A,)),
    ("flatten", lambda lib, x: (x.flatten(), x.flatten(1), x.flatten(0, 1)), (A,)),
    ("flatten_0d", lambda lib, x: x.flatten(), (np.array(2.5),)),
    ("unflatten", lambda lib, x: (x.unflatten(2, (2, 2)), x.unflatten(-1, (2, -1))), (A,)),
    ("squeeze", lambda lib, x: (x.squeeze(), x.squeeze(1), x.squeeze(0)), (A[:, :1].copy(),)),
    ("unsqueeze", lambda lib, x: (x.unsqueeze(0), x.unsqueeze(-1), x.unsqueeze(2)), (A,)),
    ("t", lambda lib, x, v: (x.t(), v.t()), (M, V)),
    ("T", lambda lib, x: x.T, (M,)),
    ("mT", lambda lib, x: x.mT, (A,)),
    ("mm", lambda lib, x, y: x.mm(y), (M, M.T.copy())),
    ("bmm", lambda lib, x, y: x.bmm(y), (A, A.transpose(0, 2, 1).copy())),
    ("tg_flatten", lambda lib, x: lib.flatten(x, 1), (A,)),
    ("cat", lambda lib, x, y: (lib.cat([x, y], 1), lib.cat((x, y), dim=-1)), (A, A * 2)),
    ("cat_axis", lambda lib, x, y: lib.cat([x, y], axis=0), (A, A * 2)),
    ("cat_promotes", lambda lib, x, y: lib.cat([x, y]), (INTS, M)),
    ("stack", lambda lib, x, y: (lib.stack([x, y]), lib.stack((x, y), dim=-1)), (M, M * 2)),
    # comparisons
    ("eq", lambda lib, x, y: (x.eq(y), x.eq(0.5), x.ne(y)), (M, M.round(0))),
    ("lt_le_gt_ge", lambda lib, x, y: (x.lt(y), x.le(y), x.gt(0), x.ge(y)), (M, M.round(0))),
    ("compare_ints", lambda lib, x: (x.eq(2), x.lt(0), x.ge(1.5)), (INTS,)),
    # copies and casts
    ("clone", lambda lib, x: x.clone(), (M,)),
    ("detach", lambda lib, x: (x.detach(), x.detach().requires_grad), (M,)),
    ("float_double", lambda lib, x: (x.float(), x.double(), x.float().double()), (M,)),
    ("long_int_bool", lambda lib, x: (x.long(), x.int(), x.bool()), (M * 3,)),
    ("type_as", lambda lib, x, y: (x.type_as(y), y.type_as(x)), (INTS, M)),
    # norms
    ("norm", lambda lib, x: (x.norm(), x.norm(2, 1), x.norm(p=1, dim=(0, 2), keepdim=True)), (A,)),
    ("norm_inf", lambda lib, x: (x.norm(float("inf")), x.norm(-float("inf"), dim=1)), (A,)),
    ("norm_3_0", lambda lib, x: (x.norm(3, dim=-1), x.norm(0), x.norm(p="fro")), (A,)),
    # indexing
    ("masked_fill", lambda lib, x, m: x.masked_fill(m, -1.5), (M, MASK)),
    ("masked_fill_0d_tensor", lambda lib, x, m: x.masked_fill(m, lib.tensor(2.0)), (M, MASK)),
    ("masked_fill_int", lambda lib, x, m: x.masked_fill(m, 2.7), (INTS, MASK)),
    ("gather", lambda lib, x, i: x.gather(1, i), (A, np.array([[[0, 2, 1, 0]], [[2, 2, 0, 1]]]))),
    ("gather_repeats", lambda lib, x, i: x.gather(0, i), (M, np.array([[2, 2, 0, 2]]))),
    (
        "scatter_add",
        lambda lib, x, i, s: x.scatter_add(0, i, s),
        (M, np.array([[0, 1, 2, 0], [0, 0, 2, 1]]), _RNG.standard_normal((2, 4))),
    ),
    ("topk", lambda lib, x: (x.topk(2), x.topk(2, dim=1), x.topk(1, largest=False)), (A,)),
    ("sort", lambda lib, x: (x.sort(), x.sort(dim=0), x.sort(1, descending=True)), (A,)),
    ("prod", lambda lib, x: (x.prod(), x.prod(1), x.prod(dim=-1, keepdim=True)), (A,)),
    ("prod_axis", lambda lib, x: x.prod(axis=0, keepdims=True), (A,)),
    ("prod_function", lambda lib, x: (lib.prod(x), lib.prod(x, 1)), (M,)),
    ("prod_zeros", lambda lib, x: (x.prod(), x.prod(0), x.prod(1, keepdim=True)), (WITH_ZEROS,)),
    ("prod_0d", lambda lib, x: (x.prod(), x.prod(0), x.prod(-1, keepdim=True)), (np.array(-1.5),)),
    ("prod_empty", lambda lib, x: (x.prod(), x.prod(0), x.prod(1)), (np.zeros((0, 3)),)),
    ("prod_int", lambda lib, x: (x.prod(), x.prod(0)), (INTS,)),
    ("prod_int32", lambda lib, x: x.int().prod(1), (INTS,)),
    ("prod_bool", lambda lib, x: (x.prod(), x.prod(dim=1)), (MASK,)),
    ("prod_dtype", lambda lib, x: (x.prod(dtype=lib.float64), x.prod(1, dtype=lib.int16)), (INTS,)),
    ("cumsum", lambda lib, x: (x.cumsum(0), x.cumsum(dim=-1), x.cumsum(axis=1)), (A,)),
    ("cumsum_int", lambda lib, x: (x.cumsum(1), x.cumsum(0, dtype=lib.float64)), (INTS,)),
    ("cumsum_bool", lambda lib, x: x.cumsum(0), (MASK,)),
    # clamp: number and tensor bounds
    ("clamp", lambda lib, x: (x.clamp(-0.5, 0.5), x.clamp(min=0), x.clamp(max=0.2)), (M,)),
    ("clip", lambda lib, x: (x.clip(-0.5, 0.5), lib.clamp(x, min=-0.1)), (M,)),
    (
        "clamp_tensor_bounds",
        lambda lib, x, lo, hi: (x.clamp(lo, hi), x.clamp(min=lo), x.clamp(max=hi)),
        (M, np.full(4, -0.5), np.full((3, 1), 0.4)),
    ),
    ("clamp_min_above_max", lambda lib, x, lo, hi: x.clamp(lo, hi), (M, M * 0 + 0.5, M * 0 - 0.5)),
    ("clamp_ints", lambda lib, x: (x.clamp(-2, 2), x.clamp(-2.5, 2.5), x.clamp(max=1.5)), (INTS,)),
    # pointwise
    ("log1p_expm1", lambda lib, x: (x.log1p(), x.expm1(), lib.log1p(x), lib.expm1(x)), (M * 0.5,)),
    ("log1p_expm1_tiny", lambda lib, x: (x.log1p(), x.expm1()), (np.array([1e-12, -3e-9]),)),
    ("float_functions_of_ints", lambda lib, x: (x.exp(), x.sqrt(), x.log1p()), (np.abs(INTS),)),
]


@pytest.mark.parametrize(("fn", "arrays"), [pytest.param(f, a, id=i) for i, f, a in METHODS])
def test_method_matches_pytorch(fn, arrays):
    assert_same(fn, *arrays)


# --------------------------------------------------------------------------- factories
def describe(t: Any) -> tuple:
    return dtype_name(t.dtype), tuple(t.shape), t.requires_grad


FACTORIES: list[tuple[str, Callable[..., Any], tuple]] = [
    ("zeros_like", lambda lib, x: lib.zeros_like(x), (INTS,)),
    ("ones_like", lambda lib, x: (lib.ones_like(x), lib.ones_like(x, dtype=lib.float64)), (M,)),
    ("full_like", lambda lib, x: (lib.full_like(x, 7), lib.full_like(x, 2.5)), (INTS,)),
    ("zeros_like_grad", lambda lib, x: lib.zeros_like(x, requires_grad=True), (M,)),
    ("from_numpy", lambda lib: lib.from_numpy(INTS), ()),
    ("from_numpy_float32", lambda lib: lib.from_numpy(M.astype(np.float32)), ()),
    ("from_numpy_bool", lambda lib: lib.from_numpy(MASK), ()),
    ("linspace", lambda lib: (lib.linspace(0, 1, 5), lib.linspace(-2, 2, steps=3)), ()),
    ("linspace_dtype", lambda lib: lib.linspace(0, 1, 4, dtype=lib.float64), ()),
    ("linspace_one", lambda lib: lib.linspace(3, 7, 1), ()),
]


@pytest.mark.parametrize(("fn", "arrays"), [pytest.param(f, a, id=i) for i, f, a in FACTORIES])
def test_factory_matches_pytorch(fn, arrays):
    ours = flat(fn(tg, *[tg.tensor(a) for a in arrays]))
    theirs = flat(fn(torch, *[torch.tensor(a) for a in arrays]))
    for a, b in zip(ours, theirs, strict=True):
        assert describe(a) == describe(b)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-7)


RANDOM_FACTORIES: list[tuple[str, Callable[..., Any]]] = [
    ("randn_like", lambda lib, x: lib.randn_like(x)),
    ("randn_like_dtype", lambda lib, x: lib.randn_like(x, dtype=lib.float64)),
    ("rand_like", lambda lib, x: lib.rand_like(x)),
    ("rand_like_float64", lambda lib, x: lib.rand_like(x.double())),
    ("randint", lambda lib, x: lib.randint(0, 5, (3, 2))),
    ("randint_high_only", lambda lib, x: lib.randint(5, (4,))),
    ("randint_dtype", lambda lib, x: lib.randint(-3, 3, size=(2,), dtype=lib.int32)),
    ("empty", lambda lib, x: lib.empty(2, 3)),
    ("empty_tuple_dtype", lambda lib, x: lib.empty((2, 3), dtype=lib.int64)),
    ("empty_like", lambda lib, x: lib.empty_like(x)),
]


@pytest.mark.parametrize("fn", [pytest.param(f, id=i) for i, f in RANDOM_FACTORIES])
def test_random_and_empty_factories_match_pytorch_in_shape_and_dtype(fn):
    x = M.astype(np.float32)
    assert describe(fn(tg, tg.tensor(x))) == describe(fn(torch, torch.tensor(x)))


def test_random_values_lie_in_their_ranges():
    x = tg.zeros((200,))
    assert np.all((tg.rand_like(x).numpy() >= 0) & (tg.rand_like(x).numpy() < 1))
    ints = tg.randint(-3, 4, (500,)).numpy()
    assert ints.min() == -3 and ints.max() == 3  # high is exclusive, both ends reached
    assert abs(tg.randn_like(tg.zeros(4000)).numpy().std() - 1) < 0.1


def test_from_numpy_shares_memory_as_pytorch():
    array = np.arange(3.0)
    ours, theirs = tg.from_numpy(array), torch.from_numpy(array.copy())
    array[0] = theirs.numpy()[0] = 9.0
    assert ours[0].item() == theirs[0].item() == 9.0


def test_clone_and_detach_share_memory_as_pytorch():
    for lib in (tg, torch):
        x = lib.tensor(M.copy(), requires_grad=True)
        clone, detached = x.clone(), x.detach()
        assert clone.requires_grad and not detached.requires_grad
        assert not np.shares_memory(clone.detach().numpy(), x.detach().numpy())
        assert np.shares_memory(detached.numpy(), x.detach().numpy())


# --------------------------------------------------------------------------- errors
#: bad calls that raise the same exception type in both libraries
SAME_ERRORS: list[tuple[str, Callable[..., Any]]] = [
    ("size_dim_out_of_range", lambda lib: lib.tensor(M).size(2)),
    ("view_wrong_size", lambda lib: lib.tensor(M).view(5)),
    ("view_needs_a_copy", lambda lib: lib.tensor(M).t().view(12)),
    ("reshape_wrong_size", lambda lib: lib.tensor(M).reshape(5, 2)),
    ("expand_fewer_sizes", lambda lib: lib.tensor(M).expand(4)),
    ("repeat_fewer_sizes", lambda lib: lib.tensor(M).repeat(2)),
    ("permute_too_few_dims", lambda lib: lib.tensor(M).permute(0)),
    ("transpose_dim_out_of_range", lambda lib: lib.tensor(M).transpose(0, 2)),
    ("unflatten_wrong_sizes", lambda lib: lib.tensor(M).unflatten(1, (3, 2))),
    ("squeeze_dim_out_of_range", lambda lib: lib.tensor(M).squeeze(3)),
    ("unsqueeze_dim_out_of_range", lambda lib: lib.tensor(M).unsqueeze(3)),
    ("t_of_3d", lambda lib: lib.tensor(A).t()),
    ("mm_of_3d", lambda lib: lib.tensor(A).mm(lib.tensor(M))),
    ("bmm_of_2d", lambda lib: lib.tensor(M).bmm(lib.tensor(M))),
    ("sum_dim_out_of_range", lambda lib: lib.tensor(M).sum(dim=2)),
    ("max_dim_out_of_range", lambda lib: lib.tensor(M).max(dim=2)),
    ("max_over_empty_dim", lambda lib: lib.tensor(np.ones((0, 3))).max(dim=0)),
    ("argmax_of_empty", lambda lib: lib.tensor(np.ones(0)).argmax()),
    (
        "masked_fill_tensor_value_1d",
        lambda lib: lib.tensor(M).masked_fill(lib.tensor(MASK), lib.tensor([1.0, 2.0, 3.0, 4.0])),
    ),
    ("gather_index_out_of_range", lambda lib: lib.tensor(M).gather(0, lib.tensor([[5]]))),
    ("gather_negative_index", lambda lib: lib.tensor(M).gather(0, lib.tensor([[-1]]))),
    ("gather_ndim_mismatch", lambda lib: lib.tensor(M).gather(0, lib.tensor([0]))),
    (
        "scatter_add_src_too_small",
        lambda lib: lib.tensor(M).scatter_add(0, lib.tensor([[0, 1]]), lib.tensor([[1.0]])),
    ),
    ("topk_k_too_large", lambda lib: lib.tensor(M).topk(5)),
    ("sort_dim_out_of_range", lambda lib: lib.tensor(M).sort(dim=3)),
    ("prod_dim_out_of_range", lambda lib: lib.tensor(M).prod(2)),
    ("prod_of_0d_dim_1", lambda lib: lib.tensor(1.5).prod(1)),
    ("prod_tuple_dim", lambda lib: lib.tensor(M).prod((0, 1))),
    ("prod_float_dim", lambda lib: lib.tensor(M).prod(1.5)),
    ("prod_bool_dim", lambda lib: lib.tensor(M).prod(True)),
    ("cumsum_dim_out_of_range", lambda lib: lib.tensor(M).cumsum(dim=3)),
    ("cumsum_without_dim", lambda lib: lib.tensor(M).cumsum()),
    ("int_tensor_requires_grad", lambda lib: lib.tensor([1, 2], requires_grad=True)),
    ("requires_grad_on_ints", lambda lib: lib.tensor([1, 2]).requires_grad_()),
    ("randint_low_above_high", lambda lib: lib.randint(5, 2, (3,))),
    ("linspace_negative_steps", lambda lib: lib.linspace(0, 1, -1)),
    ("empty_negative_size", lambda lib: lib.empty(-1)),
    ("from_numpy_of_a_list", lambda lib: lib.from_numpy([1, 2])),
    ("cat_of_nothing", lambda lib: lib.cat([])),
    ("cat_dim_out_of_range", lambda lib: lib.cat([lib.tensor(M), lib.tensor(M)], 3)),
    ("cat_of_a_tensor", lambda lib: lib.cat(lib.tensor(M))),
    ("item_of_many", lambda lib: lib.tensor(M).item()),
    ("index_out_of_range", lambda lib: lib.tensor(M)[5]),
    ("backward_of_a_non_scalar", lambda lib: (lib.tensor(M, requires_grad=True) * 2).backward()),
    ("ragged_lists", lambda lib: lib.tensor([[1, 2], [3]])),
    ("string_data", lambda lib: lib.tensor("a")),
    ("list_of_a_tensor_with_dims", lambda lib: lib.tensor([lib.tensor([1.0, 2.0])])),
    ("type_as_a_number", lambda lib: lib.tensor(M).type_as(3)),
]


@pytest.mark.parametrize("call", [pytest.param(f, id=i) for i, f in SAME_ERRORS])
def test_bad_call_raises_pytorchs_error_type(call):
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(Exception) as ours:
        call(tg)
    assert type(ours.value) is type(theirs.value) or isinstance(ours.value, type(theirs.value))


#: bad calls where tensorgrad deliberately raises another type: shape mismatches are
#: ValueError and dtype mismatches TypeError, as everywhere in tensorgrad, where PyTorch
#: raises RuntimeError (docs/porting.md)
DELIBERATE_ERRORS: list[tuple[str, Callable[..., Any], type, type]] = [
    ("expand_to_a_wrong_size", lambda lib: lib.tensor(M).expand(4, 4), ValueError, RuntimeError),
    ("flatten_start_after_end", lambda lib: lib.tensor(M).flatten(1, 0), ValueError, RuntimeError),
    ("mm_shapes", lambda lib: lib.tensor(M).mm(lib.tensor(M)), ValueError, RuntimeError),
    ("add_shapes", lambda lib: lib.tensor(M) + lib.tensor(V), ValueError, RuntimeError),
    ("eq_shapes", lambda lib: lib.tensor(M).eq(lib.tensor(V)), ValueError, RuntimeError),
    (
        "cat_shapes",
        lambda lib: lib.cat([lib.tensor(M), lib.tensor(A[0, :, :2])]),
        ValueError,
        RuntimeError,
    ),
    (
        "stack_shapes",
        lambda lib: lib.stack([lib.tensor(M), lib.tensor(M.T)]),
        ValueError,
        RuntimeError,
    ),
    (
        "gather_float_index",
        lambda lib: lib.tensor(M).gather(0, lib.tensor([[0.5]])),
        TypeError,
        RuntimeError,
    ),
    (
        "take_float_index",
        lambda lib: lib.tensor(M).take(lib.tensor([0.5])),
        TypeError,
        RuntimeError,
    ),
    (
        "masked_fill_float_mask",
        lambda lib: lib.tensor(M).masked_fill(lib.tensor(M), 1.0),
        TypeError,
        RuntimeError,
    ),
    ("clamp_without_bounds", lambda lib: lib.tensor(M).clamp(), ValueError, RuntimeError),
]


@pytest.mark.parametrize(
    ("call", "ours", "theirs"),
    [pytest.param(f, o, t, id=i) for i, f, o, t in DELIBERATE_ERRORS],
)
def test_bad_call_raises_tensorgrads_documented_error_type(call, ours, theirs):
    with pytest.raises(theirs):
        call(torch)
    with pytest.raises(ours):
        call(tg)


# --------------------------------------------------------------------------- dtype inference
#: data given to ``tg.tensor`` and ``torch.tensor``: the same dtype must come out
TENSOR_DATA: list[tuple[str, Any]] = [
    ("int", 3),
    ("float", 2.5),
    ("bool", True),
    ("int_list", [0, 1]),
    ("float_list", [0.5, 1.0]),
    ("bool_list", [True, False]),
    ("int_and_float", [1, 2.5]),
    ("bool_and_int", [True, 2]),
    ("bool_and_float", [False, 1.5]),
    ("nested_ints", [[1, 2], [3, 4]]),
    ("nested_mixed", [[1, 2], [3.5, 4]]),
    ("empty_list", []),
    ("empty_nested", [[], []]),
    ("tuple", (1, 2, 3)),
    ("negative_ints", [-3, -4]),
    ("big_int", 2**40),
    ("numpy_int32", np.array([1, 2], dtype=np.int32)),
    ("numpy_int64", np.array([1, 2])),
    ("numpy_int8", np.array([1, 2], dtype=np.int8)),
    ("numpy_uint8", np.array([1, 2], dtype=np.uint8)),
    ("numpy_int16", np.array([1, 2], dtype=np.int16)),
    ("numpy_float16", np.array([1, 2], dtype=np.float16)),
    ("numpy_float32", np.array([1, 2], dtype=np.float32)),
    ("numpy_float64", np.array([1, 2], dtype=np.float64)),
    ("numpy_bool", np.array([True, False])),
    ("numpy_0d", np.array(1.5)),
    ("numpy_scalar_float64", np.float64(1.5)),
    ("numpy_scalar_float32", np.float32(1.5)),
    ("numpy_scalar_int32", np.int32(3)),
    ("numpy_scalar_bool", np.bool_(True)),
    ("list_of_numpy_scalars", [np.float32(1.0), np.float32(2.0)]),
    ("list_of_numpy_float64", [np.float64(1.0), 2.0]),
    ("list_of_arrays", [np.array([1.0, 2.0]), np.array([3.0, 4.0])]),
    ("list_of_float32_arrays", [np.ones(2, np.float32), np.zeros(2, np.float32)]),
    ("list_of_array_and_list", [np.array([1, 2]), [3, 4]]),
]


@pytest.mark.filterwarnings("ignore:Creating a tensor from a list of numpy.ndarrays is extremely")
@pytest.mark.parametrize("data", [pytest.param(d, id=i) for i, d in TENSOR_DATA])
def test_tensor_infers_pytorchs_dtype(data):
    ours, theirs = tg.tensor(data), torch.tensor(data)
    assert dtype_name(ours.dtype) == dtype_name(theirs.dtype)
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("values", [[1.0, 2.0], [1, 2.5], [True, 2]], ids=str)
def test_tensor_of_0d_tensors_infers_pytorchs_dtype(values):
    ours = tg.tensor([tg.tensor(v) for v in values])
    theirs = torch.tensor([torch.tensor(v) for v in values])
    assert dtype_name(ours.dtype) == dtype_name(theirs.dtype)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.filterwarnings("ignore:Creating a tensor from a list of numpy.ndarrays is extremely")
@pytest.mark.parametrize("data", [pytest.param(d, id=i) for i, d in TENSOR_DATA])
def test_tensor_with_an_explicit_dtype(data):
    ours, theirs = tg.tensor(data, dtype=tg.float64), torch.tensor(data, dtype=torch.float64)
    assert dtype_name(ours.dtype) == dtype_name(theirs.dtype) == "float64"
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


# --------------------------------------------------------------------------- type promotion
DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]
OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "truediv": operator.truediv,
    "maximum": lambda a, b: a.maximum(b) if hasattr(a, "maximum") else b.maximum(a),
    "eq": operator.eq,
    "lt": operator.lt,
}


def operand(lib: Any, kind: str, dtype: str, scalar: Any) -> Any:
    """A 0-d tensor, a 2-element tensor of ``dtype``, or a Python number."""
    if kind == "scalar":
        return scalar
    values = np.array([1, 2]) if kind == "nd" else np.array(2)
    return lib.tensor(values.astype(dtype))


def promoted(lib: Any, op: str, a: Any, b: Any) -> str:
    return dtype_name(OPERATORS[op](a, b).dtype)


operands = st.tuples(
    st.sampled_from(["nd", "0d", "scalar"]),
    st.sampled_from(DTYPES),
    st.sampled_from([True, 3, 2.5]),
)


@settings(max_examples=300, deadline=None)
@given(op=st.sampled_from(list(OPERATORS)), left=operands, right=operands)
def test_binary_ops_promote_as_pytorch(op, left, right):
    """The result dtype of ``a op b`` for tensors (n-d or 0-d) of any two dtypes and Python
    numbers on either side, against PyTorch's result and ``torch.result_type``."""
    if left[0] == "scalar" and right[0] == "scalar":
        return  # two numbers: Python's arithmetic, no tensor involved
    if op == "maximum" and "scalar" in (left[0], right[0]):
        return  # torch.maximum takes tensors only
    a, b = (operand(torch, *left), operand(torch, *right))
    try:
        expected = promoted(torch, op, a, b)
    except RuntimeError:  # - with a bool operand, which PyTorch refuses
        with pytest.raises(RuntimeError):
            OPERATORS[op](operand(tg, *left), operand(tg, *right))
        return
    assert promoted(tg, op, operand(tg, *left), operand(tg, *right)) == expected
    if op not in ("truediv", "eq", "lt"):  # result_type: the type the arithmetic runs in
        assert dtype_name(torch.result_type(a, b)) == expected


@pytest.mark.parametrize("order", ["bool_first", "number_first"])
@pytest.mark.parametrize("other", [2.5, "float_tensor"])
def test_bool_tensor_minus_a_float_is_refused(order, other):
    x = tg.tensor([True, False])
    y = tg.tensor([1.5, 2.0]) if other == "float_tensor" else other
    with pytest.raises(RuntimeError, match="bool"):
        _ = x - y if order == "bool_first" else y - x


SUB_SPELLINGS = {
    "sub": lambda lib, b, f: lib.sub(b, 1.5),
    "Tensor.sub": lambda lib, b, f: b.sub(1.5),
    "__rsub__": lambda lib, b, f: b.__rsub__(1.5),
    "0-d": lambda lib, b, f: b[0] - 1.5,
    "alpha": lambda lib, b, f: f.sub(b, alpha=2),
    "alpha_bool_number": lambda lib, b, f: f.sub(True, alpha=2),
    "subtract_alpha": lambda lib, b, f: lib.subtract(f, b, alpha=0.5),
    "sub_alpha": lambda lib, b, f: f.sub_(b, alpha=2),
    "two_bools_alpha": lambda lib, b, f: b.sub(b, alpha=2),
}


@pytest.mark.parametrize("spelling", list(SUB_SPELLINGS))
def test_every_spelling_of_subtraction_refuses_a_bool(spelling):
    """Sub sees no bool once promotion or ``alpha`` has made it a number: each spelling
    refuses it first, with PyTorch's message."""
    call = SUB_SPELLINGS[spelling]
    with pytest.raises(RuntimeError) as ours:
        call(tg, tg.tensor([True, False]), tg.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError) as theirs:
        call(torch, torch.tensor([True, False]), torch.tensor([1.0, 2.0]))
    assert str(ours.value).split(": ", 1)[1] == str(theirs.value)


@pytest.mark.parametrize("left", ["int64", "int32", "uint8", "bool"])
@pytest.mark.parametrize("right", ["int64", "int16", "scalar"])
def test_true_division_of_integers_is_the_default_float(left, right):
    a = tg.tensor(np.array([3, 4]).astype(left))
    b = 2 if right == "scalar" else tg.tensor(np.array([2, 8]).astype(right))
    result = a / b
    theirs = torch.tensor(np.array([3, 4]).astype(left)) / (
        2 if right == "scalar" else torch.tensor(np.array([2, 8]).astype(right))
    )
    assert dtype_name(result.dtype) == dtype_name(theirs.dtype) == "float32"
    np.testing.assert_allclose(result.numpy(), theirs.numpy())


@pytest.mark.parametrize("dim", [None, 0, 1])
def test_prod_second_derivatives_with_zeros_match_pytorch(dim):
    """The Hessian-vector product of prod where slices hold zero, one and several zeros."""
    vector = np.random.default_rng(3).standard_normal(WITH_ZEROS.shape)
    results = []
    for lib in (tg, torch):
        x = lib.tensor(WITH_ZEROS.copy(), requires_grad=True)
        y = x.prod() if dim is None else x.prod(dim)
        weights = lib.tensor(np.random.default_rng(4).standard_normal(tuple(y.shape)))
        (g,) = lib.autograd.grad((y * weights).sum(), x, create_graph=True)
        (h,) = lib.autograd.grad((g * lib.tensor(vector)).sum(), x)
        results.append((g.detach().numpy(), h.numpy()))
    (g, h), (torch_g, torch_h) = results
    np.testing.assert_allclose(g, torch_g, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(h, torch_h, rtol=1e-12, atol=1e-15)
