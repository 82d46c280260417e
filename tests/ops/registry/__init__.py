"""The op registry: one entry per op, in the style of PyTorch's OpInfo.

Each :class:`OpInfo` says how to call the op on Tensors, gives a NumPy reference, sample
inputs (0-d, size-1, empty, broadcast pairs, transposed and strided views) and error inputs
(the expected exception type and a message regex). The tests in ``tests/ops`` run every check
on every entry: forward against NumPy in float32 and float64, backward by a directional
derivative and by the full Jacobian, the scalar engine, second derivatives and errors; and
``test_registry.py`` fails when an ``Op`` subclass of ``tensorgrad.ops`` has no entry.

=================  ==========================================================================
``core``           the framework: Sample, ErrorInput, OpInfo, value makers, shape tables,
                   ``register``, ``REGISTRY``, ``cases``, ``error_cases``
``elementwise``    arithmetic, pointwise math, clamp, maximum/minimum, where, clone, casts
``activation``     sigmoid, relu, leaky relu, gelu, softmax, log-softmax
``reduce``         sum, mean, var, std, norm, max/min, logsumexp, cumsum, argmax/argmin
``shape``          reshape, view, transposes, flatten, squeeze, broadcast, joins, split
``index``          getitem and its scatter, setitem, view write-back, gather, scatter_add
``linalg``         matmul
``linear``         the fused linear layer and linear chain
``loss``           cross-entropy, binary cross-entropy with logits
``norm``           the normalisation core of batch and layer norm
``conv``           conv1d/conv2d, unfold, fold, constant padding
``pool``           max, average and adaptive average pooling
``recurrent``      the LSTM and GRU cells' gate arithmetic
``attention``      scaled dot-product attention
``pytorch_ports``  softplus, elu, silu, binary cross-entropy, weighted and ignoring losses,
                   the L1 family, KL divergence (what ported PyTorch programs use)
``trig``           asin … atanh, sinh, cosh, atan2
``special``        erfc, erfinv, lgamma, digamma, polygamma, i0, i1, sinc
``division``       remainder and fmod
``scan``           cumprod, logcumsumexp, cummax, cummin
``scatter``        scatter, scatter_reduce (all reductions), index_add/copy/fill,
                   masked_scatter, index_put, bincount
``dtypes``         the dtype tables: the dtypes each entry's forward accepts and its
                   backward differentiates (checked by ``test_dtypes.py``)
``composed``       functions composed of existing ops: einsum, tensordot, median, kthvalue,
                   hypot, logaddexp, xlogy, lerp, copysign, kron, cross, cdist, group and
                   RMS norm, cosine similarity
=================  ==========================================================================

Adding an op: add its entry to the module of its family (as ``tensorgrad/ops/``), with
``register(OpInfo(...))``.

Sample values are drawn away from kinks (relu and abs at 0, clip bounds, ties in max and
maximum) so central differences never straddle one; the conventions at kinks are tested
separately, by value, in ``test_backward.py``.

Ops whose forward cannot run on NumPy object arrays of scalar ``Value`` (SciPy's erf,
``np.isfinite`` in logsumexp, ``np.log1p``, ``ndarray.var``, a tensor exponent, a cast)
declare their scalar-engine reference, built from Value operations, beside their forward
(``scalar_forward`` in ``tensorgrad/ops/``), so the public ``check_with_scalar_engine``
handles them too; nothing to add here.
"""

from tests.ops.registry import (  # noqa: F401 - importing a family module registers its entries
    activation,
    attention,
    composed,
    conv,
    division,
    elementwise,
    index,
    linalg,
    linear,
    loss,
    norm,
    pool,
    pytorch_ports,
    recurrent,
    reduce,
    scan,
    scatter,
    shape,
    special,
    trig,
)
from tests.ops.registry.core import (
    BINARY_SHAPES,
    COVERAGE_EXEMPT,
    PIECEWISE_LINEAR,
    REGISTRY,
    UNARY_SHAPES,
    ErrorInput,
    OpInfo,
    Sample,
    Shape,
    away,
    binary_samples,
    cases,
    distinct,
    error_cases,
    exempt,
    outputs,
    positive,
    quiet,
    register,
    separated,
    shape_samples,
    unary_samples,
    uniform,
)

REGISTRY_BY_NAME: dict[str, OpInfo] = {info.name: info for info in REGISTRY}

__all__ = [
    "BINARY_SHAPES",
    "COVERAGE_EXEMPT",
    "PIECEWISE_LINEAR",
    "REGISTRY",
    "REGISTRY_BY_NAME",
    "UNARY_SHAPES",
    "ErrorInput",
    "OpInfo",
    "Sample",
    "Shape",
    "away",
    "binary_samples",
    "cases",
    "distinct",
    "error_cases",
    "exempt",
    "outputs",
    "positive",
    "quiet",
    "register",
    "separated",
    "shape_samples",
    "unary_samples",
    "uniform",
]
