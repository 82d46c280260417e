"""A differential fuzz against PyTorch itself (skipped where PyTorch is not installed):
hypothesis draws a PyTorch-named call from a table that spans the API (pointwise functions,
binary operators with broadcasting and numbers on either side, reductions, shape ops, indexing,
matrix products, ``nn.functional``, creation functions), inputs with 0-d, empty, size-1 and
broadcast dimensions in bool, int32, int64, float32 and float64, each as a contiguous tensor, a
transposed view or a strided view, and runs the very same code with ``lib = torch`` and
``lib = tensorgrad``.

The two must agree:

* where PyTorch raises, tensorgrad raises an exception of PyTorch's type (a subclass is
  fine: ``array_backend.ShapeError`` is a RuntimeError and a ValueError), so code that catches
  PyTorch's exception catches ours;
* where PyTorch returns, tensorgrad returns the same dtypes, shapes and values (NaN where
  PyTorch has NaN; float32 within a tolerance that grows with the number of elements an
  output element may depend on), and, for float64 inputs, the same gradients of a random
  weighted sum of the outputs.

Deliberate differences are listed in ``DIFFERENCES`` (each one in docs/porting.md) and
skipped, nothing else. The default suite runs each family's fuzz derandomized (a fixed
sequence of examples; 800 calls in all, seconds); ``-m slow`` runs fifteen times as
many. ``tests/core/test_api_fuzz.py`` is the same idea against NumPy references, for CI
without PyTorch.
"""

from __future__ import annotations

import itertools
import operator
import warnings
import zlib
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tensorgrad as tg
from tests.ops.registry.api import API

torch = pytest.importorskip("torch")

FAST = settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
SLOW = settings(FAST, max_examples=1500)

DTYPES = ("bool", "int32", "int64", "float32", "float64")
#: shapes that broadcast against each other in most pairs, with 0-d, empty and size-1 dims
SHAPES = ((), (1,), (3,), (0,), (2, 3), (1, 3), (2, 1), (2, 0), (3, 2), (2, 1, 3), (1, 2, 3))
LAYOUTS = ("C", "T", "S")  # contiguous, a transposed view, a strided view


# --------------------------------------------------------------------------- inputs
def make_array(seed: int, shape: tuple, dtype: str, special: bool) -> np.ndarray:
    """Random values of ``dtype``: small integers, floats in ±2 (with 0, ±1, ±inf and NaN
    mixed in when ``special``)."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return np.asarray(rng.random(shape) < 0.5)
    if dtype.startswith(("int", "uint")):
        low = 0 if dtype.startswith("u") else -4
        return rng.integers(low, 5, shape).astype(dtype)
    values = rng.uniform(-2, 2, shape)
    if special and values.size:
        picks = rng.random(shape) < 0.4
        values = np.where(
            picks, rng.choice([0.0, 1.0, -1.0, np.inf, -np.inf, np.nan], shape), values
        )
    return np.asarray(values, dtype=dtype)


def build(lib: Any, array: np.ndarray, layout: str, requires_grad: bool) -> tuple[Any, Any]:
    """``(leaf, view)``: a tensor of ``lib`` holding ``array``'s values in ``layout`` (the
    view), made from the leaf that gets the gradient."""
    if layout == "T" and array.ndim >= 2:
        leaf = lib.tensor(np.ascontiguousarray(np.swapaxes(array, -1, -2)))
        leaf.requires_grad_(requires_grad)
        return leaf, leaf.transpose(-1, -2)
    if layout == "S" and array.ndim >= 1:
        leaf = lib.tensor(np.repeat(array, 2, axis=-1))
        leaf.requires_grad_(requires_grad)
        return leaf, leaf[..., ::2]
    leaf = lib.tensor(array.copy())
    leaf.requires_grad_(requires_grad)
    return leaf, leaf


class Raised:
    def __init__(self, exc: BaseException, where: str) -> None:
        self.exc, self.where = exc, where

    def __repr__(self) -> str:
        return f"{type(self.exc).__name__} in {self.where}: {self.exc}"


def flat(result: Any) -> list[Any]:
    if isinstance(result, (tuple, list)) and not isinstance(result, (torch.Size, tg.Size)):
        return [item for part in result for item in flat(part)]
    return [result]


def is_tensor(value: Any) -> bool:
    return isinstance(value, (tg.Tensor, torch.Tensor))


def dtype_name(dtype: Any) -> str:
    return str(dtype).removeprefix("torch.")


def run(lib: Any, fn: Callable[..., Any], args: tuple, layouts: tuple, grad: bool) -> Any:
    """``fn(lib, *tensors)`` described as comparable values, with the leaves' gradients of
    a weighted sum of the floating outputs (``grad``); or where it raised. The inputs hold
    inf and NaN on purpose: the values are compared, so NumPy's warnings say nothing more."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _run(lib, fn, args, layouts, grad)


def _run(lib: Any, fn: Callable[..., Any], args: tuple, layouts: tuple, grad: bool) -> Any:
    leaves, inputs = [], []
    for value, layout in zip(args, layouts, strict=True):
        if isinstance(value, np.ndarray):
            leaf, view = build(lib, value, layout, grad and value.dtype.kind == "f")
            leaves.append(leaf)
            inputs.append(view)
        else:
            inputs.append(value)
    try:
        outputs = flat(fn(lib, *inputs))
    except Exception as exc:
        return Raised(exc, "call")
    described, loss = [], None
    weights = np.random.default_rng(0)
    for out in outputs:
        if is_tensor(out) and any(n < 0 for n in out.shape):
            # PyTorch's expand lets a negative size through where another size is 0 (its
            # element count, 0, passes its overflow check): no tensor, so count it as raising
            # (docs/porting.md); tensorgrad must raise PyTorch's RuntimeError there
            return Raised(RuntimeError(f"a tensor of negative size {list(out.shape)}"), "call")
        if is_tensor(out):
            array = out.detach().numpy().copy()
            described.append(("tensor", dtype_name(out.dtype), tuple(array.shape), array))
            if grad and out.requires_grad and dtype_name(out.dtype).startswith("float"):
                w = lib.tensor(weights.standard_normal(array.shape), dtype=out.dtype)
                term = (out * w).sum()
                loss = term if loss is None else loss + term
        elif isinstance(out, (torch.Size, tg.Size)):
            described.append(("size", tuple(out)))
        elif isinstance(out, (torch.dtype, np.dtype)):
            described.append(("dtype", dtype_name(out)))
        else:
            described.append(("value", out))
    grads = []
    if loss is not None:
        try:
            loss.backward()
        except Exception as exc:
            return Raised(exc, "backward")
        for leaf in leaves:
            if leaf.requires_grad:
                g = leaf.grad
                grads.append(np.zeros(leaf.shape) if g is None else _array(g))
    return described, grads


def _array(gradient: Any) -> np.ndarray:
    """A gradient as an array (PyTorch's ZeroTensor, sgn's at 0, must be asked with force)."""
    if isinstance(gradient, torch.Tensor):
        return gradient.numpy(force=True).copy()
    return gradient.numpy().copy()


def tolerance(dtype: str, args: tuple) -> float:
    """float32: a few ulps per element an output may sum (the inputs' sizes bound it);
    float64 a tight bound; integers and bools exact."""
    terms = 1 + sum(np.size(a) for a in args if isinstance(a, np.ndarray))
    if dtype in ("float32", "float16"):
        return 8 * float(np.finfo(np.float32).eps) * terms
    if dtype == "float64":
        return 1e-12 * terms
    return 0.0


def _special(args: tuple) -> bool:
    return any(isinstance(a, np.ndarray) and a.dtype.kind == "f" and not np.isfinite(a).all()
               for a in args)  # fmt: skip


def _empty(args: tuple) -> bool:
    return any(isinstance(a, np.ndarray) and a.size == 0 for a in args)


def _integral(args: tuple) -> bool:
    return any(isinstance(a, np.ndarray) and a.dtype.kind != "f" for a in args)


#: the deliberate differences (docs/porting.md, "What differs"), by the call's name: a
#: predicate of the arguments saying where they apply; such calls are not compared
DIFFERENCES: dict[str, Callable[[tuple], bool]] = {
    # relu passes the gradient through NaN in PyTorch; tensorgrad's is 0 there
    "relu": _special,
    # with infinite logits PyTorch's fused formula gives NaN; tensorgrad the limit
    "binary_cross_entropy_with_logits": _special,
    # a maximum that is NaN: tensorgrad sends the gradient to the NaN, PyTorch makes every
    # element's gradient NaN (it counts the elements equal to the maximum: none)
    "amax": _special,
    "amin": _special,
    "max": _special,
    "min": _special,
    # elementwise, against a NaN: the NaN gets the gradient, the other input none; PyTorch's
    # backward gives both the whole gradient (and its own JVP only the NaN's tangent)
    "maximum": _special,
    "minimum": _special,
    # composed with where: an infinite difference gives a NaN gradient (PyTorch: the slope)
    "smooth_l1_loss": _special,
    # x ** 0.5 at -inf: PyTorch's slope (an rsqrt) is NaN, NumPy's (-inf) ** -0.5 is 0
    "pow_half": _special,
    # PyTorch's mT of a 0-d tensor is a deprecated identity; tensorgrad refuses it
    "mT": lambda args: args[0].ndim == 0,
    # PyTorch checks neither the dim of an empty tensor's roll nor an empty tensor's dtype
    # for kernels it then does not run (softmax of an empty int64 tensor, a matrix product
    # of an empty int64 and a float32 tensor); tensorgrad checks them always
    "roll": _empty,
    "softmax": lambda args: _empty(args) and _integral(args),
    "log_softmax": lambda args: _empty(args) and _integral(args),
}
#: float64 gradients PyTorch computes with a float32 constant (docs/porting.md): hardsigmoid's
#: CPU kernel multiplies by ``1.0f / 6.0f``, 3e-8 relative from tensorgrad's exact 1/6
GRADIENT_TOLERANCE: dict[str, float] = {"hardsigmoid": 1e-7}
#: float64 values PyTorch computes less exactly (docs/porting.md): its trigamma (polygamma
#: n=1) is off by up to ~5e-10 relative; tensorgrad's (SciPy's) agrees with mpmath
VALUE_TOLERANCE: dict[str, float] = {"polygamma": 2e-9, "polygamma_": 2e-9}

for _product in ("matmul", "@", "mm", "bmm", "dot", "outer", "lib.matmul"):
    DIFFERENCES[_product] = _empty


def _bool(args: tuple) -> bool:
    return any(isinstance(a, np.ndarray) and a.dtype == np.bool_ for a in args)


# relu's siblings pass no gradient through NaN either (relu's difference, above)
for _relu in ("relu_", "relu6"):
    DIFFERENCES[_relu] = _special
# gelu of inf in float32: PyTorch's vectorised kernel gives NaN, tensorgrad the limit, inf
DIFFERENCES["gelu"] = _special

# the in-place logical ops of a float tensor that requires grad: PyTorch leaves its gradient
# function as it was (the gradient passes through unchanged); tensorgrad's is 0, the value's
for _logical in ("logical_and_", "logical_or_", "logical_xor_", "logical_not_"):
    DIFFERENCES[_logical] = lambda args: any(
        isinstance(a, np.ndarray) and a.dtype.kind == "f" for a in args
    )

# abs of bools: tensorgrad gives the bools back, PyTorch has no kernel (tensorgrad is the
# more permissive, as test_api_fuzz.py's reference allows)
for _abs in ("abs", "abs_", "absolute", "absolute_"):
    DIFFERENCES[_abs] = _bool
# interpolation of integers: PyTorch refuses them or not by the input's memory layout (its
# channels-last kernels have no integer version); tensorgrad has no memory formats
DIFFERENCES["interpolate"] = DIFFERENCES["upsample"] = _integral


def _narrow_index(args: tuple) -> bool:
    return any(isinstance(a, np.ndarray) and a.dtype.kind in "iu" and a.dtype != np.int64
               for a in args)  # fmt: skip


# any integer dtype indexes and encodes in tensorgrad (docs/porting.md); PyTorch asks for
# int64 in places (take's index, one_hot's, nll_loss's target: also uint8)
DIFFERENCES["take"] = DIFFERENCES["one_hot"] = DIFFERENCES["nll_loss"] = _narrow_index


def _also(name: str, predicate: Callable[[tuple], bool]) -> None:
    """Add a class of deliberate difference to ``name``'s (keeping any it has)."""
    before = DIFFERENCES.get(name)
    DIFFERENCES[name] = predicate if before is None else lambda a: before(a) or predicate(a)


# the elementwise losses refuse an input and a target of other shapes (docs/porting.md);
# PyTorch warns and broadcasts
for _loss in ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "soft_margin_loss"):
    _also(_loss, lambda args: len(args) > 1 and np.shape(args[0]) != np.shape(args[1]))

# an empty tensor of a dtype a kernel refuses: tensorgrad checks the dtype anyway, PyTorch
# returns before its check (docs/porting.md)
for _name in ("batch_norm", "linear", "inner", "scaled_dot_product_attention", "softmin",
              "median", "bernoulli", "normal", "normal_", "randn_like", "kthvalue"):  # fmt: skip
    _also(_name, lambda args: _empty(args) and _integral(args))

# products of bools: tensorgrad refuses them all, as PyTorch's matrix products do; PyTorch's
# inner, einsum and tensordot give a result where their decomposition reaches an elementwise
# kernel instead; its kron of non-contiguous bools fails in a view tensorgrad does not take
for _name in ("inner", "einsum", "tensordot", "kron"):
    _also(_name, _bool)


def _mixed(args: tuple) -> bool:
    return len({a.dtype for a in args if isinstance(a, np.ndarray)}) > 1


# products of mixed dtypes, likewise: refused (PyTorch's matrix products' error), where
# PyTorch's einsum and tensordot reach an elementwise kernel for a size-1 contraction; and
# tensordot contracts dims of one size only (PyTorch's broadcasts a contracted dim of size 1)
_also("einsum", _mixed)
_also("tensordot", lambda args: _mixed(args) or (
    len(args) == 2 and np.shape(args[0])[-2:] != np.shape(args[1])[:2]))  # fmt: skip

#: PyTorch's failures where tensorgrad returns, by the error's message: its kron of some
#: non-contiguous layouts fails in a view (docs/porting.md); tensorgrad's returns the product
THEIR_FAILURES: dict[str, str] = {"kron": "view size is not compatible"}


# the limits where PyTorch's formulas meet inf/inf or inf·0: copysign's gradient at ±inf is
# ±1 (PyTorch: NaN); aminmax sends a NaN's gradient to the NaN, as amax and amin do; the mean
# of std_mean and var_mean of a tensor holding inf is inf (PyTorch's one pass: NaN); along a
# length-1 dim logcumsumexp is the identity, its gradient 1 at -inf (PyTorch: NaN); digamma
# and polygamma at their poles (0, -1, -2, ...) are inf (PyTorch's trigamma: a large number),
# and their slopes at ±inf the limits (PyTorch: NaN)
for _name in ("copysign", "copysign_", "aminmax", "std_mean", "var_mean", "logcumsumexp"):
    _also(_name, _special)
# among tied values kthvalue's index is the first in a stable sort (PyTorch's quickselect
# reports another, by no rule a port can rely on)
_also("kthvalue", lambda args: bool(args) and isinstance(args[0], np.ndarray)
      and np.unique(args[0]).size < args[0].size)  # fmt: skip
# soft_margin_loss's slope at an infinite margin is its limit, ±1/N or 0 (PyTorch: inf/inf)
_also("soft_margin_loss", _special)
# kl_div's gradient for a target of 0 is -input: t log t taken as flat there (PyTorch: NaN)
_also("kl_div", lambda args: len(args) > 1 and bool(np.any(np.asarray(args[1]) == 0)))
for _name in ("digamma", "digamma_", "polygamma", "polygamma_"):
    _also(_name, lambda args: any(isinstance(a, np.ndarray) and a.dtype.kind in "iuf"
                                  and bool(np.any(np.isinf(a) | ((a <= 0) & (np.floor(a) == a))))
                                  for a in args))  # fmt: skip


def _no_channels(args: tuple) -> bool:
    return bool(args) and np.ndim(args[0]) >= 2 and np.shape(args[0])[1] == 0


# a convolution of an input without channels: PyTorch returns early, with no output channels
# either and before its kernel's dtype check (so of bools too); tensorgrad's result has the
# weight's output channels (zeros: an empty sum), and it refuses bools always
DIFFERENCES["conv1d"] = DIFFERENCES["conv2d"] = _no_channels


def _empty_attention_of_other_sizes(args: tuple) -> bool:
    q, k, v = (np.shape(a) for a in args[:3])
    empty = any(0 in shape for shape in (q, k, v))
    return empty and (q[-1:] != k[-1:] or k[-2:-1] != v[-2:-1])


# attention with an empty operand: PyTorch returns zeros of (*query[:-1], Ev) without
# checking that the sizes fit; tensorgrad checks them always (docs/porting.md)
DIFFERENCES["scaled_dot_product_attention"] = _empty_attention_of_other_sizes

#: where both raise but PyTorch's error type is an accident of its implementation, any type
#: passes (docs/porting.md): a 2-D input to avg_pool2d (and lp_pool2d), unfold or baddbmm
#: reaches PyTorch's dimension wrap first (IndexError; tensorgrad's ShapeError is a
#: RuntimeError), tensordot's dims beyond the ranks likewise, and index_fill and index_copy
#: of an empty tensor fail in PyTorch's storage check (RuntimeError; tensorgrad's IndexError
#: names the index out of range)
ANY_ERROR_TYPE = {"avg_pool2d", "lp_pool2d", "unfold", "baddbmm", "baddbmm_", "tensordot",
                  "index_fill", "index_fill_", "index_copy", "index_copy_"}  # fmt: skip
#: the same for checks PyTorch makes in another order than tensorgrad, where a call breaks
#: two rules at once (a 0-d input of a dtype the kernel refuses: which error comes first)
ANY_ERROR_TYPE |= {"cosine_similarity", "cross_entropy", "embedding", "group_norm",
                   "instance_norm", "mv", "nll_loss"}  # fmt: skip


def assert_agree(
    name: str, fn: Callable[..., Any], args: tuple, layouts: tuple, values: bool = True
) -> None:
    """PyTorch and tensorgrad agree on ``fn(lib, *args)`` (see the module docstring); with
    ``values=False`` (random results) on what raises, the dtypes and the shapes only."""
    if name in DIFFERENCES and DIFFERENCES[name](args):
        return
    floats = [a.dtype for a in args if isinstance(a, np.ndarray) and a.dtype.kind == "f"]
    grad = bool(floats) and all(d == np.float64 for d in floats) and values
    theirs = run(torch, fn, args, layouts, grad)
    if isinstance(theirs, Raised) and theirs.where == "backward":
        grad = False  # PyTorch has no derivative here: compare the values only
        theirs = run(torch, fn, args, layouts, grad)
    ours = run(tg, fn, args, layouts, grad)
    where = f"{name} of {describe_args(args, layouts)}"
    if isinstance(theirs, Raised):
        if not isinstance(ours, Raised) and THEIR_FAILURES.get(name, "\0") in str(theirs.exc):
            return
        assert isinstance(ours, Raised), f"{where}: PyTorch raises {theirs!r}; tensorgrad returns"
        assert name in ANY_ERROR_TYPE or isinstance(ours.exc, type(theirs.exc)), (
            f"{where}: PyTorch raises {theirs!r}; tensorgrad {ours!r}"
        )
        return
    assert not isinstance(ours, Raised), f"{where}: tensorgrad raises {ours!r}; PyTorch returns"
    (their_values, their_grads), (our_values, our_grads) = theirs, ours
    assert len(our_values) == len(their_values), f"{where}: {len(our_values)} outputs"
    for k, (a, b) in enumerate(zip(our_values, their_values, strict=True)):
        assert a[0] == b[0], f"{where}, output {k}: {a[0]}, PyTorch's a {b[0]}"
        if b[0] != "tensor":
            if not values:
                continue
            same = a[1] == b[1] or repr(a[1]) == repr(b[1])  # NaN in a list or a number
            assert same, f"{where}, output {k}: {a[1]!r}, PyTorch's {b[1]!r}"
            continue
        assert a[1] == b[1], f"{where}, output {k}: dtype {a[1]}, PyTorch's {b[1]}"
        assert a[2] == b[2], f"{where}, output {k}: shape {a[2]}, PyTorch's {b[2]}"
        if not values:
            continue
        tol = max(tolerance(b[1], args), VALUE_TOLERANCE.get(name, 0.0))
        np.testing.assert_allclose(
            a[3].astype(np.float64) if a[3].dtype != np.bool_ else a[3],
            b[3].astype(np.float64) if b[3].dtype != np.bool_ else b[3],
            rtol=tol, atol=tol, equal_nan=True, err_msg=f"{where}, output {k}",
        )  # fmt: skip
    # float64 inputs; a float32 output on the way (a dtype= cast) rounds the gradient too
    float32 = any(v[0] == "tensor" and v[1] == "float32" for v in their_values)
    grad_tol = tolerance("float32", args) if float32 else GRADIENT_TOLERANCE.get(name, 1e-9)
    for k, (g, h) in enumerate(zip(our_grads, their_grads, strict=True)):
        np.testing.assert_allclose(
            g, h, rtol=grad_tol, atol=grad_tol, equal_nan=True, err_msg=f"{where}: gradient {k}"
        )


def describe_args(args: tuple, layouts: tuple) -> str:
    parts = []
    for a, lay in zip(args, layouts, strict=True):
        if isinstance(a, np.ndarray):
            parts.append(f"{a.dtype}{list(a.shape)}{'' if lay == 'C' else lay}={a.tolist()}")
        else:
            parts.append(repr(a))
    return "(" + ", ".join(parts) + ")"


# --------------------------------------------------------------------------- drawing
@st.composite
def tensor_args(draw: Any, count: int, dtype: Any = None, shape: Any = None) -> tuple:
    """``count`` arrays (shapes from SHAPES, one dtype or each its own) and their layouts."""
    same_dtype = draw(st.booleans())
    first = draw(st.sampled_from(DTYPES)) if dtype is None else dtype
    special = draw(st.integers(0, 3)) == 0
    arrays, layouts = [], []
    for i in range(count):
        d = first if same_dtype or i == 0 or dtype is not None else draw(st.sampled_from(DTYPES))
        s = draw(st.sampled_from(SHAPES)) if shape is None else shape
        arrays.append(make_array(draw(st.integers(0, 2**32 - 1)), s, d, special))
        layouts.append(draw(st.sampled_from(LAYOUTS)))
    return tuple(arrays), tuple(layouts)


class Named:
    """``data`` that remembers the call's name (the draw labelled "name") for the message."""

    def __init__(self, data: Any) -> None:
        self.data, self.name = data, ""

    def draw(self, strategy: Any, label: Any = None) -> Any:
        value = self.data.draw(strategy, label=label)
        if label == "name":
            self.name = value
        return value


def check(data: Any, table: dict[str, Any]) -> None:
    family = data.draw(st.sampled_from(sorted(table)), label="family")
    named = Named(data)
    fn, args, layouts = table[family](named)
    assert_agree(named.name or family, fn, args, layouts)


# --------------------------------------------------------------------------- unary
UNARY_METHODS = [
    "abs", "neg", "exp", "log", "log1p", "expm1", "log2", "log10", "sqrt", "rsqrt", "sin", "cos",
    "tan", "tanh", "sigmoid", "relu", "square", "reciprocal", "sign", "floor", "ceil", "round",
    "trunc", "isnan", "isinf", "isfinite", "logical_not", "clone", "float", "double", "long",
    "int", "bool", "t", "flatten", "numel", "dim", "nonzero", "size",
]  # fmt: skip
UNARY_FUNCTIONS = ["abs", "exp", "log", "sqrt", "sin", "tanh", "sigmoid", "floor", "sign", "neg"]
#: one-tensor calls with constant arguments
WITH_ARGUMENTS: dict[str, Callable[..., Any]] = {
    "clamp": lambda lib, x: x.clamp(-1, 1),
    "clamp_min": lambda lib, x: x.clamp(min=0.5),
    "clamp_max_int": lambda lib, x: x.clamp(max=1),
    "pow_2": lambda lib, x: x.pow(2),
    "pow_half": lambda lib, x: x**0.5,
    "rpow": lambda lib, x: 2**x,
    "round_decimals": lambda lib, x: x.round(decimals=1),
    "prod": lambda lib, x: x.prod(),
    "nonzero_tuple": lambda lib, x: x.nonzero(as_tuple=True),
    "tolist": lambda lib, x: x.tolist(),
    "item": lambda lib, x: x.item(),
    "float()": lambda lib, x: float(x),
    "bool()": lambda lib, x: bool(x),
    "len": lambda lib, x: len(x),
    "new_zeros": lambda lib, x: x.new_zeros(2),
    "new_full": lambda lib, x: x.new_full((2,), 3),
    "new_tensor": lambda lib, x: x.new_tensor([1, 2]),
    "zero_": lambda lib, x: x.clone().zero_(),
    "fill_": lambda lib, x: x.clone().fill_(2.5),
    "clamp_": lambda lib, x: x.clone().clamp_(0, 1),
    "type_as": lambda lib, x: x.type_as(lib.tensor([1.5])),
    "masked_fill_tensor": lambda lib, x: x.masked_fill(x > 0, lib.tensor(3)),
    "squeeze_tuple": lambda lib, x: x.squeeze((0, -1)),
    "max_dim_0d": lambda lib, x: x.max(0),
    "diag": lambda lib, x: x.diag(),
    "view_dtype_like": lambda lib, x: x.view(-1),
    "outer_self": lambda lib, x: x.flatten().outer(x.flatten()),
    "where_self": lambda lib, x: x.where(x > 0, 0),
}


def _unary(data: Any) -> tuple:
    name = data.draw(st.sampled_from(UNARY_METHODS + [f"lib.{n}" for n in UNARY_FUNCTIONS]
                                     + ["-x", "~x", "abs(x)"] + sorted(WITH_ARGUMENTS)),
                     label="name")  # fmt: skip
    args, layouts = data.draw(tensor_args(1))
    if name in WITH_ARGUMENTS:
        return WITH_ARGUMENTS[name], args, layouts
    if name == "-x":
        fn = lambda lib, x: -x  # noqa: E731
    elif name == "~x":
        fn = lambda lib, x: ~x  # noqa: E731
    elif name == "abs(x)":
        fn = lambda lib, x: abs(x)  # noqa: E731
    elif name.startswith("lib."):
        fn = lambda lib, x: getattr(lib, name[4:])(x)  # noqa: E731
    else:
        fn = lambda lib, x: getattr(x, name)()  # noqa: E731
    return fn, args, layouts


# --------------------------------------------------------------------------- binary
BINARY_OPERATORS = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "**": operator.pow, "%": operator.mod, "//": operator.floordiv, "==": operator.eq,
    "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
    "&": operator.and_, "|": operator.or_, "^": operator.xor, "<<": operator.lshift,
    ">>": operator.rshift,
}  # fmt: skip
BINARY_METHODS = [
    "add", "sub", "mul", "div", "pow", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge",
    "logical_and", "logical_or", "logical_xor", "isclose", "allclose", "equal",
]  # fmt: skip
NUMBERS = st.sampled_from([0, 1, 2, -3, 0.5, -1.5, 2.0, True, False])


def _binary(data: Any) -> tuple:
    name = data.draw(st.sampled_from(sorted(BINARY_OPERATORS) + BINARY_METHODS
                                     + ["add_alpha", "sub_alpha", "div_floor", "div_trunc",
                                        "where", "masked_fill"]), label="name")  # fmt: skip
    with_number = data.draw(st.sampled_from(["none", "left", "right"]), label="number")
    if name in ("where", "masked_fill"):
        cond_dtype = data.draw(st.sampled_from(["bool", "bool", "int64"]))
        (cond,), _ = data.draw(tensor_args(1, dtype=cond_dtype))
        args, layouts = data.draw(tensor_args(2))
        if name == "where":
            if with_number == "left":
                number = data.draw(NUMBERS, label="number")
                return (
                    (lambda lib, c, y: lib.where(c, number, y)),
                    (cond, args[1]),
                    ("C", layouts[1]),
                )
            return (lambda lib, c, x, y: lib.where(c, x, y)), (cond, *args), ("C", *layouts)
        value = data.draw(NUMBERS, label="value")
        return (lambda lib, x, m: x.masked_fill(m, value)), (args[0], cond), (layouts[0], "C")
    if name in BINARY_OPERATORS:
        op = BINARY_OPERATORS[name]
    elif name in ("add_alpha", "sub_alpha"):
        alpha = data.draw(st.sampled_from([2, -1, 0.5, True, False]), label="alpha")
        method = name[:3]
        op = lambda x, y: getattr(x, method)(y, alpha=alpha)  # noqa: E731
    elif name in ("div_floor", "div_trunc"):
        op = lambda x, y: x.div(y, rounding_mode=name[4:])  # noqa: E731
    else:
        op = lambda x, y: getattr(x, name)(y)  # noqa: E731
    if with_number != "none":
        number = data.draw(NUMBERS, label="number")
        (x,), layouts = data.draw(tensor_args(1))
        if with_number == "left" and name in BINARY_OPERATORS:
            return (lambda lib, t: op(number, t)), (x,), layouts
        if name in ("pow", "**") and number == 0.5 and isinstance(data, Named):
            data.name = "pow_half"  # x ** 0.5: its documented difference applies
        return (lambda lib, t: op(t, number)), (x,), layouts
    args, layouts = data.draw(tensor_args(2))
    return (lambda lib, x, y: op(x, y)), args, layouts


# --------------------------------------------------------------------------- reductions
REDUCTIONS = [
    "sum", "mean", "var", "std", "amax", "amin", "max", "min", "argmax", "argmin", "any", "all",
    "logsumexp", "norm", "cumsum", "sort", "argsort", "softmax", "log_softmax", "topk",
]  # fmt: skip
DIMS = st.sampled_from([None, 0, 1, -1, 2, (0,), (0, 1), (-1, 0), ()])
SINGLE_DIMS = st.sampled_from([None, 0, 1, -1, 2])


def _reduction(data: Any) -> tuple:
    name = data.draw(st.sampled_from(REDUCTIONS), label="name")
    single = name in ("argmax", "argmin", "max", "min", "cumsum", "sort", "argsort", "softmax",
                      "log_softmax", "topk")  # fmt: skip
    dim = data.draw(SINGLE_DIMS if single else DIMS, label="dim")
    if name == "logsumexp" and dim is None:
        dim = 0
    keepdim = data.draw(st.booleans(), label="keepdim")
    if name == "logsumexp" and dim == () and not keepdim:
        keepdim = True  # PyTorch 2.13 raises here, tensorgrad reduces all (docs/porting.md)
    if name in ("var", "std") and dim == ():
        dim = None  # PyTorch 2.13's gradient for dim=() is not its own dim=None's (porting.md)
    # the small integer types too, whose sums and products PyTorch accumulates in int64
    small = data.draw(st.sampled_from([None, None, None, "uint8", "int8", "int16"]))
    args, layouts = data.draw(tensor_args(1, dtype=small))
    kwargs: dict[str, Any] = {}
    if dim is not None:
        kwargs["dim"] = dim
    if dim is not None and name in (
        "sum",
        "mean",
        "amax",
        "amin",
        "any",
        "all",
        "logsumexp",
        "norm",
        "var",
        "std",
        "argmax",
        "argmin",
        "max",
        "min",
    ):
        kwargs["keepdim"] = keepdim  # PyTorch's parser wants a dim with keepdim
    if name in ("sum", "cumsum", "mean") and data.draw(st.booleans(), label="with dtype"):
        kwargs["dtype"] = data.draw(st.sampled_from(["int32", "int64", "float64", "float32"]))
    if name in ("var", "std"):
        extra = data.draw(st.sampled_from([{}, {"unbiased": False}, {"correction": 0}]))
        kwargs.update(extra)
    if name in ("sort", "argsort"):
        kwargs["descending"] = data.draw(st.booleans(), label="descending")
    if name == "topk":
        k = data.draw(st.integers(0, 3), label="k")
        largest = data.draw(st.booleans(), label="largest")
        return (lambda lib, x: x.topk(k, **kwargs, largest=largest)), args, layouts
    if name in ("cumsum", "softmax", "log_softmax") and "dim" not in kwargs:
        kwargs["dim"] = 0

    def fn(lib: Any, x: Any) -> Any:
        options = dict(kwargs)
        if "dtype" in options:
            options["dtype"] = getattr(lib, options["dtype"])
        return getattr(x, name)(**options)

    return fn, args, layouts


# --------------------------------------------------------------------------- shape ops
def _shape_op(data: Any) -> tuple:
    name = data.draw(st.sampled_from([
        "reshape", "view", "flatten", "squeeze", "unsqueeze", "transpose", "permute", "expand",
        "broadcast_to", "repeat", "flip", "roll", "narrow", "chunk", "split", "unbind", "cat",
        "stack", "tril", "triu", "diagonal", "repeat_interleave", "movedim_like_T", "mT",
        "contiguous", "unflatten",
    ]), label="name")  # fmt: skip
    dim = data.draw(st.integers(-3, 2), label="dim")
    if name in ("cat", "stack"):
        count = data.draw(st.integers(1, 3))
        args, layouts = data.draw(tensor_args(count, shape=data.draw(st.sampled_from(SHAPES))))
        if data.draw(st.booleans()) and name == "cat":  # PyTorch skips 1-D empty tensors
            args, layouts = (*args, np.zeros(0, args[0].dtype)), (*layouts, "C")
        return (lambda lib, *xs: getattr(lib, name)(list(xs), dim)), args, layouts
    args, layouts = data.draw(tensor_args(1))
    sizes = data.draw(st.lists(st.integers(-1, 3), max_size=3).map(tuple), label="sizes")
    calls: dict[str, Callable[..., Any]] = {
        "reshape": lambda lib, x: x.reshape(*sizes),
        "view": lambda lib, x: x.view(sizes),
        "flatten": lambda lib, x: x.flatten(min(dim, 0), -1),
        "squeeze": lambda lib, x: x.squeeze(dim),
        "unsqueeze": lambda lib, x: x.unsqueeze(dim),
        "transpose": lambda lib, x: x.transpose(dim, -1),
        "permute": lambda lib, x: x.permute(*reversed(range(x.dim()))),
        "expand": lambda lib, x: x.expand(*sizes, *x.shape),
        "broadcast_to": lambda lib, x: x.broadcast_to((*sizes, *(-1 for _ in x.shape))),
        "repeat": lambda lib, x: x.repeat(*sizes),
        "flip": lambda lib, x: x.flip(dim),
        "roll": lambda lib, x: x.roll(2, dim),
        "narrow": lambda lib, x: x.narrow(dim, 0, 1),
        "chunk": lambda lib, x: x.chunk(2, dim),
        "split": lambda lib, x: x.split(1, dim),
        "unbind": lambda lib, x: x.unbind(dim),
        "tril": lambda lib, x: x.tril(dim),
        "triu": lambda lib, x: x.triu(dim),
        "diagonal": lambda lib, x: x.diagonal(dim),
        "repeat_interleave": lambda lib, x: x.repeat_interleave(2, dim if x.dim() else None),
        "movedim_like_T": lambda lib, x: x.T,
        "mT": lambda lib, x: x.mT,
        "contiguous": lambda lib, x: x.contiguous(),
        "unflatten": lambda lib, x: x.unflatten(dim, (1, -1)),
    }
    return calls[name], args, layouts


# --------------------------------------------------------------------------- indexing
INDICES = [
    0, -1, 1, slice(None), slice(1, None), slice(None, None, 2), None, Ellipsis, [0], [0, 0],
    [], (0, slice(None)), (slice(None), 0), (0, slice(None), [0, 1]),
    (0, slice(None, None, 2), [1, 0]),
    ([0, 1], slice(None), [0, 0]), (slice(None), [0]), (Ellipsis, 0), (None, 0), ([1, 0], 0),
    (0, [0, 1]), ([[0], [1]], slice(None)), (slice(None), [0, 1], slice(None)),
]  # fmt: skip


def _indexing(data: Any) -> tuple:
    name = data.draw(st.sampled_from(["getitem", "getitem_mask", "getitem_tensor", "setitem",
                                      "setitem_tensor", "gather", "index_select",
                                      "masked_select"]), label="name")  # fmt: skip
    args, layouts = data.draw(tensor_args(1))
    index = data.draw(st.sampled_from(INDICES), label="index")
    if name == "getitem":
        return (lambda lib, x: x[index]), args, layouts
    if name == "getitem_tensor":  # an integer tensor as the index
        where = np.array(data.draw(st.sampled_from([[0], [1, 0], [[0, 1]], [-1], 0])))
        return (lambda lib, x: x[lib.tensor(where)]), args, layouts
    if name == "getitem_mask":
        mask = make_array(data.draw(st.integers(0, 99)), args[0].shape, "bool", False)
        return (lambda lib, x, m: x[m]), (args[0], mask), (layouts[0], "C")
    if name in ("setitem", "setitem_tensor"):
        value = data.draw(st.sampled_from([1.5, 2, True]), label="value")

        def write(lib: Any, x: Any) -> Any:
            y = x.clone()
            if name == "setitem":
                y[index] = value
            else:
                y[index] = (x[index] * 2).to(x.dtype) if x.dtype != lib.bool else ~x[index]
            return y

        return write, args, layouts
    dim = data.draw(st.integers(-1, 1), label="dim")
    picks = np.array(data.draw(st.sampled_from([[0], [1, 0], [0, 0], [-1], []])), dtype=np.int64)
    if name == "gather":
        return (lambda lib, x: x.gather(dim, lib.tensor(picks).reshape([-1] + [1] * (x.dim() - 1))
                                        if x.dim() else lib.tensor(0))), args, layouts  # fmt: skip
    if name == "index_select":
        return (lambda lib, x: x.index_select(dim, lib.tensor(picks))), args, layouts
    mask = make_array(data.draw(st.integers(0, 99)), args[0].shape, "bool", False)
    return (lambda lib, x, m: x.masked_select(m)), (args[0], mask), (layouts[0], "C")


# --------------------------------------------------------------------------- linear algebra
MATRIX_SHAPES = ((), (3,), (2,), (2, 3), (3, 2), (1, 3), (3, 0), (0, 3), (2, 2, 3), (2, 3, 2),
                 (1, 3, 2))  # fmt: skip


def _linalg(data: Any) -> tuple:
    name = data.draw(
        st.sampled_from(["matmul", "@", "mm", "bmm", "dot", "outer", "lib.matmul"]), label="name"
    )
    dtype = data.draw(st.sampled_from(["float32", "float64", "float64", "int64"]), label="dtype")
    mixed = data.draw(st.integers(0, 5)) == 0
    shapes = [data.draw(st.sampled_from(MATRIX_SHAPES)) for _ in range(2)]
    arrays = tuple(make_array(data.draw(st.integers(0, 99)), s, dtype, False) for s in shapes)
    if mixed:
        arrays = (arrays[0], arrays[1].astype("float32" if dtype != "float32" else "float64"))
    layouts = tuple(data.draw(st.sampled_from(LAYOUTS)) for _ in range(2))
    calls: dict[str, Callable[..., Any]] = {
        "matmul": lambda lib, x, y: x.matmul(y),
        "@": lambda lib, x, y: x @ y,
        "mm": lambda lib, x, y: x.mm(y),
        "bmm": lambda lib, x, y: x.bmm(y),
        "dot": lambda lib, x, y: x.dot(y),
        "outer": lambda lib, x, y: x.outer(y),
        "lib.matmul": lambda lib, x, y: lib.matmul(x, y),
    }
    return calls[name], arrays, layouts


# --------------------------------------------------------------------------- nn.functional
def _functional(data: Any) -> tuple:
    name = data.draw(st.sampled_from([
        "relu", "gelu", "silu", "elu", "leaky_relu", "softplus", "sigmoid", "tanh", "softmax",
        "log_softmax", "linear", "layer_norm", "mse_loss", "l1_loss", "smooth_l1_loss", "pad",
        "avg_pool2d", "max_pool2d", "adaptive_avg_pool2d", "one_hot", "dropout_eval",
        "binary_cross_entropy_with_logits", "normalize_like_layer_norm",
    ]), label="name")  # fmt: skip
    if name == "linear":
        dtype = data.draw(st.sampled_from(["float32", "float64"]))
        n_in, n_out = data.draw(st.integers(0, 3)), data.draw(st.integers(0, 2))
        lead = data.draw(st.sampled_from([(), (2,), (2, 1), (0,)]))
        weight_shape = data.draw(st.sampled_from([(n_out, n_in), (n_in,)]))
        x = make_array(data.draw(st.integers(0, 99)), (*lead, n_in), dtype, False)
        w = make_array(data.draw(st.integers(0, 99)), weight_shape, dtype, False)
        if data.draw(st.booleans()):
            b = make_array(data.draw(st.integers(0, 99)), weight_shape[:-1], dtype, False)
            return (lambda lib, x, w, b: lib.nn.functional.linear(x, w, b)), (x, w, b), ("C",) * 3
        return (lambda lib, x, w: lib.nn.functional.linear(x, w)), (x, w), ("C", "C")
    if name in ("avg_pool2d", "max_pool2d", "adaptive_avg_pool2d"):
        dtype = data.draw(st.sampled_from(DTYPES))
        shape = data.draw(st.sampled_from([(1, 2, 2), (2, 1, 3, 2), (1, 1, 4, 4), (1, 0, 2, 2)]))
        (x,) = (make_array(data.draw(st.integers(0, 99)), shape, dtype, False),)
        if name == "adaptive_avg_pool2d":
            return (lambda lib, x: lib.nn.functional.adaptive_avg_pool2d(x, 1)), (x,), ("C",)
        kernel = data.draw(st.sampled_from([1, 2, (2, 1)]))
        return (lambda lib, x: getattr(lib.nn.functional, name)(x, kernel)), (x,), ("C",)
    if name == "one_hot":
        (x,), _ = data.draw(tensor_args(1, dtype="int64"))
        classes = data.draw(st.sampled_from([-1, 5, 3]))
        return (lambda lib, x: lib.nn.functional.one_hot(x.abs(), classes)), (x,), ("C",)
    if name in ("mse_loss", "l1_loss", "smooth_l1_loss", "binary_cross_entropy_with_logits"):
        shape = data.draw(st.sampled_from(SHAPES))
        args, layouts = data.draw(tensor_args(2, dtype=data.draw(st.sampled_from(
            ["float32", "float64", "float64", "int64"])), shape=shape))  # fmt: skip
        reduction = data.draw(st.sampled_from(["mean", "sum", "none"]))
        return (
            (lambda lib, x, y: getattr(lib.nn.functional, name)(x, y, reduction=reduction)),
            args,
            layouts,
        )
    args, layouts = data.draw(tensor_args(1))
    calls: dict[str, Callable[..., Any]] = {
        "relu": lambda lib, x: lib.nn.functional.relu(x),
        "gelu": lambda lib, x: lib.nn.functional.gelu(x),
        "silu": lambda lib, x: lib.nn.functional.silu(x),
        "elu": lambda lib, x: lib.nn.functional.elu(x),
        "leaky_relu": lambda lib, x: lib.nn.functional.leaky_relu(x, 0.2),
        "softplus": lambda lib, x: lib.nn.functional.softplus(x),
        "sigmoid": lambda lib, x: lib.nn.functional.sigmoid(x),
        "tanh": lambda lib, x: lib.nn.functional.tanh(x),
        "softmax": lambda lib, x: lib.nn.functional.softmax(x, dim=-1),
        "log_softmax": lambda lib, x: lib.nn.functional.log_softmax(x, dim=0),
        "layer_norm": lambda lib, x: lib.nn.functional.layer_norm(x, x.shape[-1:]),
        "normalize_like_layer_norm": lambda lib, x: lib.nn.functional.layer_norm(x, (3,)),
        "pad": lambda lib, x: lib.nn.functional.pad(x, (1, 0)),
        "dropout_eval": lambda lib, x: lib.nn.functional.dropout(x, 0.5, training=False),
    }
    return calls[name], args, layouts


# --------------------------------------------------------------------------- creation
def _creation(data: Any) -> tuple:
    name = data.draw(st.sampled_from(["zeros", "ones", "full", "arange", "linspace", "eye",
                                      "tensor", "zeros_like", "full_like", "as_tensor",
                                      "empty"]), label="name")  # fmt: skip
    dtype = data.draw(st.sampled_from([None, "float64", "float32", "int32", "int64", "bool"]))
    size = data.draw(st.sampled_from([(), (2,), (2, 3), (0,), (-1,), (1, 0)]), label="size")
    keyword = data.draw(st.sampled_from(["star", "tuple", "size="]), label="size as")

    def options(lib: Any) -> dict:
        return {} if dtype is None else {"dtype": getattr(lib, dtype)}

    if name in ("zeros", "ones", "empty"):

        def fn(lib: Any) -> Any:
            make = getattr(lib, name)
            if keyword == "star":
                return make(*size, **options(lib))
            if keyword == "size=":
                return make(size=size, **options(lib))
            return make(size, **options(lib))

        return (lambda lib: list(fn(lib).shape) if name == "empty" else fn(lib)), (), ()
    if name == "full":
        value = data.draw(NUMBERS, label="value")
        return (lambda lib: lib.full(size, value, **options(lib))), (), ()
    if name == "arange":
        numbers = st.sampled_from([0, 1, 3, -2, 0.5, 2.5, -1.5])
        start, end = data.draw(numbers), data.draw(numbers)
        step = data.draw(st.sampled_from([1, 2, -1, 0.5, 0]))
        if dtype not in (None, "float32", "float64") and step == 0.5:
            step = 1  # PyTorch casts a fractional step to the integer dtype first: 0, refused
        return (lambda lib: lib.arange(start, end, step, **options(lib))), (), ()
    if name == "linspace":
        start, end = (
            data.draw(st.sampled_from([0, -2.5, 1, 3.7])),
            data.draw(st.sampled_from([-3.0, 1, 2.5])),
        )
        steps = data.draw(st.integers(0, 6))
        return (lambda lib: lib.linspace(start, end, steps, **options(lib))), (), ()
    if name == "eye":
        n, m = data.draw(st.integers(0, 3)), data.draw(st.sampled_from([None, 0, 2]))
        if m is None:  # PyTorch's parser refuses an explicit None
            return (lambda lib: lib.eye(n, **options(lib))), (), ()
        return (lambda lib: lib.eye(n, m, **options(lib))), (), ()
    if name in ("tensor", "as_tensor"):
        value = data.draw(st.sampled_from([1, 2.5, True, [1, 2], [1.5, 2], [[True], [False]],
                                           [], [[]], [1, 2.5], [True, 2]]))  # fmt: skip
        return (lambda lib: getattr(lib, name)(value, **options(lib))), (), ()
    args, layouts = data.draw(tensor_args(1))
    if name == "zeros_like":
        return (lambda lib, x: lib.zeros_like(x, **options(lib))), args, layouts
    value = data.draw(NUMBERS, label="value")
    return (lambda lib, x: lib.full_like(x, value, **options(lib))), args, layouts


FAMILIES = {
    "unary": {"unary": _unary},
    "binary": {"binary": _binary},
    "reduction": {"reduction": _reduction},
    "shape": {"shape": _shape_op},
    "indexing": {"indexing": _indexing},
    "linalg": {"linalg": _linalg},
    "functional": {"functional": _functional},
    "creation": {"creation": _creation},
}


def fuzz(family: str) -> tuple[Callable[..., None], Callable[..., None]]:
    table = FAMILIES[family]

    def body(data: Any) -> None:
        check(data, table)

    fast = FAST(given(data=st.data())(body))
    slow = pytest.mark.slow(SLOW(given(data=st.data())(body)))
    return fast, slow


test_unary, test_unary_slow = fuzz("unary")
test_binary, test_binary_slow = fuzz("binary")
test_reduction, test_reduction_slow = fuzz("reduction")
test_shape, test_shape_slow = fuzz("shape")
test_indexing, test_indexing_slow = fuzz("indexing")
test_linalg, test_linalg_slow = fuzz("linalg")
test_functional, test_functional_slow = fuzz("functional")
test_creation, test_creation_slow = fuzz("creation")


# --------------------------------------------------------------------------- the public API
def api_cases(name: str) -> list[tuple[tuple, tuple]]:
    """Every ``(arrays, layouts)`` the sweep gives the entry ``name``: each dtype and shape
    (special values mixed into the floating ones), the further tensors of the first's shape
    and dtype, and a mixed-dtype and a broadcast pair or triple, each seeded by the name."""
    info = API[name]
    seed = zlib.crc32(name.encode())
    dtypes = info.dtypes or DTYPES
    shapes = info.shapes or SHAPES
    result = []
    for i, (dtype, shape, special) in enumerate(itertools.product(dtypes, shapes, (False, True))):
        if special and not dtype.startswith("float"):
            continue
        rng = np.random.default_rng(seed + i)
        arrays = [make_array(seed + i + k, shape, dtype, special) for k in range(info.arity)]
        if info.arity > 1 and i % 4 == 1:  # the other tensors of another dtype
            arrays[1:] = [make_array(seed + i + k, shape, str(rng.choice(DTYPES)), special)
                          for k in range(1, info.arity)]  # fmt: skip
        elif info.arity > 1 and i % 4 == 3:  # the others of another shape (broadcasting)
            arrays[1:] = [make_array(seed + i + k, shapes[rng.integers(len(shapes))], dtype,
                                     special) for k in range(1, info.arity)]  # fmt: skip
        layouts = tuple(str(rng.choice(LAYOUTS)) if i % 3 else "C" for _ in arrays)
        result.append((tuple(arrays), layouts))
    return result


def api_slice(name: str, count: int = 4) -> list[tuple[tuple, tuple]]:
    """The default run's derandomized slice: float64 of the entry's first shape (gradients
    compared), and ``count - 1`` more cases drawn by the name's seed."""
    cases = api_cases(name)
    shape = (API[name].shapes or ((2, 3),))[0]
    first = [c for c in cases if all(a.dtype == np.float64 and a.shape == shape and
                                     np.isfinite(a).all() for a in c[0])][:1]  # fmt: skip
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    picks = rng.choice(len(cases), size=min(count - 1, len(cases)), replace=False)
    return first + [cases[i] for i in sorted(picks)]


def check_api(name: str, cases: list[tuple[tuple, tuple]]) -> None:
    info = API[name]
    bare = name.split(".", 1)[1].split("#")[0]
    for arrays, layouts in cases:
        assert_agree(bare, info.call, arrays, layouts, values=not info.random)


#: entries with a known mismatch not fixed yet, each a class of its own: their default slice
#: fails, so each is a strict xfail (a fix makes it pass, and the entry must go)
OPEN: dict[str, str] = {}


#: what the full sweep (``test_api_slow``, every dtype × shape × special value) still finds,
#: by class; expected to fail there, not strictly (a fix lands without editing this)
_ERRORS = "a bad call's error type or check order differs from PyTorch's"
_EMPTY = "empty inputs: PyTorch's kernels return or refuse them case by case"
_DTYPE = "integer or bool inputs: PyTorch's per-kernel dtype support and its errors"
_OTHER = "values or gradients at special values (NaN, ±inf, ±0, ties)"
OPEN_IN_FULL_SWEEP: dict[str, str] = {
    "Tensor.addcdiv": _OTHER,
    "Tensor.prod": _OTHER,
    "tg.remainder": _OTHER,
    "tg.scatter_reduce": _ERRORS,
}


def _marked(strict: bool, table: dict[str, str] = OPEN) -> list[Any]:
    return [pytest.param(name, marks=pytest.mark.xfail(strict=strict, reason=table[name]))
            if name in table else name for name in sorted(API)]  # fmt: skip


@pytest.mark.parametrize("name", _marked(strict=True))
def test_api(name: str) -> None:
    """Each public name against PyTorch, on a small slice of dtypes, shapes and values."""
    check_api(name, api_slice(name))


@pytest.mark.slow
@pytest.mark.parametrize("name", _marked(strict=False, table={**OPEN_IN_FULL_SWEEP, **OPEN}))
def test_api_slow(name: str) -> None:
    """Each public name against PyTorch, on every dtype, shape and special value."""
    check_api(name, api_cases(name))
