"""Methods and functions added for ported programs: ``new_*``, ``nonzero``, ``isclose``,
``outer``, ``tril``/``triu``, ``flip``, ``finfo``/``iinfo`` and ``set_num_threads``, each
against PyTorch where it is installed (and against NumPy or by hand where it is not)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad._native import openblas, threads


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def test_new_tensors_take_this_tensors_dtype_unless_told():
    x, i = tg.arange(6.0).reshape(2, 3), tg.tensor([1, 2])
    assert x.new_zeros(2, 3).dtype == tg.float32 and x.new_zeros((2,)).shape == (2,)
    assert x.new_ones(0).shape == (0,) and x.new_empty(2).tolist() == [0.0, 0.0]
    assert x.new_full((2,), 7).dtype == tg.float32 and x.new_tensor([1, 2]).dtype == tg.float32
    assert i.new_full((2,), 2.5).tolist() == [2, 2] and i.new_tensor([1.5]).tolist() == [1]
    assert x.new_zeros(2, dtype=tg.int64).dtype == tg.int64
    assert x.new_ones(3, requires_grad=True).requires_grad


def test_new_tensors_refuse_what_the_factories_refuse():
    x = tg.zeros(2)
    with pytest.raises(RuntimeError, match="new_zeros.*negative dimension -1"):
        x.new_zeros(2, -1)
    with pytest.raises(RuntimeError, match="new_full.*negative dimension -3"):
        x.new_full((-3,), 1.0)
    with pytest.raises(TypeError, match="new_full: fill_value must be a number"):
        x.new_full((2,), "a")
    assert x.new_full((2,), tg.tensor(3.0)).tolist() == [3.0, 3.0]  # a 0-d tensor's item
    t = x.new_tensor(x)
    assert t.tolist() == [0.0, 0.0] and not np.shares_memory(t.numpy(), x.numpy())


def test_new_tensors_agree_with_pytorch(torch):
    for dtype in ("float64", "int32", "bool"):
        ours = tg.zeros(2, dtype=getattr(tg, dtype if dtype != "bool" else "bool_"))
        theirs = torch.zeros(2, dtype=getattr(torch, dtype))
        for name, args in [
            ("new_zeros", (2, 3)), ("new_ones", ((3,),)), ("new_full", ((2,), 2.5)),
            ("new_tensor", ([1.5, 0.0],)), ("new_empty", (0,)),
        ]:  # fmt: skip
            a, b = getattr(ours, name)(*args), getattr(theirs, name)(*args)
            assert a.shape == tuple(b.shape), (dtype, name)
            assert str(a.dtype) == str(b.dtype).removeprefix("torch."), (dtype, name)
            if name != "new_empty":
                assert a.tolist() == b.tolist(), (dtype, name)


@pytest.mark.parametrize(
    "values", [5, 0, [0, 1, 0], [[0, 1], [2, 0]], np.zeros((2, 0)), [[[1.5, 0.0]], [[0.0, -1]]]]
)
def test_nonzero_agrees_with_pytorch(torch, values):
    ours, theirs = tg.tensor(values), torch.tensor(np.asarray(values))
    a, b = ours.nonzero(), theirs.nonzero()
    assert a.dtype == tg.int64 and a.shape == tuple(b.shape) and a.tolist() == b.tolist()
    for x, y in zip(tg.nonzero(ours, as_tuple=True), theirs.nonzero(as_tuple=True), strict=True):
        assert x.tolist() == y.tolist()
    assert len(ours.nonzero(as_tuple=True)) == len(theirs.nonzero(as_tuple=True))


@pytest.mark.parametrize("values", [5, 0, [0, 1, 0], [[0, 1], [2, 0]], np.zeros((2, 0))])
def test_nonzero_is_numpys_argwhere(values):
    ours = tg.tensor(values)
    np.testing.assert_array_equal(ours.nonzero().numpy(), np.argwhere(np.asarray(values)))
    expected = np.nonzero(np.atleast_1d(values))
    for x, y in zip(ours.nonzero(as_tuple=True), expected, strict=True):
        np.testing.assert_array_equal(x.numpy(), y)


def test_nonzero_has_no_gradient():
    x = tg.tensor([0.0, 2.0], requires_grad=True)
    assert not x.nonzero().requires_grad and x.nonzero().tolist() == [[1]]


def test_isclose_is_pytorchs_formula(torch):
    a = [1.0, float("nan"), 1e10, 0.0, -2.0]
    b = [1.0 + 1e-9, float("nan"), 1.00001e10, 1e-9, 2.0]
    for kwargs in ({}, {"equal_nan": True}, {"rtol": 0.0, "atol": 1e-8}):
        ours = tg.isclose(tg.tensor(a), tg.tensor(b), **kwargs)
        theirs = torch.isclose(torch.tensor(a), torch.tensor(b), **kwargs)
        assert ours.dtype == tg.bool_ and ours.tolist() == theirs.tolist(), kwargs
    assert tg.tensor([1, 2]).isclose(tg.tensor([1, 3])).tolist() == [True, False]


def test_isclose_is_numpys():
    a, b = np.array([1.0, np.nan, 1e10, 0.0]), np.array([1.0 + 1e-9, np.nan, 1.00001e10, 1e-9])
    for kwargs in ({}, {"equal_nan": True}, {"rtol": 0.0, "atol": 1e-8}):
        got = tg.isclose(tg.tensor(a), tg.tensor(b), **kwargs).numpy()
        np.testing.assert_array_equal(got, np.isclose(a, b, **kwargs))


def test_outer_values_gradients_and_errors(torch):
    x = tg.tensor([1.0, -2.0, 0.5], dtype=tg.float64, requires_grad=True)
    y = tg.tensor([3.0, 4.0], dtype=tg.float64, requires_grad=True)
    out = tg.outer(x, y)
    np.testing.assert_array_equal(out.numpy(), np.outer(x.numpy(), y.numpy()))
    assert tg.autograd.gradcheck(tg.outer, (x, y))
    assert tg.outer(tg.tensor([1, 2]), tg.tensor([1.5])).dtype == torch.outer(
        torch.tensor([1, 2]), torch.tensor([1.5])
    ).dtype.__str__().removeprefix("torch.")
    with pytest.raises(RuntimeError, match="outer: Expected 1-D argument self, but got 2-D"):
        tg.ones(2, 2).outer(y)
    with pytest.raises(RuntimeError, match="outer: Expected 1-D argument vec2, but got 0-D"):
        x.outer(tg.tensor(1.0))


@pytest.mark.parametrize("name", ["tril", "triu"])
@pytest.mark.parametrize("shape", [(3, 3), (2, 4), (4, 2), (2, 3, 3), (0, 3), (1, 1)])
@pytest.mark.parametrize("diagonal", [-1, 0, 2])
def test_triangles_agree_with_pytorch_and_numpy(torch, name, shape, diagonal):
    values = np.arange(np.prod(shape), dtype=np.float64).reshape(shape) + 1
    ours = getattr(tg, name)(tg.tensor(values), diagonal=diagonal)
    np.testing.assert_array_equal(ours.numpy(), getattr(np, name)(values, diagonal))
    theirs = getattr(torch, name)(torch.tensor(values), diagonal=diagonal)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("name", ["tril", "triu"])
def test_triangles_pass_the_gradient_inside_and_keep_the_dtype(name):
    x = tg.tensor(np.random.default_rng(0).standard_normal((2, 3, 3)), requires_grad=True)
    assert tg.autograd.gradcheck(lambda t: getattr(t, name)(1), (x,))
    getattr(x, name)().sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), getattr(np, name)(np.ones((2, 3, 3))))
    flags = tg.tensor([[True, True], [True, True]])
    assert getattr(flags, name)().dtype == tg.bool_
    with pytest.raises(RuntimeError, match=f"{name}: input tensor must have at least 2 dim"):
        getattr(tg.ones(3), name)()


def test_flip_is_a_function_too(torch):
    x = tg.arange(6.0).reshape(2, 3)
    assert tg.flip(x, (0,)).tolist() == torch.flip(torch.arange(6.0).reshape(2, 3), (0,)).tolist()
    assert tg.flip(x, [0, 1]).tolist() == [[5.0, 4.0, 3.0], [2.0, 1.0, 0.0]]


def test_finfo_and_iinfo_as_pytorch(torch):
    for name in ("float16", "float32", "float64"):
        ours, theirs = tg.finfo(getattr(tg, name)), torch.finfo(getattr(torch, name))
        for attr in ("eps", "max", "min", "tiny", "bits", "resolution"):
            expected = np.dtype(name).type(getattr(theirs, attr))  # PyTorch's, as a Python float
            assert getattr(ours, attr) == expected, (name, attr)
    assert tg.finfo().dtype == tg.float32
    for name in ("int8", "int16", "int32", "int64", "uint8"):
        ours, theirs = tg.iinfo(getattr(tg, name)), torch.iinfo(getattr(torch, name))
        assert (ours.min, ours.max, ours.bits) == (theirs.min, theirs.max, theirs.bits), name
    with pytest.raises(TypeError, match="finfo: expected a floating-point dtype, got int32"):
        tg.finfo(tg.int32)
    with pytest.raises(TypeError, match="iinfo: expected an integer dtype, got float32"):
        tg.iinfo(tg.float32)


def test_set_num_threads_sets_tensorgrads_threads_and_blass(monkeypatch):
    monkeypatch.setattr(threads, "THREADS", threads.THREADS)
    functions = openblas.thread_functions()
    before = functions[0]() if functions else None
    try:
        tg.set_num_threads(1)
        assert tg.get_num_threads() == 1 == threads.THREADS
        if functions:
            assert functions[0]() == 1
    finally:
        if functions:
            functions[1](before)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(RuntimeError, match="set_num_threads expects a positive integer"):
            tg.set_num_threads(bad)


ROLLS = [((1,), {}), ((-2,), {}), ((1, 0), {}), (((1, -1), (0, 1)), {}), ((5,), {"dims": 1})]


@pytest.mark.parametrize("args, kwargs", ROLLS)
def test_roll_is_numpys_and_passes_gradients(args, kwargs):
    values = np.arange(12.0).reshape(3, 4)
    x = tg.tensor(values, requires_grad=True)
    shift, axis = (args[0], args[1] if len(args) > 1 else kwargs.get("dims"))
    np.testing.assert_array_equal(tg.roll(x, *args, **kwargs).numpy(), np.roll(values, shift, axis))
    assert tg.autograd.gradcheck(lambda t: t.roll(*args, **kwargs), (x,))


def test_roll_agrees_with_pytorch_and_names_its_errors(torch):
    values = np.arange(12.0).reshape(3, 4)
    for args, kwargs in ROLLS:
        ours = tg.roll(tg.tensor(values), *args, **kwargs).numpy()
        np.testing.assert_array_equal(ours, torch.roll(torch.tensor(values), *args, **kwargs))
    with pytest.raises(RuntimeError, match="roll: shifts and dimensions must align"):
        tg.roll(tg.tensor(values), (1,), (0, 1))
    assert tg.roll(tg.zeros(0, 2), 1, 0).shape == (0, 2)


@pytest.mark.parametrize("shape", [(3, 4), (4, 3), (2, 3, 4), (0, 2), (1, 1)])
@pytest.mark.parametrize("offset", [0, 1, -1, 5])
def test_diagonal_is_numpys_and_passes_gradients(shape, offset):
    values = np.arange(float(np.prod(shape))).reshape(shape)
    for dims in ((0, 1), (-1, 0)) if len(shape) == 2 else ((0, 1), (1, 2), (2, 0)):
        got = tg.tensor(values).diagonal(offset, *dims).numpy()
        np.testing.assert_array_equal(got, np.diagonal(values, offset, *dims))
    x = tg.tensor(values, requires_grad=True)
    assert tg.autograd.gradcheck(lambda t: t.diagonal(offset) * 2.0, (x,))


def test_diag_both_ways_agrees_with_pytorch(torch):
    for values in ([1.0, 2.0, 3.0], [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], [7]):
        for k in (0, 1, -2):
            ours = tg.diag(tg.tensor(values), k)
            theirs = torch.diag(torch.tensor(values), k)
            assert ours.dtype == getattr(tg, str(theirs.dtype).removeprefix("torch."))
            np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    with pytest.raises(RuntimeError, match=r"diag\(\): Supports 1D or 2D tensors. Got 3D"):
        tg.ones(2, 2, 2).diag()
    with pytest.raises(RuntimeError, match="diagonal: dimensions cannot be identical"):
        tg.ones(2, 2).diagonal(0, 1, 1)


def test_diag_of_a_vector_is_numpys_and_passes_gradients():
    x = tg.tensor([1.0, -2.0, 3.0], dtype=tg.float64, requires_grad=True)
    for k in (0, 2, -1):
        np.testing.assert_array_equal(tg.diag(x, k).detach().numpy(), np.diag(x.numpy(), k))
        assert tg.autograd.gradcheck(lambda t, k=k: tg.diag(t, k), (x,))
    assert tg.diag(tg.tensor([True, False])).dtype == tg.bool_


def test_masked_select_broadcasts_and_passes_gradients(torch):
    values = np.arange(12.0).reshape(3, 4)
    x = tg.tensor(values, requires_grad=True)
    for mask in (
        values > 5,
        np.array([True, False, True, False]),
        np.array([[True], [False], [True]]),
    ):
        ours = tg.masked_select(x, tg.tensor(mask))
        np.testing.assert_array_equal(
            ours.detach().numpy(),
            np.broadcast_to(values, np.broadcast_shapes(values.shape, mask.shape))[
                np.broadcast_to(mask, np.broadcast_shapes(values.shape, mask.shape))
            ],
        )
        theirs = torch.masked_select(torch.tensor(values), torch.tensor(mask))
        np.testing.assert_array_equal(ours.detach().numpy(), theirs.numpy())
    tg.masked_select(x, tg.tensor(values > 5)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), (values > 5).astype(float))
    with pytest.raises(RuntimeError, match="masked_select: expected a bool mask, got int64"):
        x.masked_select(tg.tensor([1, 0, 1, 0]))


@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid_is_numpys_and_pytorchs(torch, indexing):
    a, b, c = [1.0, 2.0, 3.0], [4.0, 5.0], [6.0]
    ours = tg.meshgrid(tg.tensor(a), tg.tensor(b), tg.tensor(c), indexing=indexing)
    expected = np.meshgrid(a, b, c, indexing=indexing)
    theirs = torch.meshgrid(torch.tensor(a), torch.tensor(b), torch.tensor(c), indexing=indexing)
    for o, e, t in zip(ours, expected, theirs, strict=True):
        np.testing.assert_array_equal(o.numpy(), e)
        np.testing.assert_array_equal(o.numpy(), t.numpy())
    pair = tg.meshgrid([tg.tensor(a), tg.tensor(b)], indexing=indexing)
    assert [p.shape for p in pair] == [
        tuple(t.shape) for t in torch.meshgrid(torch.tensor(a), torch.tensor(b), indexing=indexing)
    ]


def test_meshgrid_passes_gradients_and_names_its_errors():
    x = tg.tensor([1.0, 2.0], dtype=tg.float64, requires_grad=True)
    y = tg.tensor([3.0, 4.0, 5.0], dtype=tg.float64, requires_grad=True)
    gx, gy = tg.meshgrid(x, y)
    (gx * gy).sum().backward()
    assert x.grad.tolist() == [12.0, 12.0] and y.grad.tolist() == [3.0, 3.0, 3.0]
    with pytest.raises(RuntimeError, match="meshgrid: Expected 0D or 1D tensor"):
        tg.meshgrid(tg.ones(2, 2))
    with pytest.raises(ValueError, match="meshgrid: indexing must be 'ij' or 'xy'"):
        tg.meshgrid(x, indexing="ji")
    with pytest.raises(RuntimeError, match="meshgrid expects all tensors to have the same dtype"):
        tg.meshgrid(x, tg.tensor([1, 2]))
