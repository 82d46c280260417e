"""Activation layers: ``ReLU``, ``Tanh``, ``Softplus``, ``ELU``, ``SiLU``, ``Softmax`` and
friends; and ``MultiheadAttention``, which PyTorch keeps here too."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tensorgrad import array_backend
from tensorgrad.core.engine import as_tensor
from tensorgrad.core.functions import cat
from tensorgrad.core.tensor import Tensor
from tensorgrad.nn import functional as F
from tensorgrad.nn import init
from tensorgrad.nn.modules.linear import NonDynamicallyQuantizableLinear
from tensorgrad.nn.modules.module import Module
from tensorgrad.nn.parameter import Parameter


class ReLU(Module):
    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.relu(input, self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class LeakyReLU(Module):
    def __init__(self, negative_slope: float = 0.01, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class Softplus(Module):
    """``log(1 + exp(βx)) / β``, linear where ``βx > threshold`` (``F.softplus``)."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input: Tensor) -> Tensor:
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class ELU(Module):
    """``x`` for ``x > 0``, else ``α(exp(x) − 1)`` (``F.elu``)."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class SiLU(Module):
    """``x · σ(x)`` (``F.silu``)."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.silu(input, self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class Tanh(Module):
    def forward(self, input: Tensor) -> Tensor:
        return F.tanh(input)


class Sigmoid(Module):
    def forward(self, input: Tensor) -> Tensor:
        return F.sigmoid(input)


class GELU(Module):
    """GELU, exact (``approximate='none'``) or with the tanh approximation."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise RuntimeError(
                f"GELU: approximate argument must be either none or tanh, got {approximate!r}"
            )
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return F.gelu(input, self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Softmax(Module):
    """Softmax over ``dim`` (the last dimension when None)."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.softmax(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    """Log-softmax over ``dim``, computed stably (shifted by the maximum)."""

    def forward(self, input: Tensor) -> Tensor:
        return F.log_softmax(input, self.dim)


def _float_mask(mask: Any, dtype: np.dtype, what: str) -> Tensor | None:
    """A mask as an additive float tensor: a boolean one (True: may *not* attend, as in
    ``MultiheadAttention``) becomes −inf there and 0 elsewhere; a float one is kept."""
    if mask is None:
        return None
    mask = as_tensor(mask)
    if mask.dtype == np.bool_:
        return Tensor(np.where(mask._data, -np.inf, 0.0).astype(dtype))
    if mask.dtype.kind != "f":
        raise AssertionError(f"only bool and floating types of {what} are supported")
    return mask if mask.dtype == dtype else mask.to(dtype)


class MultiheadAttention(Module):
    """Multi-head attention, PyTorch's ``nn.MultiheadAttention``: ``forward(query, key,
    value, key_padding_mask=None, need_weights=True, attn_mask=None,
    average_attn_weights=True, is_causal=False)`` returns ``(output, weights or None)``.

    Parameters as PyTorch's: ``in_proj_weight`` (3E, E) and ``in_proj_bias`` when keys and
    values have the query's size, else ``q_proj_weight``, ``k_proj_weight`` (E, kdim) and
    ``v_proj_weight`` (E, vdim); ``out_proj`` a Linear; with ``add_bias_kv``, ``bias_k`` and
    ``bias_v`` (1, 1, E), a learnt key and value appended to every source (and with
    ``add_zero_attn`` a zero one after them), as PyTorch's. Without ``need_weights`` the
    attention is the one fused op of ``F.scaled_dot_product_attention``; with it, the
    weights are computed as PyTorch does (softmax, then dropout) and returned, averaged over
    the heads unless ``average_attn_weights=False``.
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        add_bias_kv: bool = False,
        add_zero_attn: bool = False,
        kdim: int | None = None,
        vdim: int | None = None,
        batch_first: bool = False,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(
                f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} "
                f"and num_heads={num_heads} instead"
            )
        if device is not None:
            array_backend.as_device(device)
        dtype = array_backend.as_dtype(dtype) or array_backend.DEFAULT_FLOAT
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads, self.dropout, self.batch_first = num_heads, dropout, batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(array_backend.zeros((3 * embed_dim, embed_dim), dtype))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        else:
            self.q_proj_weight = Parameter(array_backend.zeros((embed_dim, embed_dim), dtype))
            self.k_proj_weight = Parameter(array_backend.zeros((embed_dim, self.kdim), dtype))
            self.v_proj_weight = Parameter(array_backend.zeros((embed_dim, self.vdim), dtype))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(array_backend.zeros((3 * embed_dim,), dtype))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(
            embed_dim, embed_dim, bias=bias, dtype=dtype
        )
        if add_bias_kv:
            self.bias_k = Parameter(array_backend.zeros((1, 1, embed_dim), dtype))
            self.bias_v = Parameter(array_backend.zeros((1, 1, embed_dim), dtype))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def _project(self, query: Tensor, key: Tensor, value: Tensor) -> tuple:
        e, b = self.embed_dim, self.in_proj_bias
        bq, bk, bv = (None, None, None) if b is None else (b[:e], b[e : 2 * e], b[2 * e :])
        if self._qkv_same_embed_dim:
            w = self.in_proj_weight
            if query is key and key is value:  # self-attention: one product
                q, k, v = F.linear(query, w, b).chunk(3, -1)
                return q, k, v
            wq, wk, wv = w[:e], w[e : 2 * e], w[2 * e :]
        else:
            wq, wk, wv = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        return F.linear(query, wq, bq), F.linear(key, wk, bk), F.linear(value, wv, bv)

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        key_padding_mask: Tensor | None = None,
        need_weights: bool = True,
        attn_mask: Tensor | None = None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        query, key, value = as_tensor(query), as_tensor(key), as_tensor(value)
        batched = query.ndim == 3
        self._check_shapes(query, key, value, key_padding_mask, attn_mask, batched)
        if not batched:  # one sequence: a batch of one, in the middle (L, 1, E)
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
            if key_padding_mask is not None:
                key_padding_mask = as_tensor(key_padding_mask).unsqueeze(0)
        elif self.batch_first:
            same_kv = key is value
            same_qk = query is key
            query = query.transpose(0, 1)
            key = query if same_qk else key.transpose(0, 1)
            value = key if same_kv else value.transpose(0, 1)
        length, batch, embed = query.shape
        source = key.shape[0]
        heads, head_dim = self.num_heads, self.head_dim
        if is_causal and attn_mask is None:
            raise RuntimeError(
                "Need attn_mask if specifying the is_causal hint. You may use the Transformer "
                "module method `generate_square_subsequent_mask` to create this mask."
            )
        if is_causal and key_padding_mask is None and not need_weights:
            attn_mask = None  # the hint alone: the fused op's own causal mask
        else:
            is_causal = False
        mask = _float_mask(attn_mask, query.dtype, "attn_mask")
        if mask is not None:
            mask = (
                mask.reshape(1, 1, length, source)
                if mask.ndim == 2
                else mask.reshape(batch, heads, length, source)
            )
        padding = _float_mask(key_padding_mask, query.dtype, "key_padding_mask")
        if padding is not None:
            padding = padding.reshape(batch, 1, 1, source)
            mask = padding if mask is None else mask + padding
        q, k, v = self._project(query, key, value)
        # (L, N, E) -> (N, heads, L, head_dim)
        q = q.reshape(length, batch, heads, head_dim).permute(1, 2, 0, 3)
        k = k.reshape(source, batch, heads, head_dim).permute(1, 2, 0, 3)
        v = v.reshape(source, batch, heads, head_dim).permute(1, 2, 0, 3)
        k, v, mask = self._extra_keys(k, v, mask)
        dropout_p = self.dropout if self.training else 0.0
        weights = None
        if need_weights:
            scores = (q * math.sqrt(1.0 / head_dim)) @ k.transpose(-2, -1)
            if mask is not None:
                scores = scores + mask
            weights = F.softmax(scores, dim=-1)
            if dropout_p > 0.0:
                weights = F.dropout(weights, p=dropout_p)
            attended = weights @ v
        else:
            attended = F.scaled_dot_product_attention(
                q, k, v, mask, dropout_p=dropout_p, is_causal=is_causal
            )
        attended = attended.permute(2, 0, 1, 3).reshape(length, batch, embed)
        out = self.out_proj(attended)
        if weights is not None and average_attn_weights:
            weights = weights.mean(dim=1)
        if not batched:
            out = out.squeeze(1)
            weights = None if weights is None else weights.squeeze(0)
        elif self.batch_first:
            out = out.transpose(0, 1)
        return out, weights

    def _extra_keys(self, k: Tensor, v: Tensor, mask: Tensor | None) -> tuple:
        """PyTorch's ``add_bias_kv`` and ``add_zero_attn``: one more key and value after the
        source's, first the learnt ``bias_k``/``bias_v``, then zeros; every query may attend
        to them (the mask gains a 0 column for each)."""
        batch, heads, _, head_dim = k.shape
        extra_k, extra_v = [], []
        if self.bias_k is not None:
            extra_k.append(self.bias_k.reshape(1, heads, 1, head_dim).expand(batch, -1, -1, -1))
            extra_v.append(self.bias_v.reshape(1, heads, 1, head_dim).expand(batch, -1, -1, -1))
        if self.add_zero_attn:
            extra_k.append(k.new_zeros((batch, heads, 1, head_dim)))
            extra_v.append(v.new_zeros((batch, heads, 1, head_dim)))
        if not extra_k:
            return k, v, mask
        k, v = cat([k, *extra_k], 2), cat([v, *extra_v], 2)
        if mask is not None:
            mask = F.pad(mask, (0, len(extra_k)))
        return k, v, mask

    def _check_shapes(self, query, key, value, key_padding_mask, attn_mask, batched) -> None:
        q, k, v = tuple(query.shape), tuple(key.shape), tuple(value.shape)
        if query.ndim not in (2, 3):
            raise AssertionError(
                f"query should be unbatched 2D or batched 3D tensor but received {query.ndim}-D "
                f"query tensor (shape {q})"
            )
        if key.ndim != query.ndim or value.ndim != query.ndim:
            raise AssertionError(
                f"For {'batched (3-D)' if batched else 'unbatched (2-D)'} `query`, expected "
                f"`key` and `value` to be {query.ndim}-D but found {key.ndim}-D and "
                f"{value.ndim}-D tensors respectively (shapes {q}, {k}, {v})"
            )
        if q[-1] != self.embed_dim or k[-1] != self.kdim or v[-1] != self.vdim:
            raise AssertionError(
                f"MultiheadAttention: expected query, key and value of sizes "
                f"{self.embed_dim}, {self.kdim} and {self.vdim} in their last dimension, got "
                f"shapes {q}, {k} and {v}"
            )
        seq_axis = 1 if (batched and self.batch_first) else 0
        if k[:-1] != v[:-1]:
            raise AssertionError(f"key shape {k} does not match value shape {v}")
        if batched and q[1 - seq_axis] != k[1 - seq_axis]:
            raise AssertionError(
                f"MultiheadAttention: query {q} and key {k} have different batch sizes"
            )
        length, source = q[seq_axis], k[seq_axis]
        batch = q[1 - seq_axis] if batched else 1
        if key_padding_mask is not None:
            want = (batch, source) if batched else (source,)
            got = tuple(as_tensor(key_padding_mask).shape)
            if got != want:
                raise AssertionError(
                    f"expected key_padding_mask of shape {want} for key of shape {k}, got {got}"
                )
        if attn_mask is not None:
            shape = tuple(as_tensor(attn_mask).shape)
            if len(shape) == 2:
                if shape != (length, source):
                    raise RuntimeError(
                        f"The shape of the 2D attn_mask is {shape}, but should be "
                        f"{(length, source)}."
                    )
            elif len(shape) == 3:
                if shape != (batch * self.num_heads, length, source):
                    raise RuntimeError(
                        f"The shape of the 3D attn_mask is {shape}, but should be "
                        f"{(batch * self.num_heads, length, source)}."
                    )
            else:
                raise RuntimeError(f"attn_mask's dimension {len(shape)} is not supported")


# --------------------------------------------------------------------------- more activations
# the module forms of the other functions in nn.functional.activation
class Hardtanh(Module):
    """``x`` clamped into ``[min_val, max_val]`` (``F.hardtanh``)."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        if min_val > max_val:
            raise ValueError("min_val cannot be greater than max_val")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        suffix = ", inplace=True" if self.inplace else ""
        return f"min_val={self.min_val}, max_val={self.max_val}{suffix}"


class ReLU6(Hardtanh):
    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class _Inplace(Module):
    """An activation whose only option is ``inplace``."""

    function: Any = None

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return type(self).function(input, self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class Mish(_Inplace):
    function = staticmethod(F.mish)


class SELU(_Inplace):
    function = staticmethod(F.selu)


class Hardsigmoid(_Inplace):
    function = staticmethod(F.hardsigmoid)


class Hardswish(_Inplace):
    function = staticmethod(F.hardswish)


class _Plain(Module):
    """An activation without options."""

    function: Any = None

    def forward(self, input: Tensor) -> Tensor:
        return type(self).function(input)


class LogSigmoid(_Plain):
    function = staticmethod(F.logsigmoid)


class Softsign(_Plain):
    function = staticmethod(F.softsign)


class Tanhshrink(_Plain):
    function = staticmethod(F.tanhshrink)


class CELU(Module):
    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.celu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class GLU(Module):
    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Hardshrink(Module):
    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, input: Tensor) -> Tensor:
        return F.hardshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Softshrink(Hardshrink):
    def forward(self, input: Tensor) -> Tensor:
        return F.softshrink(input, self.lambd)


class Threshold(Module):
    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        suffix = ", inplace=True" if self.inplace else ""
        return f"threshold={self.threshold}, value={self.value}{suffix}"


class Softmin(Softmax):
    """``softmax(−x)`` over ``dim``."""

    def forward(self, input: Tensor) -> Tensor:
        return F.softmin(input, self.dim)
