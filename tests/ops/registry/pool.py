"""Registry entries for ``tensorgrad/ops/pool.py``: max, average and adaptive average pooling,
and the average pool's adjoint (its VJP as an op, so that its own VJP can be recorded).

The references loop over output positions, independent of the ops' strided views. Max
pooling's samples hold distinct values (ties are tested by value in tests/nn/test_conv.py).
"""

from __future__ import annotations

import numpy as np

from tensorgrad import ops
from tensorgrad.core.engine import apply as _apply
from tensorgrad.nn import functional as FC
from tests.ops.registry.conv import _one_error, _pair
from tests.ops.registry.core import OpInfo, Sample, distinct, exempt, register, uniform


# --------------------------------------------------------------------------- references
def _pool_length(size, k, s, p, d, ceil_mode):
    span = size + 2 * p - d * (k - 1) - 1
    length = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (length - 1) * s >= size + p:
        length -= 1
    return length


def _max_pool_ref(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    unbatched = x.ndim == 3
    x = x[None] if unbatched else x
    k = _pair(kernel_size)
    s = k if stride is None else _pair(stride)
    p, d = _pair(padding), _pair(dilation)
    oh, ow = (_pool_length(x.shape[2 + a], k[a], s[a], p[a], d[a], ceil_mode) for a in (0, 1))
    out = np.full((*x.shape[:2], oh, ow), -np.inf)
    for i in range(oh):
        for j in range(ow):
            for a in range(k[0]):
                for b in range(k[1]):
                    h, w = i * s[0] - p[0] + a * d[0], j * s[1] - p[1] + b * d[1]
                    if 0 <= h < x.shape[2] and 0 <= w < x.shape[3]:
                        out[:, :, i, j] = np.maximum(out[:, :, i, j], x[:, :, h, w])
    return out[0] if unbatched else out


def _avg_pool_ref(
    x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
    divisor_override=None,
):  # fmt: skip
    unbatched = x.ndim == 3
    x = x[None] if unbatched else x
    k = _pair(kernel_size)
    s = k if stride is None else _pair(stride)
    p = _pair(padding)
    height, width = x.shape[2:]
    oh, ow = (_pool_length(x.shape[2 + a], k[a], s[a], p[a], 1, ceil_mode) for a in (0, 1))
    out = np.zeros((*x.shape[:2], oh, ow))
    for i in range(oh):
        for j in range(ow):
            h0, w0 = i * s[0] - p[0], j * s[1] - p[1]
            h1, w1 = min(h0 + k[0], height + p[0]), min(w0 + k[1], width + p[1])
            size = (h1 - h0) * (w1 - w0)
            h0, w0, h1, w1 = max(h0, 0), max(w0, 0), min(h1, height), min(w1, width)
            total = x[:, :, h0:h1, w0:w1].sum(axis=(2, 3))
            if divisor_override is not None:
                divisor = divisor_override
            else:
                divisor = size if count_include_pad else (h1 - h0) * (w1 - w0)
            out[:, :, i, j] = total / divisor
    return out[0] if unbatched else out


def _adaptive_ref(x, output_size):
    unbatched = x.ndim == 3
    x = x[None] if unbatched else x
    sizes = _pair(output_size) if output_size is not None else (None, None)
    oh, ow = (x.shape[2 + a] if sizes[a] is None else sizes[a] for a in (0, 1))
    height, width = x.shape[2:]
    out = np.zeros((*x.shape[:2], oh, ow))
    for i in range(oh):
        for j in range(ow):
            h0, h1 = (i * height) // oh, -(-((i + 1) * height) // oh)
            w0, w1 = (j * width) // ow, -(-((j + 1) * width) // ow)
            out[:, :, i, j] = x[:, :, h0:h1, w0:w1].mean(axis=(2, 3))
    return out[0] if unbatched else out


def _max_pool_samples(rng: np.random.Generator) -> list[Sample]:
    cases = [
        ("basic", (2, 2, 4, 4), {"kernel_size": 2}, "C"),
        ("tiny", (1, 1, 3, 3), {"kernel_size": 2, "stride": 1}, "C"),
        ("overlap_pad", (1, 2, 5, 4), {"kernel_size": 3, "stride": 2, "padding": 1}, "C"),
        ("ceil_mode", (1, 1, 5, 5), {"kernel_size": 2, "ceil_mode": True}, "C"),
        (
            "ceil_pad",
            (1, 1, 5, 6),
            {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True},
            "C",
        ),
        ("dilation", (1, 2, 6, 5), {"kernel_size": (2, 3), "dilation": (2, 1), "stride": 1}, "C"),
        ("non_square", (2, 1, 3, 7), {"kernel_size": (1, 3), "stride": (1, 2)}, "C"),
        ("size1", (1, 1, 1, 1), {"kernel_size": 1}, "C"),
        ("zero_batch", (0, 2, 4, 4), {"kernel_size": 2}, "C"),
        ("unbatched", (2, 4, 3), {"kernel_size": 2, "stride": 1}, "C"),
        ("view", (2, 3, 4, 4), {"kernel_size": 2}, "T"),
    ]
    return [Sample((distinct(rng, shape),), kw, desc, (lay,)) for desc, shape, kw, lay in cases]


def _avg_pool_samples(rng: np.random.Generator) -> list[Sample]:
    cases = [
        ("basic", (2, 2, 4, 4), {"kernel_size": 2}, "C"),
        ("tiny", (1, 1, 3, 3), {"kernel_size": 2, "stride": 1}, "C"),
        ("pad_counted", (1, 2, 5, 4), {"kernel_size": 3, "stride": 2, "padding": 1}, "C"),
        (
            "pad_not_counted",
            (1, 2, 5, 4),
            {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": False},
            "C",
        ),
        (
            "ceil_mode",
            (1, 1, 5, 6),
            {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True},
            "C",
        ),
        (
            "ceil_not_counted",
            (1, 1, 5, 5),
            {"kernel_size": 2, "ceil_mode": True, "count_include_pad": False},
            "C",
        ),
        ("divisor_override", (1, 2, 4, 5), {"kernel_size": (2, 3), "divisor_override": 4}, "C"),
        ("size1", (1, 1, 1, 1), {"kernel_size": 1}, "C"),
        ("zero_batch", (0, 2, 4, 4), {"kernel_size": 2}, "C"),
        ("unbatched", (2, 4, 3), {"kernel_size": 2, "stride": 1}, "C"),
        ("view", (2, 3, 4, 4), {"kernel_size": 2}, "S"),
    ]
    return [Sample((uniform(rng, shape),), kw, desc, (lay,)) for desc, shape, kw, lay in cases]


def _adaptive_samples(rng: np.random.Generator) -> list[Sample]:
    cases = [
        ("even", (2, 2, 4, 6), 2, "C"),
        ("uneven", (1, 2, 5, 7), (3, 4), "C"),
        ("global", (2, 3, 3, 2), 1, "C"),
        ("none_keeps", (1, 1, 4, 5), (None, 2), "C"),
        ("larger", (1, 1, 2, 3), (3, 5), "C"),
        ("size1", (1, 1, 1, 1), 1, "C"),
        ("zero_batch", (0, 2, 4, 4), 2, "C"),
        ("unbatched", (2, 5, 4), 3, "C"),
        ("view", (2, 2, 5, 4), (2, 3), "T"),
    ]
    return [
        Sample((uniform(rng, shape),), {"output_size": size}, desc, (layout,))
        for desc, shape, size, layout in cases
    ]


# --------------------------------------------------------------------------- errors
_MAX_POOL_ERRORS = (
    _one_error((1, 1, 5, 5), ValueError, r"^max_pool2d: padding \(2, 2\) must be at most half "
               r"of kernel_size \(2, 2\)", "padding_too_large", kernel_size=2, padding=2),
    _one_error((1, 1, 1, 1), ValueError, r"^max_pool2d: input of shape \(1, 1, 1, 1\) gives an "
               r"output of spatial size \(0, 0\)", "too_small", kernel_size=2),
    _one_error((1, 1, 5, 5), ValueError, r"^max_pool2d: stride must be positive, got \(0, 0\)",
               "stride_zero", kernel_size=2, stride=0),
    _one_error((1, 1, 5, 5), ValueError, r"^max_pool2d: dilation must be positive, got \(0, 0\)",
               "dilation_zero", kernel_size=2, dilation=0),
    _one_error((5, 5), ValueError, r"^max_pool2d: expected a 3-D \(unbatched\) or 4-D "
               r"\(N, C, H, W\) input, got shape \(5, 5\)", "ndim", kernel_size=2),
    _one_error((1, 0, 4, 4), ValueError, r"^max_pool2d: input of shape \(1, 0, 4, 4\) has no "
               r"channels", "no_channels", kernel_size=2),
)  # fmt: skip

_AVG_POOL_ERRORS = (
    _one_error((1, 1, 5, 5), ValueError, r"^avg_pool2d: padding \(2, 2\) must be at most half "
               r"of kernel_size \(3, 3\)", "padding_too_large", kernel_size=3, padding=2),
    _one_error((1, 1, 5, 5), ValueError, r"^avg_pool2d: divisor_override must not be zero",
               "divisor_zero", kernel_size=2, divisor_override=0),
    _one_error((1, 1, 5, 5), TypeError, r"^avg_pool2d: kernel_size must be an int or a tuple of "
               r"2 ints, got 2.5", "kernel_float", kernel_size=2.5),
)  # fmt: skip

_ADAPTIVE_ERRORS = (
    _one_error((1, 1, 0, 5), ValueError, r"^adaptive_avg_pool2d: input of shape \(1, 1, 0, 5\) "
               r"is empty in a non-batch dimension", "empty_plane", output_size=2),
    _one_error((5,), ValueError, r"^adaptive_avg_pool2d: expected a 3-D \(unbatched\) or 4-D",
               "ndim", output_size=2),
    _one_error((1, 1, 4, 4), ValueError, r"^adaptive_avg_pool2d: output_size must hold "
               r"non-negative ints or None, got -1", "negative", output_size=-1),
)  # fmt: skip


# --------------------------------------------------------------------------- the entries
register(
    OpInfo("max_pool2d", FC.max_pool2d, _max_pool_ref, _max_pool_samples, errors=_MAX_POOL_ERRORS)
)
register(
    OpInfo("avg_pool2d", FC.avg_pool2d, _avg_pool_ref, _avg_pool_samples, errors=_AVG_POOL_ERRORS)
)
register(
    OpInfo(
        "adaptive_avg_pool2d",
        FC.adaptive_avg_pool2d,
        _adaptive_ref,
        _adaptive_samples,
        errors=_ADAPTIVE_ERRORS,
    )
)

exempt(
    "0-d",
    "needs a 3-D or 4-D input (a 2-D input is an error input)",
    "max_pool2d",
    "adaptive_avg_pool2d",
)
exempt("0-d", "needs a 3-D or 4-D input", "avg_pool2d")


# ---- the average pool's adjoint ------------------------------------------------------------
def _avg_pool_adjoint_ref(grad, input_size, **params):
    """Aᵀg, with A the average pool of one plane as a matrix, built column by column from
    the reference pool of unit planes."""
    h, w = input_size
    columns = [_avg_pool_ref(np.eye(h * w)[k].reshape(1, 1, h, w), **params) for k in range(h * w)]
    matrix = np.stack([c.ravel() for c in columns], axis=1)  # (OH·OW, H·W)
    planes = grad.reshape(-1, matrix.shape[0]) @ matrix
    return planes.reshape(*grad.shape[:-2], h, w)


#: (description, input (N, C, H, W) of the pool, its keyword arguments, layout)
_ADJOINT_CASES = [
    ("basic", (2, 2, 4, 4), {"kernel_size": 2}, "C"),
    ("overlap_pad", (1, 2, 5, 4), {"kernel_size": 3, "stride": 2, "padding": 1}, "C"),
    (
        "pad_not_counted_ceil",
        (1, 1, 5, 5),
        {"kernel_size": 2, "ceil_mode": True, "count_include_pad": False},
        "C",
    ),
    ("divisor_override", (1, 2, 4, 5), {"kernel_size": (2, 3), "divisor_override": 4}, "C"),
    ("size1", (1, 1, 1, 1), {"kernel_size": 1}, "C"),
    ("zero_batch", (0, 2, 4, 4), {"kernel_size": 2}, "C"),
    ("view", (2, 3, 4, 4), {"kernel_size": 2}, "T"),
]


def _adjoint_params(kwargs: dict) -> dict:
    """The pool's keyword arguments with every default spelled out, as the op takes them."""
    k = _pair(kwargs["kernel_size"])
    return {
        "kernel_size": k,
        "stride": _pair(kwargs.get("stride", k)),
        "padding": _pair(kwargs.get("padding", 0)),
        "ceil_mode": kwargs.get("ceil_mode", False),
        "count_include_pad": kwargs.get("count_include_pad", True),
        "divisor_override": kwargs.get("divisor_override"),
    }


def _adjoint_samples(rng: np.random.Generator) -> list[Sample]:
    result = []
    for desc, shape, kwargs, layout in _ADJOINT_CASES:
        out_shape = _avg_pool_ref(np.zeros(shape), **kwargs).shape
        params = {"input_size": shape[2:], **_adjoint_params(kwargs)}
        result.append(Sample((uniform(rng, out_shape),), params, desc, (layout,)))
    return result


register(
    OpInfo(
        "avg_pool2d_backward",  # the VJP of avg_pool2d as an op, recorded by create_graph
        lambda g, **params: _apply(ops.AvgPool2dBackward(**params), g),
        _avg_pool_adjoint_ref,
        _adjoint_samples,
    )
)
exempt("0-d", "the gradient of a pooled (N, C, OH, OW) input is 4-D", "avg_pool2d_backward")
