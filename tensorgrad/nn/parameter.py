"""``Parameter``: a tensor that a ``Module`` registers as trainable when assigned to it."""

from __future__ import annotations

from typing import Any

from tensorgrad.core.tensor import Tensor


class Parameter(Tensor):
    """A leaf tensor that requires grad by default and that modules list in ``parameters()``.

    Made from an array or a Tensor, it shares that memory, as PyTorch's ``Parameter`` does.
    Results of operations on parameters are plain Tensors.
    """

    __slots__ = ()

    def __init__(self, data: Any, requires_grad: bool = True) -> None:
        super().__init__(data, requires_grad=requires_grad)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()
