"""Fused CPU kernels compiled by numba: the optional ``[jit]`` extra, in one room.

Why: NumPy makes one pass over memory per ufunc, and a broadcast operand makes each pass 2–3×
slower, where PyTorch runs one loop per op. GELU and layer norm were the small GPT's two
slowest ops against PyTorch's (0.51× and 0.52×, docs/performance.md) for that reason alone.
Each kernel here is the loop of one op's forward or backward, the same operations on the same
numbers as the op's NumPy code where it can be (no fastmath), so that the op class stays the
one place its math is written and read: it calls :func:`run` in one line and falls through to
its NumPy code when that gives None.

======================== ============================================== =================
kernel                   of                                             exactness
======================== ============================================== =================
``gelu_erf_forward``     ``ops.Gelu`` (erf), float32: x·Φ(x) and Φ       bit for bit
``gelu_erf_forward_f64`` the same in float64, with libm's erf            Φ within 2⁻⁵²
                         (NumPy's code calls SciPy's)
``gelu_erf_backward``    its VJP g·(Φ + x·φ), around NumPy's ``exp``     bit for bit
``gelu_tanh_forward``    ``ops.Gelu`` (tanh), around NumPy's ``tanh``    bit for bit
``gelu_tanh_backward``   its VJP from the saved tanh                     bit for bit
``layer_norm_forward``   ``ops.LayerNorm`` on its (rows, n) matrix       sums rounded apart
``layer_norm_backward``  its VJP: dx, dweight and dbias in one sweep     sums rounded apart
``log_softmax_rows``     ``ops.CrossEntropy``'s log-softmax (C order)     bit for bit
``cross_entropy_backward`` its (softmax − target)·scale                  bit for bit
``attention_scores_gradient`` ``ops.ScaledDotProductAttention``'s          bit for bit
                         dSᵀ = (dPᵀ − D)·Eᵀ, in place
``lstm_step_forward``    a step of ``ops.LSTMLayer``: gates, c', h'      bit for bit
                         (three loops around NumPy's ``tanh``)
``lstm_step_backward``   its reverse step: the gates' gradient, dc·f     bit for bit
``gru_step_forward``     a step of ``ops.GRULayer`` (r, z, n, h')        bit for bit
``gru_step_backward``    its reverse step: both products' gate grads     bit for bit
``softmax_exps_float32`` ``ops.CrossEntropy`` (float32, no smoothing):   exp within 1 ulp
                         exp(x − max) by Cephes' expf, vectorised,      (NumPy's: 2.4),
                         and the row sums                               sums rounded apart
``exp_float32``          that exp on its own                            within 1 ulp
``adam_moments``         Adam's/AdamW's flat m, v and m/(√v/b₂ + eps)     bit for bit
                         (``optim.adam._FlatMoments``)
``add_rows``             ``result[rows] += values`` (``ops.index``'s       bit for bit with
                         ``_add_rows``: the embedding's VJP)             ``np.add.at``
======================== ============================================== =================

A transcendental function is NumPy's own, called on the array between two loops: numba's
would be libm's, a scalar call per element (GELU's tanh was 25× slower so), rounded
differently. The one exception is float32 ``exp`` (:data:`FAST_EXP`), in cross-entropy,
attention's softmax and GELU's VJP: a polynomial LLVM vectorises, within 1 ulp where
NumPy's is within 2.4, at twice its speed.

"Sums rounded apart": NumPy's code sums rows and columns through BLAS, in BLAS's blocks; a
kernel sums in eight interleaved partial sums. Either is within float rounding of the exact
sum; ``tests/_jit`` checks the bound and that the kernel's error is no larger than NumPy's
code's.

When: numba is importable and ``TENSORGRAD_JIT`` is not ``0`` (:data:`ENABLED`). numba is
imported at the first kernel call, never at ``import tensorgrad``; kernels compile with
``cache=True`` into :func:`cache_dir` (``$TENSORGRAD_JIT_CACHE``, else
``~/.cache/tensorgrad/numba``), so the compile cost (about a second a kernel) is paid once
per machine. Arrays of a dtype numba does not compile for (float16, complex, objects) run the
op's NumPy code without a word. A kernel that fails to import, or to compile for its arguments'
dtypes, warns once and is not tried again for those dtypes: the op runs its NumPy code, and the
result is what it would have been without the extra.

Off-switch: ``TENSORGRAD_JIT=0`` in the environment, or ``tensorgrad._jit.ENABLED = False``;
``FAST_EXP = False`` keeps the kernels but NumPy's exp.
This module imports the standard library only.
"""

from __future__ import annotations

import importlib.util
import os
import warnings
from collections.abc import Callable
from typing import Any

from tensorgrad._jit.cache import cache_dir

#: the kernels run (numba found and not switched off); False: every op's NumPy code
ENABLED: bool = os.environ.get("TENSORGRAD_JIT", "1") != "0" and (
    importlib.util.find_spec("numba") is not None
)

#: float32 exp by the kernels' own polynomial (within 1 ulp, measured; NumPy's float32 exp is
#: within 2.4 and half as fast here): cross-entropy, attention's softmax, GELU's VJP. False:
#: NumPy's exp between the loops, and those kernels equal the NumPy code bit for bit
FAST_EXP: bool = True

#: kernel name → the compiled function, or None once its module failed to import
_kernels: dict[str, Callable[..., Any] | None] = {}

#: the dtypes the kernels compile for (``dtype.char``): bool, the integers, float32, float64
_COMPILED_DTYPES = frozenset("?bBhHiIlLqQfd")

#: (kernel, its array arguments' dtypes) that failed: not tried again for those dtypes, so one
#: odd call does not take the kernel away from every later one
_failed: set[tuple[str, tuple[str, ...]]] = set()


def _load(name: str) -> Callable[..., Any] | None:
    global ENABLED
    try:
        from tensorgrad._jit import kernels  # imports numba
    except Exception as error:  # numba present but broken (a NumPy it does not support, ...)
        ENABLED = False  # for every kernel: one warning
        _kernels[name] = None
        _fail("module", error)
        return None
    kernel = getattr(kernels, name)
    _kernels[name] = kernel
    return kernel


def _fail(name: str, error: BaseException) -> None:
    warnings.warn(
        f"tensorgrad: the numba kernel {name} failed ({type(error).__name__}: {error}); "
        "its op runs in NumPy instead (TENSORGRAD_JIT=0 silences this)",
        RuntimeWarning,
        stacklevel=3,
    )


def run(name: str, *args: Any) -> Any:
    """The kernel ``name`` called on ``args``, or None where the JIT is off or that kernel
    failed (the caller then runs its NumPy code). The kernel's compile happens at its first
    call for each dtype and layout, or is read from the cache."""
    if not ENABLED:
        return None
    dtypes = tuple(a.dtype.char for a in args if hasattr(a, "dtype"))
    if not _COMPILED_DTYPES.issuperset(dtypes) or (name, dtypes) in _failed:
        return None
    kernel = _kernels.get(name, _load)
    if kernel is _load:
        kernel = _load(name)
    if kernel is None:
        return None
    try:
        return kernel(*args)
    except Exception as error:  # a typing or lowering error on this machine: NumPy from now on
        # (raised before the loop runs, so an in-place kernel has written nothing)
        _failed.add((name, dtypes))
        _fail(name, error)
        return None


__all__ = ["ENABLED", "FAST_EXP", "cache_dir", "run"]
