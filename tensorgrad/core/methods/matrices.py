"""The Tensor's matrix methods: products (``matmul``, ``mm``, ``bmm``, ``dot``, ``mv``,
``inner``, ``outer``, ``kron``, ``addmm`` and its kin) under PyTorch's dtype checks
(``product_dtypes``), and the trace, the triangles (``tril``, ``triu``) and ``cross``."""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorgrad import ops
from tensorgrad.core import engine, functions
from tensorgrad.core.engine import binary
from tensorgrad.core.methods.common import _raw, _tensor_argument, write_back
from tensorgrad.core.product_dtypes import check_kernel, check_matmul_dtypes, check_same_dtype


class MatrixMethods:
    """Matrix products, and the trace, triangles and cross product (mixed into Tensor)."""

    __slots__ = ()

    def matmul(self, other: Any) -> Any:
        return _product("matmul", self, _tensor_argument("matmul", other), ("input", "other"))

    def mm(self, mat2: Any) -> Any:
        """Matrix product of two 2-D tensors (no broadcasting, as PyTorch's ``mm``)."""
        _tensor_argument("mm", mat2, "mat2")
        _check_ndim("mm", self, 2, "self")
        _check_ndim("mm", mat2, 2, "mat2")
        return _product("mm", self, mat2, ("self", "mat2"))

    def bmm(self, mat2: Any) -> Any:
        """Batched matrix product of two 3-D tensors with the same batch size."""
        _tensor_argument("bmm", mat2, "mat2")
        _check_ndim("bmm", self, 3, "self")
        _check_ndim("bmm", mat2, 3, "mat2")
        if self.shape[0] != mat2.shape[0]:
            raise RuntimeError(f"bmm: batch sizes differ: {self.shape} and {tuple(mat2.shape)}")
        return _product("bmm", self, mat2, ("self", "mat2"))

    def dot(self, other: Any) -> Any:
        _tensor_argument("dot", other, "tensor")
        _check_ndim("dot", self, 1, "self")
        _check_ndim("dot", other, 1, "other")
        return _product("dot", self, other, ("self", "other"))

    def outer(self, vec2: Any) -> Any:
        """The outer product of two 1-D tensors: ``self[i] · vec2[j]``."""
        other = engine.as_tensor(vec2)
        for name, t in (("self", self), ("vec2", other)):
            if t.ndim != 1:
                raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {t.ndim}-D")
        return self.reshape(-1, 1) * other.reshape(1, -1)

    def tril(self, diagonal: int = 0) -> Any:
        """The lower triangle of the last two dimensions (elements at or below the
        ``diagonal``-th diagonal), the rest 0."""
        return self.masked_fill(~_triangle(self, np.tril, "tril", diagonal), 0)

    def triu(self, diagonal: int = 0) -> Any:
        """The upper triangle of the last two dimensions, the rest 0."""
        return self.masked_fill(~_triangle(self, np.triu, "triu", diagonal), 0)

    def trace(self) -> Any:
        """The sum of a matrix's main diagonal."""
        if self.dtype == np.bool_:  # before the rank, as PyTorch's dispatch
            raise NotImplementedError("\"trace\" not implemented for 'Bool'")
        if self.ndim != 2:
            raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {self.ndim}")
        return self.diagonal().sum()  # integers: in int64, as sum does

    def mv(self, vec: Any) -> Any:
        _tensor_argument("mv", vec, "vec")
        _check_ndim("mv", self, 2, "self")
        _check_ndim("mv", vec, 1, "vec")
        return _product("mv", self, vec, ("self", "vec"))

    def inner(self, other: Any) -> Any:
        """The sum over the last dimension of the product (PyTorch's ``inner``)."""
        other = engine.as_tensor(other)
        if not self.ndim or not other.ndim:
            return self * other
        if self.shape[-1] != other.shape[-1]:
            raise RuntimeError(
                f"inner() the last dimension must match on both input tensors but got shapes "
                f"{list(self.shape)} and {list(other.shape)}"
            )
        return functions.tensordot(self, other, ([self.ndim - 1], [other.ndim - 1]))

    def vdot(self, other: Any) -> Any:
        return self.dot(other)

    def kron(self, other: Any) -> Any:
        """The Kronecker product: blocks ``self[i…] · other``."""
        other = engine.as_tensor(other)
        ndim = max(self.ndim, other.ndim)
        a = self.reshape((1,) * (ndim - self.ndim) + self.shape)
        b = other.reshape((1,) * (ndim - other.ndim) + other.shape)
        spread_a = a.reshape(tuple(d for n in a.shape for d in (n, 1)))
        spread_b = b.reshape(tuple(d for n in b.shape for d in (1, n)))
        return (spread_a * spread_b).reshape(tuple(m * n for m, n in zip(a.shape, b.shape)))

    def addmm(self, mat1: Any, mat2: Any, *, beta: float = 1, alpha: float = 1) -> Any:
        """``beta · self + alpha · (mat1 @ mat2)`` (``self`` ignored when beta is 0, but its
        dtype must still be the product's, as in PyTorch)."""
        check_same_dtype("addmm", ("self", self), ("mat1", mat1), ("mat2", mat2))
        check_kernel("addmm", "addmm_impl_cpu_", self)
        return _add_product(self, engine.as_tensor(mat1).mm(mat2), beta, alpha)

    def addmv(self, mat: Any, vec: Any, *, beta: float = 1, alpha: float = 1) -> Any:
        check_same_dtype("addmv", ("self", self), ("mat", mat), ("vec", vec))
        check_kernel("addmv", "addmv_impl_cpu", self)
        return _add_product(self, engine.as_tensor(mat).mv(vec), beta, alpha)

    def baddbmm(self, batch1: Any, batch2: Any, *, beta: float = 1, alpha: float = 1) -> Any:
        check_same_dtype("baddbmm", ("self", self), ("batch1", batch1))  # PyTorch's order
        check_kernel("baddbmm", "baddbmm", self)
        check_same_dtype("baddbmm", ("batch1", batch1), ("batch2", batch2))
        return _add_product(self, engine.as_tensor(batch1).bmm(batch2), beta, alpha)

    def addmm_(self, mat1: Any, mat2: Any, *, beta: float = 1, alpha: float = 1) -> Any:
        return write_back(self, "addmm_", lambda x: x.addmm(mat1, mat2, beta=beta, alpha=alpha))

    def addmv_(self, mat: Any, vec: Any, *, beta: float = 1, alpha: float = 1) -> Any:
        return write_back(self, "addmv_", lambda x: x.addmv(mat, vec, beta=beta, alpha=alpha))

    def baddbmm_(self, batch1: Any, batch2: Any, *, beta: float = 1, alpha: float = 1) -> Any:
        return write_back(
            self, "baddbmm_", lambda x: x.baddbmm(batch1, batch2, beta=beta, alpha=alpha)
        )

    def cross(self, other: Any, dim: int | None = None) -> Any:
        """The cross product of 3-vectors along ``dim`` (the first dimension of size 3 when
        None, as ``torch.cross``), the two broadcast."""
        other = engine.as_tensor(other)
        check_same_dtype("cross", ("self", self), ("other", other))
        if self.dtype == np.bool_:  # PyTorch's kernel has no bool version (its error type)
            raise NotImplementedError("cross: not implemented for 'Bool'")
        if self.ndim != other.ndim:
            raise RuntimeError(
                f"cross: inputs must have the same number of dimensions, got shapes "
                f"{self.shape} and {other.shape}"
            )
        try:
            shape = np.broadcast_shapes(self.shape, other.shape)
        except ValueError as exc:
            raise RuntimeError(
                f"cross: shapes {self.shape} and {other.shape} do not broadcast"
            ) from exc
        a, b = self.expand(shape), other.expand(shape)
        if dim is None:
            dims = [d for d, n in enumerate(shape) if n == 3]
            if not dims:
                raise RuntimeError(f"cross: no dimension of size 3 in input of shape {shape}")
            dim = dims[0]
        axis = ops.normalize_axis(dim, len(shape), "cross")
        if self.shape[axis] != 3 or other.shape[axis] != 3:  # no broadcast along dim
            raise RuntimeError(
                f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                f"{self.shape[axis]} and {other.shape[axis]}"
            )
        a0, a1, a2 = a.unbind(axis)
        b0, b1, b2 = b.unbind(axis)
        return functions.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis)


def _triangle(x: Any, keep: Any, name: str, diagonal: int) -> np.ndarray:
    """Where a triangle of ``x``'s last two dimensions is (``keep``: np.tril or np.triu)."""
    if x.ndim < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
    return keep(np.ones(x.shape[-2:], dtype=bool), diagonal)


def _product(name: str, x: Any, y: Any, names: tuple[str, str]) -> Any:
    """The matrix product ``x @ y`` under ``name``'s dtype checks (``product_dtypes``)."""
    check_matmul_dtypes(name, x, y, names)
    return binary(ops.MatMul, x, y)


def _check_ndim(name: str, x: Any, ndim: int, what: str) -> None:
    shape = np.shape(_raw(x))
    if len(shape) != ndim:
        raise RuntimeError(f"{name}: {what} must be a {ndim}-D tensor, got shape {shape}")


def _add_product(base: Any, product: Any, beta: float, alpha: float) -> Any:
    """``beta · base + alpha · product``; with beta 0 the base is ignored (NaN in it too, as
    PyTorch), but its shape still broadcasts."""
    scaled = product if alpha == 1 else product * alpha
    if beta == 0:
        shape = np.broadcast_shapes(np.shape(_raw(base)), scaled.shape)
        return scaled if shape == scaled.shape else scaled.expand(shape)
    return (base if beta == 1 else base * beta) + scaled
