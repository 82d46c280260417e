"""``Dropout``."""

from __future__ import annotations

from tensorgrad.core.tensor import Tensor
from tensorgrad.nn import functional as F
from tensorgrad.nn.modules.module import Module


class Dropout(Module):
    """Inverted dropout: zeroes elements with probability ``p`` while training and scales the
    rest by 1/(1−p); the identity in eval mode. Masks come from the global generator."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout2d(Module):
    """Zeroes whole channels with probability ``p`` while training, scaling the rest by
    1/(1 − p); the identity in eval mode. Masks come from the global generator."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout2d: probability p must be in [0, 1], got {p}")
        if inplace:
            raise NotImplementedError(
                "Dropout2d: inplace=True is not supported in tensorgrad; use the returned tensor"
            )
        self.p, self.inplace = p, inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.dropout2d(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


# --------------------------------------------------------------------------- more dropout
# (channel dropout of 1-D input, alpha dropout)
class Dropout1d(Module):
    """Zeroes whole channels of (N, C, L) or (C, L) input with probability ``p`` while
    training, scaling the rest by 1/(1 − p); the identity in eval mode."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout1d(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class AlphaDropout(Dropout1d):
    """Dropout for SELU networks: keeps zero mean and unit variance (``F.alpha_dropout``)."""

    def forward(self, input: Tensor) -> Tensor:
        return F.alpha_dropout(input, self.p, self.training, self.inplace)
