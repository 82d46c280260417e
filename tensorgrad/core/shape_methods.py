"""The Tensor's shape methods, with PyTorch's names and semantics: one mixin per family, each
in its module under ``core/methods/`` with its helpers beside it, composed here into the
mixin the Tensor inherits.

``transpose(dim0, dim1)`` swaps two dimensions and ``permute(*dims)`` reorders them all (NumPy's
``transpose(axes)`` is ``np.transpose(t, axes)``); ``repeat`` tiles (NumPy's element repeat is
``repeat_interleave``); ``squeeze(dim)`` leaves a dimension that is not 1 alone. Most of these
are one ``reshape``, ``transpose``, ``broadcast_to`` or index op, or compositions of them.
"""

from __future__ import annotations

from tensorgrad.core.methods.common import required
from tensorgrad.core.methods.indexing import IndexingMethods, raw_index, torch_order
from tensorgrad.core.methods.permutations import PermutationMethods
from tensorgrad.core.methods.splits import SplitMethods
from tensorgrad.core.methods.views import ViewMethods

__all__ = ["ShapeMethods", "raw_index", "required", "torch_order"]


class ShapeMethods(ViewMethods, PermutationMethods, SplitMethods, IndexingMethods):
    """Reshaping, permuting, splitting and indexing (mixed into Tensor)."""

    __slots__ = ()
