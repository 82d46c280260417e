"""The edges of the public API that the differential fuzz found, as named regression tests:
each asserts tensorgrad's value or error on its own (NumPy-only, for CI without PyTorch),
and, where PyTorch is installed, that PyTorch agrees (``torch`` fixture, skipped without it).

The fuzz itself (``test_torch_fuzz.py``, drawing every entry of
``tests/ops/registry/api.py``) covers the classes; these pin the examples down.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import tensorgrad as tg
import tensorgrad.nn.functional as F


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def both(torch, fn):
    """``fn(lib)`` for tensorgrad and PyTorch, each as a list (or its exception type)."""
    results = []
    for lib in (tg, torch):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out = fn(lib)
            results.append(out.tolist() if hasattr(out, "tolist") else out)
        except Exception as exc:  # the point is to compare what each raises
            results.append(type(exc))
    return results


# --------------------------------------------------------------------------- creation
LOGSPACE_CASES = [(-2.5, 2.5, 2, 10.0), (-1.5, 2.7, 5, 10.0), (1, 2, 7, 10.0), (0, 3, 4, 2.5),
                  (-2, 2, 3, 2.0), (0.9, 3.9, 6, -2.0)]  # fmt: skip


def test_integer_logspace_casts_its_ends_first():
    assert tg.logspace(-2.5, 2.5, 2, dtype=tg.int32).tolist() == [0, 100]
    assert tg.logspace(-1.5, 2.7, 5, dtype=tg.int64).tolist() == [0, 0, 3, 17, 100]
    assert tg.logspace(1, 2, 7, dtype=tg.uint8).tolist()[-1] == 100
    assert tg.logspace(1, 3, 3, dtype=tg.uint8).tolist() == [10, 100, 232]  # wrapped


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8", "int8", "int16"])
@pytest.mark.parametrize("case", LOGSPACE_CASES)
def test_integer_logspace_and_linspace_as_pytorchs(torch, case, dtype):
    start, end, steps, base = case
    for name, args in (("logspace", (start, end, steps, base)), ("linspace", case[:3])):

        def make(lib, name=name, args=args):
            return getattr(lib, name)(*args, dtype=getattr(lib, dtype))

        ours, theirs = both(torch, make)
        assert ours == theirs, (name, case, dtype)


def test_arange_steps_that_cast_to_zero_repeat_start_as_pytorch():
    assert tg.arange(0.9, 4.0, 0.7, dtype=tg.int32).tolist() == [0] * 5
    with pytest.raises(ValueError, match="arange"):
        tg.arange(0.9, 4.0, 0.7, dtype=tg.int64)


@pytest.mark.parametrize(
    "value", [math.nan, math.inf, -1, 300, 2**40, 1e39, 3.7, 255.5, -0.5, True, -256]
)
@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8", "bool", "float32"])
def test_full_refuses_what_the_dtype_cannot_hold(torch, value, dtype):
    ours, theirs = both(torch, lambda lib: lib.full((2,), value, dtype=getattr(lib, dtype)))
    assert repr(ours) == repr(theirs) or (isinstance(ours, type) and issubclass(ours, theirs)), (
        ours,
        theirs,
    )


def test_full_of_nan_in_an_integer_dtype_is_an_error():
    with pytest.raises(RuntimeError, match="cannot be converted to type int64"):
        tg.full((2,), math.nan, dtype=tg.int64)
    with pytest.raises(RuntimeError, match="new_full"):
        tg.zeros(2, dtype=tg.int32).new_full((2,), math.inf)
    assert tg.full((2,), -1, dtype=tg.uint8).tolist() == [255, 255]


def test_random_likes_of_0d_tensors_and_their_refusals():
    assert tg.rand_like(tg.tensor(1.0)).shape == () and tg.randn_like(tg.tensor(1.0)).shape == ()
    for make in (tg.rand_like, tg.randn_like):
        with pytest.raises(NotImplementedError, match="floating point"):
            make(tg.tensor([1, 2]))


def test_scalar_tensor():
    assert tg.scalar_tensor(3).dtype == tg.float32 and tg.scalar_tensor(3).shape == ()
    assert tg.scalar_tensor(2.5, dtype=tg.int64).item() == 2


# --------------------------------------------------------------------------- where, lgamma
def test_where_of_a_condition_alone_takes_any_dtype_and_0d():
    assert [t.tolist() for t in tg.where(tg.tensor(True))] == [[0]]
    assert [t.tolist() for t in tg.where(tg.tensor(0.0))] == [[]]
    assert [t.tolist() for t in tg.where(tg.tensor([[1, 0], [2, 2]]))] == [[0, 1, 1], [0, 0, 1]]


def test_lgamma_of_minus_infinity_is_infinity():
    out = tg.tensor([-math.inf, -3.0, math.inf], dtype=tg.float64).lgamma()
    assert out.tolist() == [math.inf, math.inf, math.inf]


# --------------------------------------------------------------------------- activations
@pytest.mark.parametrize(
    "name",
    [
        "celu",
        "hardshrink",
        "hardsigmoid",
        "hardswish",
        "logsigmoid",
        "softshrink",
        "selu",
        "mish",
        "glu",
    ],
)
@pytest.mark.parametrize("dtype", ["int64", "bool"])
def test_float_only_activations_refuse_integers(name, dtype):
    x = tg.tensor([1, 0]).to(getattr(tg, dtype))
    with pytest.raises(NotImplementedError, match="not implemented"):
        getattr(F, name)(x)


def test_hardtanh_and_relu6_refuse_bools():
    for fn in (F.hardtanh, F.relu6):
        with pytest.raises(RuntimeError, match="Bool inputs not supported for hardtanh"):
            fn(tg.tensor([True]))


def test_shrinks_and_threshold_keep_nan_and_pass_its_gradient():
    for fn in (F.softshrink, F.hardshrink, lambda x: F.threshold(x, 0.5, -1.0)):
        x = tg.tensor([math.nan, 0.3, 2.0], dtype=tg.float64, requires_grad=True)
        y = fn(x)
        y.sum().backward()
        assert math.isnan(y[0].item()) and x.grad[0].item() == 1.0


def test_elu_family_passes_the_gradient_of_nan():
    for fn in (F.elu, F.selu, F.celu):
        x = tg.tensor([math.nan], dtype=tg.float64, requires_grad=True)
        fn(x).sum().backward()
        assert math.isfinite(x.grad.item())


def test_in_place_activations_keep_what_backward_needs():
    x = tg.tensor([0.3, -0.7, 2.0], dtype=tg.float64, requires_grad=True)
    y = x.clone()
    F.threshold_(y, 0.5, 2.0)
    F.hardtanh_(y)
    y.sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]


# --------------------------------------------------------------------------- missing names
def test_new_names_compose_as_pytorchs(torch):
    calls = {
        "adjoint": lambda lib: lib.adjoint(lib.tensor([[1.0, 2.0], [3.0, 4.0]])),
        "positive": lambda lib: lib.positive(lib.tensor([1.0, -2.0])),
        "ger": lambda lib: lib.ger(lib.tensor([1.0, 2.0]), lib.tensor([3.0, 4.0, 5.0])),
        "chain_matmul": lambda lib: lib.chain_matmul(*[lib.tensor([[1.0, 2.0], [3.0, 4.0]])] * 3),
        "is_nonzero": lambda lib: lib.tensor([3]).is_nonzero(),
        "rsub": lambda lib: lib.rsub(lib.tensor([1.0, 2.0]), 5, alpha=2),
        "addcmul": lambda lib: lib.addcmul(
            lib.ones(2), lib.tensor([1.0, 2.0]), lib.tensor([3.0, 4.0]), value=0.5
        ),
        "addcdiv": lambda lib: lib.ones(2).addcdiv(lib.tensor([1.0, 2.0]), lib.tensor([4.0, 8.0])),
        "select": lambda lib: lib.arange(6).reshape(2, 3).select(1, -1),
        "diff": lambda lib: lib.tensor([1, 4, 9, 16]).diff(2),
        "diff_prepend": lambda lib: lib.tensor([1.0, 3.0]).diff(prepend=lib.tensor([0.5])),
        "dist": lambda lib: lib.dist(lib.tensor([1.0, 2.0]), lib.tensor([4.0, 6.0])),
        "sum_to_size": lambda lib: lib.ones(2, 3).sum_to_size(2, 1),
        "greater": lambda lib: lib.tensor([1, 3]).greater(2),
        "pixel_shuffle": lambda lib: lib.nn.functional.pixel_shuffle(
            lib.arange(16.0).reshape(1, 4, 2, 2), 2
        ),
        "pixel_unshuffle": lambda lib: lib.nn.functional.pixel_unshuffle(
            lib.arange(16.0).reshape(1, 1, 4, 4), 2
        ),
        "prelu": lambda lib: lib.nn.functional.prelu(
            lib.tensor([[-1.0, 2.0], [-3.0, 4.0]]), lib.tensor([0.25, 0.5])
        ),
        "adjoint_1d": lambda lib: lib.tensor([1.0]).adjoint(),
        "is_nonzero_2": lambda lib: lib.tensor([1, 2]).is_nonzero(),
        "chain_matmul_none": lambda lib: lib.chain_matmul(),
        "positive_bool": lambda lib: lib.tensor([True]).positive(),
        "addcdiv_ints": lambda lib: lib.tensor([1]).addcdiv(lib.tensor([1]), lib.tensor([1])),
        "select_0d": lambda lib: lib.tensor(5).select(0, 0),
        "prelu_dtypes": lambda lib: lib.nn.functional.prelu(
            lib.tensor([1.0]), lib.tensor([1.0], dtype=lib.float64)
        ),
    }
    for name, call in calls.items():
        ours, theirs = both(torch, call)
        assert ours == theirs or (isinstance(ours, type) and issubclass(ours, theirs)), name


def test_new_names_without_pytorch():
    x = tg.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert tg.adjoint(x).tolist() == [[1.0, 3.0], [2.0, 4.0]]
    assert tg.positive(x) is x
    assert tg.chain_matmul(x, x).tolist() == (x @ x).tolist()
    with pytest.raises(RuntimeError, match="more than one value"):
        x.is_nonzero()
    assert x.addcmul(x, x, value=2).tolist() == [[3.0, 10.0], [21.0, 36.0]]
    assert tg.tensor([1, 4, 9]).diff().tolist() == [3, 5]


def test_in_place_compositions_keep_what_backward_needs():
    """exp2_, logit_, hypot_, ... raised in backward: their op had saved the overwritten
    input; and deg2rad_ of a bool tensor is refused, as PyTorch refuses the cast."""
    ones = tg.ones(2, dtype=tg.float64)
    calls = (lambda y: y.exp2_(), lambda y: y.nan_to_num_(), lambda y: y.hypot_(ones),
             lambda y: y.cumprod_(0), lambda y: y.addcmul_(ones, ones))  # fmt: skip
    for call in calls:
        x = tg.tensor([0.3, 0.6], dtype=tg.float64, requires_grad=True)
        y = x.clone()
        call(y)
        y.sum().backward()
        assert x.grad is not None and np.isfinite(x.grad.numpy()).all()
    with pytest.raises(RuntimeError, match="can't be cast"):
        tg.tensor([True]).deg2rad_()


# --------------------------------------------------------------------------- tensors only
@pytest.mark.parametrize(
    "call",
    [
        lambda: tg.ones(2, 3) @ [[1.0], [2.0], [3.0]],
        lambda: [[1.0, 2.0]] @ tg.ones(2, 3),
        lambda: tg.matmul(tg.ones(2, 3), [[1.0], [2.0], [3.0]]),
        lambda: F.linear(tg.ones(2, 3), [[1.0, 2.0, 3.0]]),
        lambda: F.linear([[1.0, 2.0, 3.0]], tg.ones(4, 3)),
        lambda: tg.bincount([1, 2]),
        lambda: tg.bincount(tg.tensor([1, 2]), [1.0, 2.0]),
    ],
)
def test_products_and_bincount_refuse_lists(call):
    with pytest.raises(TypeError):
        call()


@pytest.mark.parametrize("shape", [(1, 4), (2, 4), (), (1,), (2, 1), (3, 1, 4), (5,)])
def test_linear_expands_the_bias_as_pytorch(torch, shape):
    rng = np.random.default_rng(0)
    x, w, b = rng.standard_normal((2, 3)), rng.standard_normal((4, 3)), rng.standard_normal(shape)
    grads = []
    for lib in (tg, torch):
        tensors = [lib.tensor(a, requires_grad=True) for a in (x, w, b)]
        try:
            out = lib.nn.functional.linear(*tensors)
        except RuntimeError as exc:
            grads.append(type(exc))
            continue
        (out * lib.tensor(rng.standard_normal((2, 4)))).sum().backward()
        grads.append([t.grad.numpy().copy() for t in tensors])
        rng = np.random.default_rng(0)
        rng.standard_normal((2, 3)), rng.standard_normal((4, 3)), rng.standard_normal(shape)
    ours, theirs = grads
    if isinstance(theirs, type):
        assert ours is theirs or issubclass(ours, theirs)
        return
    for g, h in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(g, h, rtol=1e-12)


@pytest.mark.parametrize(
    "call",
    [
        lambda lib: lib.ones(2, 3) @ lib.ones(2, 3, dtype=lib.float64),
        lambda lib: lib.ones(2, 3).mm(lib.ones(2, 3, dtype=lib.int64)),
        lambda lib: lib.ones(2, 2, 3).bmm(lib.ones(2, 2, 3, dtype=lib.float64)),
        lambda lib: lib.nn.functional.linear(lib.ones(2, 3), lib.ones(4, 2, dtype=lib.float64)),
        lambda lib: lib.ones(2, 3, dtype=lib.int64).add_(lib.ones(4)),
        lambda lib: lib.nn.functional.conv2d(
            lib.ones(1, 2, 3, 3), lib.ones(1, 3, 1, 1, dtype=lib.float64)
        ),
    ],
)
def test_wrong_shapes_are_reported_before_wrong_dtypes(call):
    """Shapes and dtypes both wrong: the shape error first, PyTorch's order."""
    with pytest.raises(RuntimeError) as raised:
        call(tg)
    assert not isinstance(raised.value, tg.DtypeError), raised.value
    assert "dtype" not in str(raised.value), raised.value


# --------------------------------------------------------------------------- losses, dropout
def test_losses_refuse_as_pytorch(torch):
    calls = {
        "kl_div_ints": lambda lib: lib.nn.functional.kl_div(lib.ones(3), lib.ones(3).long()),
        "bce_bools": lambda lib: lib.nn.functional.binary_cross_entropy(
            lib.ones(3).bool(), lib.ones(3).bool()
        ),
        "bce_target_dtype": lambda lib: lib.nn.functional.binary_cross_entropy(
            lib.ones(3).double() / 2, lib.ones(3)
        ),
        "soft_margin_target_grad": lambda lib: lib.nn.functional.soft_margin_loss(
            lib.ones(3), lib.ones(3).requires_grad_()
        ),
        "nll_0d": lambda lib: lib.nn.functional.nll_loss(lib.tensor(1.0), lib.ones(3)),
        "ce_batch": lambda lib: lib.nn.functional.cross_entropy(lib.ones(1, 2, 3), lib.ones(2, 1)),
        "dropout_ints": lambda lib: lib.nn.functional.dropout(lib.ones(3).long()),
        "dropout_empty_ints": lambda lib: lib.nn.functional.dropout2d(lib.ones(0).long()),
        "dropout2d_1d": lambda lib: lib.nn.functional.dropout2d(lib.ones(3)),
        "sdpa_ints": lambda lib: lib.nn.functional.scaled_dot_product_attention(
            *[lib.ones(2, 3).long()] * 3
        ),
        "layer_norm_ints": lambda lib: lib.nn.functional.layer_norm(lib.ones(2, 3).long(), (3,)),
    }
    for name, call in calls.items():
        ours, theirs = both(torch, call)
        if isinstance(theirs, type):
            assert isinstance(ours, type) and issubclass(ours, theirs), (name, ours, theirs)
        else:
            assert not isinstance(ours, type), (name, ours)


def test_dropout_of_an_integer_tensor_is_an_error_not_numpys():
    with pytest.raises(RuntimeError, match="can't be cast"):
        F.dropout2d(tg.ones(2, 3, 4, 1, dtype=tg.int32))
    assert F.dropout1d(tg.ones(2, 0, dtype=tg.int32)).shape == (2, 0)


def test_logit_gradient_outside_its_domain_is_nan_as_pytorchs():
    x = tg.tensor([-0.5, 0.0, 0.25, 1.0, 1.5], dtype=tg.float64, requires_grad=True)
    x.logit().sum().backward()
    grad = x.grad.numpy()
    assert np.isnan(grad[[0, 4]]).all() and np.isinf(grad[[1, 3]]).all()
    assert grad[2] == pytest.approx(1 / 0.25 + 1 / 0.75)
    y = tg.tensor([-0.5, 0.25], dtype=tg.float64, requires_grad=True)
    y.logit(eps=0.1).sum().backward()
    assert y.grad.tolist()[0] == 0.0


def test_sum_to_size_of_a_0d_tensor_sums_it_as_pytorch():
    """PyTorch sums a 0-d tensor to () whatever it holds, so bools and ints become int64."""
    assert tg.tensor(True).sum_to_size(()).dtype == tg.int64
    assert tg.tensor(3, dtype=tg.int32).sum_to_size(()).dtype == tg.int64
    assert tg.tensor(2.5, dtype=tg.float16).sum_to_size(()).dtype == tg.float16
    assert tg.ones(1, dtype=tg.bool).sum_to_size(1).dtype == tg.bool  # nothing summed
    assert tg.ones(2, dtype=tg.bool).sum_to_size(1).tolist() == [2]
