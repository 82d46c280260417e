"""The Tensor: an array that remembers the op that made it, so gradients can flow back.

A tensor made by a recorded op points to the engine's record of that call, its *node*
(``grad_fn``, a ``core.node.Node``, which holds the op); the node points to its inputs'
nodes. The node never holds the tensor, so the graph has no reference cycles and is freed
by reference counting as soon as the last tensor of it is dropped.

This file holds the core: attributes, the autograd entry points, conversions, Python's
operators and in-place changes. The math and shape methods are in ``methods/``, a module
per family (``math_methods.py`` and ``shape_methods.py`` compose them), NumPy's protocols in
``numpy_protocol.py``; the engine that runs and records ops in ``engine.py``, the backward
sweep in ``sweep.py``.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from tensorgrad import array_backend, ops
from tensorgrad.core import engine, forward, sweep
from tensorgrad.core.args import SizeOrCount, check_fill_value, check_fits, shape_args, size_args
from tensorgrad.core.engine import apply, apply_inplace, binary, wrap
from tensorgrad.core.math_methods import MathMethods
from tensorgrad.core.methods.arithmetic import remainder, rounded_division
from tensorgrad.core.methods.indexing import raw_index, torch_order
from tensorgrad.core.node import Node
from tensorgrad.core.numpy_protocol import NumpyProtocol
from tensorgrad.core.product_dtypes import check_matmul_dtypes
from tensorgrad.core.shape_methods import ShapeMethods

#: what ``@`` refuses as an operand (PyTorch's TypeError): Python's and NumPy's numbers
_NUMBERS = (bool, int, float, complex, np.generic)


class Tensor(MathMethods, ShapeMethods, NumpyProtocol):
    """An n-dimensional array with reverse-mode automatic differentiation.

    ``Tensor(data)`` wraps an array (sharing it, and keeping its dtype) or copies a list as
    float32; ``Tensor(2, 3)`` is a zero-filled float32 tensor of that shape (PyTorch's legacy
    constructor). Prefer ``tg.tensor(data)``, which infers dtypes as PyTorch does. ``grad``
    is filled in by :meth:`backward` for leaves that require grad.
    """

    __slots__ = (
        "__weakref__",
        "_data",
        "_grad",
        "_hooks",
        "_node",
        "_requires_grad",
        "_tangent",
        "_versions",
        "_view",
    )
    __hash__ = object.__hash__  # ``==`` is elementwise, but graph walks need identity hashing

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        engine.register_tensor_type(cls)  # Parameter, and any other subclass

    def __init__(
        self, *data: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False
    ) -> None:
        if device is not None:
            array_backend.as_device(device)
        if len(data) == 1 and isinstance(data[0], Tensor):
            array = data[0]._data if dtype is None else data[0]._data.astype(dtype)
        elif len(data) == 1 and type(data[0]) is not int:
            value = data[0]
            if isinstance(value, (list, tuple)):
                array = array_backend.as_array(value, dtype or array_backend.DEFAULT_FLOAT)
            elif type(value) in (float, bool):
                raise TypeError(
                    f"Tensor(): data must be a sequence or an array, got {type(value).__name__} "
                    "(tg.tensor(value) makes a 0-d tensor)"
                )
            else:
                array = array_backend.as_array(value, dtype)
        else:  # sizes, as ints (none: an empty tensor, as PyTorch's Tensor())
            shape = shape_args(data) if data else (0,)
            array = array_backend.zeros(shape, dtype or array_backend.DEFAULT_FLOAT)
        self._data = array
        self._grad: Any = None  # see engine.grad_array
        self._node: Node | None = None
        # the same memory as a tensor it was made around (Parameter(t)): the same counter
        shared = len(data) == 1 and isinstance(data[0], Tensor) and array is data[0]._data
        self._versions = data[0]._versions if shared else engine.Version()
        self._view: engine.ViewOf | None = None
        self._hooks: list | None = None
        self._requires_grad = False
        self._tangent: Any = None  #: forward mode's tangent, inside a dual level (core.forward)
        if requires_grad:
            self.requires_grad_(True)

    # ----------------------------------------------------------------- attributes
    @property
    def data(self) -> Tensor:
        """The values, detached: a tensor sharing this one's memory but not its graph or its
        version counter (PyTorch's ``.data``; changes through it are not tracked)."""
        return wrap(self._data)

    @data.setter
    def data(self, value: Any) -> None:
        self._data = value._data if isinstance(value, Tensor) else array_backend.as_array(value)
        engine.mark_changed((self,))

    @property
    def grad(self) -> Tensor | None:
        """The accumulated gradient (a Tensor of this tensor's shape and dtype), or None."""
        grad = self._grad
        if type(grad) is np.ndarray:  # stored bare by backward; a Tensor from now on
            grad = self._grad = wrap(grad)
        return grad

    @grad.setter
    def grad(self, value: Any) -> None:
        if value is not None:
            value = (
                value
                if isinstance(value, Tensor)
                else Tensor(array_backend.as_array(value, self.dtype))
            )
            if value.shape != self.shape:
                raise ValueError(
                    f"grad: assigned gradient has shape {value.shape}, "
                    f"tensor has shape {self.shape}"
                )
        self._grad = value

    @property
    def shape(self) -> tuple[int, ...]:
        return self._data.shape

    @property
    def size(self) -> SizeOrCount:
        """NumPy's element count, which is also PyTorch's method: ``x.size`` is an int,
        ``x.size()`` the shape and ``x.size(0)`` the length of dimension 0."""
        return SizeOrCount(self._data.shape)

    @property
    def dtype(self) -> np.dtype:
        return self._data.dtype

    @property
    def device(self) -> array_backend.device:
        return array_backend.CPU

    #: PyTorch's device flags: every tensor is on the CPU
    is_cuda = False
    is_xpu = False
    is_mps = False
    is_meta = False
    is_cpu = True

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    ndimension = dim

    def numel(self) -> int:
        return self._data.size

    nelement = numel

    def element_size(self) -> int:
        return self._data.itemsize

    @property
    def itemsize(self) -> int:
        return self._data.itemsize

    @property
    def nbytes(self) -> int:
        return self._data.nbytes

    @property
    def requires_grad(self) -> bool:
        """Whether operations on this tensor are recorded for gradients (set it on a leaf,
        as in PyTorch: ``x.requires_grad = True``)."""
        if self._view is not None:
            engine.refresh(self, strict=False)
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self.requires_grad_(value)

    @property
    def is_leaf(self) -> bool:
        """True for tensors not made by a recorded op: gradients accumulate only into leaves."""
        return self.grad_fn is None

    @property
    def grad_fn(self) -> Node | None:
        """The node (the record of the op's call) that made this tensor, or None for a leaf;
        its ``op`` is the op, its ``name`` the op's name."""
        if self._view is not None:
            engine.refresh(self, strict=False)
        return self._node

    @property
    def _version(self) -> int:
        """The tick of the latest in-place change to this tensor's memory (0: none)."""
        return self._versions.tick

    def is_floating_point(self) -> bool:
        return self._data.dtype.kind == "f"

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set ``requires_grad`` on a leaf in place; returns the tensor."""
        if requires_grad and not array_backend.is_floating(self.dtype):
            raise RuntimeError(
                "requires_grad: only floating-point tensors can require gradients, "
                f"this one is {self.dtype}"
            )
        if not requires_grad and self.grad_fn is not None:
            raise RuntimeError(
                "requires_grad: only a leaf's flag can be turned off; use .detach() for a "
                "non-leaf tensor"
            )
        self._requires_grad = bool(requires_grad)
        return self

    def retain_grad(self) -> None:
        """Keep ``.grad`` for this non-leaf tensor too when backward runs."""
        if not self.requires_grad:
            raise RuntimeError("retain_grad: the tensor does not require grad")
        if self._node is not None:
            self._node.retained = weakref.ref(self)

    @property
    def retains_grad(self) -> bool:
        node = self.grad_fn
        return node is not None and node.retained is not None and node.retained() is self

    # ----------------------------------------------------------------- conversions
    def detach(self) -> Tensor:
        """The same memory, cut off from the graph. An in-place change to either is seen by
        both (they share one version counter, as in PyTorch)."""
        t = wrap(self._data)
        t._versions = self._versions
        return t

    def detach_(self) -> Tensor:
        """Cut this tensor off from its graph, in place (it becomes a leaf); not for a view,
        whose base would still be in the graph (PyTorch refuses it too)."""
        if self._view is not None:
            raise RuntimeError("detach_: can't detach views in-place; use detach() instead")
        self._node, self._requires_grad = None, False
        return self

    def clone(self, memory_format: Any = None) -> Tensor:
        """A copy in new memory; the gradient flows back to this tensor."""
        return apply(ops.Clone(), self)

    # ----------------------------------------------------------------- new tensors like this
    # (tg.zeros and the other factories are in creation.py, which builds on the Tensor; these
    # share their argument checks through args.py)
    def new_tensor(
        self, data: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False
    ) -> Tensor:
        """``data`` as a new tensor (always copied), of this tensor's dtype unless ``dtype``
        is given: ``tg.tensor(data, dtype=self.dtype)``."""
        if isinstance(data, Tensor):
            data = data._data
        array = array_backend.as_array(data, self.dtype if dtype is None else dtype, copy=True)
        return Tensor(array, device=device, requires_grad=requires_grad)

    def new_zeros(
        self, *size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False
    ) -> Tensor:
        """Zeros of ``size``, of this tensor's dtype unless ``dtype`` is given."""
        shape = size_args(size, "new_zeros")
        array = array_backend.zeros(shape, self._dtype_or(dtype))
        return Tensor(array, device=device, requires_grad=requires_grad)

    def new_ones(
        self, *size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False
    ) -> Tensor:
        """Ones of ``size``, of this tensor's dtype unless ``dtype`` is given."""
        shape = size_args(size, "new_ones")
        array = array_backend.ones(shape, self._dtype_or(dtype))
        return Tensor(array, device=device, requires_grad=requires_grad)

    def new_empty(
        self, *size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False
    ) -> Tensor:
        """A tensor of ``size`` (zeros, as ``tg.empty``), of this tensor's dtype."""
        return self.new_zeros(*size, dtype=dtype, device=device, requires_grad=requires_grad)

    def new_full(
        self,
        size: Any,
        fill_value: Any,
        dtype: Any = None,
        device: Any = None,
        requires_grad: bool = False,
    ) -> Tensor:
        """``fill_value`` (cast) in a tensor of ``size``, of this tensor's dtype."""
        if isinstance(fill_value, Tensor):
            fill_value = fill_value.item()
        check_fill_value(fill_value, "new_full")
        shape = size_args(((size,) if isinstance(size, int) else size,), "new_full")
        check_fits(fill_value, self._dtype_or(dtype), "new_full")
        array = array_backend.full(shape, fill_value, self._dtype_or(dtype))
        return Tensor(array, device=device, requires_grad=requires_grad)

    def _dtype_or(self, dtype: Any) -> np.dtype:
        """``dtype`` as a NumPy dtype, this tensor's when None (for the ``new_*`` methods)."""
        return self.dtype if dtype is None else array_backend.as_dtype(dtype)

    def contiguous(self, memory_format: Any = None) -> Tensor:
        """This tensor if its memory is row-major (C-contiguous), else a row-major copy that
        the gradient flows through; ``is_contiguous()`` holds afterwards and ``view`` works."""
        return self if self._data.flags.c_contiguous else apply(ops.Clone("C"), self)

    def is_contiguous(self, memory_format: Any = None) -> bool:
        return bool(self._data.flags.c_contiguous)

    def numpy(self, force: bool = False) -> np.ndarray:
        """The underlying array (sharing memory with the tensor). Unlike PyTorch this works
        on tensors that require grad too: the array simply carries no gradient."""
        return self._data

    def cpu(self) -> Tensor:
        return self

    def cuda(self, *args: Any, **kwargs: Any) -> Tensor:
        raise array_backend.UnsupportedError(
            "cuda(): tensorgrad runs on the CPU only (see docs/porting.md); use .to('cpu')"
        )

    def item(self) -> Any:
        """The value of a one-element tensor as a Python number."""
        if self._data.size != 1:  # PyTorch: RuntimeError here, ValueError in float(t): both
            raise array_backend.ShapeError(
                f"item: a Tensor with {self._data.size} elements cannot be converted to a "
                f"Python number (shape {self.shape})"
            )
        return self._data.item()

    def tolist(self) -> Any:
        return self._data.tolist()

    def __repr__(self) -> str:
        body = np.array2string(self._data, separator=", ", prefix="tensor(")
        extras = []
        if self._data.size == 0 and self.shape != (0,):
            extras.append(f"size={self.shape}")
        implied = self.dtype == array_backend.DEFAULT_FLOAT or (
            self._data.size and self.dtype in (array_backend.int64, array_backend.bool_)
        )  # PyTorch's rule for when repr shows the dtype
        if not implied:
            extras.append(f"dtype={self.dtype}")
        if self._tangent is not None:
            extras.append(f"tangent={wrap(forward.as_array(self._tangent))!r}")
        if self.grad_fn is not None:
            extras.append(f"grad_fn={self._node!r}")
        elif self.requires_grad:
            extras.append("requires_grad=True")
        return f"tensor({', '.join([body, *extras])})"

    def __format__(self, spec: str) -> str:
        """A one-element tensor formats as its number (``f"{loss:.4f}"``), as in PyTorch."""
        if self._data.size == 1 and spec:
            return format(self.item(), spec)
        return format(str(self), spec)

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
            raise RuntimeError(
                f"Boolean value of Tensor with {self._data.size} elements is ambiguous; use "
                ".any() or .all()"
            )
        return bool(self._data)

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self.dtype.kind not in "iu" or self._data.size != 1:
            raise TypeError("only one-element integer tensors can be converted to an index")
        return int(self._data)

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        """DLPack export (zero-copy): ``np.from_dlpack(t)``, ``torch.from_dlpack(t)``."""
        return self._data.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self) -> Any:
        return self._data.__dlpack_device__()

    # ----------------------------------------------------------------- autograd
    def backward(
        self, gradient: Any = None, retain_graph: bool | None = None, create_graph: bool = False
    ) -> None:
        """Accumulate the gradient of this tensor into ``.grad`` of every leaf it depends on.

        A one-element tensor needs no ``gradient``; any other needs one of its shape (the
        vector of the vector-Jacobian product). The graph is freed afterwards unless
        ``retain_graph``; ``create_graph`` records the backward pass for higher derivatives.
        """
        if retain_graph is None:
            retain_graph = create_graph
        seed = sweep.seed(self, gradient, create_graph, "backward")
        sweep.run((self,), (seed,), retain_graph, create_graph)

    def register_hook(self, hook: Callable[[Tensor], Tensor | None]) -> _Handle:
        """Call ``hook(grad)`` when this tensor's gradient is computed; a returned tensor
        replaces the gradient. Returns a handle whose ``remove()`` takes the hook off."""
        _check_hook("register_hook", self, hook)  # brings a view up to date
        if self._node is not None:
            hooks = self._node.hooks
            if hooks is None:
                hooks = self._node.hooks = []
            hooks.append(hook)
            return _Handle(hooks, hook)
        return self._leaf_hook("grad", hook)

    def register_post_accumulate_grad_hook(self, hook: Callable[[Tensor], None]) -> _Handle:
        """Call ``hook(tensor)`` on this leaf after backward has accumulated its ``.grad``
        (PyTorch's name; data-parallel training averages gradients from here)."""
        _check_hook("register_post_accumulate_grad_hook", self, hook)
        if self._node is not None:
            raise RuntimeError(
                "register_post_accumulate_grad_hook: post accumulate grad hooks cannot be "
                "registered on non-leaf tensors"
            )
        return self._leaf_hook("post_accumulate", hook)

    def _leaf_hook(self, kind: str, hook: Callable[..., Any]) -> _Handle:
        if self._hooks is None:
            self._hooks = []
        entry = (kind, hook)
        self._hooks.append(entry)
        return _Handle(self._hooks, entry)

    @classmethod
    def _apply_op(cls, op: ops.Op, *inputs: Any) -> Tensor:
        """Hook used by ``ops.call`` inside VJPs: record ``op`` on Tensor inputs."""
        return apply(op, *inputs)

    # ----------------------------------------------------------------- arithmetic
    def __add__(self, other: Any) -> Tensor:
        return binary(ops.Add, self, other)

    def __radd__(self, other: Any) -> Tensor:
        return binary(ops.Add, other, self)

    def __sub__(self, other: Any) -> Tensor:
        return binary(ops.Sub, self, other)

    def __rsub__(self, other: Any) -> Tensor:
        return binary(ops.Sub, other, self)

    def __mul__(self, other: Any) -> Tensor:
        return binary(ops.Mul, self, other)

    def __rmul__(self, other: Any) -> Tensor:
        return binary(ops.Mul, other, self)

    def __truediv__(self, other: Any) -> Tensor:
        return binary(ops.Div, self, other)

    def __rtruediv__(self, other: Any) -> Tensor:
        return binary(ops.Div, other, self)

    def __pow__(self, exponent: Any) -> Tensor:
        return binary(ops.Pow, self, exponent)

    def __rpow__(self, base: Any) -> Tensor:
        return binary(ops.Pow, base, self)

    def __matmul__(self, other: Any) -> Tensor:
        if isinstance(other, (*_NUMBERS, list, tuple)):  # PyTorch's TypeError, from Python
            return NotImplemented
        check_matmul_dtypes("matmul", self, other)
        return binary(ops.MatMul, self, other)

    def __rmatmul__(self, other: Any) -> Tensor:
        if isinstance(other, (*_NUMBERS, list, tuple)):
            return NotImplemented
        check_matmul_dtypes("matmul", other, self)
        return binary(ops.MatMul, other, self)

    def __floordiv__(self, other: Any) -> Tensor:
        return rounded_division(self, other, "floor")

    def __rfloordiv__(self, other: Any) -> Tensor:
        return rounded_division(other, self, "floor")

    def __mod__(self, other: Any) -> Tensor:
        return remainder(ops.Remainder, self, other)

    def __rmod__(self, other: Any) -> Tensor:
        return remainder(ops.Remainder, other, self)

    def __neg__(self) -> Tensor:
        return apply(ops.Neg(), self)

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
        return _compare(np.bitwise_and, self, other)

    def __or__(self, other: Any) -> Tensor:
        return _compare(np.bitwise_or, self, other)

    def __xor__(self, other: Any) -> Tensor:
        return _compare(np.bitwise_xor, self, other)

    def __lshift__(self, other: Any) -> Tensor:
        return _compare(np.left_shift, self, other)

    def __rshift__(self, other: Any) -> Tensor:
        return _compare(np.right_shift, self, other)

    # a number on the left: 2 & t, 2 << t
    def __rand__(self, other: Any) -> Tensor:
        return _compare(np.bitwise_and, other, self)

    def __ror__(self, other: Any) -> Tensor:
        return _compare(np.bitwise_or, other, self)

    def __rxor__(self, other: Any) -> Tensor:
        return _compare(np.bitwise_xor, other, self)

    def __rlshift__(self, other: Any) -> Tensor:
        return _compare(np.left_shift, other, self)

    def __rrshift__(self, other: Any) -> Tensor:
        return _compare(np.right_shift, other, self)

    @engine.reads_values
    def __invert__(self) -> Tensor:
        if self.dtype.kind == "f":
            raise TypeError(f"~ is defined for bool and integer tensors, not {self.dtype}")
        return wrap(~self._data)

    # ----------------------------------------------------------------- in place
    # Each is recorded as PyTorch records it when a gradient will be needed (see
    # engine.apply_inplace): a tensor in a graph gets a new node; a leaf that requires grad
    # can be changed only under no_grad.
    def __iadd__(self, other: Any) -> Tensor:
        return apply_inplace(ops.Add(), self, _inplace_operand(other))

    def __isub__(self, other: Any) -> Tensor:
        return apply_inplace(ops.Sub(), self, _inplace_operand(other))

    def __imul__(self, other: Any) -> Tensor:
        return apply_inplace(ops.Mul(), self, _inplace_operand(other))

    def __itruediv__(self, other: Any) -> Tensor:
        return apply_inplace(ops.Div(), self, _inplace_operand(other))

    def add_(self, other: Any, alpha: float = 1) -> Tensor:
        return apply_inplace(ops.Add(), self, _inplace_operand(other, alpha))

    def sub_(self, other: Any, alpha: float = 1) -> Tensor:
        if alpha != 1:  # other * alpha would make a bool a number that Sub no longer refuses
            ops.Sub.refuse_bools("sub_", self, other)
        return apply_inplace(ops.Sub(), self, _inplace_operand(other, alpha))

    def mul_(self, other: Any) -> Tensor:
        return apply_inplace(ops.Mul(), self, _inplace_operand(other))

    def div_(self, other: Any) -> Tensor:
        return apply_inplace(ops.Div(), self, _inplace_operand(other))

    def pow_(self, exponent: Any) -> Tensor:
        return apply_inplace(ops.Pow(), self, _inplace_operand(exponent))

    def clamp_(self, min: Any = None, max: Any = None) -> Tensor:
        from tensorgrad.core.methods.pointwise import _bound

        low, high = _bound(min), _bound(max)
        if low is None and high is None:
            raise ValueError("clamp_: at least one of min and max must be given")
        return apply_inplace(ops.Clip(), self, low, high)

    clip_ = clamp_

    def relu_(self) -> Tensor:
        return apply_inplace(ops.Relu(), self)

    def neg_(self) -> Tensor:
        return apply_inplace(ops.Neg(), self)

    def abs_(self) -> Tensor:
        return apply_inplace(ops.Abs(), self)

    def exp_(self) -> Tensor:
        _float_result_in_place(self, "exp_")
        return apply_inplace(ops.Exp(), self)

    def log_(self) -> Tensor:
        _float_result_in_place(self, "log_")
        return apply_inplace(ops.Log(), self)

    def sqrt_(self) -> Tensor:
        _float_result_in_place(self, "sqrt_")
        return apply_inplace(ops.Sqrt(), self)

    def sigmoid_(self) -> Tensor:
        _float_result_in_place(self, "sigmoid_")
        return apply_inplace(ops.Sigmoid(), self)

    def tanh_(self) -> Tensor:
        _float_result_in_place(self, "tanh_")
        return apply_inplace(ops.Tanh(), self)

    def copy_(self, src: Any, non_blocking: bool = False) -> Tensor:
        """Copy ``src`` (broadcast to this shape, cast to this dtype) into this tensor; the
        gradient flows to ``src``."""
        value = src if isinstance(src, Tensor) else array_backend.as_array(src)
        if isinstance(value, Tensor) and value.dtype != self.dtype:
            value = value.to(self.dtype)
        elif isinstance(value, np.ndarray) and value.dtype != self.dtype:
            value = value.astype(self.dtype)
        if len(value.shape) > self.ndim:  # NumPy would drop src's leading 1s; PyTorch refuses
            raise RuntimeError(
                f"copy_: output with shape {list(self.shape)} doesn't match the broadcast shape "
                f"{list(np.broadcast_shapes(self.shape, value.shape))}"
                if _broadcasts(self.shape, value.shape)
                else f"copy_: the size of src {list(value.shape)} must match or broadcast to "
                f"the tensor's {list(self.shape)}"
            )
        return apply_inplace(ops.SetItem(Ellipsis), self, value)

    def fill_(self, value: Any) -> Tensor:
        if isinstance(value, Tensor) and value.ndim:
            raise RuntimeError(f"fill_: value must be a 0-d tensor, got shape {value.shape}")
        if isinstance(value, str):
            raise TypeError(f"fill_: value must be a number, got {value!r}")
        return apply_inplace(ops.SetItem(Ellipsis), self, _inplace_operand(value))

    def zero_(self) -> Tensor:
        return self.fill_(0)

    def masked_fill_(self, mask: Any, value: Any) -> Tensor:
        mask_array = mask._data if isinstance(mask, Tensor) else np.asarray(mask)
        if mask_array.dtype != np.bool_:
            raise TypeError(f"masked_fill_: mask must be a bool tensor, got {mask_array.dtype}")
        mask_array = np.broadcast_to(mask_array, self.shape)
        return apply_inplace(ops.SetItem(mask_array), self, _inplace_operand(value))

    # ----------------------------------------------------------------- random (core/sampling.py)
    def uniform_(self, a: float = 0.0, b: float = 1.0, *, generator: Any = None) -> Tensor:
        """Fill with samples from U(a, b), from ``generator`` or the global generator."""
        from tensorgrad.core import sampling

        return sampling.uniform_(self, a, b, generator=generator)

    def normal_(self, mean: float = 0.0, std: float = 1.0, *, generator: Any = None) -> Tensor:
        """Fill with samples from N(mean, std²), from ``generator`` or the global generator."""
        from tensorgrad.core import sampling

        return sampling.normal_(self, mean, std, generator=generator)

    def bernoulli_(self, p: Any = 0.5, *, generator: Any = None) -> Tensor:
        """Fill with 1 (probability ``p``, a number or a broadcasting tensor) or 0."""
        from tensorgrad.core import sampling

        return sampling.bernoulli_(self, p, generator=generator)

    def bernoulli(self, p: float | None = None, *, generator: Any = None) -> Tensor:
        """``tg.bernoulli(self)``: 1 with this tensor's probabilities, else 0."""
        from tensorgrad.core import sampling

        return sampling.bernoulli(self, p, generator=generator)

    def multinomial(
        self, num_samples: int, replacement: bool = False, *, generator: Any = None
    ) -> Tensor:
        """``tg.multinomial(self, ...)``: category indices drawn by these weights."""
        from tensorgrad.core import sampling

        return sampling.multinomial(self, num_samples, replacement, generator=generator)

    def __setitem__(self, index: Any, value: Any) -> None:
        """``x[index] = value``; recorded (``value``'s gradient flows) when a gradient will be
        needed, as in PyTorch."""
        value = _inplace_operand(value)
        if isinstance(value, Tensor) and value.dtype != self.dtype:
            value = value.to(self.dtype)
        shape = np.shape(value)
        if shape and shape[0] == 1:  # PyTorch drops a value's leading 1s: y[0] = tensor([7])
            lead = next((i for i, n in enumerate(shape) if n != 1), len(shape))
            value = value.reshape(shape[lead:])
        index = raw_index(index)
        split = torch_order(index)
        if split is not None:  # PyTorch's order: write through the view the integers select
            self[split[0]][split[1]] = value
            return
        engine.inplace_setitem(self, index, value)


engine.register_tensor_type(Tensor)


class _Handle:
    """What ``register_hook`` returns: ``remove()`` takes the hook off again."""

    def __init__(self, hooks: list, entry: Any) -> None:
        self._hooks, self._entry = hooks, entry

    def remove(self) -> None:
        if self._entry in self._hooks:
            self._hooks.remove(self._entry)


def _check_hook(name: str, tensor: Tensor, hook: Any) -> None:
    if not tensor.requires_grad:
        raise RuntimeError(
            f"{name}: cannot register a hook on a tensor that doesn't require gradient"
        )
    if not callable(hook):
        raise TypeError(f"{name}: hook must be callable, got {type(hook).__name__}")


def _inplace_operand(value: Any, alpha: float = 1) -> Any:
    """The second operand of an in-place op: a Tensor, a weak number or an array."""
    value = engine.operand(value)
    if value is NotImplemented:
        raise TypeError(f"in-place operand must be a tensor, an array or a number, got {value!r}")
    return value if alpha == 1 else value * alpha


def _random_fill_check(name: str, tensor: Tensor) -> None:
    if tensor.dtype.kind != "f":
        raise RuntimeError(f"{name}: only floating-point tensors can be filled, got {tensor.dtype}")


_BITWISE = (np.bitwise_and, np.bitwise_or, np.bitwise_xor, np.left_shift, np.right_shift)


def _compare(ufunc: np.ufunc, x: Any, y: Any) -> Any:
    """``ufunc(x, y)`` without gradient (a comparison, a bitwise op); one of the two is a
    Tensor, the other any operand."""
    x, y = engine.operand(x), engine.operand(y)
    if x is NotImplemented or y is NotImplemented:
        return NotImplemented
    a, y = x._data if isinstance(x, Tensor) else x, y._data if isinstance(y, Tensor) else y
    if ufunc in _BITWISE:  # PyTorch: shapes first, then no float kernel (nor bool shifts)
        try:
            np.broadcast_shapes(np.shape(a), np.shape(y))
        except ValueError as exc:
            raise engine.named_error(ufunc.__name__, exc) from exc
        kind = array_backend.result_type(a, y).kind
        if kind == "f" or (kind == "b" and ufunc in _BITWISE[3:]):
            raise NotImplementedError(
                f'{ufunc.__name__}: "{ufunc.__name__}" not implemented for '
                f"{array_backend.result_type(a, y)} tensors"
            )
    if array_backend.needs_promotion(a, y):  # compared in PyTorch's result type, as binary ops
        dtype = array_backend.result_type(a, y)  # are: int32 tensor == -1.9999999999999998 is
        if dtype != np.result_type(a, y):  # compared in float32, where the two are equal
            a, y = engine._cast(a, dtype), engine._cast(y, dtype)
    try:
        if engine.state.vmapping:  # inside vmap: the batch axes lined up (core.batching)
            out = engine.batched_values(ufunc, (x, y), (a, y))
            if out is not None:
                return out
        return wrap(ufunc(a, y))
    except (ValueError, TypeError) as exc:
        raise engine.named_error(ufunc.__name__, exc) from exc


def _broadcasts(*shapes: tuple[int, ...]) -> bool:
    try:
        np.broadcast_shapes(*shapes)
    except ValueError:
        return False
    return True


def _float_result_in_place(x: Tensor, name: str) -> None:
    """A function whose result is floating, in place of an integer or bool tensor: PyTorch's
    error (its result would have to be cast down), not NumPy's casting error."""
    if x.dtype.kind != "f":
        raise RuntimeError(
            f"{name}: result type Float can't be cast to the desired output type {x.dtype}"
        )
