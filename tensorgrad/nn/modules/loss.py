"""Loss modules, the module forms of ``nn.functional``'s losses."""

from __future__ import annotations

from typing import Any

from tensorgrad.core.tensor import Tensor
from tensorgrad.nn import functional as F
from tensorgrad.nn.functional.loss import _legacy
from tensorgrad.nn.modules.module import Module


class _Loss(Module):
    def __init__(self, size_average: Any = None, reduce: Any = None, reduction: str = "mean"):
        super().__init__()
        self.reduction = _legacy(size_average, reduce, reduction)

    def extra_repr(self) -> str:
        return ""


class CrossEntropyLoss(_Loss):
    """Softmax cross-entropy of logits against class indices (``F.cross_entropy``)."""

    def __init__(
        self,
        weight: Tensor | None = None,
        size_average: Any = None,
        ignore_index: int = -100,
        reduce: Any = None,
        reduction: str = "mean",
        label_smoothing: float = 0.0,
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.weight, self.ignore_index, self.label_smoothing = weight, ignore_index, label_smoothing

    def forward(self, input: Tensor, target: Any) -> Tensor:
        return F.cross_entropy(
            input,
            target,
            weight=self.weight,
            ignore_index=self.ignore_index,
            reduction=self.reduction,
            label_smoothing=self.label_smoothing,
        )


class NLLLoss(_Loss):
    """Negative log-likelihood of class indices (``F.nll_loss``)."""

    def __init__(
        self,
        weight: Tensor | None = None,
        size_average: Any = None,
        ignore_index: int = -100,
        reduce: Any = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.weight, self.ignore_index = weight, ignore_index

    def forward(self, input: Tensor, target: Any) -> Tensor:
        return F.nll_loss(
            input, target, weight=self.weight, ignore_index=self.ignore_index,
            reduction=self.reduction,
        )  # fmt: skip


class MSELoss(_Loss):
    """Mean squared error (``F.mse_loss``)."""

    def forward(self, input: Tensor, target: Any) -> Tensor:
        return F.mse_loss(input, target, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Sigmoid and binary cross-entropy in one stable op
    (``F.binary_cross_entropy_with_logits``)."""

    def __init__(
        self,
        weight: Tensor | None = None,
        size_average: Any = None,
        reduce: Any = None,
        reduction: str = "mean",
        pos_weight: Tensor | None = None,
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.weight, self.pos_weight = weight, pos_weight

    def forward(self, input: Tensor, target: Any) -> Tensor:
        return F.binary_cross_entropy_with_logits(
            input, target, weight=self.weight, reduction=self.reduction,
            pos_weight=self.pos_weight,
        )  # fmt: skip
