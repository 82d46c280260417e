"""The fused kernels of ``tensorgrad/_jit`` against the NumPy code of the ops that call them:
each op run both ways on 0-d, empty, broadcast, non-contiguous, float32 and float64 inputs,
equal bit for bit where the kernel does the same operations, within the stated bound where
it does not. A spy on ``_jit.run`` checks that the kernel really ran."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("numba")

import tensorgrad as tg
from tensorgrad import _jit
from tensorgrad.ops.activation import Gelu
from tensorgrad.ops.norm import LayerNorm

DTYPES = [np.float32, np.float64]


def both_ways(monkeypatch, compute, fast_exp=False):
    """``compute()`` with the kernels off, then on (with NumPy's exp but for ``fast_exp``:
    the kernels' own float32 exp, which the bit-for-bit comparisons leave out)."""
    monkeypatch.setattr(_jit, "FAST_EXP", fast_exp)
    monkeypatch.setattr(_jit, "ENABLED", False)
    plain = compute()
    monkeypatch.setattr(_jit, "ENABLED", True)
    return plain, compute()


def assert_bitwise_equal(fused, plain):
    for a, b in zip(fused, plain):
        assert a.shape == b.shape and a.dtype == b.dtype
        assert np.array_equal(a, b, equal_nan=True)
        assert np.array_equal(np.signbit(a), np.signbit(b))


def inputs(dtype, shape=(3, 5)):
    """0-d, empty, a broadcast view, non-contiguous views, special values."""
    rng = np.random.default_rng(0)
    big = (rng.standard_normal((6, 2 * shape[1])) * 3).astype(dtype)
    specials = np.array(
        [0.0, -0.0, 1e-40, -1e-40, 1e30, -1e30, np.inf, -np.inf, np.nan, 5.8, -5.8, -0.75],
        dtype,
    )
    return {
        "0-d": np.array(-0.3, dtype),
        "empty": np.zeros((0, 4), dtype),
        "broadcast": np.broadcast_to(big[0], (4, big.shape[1])),
        "strided": big[:, ::2],
        "transposed": big.T,
        "specials": specials,
        "normal": (rng.standard_normal((2, 3, 64)) * 2).astype(dtype),
    }


# ------------------------------------------------------------------------------- GELU


def gelu_both_ways(monkeypatch, x, approximate, fast_exp=False):
    grad = np.linspace(-2, 2, x.size).reshape(x.shape).astype(x.dtype)

    def compute():
        op = Gelu(approximate)
        with np.errstate(all="ignore"):
            out = op.forward(x)
            return out, op.backward(grad, out, x)[0]

    return both_ways(monkeypatch, compute, fast_exp)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("case", list(inputs(np.float32)))
@pytest.mark.parametrize("dtype", DTYPES)
def test_gelu_kernels_equal_numpy_bit_for_bit(monkeypatch, ran, dtype, case, approximate):
    if dtype == np.float64 and approximate == "none":
        pytest.skip("float64 erf is libm's in the kernel: the next test")
    x = inputs(dtype)[case]
    plain, fused = gelu_both_ways(monkeypatch, x, approximate)
    assert_bitwise_equal(fused, plain)
    if approximate == "tanh":
        assert ran == ["gelu_tanh_forward", "gelu_tanh_backward"]
    else:
        assert ran == ["gelu_erf_forward", "gelu_erf_backward"]


@pytest.mark.parametrize("case", list(inputs(np.float32)))
def test_float32_gelu_backward_with_the_kernels_exp(monkeypatch, ran, case):
    """With ``FAST_EXP``, the erf GELU's float32 VJP takes its exp(−x²/2) from the kernels'
    own exp (within 1 ulp): the slope g·(Φ + x·φ) is within a few roundings of NumPy's
    lines, relative to g·max(1, |x|); the forward is unchanged, bit for bit."""
    x = inputs(np.float32)[case]
    (out0, slope0), (out1, slope1) = gelu_both_ways(monkeypatch, x, "none", fast_exp=True)
    assert ran == ["gelu_erf_forward", "gelu_erf_backward_fast"]
    assert_bitwise_equal([out1, np.isnan(slope1)], [out0, np.isnan(slope0)])
    grad = np.linspace(-2, 2, x.size).reshape(x.shape).astype(np.float32)
    finite = np.isfinite(x)
    bound = 4 * np.finfo(np.float32).eps * np.abs(grad) * np.maximum(1, np.abs(x))
    assert np.all(np.abs(slope1 - slope0)[finite] <= bound[finite])


@pytest.mark.parametrize("case", list(inputs(np.float64)))
def test_float64_gelu_uses_libm_erf_within_one_ulp_of_one(monkeypatch, ran, case):
    """libm's erf and SciPy's differ in the last bits: Φ within 2⁻⁵² absolute (an ulp of
    1), so GELU within that times |x|, and its slope within it times |g|."""
    x = inputs(np.float64)[case]
    (out0, slope0), (out1, slope1) = gelu_both_ways(monkeypatch, x, "none")
    assert ran == ["gelu_erf_forward_f64", "gelu_erf_backward"]
    eps = np.finfo(np.float64).eps
    assert_bitwise_equal([np.isnan(out1), np.isnan(slope1)], [np.isnan(out0), np.isnan(slope0)])
    finite = np.isfinite(x)
    with np.errstate(invalid="ignore"):  # inf - inf where x is ±inf
        assert np.all(np.abs(out1 - out0)[finite] <= (eps * np.abs(x))[finite])
    grad = np.linspace(-2, 2, x.size).reshape(x.shape)
    assert np.all(np.abs(slope1 - slope0)[finite] <= 2 * eps * np.abs(grad)[finite])


def test_float64_erf_of_the_kernel_is_close_to_scipy_s_on_many_points(ran):
    from scipy.special import erf

    x = np.linspace(-8, 8, 200_001)
    _, cdf = _jit.run("gelu_erf_forward_f64", x) or pytest.fail("the kernel did not run")
    reference = 0.5 * (1 + erf(x / math.sqrt(2)))
    assert np.max(np.abs(cdf - reference)) <= np.finfo(np.float64).eps


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_through_tensors_gives_the_same_gradients(monkeypatch, ran, approximate):
    x0 = np.random.default_rng(1).standard_normal((4, 8)).astype(np.float32)

    def compute():
        x = tg.tensor(x0, requires_grad=True)
        y = tg.nn.functional.gelu(x, approximate=approximate)
        (y * y).sum().backward()
        return y.detach().numpy(), x.grad.numpy()

    plain, fused = both_ways(monkeypatch, compute)
    assert_bitwise_equal(fused, plain)
    assert len(ran) == 2


def test_gelu_of_other_dtypes_runs_numpy(monkeypatch, ran):
    x = np.arange(6, dtype=np.float16).reshape(2, 3)
    plain, fused = gelu_both_ways(monkeypatch, x, "none")
    assert_bitwise_equal(fused, plain)
    assert ran == []


# ------------------------------------------------------------------------------- layer norm


def layer_norm_cases(dtype):
    rng = np.random.default_rng(2)
    n = 24
    big = rng.standard_normal((5, 2 * n)).astype(dtype)
    w, b = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    return {
        "rows": (rng.standard_normal((2, 7, n)).astype(dtype) * 3 + 1, w, b),
        "one row": (rng.standard_normal(n).astype(dtype), w, b),
        "empty rows": (np.zeros((0, n), dtype), w, b),
        "broadcast": (np.broadcast_to(big[0, :n], (3, n)), w, b),
        "strided": (big[:, ::2], w, b),
        "broadcast weight": (big[:, :n], np.broadcast_to(w[:1], (n,)), b),
        "long rows": (rng.standard_normal((3, 301)).astype(dtype), *np.ones((2, 301), dtype)),
        "specials": (
            np.array([[1e30, 0, 0, 1], [np.nan, 0, 1, 2]], dtype),
            *np.ones((2, 4), dtype),
        ),
    }


def layer_norm_both_ways(monkeypatch, x, w, b, dims=1):
    grad = np.cos(np.arange(x.size)).reshape(x.shape).astype(x.dtype)

    def compute():
        op = LayerNorm(dims, 1e-5)
        op.needs_input_grad = (True, True, True)
        with np.errstate(all="ignore"):
            out = op.forward(x, w, b)
            return (out, *op.backward(grad, out, x, w, b))

    return both_ways(monkeypatch, compute)


@pytest.mark.parametrize("case", list(layer_norm_cases(np.float32)))
@pytest.mark.parametrize("dtype", DTYPES)
def test_layer_norm_kernels_equal_numpy_bit_for_bit(monkeypatch, ran, dtype, case):
    """The kernels sum through the same BLAS calls as the NumPy code (``ops.sums``) and do
    its elementwise operations in its order: the same bits, NaN and signs included."""
    x, w, b = layer_norm_cases(dtype)[case]
    plain, fused = layer_norm_both_ways(monkeypatch, x, w, b)
    assert_bitwise_equal(fused, plain)
    if x.size == 0:  # nothing to normalise: NumPy's forward
        assert "layer_norm_forward" not in ran
    else:
        assert ran == ["layer_norm_forward", "layer_norm_backward"]


@pytest.mark.parametrize("n", [64, 256])
def test_layer_norm_kernels_at_the_gpts_shapes(monkeypatch, ran, n):
    """(1024, n) float32 rows, as the GPTs' blocks normalise them: bit for bit too (BLAS's
    blocked sums at a size where it takes its vector kernels)."""
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((1024, n)) * 2 + 0.5).astype(np.float32)
    w, b = rng.standard_normal((2, n)).astype(np.float32)
    plain, fused = layer_norm_both_ways(monkeypatch, x, w, b)
    assert_bitwise_equal(fused, plain)
    assert ran == ["layer_norm_forward", "layer_norm_backward"]


def test_layer_norm_through_tensors(monkeypatch, ran):
    rng = np.random.default_rng(4)
    x0, w0, b0 = rng.standard_normal((3, 4, 16)), rng.standard_normal(16), rng.standard_normal(16)

    def compute():
        x, w, b = (tg.tensor(a, requires_grad=True) for a in (x0, w0, b0))
        y = tg.nn.functional.layer_norm(x, (16,), w, b)
        (y * y).sum().backward()
        return y.detach().numpy(), x.grad.numpy(), w.grad.numpy(), b.grad.numpy()

    plain, fused = both_ways(monkeypatch, compute)
    assert_bitwise_equal(fused, plain)
    assert ran == ["layer_norm_forward", "layer_norm_backward"]


def test_layer_norm_without_an_input_gradient(monkeypatch, ran):
    rng = np.random.default_rng(5)
    x, w, b = rng.standard_normal((3, 8)), rng.standard_normal(8), rng.standard_normal(8)

    def compute():
        op = LayerNorm(1, 1e-5)
        op.needs_input_grad = (False, True, True)
        out = op.forward(x, w, b)
        return op.backward(np.ones_like(x), out, x, w, b)

    plain, fused = both_ways(monkeypatch, compute)
    assert plain[0] is None and fused[0] is None
    assert_bitwise_equal(fused[1:], plain[1:])
    assert ran == ["layer_norm_forward", "layer_norm_backward"]


# ------------------------------------------------------------------------------- cross-entropy


def cross_entropy_cases(dtype):
    rng = np.random.default_rng(6)
    logits = (rng.standard_normal((9, 13)) * 4).astype(dtype)
    special = logits[:3].copy()
    special[0] = -np.inf
    special[1, 2] = np.nan
    special[2, 5] = np.inf
    return {
        "rows": logits,
        "one class": logits[:, :1].copy(),
        "empty": np.zeros((0, 13), dtype),
        "broadcast": np.broadcast_to(logits[0], (5, 13)),
        "transposed": np.ascontiguousarray(logits.T).T,  # F order
        "strided": logits[:, ::2],
        "specials": special,
    }


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("case", list(cross_entropy_cases(np.float32)))
@pytest.mark.parametrize("dtype", DTYPES)
def test_cross_entropy_kernels_equal_numpy_bit_for_bit(
    monkeypatch, ran, dtype, case, reduction, smoothing
):
    from tensorgrad.ops.loss import CrossEntropy

    logits = cross_entropy_cases(dtype)[case]
    target = np.arange(logits.shape[0]) % logits.shape[1]
    grad = np.array(0.7, dtype) if reduction != "none" else np.linspace(1, 2, len(target))

    def compute():
        op = CrossEntropy(target, reduction, smoothing)
        with np.errstate(all="ignore"):
            out = op.forward(logits)
            return np.asarray(out), op.backward(grad.astype(dtype), out, logits)[0]

    plain, fused = both_ways(monkeypatch, compute)
    assert_bitwise_equal(fused, plain)
    if logits.size:  # (other layouts than C order: NumPy's forward, whose sums BLAS makes)
        forward = ["log_softmax_rows"] * logits.flags.c_contiguous
        assert ran == forward + ["cross_entropy_backward"] * (reduction != "none")


def float32_ulps(values: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """|values − exact| in float32 ulps at exact's magnitude (float64 ``exact``); a value
    that is exact's correct rounding (an infinity or a NaN too) counts 0."""
    with np.errstate(all="ignore"):
        rounded = exact.astype(np.float32)
        magnitude = np.abs(rounded)
        spacing = np.spacing(np.where(np.isinf(magnitude), np.float32(0), magnitude))
        errors = np.abs(values.astype(np.float64) - exact) / spacing.astype(np.float64)
    same = (values == rounded) | (np.isnan(values) & np.isnan(exact))
    return np.where(same, 0.0, errors)


def test_float32_exp_is_within_one_ulp(monkeypatch, ran):
    """The kernels' float32 exp (``_expf``) against float64's, rounded: within 1 ulp on
    normal, subnormal, underflowing and overflowing arguments, and exactly NumPy's on the
    specials; NumPy's own is within 2.4 here."""
    from tensorgrad._jit import kernels

    rng = np.random.default_rng(11)
    edges = [88.72, 88.73, -87.33, -103.2, -104.5]  # the largest, the subnormals, 0
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan]
    x = np.concatenate(
        [rng.uniform(-110, 90, 400_000), rng.uniform(-1, 1, 100_000), edges, specials]
    ).astype(np.float32)
    found = kernels.exp_float32(x)
    exact = np.exp(x.astype(np.float64))
    assert float32_ulps(found, exact).max() <= 1.0
    with np.errstate(over="ignore"):
        expected = np.exp(x[-len(specials) :])
    assert_bitwise_equal([found[-len(specials) :]], [expected])
    assert kernels.exp_float32(x[:0]).shape == (0,)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("case", ["rows", "one class", "specials", "wide"])
def test_cross_entropy_fast_exp_against_numpy(monkeypatch, ran, case, reduction):
    """float32 without smoothing: the exponentials by the JIT's exp, their sums in partial
    sums, only the targets' log-probabilities. The loss and gradient are within float32
    rounding of NumPy's (NaN where NumPy's is), and the kernel ran."""
    from tensorgrad.ops.loss import CrossEntropy

    cases = cross_entropy_cases(np.float32)
    rng = np.random.default_rng(12)
    cases["wide"] = (rng.standard_normal((7, 10_000)) * 3).astype(np.float32)
    logits = cases[case]
    target = np.arange(logits.shape[0]) % logits.shape[1]
    grad = np.float32(0.7) if reduction != "none" else np.linspace(1, 2, len(target), dtype="f4")

    def compute():
        op = CrossEntropy(target, reduction, 0.0)
        with np.errstate(all="ignore"):
            out = op.forward(logits)
            return np.asarray(out), op.backward(np.asarray(grad), out, logits)[0]

    plain, fused = both_ways(monkeypatch, compute, fast_exp=True)
    assert "softmax_exps_float32" in ran
    for a, b in zip(fused, plain, strict=True):
        assert a.dtype == b.dtype == np.float32 and a.shape == b.shape
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
        # each term within a few float32 roundings of a value of magnitude ≤ |log C| + |x|
        scale = 1.0 + np.log(logits.shape[1]) + np.nanmax(np.abs(logits[np.isfinite(logits)]))
        np.testing.assert_allclose(a, b, rtol=0, atol=8 * np.finfo(np.float32).eps * scale)


# ------------------------------------------------------------------------------- attention


def attention_cases(dtype):
    rng = np.random.default_rng(7)

    def qkv(*batch, length=5, keys=6, width=3):
        return tuple(
            rng.standard_normal((*batch, n, width)).astype(dtype) for n in (length, keys, keys)
        )

    q, k, v = qkv(2, 3)
    return {
        "batched": (q, k, v, {}),
        "causal": (*qkv(2, length=6), {"causal": True}),
        "no batch": (*qkv(), {}),
        "one query": (*qkv(4, length=1), {}),
        "broadcast key": (q, k[:1], v[:1], {}),
        "transposed query": (np.swapaxes(np.swapaxes(q, 0, 1).copy(), 0, 1), k, v, {}),
        "no keys": (*qkv(2, keys=0), {}),
        "more keys than queries, causal": (*qkv(3, length=4, keys=7), {"causal": True}),
        "specials, causal": (*_special_qkv(dtype), {"causal": True}),
        "a mask (NumPy's passes)": (q, k, v, {"mask": rng.standard_normal((5, 6)).astype(dtype)}),
    }


def _special_qkv(dtype):
    """Scores of ±inf, NaN, ±0 and huge values (a row of NaN, of inf − inf)."""
    q = np.array([[1.0, 0.0], [np.inf, 1.0], [np.nan, 0.0], [1e30, -1e30], [-0.0, 0.0]], dtype)
    k = np.array([[1.0, 2.0], [-1.0, 0.5], [0.0, -0.0], [1e-30, 3.0], [2.0, 1.0]], dtype)
    return q[None], k[None], k[None, :, ::-1].copy()


@pytest.mark.parametrize("case", list(attention_cases(np.float32)))
@pytest.mark.parametrize("dtype", DTYPES)
def test_attention_backward_kernel_equals_numpy_bit_for_bit(monkeypatch, ran, dtype, case):

    q, k, v, options = attention_cases(dtype)[case]

    def compute():
        return _attention_forward_backward(q, k, v, options, dtype)

    plain, fused = both_ways(monkeypatch, compute)
    assert_bitwise_equal(fused, plain)
    if k.shape[-2]:
        forward = ["attention_exponentials"] if "mask" not in options else []
        assert ran == [*forward, "divide_by_last_column", "attention_scores_gradient"]


def _attention_forward_backward(q, k, v, options, dtype):
    """The op's output and q's, k's and v's gradients (of a fixed upstream gradient)."""
    from tensorgrad.ops.attention import ScaledDotProductAttention

    options = dict(options)
    mask = options.pop("mask", None)
    op = ScaledDotProductAttention(0.5, **options)
    op.needs_input_grad = (True, True, True, False, False)
    with np.errstate(all="ignore"):
        out = op.forward(q, k, v, mask)
        grad = np.cos(np.arange(out.size)).reshape(out.shape).astype(dtype)
        return (out, *op.backward(grad, out, q, k, v, mask)[:3])


@pytest.mark.parametrize("case", list(attention_cases(np.float32)))
def test_float32_attention_with_the_kernels_exp(monkeypatch, ran, case):
    """With ``FAST_EXP``, float32 attention's softmax numerators take the kernels' exp
    (within 1 ulp): the output and gradients within float32 rounding of NumPy's."""

    q, k, v, options = attention_cases(np.float32)[case]

    def compute():
        return _attention_forward_backward(q, k, v, options, np.float32)

    plain, fused = both_ways(monkeypatch, compute, fast_exp=True)
    for a, b in zip(fused, plain, strict=True):
        assert a.dtype == b.dtype == np.float32 and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    if k.shape[-2]:
        forward = ["exp_float32_inplace" if "mask" in options else "attention_exponentials"]
        assert ran == [*forward, "divide_by_last_column", "attention_scores_gradient"]


@pytest.mark.parametrize("case", list(attention_cases(np.float32)))
def test_attention_exponentials_kernel_with_its_exp_is_the_exp_kernel_s(monkeypatch, ran, case):
    """The forward's fused passes with ``FAST_EXP``: bit for bit what NumPy's passes and
    then the kernels' own in-place exp give."""
    from tensorgrad.ops import attention

    q, k, _, options = attention_cases(np.float32)[case]
    if "mask" in options:
        return
    monkeypatch.setattr(_jit, "FAST_EXP", True)
    op = attention.ScaledDotProductAttention(0.5, **options)
    with np.errstate(all="ignore"):
        fused = op._exponentials(q, k, None)
        real_run = _jit.run
        monkeypatch.setattr(
            _jit,
            "run",
            lambda name, *a: None if name == "attention_exponentials" else real_run(name, *a),
        )
        plain = op._exponentials(q, k, None)
    assert_bitwise_equal([fused], [plain])
    if k.shape[-2]:  # (then the NumPy passes and the exp kernel)
        assert ran == ["attention_exponentials", "exp_float32_inplace"]
