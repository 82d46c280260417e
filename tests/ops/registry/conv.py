"""Registry entries for ``tensorgrad/ops/conv.py`` and ``fused_conv.py``: convolution (and
its fusions with ReLU and max-pooling), im2col/col2im (unfold, fold) and constant padding.

The references are written from the definitions with explicit loops over output positions
(NumPy's ``einsum`` for each window), independent of the ops' im2col, strided views and
threads. Shapes are tiny: the full Jacobian and the scalar engine see every element.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import tensorgrad as tg
from tensorgrad.nn import functional as F
from tensorgrad.nn import functional as FC
from tensorgrad.nn.functional.conv import conv2d_relu, conv2d_relu_max_pool2d
from tests.ops.registry.core import ErrorInput, OpInfo, Sample, exempt, register, uniform


# --------------------------------------------------------------------------- references
def _pair(value: Any) -> tuple[int, int]:
    return (value, value) if isinstance(value, int) else tuple(value)


def _pads(padding: Any, kernel, dilation) -> list[tuple[int, int]]:
    """Padding per side, PyTorch's reading: 'same' puts the odd one after."""
    if padding == "valid":
        return [(0, 0)] * len(kernel)
    if padding == "same":
        totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
        return [(t // 2, t - t // 2) for t in totals]
    return [(p, p) for p in _pair(padding)]


def _conv2d_ref(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    unbatched = x.ndim == 3
    x = x[None] if unbatched else x
    (sh, sw), (dh, dw) = _pair(stride), _pair(dilation)
    o, cg, kh, kw = w.shape
    xp = np.pad(x, [(0, 0), (0, 0), *_pads(padding, (kh, kw), (dh, dw))])
    n, _, hp, wp = xp.shape
    oh, ow = (hp - dh * (kh - 1) - 1) // sh + 1, (wp - dw * (kw - 1) - 1) // sw + 1
    og = o // groups
    out = np.zeros((n, o, oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = xp[
                :,
                :,
                i * sh : i * sh + dh * (kh - 1) + 1 : dh,
                j * sw : j * sw + dw * (kw - 1) + 1 : dw,
            ]
            for g in range(groups):
                out[:, g * og : (g + 1) * og, i, j] = np.einsum(
                    "nckl,ockl->no", patch[:, g * cg : (g + 1) * cg], w[g * og : (g + 1) * og]
                )
    if b is not None:
        out += b[None, :, None, None]
    return out[0] if unbatched else out


def _conv2d_relu_ref(*args, **kwargs):
    return np.maximum(_conv2d_ref(*args, **kwargs), 0)


def _conv2d_relu_max_pool2d_ref(*args, pool=2, **kwargs):
    """The ReLU's output max-pooled over (kH, kW) tiles; rows and columns past the last
    whole tile dropped."""
    z = _conv2d_relu_ref(*args, **kwargs)
    (kh, kw), (h, w) = _pair(pool), z.shape[-2:]
    ph, pw = h // kh, w // kw
    tiles = z[..., : ph * kh, : pw * kw].reshape(*z.shape[:-2], ph, kh, pw, kw)
    return tiles.max(axis=(-3, -1))


def _conv1d_ref(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    pad = padding if isinstance(padding, str) else (0, _pair(padding)[0])
    one = lambda v: (1, v if isinstance(v, int) else v[0])  # noqa: E731
    out = _conv2d_ref(x[..., None, :], w[:, :, None, :], b, one(stride), pad, one(dilation), groups)
    return out[..., 0, :]


def _blocks(hw, kernel, dilation, padding, stride):
    return [
        (size + 2 * p - d * (k - 1) - 1) // s + 1
        for size, k, d, p, s in zip(hw, kernel, dilation, padding, stride)
    ]


def _unfold_ref(x, kernel_size, dilation=1, padding=0, stride=1):
    unbatched = x.ndim == 3
    x = x[None] if unbatched else x
    k, d, p, s = (_pair(v) for v in (kernel_size, dilation, padding, stride))
    xp = np.pad(x, [(0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])])
    oh, ow = _blocks(x.shape[2:], k, d, p, s)
    n, c = x.shape[:2]
    out = np.zeros((n, c * k[0] * k[1], oh * ow))
    for i in range(oh):
        for j in range(ow):
            block = xp[:, :, i * s[0] :: d[0], j * s[1] :: d[1]][:, :, : k[0], : k[1]]
            out[:, :, i * ow + j] = block.reshape(n, c * k[0] * k[1])
    return out[0] if unbatched else out


def _fold_ref(cols, output_size, kernel_size, dilation=1, padding=0, stride=1):
    unbatched = cols.ndim == 2
    cols = cols[None] if unbatched else cols
    size, k, d, p, s = (_pair(v) for v in (output_size, kernel_size, dilation, padding, stride))
    oh, ow = _blocks(size, k, d, p, s)
    n = cols.shape[0]
    c = cols.shape[1] // (k[0] * k[1])
    out = np.zeros((n, c, size[0] + 2 * p[0], size[1] + 2 * p[1]))
    for i in range(oh):
        for j in range(ow):
            block = cols[:, :, i * ow + j].reshape(n, c, *k)
            rows = slice(i * s[0], i * s[0] + d[0] * (k[0] - 1) + 1, d[0])
            columns = slice(j * s[1], j * s[1] + d[1] * (k[1] - 1) + 1, d[1])
            out[:, :, rows, columns] += block
    out = out[:, :, p[0] : p[0] + size[0], p[1] : p[1] + size[1]]
    return out[0] if unbatched else out


def _pad_ref(x, pad, value=None):
    value = 0.0 if value is None else value
    if not pad:
        return x.copy()
    widths = [(0, 0)] * x.ndim
    for k in range(len(pad) // 2):
        widths[x.ndim - 1 - k] = (pad[2 * k], pad[2 * k + 1])
    grown = np.pad(x, [(max(a, 0), max(b, 0)) for a, b in widths], constant_values=value)
    index = tuple(slice(max(-a, 0), size - max(-b, 0)) for size, (a, b) in zip(grown.shape, widths))
    return grown[index]


# --------------------------------------------------------------------------- samples
def _conv_sample(rng, desc, x_shape, w_shape, bias=True, layouts="", **kwargs) -> Sample:
    args = [uniform(rng, x_shape), uniform(rng, w_shape)]
    if bias:
        args.append(uniform(rng, w_shape[:1]))
    return Sample(tuple(args), kwargs, desc, tuple(layouts))


def _conv2d_samples(rng: np.random.Generator) -> list[Sample]:
    s = _conv_sample
    return [
        s(rng, "basic", (2, 2, 5, 4), (3, 2, 3, 3)),
        s(rng, "tiny", (1, 1, 3, 3), (1, 1, 2, 2)),  # full Jacobian, second derivatives
        s(rng, "tiny_groups", (1, 2, 3, 2), (2, 1, 2, 1), groups=2, padding=(1, 0)),
        s(rng, "no_bias", (1, 2, 4, 3), (2, 2, 2, 2), bias=False),
        s(rng, "stride_not_dividing", (1, 2, 6, 7), (2, 2, 2, 3), stride=(2, 3), padding=1),
        s(rng, "dilation", (1, 1, 6, 5), (2, 1, 2, 2), dilation=(2, 1), padding=(1, 2)),
        s(rng, "groups_depthwise", (2, 4, 4, 4), (4, 1, 3, 3), groups=4, padding=1),
        s(rng, "same_even_kernel", (1, 2, 5, 4), (2, 2, 2, 4), padding="same", dilation=(1, 2)),
        s(rng, "same", (1, 3, 4, 4), (2, 3, 3, 3), padding="same"),
        s(rng, "valid", (1, 2, 4, 5), (2, 2, 3, 2), padding="valid"),
        s(rng, "kernel_is_input", (2, 2, 3, 4), (3, 2, 3, 4)),
        s(rng, "one_by_one", (2, 3, 3, 2), (4, 3, 1, 1)),
        s(rng, "size1", (1, 1, 1, 1), (1, 1, 1, 1)),
        s(rng, "zero_batch", (0, 2, 4, 4), (3, 2, 3, 3)),
        s(rng, "unbatched", (2, 4, 4), (3, 2, 2, 3)),
        s(rng, "views", (2, 3, 4, 5), (4, 3, 2, 2), layouts="TSS", stride=2, padding=1),
    ]


def _conv2d_relu_max_pool2d_samples(rng: np.random.Generator) -> list[Sample]:
    s = _conv_sample
    return [
        s(rng, "basic", (2, 2, 6, 5), (3, 2, 3, 3)),
        s(rng, "tiny", (1, 1, 3, 3), (1, 1, 2, 2)),  # full Jacobian, second derivatives
        s(rng, "leftover_rows_and_columns", (1, 2, 7, 8), (2, 2, 2, 2), pool=(3, 2)),
        s(rng, "groups_padding", (2, 4, 5, 5), (4, 2, 3, 3), groups=2, padding=1),
        s(rng, "stride_dilation", (1, 2, 9, 9), (2, 2, 2, 2), stride=2, dilation=2),
        s(rng, "no_bias", (1, 2, 5, 4), (2, 2, 2, 2), bias=False, pool=(2, 1)),
        s(rng, "pool_one", (1, 2, 3, 3), (2, 2, 2, 2), pool=1),
        s(rng, "zero_batch", (0, 2, 4, 4), (3, 2, 3, 3)),
        s(rng, "unbatched", (2, 4, 4), (3, 2, 2, 2), pool=(1, 3)),
        s(rng, "views", (2, 3, 6, 7), (4, 3, 2, 2), layouts="TSS", padding=1),
    ]


def _conv1d_samples(rng: np.random.Generator) -> list[Sample]:
    s = _conv_sample
    return [
        s(rng, "basic", (2, 2, 7), (3, 2, 3)),
        s(rng, "tiny", (1, 1, 4), (1, 1, 2)),
        s(rng, "options", (1, 4, 9), (4, 2, 3), stride=2, padding=2, dilation=2, groups=2),
        s(rng, "same", (1, 2, 6), (2, 2, 4), padding="same"),
        s(rng, "size1", (1, 1, 1), (1, 1, 1)),
        s(rng, "zero_batch", (0, 2, 5), (1, 2, 3)),
        s(rng, "unbatched", (2, 5), (3, 2, 2), bias=False),
        s(rng, "views", (2, 3, 6), (2, 3, 3), layouts="TS"),
    ]


def _window_samples(rng: np.random.Generator, fold: bool) -> list[Sample]:
    cases = [  # (desc, input (N, C, H, W), kwargs, layout)
        ("basic", (2, 2, 4, 3), {"kernel_size": 2}, "C"),
        ("tiny", (1, 1, 3, 3), {"kernel_size": 2}, "C"),
        (
            "options",
            (1, 2, 5, 6),
            {"kernel_size": (2, 3), "dilation": (1, 2), "padding": 1, "stride": (2, 1)},
            "C",
        ),
        ("one_by_one", (2, 3, 2, 2), {"kernel_size": 1}, "C"),
        ("size1", (1, 1, 1, 1), {"kernel_size": 1}, "C"),
        ("zero_batch", (0, 2, 3, 3), {"kernel_size": 2}, "C"),
        ("unbatched", (2, 3, 4), {"kernel_size": (2, 1), "stride": 2}, "C"),
        ("view", (2, 2, 3, 4), {"kernel_size": 2, "padding": 1}, "T" if not fold else "S"),
    ]
    result = []
    for desc, shape, kwargs, layout in cases:
        if fold:
            columns = np.shape(_unfold_ref(np.zeros(shape), **kwargs))
            kwargs = {"output_size": shape[-2:], **kwargs}
            result.append(Sample((uniform(rng, columns),), kwargs, desc, (layout,)))
        else:
            result.append(Sample((uniform(rng, shape),), kwargs, desc, (layout,)))
    return result


def _pad_samples(rng: np.random.Generator) -> list[Sample]:
    cases = [
        ("last_axis", (2, 3), (1, 2), "C"),
        ("two_axes", (1, 2, 3, 3), (1, 0, 2, 1), "C"),
        ("crop", (1, 2, 4, 5), (-1, 2, 0, -2), "C"),
        ("three_axes", (2, 2, 2), (0, 0, 1, 1, 1, 0), "C"),
        ("0d_nothing", (), (), "C"),
        ("size1", (1,), (1, 1), "C"),
        ("empty", (0, 3), (1, 1, 0, 0), "C"),
        ("view", (3, 4), (2, -1), "T"),
    ]
    return [
        Sample((uniform(rng, shape),), {"pad": pad, "value": 0.5}, desc, (layout,))
        for desc, shape, pad, layout in cases
    ]


# --------------------------------------------------------------------------- errors
def _conv_error(x_shape, w_shape, b_shape, error, match, desc, **kwargs) -> ErrorInput:
    args = [np.ones(x_shape), np.ones(w_shape)] + ([np.ones(b_shape)] if b_shape else [])
    return ErrorInput(tuple(args), error, match, kwargs, desc)


_CONV2D_ERRORS = (
    _conv_error((1, 3, 5, 5), (4, 2, 3, 3), None, ValueError,
                r"^conv2d: input of shape \(1, 3, 5, 5\) has 3 channels, but weight of shape "
                r"\(4, 2, 3, 3\) with groups=1 expects 2", "channels"),
    _conv_error((1, 4, 5, 5), (3, 2, 3, 3), None, ValueError,
                r"^conv2d: groups=2 must divide the weight's 3 output channels", "groups_out",
                groups=2),
    _conv_error((1, 3, 5, 5), (4, 2, 3, 3), None, ValueError,
                r"^conv2d: input of shape \(1, 3, 5, 5\) has 3 channels, but weight of shape "
                r"\(4, 2, 3, 3\) with groups=2 expects 4", "groups_in", groups=2),
    _conv_error((1, 2, 2, 5), (4, 2, 3, 3), None, ValueError,
                r"^conv2d: padded input of spatial size \(2, 5\) \(input \(1, 2, 2, 5\), "
                r"padding \(\(0, 0\), \(0, 0\)\)\) is smaller than the kernel \(3, 3\)",
                "input_smaller_than_kernel"),
    _conv_error((1, 2, 5, 5), (4, 2, 3, 3), None, ValueError,
                r"^conv2d: padded input of spatial size \(5, 5\) .* smaller than the kernel "
                r"\(7, 5\) \(weight \(4, 2, 3, 3\), dilation \(3, 2\)\)", "dilated_kernel",
                dilation=(3, 2)),
    _conv_error((5, 5), (4, 2, 3, 3), None, ValueError,
                r"^conv2d: expected a 3-D \(C, H, W\) or 4-D \(N, C, H, W\) input, got shape "
                r"\(5, 5\)", "input_ndim"),
    _conv_error((1, 2, 5, 5), (4, 2, 3), None, ValueError,
                r"^conv2d: weight must be 4-D \(out_channels, in_channels/groups, kH, kW\), "
                r"got shape \(4, 2, 3\)", "weight_ndim"),
    _conv_error((1, 2, 5, 5), (4, 2, 3, 3), (3,), ValueError,
                r"^conv2d: bias of shape \(3,\) does not match weight of shape \(4, 2, 3, 3\) "
                r"\(expected \(4,\)\)", "bias_shape"),
    _conv_error((1, 2, 5, 5), (4, 2, 3, 3), None, ValueError,
                r"^conv2d: stride must be positive, got \(0, 1\)", "stride_zero", stride=(0, 1)),
    _conv_error((1, 2, 5, 5), (4, 2, 3, 3), None, ValueError,
                r"^conv2d: negative padding is not supported, got -1", "negative_padding",
                padding=-1),
    _conv_error((1, 2, 5, 5), (4, 2, 3, 3), None, ValueError,
                r"^conv2d: padding='same' is not supported for strided convolutions",
                "same_strided", padding="same", stride=2),
    _conv_error((1, 2, 5, 5), (4, 2, 3, 3), None, ValueError,
                r"^conv2d: invalid padding string 'full'", "padding_string", padding="full"),
    _conv_error((1, 2, 5, 5), (4, 2, 3, 3), None, ValueError,
                r"^conv2d: groups must be a positive integer, got 0", "groups_zero", groups=0),
    _conv_error((1, 2, 5, 5), (4, 2, 3, 3), None, TypeError,
                r"^conv2d: stride must be an int or a tuple of 2 ints, got \(1, 1, 1\)",
                "stride_length", stride=(1, 1, 1)),
    _conv_error((1, 2, 5, 5), (4, 2, 3, 3), None, ValueError,
                r"^conv2d: dilation must be positive, got \(0, 0\)", "dilation_zero", dilation=0),
)  # fmt: skip

_CONV1D_ERRORS = (
    _conv_error((1, 3, 5), (4, 2, 3), None, ValueError,
                r"^conv1d: input of shape \(1, 3, 5\) has 3 channels, but weight of shape "
                r"\(4, 2, 3\) with groups=1 expects 2", "channels"),
    _conv_error((1, 2, 2), (4, 2, 3), None, ValueError,
                r"^conv1d: padded input of spatial size \(2,\) .* smaller than the kernel \(3,\)",
                "input_smaller_than_kernel"),
    _conv_error((5,), (4, 2, 3), None, ValueError,
                r"^conv1d: expected a 2-D \(C, L\) or 3-D \(N, C, L\) input, got shape \(5,\)",
                "input_ndim"),
    _conv_error((1, 2, 5), (4, 2, 3, 3), None, ValueError,
                r"^conv1d: weight must be 3-D \(out_channels, in_channels/groups, k\)",
                "weight_ndim"),
)  # fmt: skip


def _one_error(shape, error, match, desc, **kwargs) -> ErrorInput:
    return ErrorInput((np.ones(shape),), error, match, kwargs, desc)


_UNFOLD_ERRORS = (
    _one_error((1, 1, 2, 2), ValueError, r"^unfold: input with spatial size \(2, 2\), "
               r"kernel_size=\(3, 3\), .* gives \(0, 0\) sliding blocks", "too_small",
               kernel_size=3),
    _one_error((2, 2), ValueError, r"^unfold: expected a 3-D \(unbatched\) or 4-D \(N, C, H, W\) "
               r"input, got shape \(2, 2\)", "ndim", kernel_size=1),
    _one_error((1, 1, 3, 3), ValueError, r"^unfold: stride must be positive, got \(0, 0\)",
               "stride_zero", kernel_size=2, stride=0),
    _one_error((1, 1, 3, 3), ValueError, r"^unfold: padding must be non-negative, got \(-1, -1\)",
               "negative_padding", kernel_size=2, padding=-1),
)  # fmt: skip

_FOLD_ERRORS = (
    _one_error((1, 8, 15), ValueError, r"^fold: input with spatial size \(5, 5\), "
               r"kernel_size=\(2, 2\), .* gives \(4, 4\) sliding blocks, 16 in all, but the "
               r"input of shape \(1, 8, 15\) has 15 in dimension 2", "blocks",
               output_size=5, kernel_size=2),
    _one_error((1, 9, 16), ValueError, r"^fold: input's dimension 1 \(9\) must be divisible by "
               r"the product of kernel_size \(2, 2\) \(4\)", "rows", output_size=5, kernel_size=2),
    _one_error((9,), ValueError, r"^fold: expected a 2-D \(unbatched\) or 3-D", "ndim",
               output_size=3, kernel_size=3),
)  # fmt: skip


_CONV2D_RELU_MAX_POOL2D_ERRORS = (
    *_CONV2D_ERRORS[:2],
    _conv_error((1, 1, 3, 3), (1, 1, 3, 3), None, ValueError,
                r"^conv2d_relu_max_pool2d: max_pool2d: input of shape \(1, 1, 1, 1\) gives an "
                r"output of spatial size \(0, 0\): too small for kernel_size \(2, 2\)",
                "pool_larger_than_the_output"),
    _conv_error((1, 1, 3, 3), (1, 1, 2, 2), None, ValueError,
                r"^max_pool2d: kernel_size must be positive, got \(0, 0\)", "pool_zero", pool=0),
    _conv_error((1, 1, 3, 3), (1, 1, 2, 2), None, TypeError,
                r"^max_pool2d: kernel_size must be an int or a tuple of 2 ints, got 1.5",
                "pool_float", pool=1.5),
)  # fmt: skip


_PAD_ERRORS = (
    _one_error((2, 3), ValueError, r"^pad: padding length must be divisible by 2, got 1",
               "odd_length", pad=(1,)),
    _one_error((2, 3), ValueError, r"^pad: padding length 6 is too large for an input of 2 "
               r"dimensions", "too_long", pad=(1, 1, 1, 1, 1, 1)),
    _one_error((2, 3), ValueError, r"^pad: padding \(-2, -2\) of an input of shape \(2, 3\) "
               r"gives a negative size", "negative_size", pad=(-2, -2)),
    _one_error((2, 3), NotImplementedError, r"^pad: mode='reflect' is not supported in "
               r"tensorgrad; only 'constant' is", "reflect", pad=(1, 1), mode="reflect"),
    _one_error((2, 3), NotImplementedError, r"^pad: unrecognised padding mode 'mirror'",
               "unknown_mode", pad=(1, 1), mode="mirror"),
)  # fmt: skip


# --------------------------------------------------------------------------- the entries
register(OpInfo("conv2d", FC.conv2d, _conv2d_ref, _conv2d_samples, errors=_CONV2D_ERRORS))
register(
    OpInfo("conv2d_relu", conv2d_relu, _conv2d_relu_ref, _conv2d_samples, errors=_CONV2D_ERRORS)
)
register(
    OpInfo(
        "conv2d_relu_max_pool2d",
        conv2d_relu_max_pool2d,
        _conv2d_relu_max_pool2d_ref,
        _conv2d_relu_max_pool2d_samples,
        errors=_CONV2D_RELU_MAX_POOL2D_ERRORS,
    )
)
register(OpInfo("conv1d", FC.conv1d, _conv1d_ref, _conv1d_samples, errors=_CONV1D_ERRORS))
register(
    OpInfo(
        "unfold",
        FC.unfold,
        _unfold_ref,
        lambda rng: _window_samples(rng, fold=False),
        errors=_UNFOLD_ERRORS,
    )
)
register(
    OpInfo(
        "fold",
        FC.fold,
        _fold_ref,
        lambda rng: _window_samples(rng, fold=True),
        errors=_FOLD_ERRORS,
    )
)
register(OpInfo("pad", FC.pad, _pad_ref, _pad_samples, errors=_PAD_ERRORS))


# --------------------------------------------------------------------------- per-sample weights
def _conv2d_per_sample(x, w, *bias, **kwargs):
    """``conv2d`` under ``vmap`` with a weight (and bias) per sample: what per-sample
    gradients run (``ops.batched_conv.Conv2dPerSample``). Written with ``tg.func`` and ``F``
    only, so that it reads as ``torch.func`` code where PyTorch stands in for them."""
    return tg.func.vmap(lambda xi, wi, *bi: F.conv2d(xi, wi, *bi, **kwargs))(x, w, *bias)


def _conv2d_per_sample_ref(x, w, *bias, **kwargs):
    rows = [_conv2d_ref(x[i], w[i], *(b[i] for b in bias), **kwargs) for i in range(len(x))]
    return np.stack(rows) if rows else np.zeros((0, *x.shape[1:2], w.shape[1], 1, 1))


def _conv2d_per_sample_samples(rng: np.random.Generator) -> list[Sample]:
    def s(desc, b, x_shape, w_shape, bias=True, layouts="", **kwargs):
        args = [uniform(rng, (b, *x_shape)), uniform(rng, (b, *w_shape))]
        if bias:
            args.append(uniform(rng, (b, w_shape[0])))
        return Sample(tuple(args), kwargs, desc, tuple(layouts))

    return [
        s("basic", 2, (1, 2, 5, 4), (3, 2, 3, 3)),
        s("tiny", 2, (1, 1, 3, 3), (1, 1, 2, 2)),  # full Jacobian, second derivatives
        s("images_per_sample", 2, (3, 2, 4, 4), (2, 2, 2, 2), padding=1),
        s("no_bias", 3, (1, 2, 4, 3), (2, 2, 2, 2), bias=False),
        s("groups", 2, (1, 4, 4, 4), (6, 2, 3, 3), groups=2, padding=(1, 0)),
        s("depthwise", 2, (2, 3, 4, 4), (3, 1, 3, 3), groups=3),
        s("stride_dilation", 2, (1, 2, 7, 7), (2, 2, 2, 3), stride=(2, 1), dilation=(1, 2)),
        s("same_even_kernel", 2, (1, 2, 5, 4), (2, 2, 2, 4), padding="same", dilation=(1, 2)),
        s("size1", 1, (1, 1, 1, 1), (1, 1, 1, 1)),
        s("zero_images", 2, (0, 2, 4, 4), (3, 2, 3, 3)),
        s("views", 2, (2, 3, 4, 5), (4, 3, 2, 2), layouts="TSS", stride=2, padding=1),
    ]


register(
    OpInfo(
        "conv2d_per_sample",
        _conv2d_per_sample,
        _conv2d_per_sample_ref,
        _conv2d_per_sample_samples,
    )
)


# --------------------------------------------------------------------------- transposed
def _conv_transpose2d_ref(
    x, w, b=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    """The definition: every input pixel adds its weighted kernel onto the output at
    stride s (spread by the dilation); then ``padding`` is cut from each side and the
    output is ``output_padding`` longer at the bottom and right."""
    unbatched = x.ndim == 3
    x = x[None] if unbatched else x
    (sh, sw), (dh, dw) = _pair(stride), _pair(dilation)
    (ph, pw), (oph, opw) = _pair(padding), _pair(output_padding)
    n, cin, h, wd = x.shape
    _, cog, kh, kw = w.shape
    cig = cin // groups
    full_h, full_w = (h - 1) * sh + dh * (kh - 1) + 1, (wd - 1) * sw + dw * (kw - 1) + 1
    oh, ow = full_h - 2 * ph + oph, full_w - 2 * pw + opw
    full = np.zeros((n, groups * cog, max(full_h, ph + oh), max(full_w, pw + ow)))
    for g in range(groups):
        xs, ws = x[:, g * cig : (g + 1) * cig], w[g * cig : (g + 1) * cig]
        for ki in range(kh):
            for kj in range(kw):
                contribution = np.einsum("nchw,co->nohw", xs, ws[:, :, ki, kj])
                rows = slice(ki * dh, ki * dh + sh * (h - 1) + 1, sh)
                cols = slice(kj * dw, kj * dw + sw * (wd - 1) + 1, sw)
                full[:, g * cog : (g + 1) * cog, rows, cols] += contribution
    out = full[:, :, ph : ph + oh, pw : pw + ow]
    if b is not None:
        out = out + b[None, :, None, None]
    return out[0] if unbatched else out


def _conv_transpose1d_ref(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1,
                          dilation=1):  # fmt: skip
    """The 2-D reference on (N, C, 1, L): height 1, stride and dilation 1, no padding."""

    def last(value, fill):
        return (fill, value if isinstance(value, int) else value[0])

    out = _conv_transpose2d_ref(
        x[..., None, :], w[:, :, None, :], b, last(stride, 1), last(padding, 0),
        last(output_padding, 0), groups, last(dilation, 1),
    )  # fmt: skip
    return out.reshape(out.shape[:-2] + out.shape[-1:])


def _transposed_sample(rng, desc, x_shape, w_shape, bias=True, layouts="", **kwargs) -> Sample:
    args = [uniform(rng, x_shape), uniform(rng, w_shape)]
    if bias:
        args.append(uniform(rng, (w_shape[1] * kwargs.get("groups", 1),)))
    return Sample(tuple(args), kwargs, desc, tuple(layouts))


def _conv_transpose2d_samples(rng: np.random.Generator) -> list[Sample]:
    s = _transposed_sample
    return [
        s(rng, "basic", (2, 2, 3, 4), (2, 3, 3, 3)),
        s(rng, "tiny", (1, 1, 2, 2), (1, 1, 2, 2)),  # full Jacobian, second derivatives
        s(rng, "stride_padding_output_padding", (1, 2, 3, 3), (2, 2, 3, 2), stride=2,
          padding=1, output_padding=1),
        s(rng, "output_padding_beyond_padding", (1, 1, 2, 3), (1, 2, 2, 2), stride=3,
          output_padding=(2, 1)),
        s(rng, "dilation_output_padding", (1, 1, 3, 2), (1, 1, 2, 2), dilation=2,
          output_padding=1),
        s(rng, "groups", (2, 4, 2, 3), (4, 1, 2, 2), groups=2, stride=(1, 2), padding=(0, 1)),
        s(rng, "no_bias", (1, 2, 3, 2), (2, 2, 2, 2), bias=False, stride=2),
        s(rng, "size1", (1, 1, 1, 1), (1, 1, 1, 1)),
        s(rng, "zero_batch", (0, 2, 3, 3), (2, 3, 2, 2)),
        s(rng, "unbatched", (2, 3, 3), (2, 2, 2, 3), stride=2),
        s(rng, "views", (2, 3, 3, 4), (3, 2, 2, 2), layouts="TSS", stride=2, padding=1),
    ]  # fmt: skip


def _conv_transpose1d_samples(rng: np.random.Generator) -> list[Sample]:
    s = _transposed_sample
    return [
        s(rng, "basic", (2, 2, 5), (2, 3, 3)),
        s(rng, "options", (1, 4, 4), (4, 1, 3), stride=2, padding=1, output_padding=1,
          dilation=2, groups=2),
        s(rng, "size1", (1, 1, 1), (1, 1, 1)),
        s(rng, "zero_batch", (0, 2, 3), (2, 1, 2)),
        s(rng, "unbatched", (2, 4), (2, 2, 2), bias=False),
        s(rng, "views", (2, 3, 4), (3, 2, 2), layouts="TS"),
    ]  # fmt: skip


def _transposed_error(x_shape, w_shape, b_shape, error, match, desc, **kwargs) -> ErrorInput:
    args = [np.zeros(x_shape), np.zeros(w_shape)]
    if b_shape is not None:
        args.append(np.zeros(b_shape))
    return ErrorInput(tuple(args), error, match, kwargs, desc)


_CONV_TRANSPOSE2D_ERRORS = (
    _transposed_error((1, 3, 4, 4), (2, 3, 3, 3), None, ValueError,
                      r"^conv_transpose2d: input of shape \(1, 3, 4, 4\) has 3 channels, but "
                      r"weight of shape \(2, 3, 3, 3\) expects 2", "channels"),
    _transposed_error((1, 3, 4, 4), (3, 2, 3, 3), (3,), ValueError,
                      r"^conv_transpose2d: bias of shape \(3,\) does not match", "bias"),
    _transposed_error((1, 3, 4, 4), (3, 2, 3, 3), None, ValueError,
                      r"^conv_transpose2d: groups=2 must divide the weight's 3 input channels",
                      "groups", groups=2),
    _transposed_error((1, 2, 4, 4), (2, 2, 3, 3), None, RuntimeError,
                      r"^conv_transpose2d: output padding must be smaller than either stride or "
                      r"dilation", "output_padding", stride=2, output_padding=2),
    _transposed_error((1, 2, 1, 1), (2, 2, 1, 1), None, ValueError,
                      r"^conv_transpose2d: the output's spatial size \(-1, -1\) is not "
                      r"positive", "empty_output", padding=1),
    _transposed_error((2, 4, 4), (2, 2, 3), None, ValueError,
                      r"^conv_transpose2d: weight must be 4-D", "weight_3d"),
    _transposed_error((4, 4), (2, 2, 3, 3), None, ValueError,
                      r"^conv_transpose2d: expected a 3-D \(unbatched\) or 4-D", "input_2d"),
    _transposed_error((1, 2, 4, 4), (2, 2, 3, 3), None, TypeError,
                      r"^conv_transpose2d: padding must be an int or a tuple of ints",
                      "padding_string", padding="same"),
)  # fmt: skip

register(
    OpInfo(
        "conv_transpose2d",
        FC.conv_transpose2d,
        _conv_transpose2d_ref,
        _conv_transpose2d_samples,
        errors=_CONV_TRANSPOSE2D_ERRORS,
    )
)
register(
    OpInfo(
        "conv_transpose1d",
        FC.conv_transpose1d,
        _conv_transpose1d_ref,
        _conv_transpose1d_samples,
    )
)

exempt(
    "0-d",
    "input and weight have at least 3 dimensions (a 2-D input is an error input)",
    "conv2d",
    "conv2d_relu",
    "conv2d_relu_max_pool2d",
    "conv_transpose2d",
)
exempt(
    "0-d", "input and weight have at least 2 dimensions (a 1-D input is an error input)", "conv1d",
    "conv_transpose1d",
)  # fmt: skip

exempt(
    "0-d",
    "per sample, input and weight have 4 dimensions (vmap over a batch of them)",
    "conv2d_per_sample",
)
exempt("0-d", "needs a 3-D or 4-D input (a 2-D input is an error input)", "unfold")
exempt("0-d", "needs a 2-D or 3-D input (a 1-D input is an error input)", "fold")
