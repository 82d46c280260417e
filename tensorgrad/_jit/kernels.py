"""The kernels of :mod:`tensorgrad._jit`: numba loops and the Python functions that shape
their arrays. Imported at the first kernel call (it imports numba).

Each loop does the NumPy code's operations in its order, in the array's dtype: the
constants come in as arrays of that dtype (a Python float in a numba loop would be a
float64, and turn a float32 computation into a float64 one), and nothing is compiled with
fastmath, so LLVM neither reorders nor fuses them.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable

import numba
import numpy as np

from tensorgrad._jit.cache import cache_dir


def _use_our_cache() -> None:
    """Compiled kernels of this package go to :func:`cache_dir` (numba's own choice would be
    ``__pycache__`` beside the source, unwritable in a system install); other numba code in
    the process keeps numba's settings."""
    try:
        from numba.core import caching

        class Locator(caching.UserProvidedCacheLocator):
            def __init__(self, py_func, py_file):
                self._py_file = py_file
                self._lineno = py_func.__code__.co_firstlineno
                self._cache_path = os.path.join(
                    str(cache_dir()), self.get_suitable_cache_subpath(py_file)
                )

            @classmethod
            def from_function(cls, py_func, py_file):
                if os.path.dirname(os.path.abspath(py_file)) != os.path.dirname(__file__):
                    return None
                return super(caching.UserProvidedCacheLocator, cls).from_function(py_func, py_file)

        classes = caching.CacheImpl._locator_classes
        if not any(c.__name__ == "Locator" and c.__module__ == __name__ for c in classes):
            classes.insert(0, Locator)
    except Exception:  # another numba's internals: its own cache locations then
        pass


_use_our_cache()
# error_model="numpy": a division by zero gives inf or NaN, as in NumPy (numba's default
# checks every division for a ZeroDivisionError, and a loop so checked is not vectorised)
jit = numba.njit(cache=True, nogil=True, error_model="numpy")


def _constants(dtype: np.dtype, *values: float) -> np.ndarray:
    """The read-only array of ``values`` in ``dtype``, made once (a recurrent layer's step
    kernels ask for the same one at every step)."""
    return _made_constants(np.dtype(dtype), values)


@functools.lru_cache(maxsize=256)
def _made_constants(dtype: np.dtype, values: tuple) -> np.ndarray:
    out = np.array(values, dtype)
    out.flags.writeable = False
    return out


_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)


def _flat(a: np.ndarray) -> np.ndarray:
    """``a`` as a 1-d array in C order (a view where it can be, else a copy)."""
    return a.reshape(-1)


# --------------------------------------------------------------------------- GELU, erf


@jit
def _gelu_erf_f32(x, p, q, k, out, cdf):
    # Φ(x) − ½ = x·P(s)/Q(s), s = min(x², saturation), clipped to ±½ (normal_cdf_float32);
    # k = (saturation, ½). The constants are read once, into locals: loaded in the loop they
    # might alias the outputs, and LLVM would not vectorise it
    p0, p1, p2, p3, p4, p5 = p[0], p[1], p[2], p[3], p[4], p[5]
    q0, q1, q2, q3, q4 = q[0], q[1], q[2], q[3], q[4]
    saturation, half = k[0], k[1]
    for i in range(x.size):
        xi = x[i]
        s = xi * xi
        if s > saturation:
            s = saturation
        num = s * p5
        num += p4
        num = num * s + p3
        num = num * s + p2
        num = num * s + p1
        num = num * s + p0
        den = s + q4
        den = den * s + q3
        den = den * s + q2
        den = den * s + q1
        den = den * s + q0
        v = num * xi
        v = v / den
        if v > half:
            v = half
        elif v < -half:
            v = -half
        c = v + half
        cdf[i] = c
        out[i] = xi * c


@jit
def _gelu_erf_f64(x, k, out, cdf):
    # Φ(x) = ½(1 + erf(x/√2)); k = (1/√2, ½, 1)
    k0, k1, k2 = k[0], k[1], k[2]
    for i in range(x.size):
        xi = x[i]
        c = k1 * (k2 + math.erf(xi * k0))
        cdf[i] = c
        out[i] = xi * c


@jit
def _half_minus_square(x, k, out):
    # −½·x², exp's argument in Gelu._vjp (k = (−½,))
    k0 = k[0]
    for i in range(x.size):
        xi = x[i]
        out[i] = xi * xi * k0


@jit
def _gelu_erf_slope(x, cdf, g, k, e):
    # g·(Φ + x·φ(x)) with e = exp(−x²/2) (NumPy's exp, in place), in Gelu._vjp's order;
    # k = (1/√(2π),)
    k0 = k[0]
    for i in range(x.size):
        e[i] = (e[i] * x[i] * k0 + cdf[i]) * g[i]


def gelu_erf_forward(x: np.ndarray, p: np.ndarray, q: np.ndarray, saturation: float):
    """``(x·Φ(x), Φ(x))`` of a float32 array, Φ as :func:`ops.erf.normal_cdf_float32`
    computes it (its coefficients ``p``, ``q`` and ``saturation``)."""
    flat = _flat(x)
    out, cdf = np.empty(x.shape, x.dtype), np.empty(x.shape, x.dtype)
    k = _constants(x.dtype, saturation, 0.5)
    _gelu_erf_f32(flat, p, q, k, out.reshape(-1), cdf.reshape(-1))
    return out, cdf


def gelu_erf_forward_f64(x: np.ndarray):
    """``(x·Φ(x), Φ(x))`` of a float64 array, Φ = ½(1 + erf(x/√2)) with libm's erf."""
    out, cdf = np.empty(x.shape, x.dtype), np.empty(x.shape, x.dtype)
    k = _constants(x.dtype, 1 / math.sqrt(2), 0.5, 1.0)
    _gelu_erf_f64(_flat(x), k, out.reshape(-1), cdf.reshape(-1))
    return out, cdf


def gelu_erf_backward(grad: np.ndarray, x: np.ndarray, cdf: np.ndarray):
    """GELU's VJP ``g·(Φ(x) + x·φ(x))`` from the saved Φ(x): two loops around NumPy's own
    ``exp`` (numba's would be libm's, scalar and rounded differently)."""
    flat = _flat(x)
    out = np.empty(x.shape, x.dtype)
    slope = out.reshape(-1)
    _half_minus_square(flat, _constants(x.dtype, -0.5), slope)
    np.exp(slope, out=slope)
    _gelu_erf_slope(flat, _flat(cdf), _flat(grad), _constants(x.dtype, _INV_SQRT_2PI), slope)
    return out


# --------------------------------------------------------------------------- GELU, tanh


@jit
def _tanh_argument(x, k, out):
    # √(2/π)·(x + 0.044715·x³); k = (√(2/π), 0.044715)
    k0, k1 = k[0], k[1]
    for i in range(x.size):
        xi = x[i]
        out[i] = k0 * (xi + k1 * (xi * xi * xi))


@jit
def _gelu_tanh(x, t, k, out):
    # ½x·(1 + t), t the tanh (NumPy's); k = (½, 1)
    k0, k1 = k[0], k[1]
    for i in range(x.size):
        out[i] = k0 * x[i] * (k1 + t[i])


@jit
def _gelu_tanh_slope(x, t, g, k, out):
    # g·(½(1 + t) + ½x·(1 − t²)·dt), dt = √(2/π)·(1 + 3·0.044715·x²);
    # k = (√(2/π), 3·0.044715, ½, 1)
    k0, k1, k2, k3 = k[0], k[1], k[2], k[3]
    for i in range(x.size):
        xi, ti = x[i], t[i]
        dt = k0 * (k3 + k1 * xi * xi)
        out[i] = g[i] * (k2 * (k3 + ti) + k2 * xi * (k3 - ti * ti) * dt)


def gelu_tanh_forward(x: np.ndarray):
    """``(GELU(x), t)`` by the tanh approximation, ``t`` its tanh (saved for backward): two
    loops around NumPy's own ``tanh``."""
    flat = _flat(x)
    out, t = np.empty(x.shape, x.dtype), np.empty(x.shape, x.dtype)
    tanh = t.reshape(-1)
    _tanh_argument(flat, _constants(x.dtype, _SQRT_2_OVER_PI, 0.044715), tanh)
    np.tanh(tanh, out=tanh)
    _gelu_tanh(flat, tanh, _constants(x.dtype, 0.5, 1.0), out.reshape(-1))
    return out, t


def gelu_tanh_backward(grad: np.ndarray, x: np.ndarray, t: np.ndarray):
    """The tanh approximation's VJP from its saved tanh ``t``."""
    out = np.empty(x.shape, x.dtype)
    k = _constants(x.dtype, _SQRT_2_OVER_PI, 3 * 0.044715, 0.5, 1.0)
    _gelu_tanh_slope(_flat(x), _flat(t), _flat(grad), k, out.reshape(-1))
    return out


# --------------------------------------------------------------------------- layer norm


@jit
def _row_sum(a, r, n, zero):
    # eight interleaved partial sums, added pairwise: within float rounding of the exact
    # sum, as BLAS's blocked sums are (a single running sum would be slower and less exact)
    s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = zero
    j = 0
    while j + 8 <= n:
        s0 += a[r, j]
        s1 += a[r, j + 1]
        s2 += a[r, j + 2]
        s3 += a[r, j + 3]
        s4 += a[r, j + 4]
        s5 += a[r, j + 5]
        s6 += a[r, j + 6]
        s7 += a[r, j + 7]
        j += 8
    while j < n:
        s0 += a[r, j]
        j += 1
    return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))


@jit
def _layer_norm_center(x, sums, k, centered, square):
    # centered = x − sums·(1/n) of each row, square = centered²; k = (1/n, eps, 1)
    rows, n = x.shape
    inv_n = k[0]
    for r in range(rows):
        mean = sums[r] * inv_n
        for j in range(n):
            c = x[r, j] - mean
            centered[r, j] = c
            square[r, j] = c * c


@jit
def _layer_norm_scale(centered, sums, w, b, k, out, inverse_std):
    # σ⁻¹ = 1 / √(sums·(1/n) + eps); centered ← centered·σ⁻¹ (x̂), out = x̂·w + b
    rows, n = centered.shape
    inv_n, eps, one = k[0], k[1], k[2]
    for r in range(rows):
        s = one / np.sqrt(sums[r] * inv_n + eps)
        inverse_std[r, 0] = s
        for j in range(n):
            h = centered[r, j] * s
            centered[r, j] = h
            out[r, j] = h * w[j] + b[j]


def layer_norm_forward(
    x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float, row_sums: Callable
):
    """``(out, x̂, σ⁻¹)`` of layer norm over the rows of the matrix ``x`` (rows, n), n > 0;
    σ⁻¹ of shape (rows, 1). The row sums are the caller's (``ops.sums.row_sums``, through
    BLAS: three times a loop's speed), the elementwise passes two loops: ``ops.LayerNorm``'s
    NumPy lines, bit for bit."""
    rows, n = x.shape
    dtype = x.dtype
    centered, square = np.empty((rows, n), dtype), np.empty((rows, n), dtype)
    inverse_std = np.empty((rows, 1), dtype)
    k = _constants(dtype, 1.0 / n, eps, 1.0)
    _layer_norm_center(x, row_sums(x), k, centered, square)
    variance_sums = row_sums(square)
    out = square  # (its squares are summed: the output takes its memory, as in NumPy's lines)
    _layer_norm_scale(
        centered, variance_sums, weight.reshape(n), bias.reshape(n), k, out, inverse_std
    )
    return out, centered, inverse_std


@jit
def _layer_norm_products(g, normalized, w, need_dx, gx, gw, gwx):
    # g·x̂ (dweight's terms), and for dx ĝ = g·w and ĝ·x̂
    rows, n = g.shape
    for r in range(rows):
        if need_dx:  # (the test outside the loops: each is vectorised)
            for j in range(n):
                gj = g[r, j]
                xj = normalized[r, j]
                gx[r, j] = gj * xj
                t = gj * w[j]
                gw[r, j] = t
                gwx[r, j] = t * xj
        else:
            for j in range(n):
                gx[r, j] = g[r, j] * normalized[r, j]


@jit
def _layer_norm_dx(gw, normalized, sums_g, sums_gx, inverse_std, k, dx):
    # dx = ((ĝ − mean(ĝ)) − x̂·mean(ĝ·x̂))·σ⁻¹, the means sums·(1/n); k = (1/n,)
    rows, n = gw.shape
    inv_n = k[0]
    for r in range(rows):
        mean_g = sums_g[r] * inv_n
        mean_gx = sums_gx[r] * inv_n
        s = inverse_std[r, 0]
        for j in range(n):
            dx[r, j] = ((gw[r, j] - mean_g) - normalized[r, j] * mean_gx) * s


def layer_norm_backward(
    grad: np.ndarray,
    normalized: np.ndarray,
    inverse_std: np.ndarray,
    weight: np.ndarray,
    need_dx: bool,
    row_sums: Callable,
    column_sums: Callable,
):
    """``(dx or None, dweight, dbias)`` of layer norm on the (rows, n) matrices; dweight and
    dbias of shape (n,). The sums are the caller's (through BLAS), the products and dx one
    loop each: ``ops.LayerNorm``'s NumPy lines, bit for bit."""
    rows, n = normalized.shape
    dtype = normalized.dtype
    gx = np.empty((rows, n), dtype)
    shape = (rows, n) if need_dx else (0, n)
    gw, gwx = np.empty(shape, dtype), np.empty(shape, dtype)
    _layer_norm_products(grad, normalized, weight.reshape(n), need_dx, gx, gw, gwx)
    db, dw = column_sums(grad), column_sums(gx)
    if not need_dx:
        return None, dw, db
    dx = gx  # (summed already: dx takes its memory)
    k = _constants(dtype, 1.0 / n)
    _layer_norm_dx(gw, normalized, row_sums(gw), row_sums(gwx), inverse_std, k, dx)
    return dx, dw, db


# --------------------------------------------------------------------------- cross-entropy


@jit
def _subtract_rows(x, column, out):
    # out = x − column[r] on each row r: NumPy's broadcast subtraction, in one loop
    rows, n = x.shape
    for r in range(rows):
        c = column[r, 0]
        for j in range(n):
            out[r, j] = x[r, j] - c


@jit
def _softmax_minus_target(exps, sums, target, k, out):
    # (exps / sums − T)·scale, T the target distribution (1 − ε on the class, ε/C smoothed);
    # k = (1 − ε, ε/C, scale, smoothing ≠ 0) in CrossEntropy.backward's order
    rows, n = exps.shape
    hit, spread, scale, smoothed = k[0], k[1], k[2], k[3] != 0
    for r in range(rows):
        s = sums[r, 0]
        t = target[r]
        for j in range(n):
            p = exps[r, j] / s
            if j == t:
                p = p - hit
            if smoothed:
                p = p - spread
            out[r, j] = p * scale


def log_softmax_rows(logits: np.ndarray, maxima: np.ndarray, row_sums: Callable):
    """``(log-softmax, exps, sums)`` of the rows of ``logits`` (rows, n) given their maxima
    (rows, 1): the broadcast subtractions in loops, NumPy's ``exp`` and the caller's
    ``row_sums`` (the BLAS sums of ops.loss._log_softmax_rows) between them."""
    shifted = np.empty(logits.shape, logits.dtype)
    _subtract_rows(logits, maxima, shifted)
    exps = np.exp(shifted)
    sums = row_sums(exps)[:, None]
    _subtract_rows(shifted, np.log(sums), shifted)
    return shifted, exps, sums


def cross_entropy_backward(
    exps: np.ndarray, sums: np.ndarray, target: np.ndarray, smoothing: float, scale: float
):
    """``(softmax − T)·scale`` of cross-entropy's saved exponentials and row sums."""
    n = exps.shape[1]
    out = np.empty(exps.shape, exps.dtype)
    k = _constants(exps.dtype, 1 - smoothing, smoothing / n, scale, smoothing)
    _softmax_minus_target(exps, sums, target, k, out)
    return out


# --------------------------------------------------------------------------- attention


@jit
def _scores_gradient(dp_t, d, e_t):
    # dSᵀ = (dPᵀ − D)·Eᵀ in place on dPᵀ (batch, S, L), D (batch, L): attention's backward
    batch, keys, queries = dp_t.shape
    for b in range(batch):
        for s in range(keys):
            for q in range(queries):
                dp_t[b, s, q] = (dp_t[b, s, q] - d[b, q]) * e_t[b, s, q]


def attention_scores_gradient(dp_t: np.ndarray, d: np.ndarray, e_t: np.ndarray) -> bool:
    """``dp_t -= d[..., None, :]; dp_t *= e_t`` in one loop, in place on ``dp_t``
    (..., S, L), a C-order array; ``d`` (..., L) and ``e_t`` of ``dp_t``'s shape."""
    keys, queries = dp_t.shape[-2:]
    if not dp_t.size:
        return True
    _scores_gradient(
        dp_t.reshape(-1, keys, queries), d.reshape(-1, queries), e_t.reshape(-1, keys, queries)
    )
    return True


@jit
def _attention_exps_t(x, k, causal, fast, ke, maxima):
    # in place on the scores Kqᵀ (count, S, L): ·scale, + the causal mask's −inf where key
    # s > query l (+ 0 elsewhere, as the NumPy code adds its bias), − each query's maximum
    # over the keys, then exp by _expf where ``fast``; k = (scale, −inf, 0)
    c = _exp_locals(ke)
    scale, masked, zero = k[0], k[1], k[2]
    count, keys, queries = x.shape
    for b in range(count):
        for s in range(keys):
            for q in range(queries):
                v = x[b, s, q] * scale
                if causal:
                    v = v + (masked if s > q else zero)
                x[b, s, q] = v
        for q in range(queries):
            maxima[q] = x[b, 0, q]
        for s in range(1, keys):
            for q in range(queries):
                v = x[b, s, q]
                m = maxima[q]
                maxima[q] = v if (v > m or v != v) else m  # NaN wins, as in np.maximum
        if fast:  # (two loops, not a select inside one: each is vectorised)
            for s in range(keys):
                for q in range(queries):
                    x[b, s, q] = _expf(x[b, s, q] - maxima[q], c)
        else:
            for s in range(keys):
                for q in range(queries):
                    x[b, s, q] = x[b, s, q] - maxima[q]


def attention_exponentials(scores_t: np.ndarray, scale: float, causal: bool, fast: bool) -> bool:
    """``ops.ScaledDotProductAttention._exponentials``'s passes over the keys-major scores
    (..., S, L), a fresh C-order array, in place and in two loops per matrix: the scale, the
    causal mask, the maximum's subtraction, and (``fast``, float32) exp by :func:`_expf`;
    otherwise the caller's NumPy exp follows."""
    keys, queries = scores_t.shape[-2:]
    if not scores_t.size:
        return True
    k = _constants(scores_t.dtype, scale, -np.inf, 0.0)
    maxima = np.empty(queries, scores_t.dtype)
    ke = _constants(scores_t.dtype, *_EXP_CONSTANTS)
    _attention_exps_t(scores_t.reshape(-1, keys, queries), k, causal, fast, ke, maxima)
    return True


@jit
def _divide_by_last(products, out):
    # out[r, j] = products[r, j] / products[r, n]: each row by its last column
    rows, n = out.shape
    for r in range(rows):
        d = products[r, n]
        for j in range(n):
            out[r, j] = products[r, j] / d


def divide_by_last_column(products: np.ndarray) -> np.ndarray:
    """``products[..., :-1] / products[..., -1:]`` of a C-order array in one loop (the
    attention forward's E·V over Σ E, from one product with a column of ones after V)."""
    n = products.shape[-1] - 1
    out = np.empty((*products.shape[:-1], n), products.dtype)
    if out.size:
        _divide_by_last(products.reshape(-1, n + 1), out.reshape(-1, n))
    return out


# --------------------------------------------------------------------------- LSTM, GRU
def _gate_constants(dtype: np.dtype) -> np.ndarray:
    """(½, 1): the sigmoid ½(tanh(½a) + 1) and the slopes' 1 − s, of all four step kernels."""
    return _constants(dtype, 0.5, 1.0)


@jit
def _lstm_arguments(xg, hg, b, k, acts):
    # tanh's arguments: a·½ for the sigmoid gates (i, f, o), a for g, a = xg + (hg + b)
    rows, n = xg.shape
    hidden = n // 4
    half = k[0]
    for r in range(rows):
        for j in range(n):
            a = xg[r, j] + (hg[r, j] + b[j])
            if 2 * hidden <= j < 3 * hidden:
                acts[r, j] = a
            else:
                acts[r, j] = a * half
    return hidden


@jit
def _lstm_cells(acts, c, k, c_new, tanh_c):
    # the sigmoids ½(tanh + 1) from the tanhs, then c' = f·c + i·g (tanh_c: c', its argument)
    rows, n = acts.shape
    hidden = n // 4
    half, one = k[0], k[1]
    for r in range(rows):
        for j in range(hidden):
            i = half * (acts[r, j] + one)
            f = half * (acts[r, hidden + j] + one)
            g = acts[r, 2 * hidden + j]
            o = half * (acts[r, 3 * hidden + j] + one)
            acts[r, j] = i
            acts[r, hidden + j] = f
            acts[r, 3 * hidden + j] = o
            v = f * c[r, j] + i * g
            c_new[r, j] = v
            tanh_c[r, j] = v


@jit
def _lstm_hidden(acts, tanh_c, h):
    # h' = o·tanh(c')
    rows, hidden = tanh_c.shape
    for r in range(rows):
        for j in range(hidden):
            h[r, j] = acts[r, 3 * hidden + j] * tanh_c[r, j]


@jit
def _lstm_step_back(grad, dh_next, dc, acts, tanh_c, c, k, d_gates):
    # _lstm_gate_grads in one loop, dh = grad + dh_next; dc ← dc·f in place; k = (½, 1)
    rows, hidden = tanh_c.shape
    one = k[1]
    for r in range(rows):
        for j in range(hidden):
            dh = grad[r, j] + dh_next[r, j]
            i = acts[r, j]
            f = acts[r, hidden + j]
            g = acts[r, 2 * hidden + j]
            o = acts[r, 3 * hidden + j]
            t = tanh_c[r, j]
            d = dc[r, j] + dh * o * (one - t * t)
            d_gates[r, j] = d * g * i * (one - i)
            d_gates[r, hidden + j] = d * c[r, j] * f * (one - f)
            d_gates[r, 2 * hidden + j] = d * i * (one - g * g)
            d_gates[r, 3 * hidden + j] = dh * t * o * (one - o)
            dc[r, j] = d * f


def lstm_step_forward(x_gates, h_gates, bias, c, acts, tanh_c, h_out, c_out) -> bool:
    """One step of ``ops.LSTMLayer``: the activations (i, f, g, o) into ``acts``, tanh(c')
    into ``tanh_c``, h' and c' into ``h_out`` and ``c_out``; three loops around NumPy's
    ``tanh``, the operations of ``LSTMCell._activations`` and the layer's NumPy lines."""
    k = _gate_constants(acts.dtype)
    _lstm_arguments(x_gates, h_gates, bias, k, acts)
    np.tanh(acts, out=acts)
    _lstm_cells(acts, c, k, c_out, tanh_c)
    np.tanh(tanh_c, out=tanh_c)
    _lstm_hidden(acts, tanh_c, h_out)
    return True


def lstm_step_backward(grad, dh_next, dc, acts, tanh_c, c, d_gates) -> bool:
    """One reverse step of ``ops.LSTMLayer``'s VJP: the gates' gradient into ``d_gates``,
    ``dc`` updated in place to the previous cell state's."""
    _lstm_step_back(grad, dh_next, dc, acts, tanh_c, c, _gate_constants(acts.dtype), d_gates)
    return True


@jit
def _gru_arguments(xg, hg, b, k, acts, h_n):
    # ½(xg + hg) for r and z (tanh's arguments), h_n = hg + b of the new gate
    rows, n = xg.shape
    hidden = n // 3
    half = k[0]
    for r in range(rows):
        for j in range(2 * hidden):
            acts[r, j] = (xg[r, j] + (hg[r, j] + b[j])) * half
        for j in range(hidden):
            h_n[r, j] = hg[r, 2 * hidden + j] + b[2 * hidden + j]


@jit
def _gru_new_argument(xg, acts, h_n, k):
    # the sigmoids ½(tanh + 1) of r and z, then n's argument x_n + r·h_n
    rows, n = xg.shape
    hidden = n // 3
    half, one = k[0], k[1]
    for r in range(rows):
        for j in range(2 * hidden):
            acts[r, j] = half * (acts[r, j] + one)
        for j in range(hidden):
            acts[r, 2 * hidden + j] = xg[r, 2 * hidden + j] + acts[r, j] * h_n[r, j]


@jit
def _gru_hidden(acts, h, out):
    # h' = n + z·(h − n)
    rows, hidden = h.shape
    for r in range(rows):
        for j in range(hidden):
            n = acts[r, 2 * hidden + j]
            out[r, j] = n + acts[r, hidden + j] * (h[r, j] - n)


@jit
def _gru_step_back(grad, dh_next, h, acts, h_n, k, dx, dhg, direct):
    # _gru_gate_grads in one loop, g = grad + dh_next; k = (½, 1)
    rows, hidden = h.shape
    one = k[1]
    for r in range(rows):
        for j in range(hidden):
            g = grad[r, j] + dh_next[r, j]
            rr = acts[r, j]
            z = acts[r, hidden + j]
            n = acts[r, 2 * hidden + j]
            dn = g * (one - z) * (one - n * n)
            dz = g * (h[r, j] - n) * z * (one - z)
            dr = dn * h_n[r, j] * rr * (one - rr)
            dx[r, j] = dr
            dx[r, hidden + j] = dz
            dx[r, 2 * hidden + j] = dn
            dhg[r, j] = dr
            dhg[r, hidden + j] = dz
            dhg[r, 2 * hidden + j] = dn * rr
            direct[r, j] = g * z


def gru_step_forward(x_gates, h_gates, bias, h, acts, h_n, out) -> bool:
    """One step of ``ops.GRULayer``: (r, z, n) into ``acts``, h_n into ``h_n``, h' into
    ``out``; three loops around NumPy's ``tanh`` (of r and z, then of n)."""
    k = _gate_constants(acts.dtype)
    hidden = h.shape[1]
    _gru_arguments(x_gates, h_gates, bias, k, acts, h_n)
    rz = acts[:, : 2 * hidden]
    np.tanh(rz, out=rz)
    _gru_new_argument(x_gates, acts, h_n, k)
    new = acts[:, 2 * hidden :]
    np.tanh(new, out=new)
    _gru_hidden(acts, h, out)
    return True


def gru_step_backward(grad, dh_next, h, acts, h_n, dx_gates, dh_gates, direct) -> bool:
    """One reverse step of ``ops.GRULayer``'s VJP: the gradients of the two products' gates
    and ``direct``, h's own (``g·z``)."""
    k = _gate_constants(acts.dtype)
    _gru_step_back(grad, dh_next, h, acts, h_n, k, dx_gates, dh_gates, direct)
    return True


# --------------------------------------------------------------------------- Adam, scatter


@jit
def _adam_moments(g, m, v, k, out):
    # m ← β₁m + (1−β₁)g, v ← β₂v + (1−β₂)g², out ← m / (√v / √(1−β₂ᵗ) + eps), in the
    # flat NumPy lines' order; k = (β₁, 1−β₁, β₂, 1−β₂, √(1−β₂ᵗ), eps)
    b1, c1, b2, c2, bias2, eps = k[0], k[1], k[2], k[3], k[4], k[5]
    for i in range(g.size):
        gi = g[i]
        mi = m[i] * b1 + gi * c1
        m[i] = mi
        vi = v[i] * b2 + gi * gi * c2
        v[i] = vi
        out[i] = mi / (np.sqrt(vi) / bias2 + eps)


def adam_moments(g, m, v, beta1: float, beta2: float, bias2: float, eps: float, out) -> bool:
    """Adam's moments and its step direction ``m / (√v / bias2 + eps)`` on flat arrays of
    one dtype, in one pass instead of nine (``optim.adam._FlatMoments``)."""
    k = _constants(g.dtype, beta1, 1.0 - beta1, beta2, 1.0 - beta2, bias2, eps)
    _adam_moments(g, m, v, k, out)
    return True


@jit
def _add_rows(result, rows, values):
    # result[rows[i]] += values[i], i in order: np.add.at's order of additions
    n = values.shape[1]
    for i in range(rows.size):
        r = rows[i]
        for j in range(n):
            result[r, j] += values[i, j]


def add_rows(result: np.ndarray, rows: np.ndarray, values: np.ndarray) -> bool | None:
    """``np.add.at(result, rows, values)`` on a matrix ``result`` (n, k), ``rows`` (m,) in
    range and ``values`` (m, k); None (the caller's NumPy code) for a row out of range, as
    the loop checks no bounds."""
    if rows.size and (rows.min() < 0 or rows.max() >= result.shape[0]):
        return None
    _add_rows(result, rows, values)
    return True


# --------------------------------------------------------------------------- float32 exp


@numba.extending.intrinsic
def _float32_from_bits(typingctx, bits):
    """The float32 whose bits are the int32 ``bits`` (a reinterpretation, no conversion)."""
    from llvmlite import ir

    signature = numba.types.float32(numba.types.int32)

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.FloatType())

    return signature, codegen


#: Cephes' expf: exp(x) = 2ⁿ·exp(r), n = ⌊x·log₂e + ½⌉, r = x − n·ln 2 in two parts
#: (Cody–Waite), exp(r) by a degree-7 polynomial; then 2ⁿ as two factors 2^⌊n/2⌋·2^⌈n/2⌉,
#: each a normal float, so that results in the subnormal range round once, at the end
_EXP_CONSTANTS = (
    1.4426950408889634,  # log₂e
    0.5,
    0.693359375,  # ln 2, high part (exact in float32)
    -2.12194440e-4,  # ln 2 − the high part
    1.9875691500e-4,
    1.3981999507e-3,
    8.3334519073e-3,
    4.1665795894e-2,
    1.6666665459e-1,
    5.0000001201e-1,
    1.0,
    -104.0,  # below: exp(x) rounds to +0
    89.0,  # above: to +inf
)


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _expf(x, k):
    # below k[11] the result is +0: computed from x = 0 instead, then replaced, because a
    # product that lands in the subnormals costs a microcode assist (~100 cycles) on x86,
    # and a causal mask's −inf scores would pay it on half the attention matrix
    zero = x < k[11]
    if zero:
        x = k[10] - k[10]
    elif x > k[12]:
        x = k[12]
    fx = np.floor(x * k[0] + k[1])
    if not fx >= k[11] * k[0]:  # NaN: any n (the polynomial is NaN already), but a number
        fx = k[10]
    r = x - fx * k[2]
    r = r - fx * k[3]
    p = k[4] * r + k[5]
    p = p * r + k[6]
    p = p * r + k[7]
    p = p * r + k[8]
    p = p * r + k[9]
    p = p * (r * r) + r + k[10]
    n = np.int32(fx)
    half = n >> 1
    rest = n - half
    result = p * _float32_from_bits((half + 127) << 23) * _float32_from_bits((rest + 127) << 23)
    if zero:
        result = k[10] - k[10]
    return result


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _exp_locals(k):
    # the constants as a tuple of locals: loaded from ``k`` inside a loop they might alias
    # its output, and LLVM would not vectorise the loop
    return (k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7], k[8], k[9], k[10], k[11], k[12])


@jit
def _exp_f32(x, k, out):
    c = _exp_locals(k)
    for i in range(x.size):
        out[i] = _expf(x[i], c)


def exp_float32(x: np.ndarray) -> np.ndarray:
    """exp of a float32 array by :func:`_expf` (within 2 ulp of the exact value: tests/_jit
    measures it), vectorised by LLVM: some four times NumPy's float32 exp here."""
    out = np.empty(x.shape, x.dtype)
    _exp_f32(_flat(x), _constants(x.dtype, *_EXP_CONSTANTS), out.reshape(-1))
    return out


@jit
def _softmax_exps_f32(x, maxima, k, kz, out, sums):
    # exp(x − max) of each row by _expf, then the row's sum in eight partial sums
    c = _exp_locals(k)
    zero = kz[0]
    rows, n = x.shape
    for r in range(rows):
        m = maxima[r, 0]
        for j in range(n):
            out[r, j] = _expf(x[r, j] - m, c)
        sums[r, 0] = _row_sum(out, r, n, zero)


def softmax_exps_float32(logits: np.ndarray, maxima: np.ndarray):
    """``(exps, sums)`` of the float32 rows of C-ordered ``logits`` (rows, n) given their
    maxima (rows, 1): ``exp(x − max)`` by :func:`_expf` and each row's sum (rows, 1), the
    softmax's parts, in one pass over the logits."""
    out = np.empty(logits.shape, logits.dtype)
    sums = np.empty((logits.shape[0], 1), logits.dtype)
    k = _constants(logits.dtype, *_EXP_CONSTANTS)
    _softmax_exps_f32(logits, maxima, k, _constants(logits.dtype, 0.0), out, sums)
    return out, sums


def exp_float32_inplace(x: np.ndarray) -> bool | None:
    """``np.exp(x, out=x)`` of a C-ordered float32 array by :func:`_expf`; None (NumPy's
    then) for another layout."""
    if not x.flags.c_contiguous:
        return None
    _exp_f32_inplace(x.reshape(-1), _constants(x.dtype, *_EXP_CONSTANTS))
    return True


@jit
def _exp_f32_inplace(x, k):
    # one array, not the same one as input and output: LLVM's vectoriser checks two
    # arguments for overlap at run time and takes its scalar loop when they do
    c = _exp_locals(k)
    for i in range(x.size):
        x[i] = _expf(x[i], c)


@jit
def _gelu_erf_slope_fast(x, cdf, g, k, ke, out):
    # g·(Φ + x·φ(x)), φ(x)·√(2π) = exp(−x²/2) by _expf, in Gelu._vjp's order;
    # k = (−½, 1/√(2π))
    c = _exp_locals(ke)
    k0, k1 = k[0], k[1]
    for i in range(x.size):
        xi = x[i]
        e = _expf(xi * xi * k0, c)
        out[i] = (e * xi * k1 + cdf[i]) * g[i]


def gelu_erf_backward_fast(grad: np.ndarray, x: np.ndarray, cdf: np.ndarray):
    """:func:`gelu_erf_backward` of float32 arrays in one loop, its exp by :func:`_expf`."""
    out = np.empty(x.shape, x.dtype)
    k = _constants(x.dtype, -0.5, _INV_SQRT_2PI)
    ke = _constants(x.dtype, *_EXP_CONSTANTS)
    _gelu_erf_slope_fast(_flat(x), _flat(cdf), _flat(grad), k, ke, out.reshape(-1))
    return out
