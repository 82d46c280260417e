"""``Embedding``: a table of vectors looked up by integer index, as PyTorch's
``torch.nn.Embedding`` (its weight, initialisation, ``padding_idx`` and state dict)."""

from __future__ import annotations

from typing import Any

from tensorgrad import array_backend
from tensorgrad.core.tensor import Tensor
from tensorgrad.grad_mode import no_grad
from tensorgrad.nn import functional as F
from tensorgrad.nn import init
from tensorgrad.nn.modules.module import Module
from tensorgrad.nn.parameter import Parameter


class Embedding(Module):
    """``weight[input]`` for a weight of (num_embeddings, embedding_dim), drawn from N(0, 1)
    as in PyTorch; the row at ``padding_idx`` starts at zeros and gets no gradient."""

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
        _weight: Any = None,
        _freeze: bool = False,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        if device is not None:
            array_backend.as_device(device)
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx %= num_embeddings
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx, self.max_norm, self.norm_type = padding_idx, max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        dtype = array_backend.as_dtype(dtype) or array_backend.DEFAULT_FLOAT
        if _weight is None:
            self.weight = Parameter(array_backend.zeros((num_embeddings, embedding_dim), dtype))
            self.reset_parameters()
        else:
            values = (
                _weight._data if isinstance(_weight, Tensor) else array_backend.as_array(_weight)
            )
            if values.shape != (num_embeddings, embedding_dim):
                raise AssertionError(
                    "Shape of weight does not match num_embeddings and embedding_dim"
                )
            self.weight = Parameter(values.copy())
        self.weight.requires_grad_(not _freeze)

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx] = 0

    def forward(self, input: Any) -> Tensor:
        return F.embedding(
            input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
            self.scale_grad_by_freq, self.sparse,
        )  # fmt: skip

    @classmethod
    def from_pretrained(
        cls,
        embeddings: Any,
        freeze: bool = True,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
    ) -> Embedding:
        """An ``Embedding`` whose weight is a copy of the 2-D ``embeddings``; frozen (no
        gradient) unless ``freeze=False``."""
        shape = tuple(embeddings.shape)
        if len(shape) != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        return cls(
            shape[0], shape[1], padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse,
            _weight=embeddings, _freeze=freeze,
        )  # fmt: skip

    def extra_repr(self) -> str:
        text = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            text += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            text += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            text += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq:
            text += ", scale_grad_by_freq=True"
        if self.sparse:
            text += ", sparse=True"
        return text
