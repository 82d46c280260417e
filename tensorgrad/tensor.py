"""The Tensor: an array that remembers the op that made it, so gradients can flow back.

A tensor made by an op keeps that op in ``_ctx``; the op keeps its input tensors in
``parents``. The op never holds its output, so the graph has no reference cycles and is freed
by reference counting as soon as the last tensor of it is dropped.
"""

from __future__ import annotations

import collections
import itertools
import numbers
import operator
import weakref
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from tensorgrad import backend, ops
from tensorgrad.grad_mode import state as _grad_state

Shape = tuple[int, ...]

#: One clock for the order of events: each recorded op output and each in-place change takes
#: the next tick. A tensor's parents are always older than it, so the backward sweep can take
#: nodes newest first; a saved value is stale when its last change is newer than the op.
_clock = itertools.count(1)


#: Tensor and its subclasses, which register themselves (for ``_apply``'s check)
_TENSOR_TYPES: set[type] = set()


class _PostAccumulateGradHooks:  # TEMPORARY (dist branch)
    """How many post-accumulate-grad hooks were ever registered: the sweep looks for hooks
    only when some were."""

    registered = 0


class RemovableHandle:  # TEMPORARY (dist branch): PyTorch's torch.utils.hooks.RemovableHandle
    """Removes the hook it was returned for: ``handle.remove()``, or use it as a context."""

    _next_id = 0

    def __init__(self, hooks: collections.OrderedDict) -> None:
        self._hooks = weakref.ref(hooks)
        self.id = RemovableHandle._next_id
        RemovableHandle._next_id += 1

    def remove(self) -> None:
        hooks = self._hooks()
        if hooks is not None:
            hooks.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.remove()


class _Changes:
    """The clock's reading at the most recent in-place change to any tensor (0: none yet)."""

    latest = 0


class Tensor:
    """An n-dimensional array with reverse-mode automatic differentiation.

    ``data`` is the NumPy array; ``grad`` is filled in by :meth:`backward` for leaves that
    require grad. Operators accept Python numbers and arrays on either side.
    """

    __slots__ = (
        "__weakref__",
        "_ctx",
        "_data",
        "_grad",
        "_post_accumulate_grad_hooks",  # TEMPORARY (dist branch)
        "_retains_grad",
        "_seq",
        "_version",
        "requires_grad",
    )
    __hash__ = object.__hash__  # ``==`` is elementwise, but graph walks need identity hashing

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _TENSOR_TYPES.add(cls)  # Parameter, and any other subclass: see _apply

    def __init__(self, data: Any, dtype: Any = None, requires_grad: bool = False) -> None:
        if isinstance(data, Tensor):
            data = data._data
        self._data = backend.as_array(data, dtype)
        self._grad: Tensor | np.ndarray | None = None  # see _grad_array
        self._ctx: ops.Op | None = None
        self._version = 0
        self._retains_grad = False
        self.requires_grad = False
        if requires_grad:
            self.requires_grad_(True)

    # ----------------------------------------------------------------- basic attributes
    @property
    def data(self) -> np.ndarray:
        """The underlying array. Writing into it directly bypasses in-place tracking."""
        return self._data

    @data.setter
    def data(self, value: Any) -> None:
        self._data = backend.as_array(value._data if isinstance(value, Tensor) else value)
        self._mark_changed()

    @property
    def grad(self) -> Tensor | None:
        """The accumulated gradient (a Tensor of this tensor's shape and dtype), or None."""
        grad = self._grad
        if type(grad) is np.ndarray:  # stored bare by backward; a Tensor from now on
            grad = self._grad = _wrap(grad)
        return grad

    @grad.setter
    def grad(self, value: Any) -> None:
        if value is not None:
            value = value if isinstance(value, Tensor) else Tensor(value, dtype=self.dtype)
            if value.shape != self.shape:
                raise ValueError(
                    f"grad: assigned gradient has shape {value.shape}, "
                    f"tensor has shape {self.shape}"
                )
        self._grad = value

    @property
    def shape(self) -> Shape:
        return self._data.shape

    @property
    def dtype(self) -> np.dtype:
        return self._data.dtype

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def size(self) -> int:
        """The number of elements (NumPy's meaning; PyTorch's ``numel()`` is also here)."""
        return self._data.size

    def numel(self) -> int:
        return self._data.size

    @property
    def is_leaf(self) -> bool:
        """True for tensors not made by a recorded op: gradients accumulate only into leaves."""
        return self._ctx is None

    @property
    def grad_fn(self) -> ops.Op | None:
        """The op that made this tensor, or None for a leaf."""
        return self._ctx

    @property
    def T(self) -> Tensor:
        """The tensor with its axes reversed (a transpose for matrices)."""
        return self.transpose()

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set ``requires_grad`` on a leaf in place; returns the tensor."""
        if requires_grad and not backend.is_floating(self.dtype):
            raise TypeError(
                f"requires_grad: only floating-point tensors can require gradients, "
                f"this one is {self.dtype}"
            )
        if not requires_grad and self._ctx is not None:
            raise RuntimeError(
                "requires_grad: only a leaf's flag can be turned off; use .detach() for a "
                "non-leaf tensor"
            )
        self.requires_grad = bool(requires_grad)
        return self

    def retain_grad(self) -> None:
        """Keep ``.grad`` for this non-leaf tensor too when backward runs."""
        if not self.requires_grad:
            raise RuntimeError("retain_grad: the tensor does not require grad")
        if self._ctx is not None:
            self._retains_grad = True

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    # TEMPORARY (dist branch): PyTorch's post-accumulate-grad hook, so that DistributedDataParallel
    # can be built and tested; the lead's engine replaces this (and the call in autograd._sweep).
    def register_post_accumulate_grad_hook(self, hook: Any) -> RemovableHandle:
        """Call ``hook(self)`` each time backward has accumulated this leaf's ``.grad``
        (PyTorch >= 2.1). Returns a handle whose ``remove()`` unregisters the hook."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._ctx is not None:
            raise RuntimeError(
                "post accumulate grad hooks cannot be registered on non-leaf tensors"
            )
        if not callable(hook):
            raise TypeError(
                f"register_post_accumulate_grad_hook: hook must be callable, got "
                f"{type(hook).__name__}"
            )
        hooks = getattr(self, "_post_accumulate_grad_hooks", None)
        if hooks is None:
            hooks = self._post_accumulate_grad_hooks = collections.OrderedDict()
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        _PostAccumulateGradHooks.registered += 1
        return handle

    def detach(self) -> Tensor:
        """The same data, cut off from the graph (shares memory with this tensor)."""
        return _wrap(self._data)

    def numpy(self) -> np.ndarray:
        """The underlying array (shares memory with the tensor)."""
        return self._data

    def item(self) -> Any:
        """The value of a one-element tensor as a Python number."""
        if self._data.size != 1:
            raise ValueError(
                f"item: only one-element tensors can be converted to a Python number, "
                f"this one has shape {self.shape}"
            )
        return self._data.item()

    def tolist(self) -> Any:
        return self._data.tolist()

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        if copy:
            return np.array(self._data, dtype=dtype, copy=True)
        return self._data if dtype is None else self._data.astype(dtype)

    def __repr__(self) -> str:
        body = np.array2string(self._data, separator=", ", prefix="tensor(")
        extras = []
        if self.dtype != backend.DEFAULT_FLOAT:
            extras.append(f"dtype={self.dtype}")
        if self._ctx is not None:
            extras.append(f"grad_fn={self._ctx!r}")
        elif self.requires_grad:
            extras.append("requires_grad=True")
        return f"tensor({', '.join([body, *extras])})"

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    def __bool__(self) -> bool:
        if self._data.size != 1:
            raise ValueError(
                f"the truth value of a tensor with {self._data.size} elements is ambiguous; "
                "use .any() or .all()"
            )
        return bool(self._data)

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self.dtype.kind not in "iu" or self._data.size != 1:
            raise TypeError("only one-element integer tensors can be used as an index")
        return int(self._data)

    # ----------------------------------------------------------------- autograd
    def backward(
        self, gradient: Any = None, retain_graph: bool | None = None, create_graph: bool = False
    ) -> None:
        """Accumulate the gradient of this tensor into ``.grad`` of every leaf it depends on.

        A one-element tensor needs no ``gradient``; any other needs one of its shape (the
        vector of the vector-Jacobian product). The graph is freed afterwards unless
        ``retain_graph``; ``create_graph`` records the backward pass for higher derivatives.
        """
        autograd.backward([self], [gradient], retain_graph, create_graph)

    @classmethod
    def _apply_op(cls, op: ops.Op, *inputs: Any) -> Tensor:
        """Hook used by ``ops.call`` inside VJPs: record ``op`` on Tensor inputs."""
        return _apply(op, *inputs)

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """NumPy ufuncs on Tensors: ``np.exp(t)`` and ``ndarray + t`` give Tensors."""
        if method != "__call__" or kwargs:
            what = f".{method}" if method != "__call__" else f" with {sorted(kwargs)}"
            raise _unsupported(f"np.{ufunc.__name__}{what}")
        if ufunc in _DIFFERENTIABLE_UFUNCS:
            return _DIFFERENTIABLE_UFUNCS[ufunc](*inputs)
        if ufunc in _CONSTANT_UFUNCS:
            return _wrap(ufunc(*(x._data if isinstance(x, Tensor) else x for x in inputs)))
        raise _unsupported(f"np.{ufunc.__name__}")

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        """The NumPy functions VJPs and users call on Tensors (np.where, np.sum, ...)."""
        handler = _ARRAY_FUNCTIONS.get(func)
        if handler is None:
            raise _unsupported(f"np.{func.__name__}")
        return handler(*args, **kwargs)

    # ----------------------------------------------------------------- in place
    def _mark_changed(self) -> None:
        """Note an in-place change: graphs that saved the old values will refuse to use them."""
        Tensor._mark_all_changed((self,))

    @staticmethod
    def _mark_all_changed(tensors: Sequence[Tensor]) -> None:
        """Note an in-place change to each of ``tensors`` (an optimizer step), at one tick."""
        tick = _Changes.latest = next(_clock)
        for t in tensors:
            t._version = tick

    def _check_inplace(self, name: str) -> None:
        if self.requires_grad and _grad_state.enabled:
            kind = (
                "a leaf tensor that requires grad"
                if self._ctx is None
                else ("a tensor that is part of a graph")
            )
            raise RuntimeError(
                f"{name}: in-place operation on {kind}; write it out of place "
                "(x = x + y) or wrap it in tg.no_grad()"
            )

    def _inplace(self, name: str, ufunc: np.ufunc, other: Any) -> Tensor:
        self._check_inplace(name)
        value = other._data if isinstance(other, Tensor) else backend.scalar_operand(other)
        try:
            ufunc(self._data, value, out=self._data)
        except (TypeError, ValueError) as exc:
            raise _named_error(name, exc) from exc
        self._mark_changed()
        return self

    def __iadd__(self, other: Any) -> Tensor:
        return self._inplace("add_", np.add, other)

    def __isub__(self, other: Any) -> Tensor:
        return self._inplace("sub_", np.subtract, other)

    def __imul__(self, other: Any) -> Tensor:
        return self._inplace("mul_", np.multiply, other)

    def __itruediv__(self, other: Any) -> Tensor:
        return self._inplace("div_", np.true_divide, other)

    def add_(self, other: Any, alpha: float = 1.0) -> Tensor:
        return self._inplace("add_", np.add, other if alpha == 1.0 else other * alpha)

    def sub_(self, other: Any, alpha: float = 1.0) -> Tensor:
        return self._inplace("sub_", np.subtract, other if alpha == 1.0 else other * alpha)

    def mul_(self, other: Any) -> Tensor:
        return self._inplace("mul_", np.multiply, other)

    def div_(self, other: Any) -> Tensor:
        return self._inplace("div_", np.true_divide, other)

    def copy_(self, source: Any) -> Tensor:
        """Copy ``source`` (broadcast to this shape) into this tensor."""
        self._check_inplace("copy_")
        value = source._data if isinstance(source, Tensor) else backend.as_array(source)
        try:
            np.copyto(self._data, value, casting="same_kind")
        except (TypeError, ValueError) as exc:
            raise _named_error("copy_", exc) from exc
        self._mark_changed()
        return self

    def fill_(self, value: Any) -> Tensor:
        self._check_inplace("fill_")
        self._data.fill(value)
        self._mark_changed()
        return self

    def zero_(self) -> Tensor:
        return self.fill_(0)

    def clamp_(self, min: Any = None, max: Any = None) -> Tensor:
        self._check_inplace("clamp_")
        np.clip(self._data, min, max, out=self._data)
        self._mark_changed()
        return self

    def uniform_(self, low: float = 0.0, high: float = 1.0) -> Tensor:
        self._check_inplace("uniform_")
        self._data[...] = backend.rng().uniform(low, high, self.shape)
        self._mark_changed()
        return self

    def normal_(self, mean: float = 0.0, std: float = 1.0) -> Tensor:
        self._check_inplace("normal_")
        self._data[...] = backend.rng().normal(mean, std, self.shape)
        self._mark_changed()
        return self

    def __setitem__(self, index: Any, value: Any) -> None:
        self._check_inplace("setitem")
        value = value._data if isinstance(value, Tensor) else backend.scalar_operand(value)
        self._data[_raw_index(index)] = value
        self._mark_changed()

    # ----------------------------------------------------------------- arithmetic
    def __add__(self, other: Any) -> Tensor:
        return _binary(ops.Add, self, other)

    def __radd__(self, other: Any) -> Tensor:
        return _binary(ops.Add, other, self)

    def __sub__(self, other: Any) -> Tensor:
        return _binary(ops.Sub, self, other)

    def __rsub__(self, other: Any) -> Tensor:
        return _binary(ops.Sub, other, self)

    def __mul__(self, other: Any) -> Tensor:
        return _binary(ops.Mul, self, other)

    def __rmul__(self, other: Any) -> Tensor:
        return _binary(ops.Mul, other, self)

    def __truediv__(self, other: Any) -> Tensor:
        return _binary(ops.Div, self, other)

    def __rtruediv__(self, other: Any) -> Tensor:
        return _binary(ops.Div, other, self)

    def __pow__(self, exponent: Any) -> Tensor:
        return _binary(ops.Pow, self, exponent)

    def __rpow__(self, base: Any) -> Tensor:
        return _binary(ops.Pow, base, self)

    def __matmul__(self, other: Any) -> Tensor:
        return _binary(ops.MatMul, self, other)

    def __rmatmul__(self, other: Any) -> Tensor:
        return _binary(ops.MatMul, other, self)

    def __neg__(self) -> Tensor:
        return _apply(ops.Neg(), self)

    def __pos__(self) -> Tensor:
        return self

    def __abs__(self) -> Tensor:
        return self.abs()

    # comparisons give bool tensors and carry no gradient
    def __eq__(self, other: Any) -> Tensor:  # type: ignore[override]
        return _compare(np.equal, self, other)

    def __ne__(self, other: Any) -> Tensor:  # type: ignore[override]
        return _compare(np.not_equal, self, other)

    def __lt__(self, other: Any) -> Tensor:
        return _compare(np.less, self, other)

    def __le__(self, other: Any) -> Tensor:
        return _compare(np.less_equal, self, other)

    def __gt__(self, other: Any) -> Tensor:
        return _compare(np.greater, self, other)

    def __ge__(self, other: Any) -> Tensor:
        return _compare(np.greater_equal, self, other)

    def __and__(self, other: Any) -> Tensor:
        return _compare(np.logical_and, self, other)

    def __or__(self, other: Any) -> Tensor:
        return _compare(np.logical_or, self, other)

    def __xor__(self, other: Any) -> Tensor:
        return _compare(np.logical_xor, self, other)

    def __invert__(self) -> Tensor:
        if self.dtype != np.bool_:
            raise TypeError(f"~ is defined for bool tensors, not {self.dtype}")
        return _wrap(~self._data)

    def pow(self, exponent: Any) -> Tensor:
        return self**exponent

    def matmul(self, other: Any) -> Tensor:
        return self @ other

    # ----------------------------------------------------------------- elementwise functions
    def exp(self) -> Tensor:
        return _apply(ops.Exp(), self)

    def log(self) -> Tensor:
        return _apply(ops.Log(), self)

    def sqrt(self) -> Tensor:
        return _apply(ops.Sqrt(), self)

    def abs(self) -> Tensor:
        return _apply(ops.Abs(), self)

    def sin(self) -> Tensor:
        return _apply(ops.Sin(), self)

    def cos(self) -> Tensor:
        return _apply(ops.Cos(), self)

    def tanh(self) -> Tensor:
        return _apply(ops.Tanh(), self)

    def sigmoid(self) -> Tensor:
        return _apply(ops.Sigmoid(), self)

    def relu(self) -> Tensor:
        return _apply(ops.Relu(), self)

    def leaky_relu(self, negative_slope: float = 0.01) -> Tensor:
        return _apply(ops.LeakyRelu(negative_slope), self)

    def gelu(self, approximate: str = "none") -> Tensor:
        return _apply(ops.Gelu(approximate), self)

    def clip(self, min: Any = None, max: Any = None) -> Tensor:
        """Clamp into ``[min, max]``; the gradient passes where ``min <= x <= max``."""
        return _apply(ops.Clip(backend.scalar_operand(min), backend.scalar_operand(max)), self)

    clamp = clip

    def maximum(self, other: Any) -> Tensor:
        return _binary(ops.Maximum, self, other)

    def minimum(self, other: Any) -> Tensor:
        return _binary(ops.Minimum, self, other)

    def astype(self, dtype: Any) -> Tensor:
        """This tensor converted to ``dtype`` (a differentiable cast between float types)."""
        try:
            dtype = backend.as_dtype(dtype)
        except TypeError as exc:
            raise _named_error("astype", exc) from exc
        if dtype == self.dtype:
            return self
        if self.requires_grad and not backend.is_floating(dtype):
            return _wrap(self._data.astype(dtype))
        return _apply(ops.Cast(dtype), self)

    to = astype

    def float(self) -> Tensor:
        return self.astype(backend.float32)

    def double(self) -> Tensor:
        return self.astype(backend.float64)

    def long(self) -> Tensor:
        return self.astype(backend.int64)

    # ----------------------------------------------------------------- reductions
    def sum(self, axis: Any = None, keepdims: bool = False) -> Tensor:
        return _apply(ops.Sum(axis, keepdims), self)

    def mean(self, axis: Any = None, keepdims: bool = False) -> Tensor:
        return _apply(ops.Mean(axis, keepdims), self)

    def var(self, axis: Any = None, keepdims: bool = False, correction: int = 1) -> Tensor:
        """Variance; ``correction=1`` (PyTorch's default) divides by N − 1, 0 by N."""
        return _apply(ops.Var(axis, keepdims, correction), self)

    def std(self, axis: Any = None, keepdims: bool = False, correction: int = 1) -> Tensor:
        return self.var(axis, keepdims, correction).sqrt()

    def max(self, axis: Any = None, keepdims: bool = False) -> Tensor:
        """The maximum; tied maxima share the gradient evenly."""
        return _apply(ops.Max(axis, keepdims), self)

    def min(self, axis: Any = None, keepdims: bool = False) -> Tensor:
        """The minimum; tied minima share the gradient evenly."""
        return _apply(ops.Min(axis, keepdims), self)

    def logsumexp(self, axis: Any = None, keepdims: bool = False) -> Tensor:
        return _apply(ops.LogSumExp(axis, keepdims), self)

    def argmax(self, axis: int | None = None, keepdims: bool = False) -> Tensor:
        """Indices of the maxima (int64, no gradient)."""
        return _index_reduction(np.argmax, self, axis, keepdims)

    def argmin(self, axis: int | None = None, keepdims: bool = False) -> Tensor:
        """Indices of the minima (int64, no gradient)."""
        return _index_reduction(np.argmin, self, axis, keepdims)

    def any(self, axis: Any = None, keepdims: bool = False) -> Tensor:
        return _wrap(np.any(self._data, axis=axis, keepdims=keepdims))

    def all(self, axis: Any = None, keepdims: bool = False) -> Tensor:
        return _wrap(np.all(self._data, axis=axis, keepdims=keepdims))

    def softmax(self, axis: int = -1) -> Tensor:
        return _apply(ops.Softmax(axis), self)

    def log_softmax(self, axis: int = -1) -> Tensor:
        return _apply(ops.LogSoftmax(axis), self)

    # ----------------------------------------------------------------- shape
    def reshape(self, *shape: Any) -> Tensor:
        shape = _shape_args(shape)
        if shape == self.shape:
            return self
        return _apply(ops.Reshape(shape), self)

    view = reshape

    def transpose(self, *axes: Any) -> Tensor:
        """Permute the axes (all reversed when none are given), as NumPy's transpose."""
        axes = _shape_args(axes) if axes else None
        return _apply(ops.Transpose(axes), self)

    def permute(self, *axes: Any) -> Tensor:
        return self.transpose(*axes)

    def swapaxes(self, axis1: int, axis2: int) -> Tensor:
        ndim = self.ndim
        a = ops.normalize_axis(axis1, ndim, "swapaxes")
        b = ops.normalize_axis(axis2, ndim, "swapaxes")
        order = list(range(ndim))
        order[a], order[b] = order[b], order[a]
        return _apply(ops.Transpose(tuple(order)), self)

    def flatten(self, start_axis: int = 0, end_axis: int = -1) -> Tensor:
        """Merge axes ``start_axis..end_axis`` (inclusive) into one, as PyTorch's flatten."""
        if self.ndim == 0:
            return self.reshape(1)
        start = ops.normalize_axis(start_axis, self.ndim, "flatten")
        end = ops.normalize_axis(end_axis, self.ndim, "flatten")
        if start > end:
            raise ValueError(f"flatten: start axis {start_axis} comes after end axis {end_axis}")
        shape = self.shape
        merged = int(np.prod(shape[start : end + 1], dtype=np.int64))
        return self.reshape((*shape[:start], merged, *shape[end + 1 :]))

    def squeeze(self, axis: Any = None) -> Tensor:
        """Remove axes of size 1 (all of them, or the given ones, which must have size 1)."""
        if axis is None:
            axes = tuple(i for i, n in enumerate(self.shape) if n == 1)
        else:
            axes = ops.normalize_axes(axis, self.ndim, "squeeze")
            for a in axes:
                if self.shape[a] != 1:
                    raise ValueError(
                        f"squeeze: axis {a} has size {self.shape[a]}, not 1 (shape {self.shape})"
                    )
        return self.reshape(tuple(n for i, n in enumerate(self.shape) if i not in axes))

    def unsqueeze(self, axis: int) -> Tensor:
        """Insert an axis of size 1 at ``axis`` (which may be ``ndim``, or negative)."""
        ndim = self.ndim
        if not -ndim - 1 <= axis <= ndim:
            raise IndexError(
                f"unsqueeze: axis {axis} is out of range for a tensor of {ndim} dimensions "
                f"(a new axis goes at {-ndim - 1}..{ndim})"
            )
        position = axis % (ndim + 1)
        shape = list(self.shape)
        shape.insert(position, 1)
        return self.reshape(tuple(shape))

    expand_dims = unsqueeze

    def broadcast_to(self, *shape: Any) -> Tensor:
        shape = _shape_args(shape)
        if shape == self.shape:
            return self
        return _apply(ops.BroadcastTo(shape), self)

    expand = broadcast_to

    def __getitem__(self, index: Any) -> Tensor:
        return _apply(ops.GetItem(_raw_index(index)), self)

    def split(self, split_size_or_sections: Any, axis: int = 0) -> list[Tensor]:
        """Split into chunks of ``split_size`` or of the given section sizes (PyTorch's rule)."""
        return split(self, split_size_or_sections, axis)


_TENSOR_TYPES.add(Tensor)


# --------------------------------------------------------------------- the recording engine
def _wrap(data: Any) -> Tensor:
    """A new leaf around an array, bypassing ``__init__``'s checks (for engine results)."""
    t = Tensor.__new__(Tensor)
    t._data = data if isinstance(data, np.ndarray) else np.asarray(data)
    t._grad = None
    t._ctx = None
    t._version = 0
    t._retains_grad = False
    t.requires_grad = False
    return t


def _grad_array(tensor: Tensor) -> np.ndarray:
    """The array of ``tensor``'s gradient (which must exist). Backward stores a plain gradient
    as the bare array, and ``.grad`` wraps it in a Tensor only when someone asks: a training
    step whose optimizer reads the arrays directly builds no Tensor per parameter."""
    grad = tensor._grad
    return grad if type(grad) is np.ndarray else grad._data


def _named_error(name: str, exc: Exception) -> Exception:
    """The error ``exc`` (from NumPy, usually) with ``name`` in front, as a built-in type."""
    message = str(exc)
    if not message.startswith(f"{name}:"):
        message = f"{name}: {message}"
    kind = (
        IndexError
        if isinstance(exc, IndexError)
        else (ValueError if isinstance(exc, ValueError) else TypeError)
    )
    return kind(message)


def _apply(op: ops.Op, *inputs: Any) -> Tensor:
    """Run ``op`` forward on the inputs' arrays, then record it if a gradient will be needed.

    Recording happens only after the forward succeeded, so a failed op leaves no trace.
    Every op of every model runs through here. When every input is a Tensor (the usual
    case), ``map`` collects the arrays and flags in C, whatever the number of inputs.
    """
    if _TENSOR_TYPES.issuperset(map(type, inputs)):
        arrays = list(map(_DATA, inputs))
        needs = list(map(_REQUIRES_GRAD, inputs))
        constants = False
    else:
        arrays = [x._data if isinstance(x, Tensor) else x for x in inputs]
        needs = [isinstance(x, Tensor) and x.requires_grad for x in inputs]
        constants = True
    try:
        data = op.forward(*arrays)
    except (ValueError, IndexError, TypeError) as exc:
        raise _named_error(op.name, exc) from exc
    out = _wrap(data)
    if True in needs and _grad_state.enabled:
        if constants:  # numbers and arrays are no parents
            inputs = tuple([x if isinstance(x, Tensor) else None for x in inputs])
        _record(op, out, inputs, arrays, needs)
    return out


_DATA = operator.attrgetter("_data")
_REQUIRES_GRAD = operator.attrgetter("requires_grad")


def _record(op: ops.Op, out: Tensor, parents: tuple, arrays: list, needs: list) -> None:
    """Link ``out`` to ``op`` and ``op`` to its ``parents`` (input Tensors, None for constants):
    the graph's edges point backwards only.

    ``out`` takes the clock's next tick, newer than all its parents and than every in-place
    change so far: the sweep orders nodes by it and checks saved inputs against it.
    """
    op.parents = parents
    op.inputs = arrays
    op.needs_input_grad = tuple(needs)
    out._ctx = op
    out._seq = next(_clock)
    out.requires_grad = True


def _operand(value: Any) -> Any:
    """An operand for a binary op: Tensors as they are, numbers as weak scalars, arrays raw."""
    if isinstance(value, Tensor) or type(value) in (float, int):
        return value
    if isinstance(value, (numbers.Number, np.generic)):
        return backend.scalar_operand(value)
    if isinstance(value, (np.ndarray, list, tuple)):
        return backend.as_array(value)
    return NotImplemented


def _binary(op_type: type[ops.Op], x: Any, y: Any) -> Tensor:
    x, y = _operand(x), _operand(y)
    if x is NotImplemented or y is NotImplemented:
        return NotImplemented
    return _apply(op_type(), x, y)


def _compare(ufunc: np.ufunc, x: Any, y: Any) -> Tensor:
    y = _operand(y)
    if y is NotImplemented:
        return NotImplemented
    y = y._data if isinstance(y, Tensor) else y
    try:
        return _wrap(ufunc(x._data, y))
    except ValueError as exc:
        raise ValueError(f"{ufunc.__name__}: {exc}") from exc


def _index_reduction(function: Any, x: Tensor, axis: Any, keepdims: bool) -> Tensor:
    if axis is not None:
        axis = ops.normalize_axis(axis, x.ndim, function.__name__)
    try:
        return _wrap(function(x._data, axis=axis, keepdims=keepdims))
    except ValueError as exc:
        raise ValueError(f"{function.__name__}: {exc}") from exc


def _raw_index(index: Any) -> Any:
    """An index with any Tensors in it replaced by their arrays."""
    if isinstance(index, Tensor):
        return index._data
    if isinstance(index, tuple):
        return tuple(i._data if isinstance(i, Tensor) else i for i in index)
    if isinstance(index, list):
        return np.asarray(index)
    return index


def _shape_args(shape: tuple) -> tuple[int, ...]:
    """Accept both ``f(2, 3)`` and ``f((2, 3))``."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return tuple(int(n) for n in shape)


def as_tensor(value: Any) -> Tensor:
    """``value`` as a Tensor (returned unchanged when it already is one)."""
    return value if isinstance(value, Tensor) else Tensor(value)


# --------------------------------------------------------------------- functions of several tensors
def where(condition: Any, x: Any, y: Any) -> Tensor:
    """Elements of ``x`` where ``condition`` holds, else of ``y`` (all three broadcast)."""
    cond = condition._data if isinstance(condition, Tensor) else np.asarray(condition)
    if cond.dtype != np.bool_:
        raise TypeError(f"where: condition must be a bool tensor, got {cond.dtype}")
    return _apply(ops.Where(), cond, _operand(x), _operand(y))


def maximum(x: Any, y: Any) -> Tensor:
    return _binary(ops.Maximum, as_tensor(x), y)


def minimum(x: Any, y: Any) -> Tensor:
    return _binary(ops.Minimum, as_tensor(x), y)


def matmul(x: Any, y: Any) -> Tensor:
    return _binary(ops.MatMul, as_tensor(x), y)


def concatenate(tensors: Sequence[Any], axis: int = 0) -> Tensor:
    """Join tensors along an existing axis."""
    return _apply(ops.Concatenate(axis), *(_operand(t) for t in tensors))


cat = concatenate


def stack(tensors: Sequence[Any], axis: int = 0) -> Tensor:
    """Join tensors of one shape along a new axis."""
    return _apply(ops.Stack(axis), *(_operand(t) for t in tensors))


def split(x: Any, split_size_or_sections: Any, axis: int = 0) -> list[Tensor]:
    """Split along ``axis`` into pieces of ``split_size`` (the last may be smaller) or into
    pieces of the listed sizes, which must add up to the axis length (PyTorch's rule)."""
    x = as_tensor(x)
    axis = ops.normalize_axis(axis, x.ndim, "split")
    length = x.shape[axis]
    if isinstance(split_size_or_sections, (int, np.integer)):
        size = int(split_size_or_sections)
        if size <= 0:
            raise ValueError(f"split: split size must be positive, got {size}")
        sizes = [min(size, length - start) for start in range(0, length, size)] or [0]
    else:
        sizes = [int(n) for n in split_size_or_sections]
        if sum(sizes) != length or any(n < 0 for n in sizes):
            raise ValueError(
                f"split: section sizes {sizes} do not add up to the length {length} of axis {axis}"
            )
    pieces, start = [], 0
    lead = (slice(None),) * axis
    for n in sizes:
        pieces.append(x[(*lead, slice(start, start + n))])
        start += n
    return pieces


# --------------------------------------------------------------------- NumPy interoperability
def _unsupported(name: str) -> TypeError:
    return TypeError(
        f"{name} is not supported on tensorgrad Tensors; use the Tensor method, or "
        "tensor.numpy() to work on the array without gradients"
    )


_DIFFERENTIABLE_UFUNCS = {
    np.add: lambda x, y: _binary(ops.Add, x, y),
    np.subtract: lambda x, y: _binary(ops.Sub, x, y),
    np.multiply: lambda x, y: _binary(ops.Mul, x, y),
    np.true_divide: lambda x, y: _binary(ops.Div, x, y),
    np.power: lambda x, y: _binary(ops.Pow, x, y),
    np.matmul: lambda x, y: _binary(ops.MatMul, x, y),
    np.maximum: lambda x, y: _binary(ops.Maximum, x, y),
    np.minimum: lambda x, y: _binary(ops.Minimum, x, y),
    np.negative: lambda x: _apply(ops.Neg(), x),
    np.positive: lambda x: x,
    np.exp: lambda x: _apply(ops.Exp(), x),
    np.log: lambda x: _apply(ops.Log(), x),
    np.sqrt: lambda x: _apply(ops.Sqrt(), x),
    np.absolute: lambda x: _apply(ops.Abs(), x),
    np.sin: lambda x: _apply(ops.Sin(), x),
    np.cos: lambda x: _apply(ops.Cos(), x),
    np.tanh: lambda x: _apply(ops.Tanh(), x),
    np.square: lambda x: _binary(ops.Mul, x, x),
}

#: ufuncs whose result carries no gradient (comparisons, tests, rounding, sign)
_CONSTANT_UFUNCS = {
    np.equal,
    np.not_equal,
    np.less,
    np.less_equal,
    np.greater,
    np.greater_equal,
    np.logical_and,
    np.logical_or,
    np.logical_xor,
    np.logical_not,
    np.sign,
    np.isnan,
    np.isinf,
    np.isfinite,
    np.floor,
    np.ceil,
    np.rint,
    np.trunc,
    np.signbit,
}


def _reduction(name: str) -> Any:
    def call(x: Any, axis: Any = None, keepdims: bool = False, **kwargs: Any) -> Any:
        if kwargs:
            raise _unsupported(f"np.{name} with {sorted(kwargs)}")
        return getattr(as_tensor(x), name)(axis=axis, keepdims=keepdims)

    return call


_ARRAY_FUNCTIONS = {
    np.shape: lambda x: np.shape(x._data if isinstance(x, Tensor) else x),
    np.ndim: lambda x: np.ndim(x._data if isinstance(x, Tensor) else x),
    np.size: lambda x, axis=None: np.size(x._data if isinstance(x, Tensor) else x, axis),
    np.where: lambda cond, x, y: where(cond, x, y),
    np.broadcast_to: lambda x, shape: as_tensor(x).broadcast_to(shape),
    np.reshape: lambda x, shape: as_tensor(x).reshape(shape),
    np.transpose: lambda x, axes=None: as_tensor(x).transpose(*(axes or ())),
    np.swapaxes: lambda x, a, b: as_tensor(x).swapaxes(a, b),
    np.expand_dims: lambda x, axis: as_tensor(x).unsqueeze(axis),
    np.squeeze: lambda x, axis=None: as_tensor(x).squeeze(axis),
    np.concatenate: lambda xs, axis=0: concatenate(xs, axis),
    np.stack: lambda xs, axis=0: stack(xs, axis),
    np.sum: _reduction("sum"),
    np.mean: _reduction("mean"),
    np.max: _reduction("max"),
    np.amax: _reduction("max"),
    np.min: _reduction("min"),
    np.amin: _reduction("min"),
    np.clip: lambda x, low, high: as_tensor(x).clip(low, high),
    np.zeros_like: lambda x, dtype=None: _wrap(np.zeros_like(x._data, dtype=dtype)),
    np.ones_like: lambda x, dtype=None: _wrap(np.ones_like(x._data, dtype=dtype)),
}


# The backward sweep builds on the Tensor above; imported here, once, rather than in backward()
# on every call (a function-level import costs about 2 µs each time).
from tensorgrad import autograd  # noqa: E402
