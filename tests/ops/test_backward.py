"""Every registered op's backward: directional derivative, full Jacobian, zero upstream,
repeatability, dtypes and shapes, views, partial requires_grad, and second derivatives.

The numeric checks run in float64 with ε = 1e-6: the central difference's rounding error is
about 1e-16·|f|/ε ≈ 1e-10 and its truncation error ε²·f''' ≈ 1e-12, so a tolerance of 1e-6
leaves room for rounding and none for a wrong formula. Conventions at kinks and ties are
checked by value at the end of this file.
"""

from __future__ import annotations

import contextlib
import math

import numpy as np
import pytest

import tensorgrad as tg
import tensorgrad.autograd.forward_ad as fwAD
from tensorgrad.autograd.finite_differences import GradcheckWarning, gradcheck, gradgradcheck
from tests.ops.registry import REGISTRY, cases, outputs

GRAD_CASES = cases(differentiable=True, grad=True)
#: samples small enough for the full Jacobian (one backward per output element)
SMALL_CASES = cases(differentiable=True, grad=True, max_size=40)
SECOND_ORDER_CASES = [
    case
    for case in cases(differentiable=True, grad=True, max_size=60)
    if not case.values[0].second_order
]
MULTI_INPUT_CASES = [case for case in GRAD_CASES if len(case.values[1].args) > 1]
VIEW_CASES = [case for case in GRAD_CASES if set(case.values[1].layouts) - {"C"}]
#: the ops PyTorch defines no derivative for: recorded, but backward refuses
NO_DERIVATIVE = [info for info in REGISTRY if info.no_derivative]


def as_fn(info, sample):
    return lambda *tensors: info.call(tensors, sample)


def weights_for(results, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(o.shape).astype(o.dtype) for o in results]


def gradients(info, sample, tensors, *, seed=0, **kwargs):
    """d(sum(out * W))/d(tensor) for each tensor, by ``tg.grad``; zeros where unused."""
    results = [o for o in outputs(info.call(tensors, sample)) if o.requires_grad]
    weights = weights_for(results, seed)
    wanted = [t for t in tensors if t.requires_grad]
    grads = tg.grad(results, wanted, weights, allow_unused=True, **kwargs)
    return [
        np.zeros(t.shape) if g is None else g.numpy() for g, t in zip(grads, wanted, strict=True)
    ]


# --------------------------------------------------------------------------- numeric checks
def rounding_warning(info):
    """gradcheck warns when fn rounds to float32 on the way (the cast entries)."""
    if info.out_dtype == np.float32:
        return pytest.warns(GradcheckWarning, match="float32 outputs")
    return contextlib.nullcontext()


@pytest.mark.parametrize(("info", "sample"), GRAD_CASES)
def test_directional_derivative(info, sample):
    fn = as_fn(info, sample)
    with rounding_warning(info):
        assert gradcheck(
            fn, sample.tensors(), eps=info.eps, atol=info.atol, rtol=info.rtol, n_directions=2
        )


@pytest.mark.parametrize(("info", "sample"), SMALL_CASES)
def test_full_jacobian(info, sample):
    fn = as_fn(info, sample)
    with rounding_warning(info):
        assert gradcheck(
            fn, sample.tensors(), mode="jacobian", eps=info.eps, atol=info.atol, rtol=10 * info.rtol
        )


@pytest.mark.parametrize(("info", "sample"), SECOND_ORDER_CASES)
def test_second_derivative(info, sample):
    fn = as_fn(info, sample)
    # (an entry that rounds to float32 on the way, a cast, loosens its step and tolerances:
    # the gradient outputs are checked too, and they pass through the rounding)
    eps, atol, rtol = max(info.eps, 1e-6), max(info.atol, 1e-5), max(info.rtol, 1e-5)
    assert gradgradcheck(fn, sample.tensors(), eps=eps, atol=atol, rtol=rtol, n_directions=2)


# --------------------------------------------------------------------------- exact properties
@pytest.mark.parametrize(("info", "sample"), GRAD_CASES)
def test_zero_upstream_gives_zero_gradients(info, sample):
    tensors = sample.tensors()
    results = [o for o in outputs(info.call(tensors, sample)) if o.requires_grad]
    zeros = [np.zeros(o.shape, o.dtype) for o in results]
    for g in tg.grad(results, tensors, zeros, allow_unused=True):
        assert g is None or np.all(g.numpy() == 0), g


@pytest.mark.parametrize(("info", "sample"), GRAD_CASES)
def test_repeated_backward_is_identical(info, sample):
    tensors = sample.tensors()
    results = [o for o in outputs(info.call(tensors, sample)) if o.requires_grad]
    weights = weights_for(results)
    first = tg.grad(results, tensors, weights, retain_graph=True, allow_unused=True)
    second = tg.grad(results, tensors, weights, retain_graph=True, allow_unused=True)
    rebuilt = gradients(info, sample, tensors)
    for a, b, c in zip(first, second, rebuilt, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        np.testing.assert_array_equal(a.numpy(), c)
    # .backward accumulates: twice the same graph gives exactly twice the gradient
    tg.backward(results, weights, retain_graph=True)
    tg.backward(results, weights)
    for t, g in zip(tensors, first, strict=True):
        np.testing.assert_array_equal(t.grad.numpy(), g.numpy() + g.numpy())


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize(("info", "sample"), GRAD_CASES)
def test_gradient_dtype_and_shape(info, sample, dtype):
    tensors = sample.tensors(dtype)
    results = [o for o in outputs(info.call(tensors, sample)) if o.requires_grad]
    tg.backward(results, weights_for(results))
    for t in tensors:
        assert t.grad is not None
        assert t.grad.shape == t.shape
        assert t.grad.dtype == t.dtype, f"{dtype.__name__} input, {t.grad.dtype} gradient"
        assert np.all(np.isfinite(t.grad.numpy()))


@pytest.mark.parametrize(("info", "sample"), GRAD_CASES)
def test_create_graph_gives_the_same_gradients(info, sample):
    """The VJPs run on Tensors (create_graph=True) agree with the VJPs run on arrays."""
    plain = gradients(info, sample, sample.tensors())
    recorded = gradients(info, sample, sample.tensors(), create_graph=True)
    for a, b in zip(plain, recorded, strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize(("info", "sample"), MULTI_INPUT_CASES)
def test_gradient_of_one_input_alone(info, sample):
    """With only one input requiring grad, its gradient is unchanged (others are skipped)."""
    full = gradients(info, sample, sample.tensors())
    for i in range(len(sample.args)):
        tensors = sample.tensors(requires_grad=False)
        tensors[i].requires_grad_()
        (alone,) = gradients(info, sample, tensors)
        np.testing.assert_array_equal(alone, full[i])


@pytest.mark.parametrize(("info", "sample"), VIEW_CASES)
def test_views_give_the_gradients_of_contiguous_copies(info, sample):
    views = sample.tensors()
    assert any(not t.numpy().flags.c_contiguous for t in views)
    copies = [tg.Tensor(np.ascontiguousarray(t.numpy()), requires_grad=True) for t in views]
    for a, b in zip(gradients(info, sample, views), gradients(info, sample, copies), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("info", NO_DERIVATIVE, ids=lambda info: info.name)
def test_an_op_without_a_derivative_is_recorded_and_refuses_backward(info):
    """As PyTorch's: the result requires grad, and backward (or forward mode) through it is
    an error naming the op, not a silent zero."""
    sample = info.samples()[0]
    results = outputs(info.call(sample.tensors(), sample))
    assert all(o.requires_grad for o in results)
    with pytest.raises(RuntimeError, match="derivative .* is not implemented"):
        tg.backward(results, [np.ones(o.shape) for o in results])
    with fwAD.dual_level(), pytest.raises(RuntimeError, match="has no JVP rule"):
        duals = [fwAD.make_dual(t.detach(), tg.ones_like(t)) for t in sample.tensors()]
        info.call(duals, sample)


# --------------------------------------------------------------------------- conventions
def leaf(values):
    return tg.tensor(np.asarray(values, dtype=np.float64), requires_grad=True)


def grad_of(fn, *values):
    tensors = [leaf(v) for v in values]
    result = fn(*tensors)
    result.backward(np.ones(result.shape))
    return [t.grad.numpy() for t in tensors]


CONVENTIONS = [
    # (description, function, inputs, expected gradients)
    ("relu'(0) = 0", lambda x: x.relu(), [[-1.0, 0.0, 2.0]], [[0.0, 0.0, 1.0]]),
    ("abs'(0) = 0", lambda x: abs(x), [[-1.0, 0.0, 2.0]], [[-1.0, 0.0, 1.0]]),
    ("leaky_relu'(0) = slope", lambda x: x.leaky_relu(0.1), [[-1.0, 0.0, 2.0]], [[0.1, 0.1, 1.0]]),
    (
        "clip passes at its bounds",
        lambda x: x.clip(-1.0, 1.0),
        [[-2.0, -1.0, 0.0, 1.0, 2.0]],
        [[0.0, 1.0, 1.0, 1.0, 0.0]],
    ),
    (
        "clamp with tensor bounds: min > max gives max the gradient",
        lambda x, low, high: x.clamp(low, high),
        [[-2.0, 0.0, 2.0], [0.5] * 3, [-0.5] * 3],
        [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [1.0, 1.0, 1.0]],
    ),
    (
        "clamp with tensor bounds: min == max, ties pass to x",
        lambda x, low, high: x.clamp(low, high),
        [[-1.0, 0.5, 2.0], [0.5] * 3, [0.5] * 3],
        [[0.0, 1.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 1.0]],
    ),
    (
        "clamp with a tensor min: a tie passes to x",
        lambda x, low: x.clamp(min=low),
        [[-1.0, 0.5, 2.0], [0.5] * 3],
        [[0.0, 1.0, 1.0], [1.0, 0.0, 0.0]],
    ),
    (
        "clamp with a tensor max: a tie passes to x",
        lambda x, high: x.clamp(max=high),
        [[-1.0, 0.5, 2.0], [0.5] * 3],
        [[1.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
    ),
    ("max ties share evenly", lambda x: x.max(), [[1.0, 3.0, 3.0]], [[0.0, 0.5, 0.5]]),
    (
        "amax ties per row",
        lambda x: x.amax(dim=1),
        [[[2.0, 2.0, 2.0], [1.0, 5.0, 0.0]]],
        [[[1 / 3, 1 / 3, 1 / 3], [0.0, 1.0, 0.0]]],
    ),
    (
        "amin ties share evenly",
        lambda x: x.amin(dim=0),
        [[[1.0, 2.0], [1.0, 3.0]]],
        [[[0.5, 1.0], [0.5, 0.0]]],
    ),
    (
        "maximum ties split",
        lambda x, y: tg.maximum(x, y),
        [[1.0, 2.0, 3.0], [1.0, 5.0, 0.0]],
        [[0.5, 0.0, 1.0], [0.5, 1.0, 0.0]],
    ),
    (
        "minimum ties split",
        lambda x, y: tg.minimum(x, y),
        [[1.0, 2.0], [1.0, 5.0]],
        [[0.5, 1.0], [0.5, 0.0]],
    ),
    ("maximum(x, x) = x", lambda x: tg.maximum(x, x), [[1.0, -2.0]], [[1.0, 1.0]]),
    ("x ** 0 has zero gradient at 0", lambda x: x**0, [[0.0, 2.0]], [[0.0, 0.0]]),
    ("x ** 2 at 0", lambda x: x**2, [[0.0, -1.5]], [[0.0, -3.0]]),
    (
        "d(x ** y)/dy is 0 at x = 0",
        lambda x, y: x**y,
        [[0.0, 2.0], [2.0, 3.0]],
        [[0.0, 12.0], [0.0, 8 * np.log(2.0)]],
    ),
    (
        "repeated indices accumulate",
        lambda x: x[np.array([0, 0, 2, 0])],
        [[1.0, 2.0, 3.0]],
        [[3.0, 0.0, 1.0]],
    ),
    (
        "repeated index pairs accumulate",
        lambda x: x[np.array([1, 1]), np.array([0, 0])],
        [[[1.0, 2.0], [3.0, 4.0]]],
        [[[0.0, 0.0], [2.0, 0.0]]],
    ),
    (
        "mask selects once",
        lambda x: x[np.array([True, False, True])],
        [[1.0, 2.0, 3.0]],
        [[1.0, 0.0, 1.0]],
    ),
    (
        "std of a constant slice has zero gradient",  # values whose mean is exact
        lambda x: x.std(dim=1),
        [[[1.5, 1.5, 1.5], [1.0, 2.0, 4.0]]],
        [[[0.0, 0.0, 0.0], [c / (6 * math.sqrt(7 / 3)) for c in (-4, -1, 5)]]],
    ),
    (
        "std (correction 0) of one element has zero gradient",
        lambda x: x.std(dim=0, correction=0),
        [[[1.5, -2.0]]],
        [[[0.0, 0.0]]],
    ),
    (
        "2-norm of a zero vector has zero gradient",
        lambda x: x.norm(dim=1),
        [[[0.0, 0.0], [3.0, 4.0]]],
        [[[0.0, 0.0], [0.6, 0.8]]],
    ),
    (
        "1-norm at zero: sign(0) = 0",
        lambda x: x.norm(1),
        [[0.0, -2.0, 3.0]],
        [[0.0, -1.0, 1.0]],
    ),
    (
        "3-norm of a zero vector has zero gradient",
        lambda x: x.norm(3, dim=0),
        [[[0.0], [0.0]]],
        [[[0.0], [0.0]]],
    ),
    (
        "inf-norm ties share evenly",
        lambda x: x.norm(float("inf")),
        [[[3.0, 1.0], [3.0, -3.0]]],
        [[[1 / 3, 0.0], [1 / 3, -1 / 3]]],
    ),
    (
        "-inf-norm of a zero vector has zero gradient",
        lambda x: x.norm(-float("inf"), dim=1),
        [[[0.0, 2.0], [-1.0, 3.0]]],
        [[[0.0, 0.0], [-1.0, 0.0]]],
    ),
    ("0-norm has zero gradient", lambda x: x.norm(0), [[0.0, 2.0, -1.0]], [[0.0, 0.0, 0.0]]),
    (
        "setitem: each repeated write of a value gets the gradient (PyTorch's rule)",
        lambda x, v: _written(x, np.array([0, 2, 0]), v),
        [[0.0, 0.0, 0.0, 0.0], [1.0, 2.0, 3.0]],
        [[0.0, 1.0, 0.0, 1.0], [1.0, 1.0, 1.0]],
    ),
    (
        "setitem: a broadcast value written twice to one place counts twice (PyTorch's rule)",
        lambda x, v: _written(x, np.array([0, 2, 0]), v),
        [[0.0, 0.0, 0.0, 0.0], 3.0],
        [[0.0, 1.0, 0.0, 1.0], 3.0],
    ),
    (
        "gather: repeated indices accumulate",
        lambda x: x.gather(0, tg.tensor([1, 1, 0, 1])),
        [[5.0, 6.0, 7.0]],
        [[1.0, 3.0, 0.0]],
    ),
    (
        "scatter_add: repeated indices each take the gradient",
        lambda x, src: x.scatter_add(0, tg.tensor([2, 2, 0]), src),
        [[0.0, 0.0, 0.0], [1.0, 2.0, 3.0]],
        [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]],
    ),
    (
        "prod with one zero: the zero gets the product of the others, the rest 0",
        lambda x: x.prod(),
        [[2.0, 0.0, -3.0]],
        [[0.0, -6.0, 0.0]],
    ),
    (
        "prod with two zeros in a slice: 0 for all of it",
        lambda x: x.prod(1),
        [[[0.0, 2.0, 0.0], [1.5, 0.0, 4.0]]],
        [[[0.0, 0.0, 0.0], [0.0, 6.0, 0.0]]],
    ),
    ("prod of a 0-d zero passes the gradient", lambda x: x.prod(), [0.0], [1.0]),
    (
        "nextafter passes x's gradient (at inf and NaN too) but at ties, as PyTorch; y gets 0",
        lambda x, y: x.nextafter(y),
        [[1.0, 0.0, np.inf, np.nan, 2.0, -np.inf], [2.0, 0.0, -3.0, 1.0, np.nan, -np.inf]],
        [[1.0, 0.0, 1.0, 1.0, 1.0, 0.0], [0.0] * 6],
    ),
    ("x * x reuses an input", lambda x: x * x, [[3.0, -1.0]], [[6.0, -2.0]]),
    ("add hands one array to both sides", lambda x: x + x, [[3.0, -1.0]], [[2.0, 2.0]]),
]


def _written(x, index, value):
    """A copy of ``x`` with ``value`` written at ``index`` (recorded: setitem)."""
    out = x.clone()
    out[index] = value
    return out


@pytest.mark.parametrize(
    ("fn", "values", "expected"), [pytest.param(f, v, e, id=d) for d, f, v, e in CONVENTIONS]
)
def test_convention(fn, values, expected):
    for got, want in zip(grad_of(fn, *values), expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-15, atol=0)


def test_pow_gradient_for_exponent_is_nan_for_negative_base():
    x, y = leaf([-2.0]), leaf([2.0])
    (x**y).sum().backward()
    assert np.isnan(y.grad.numpy()[0])
    assert x.grad.numpy()[0] == -4.0


def test_clamp_with_bounds_larger_than_the_input_sums_the_gradient_back():
    """A tensor bound may broadcast the input to a larger shape (as in PyTorch): the input's
    gradient is summed back to its own shape."""
    x, low = leaf([0.1, 0.5, 0.9]), leaf(np.full((2, 3), 0.4))
    out = x.clamp(low)
    assert out.shape == (2, 3)
    out.backward(np.ones((2, 3)))
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 2.0, 2.0])
    np.testing.assert_array_equal(low.grad.numpy(), [[1.0, 0.0, 0.0]] * 2)


# ----------------------------------------------------------------------- conventions, one by one
def test_max_ties_share_the_gradient_evenly():
    x = leaf([1.0, 3.0, 3.0, 2.0])
    x.max().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.5, 0.5, 0.0])


def test_amin_ties_along_an_axis_share_the_gradient():
    x = leaf([[1.0, 1.0, 1.0], [0.0, 5.0, 6.0]])
    x.amin(axis=1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[1 / 3, 1 / 3, 1 / 3], [1.0, 0.0, 0.0]])


def test_min_along_a_dim_sends_the_gradient_to_its_index():
    """PyTorch's ``min(dim)`` returns (values, indices); the gradient goes to the index,
    the first minimum on ties."""
    x = leaf([[1.0, 1.0, 1.0], [0.0, 5.0, 6.0]])
    values, indices = x.min(dim=1)
    assert indices.tolist() == [0, 0] and indices.dtype == np.int64
    values.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]])


def test_maximum_ties_split_between_inputs():
    x, y = leaf([1.0, 2.0]), leaf([1.0, 0.0])
    tg.maximum(x, y).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.5, 1.0])
    np.testing.assert_array_equal(y.grad.numpy(), [0.5, 0.0])


@pytest.mark.parametrize("fn", [lambda t: t.relu(), lambda t: t.abs()], ids=["relu", "abs"])
def test_kink_derivative_at_zero_is_zero(fn):
    x = leaf([0.0, -0.0])
    fn(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0])


def test_prod_second_derivative_at_zeros():
    """d²(x₀x₁x₂)/dx_i dx_j is the third element, also where the elements are 0: backward's
    zero branch stays differentiable (a where-mask alone would give 0 there)."""
    x = tg.tensor([0.0, 0.0, 3.0], dtype=tg.float64, requires_grad=True)
    (g,) = tg.autograd.grad(x.prod(), x, create_graph=True)
    hessian = [tg.autograd.grad(g[i], x, retain_graph=True)[0].numpy() for i in range(3)]
    np.testing.assert_array_equal(g.detach().numpy(), [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(hessian, [[0.0, 3.0, 0.0], [3.0, 0.0, 0.0], [0.0, 0.0, 0.0]])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_selects_its_gradient_so_an_infinite_one_stays_off_the_negatives(dtype):
    """PyTorch's ReLU backward is ``x <= 0 ? 0 : grad``: inf or NaN upstream at x <= 0 gives 0
    (lp_pool's gradient at an all-zero window depends on it), while a plain product gave NaN."""
    x = tg.tensor(np.array([-1.0, 0.0, 2.0, -3.0, 4.0], dtype=dtype), requires_grad=True)
    upstream = np.array([np.inf, np.nan, np.nan, -np.inf, 5.0], dtype=dtype)
    x.relu().backward(tg.tensor(upstream))
    np.testing.assert_array_equal(x.grad.numpy(), np.array([0, 0, np.nan, 0, 5], dtype=dtype))
    assert x.grad.dtype == dtype
    y = tg.tensor(np.array([-1.0, 2.0], dtype=dtype), requires_grad=True)
    (y.relu() * 2).backward(tg.tensor(np.array([np.inf, 1.0], dtype=dtype)))  # a fresh gradient
    np.testing.assert_array_equal(y.grad.numpy(), [0.0, 2.0])
    with fwAD.dual_level():
        dual = fwAD.make_dual(tg.tensor(np.array([-1.0, 2.0])), tg.tensor([np.inf, 3.0]))
        np.testing.assert_array_equal(fwAD.unpack_dual(dual.relu()).tangent.numpy(), [0.0, 3.0])


def test_lp_pool_of_an_all_zero_window_has_a_zero_gradient():
    """PyTorch's documented rule ("if the sum of all inputs to the power of p is zero, the
    gradient is set to zero as well"), by its ReLU's select."""
    x = tg.tensor(np.array([[[0.0, 3.0, 0.0, -4.0]]]), requires_grad=True)
    tg.nn.functional.lp_pool1d(x, 2, 1).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[[0.0, 1.0, 0.0, -1.0]]])


def test_cumprod_gradient_before_and_at_a_zero_ignores_what_follows_it():
    """The outputs from a slice's first zero on are 0 (or 0 · inf = NaN) and do not depend
    on the elements before it: PyTorch's rule, which the fuzz found NaN-ed here."""
    x = tg.tensor(np.array([np.inf, -2.0, 0.0]), requires_grad=True)
    tg.cumprod(x, 0).backward(tg.ones(3))
    # d/dx0: NaN (inf + -inf from out0, out1); d/dx1 = out1 / x1 = inf; at the zero: x0 · x1
    np.testing.assert_array_equal(x.grad.numpy(), [np.nan, np.inf, -np.inf])


@pytest.mark.parametrize("method", ["addcmul", "addcdiv"])
def test_addcmul_and_addcdiv_with_an_empty_result_give_an_infinite_factor_zero(method):
    self_ = tg.tensor(np.zeros(0), requires_grad=True)
    t1 = tg.tensor(np.array(np.inf), requires_grad=True)
    t2 = tg.tensor(np.array([[0.5], [-2.0]]), requires_grad=True)
    out = getattr(self_, method)(t1, t2)
    assert out.shape == (2, 0)
    out.sum().backward()
    assert t1.grad.item() == 0.0
    np.testing.assert_array_equal(t2.grad.numpy(), np.zeros((2, 1)))
