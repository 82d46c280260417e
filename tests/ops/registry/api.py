"""The public API's entries: every PyTorch-named callable of tensorgrad (``tg.<name>``,
``Tensor.<name>`` and its in-place ``<name>_``, ``tg.nn.functional.<name>``) has an
:class:`ApiInfo` here, saying how to call it on tensors, or a reason in :data:`EXEMPT`.

``tests/ops/test_api_coverage.py`` fails, naming it, when a public name has neither (as
``test_registry.py`` does for ``Op`` subclasses), and ``tests/core/test_torch_fuzz.py`` draws
every :class:`ApiInfo` (a derandomized slice per name by default, every dtype, shape and
special value under ``-m slow``), so a name is compared with PyTorch the day it lands.

Each entry's ``call(lib, *tensors)`` is the very same code for ``lib = torch`` and
``lib = tensorgrad``. The tables below are by call shape: one tensor, two tensors, a tensor
and a number, a tensor and a dim, three tensors; the calls that need particular arguments
are written out in :data:`CUSTOM`. The gradients of the differentiable ones are checked
against NumPy by the op entries of this package (``ops`` names them where they exist).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import tensorgrad as tg
import tensorgrad.nn.functional as F

#: the namespaces and what their names are prefixed with
NAMESPACES = {"tg": tg, "Tensor": tg.Tensor, "F": F}


@dataclass(frozen=True)
class ApiInfo:
    """One public name and how the differential fuzz calls it.

    ``name`` is the qualified public name (``tg.where``), with a ``#variant`` suffix when
    one name has more than one entry. ``arity`` tensors are drawn (any dtype, any of the
    fuzz's shapes, contiguous or views) and passed to ``call(lib, *tensors)``. ``random``
    results are compared by dtype and shape only. ``dtypes`` narrows the drawn dtypes (for
    calls whose other dtypes only test the same refusal again); ``shapes`` the drawn shapes
    (for calls of a fixed rank: the convolutions and pools, whose entries draw a wrong rank
    too)."""

    name: str
    call: Callable[..., Any]
    arity: int = 1
    random: bool = False
    dtypes: tuple[str, ...] = ()
    shapes: tuple[tuple[int, ...], ...] = ()


def _target(qualified: str) -> Callable[..., Any]:
    """``lib.<name>``, ``x.<name>`` (on a clone, for an in-place form) or ``F.<name>``."""
    space, name = qualified.split("#")[0].split(".", 1)
    if space == "tg":
        return lambda lib, *args: getattr(lib, name)(*args)
    if space == "F" and name.endswith("_"):
        return lambda lib, x, *args: getattr(lib.nn.functional, name)(x.clone(), *args)
    if space == "F":
        return lambda lib, *args: getattr(lib.nn.functional, name)(*args)
    if name.endswith("_"):
        return lambda lib, x, *args: getattr(x.clone(), name)(*args)
    return lambda lib, x, *args: getattr(x, name)(*args)


def _with(qualified: str, *constants: Any, **keywords: Any) -> Callable[..., Any]:
    target = _target(qualified)
    return lambda lib, *tensors: target(lib, *tensors, *constants, **keywords)


def _names(text: str) -> list[str]:
    return text.split()


#: called with one tensor
ONE_TENSOR = _names("""
tg.abs tg.absolute tg.acos tg.acosh tg.all tg.amax tg.amin tg.aminmax tg.any tg.arccos
tg.arccosh tg.arcsin tg.arcsinh tg.arctan tg.arctanh tg.argmax tg.argmin tg.argsort
tg.argwhere tg.as_tensor tg.asin tg.asinh tg.atan tg.atanh tg.atleast_1d tg.atleast_2d
tg.atleast_3d tg.broadcast_tensors tg.ceil tg.clone tg.cos tg.cosh tg.count_nonzero
tg.deg2rad tg.diag tg.diag_embed tg.diagflat tg.diagonal tg.digamma tg.erf tg.erfc
tg.erfinv tg.exp tg.exp2 tg.expm1 tg.fix tg.flatten tg.fliplr tg.flipud tg.floor tg.frac
tg.i0 tg.is_floating_point tg.isfinite tg.isinf tg.isnan tg.isneginf tg.isposinf tg.isreal
tg.lgamma tg.log tg.log10 tg.log1p tg.log2 tg.logical_not tg.logit tg.max tg.mean tg.median
tg.min tg.msort tg.nan_to_num tg.nanmean tg.nansum tg.neg tg.negative tg.nonzero tg.norm
tg.numel tg.ones_like tg.prod tg.rad2deg tg.ravel tg.reciprocal tg.relu tg.rot90 tg.round
tg.rsqrt tg.sgn tg.sigmoid tg.sign tg.signbit tg.sin tg.sinc tg.sinh tg.sort tg.sqrt
tg.square tg.squeeze tg.std tg.std_mean tg.sum tg.t tg.tan tg.tanh tg.tensor tg.trace
tg.tril tg.triu tg.trunc tg.unbind tg.unique tg.unique_consecutive tg.var tg.var_mean
tg.where tg.zeros_like
Tensor.abs Tensor.abs_ Tensor.absolute Tensor.acos Tensor.acos_ Tensor.acosh Tensor.acosh_
Tensor.all Tensor.amax Tensor.amin Tensor.aminmax Tensor.any Tensor.arccos Tensor.arccos_
Tensor.arccosh Tensor.arccosh_ Tensor.arcsin Tensor.arcsin_ Tensor.arcsinh Tensor.arcsinh_
Tensor.arctan Tensor.arctan_ Tensor.arctanh Tensor.arctanh_ Tensor.argmax Tensor.argmin
Tensor.argsort Tensor.argwhere Tensor.asin Tensor.asin_ Tensor.asinh Tensor.asinh_
Tensor.atan Tensor.atan_ Tensor.atanh Tensor.atanh_ Tensor.bool Tensor.byte Tensor.ceil
Tensor.clone Tensor.contiguous Tensor.cos Tensor.cosh Tensor.cosh_ Tensor.count_nonzero
Tensor.deg2rad Tensor.deg2rad_ Tensor.detach Tensor.diag Tensor.diag_embed Tensor.diagflat
Tensor.diagonal Tensor.digamma Tensor.digamma_ Tensor.dim Tensor.double Tensor.element_size
Tensor.erf Tensor.erf_ Tensor.erfc Tensor.erfc_ Tensor.erfinv Tensor.erfinv_ Tensor.exp
Tensor.exp2 Tensor.exp2_ Tensor.exp_ Tensor.expm1 Tensor.fix Tensor.fix_ Tensor.flatten
Tensor.fliplr Tensor.flipud Tensor.float Tensor.floor Tensor.frac Tensor.frac_ Tensor.half
Tensor.i0 Tensor.i0_ Tensor.int Tensor.is_contiguous Tensor.is_floating_point
Tensor.isfinite Tensor.isinf Tensor.isnan Tensor.isneginf Tensor.isposinf Tensor.isreal
Tensor.lgamma Tensor.lgamma_ Tensor.log Tensor.log10 Tensor.log1p Tensor.log2 Tensor.log_
Tensor.logical_not Tensor.logit Tensor.logit_ Tensor.long Tensor.max Tensor.mean
Tensor.median Tensor.min Tensor.msort Tensor.nan_to_num Tensor.nan_to_num_ Tensor.nanmean
Tensor.nansum Tensor.ndimension Tensor.neg Tensor.neg_ Tensor.negative Tensor.nelement
Tensor.nonzero Tensor.norm Tensor.numel Tensor.prod Tensor.rad2deg Tensor.rad2deg_
Tensor.ravel Tensor.reciprocal Tensor.relu Tensor.relu_ Tensor.rot90 Tensor.round
Tensor.rsqrt Tensor.sgn Tensor.sgn_ Tensor.short Tensor.sigmoid Tensor.sigmoid_ Tensor.sign
Tensor.signbit Tensor.sin Tensor.sinc Tensor.sinc_ Tensor.sinh Tensor.sinh_ Tensor.sort
Tensor.sqrt Tensor.sqrt_ Tensor.square Tensor.squeeze Tensor.std Tensor.sum Tensor.t
Tensor.tan Tensor.tanh Tensor.tanh_ Tensor.trace Tensor.tril Tensor.triu Tensor.trunc
Tensor.unbind Tensor.unique Tensor.unique_consecutive Tensor.var Tensor.zero_
F.celu F.elu F.gelu F.hardshrink F.hardsigmoid F.hardswish F.hardtanh F.hardtanh_
F.leaky_relu F.logsigmoid F.mish F.normalize F.relu F.relu6 F.selu F.sigmoid F.silu
F.softplus F.softshrink F.softsign F.tanh F.tanhshrink
tg.positive tg.adjoint tg.is_nonzero tg.is_signed tg.is_complex tg.is_conj tg.is_neg tg.conj
tg.resolve_conj tg.resolve_neg tg.diff
Tensor.positive Tensor.adjoint Tensor.is_nonzero Tensor.is_signed Tensor.is_complex
Tensor.is_conj Tensor.is_neg Tensor.conj Tensor.resolve_conj Tensor.resolve_neg Tensor.diff
Tensor.absolute_ Tensor.negative_
F.relu_ F.elu_ F.leaky_relu_ F.selu_ F.celu_
Tensor.cos_ Tensor.sin_ Tensor.tan_ Tensor.floor_ Tensor.ceil_ Tensor.round_ Tensor.trunc_
Tensor.sign_ Tensor.square_ Tensor.rsqrt_ Tensor.reciprocal_ Tensor.expm1_ Tensor.log10_
Tensor.log1p_ Tensor.log2_ Tensor.tril_ Tensor.triu_ Tensor.logical_not_
""")

#: called with one tensor; random results (dtype and shape compared)
ONE_TENSOR_RANDOM = _names("""
tg.empty_like tg.normal tg.rand_like tg.randn_like Tensor.bernoulli_ Tensor.normal_
Tensor.uniform_ F.alpha_dropout F.dropout F.dropout1d F.dropout2d
""")

#: called with two tensors (broadcast, or each of its own shape)
TWO_TENSORS = _names("""
tg.add tg.allclose tg.arctan2 tg.atan2 tg.cdist tg.clamp tg.clamp_max tg.clamp_min tg.clip
tg.copysign tg.cross tg.div tg.divide tg.eq tg.equal tg.float_power tg.floor_divide tg.fmax
tg.fmin tg.fmod tg.ge tg.gt tg.heaviside tg.hypot tg.inner tg.isclose tg.kron tg.le
tg.logaddexp tg.logaddexp2 tg.logical_and tg.logical_or tg.logical_xor tg.lt tg.maximum
tg.minimum tg.mul tg.multiply tg.ne tg.nextafter tg.pow tg.remainder tg.result_type tg.sub
tg.subtract tg.tensordot tg.true_divide tg.xlogy tg.bitwise_and tg.bitwise_or tg.bitwise_xor
tg.bitwise_left_shift tg.bitwise_right_shift tg.dot tg.vdot tg.mm tg.mv tg.bmm tg.matmul
tg.outer tg.masked_select tg.take tg.bincount
Tensor.add Tensor.add_ Tensor.allclose Tensor.arctan2 Tensor.arctan2_ Tensor.atan2
Tensor.atan2_ Tensor.clamp Tensor.clamp_ Tensor.clamp_max Tensor.clamp_min Tensor.clip
Tensor.clip_ Tensor.copy_ Tensor.copysign Tensor.copysign_ Tensor.cross Tensor.div
Tensor.div_ Tensor.divide Tensor.eq Tensor.equal Tensor.expand_as Tensor.float_power
Tensor.float_power_ Tensor.floor_divide Tensor.floor_divide_ Tensor.fmax Tensor.fmin
Tensor.fmod Tensor.fmod_ Tensor.ge Tensor.gt Tensor.heaviside Tensor.heaviside_
Tensor.hypot Tensor.hypot_ Tensor.inner Tensor.isclose Tensor.kron Tensor.le
Tensor.logaddexp Tensor.logaddexp2 Tensor.logical_and Tensor.logical_or Tensor.logical_xor
Tensor.lt Tensor.maximum Tensor.minimum Tensor.mul Tensor.mul_ Tensor.multiply Tensor.ne
Tensor.new_tensor Tensor.nextafter Tensor.nextafter_ Tensor.pow Tensor.pow_
Tensor.remainder Tensor.remainder_ Tensor.reshape_as Tensor.sub Tensor.sub_
Tensor.subtract Tensor.true_divide Tensor.type_as Tensor.view_as Tensor.xlogy
Tensor.xlogy_ Tensor.bitwise_and Tensor.bitwise_and_ Tensor.bitwise_or Tensor.bitwise_or_
Tensor.bitwise_xor Tensor.bitwise_xor_ Tensor.bitwise_left_shift
Tensor.bitwise_left_shift_ Tensor.bitwise_right_shift Tensor.bitwise_right_shift_
Tensor.dot Tensor.vdot Tensor.mm Tensor.mv Tensor.bmm Tensor.matmul Tensor.outer
Tensor.masked_select Tensor.take Tensor.bincount
F.binary_cross_entropy_with_logits F.cosine_similarity F.cross_entropy F.huber_loss
F.kl_div F.l1_loss F.linear F.mse_loss F.pairwise_distance F.smooth_l1_loss
F.soft_margin_loss F.binary_cross_entropy F.nll_loss
tg.greater tg.greater_equal tg.less tg.less_equal tg.not_equal tg.ger tg.dist tg.is_same_size
tg.rsub tg.chain_matmul
Tensor.greater Tensor.greater_equal Tensor.less Tensor.less_equal Tensor.not_equal Tensor.ger
Tensor.dist Tensor.is_same_size Tensor.multiply_ Tensor.divide_ Tensor.true_divide_
Tensor.subtract_ Tensor.clamp_min_ Tensor.clamp_max_ Tensor.logical_and_
Tensor.logical_or_ Tensor.logical_xor_ Tensor.eq_ Tensor.ne_ Tensor.lt_ Tensor.le_ Tensor.gt_
Tensor.ge_ Tensor.greater_ Tensor.greater_equal_ Tensor.less_ Tensor.less_equal_
Tensor.not_equal_
F.prelu
""")

#: called with three tensors
THREE_TENSORS = _names("""
tg.lerp Tensor.lerp Tensor.lerp_ F.scaled_dot_product_attention tg.addmm tg.addmv
tg.baddbmm Tensor.addmm Tensor.addmm_ Tensor.addmv Tensor.addmv_ Tensor.baddbmm
Tensor.baddbmm_ tg.addcmul tg.addcdiv Tensor.addcmul Tensor.addcdiv Tensor.addcmul_
Tensor.addcdiv_ tg.chain_matmul#three
""")

#: called with one tensor and the number 2 (a count, a size, an exponent, a shift)
WITH_TWO = _names("""
tg.full_like tg.kthvalue tg.repeat_interleave tg.roll tg.tensor_split tg.topk tg.unsqueeze
Tensor.fill_ Tensor.kthvalue Tensor.new_ones Tensor.new_zeros Tensor.polygamma
Tensor.repeat_interleave Tensor.roll Tensor.tensor_split Tensor.tile Tensor.topk
Tensor.unsqueeze F.avg_pool1d F.max_pool1d Tensor.repeat Tensor.reshape Tensor.view
Tensor.expand Tensor.broadcast_to Tensor.new_full tg.polygamma_of_x
""")

#: called with one tensor and dim 0
WITH_DIM = _names("""
tg.cummax tg.cummin tg.cumprod tg.cumsum tg.log_softmax tg.logcumsumexp tg.logsumexp
tg.softmax Tensor.cummax Tensor.cummin Tensor.cumprod Tensor.cumprod_ Tensor.cumsum
Tensor.flip Tensor.log_softmax Tensor.logcumsumexp Tensor.logsumexp Tensor.softmax F.glu
F.log_softmax F.softmax F.softmin
""")
WITH_TWO.remove("tg.polygamma_of_x")

#: shapes of rank 3 and 4 (and the rank errors of a 2-D and an empty one)
IMAGES = ((1, 2, 3, 3), (2, 1, 4, 2), (1, 4, 2, 2), (2, 3, 3), (1, 1, 1, 1), (1, 0, 2, 2), (2, 3))
SEQUENCES = ((1, 2, 5), (2, 1, 3), (2, 4), (1, 0, 3), (2, 3, 4, 1))


def _images(name: str, call: Callable[..., Any], arity: int = 1) -> ApiInfo:
    return ApiInfo(name, call, arity=arity, shapes=IMAGES)


def _sequences(name: str, call: Callable[..., Any], arity: int = 1) -> ApiInfo:
    return ApiInfo(name, call, arity=arity, shapes=SEQUENCES)


#: the calls that need their own arguments
CUSTOM: list[ApiInfo] = [
    ApiInfo("tg.flip", lambda lib, x: lib.flip(x, (0,))),
    ApiInfo("tg.tile", lambda lib, x: lib.tile(x, (2,))),
    ApiInfo("tg.polygamma", lambda lib, x: lib.polygamma(1, x)),
    ApiInfo("Tensor.polygamma_", lambda lib, x: x.clone().polygamma_(1)),
    ApiInfo("Tensor.cumsum_", lambda lib, x: x.clone().cumsum_(0)),
    ApiInfo("Tensor.bernoulli", lambda lib, x: x.bernoulli(), random=True),
    ApiInfo("tg.bernoulli", lambda lib, x: lib.bernoulli(x), random=True),
    ApiInfo("Tensor.new_empty", lambda lib, x: x.new_empty(2), random=True),
    ApiInfo("tg.multinomial", lambda lib, x: lib.multinomial(x.abs(), 1), random=True),
    ApiInfo("Tensor.multinomial", lambda lib, x: x.abs().multinomial(1), random=True),
    ApiInfo("Tensor.item", lambda lib, x: x.item()),
    ApiInfo("tg.bitwise_not", lambda lib, x: lib.bitwise_not(x)),
    ApiInfo("Tensor.bitwise_not", lambda lib, x: x.bitwise_not()),
    ApiInfo("Tensor.bitwise_not_", lambda lib, x: x.clone().bitwise_not_()),
    ApiInfo("tg.where#three", lambda lib, c, x, y: lib.where(c > 0, x, y), arity=3),
    ApiInfo("Tensor.where", lambda lib, x, y: x.where(x > 0, y), arity=2),
    ApiInfo("tg.masked_fill", lambda lib, x: lib.masked_fill(x, x > 0, 2)),
    ApiInfo("Tensor.masked_fill", lambda lib, x: x.masked_fill(x > 0, 2)),
    ApiInfo("Tensor.masked_fill_", lambda lib, x: x.clone().masked_fill_(x > 0, 2)),
    ApiInfo("tg.masked_scatter", lambda lib, x, y: lib.masked_scatter(x, x > 0, y), arity=2),
    ApiInfo("Tensor.masked_scatter", lambda lib, x, y: x.masked_scatter(x > 0, y), arity=2),
    ApiInfo(
        "Tensor.masked_scatter_",
        lambda lib, x, y: x.clone().masked_scatter_(x > 0, y),
        arity=2,
    ),
    ApiInfo("tg.narrow", lambda lib, x: lib.narrow(x, 0, 0, 1)),
    ApiInfo("Tensor.narrow", lambda lib, x: x.narrow(-1, 1, 1)),
    ApiInfo("tg.movedim", lambda lib, x: lib.movedim(x, 0, -1)),
    ApiInfo("Tensor.movedim", lambda lib, x: x.movedim(-1, 0)),
    ApiInfo("tg.moveaxis", lambda lib, x: lib.moveaxis(x, 0, -1)),
    ApiInfo("Tensor.moveaxis", lambda lib, x: x.moveaxis(-1, 0)),
    ApiInfo("tg.swapaxes", lambda lib, x: lib.swapaxes(x, 0, -1)),
    ApiInfo("Tensor.swapaxes", lambda lib, x: x.swapaxes(0, -1)),
    ApiInfo("tg.swapdims", lambda lib, x: lib.swapdims(x, 0, -1)),
    ApiInfo("Tensor.swapdims", lambda lib, x: x.swapdims(-1, 0)),
    ApiInfo("tg.transpose", lambda lib, x: lib.transpose(x, 0, -1)),
    ApiInfo("Tensor.transpose", lambda lib, x: x.transpose(-1, 0)),
    ApiInfo("tg.permute", lambda lib, x: lib.permute(x, tuple(range(x.dim()))[::-1])),
    ApiInfo("Tensor.permute", lambda lib, x: x.permute(*range(x.dim() - 1, -1, -1))),
    ApiInfo("tg.reshape", lambda lib, x: lib.reshape(x, (-1,))),
    ApiInfo("tg.unflatten", lambda lib, x: lib.unflatten(x, 0, (1, -1))),
    ApiInfo("Tensor.unflatten", lambda lib, x: x.unflatten(-1, (-1, 1))),
    ApiInfo("tg.take_along_dim", lambda lib, x: lib.take_along_dim(x, x.argsort(), -1)),
    ApiInfo("Tensor.take_along_dim", lambda lib, x: x.take_along_dim(x.argsort(0), 0)),
    ApiInfo("tg.gather", lambda lib, x: lib.gather(x, -1, x.argsort(-1))),
    ApiInfo("Tensor.gather", lambda lib, x: x.gather(0, x.argsort(0))),
    ApiInfo("tg.index_select", lambda lib, x: lib.index_select(x, 0, lib.tensor([0, 0]))),
    ApiInfo("Tensor.index_select", lambda lib, x: x.index_select(-1, lib.tensor([-1]))),
    ApiInfo("tg.index_add", lambda lib, x, y: lib.index_add(x, 0, lib.tensor([0]), y), arity=2),
    ApiInfo("Tensor.index_add", lambda lib, x, y: x.index_add(0, lib.tensor([0]), y), arity=2),
    ApiInfo(
        "Tensor.index_add_",
        lambda lib, x, y: x.clone().index_add_(0, lib.tensor([0]), y),
        arity=2,
    ),
    ApiInfo("tg.index_copy", lambda lib, x, y: lib.index_copy(x, 0, lib.tensor([0]), y), arity=2),
    ApiInfo("Tensor.index_copy", lambda lib, x, y: x.index_copy(0, lib.tensor([0]), y), arity=2),
    ApiInfo(
        "Tensor.index_copy_",
        lambda lib, x, y: x.clone().index_copy_(0, lib.tensor([0]), y),
        arity=2,
    ),
    ApiInfo("tg.index_fill", lambda lib, x: lib.index_fill(x, 0, lib.tensor([0]), 2.0)),
    ApiInfo("Tensor.index_fill", lambda lib, x: x.index_fill(-1, lib.tensor([0]), -1)),
    ApiInfo("Tensor.index_fill_", lambda lib, x: x.clone().index_fill_(0, lib.tensor([0]), 2)),
    ApiInfo("tg.index_put", lambda lib, x, y: lib.index_put(x, (lib.tensor([0]),), y), arity=2),
    ApiInfo("Tensor.index_put", lambda lib, x, y: x.index_put((lib.tensor([0]),), y), arity=2),
    ApiInfo(
        "Tensor.index_put_",
        lambda lib, x, y: x.clone().index_put_((lib.tensor([0]),), y, accumulate=True),
        arity=2,
    ),
    ApiInfo("tg.scatter", lambda lib, x, y: lib.scatter(x, 0, y.argsort(0), y), arity=2),
    ApiInfo("Tensor.scatter", lambda lib, x, y: x.scatter(0, y.argsort(0), y), arity=2),
    ApiInfo("Tensor.scatter_", lambda lib, x, y: x.clone().scatter_(0, y.argsort(0), 2.5), arity=2),
    ApiInfo("tg.scatter_add", lambda lib, x, y: lib.scatter_add(x, 0, y.argsort(0), y), arity=2),
    ApiInfo("Tensor.scatter_add", lambda lib, x, y: x.scatter_add(0, y.argsort(0), y), arity=2),
    ApiInfo(
        "Tensor.scatter_add_", lambda lib, x, y: x.clone().scatter_add_(0, y.argsort(0), y), arity=2
    ),
    ApiInfo(
        "tg.scatter_reduce",
        lambda lib, x, y: lib.scatter_reduce(x, 0, y.argsort(0), y, "amax"),
        arity=2,
    ),
    ApiInfo(
        "Tensor.scatter_reduce",
        lambda lib, x, y: x.scatter_reduce(0, y.argsort(0), y, "mean", include_self=False),
        arity=2,
    ),
    ApiInfo(
        "Tensor.scatter_reduce_",
        lambda lib, x, y: x.clone().scatter_reduce_(0, y.argsort(0), y, "prod"),
        arity=2,
    ),
    ApiInfo("tg.cat", lambda lib, x, y: lib.cat([x, y], -1), arity=2),
    ApiInfo("tg.concat", lambda lib, x, y: lib.concat((x, y)), arity=2),
    ApiInfo("tg.concatenate", lambda lib, x, y: lib.concatenate([x, y], 0), arity=2),
    ApiInfo("tg.stack", lambda lib, x, y: lib.stack([x, y], -1), arity=2),
    ApiInfo("tg.hstack", lambda lib, x, y: lib.hstack([x, y]), arity=2),
    ApiInfo("tg.vstack", lambda lib, x, y: lib.vstack([x, y]), arity=2),
    ApiInfo("tg.row_stack", lambda lib, x, y: lib.row_stack([x, y]), arity=2),
    ApiInfo("tg.dstack", lambda lib, x, y: lib.dstack([x, y]), arity=2),
    ApiInfo("tg.column_stack", lambda lib, x, y: lib.column_stack([x, y]), arity=2),
    ApiInfo("tg.meshgrid", lambda lib, x, y: lib.meshgrid(x, y, indexing="ij"), arity=2),
    ApiInfo("tg.einsum", lambda lib, x, y: lib.einsum("...i,...i->...", x, y), arity=2),
    ApiInfo("tg.split", lambda lib, x: lib.split(x, 1)),
    ApiInfo("Tensor.split", lambda lib, x: x.split([1, 1], -1)),
    ApiInfo("tg.chunk", lambda lib, x: lib.chunk(x, 2)),
    ApiInfo("Tensor.chunk", lambda lib, x: x.chunk(2, -1)),
    ApiInfo("Tensor.to", lambda lib, x: x.to(lib.float64)),
    ApiInfo("Tensor.type", lambda lib, x: x.type(lib.int32)),
    ApiInfo("Tensor.tolist", lambda lib, x: x.tolist()),
    ApiInfo("Tensor.numpy", lambda lib, x: lib.tensor(x.detach().numpy())),
    ApiInfo("Tensor.cpu", lambda lib, x: x.cpu()),
    ApiInfo("Tensor.requires_grad_", lambda lib, x: x.detach().requires_grad_(False)),
    ApiInfo("Tensor.detach_", lambda lib, x: x.detach().detach_()),
    ApiInfo("tg.is_tensor", lambda lib, x: lib.is_tensor(x)),
    ApiInfo("F.threshold", lambda lib, x: lib.nn.functional.threshold(x, 0.5, -1.0)),
    ApiInfo("F.threshold_", lambda lib, x: lib.nn.functional.threshold_(x.clone(), 0.5, 2.0)),
    ApiInfo("F.one_hot", lambda lib, x: lib.nn.functional.one_hot(x.abs(), 5)),
    ApiInfo("F.pad", lambda lib, x: lib.nn.functional.pad(x, (1, 2))),
    ApiInfo("F.layer_norm", lambda lib, x: lib.nn.functional.layer_norm(x, x.shape[-1:])),
    ApiInfo("F.rms_norm", lambda lib, x: lib.nn.functional.rms_norm(x, x.shape[-1:])),
    _images("F.group_norm", lambda lib, x: lib.nn.functional.group_norm(x, 1)),
    _images("F.instance_norm", lambda lib, x: lib.nn.functional.instance_norm(x)),
    _images(
        "F.batch_norm",
        lambda lib, x: lib.nn.functional.batch_norm(x, None, None, training=True),
    ),
    _images("F.local_response_norm", lambda lib, x: lib.nn.functional.local_response_norm(x, 2)),
    _images("F.avg_pool2d", lambda lib, x: lib.nn.functional.avg_pool2d(x, 1)),
    _images("F.max_pool2d", lambda lib, x: lib.nn.functional.max_pool2d(x, (1, 2))),
    _sequences("F.lp_pool1d", lambda lib, x: lib.nn.functional.lp_pool1d(x, 2, 1)),
    _images("F.lp_pool2d", lambda lib, x: lib.nn.functional.lp_pool2d(x, 2, 1)),
    _images("F.adaptive_avg_pool2d", lambda lib, x: lib.nn.functional.adaptive_avg_pool2d(x, 1)),
    _images("F.adaptive_max_pool2d", lambda lib, x: lib.nn.functional.adaptive_max_pool2d(x, 1)),
    _images("F.interpolate", lambda lib, x: lib.nn.functional.interpolate(x, scale_factor=2.0)),
    _images("F.upsample", lambda lib, x: lib.nn.functional.upsample(x, scale_factor=2)),
    ApiInfo("F.embedding", lambda lib, x, w: lib.nn.functional.embedding(x.abs(), w), arity=2),
    _sequences("F.conv1d", lambda lib, x, w: lib.nn.functional.conv1d(x, w[..., :1]), arity=2),
    _images("F.conv2d", lambda lib, x, w: lib.nn.functional.conv2d(x, w[..., :1, :1]), arity=2),
    _sequences(
        "F.conv_transpose1d",
        lambda lib, x, w: lib.nn.functional.conv_transpose1d(x, w[..., :2]),
        arity=2,
    ),
    _images(
        "F.conv_transpose2d",
        lambda lib, x, w: lib.nn.functional.conv_transpose2d(x, w[..., :2, :2]),
        arity=2,
    ),
    _images("F.unfold", lambda lib, x: lib.nn.functional.unfold(x, 1)),
    ApiInfo("tg.select", lambda lib, x: lib.select(x, 0, -1)),
    ApiInfo("Tensor.select", lambda lib, x: x.select(-1, 1)),
    ApiInfo("Tensor.sum_to_size", lambda lib, x: x.sum_to_size(*x.shape[1:])),
    ApiInfo("Tensor.sum_to_size#ones", lambda lib, x: x.sum_to_size([1] * x.dim())),
    ApiInfo("F.pixel_shuffle", lambda lib, x: lib.nn.functional.pixel_shuffle(x, 1)),
    ApiInfo(
        "F.pixel_shuffle#2",
        lambda lib, x: lib.nn.functional.pixel_shuffle(x.reshape(1, 4, -1, 1), 2),
    ),
    ApiInfo("F.pixel_unshuffle", lambda lib, x: lib.nn.functional.pixel_unshuffle(x, 1)),
    _sequences("F.fold", lambda lib, x: lib.nn.functional.fold(x, (1, 1), 1)),
]

#: public names with no fuzz entry, and why
EXEMPT: dict[str, str] = {}


def _exempt(reason: str, names: str) -> None:
    for name in names.split():
        EXEMPT[name] = reason


_exempt(
    "creation from sizes and numbers, no tensor to draw: the creation family of "
    "test_torch_fuzz.py and tests/core/test_creation.py",
    "tg.arange tg.linspace tg.logspace tg.zeros tg.ones tg.full tg.empty tg.eye "
    "tg.tril_indices tg.triu_indices tg.scalar_tensor",
)
_exempt(
    "random creation from sizes (nothing to compare but the shape): tests/core/"
    "test_sampling.py and test_rng_state.py",
    "tg.rand tg.randn tg.randint tg.randperm",
)
_exempt(
    "dtype and shape arithmetic, no tensors: tests/core/test_product_dtypes.py and "
    "test_pytorch_rules.py",
    "tg.promote_types tg.can_cast tg.broadcast_shapes tg.finfo tg.iinfo",
)
_exempt(
    "global state (seeds, threads, default dtype, grad mode): tests/test_rng_state.py, "
    "tests/_native and tests/test_grad_mode.py",
    "tg.manual_seed tg.get_rng_state tg.set_rng_state tg.get_num_threads tg.set_num_threads "
    "tg.get_default_dtype tg.set_default_dtype tg.is_grad_enabled",
)
_exempt(
    "files and foreign arrays: tests/test_serialization.py and tests/test_dlpack.py",
    "tg.save tg.load tg.from_numpy tg.from_dlpack",
)
_exempt(
    "autograd entry points, not ops: tests/autograd (backward, grad, gradcheck, Function)",
    "tg.backward tg.grad tg.gradcheck tg.gradgradcheck tg.apply Tensor.backward "
    "Tensor.register_hook Tensor.register_post_accumulate_grad_hook Tensor.retain_grad",
)
_exempt(
    "a context manager and decorator: tests/compat/test_amp.py (torch.autocast on the CPU)",
    "tg.autocast",
)
_exempt(
    "tensorgrad's own helpers, no PyTorch counterpart: the decorator accepting NumPy's "
    "keyword spellings, and the engine's operand conversion (tests/core/test_tensor.py)",
    "tg.numpy_names tg.operand",
)
_exempt(
    "tensorgrad extras without a torch.<name> counterpart (PyTorch has them under "
    "torch.nn.functional, which the F entries fuzz)",
    "tg.gelu tg.leaky_relu Tensor.gelu Tensor.leaky_relu",
)
_exempt(
    "NumPy's spelling of Tensor.to (tensorgrad only): tests/core/test_more_names_numpy.py",
    "Tensor.astype",
)
_exempt(
    "the CUDA device: refused on tensorgrad's CPU-only build (tests/test_pytorch_compat.py)",
    "Tensor.cuda",
)


def api_entries() -> dict[str, ApiInfo]:
    """Every :class:`ApiInfo`, by its qualified name."""
    entries: dict[str, ApiInfo] = {}

    def add(info: ApiInfo) -> None:
        assert info.name not in entries, info.name
        entries[info.name] = info

    for name in ONE_TENSOR:
        add(ApiInfo(name, _target(name)))
    for name in ONE_TENSOR_RANDOM:
        add(ApiInfo(name, _target(name), random=True))
    for name in TWO_TENSORS:
        add(ApiInfo(name, _target(name), arity=2))
    for name in THREE_TENSORS:
        add(ApiInfo(name, _target(name), arity=3))
    for name in WITH_TWO:
        add(ApiInfo(name, _with(name, 2)))
    for name in WITH_DIM:
        add(ApiInfo(name, _with(name, 0)))
    for info in CUSTOM:
        add(info)
    return entries


API: dict[str, ApiInfo] = api_entries()


def public_names() -> set[str]:
    """The qualified names of tensorgrad's public callables: ``tg.<name>`` functions,
    ``Tensor`` methods and ``F.<name>`` functions (classes, modules and the names of
    PyTorch features tensorgrad refuses are not callables of its own)."""
    names = set()
    for space, owner in NAMESPACES.items():
        for name in dir(owner):
            if name.startswith("_"):
                continue
            try:
                value = getattr(owner, name)
            except Exception:  # a PyTorch feature tensorgrad names only to refuse
                continue
            if inspect.isclass(value) or inspect.ismodule(value) or not callable(value):
                continue
            names.add(f"{space}.{name}")
    return names


def covered() -> set[str]:
    """The public names that have an entry (its variants count for it) or a reason."""
    return {name.split("#")[0] for name in API} | set(EXEMPT)


def uncovered(names: set[str]) -> list[str]:
    """The names with neither an entry nor a reason."""
    return sorted(names - covered())
