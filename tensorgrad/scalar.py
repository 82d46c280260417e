"""A scalar reverse-mode autograd engine: the whole algorithm in one short file.

Every ``Value`` remembers the values it was computed from (``_children``) and, computed during
the forward pass, the local derivative of its result with respect to each of them
(``_local_grads``). ``backward()`` orders the graph so that every node comes after the nodes it
uses, then walks that order in reverse and applies the chain rule, adding to each child's
gradient its local derivative times the node's gradient: ``child.grad += local * node.grad``.
Storing the local derivatives, rather than a closure that
captures its own output as micrograd does, keeps the graph free of reference cycles: a graph is
freed as soon as the last name for it goes away.

Standard library only: this engine is the slow, obviously-correct oracle the NumPy tensor
engine is checked against, so it must share no code with it.
"""

from __future__ import annotations

import itertools
import math
import numbers
import random
from collections.abc import Iterable, Sequence


class Value:
    """A scalar in a computation graph: its ``data``, and after ``backward()`` its ``grad``."""

    __slots__ = ("__weakref__", "_children", "_local_grads", "_op", "data", "grad", "label")

    def __init__(
        self,
        data: float,
        _children: tuple[Value, ...] = (),
        _op: str = "",
        label: str = "",
        _local_grads: tuple[float, ...] = (),
    ) -> None:
        if type(data) is not float and not isinstance(data, numbers.Real):
            raise TypeError(f"Value data must be a real number, got {type(data).__name__}")
        if len(_children) != len(_local_grads):
            raise ValueError("a Value needs one local derivative per child (_local_grads)")
        self.data = float(data)
        self.grad = 0.0
        self._children = _children
        self._local_grads = _local_grads
        self._op = _op
        self.label = label

    def __repr__(self) -> str:
        name = f"label={self.label!r}, " if self.label else ""
        return f"Value({name}data={self.data!r}, grad={self.grad!r})"

    # -- arithmetic --------------------------------------------------------------------------

    def __add__(self, other: Value | float) -> Value:
        other = _operand(other, "+")
        if other is NotImplemented:
            return NotImplemented
        if isinstance(other, Value):
            return _node(self.data + other.data, (self, other), "+", (1.0, 1.0))
        return _node(self.data + other, (self,), "+", (1.0,))

    def __radd__(self, other: Value | float) -> Value:
        return self + other

    def __sub__(self, other: Value | float) -> Value:
        other = _operand(other, "-")
        if other is NotImplemented:
            return NotImplemented
        if isinstance(other, Value):
            return _node(self.data - other.data, (self, other), "-", (1.0, -1.0))
        return _node(self.data - other, (self,), "-", (1.0,))

    def __rsub__(self, other: Value | float) -> Value:
        other = _operand(other, "-")
        if other is NotImplemented:
            return NotImplemented
        return _node(other - self.data, (self,), "-", (-1.0,))

    def __mul__(self, other: Value | float) -> Value:
        other = _operand(other, "*")
        if other is NotImplemented:
            return NotImplemented
        if isinstance(other, Value):
            return _node(self.data * other.data, (self, other), "*", (other.data, self.data))
        return _node(self.data * other, (self,), "*", (other,))

    def __rmul__(self, other: Value | float) -> Value:
        return self * other

    def __truediv__(self, other: Value | float) -> Value:
        other = _operand(other, "/")
        if other is NotImplemented:
            return NotImplemented
        if isinstance(other, Value):
            b = _nonzero_divisor(self.data, other.data)
            out = self.data / b
            return _node(out, (self, other), "/", (1.0 / b, -out / b))
        b = _nonzero_divisor(self.data, other)
        return _node(self.data / b, (self,), "/", (1.0 / b,))

    def __rtruediv__(self, other: Value | float) -> Value:
        other = _operand(other, "/")
        if other is NotImplemented:
            return NotImplemented
        b = _nonzero_divisor(other, self.data)
        out = other / b
        return _node(out, (self,), "/", (-out / b,))

    def __neg__(self) -> Value:
        return _node(-self.data, (self,), "neg", (-1.0,))

    def __pow__(self, exponent: float) -> Value:
        """``x ** p`` for a constant ``p``; d/dx = p * x ** (p - 1)."""
        if isinstance(exponent, Value) or not isinstance(exponent, numbers.Real):
            raise TypeError(
                f"Value ** {type(exponent).__name__}: the exponent must be a constant int or "
                "float (for a variable exponent y use (y * x.log()).exp())"
            )
        x, p = self.data, float(exponent)
        if x == 0.0 and p < 0.0:
            raise ZeroDivisionError(f"0.0 ** {exponent!r}: zero to a negative power")
        if x < 0.0 and not p.is_integer():
            raise ValueError(f"{x!r} ** {exponent!r}: a negative base needs an integer exponent")
        try:
            out = x**p
        except OverflowError:
            raise OverflowError(f"{x!r} ** {exponent!r} overflows a float") from None
        return _node(out, (self,), f"**{exponent!r}", (_power_slope(x, p, out),))

    def __rpow__(self, base: object) -> Value:
        raise TypeError(
            f"{type(base).__name__} ** Value: the exponent must be a constant int or float "
            "(for a constant base c use (x * math.log(c)).exp())"
        )

    # -- functions (NumPy calls these by name on object arrays: np.exp, np.log, ...) ---------

    def exp(self) -> Value:
        try:
            out = math.exp(self.data)
        except OverflowError:
            raise OverflowError(f"exp({self.data!r}) overflows a float") from None
        return _node(out, (self,), "exp", (out,))

    def log(self) -> Value:
        """Natural logarithm; raises ValueError for a non-positive argument."""
        if self.data <= 0.0:
            raise ValueError(f"log({self.data!r}): the argument must be positive")
        return _node(math.log(self.data), (self,), "log", (1.0 / self.data,))

    def tanh(self) -> Value:
        """math.tanh, finite for any input: tanh(1000) is 1.0 and its slope 0.0."""
        t = math.tanh(self.data)
        return _node(t, (self,), "tanh", (1.0 - t * t,))

    def sigmoid(self) -> Value:
        """1 / (1 + e^-x), computed without overflow for large |x|: sigmoid(-1000) is 0.0."""
        x = self.data
        if x >= 0.0:
            s = 1.0 / (1.0 + math.exp(-x))
        else:
            e = math.exp(x)
            s = e / (1.0 + e)
        return _node(s, (self,), "sigmoid", (s * (1.0 - s),))

    def relu(self) -> Value:
        """max(0, x). At the kink x == 0 the derivative is taken as 0 (as PyTorch does)."""
        positive = self.data > 0.0
        return _node(self.data if positive else 0.0, (self,), "relu", (float(positive),))

    def sin(self) -> Value:
        return _node(math.sin(self.data), (self,), "sin", (math.cos(self.data),))

    def cos(self) -> Value:
        return _node(math.cos(self.data), (self,), "cos", (-math.sin(self.data),))

    def sqrt(self) -> Value:
        """Square root; raises ValueError for a negative argument. The slope at 0 is inf."""
        if self.data < 0.0:
            raise ValueError(f"sqrt({self.data!r}): the argument must be non-negative")
        out = math.sqrt(self.data)
        return _node(out, (self,), "sqrt", (0.5 / out if out > 0.0 else math.inf,))

    def __abs__(self) -> Value:
        """|x|. At the kink x == 0 the derivative is taken as 0 (as PyTorch does)."""
        x = self.data
        sign = 1.0 if x > 0.0 else (-1.0 if x < 0.0 else 0.0)
        return _node(abs(x), (self,), "abs", (sign,))

    # -- comparisons by data, for np.maximum / np.max on object arrays; no gradient ----------
    # __eq__ and __hash__ stay object identity: graph walks keep Values in sets and dicts.

    def __lt__(self, other: Value | float) -> bool:
        return self.data < _compare_data(other)

    def __le__(self, other: Value | float) -> bool:
        return self.data <= _compare_data(other)

    def __gt__(self, other: Value | float) -> bool:
        return self.data > _compare_data(other)

    def __ge__(self, other: Value | float) -> bool:
        return self.data >= _compare_data(other)

    # -- the backward pass -------------------------------------------------------------------

    def backward(self) -> None:
        """Add d(self)/d(node) to ``node.grad`` for every node of the graph below ``self``.

        Gradients accumulate, as in micrograd and PyTorch: calling ``backward()`` twice adds
        the gradients twice. Call ``zero_grad()`` first to start from zero. Within one pass a
        node reached along several paths receives the sum of the paths' contributions.

        This pass's gradients are summed in ``pending`` and only then added to ``.grad``:
        propagating ``.grad`` itself would push the previous passes' gradients down again.
        """
        pending: dict[Value, float] = {self: 1.0}  # d(self)/d(node), summed over paths so far
        for node in reversed(topological_order(self)):
            upstream = pending.pop(node)  # complete: every node using `node` came before it
            node.grad += upstream
            for child, local in zip(node._children, node._local_grads, strict=False):
                pending[child] = pending.get(child, 0.0) + local * upstream

    def zero_grad(self) -> None:
        """Set ``grad`` to 0 on this Value and on every Value of the graph below it."""
        for node in topological_order(self):
            node.grad = 0.0


def topological_order(root: Value) -> list[Value]:
    """Every Value of the graph below ``root``, each after all the Values it was computed from.

    Iterative depth-first search with an explicit stack, so that a chain a million operations
    deep works: recursion would stop at Python's limit of about a thousand frames. A node stays
    on the stack while its children are explored above it; when it is on top again, they are
    all placed and it can be. (A node reached along two paths may be pushed twice; ``placed``
    keeps the second copy out.)
    """
    order: list[Value] = []
    explored: set[Value] = set()
    placed: set[Value] = set()
    stack = [root]
    while stack:
        node = stack[-1]
        if node not in explored:
            explored.add(node)
            for child in reversed(node._children):  # reversed: the first child comes first
                if child not in explored:
                    stack.append(child)
        else:
            stack.pop()
            if node not in placed:
                placed.add(node)
                order.append(node)
    return order


def _node(data: float, children: tuple[Value, ...], op: str, local_grads: tuple) -> Value:
    """An op's result: ``Value(...)`` minus its input checks, which an op has already done."""
    out = object.__new__(Value)
    out.data, out.grad, out.label = data, 0.0, ""
    out._children, out._op, out._local_grads = children, op, local_grads
    return out


def _operand(other: object, op: str) -> Value | float:
    """A Value stays a Value and a real number becomes a float; an array defers to NumPy."""
    if isinstance(other, Value):
        return other
    if type(other) in (float, int) or isinstance(other, numbers.Real):
        return float(other)
    if hasattr(other, "__array_ufunc__"):
        return NotImplemented  # let NumPy (or a tensor) handle Value <op> array
    raise TypeError(
        f"unsupported operand for Value {op}: {type(other).__name__} "
        "(expected a Value or a real number)"
    )


def _nonzero_divisor(numerator: float, divisor: float) -> float:
    if divisor == 0.0:
        raise ZeroDivisionError(f"division by zero: {numerator!r} / 0")
    return divisor


def _power_slope(x: float, p: float, out: float) -> float:
    """d(x ** p)/dx = p * x ** (p - 1), computed from ``out = x ** p`` as ``p * out / x``: a
    second power could overflow. At x == 0 (where p >= 0): 1 for p == 1, inf for 0 < p < 1,
    else 0."""
    if x != 0.0:
        return p * out / x
    if p == 1.0:
        return 1.0
    return math.inf if 0.0 < p < 1.0 else 0.0


def _compare_data(other: object) -> float:
    if isinstance(other, Value):
        return other.data
    if isinstance(other, numbers.Real):
        return float(other)
    raise TypeError(f"cannot compare Value with {type(other).__name__}")


# -- a tiny neural network library on Values (micrograd style) --------------------------------


class Module:
    """Something with parameters: ``parameters()`` lists them, ``zero_grad()`` zeroes them."""

    def parameters(self) -> list[Value]:
        return []

    def zero_grad(self) -> None:
        for p in self.parameters():
            p.grad = 0.0


class Neuron(Module):
    """relu(w · x + b), or just w · x + b when ``nonlin`` is False.

    Weights start uniform in [-1, 1] drawn from ``rng`` (``random.Random(0)`` when not given,
    so that construction is deterministic); the bias starts at 0.
    """

    def __init__(self, nin: int, nonlin: bool = True, rng: random.Random | None = None) -> None:
        rng = rng if rng is not None else random.Random(0)
        self.w = [Value(rng.uniform(-1.0, 1.0)) for _ in range(nin)]
        self.b = Value(0.0)
        self.nonlin = nonlin

    def __call__(self, x: Sequence[Value | float]) -> Value:
        if len(x) != len(self.w):
            raise ValueError(f"Neuron expects {len(self.w)} inputs, got {len(x)}")
        total = self.b  # the bias first, then each weighted input in turn
        for weight, value in zip(self.w, x, strict=True):
            total = total + weight * value
        if not self.nonlin:
            return total
        return total.relu()

    def parameters(self) -> list[Value]:
        return [*self.w, self.b]


class Layer(Module):
    """``nout`` neurons reading the same inputs; calling it returns a list of ``nout`` Values."""

    def __init__(
        self, nin: int, nout: int, nonlin: bool = True, rng: random.Random | None = None
    ) -> None:
        rng = rng if rng is not None else random.Random(0)
        self.neurons = [Neuron(nin, nonlin, rng) for _ in range(nout)]

    def __call__(self, x: Sequence[Value | float]) -> list[Value]:
        return [n(x) for n in self.neurons]

    def parameters(self) -> list[Value]:
        return [p for n in self.neurons for p in n.parameters()]


class MLP(Module):
    """Layers of sizes ``nouts``: relu on every layer but the last, which is linear.

    Calling it returns a list with one Value per output (a list even for one output).
    Parameters are ordered layer by layer, neuron by neuron, weights then bias.
    """

    def __init__(self, nin: int, nouts: Sequence[int], rng: random.Random | None = None) -> None:
        rng = rng if rng is not None else random.Random(0)
        widths = [nin, *nouts]
        last = len(nouts) - 1
        self.layers: list[Layer] = []
        for k, (width_in, width_out) in enumerate(itertools.pairwise(widths)):
            self.layers.append(Layer(width_in, width_out, nonlin=k < last, rng=rng))

    @classmethod
    def from_weights(
        cls, weights: Iterable[tuple[Sequence[Sequence[float]], Sequence[float]]]
    ) -> MLP:
        """An MLP with the given ``(W, b)`` per layer: W a nested list of shape (out, in).

        Layer k computes ``W @ x + b`` (relu on all layers but the last), the same as a tensor
        ``x @ W.T + b``, so an identical network can be built in the tensor engine.
        """
        layers = [([list(map(float, row)) for row in W], list(map(float, b))) for W, b in weights]
        if not layers:
            raise ValueError("MLP.from_weights needs at least one (W, b) layer")
        nin = len(layers[0][0][0]) if layers[0][0] else 0
        mlp = cls(nin, [len(W) for W, _ in layers])
        for k, ((W, b), layer) in enumerate(zip(layers, mlp.layers, strict=True)):
            if len(b) != len(W) or any(len(row) != nin for row in W):
                raise ValueError(
                    f"layer {k}: W must have shape ({len(b)}, {nin}) to match b and the "
                    f"previous layer, got rows of lengths {[len(row) for row in W]}"
                )
            for neuron, row, bias in zip(layer.neurons, W, b, strict=True):
                for w, wij in zip(neuron.w, row, strict=True):
                    w.data = wij
                neuron.b.data = bias
            nin = len(W)
        return mlp

    def __call__(self, x: Sequence[Value | float]) -> list[Value]:
        out: Sequence[Value | float] = x
        for layer in self.layers:
            out = layer(out)
        return list(out)

    def parameters(self) -> list[Value]:
        return [p for layer in self.layers for p in layer.parameters()]


# -- forward mode: dual numbers ---------------------------------------------------------------


class Dual:
    """A dual number ``value + tangent·ε`` (ε² = 0): a value and its derivative carried
    together, forward mode on scalars. ``Dual(2.0, 1.0)`` is x = 2 with ẋ = 1; every
    operation pushes the tangent on by the chain rule, ``ḟ(x) = f'(x)·ẋ``, so after
    evaluating a function the output's ``tangent`` is its derivative along the seeded
    direction. No graph is kept: one forward sweep per direction.

    The local derivatives are ``Value``'s own (each op is run on Values and its recorded
    ``_local_grads`` read back), so forward and reverse mode use the same scalar rules and
    raise the same errors (``log`` of a non-positive number, ...).
    """

    __slots__ = ("tangent", "value")

    def __init__(self, value: float, tangent: float = 0.0) -> None:
        for name, x in (("value", value), ("tangent", tangent)):
            if not isinstance(x, numbers.Real):
                raise TypeError(f"Dual {name} must be a real number, got {type(x).__name__}")
        self.value = float(value)
        self.tangent = float(tangent)

    def __repr__(self) -> str:
        return f"Dual(value={self.value!r}, tangent={self.tangent!r})"

    def _binary(self, other: Dual | float, op: str, reflected: bool = False) -> Dual:
        if isinstance(other, Dual):
            operands = [(Value(self.value), self.tangent), (Value(other.value), other.tangent)]
        elif isinstance(other, numbers.Real):
            operands = [(Value(self.value), self.tangent), (float(other), 0.0)]
        else:
            return NotImplemented
        if reflected:
            operands.reverse()
        (a, _), (b, _) = operands
        out = _BINARY_OPS[op](a, b)
        dots = [d for (x, d) in operands if isinstance(x, Value)]
        return Dual(out.data, sum(g * d for g, d in zip(out._local_grads, dots, strict=True)))

    def _unary(self, fn: str) -> Dual:
        out = getattr(Value(self.value), fn)()
        return Dual(out.data, out._local_grads[0] * self.tangent)

    def __add__(self, other: Dual | float) -> Dual:
        return self._binary(other, "+")

    def __radd__(self, other: float) -> Dual:
        return self._binary(other, "+", reflected=True)

    def __sub__(self, other: Dual | float) -> Dual:
        return self._binary(other, "-")

    def __rsub__(self, other: float) -> Dual:
        return self._binary(other, "-", reflected=True)

    def __mul__(self, other: Dual | float) -> Dual:
        return self._binary(other, "*")

    def __rmul__(self, other: float) -> Dual:
        return self._binary(other, "*", reflected=True)

    def __truediv__(self, other: Dual | float) -> Dual:
        return self._binary(other, "/")

    def __rtruediv__(self, other: float) -> Dual:
        return self._binary(other, "/", reflected=True)

    def __neg__(self) -> Dual:
        return self._unary("__neg__")

    def __abs__(self) -> Dual:
        return self._unary("__abs__")

    def __pow__(self, exponent: float) -> Dual:
        out = Value(self.value) ** exponent
        return Dual(out.data, out._local_grads[0] * self.tangent)

    def exp(self) -> Dual:
        return self._unary("exp")

    def log(self) -> Dual:
        return self._unary("log")

    def tanh(self) -> Dual:
        return self._unary("tanh")

    def sigmoid(self) -> Dual:
        return self._unary("sigmoid")

    def relu(self) -> Dual:
        return self._unary("relu")

    def sin(self) -> Dual:
        return self._unary("sin")

    def cos(self) -> Dual:
        return self._unary("cos")

    def sqrt(self) -> Dual:
        return self._unary("sqrt")


_BINARY_OPS = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: a / b,
}


def forward_tangents(root: Value, seeds: dict[Value, float]) -> dict[Value, float]:
    """Forward mode over a recorded graph: the tangent ``v̇`` of every Value below ``root``,
    in topological order, from the inputs' ``seeds`` (inputs not seeded get 0). Each node's
    tangent is ``Σ local_i · child_i``'s tangent, the same local derivatives ``backward()``
    uses, taken in the opposite order. ``forward_tangents(y, {x1: 1.0})[y]`` is dy/dx1."""
    tangents: dict[Value, float] = {}
    for node in topological_order(root):
        if not node._children:
            tangents[node] = float(seeds.get(node, 0.0))
            continue
        tangents[node] = sum(
            local * tangents[child]
            for child, local in zip(node._children, node._local_grads, strict=True)
        )
    return tangents
