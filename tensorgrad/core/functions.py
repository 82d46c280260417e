"""Module-level spellings of the Tensor methods (``tg.exp(x)`` is ``x.exp()``, PyTorch's
``torch.exp``), and the functions of several tensors: ``where``, ``cat``, ``stack``, ``split``.

Each takes anything ``tg.as_tensor`` does as its first argument, so ``tg.exp(2.0)`` works too.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from tensorgrad import array_backend, ops
from tensorgrad.core import engine
from tensorgrad.core.args import numpy_names
from tensorgrad.core.engine import apply, as_tensor, operand


# --------------------------------------------------------------------------- several tensors
def where(condition: Any, input: Any = None, other: Any = None) -> Any:
    """Elements of ``input`` where ``condition`` holds, else of ``other`` (all broadcast);
    with the condition alone, the indices where it holds (``nonzero(as_tuple=True)``)."""
    cond = condition._data if isinstance(condition, engine.Tensor) else np.asarray(condition)
    if input is None and other is None:  # any dtype; a 0-d condition counts as 1-D
        return tuple(engine.wrap(i.astype(np.int64)) for i in np.nonzero(np.atleast_1d(cond)))
    if cond.dtype != np.bool_:
        raise array_backend.DtypeError(f"where: condition must be a bool tensor, got {cond.dtype}")
    x, y = operand(input), operand(other)
    ax = x._data if isinstance(x, engine.Tensor) else x
    ay = y._data if isinstance(y, engine.Tensor) else y
    if array_backend.needs_promotion(ax, ay):
        dtype = array_backend.result_type(ax, ay)
        x, y = engine._cast(x, dtype), engine._cast(y, dtype)
        if not isinstance(x, (engine.Tensor, np.ndarray)) and not isinstance(y, engine.Tensor):
            x = np.asarray(x, dtype)  # two numbers: NumPy would make 0.0 and 0 float64
    return apply(ops.Where(), cond, x, y)


def maximum(input: Any, other: Any) -> Any:
    return as_tensor(input).maximum(other)


def minimum(input: Any, other: Any) -> Any:
    return as_tensor(input).minimum(other)


def matmul(input: Any, other: Any) -> Any:
    engine.require_tensors("matmul", input=input, other=other)
    return input.matmul(other)


@numpy_names
def cat(tensors: Sequence[Any], dim: int = 0) -> Any:
    """Join tensors along an existing dimension (they are promoted to one dtype). As in
    PyTorch, 1-D empty tensors are left out (``cat([zeros(0), x])`` is ``x`` for any ``x``)."""
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
        raise TypeError(f"cat(): argument 'dim' must be int, not {type(dim).__name__}")
    values = _common(tensors, "cat")
    kept = [v for v in values if np.shape(v) != (0,)]
    if not kept and values:  # only 1-D empty tensors: PyTorch checks no dim, joins nothing
        return apply(ops.Concatenate(0), *values)
    return apply(ops.Concatenate(dim), *kept)


concatenate = concat = cat


@numpy_names
def stack(tensors: Sequence[Any], dim: int = 0) -> Any:
    """Join tensors of one shape along a new dimension."""
    return apply(ops.Stack(dim), *_common(tensors, "stack"))


def _common(tensors: Sequence[Any], name: str) -> list[Any]:
    if isinstance(tensors, engine.Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(
            f"{name}: expected a list or tuple of tensors, got {type(tensors).__name__}"
        )
    values = [operand(t) for t in tensors]
    for t, v in zip(tensors, values):
        if v is NotImplemented:  # None, a string, ...: NumPy would make an object array
            raise TypeError(f"{name}: expected a sequence of tensors, got a {type(t).__name__}")
    arrays = [v._data if isinstance(v, engine.Tensor) else np.asarray(v) for v in values]
    if len({a.dtype for a in arrays}) > 1:
        dtype = array_backend.result_type(*arrays)
        values = [engine._cast(v if isinstance(v, engine.Tensor) else a, dtype)
                  for v, a in zip(values, arrays)]  # fmt: skip
    return values


@numpy_names
def split(tensor: Any, split_size_or_sections: Any, dim: int = 0) -> list[Any]:
    """Split along ``dim`` into pieces of ``split_size`` (the last may be smaller) or into
    pieces of the listed sizes, which must add up to the dimension's length (PyTorch's rule)."""
    x = as_tensor(tensor)
    if not x.ndim:
        raise RuntimeError("split: expects at least a 1-dimensional tensor")
    axis = ops.normalize_axis(dim, x.ndim, "split")
    length = x.shape[axis]
    if isinstance(split_size_or_sections, (int, np.integer)):
        size = int(split_size_or_sections)
        if size < 0 or (size == 0 and length):  # 0 only for a dimension of size 0 (PyTorch)
            raise array_backend.ShapeError(f"split: split size must be positive, got {size}")
        sizes = [builtins.min(size, length - start) for start in range(0, length, size or 1)]
        sizes = sizes or [0]
    else:
        sizes = [int(n) for n in split_size_or_sections]
        if builtins.sum(sizes) != length or builtins.any(n < 0 for n in sizes):
            raise array_backend.ShapeError(
                f"split: section sizes {sizes} do not add up to the length {length} of dim {axis}"
            )
    pieces, start = [], 0
    lead = (slice(None),) * axis
    for n in sizes:
        pieces.append(x[(*lead, slice(start, start + n))])
        start += n
    return pieces


@numpy_names
def chunk(tensor: Any, chunks: int, dim: int = 0) -> list[Any]:
    """At most ``chunks`` pieces of equal size along ``dim`` (PyTorch's rule)."""
    if chunks <= 0:
        raise RuntimeError(f"chunk: chunks must be positive, got {chunks}")
    x = as_tensor(tensor)
    if not x.ndim:
        raise RuntimeError("chunk: expects at least a 1-dimensional tensor")
    axis = ops.normalize_axis(dim, x.ndim, "chunk")
    if not x.shape[axis]:  # PyTorch: ``chunks`` empty pieces
        return split(x, [0] * chunks, axis)
    return split(x, -(-x.shape[axis] // chunks), axis)


def meshgrid(*tensors: Any, indexing: str = "ij") -> tuple[Any, ...]:
    """Coordinate grids from 1-D tensors: with ``indexing="ij"`` the k-th output varies
    along dimension k; with ``"xy"`` the first two dimensions are swapped (NumPy's default).
    PyTorch's default is ``"ij"``."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing not in ("ij", "xy"):
        raise ValueError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    grids = [as_tensor(t) for t in tensors]
    for t in grids:
        if t.ndim > 1:
            raise RuntimeError(
                f"meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t.ndim}D"
            )
    if len({t.dtype for t in grids}) > 1:
        raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    vectors = [t.reshape(-1) for t in grids]
    shape = tuple(v.shape[0] for v in vectors)
    out = []
    for k, v in enumerate(vectors):
        view = [1] * len(vectors)
        view[k] = shape[k]
        grid = v.reshape(view).expand(shape)
        out.append(grid.transpose(0, 1) if indexing == "xy" and len(shape) >= 2 else grid)
    return tuple(out)


def flatten(input: Any, start_dim: int = 0, end_dim: int = -1) -> Any:
    return as_tensor(input).flatten(start_dim, end_dim)


def numel(input: Any) -> int:
    return as_tensor(input).numel()


def is_tensor(obj: Any) -> bool:
    return isinstance(obj, engine.Tensor)


def is_floating_point(input: Any) -> bool:
    return as_tensor(input).dtype.kind == "f"


# --------------------------------------------------------------- contractions, stacks, dtypes
# Functions of several tensors PyTorch has at the top level, each composed of existing ops:
# einsum and tensordot are permutes, reshapes and one batched matmul per pair of operands.
def einsum(equation: str, *operands: Any) -> Any:
    """Einstein summation, ``tg.einsum("bij,bjk->bik", a, b)``: subscripts name dimensions,
    letters repeated within an operand take its diagonal, letters missing from the output
    (after ``->``, else the letters seen once, in order) are summed, ``...`` broadcasts.

    Composed, so no VJP of its own: each pair of operands is contracted by one batched
    ``matmul`` between permutes and reshapes (left to right), after summing away letters
    only one operand has.
    """
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not isinstance(equation, str):
        raise TypeError("einsum(): the sublist format is not supported; pass an equation string")
    tensors = [as_tensor(t) for t in operands]
    if not tensors:
        raise RuntimeError("einsum(): must provide at least one operand")
    if len({t.dtype for t in tensors}) > 1:
        raise RuntimeError(
            "einsum(): expected all operands to have the same dtype, got "
            + ", ".join(str(t.dtype) for t in tensors)
        )
    equation = equation.replace(" ", "")
    lhs, arrow, rhs = equation.partition("->")
    specs = lhs.split(",")
    if len(specs) != len(tensors):
        raise RuntimeError(
            "einsum(): more operands were provided than specified in the equation"
            if len(tensors) > len(specs)
            else "einsum(): fewer operands were provided than specified in the equation"
        )
    # the ellipsis: as many anonymous dimensions (upper-case placeholders) as it covers
    ellipsis_ndim = 0
    for spec, t in zip(specs, tensors):
        if "..." in spec:
            ellipsis_ndim = builtins.max(ellipsis_ndim, t.ndim - len(spec.replace("...", "")))
    anonymous = [chr(0x3B1 + i) for i in range(ellipsis_ndim)]  # α, β, ...: never user letters
    letters_of: list[list[str]] = []
    for i, (spec, t) in enumerate(zip(specs, tensors)):
        for ch in spec.replace("...", ""):
            if not ch.isalpha():
                raise RuntimeError(
                    f"einsum(): invalid subscript given at index {lhs.index(ch)} in the "
                    "equation string, subscripts must be in [a-zA-Z]"
                )
        if "..." in spec:
            head, tail = spec.split("...")
            covered = t.ndim - len(head) - len(tail)
            if covered < 0:
                raise RuntimeError(f"einsum(): the number of subscripts in the equation "
                                   f"({len(head) + len(tail)}) is more than the number of "
                                   f"dimensions ({t.ndim}) for operand {i}")  # fmt: skip
            letters = [*head, *anonymous[ellipsis_ndim - covered :], *tail]
        else:
            letters = list(spec)
            if len(letters) != t.ndim:
                raise RuntimeError(
                    f"einsum(): the number of subscripts in the equation ({len(letters)}) does "
                    f"not match the number of dimensions ({t.ndim}) for operand {i} and no "
                    "ellipsis was given"
                )
        letters_of.append(letters)
    if arrow:
        if "..." in rhs:
            head, tail = rhs.split("...")
            output = [*head, *anonymous, *tail]
        else:
            output = list(rhs)
        seen = {ch for letters in letters_of for ch in letters}
        for ch in output:
            if ch not in seen:
                raise RuntimeError(f"einsum(): output subscript {ch} does not appear in the "
                                   "equation for any input operand")  # fmt: skip
        if len(set(output)) != len(output):
            raise RuntimeError("einsum(): output subscript appears more than once in the output")
    else:
        counts: dict[str, int] = {}
        for letters in letters_of:
            for ch in letters:
                counts[ch] = counts.get(ch, 0) + 1
        named = sorted(ch for ch, n in counts.items() if n == 1 and ch not in anonymous)
        output = [*anonymous, *named]
    # sizes: equal, or 1 (broadcast)
    sizes: dict[str, int] = {}
    for i, (letters, t) in enumerate(zip(letters_of, tensors)):
        for ch, n in zip(letters, t.shape):
            known = sizes.get(ch, 1)
            if n != 1 and known != 1 and n != known:
                raise RuntimeError(f"einsum(): operands do not broadcast with remapped shapes "
                                   f"(original->remapped): subscript {ch} has size {n} for "
                                   f"operand {i} which does not broadcast with previously seen "
                                   f"size {known}")  # fmt: skip
            sizes[ch] = n if known == 1 else known  # (a size 1 broadcasts to 0 as well)
    # each operand: diagonals of repeated letters, then sum letters no one else needs
    items = []
    for i, (letters, t) in enumerate(zip(letters_of, tensors)):
        t, letters = _einsum_diagonals(t, letters)
        others = {ch for j, ls in enumerate(letters_of) if j != i for ch in ls} | set(output)
        alone = [d for d, ch in enumerate(letters) if ch not in others]
        if alone:
            t = t.sum(alone)
            letters = [ch for d, ch in enumerate(letters) if d not in alone]
        items.append((t, letters))
    result, letters = items[0]
    for k in range(1, len(items)):
        later = {ch for _, ls in items[k + 1 :] for ch in ls} | set(output)
        result, letters = _einsum_pair(result, letters, *items[k], later, sizes)
    # letters summed only now (one operand, not in the output), then the output's order
    extra = [d for d, ch in enumerate(letters) if ch not in output]
    if extra:
        result = result.sum(extra)
        letters = [ch for d, ch in enumerate(letters) if d not in extra]
    shape = tuple(sizes[ch] for ch in letters)
    if result.shape != shape:
        result = result.expand(shape)
    if letters != output:
        result = result.permute([letters.index(ch) for ch in output])
    return result


def _einsum_diagonals(t: Any, letters: list[str]) -> tuple[Any, list[str]]:
    """Take the diagonal for each letter repeated within one operand."""
    while len(set(letters)) != len(letters):
        ch = next(c for c in letters if letters.count(c) > 1)
        first = letters.index(ch)
        second = letters.index(ch, first + 1)
        t = t.diagonal(0, first, second)  # the diagonal becomes the last dimension
        letters = [c for d, c in enumerate(letters) if d not in (first, second)] + [ch]
    return t, letters


def _einsum_pair(
    a: Any, la: list[str], b: Any, lb: list[str], keep: set[str], sizes: dict[str, int]
) -> tuple[Any, list[str]]:
    """Contract two operands by one batched matmul: (batch, free a, summed) @ (batch, summed,
    free b), where a letter is summed if it is in both and needed nowhere later."""
    shared = [ch for ch in la if ch in lb]
    batch = [ch for ch in shared if ch in keep]
    summed = [ch for ch in shared if ch not in keep]
    free_a = [ch for ch in la if ch not in lb]
    free_b = [ch for ch in lb if ch not in la]

    def arrange(t: Any, letters: list[str], order: list[str]) -> Any:
        t = t.permute([letters.index(ch) for ch in order]) if letters != order else t
        target = tuple(sizes[ch] if ch in batch or ch in summed else t.shape[i]
                       for i, ch in enumerate(order))  # fmt: skip
        return t if t.shape == target else t.expand(target)

    # a matrix stored the other way round (b as (batch, free, summed), as in q·kᵀ) goes to
    # the product as a transposed view, which matmul takes as it is: no copy
    a_swapped = la == batch + summed + free_a and bool(summed) and bool(free_a)
    b_swapped = lb == batch + free_b + summed and bool(summed) and bool(free_b)
    a = arrange(a, la, batch + (summed + free_a if a_swapped else free_a + summed))
    b = arrange(b, lb, batch + (free_b + summed if b_swapped else summed + free_b))
    nb = math.prod(sizes[ch] for ch in batch)
    nk = math.prod(sizes[ch] for ch in summed)
    free_a_shape = a.shape[len(batch) + (len(summed) if a_swapped else 0) :][: len(free_a)]
    free_b_shape = b.shape[len(batch) + (0 if b_swapped else len(summed)) :][: len(free_b)]
    na, nf = math.prod(free_a_shape), math.prod(free_b_shape)
    left = a.reshape(nb, nk, na).transpose(1, 2) if a_swapped else a.reshape(nb, na, nk)
    right = b.reshape(nb, nf, nk).transpose(1, 2) if b_swapped else b.reshape(nb, nk, nf)
    # nothing summed: an outer product per batch, elementwise (PyTorch's einsum takes bool
    # operands there, and its matrix products refuse them)
    product = left @ right if summed else left * right
    shape = (*a.shape[: len(batch)], *free_a_shape, *free_b_shape)
    return product.reshape(shape), batch + free_a + free_b


def tensordot(a: Any, b: Any, dims: Any = 2, out: Any = None) -> Any:
    """Sum the products over ``dims``: the last ``dims`` of ``a`` with the first of ``b``,
    or the listed pairs ``([a dims], [b dims])``."""
    if out is not None:
        raise NotImplementedError("tensordot: out= is not supported; use the returned tensor")
    a, b = as_tensor(a), as_tensor(b)
    if isinstance(dims, engine.Tensor):
        dims = dims._data.tolist()
    if isinstance(dims, (int, np.integer)):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        dims_a, dims_b = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        dims_a, dims_b = ([d] if isinstance(d, int) else list(d) for d in dims)
    if len(dims_a) != len(dims_b):
        raise RuntimeError("both dimension lists should have same length")
    dims_a = [ops.normalize_axis(d, a.ndim, "tensordot") for d in dims_a]
    dims_b = [ops.normalize_axis(d, b.ndim, "tensordot") for d in dims_b]
    for da, db in zip(dims_a, dims_b):
        if a.shape[da] != b.shape[db]:
            raise RuntimeError(
                f"contracted dimensions need to match, but first has size {a.shape[da]} in dim "
                f"{da} and second has size {b.shape[db]} in dim {db}"
            )
    if a.dtype != b.dtype:
        raise RuntimeError(
            f"expected both tensors to have the same dtype, got {a.dtype} and {b.dtype}"
        )
    free_a = [d for d in range(a.ndim) if d not in dims_a]
    free_b = [d for d in range(b.ndim) if d not in dims_b]
    nk = math.prod(a.shape[d] for d in dims_a)
    left = a.permute((*free_a, *dims_a)).reshape(math.prod(a.shape[d] for d in free_a), nk)
    right = b.permute((*dims_b, *free_b)).reshape(nk, math.prod(b.shape[d] for d in free_b))
    return (left @ right).reshape((*[a.shape[d] for d in free_a], *[b.shape[d] for d in free_b]))


def cdist(
    x1: Any, x2: Any, p: float = 2.0, compute_mode: str = "use_mm_for_euclid_dist_if_necessary"
) -> Any:
    """The p-norm distance between each row of ``x1`` (…, P, M) and of ``x2`` (…, R, M)."""
    x1, x2 = as_tensor(x1), as_tensor(x2)
    if x1.ndim < 2 or x2.ndim < 2:
        raise RuntimeError(
            f"cdist only supports at least 2D tensors, X1 got: {x1.ndim}D, X2 got: {x2.ndim}D"
        )
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(
            f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}"
        )
    for which, x in (("X1", x1), ("X2", x2)):
        if x.dtype.kind != "f":
            raise RuntimeError(f"cdist only supports floating-point dtypes, {which} got: {x.dtype}")
    if x1.dtype != x2.dtype:
        raise RuntimeError(
            f"cdist: X1 and X2 must have the same dtype, got {x1.dtype} and {x2.dtype}"
        )
    if p < 0:
        raise RuntimeError(f"cdist only supports non-negative p values, got {p}")
    difference = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    return difference.norm(p, dim=-1)


def _stack_inputs(tensors: Sequence[Any], name: str) -> list[Any]:
    if isinstance(tensors, engine.Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{name}(): argument 'tensors' must be a tuple of Tensors")
    if not tensors:
        raise RuntimeError(f"{name} expects a non-empty TensorList")
    return [as_tensor(t) for t in tensors]


def atleast_1d(*tensors: Any) -> Any:
    return _atleast(tensors, 1)


def atleast_2d(*tensors: Any) -> Any:
    return _atleast(tensors, 2)


def atleast_3d(*tensors: Any) -> Any:
    return _atleast(tensors, 3)


def _atleast(tensors: tuple, ndim: int) -> Any:
    """NumPy's and PyTorch's rule: 0-d → (1,…), 1-D (n) → (1, n) → (1, n, 1), 2-D → (m, n, 1)."""
    single = len(tensors) == 1 and not isinstance(tensors[0], (list, tuple))
    items = tensors[0] if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else tensors
    result = []
    for t in map(as_tensor, items):
        if t.ndim < ndim:
            if ndim == 1 or t.ndim == 0:
                t = t.reshape((1,) * ndim)
            elif ndim == 2 or t.ndim == 2:
                t = t.reshape(1, *t.shape) if ndim == 2 else t.unsqueeze(-1)
            else:  # a vector to 3-D: (1, n, 1)
                t = t.reshape(1, t.shape[0], 1)
        result.append(t)
    return result[0] if single else tuple(result)


def hstack(tensors: Sequence[Any]) -> Any:
    items = atleast_1d(_stack_inputs(tensors, "hstack"))
    return cat(list(items), 0 if items[0].ndim == 1 else 1)


def vstack(tensors: Sequence[Any]) -> Any:
    return cat(list(atleast_2d(_stack_inputs(tensors, "vstack"))), 0)


row_stack = vstack


def dstack(tensors: Sequence[Any]) -> Any:
    return cat(list(atleast_3d(_stack_inputs(tensors, "dstack"))), 2)


def column_stack(tensors: Sequence[Any]) -> Any:
    items = [t.reshape(-1, 1) if t.ndim <= 1 else t for t in _stack_inputs(tensors, "column_stack")]
    return cat(items, 1)


def broadcast_shapes(*shapes: Any) -> Any:
    from tensorgrad.core.args import Size

    try:
        return Size(
            np.broadcast_shapes(*[(s,) if isinstance(s, int) else tuple(s) for s in shapes])
        )
    except ValueError as exc:
        raise RuntimeError(f"shape mismatch: shapes {list(shapes)} cannot be broadcast") from exc


def broadcast_tensors(*tensors: Any) -> tuple[Any, ...]:
    """The tensors expanded to their common shape (views)."""
    items = [as_tensor(t) for t in tensors]
    shape = tuple(broadcast_shapes(*[t.shape for t in items]))
    return tuple(t if t.shape == shape else t.expand(shape) for t in items)


def std_mean(input: Any, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
             correction: Any = None) -> tuple[Any, Any]:  # fmt: skip
    x = as_tensor(input)
    return x.std(dim, unbiased, keepdim, correction=correction), x.mean(dim, keepdim)


def var_mean(input: Any, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
             correction: Any = None) -> tuple[Any, Any]:  # fmt: skip
    x = as_tensor(input)
    return x.var(dim, unbiased, keepdim, correction=correction), x.mean(dim, keepdim)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None,
                 layout: Any = None) -> Any:  # fmt: skip
    """The (2, N) coordinates of the lower triangle of a ``row`` × ``col`` matrix, row by row."""
    return _triangle_indices(np.tril_indices, row, col, offset, dtype, device)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None,
                 layout: Any = None) -> Any:  # fmt: skip
    return _triangle_indices(np.triu_indices, row, col, offset, dtype, device)


def _triangle_indices(which: Any, row: int, col: int, offset: int, dtype: Any, device: Any):
    if device is not None:
        array_backend.as_device(device)
    dtype = array_backend.int64 if dtype is None else array_backend.as_dtype(dtype)
    if row < 0 or col < 0:
        raise RuntimeError(f"row and col must be non-negative, got {row} and {col}")
    rows, cols = which(row, offset, col)
    return engine.wrap(np.stack([rows, cols]).astype(dtype).reshape(2, -1))


def result_type(tensor: Any, other: Any) -> Any:
    """The dtype an elementwise op on ``tensor`` and ``other`` gives (PyTorch's promotion)."""
    return array_backend.result_type(*(_promotion_operand(v) for v in (tensor, other)))


def promote_types(type1: Any, type2: Any) -> Any:
    """The smallest dtype both ``type1`` and ``type2`` convert to without losing category."""
    one, two = array_backend.as_dtype(type1), array_backend.as_dtype(type2)
    return array_backend.result_type(np.zeros(1, one), np.zeros(1, two))


def can_cast(from_: Any, to: Any) -> bool:
    """Whether PyTorch's casting rules allow ``from_`` → ``to``: never to a lower category
    (float → integer, integer → bool)."""
    order = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}
    return order[array_backend.as_dtype(from_).kind] <= order[array_backend.as_dtype(to).kind]


def _promotion_operand(value: Any) -> Any:
    if isinstance(value, engine.Tensor):
        return value._data
    if isinstance(value, (bool, int, float, complex)):
        return value
    return array_backend.as_array(value)


# --------------------------------------------------------------------------- method spellings
def _method(name: str) -> Any:
    """``tg.<name>(input, *args, **kwargs)`` as ``as_tensor(input).<name>(*args, **kwargs)``."""

    def function(input: Any, *args: Any, **kwargs: Any) -> Any:
        return getattr(as_tensor(input), name)(*args, **kwargs)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"``tg.{name}(x, ...)`` is ``x.{name}(...)``: see ``Tensor.{name}``."
    return function


#: the Tensor methods that are also functions of the package, as in PyTorch
METHOD_FUNCTIONS = (
    "abs", "absolute", "add", "all", "allclose", "amax", "amin", "any", "argmax", "argmin",
    "argsort", "bmm", "ceil", "clamp", "clamp_max", "clamp_min", "clip", "clone", "cos", "cumsum",
    "diag", "diagonal", "div", "divide", "dot", "eq", "equal", "exp", "expm1", "flip", "floor",
    "gather", "ge", "gelu", "gt", "index_select", "isclose", "isfinite", "isinf", "isnan", "le",
    "leaky_relu", "log", "log10", "log1p", "log2", "log_softmax", "logical_and", "logical_not",
    "logical_or", "logical_xor", "logsumexp", "lt", "masked_fill", "masked_select", "max", "mean",
    "min", "mm", "mul", "multiply", "narrow", "ne", "neg", "negative", "nonzero", "norm", "outer",
    "permute", "pow", "prod", "reciprocal", "relu", "repeat_interleave", "reshape", "roll", "round",
    "rsqrt", "scatter_add", "sigmoid", "sign", "sin", "softmax", "sort", "sqrt", "square",
    "squeeze", "std", "sub", "subtract", "sum", "swapaxes", "swapdims", "t", "tan", "tanh", "topk",
    "transpose", "tril", "triu", "true_divide", "trunc", "unbind", "unflatten", "unsqueeze", "var",
    # inverse trigonometric, special, two-operand and bitwise math, scans, order statistics,
    # scattering and rearranging
    "acos", "acosh", "addmm", "addmv", "aminmax", "arccos", "arccosh", "arcsin", "arcsinh",
    "arctan", "arctan2", "arctanh", "argwhere", "asin", "asinh", "atan", "atan2", "atanh",
    "baddbmm", "bitwise_and", "bitwise_left_shift", "bitwise_not", "bitwise_or",
    "bitwise_right_shift", "bitwise_xor", "copysign", "cosh", "count_nonzero", "cross",
    "cummax", "cummin", "cumprod", "deg2rad", "diag_embed", "diagflat", "digamma", "erf", "erfc",
    "erfinv", "exp2", "fix", "fliplr", "flipud", "float_power", "floor_divide", "fmax", "fmin",
    "fmod", "frac", "heaviside", "hypot", "i0", "index_add", "index_copy", "index_fill",
    "index_put", "inner", "isneginf", "isposinf", "isreal", "kron", "kthvalue", "lerp", "lgamma",
    "logaddexp", "logaddexp2", "logcumsumexp", "logit", "masked_scatter", "median", "moveaxis",
    "movedim", "mv", "nan_to_num", "nanmean", "nansum", "nextafter", "rad2deg", "ravel",
    "remainder", "rot90", "scatter", "scatter_reduce", "sgn", "signbit", "sinc", "sinh", "take",
    "take_along_dim", "tensor_split", "tile", "trace", "vdot", "xlogy",
)  # fmt: skip

#: the functions of core/more_methods.py's methods
MORE_METHOD_FUNCTIONS = (
    "greater", "greater_equal", "less", "less_equal", "not_equal", "ger", "positive", "adjoint",
    "is_nonzero", "addcmul", "addcdiv", "select", "diff", "dist", "is_signed", "is_complex",
    "is_conj", "is_neg", "is_same_size", "conj", "resolve_conj", "resolve_neg",
)  # fmt: skip
METHOD_FUNCTIONS = METHOD_FUNCTIONS + MORE_METHOD_FUNCTIONS

for _name in METHOD_FUNCTIONS:
    globals()[_name] = _method(_name)
del _name
clip = clamp  # noqa: F821 - one function under PyTorch's two names


def unique(
    input: Any,
    sorted: bool = True,
    return_inverse: bool = False,
    return_counts: bool = False,
    dim: int | None = None,
) -> Any:
    """``input.unique(...)``: the distinct elements, sorted (see :meth:`Tensor.unique`)."""
    return as_tensor(input).unique(sorted, return_inverse, return_counts, dim)


def unique_consecutive(
    input: Any, return_inverse: bool = False, return_counts: bool = False, dim: int | None = None
) -> Any:
    """``input.unique_consecutive(...)``: each run of equal elements collapsed to one."""
    return as_tensor(input).unique_consecutive(return_inverse, return_counts, dim)


def bincount(input: Any, weights: Any = None, minlength: int = 0) -> Any:
    """``input.bincount(weights, minlength)``: how often each non-negative integer occurs
    (see :meth:`Tensor.bincount`)."""
    engine.require_tensors("bincount", input=input, weights=weights)
    return input.bincount(weights, minlength)


def msort(input: Any) -> Any:
    """``input.msort()``: sorted along dimension 0."""
    return as_tensor(input).msort()


def kthvalue(input: Any, k: int, dim: int = -1, keepdim: bool = False) -> Any:
    """``input.kthvalue(k, dim, keepdim)``: the k-th smallest values and their indices."""
    return as_tensor(input).kthvalue(k, dim, keepdim)


def polygamma(n: int, input: Any) -> Any:
    """``tg.polygamma(n, x)``: the n-th derivative of digamma (PyTorch's argument order)."""
    return as_tensor(input).polygamma(n)


def chain_matmul(*matrices: Any) -> Any:
    """The product of 2-D tensors, left to right (PyTorch's deprecated ``chain_matmul``;
    ``tg.linalg`` is not there, so no ``multi_dot``)."""
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    tensors = [as_tensor(m) for m in matrices]
    for t in tensors:
        if t.ndim != 2:
            raise RuntimeError(f"Tensor dimension is {t.ndim}, expected 2 instead.")
    result = tensors[0]
    for t in tensors[1:]:
        result = result.mm(t)
    return result if len(tensors) > 1 else result.clone()


def rsub(input: Any, other: Any, alpha: Any = 1) -> Any:
    """``other − alpha · input`` (subtraction with the operands swapped)."""
    x = as_tensor(input)
    y = other if isinstance(other, engine.Tensor) else np.asarray(other)
    if x.dtype == np.bool_ or y.dtype == np.bool_:  # PyTorch refuses ``-`` of bools
        raise RuntimeError(
            "rsub: Subtraction, the `-` operator, with a bool tensor is not supported. If you "
            "are trying to invert a mask, use the `~` or `logical_not()` operator instead."
        )
    return (x * alpha if alpha != 1 else x).neg().add(other)
