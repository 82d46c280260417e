"""``torch.autograd.Variable``, PyTorch's deprecated wrapper, as PyTorch keeps it: since
PyTorch 0.4 a Variable *is* a tensor, and old programs (PyTorch-GAN's, many tutorials) still
write ``Variable(x.type(Tensor))`` and ``Variable(Tensor(n, 1).fill_(1.0),
requires_grad=False)``.

``Variable(data, requires_grad=False)`` returns ``data`` detached (the same memory, no
history) with ``requires_grad`` set; ``Variable()`` is an empty float tensor;
``isinstance(t, Variable)`` holds for every tensor. ``volatile=True`` warns that it does
nothing, as in PyTorch (use ``no_grad``).
"""

from __future__ import annotations

import warnings
from typing import Any

from tensorgrad.core.creation import tensor
from tensorgrad.core.tensor import Tensor

__all__ = ["Variable"]


class _VariableMeta(type):
    def __instancecheck__(cls, other: Any) -> bool:
        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """See the module's docstring."""

    def __new__(  # type: ignore[misc]
        cls, data: Any = None, requires_grad: bool = False, volatile: bool = False
    ) -> Any:
        if volatile:
            warnings.warn(
                "volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                UserWarning,
                stacklevel=2,
            )
        if data is None:
            data = tensor([])
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        result = data.detach()
        if requires_grad:
            result.requires_grad_(True)
        return result
