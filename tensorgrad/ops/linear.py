"""Linear layers as ops: ``x @ weight.T + bias`` fused, and runs of Linear and ReLU layers as
one op (``linear_chain``), computed as a hand-written MLP step computes them."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from tensorgrad._native import threads
from tensorgrad.ops.activation import Relu
from tensorgrad.ops.base import Op, add_tangents, call
from tensorgrad.ops.sums import column_sums


def _linear(where: str, x: Any, weight: Any, bias: Any) -> Any:
    """``x @ weight.T + bias`` (bias may be None); ``where`` names the op (and the step) in
    errors. A matmul that fails is a shape mismatch; the checks before it catch the shapes
    that would broadcast silently instead."""
    if weight.ndim != 2 or (bias is not None and (bias.ndim != 1 or len(bias) != len(weight))):
        raise ValueError(_linear_error(where, x, weight, bias))
    try:
        out = _matmul_rows(x, weight.T)
    except ValueError:
        raise ValueError(_linear_error(where, x, weight, bias)) from None
    if bias is not None:
        out += bias
    return out


def _matmul_rows(x: Any, matrix: Any) -> Any:
    """``x @ matrix`` for x of shape (..., n): a C-ordered array's leading axes flattened
    into one row axis first, so that BLAS makes one product, not one per leading index
    (NumPy's batched matmul: 20 % slower for a GPT's (32, 32, 64) activations)."""
    if (
        type(x) is np.ndarray
        and type(matrix) is np.ndarray
        and x.ndim > 2
        and x.size
        and x.flags.c_contiguous
        and x.shape[-1] == len(matrix)
    ):
        return threads.matmul(x.reshape(-1, x.shape[-1]), matrix).reshape(*x.shape[:-1], -1)
    return threads.matmul(x, matrix)


def _linear_error(where: str, x: Any, weight: Any, bias: Any) -> str:
    w_shape = weight.shape
    if len(w_shape) != 2:
        return f"{where}: weight must be 2-D (out, in), got shape {w_shape}"
    if bias is not None and bias.shape != w_shape[:1]:
        return (
            f"{where}: bias of shape {bias.shape} does not match weight of shape {w_shape} "
            f"(expected ({w_shape[0]},))"
        )
    return (
        f"{where}: input of shape {x.shape} does not match weight of shape {w_shape} "
        f"(expected input (..., {w_shape[1]}))"
    )


def _linear_vjp(grad: Any, x: Any, weight: Any, need_dx: bool, need_dw: bool, need_db: bool):
    """The gradients (dx, dw, db) of ``x @ weight.T + bias``, each only where needed."""
    dx = _matmul_rows(grad, weight) if need_dx else None
    if grad.ndim != 2:  # (..., out) and (..., in): the batch axes flattened into one
        out_features, in_features = weight.shape
        batch = int(np.prod(grad.shape[:-1]))  # not -1: a size-0 feature axis leaves it open
        grad, x = grad.reshape(batch, out_features), x.reshape(batch, in_features)
    dw = threads.matmul(grad.T, x) if need_dw else None
    db = None
    if need_db:  # on arrays through BLAS (ops/sums.py)
        db = column_sums(grad) if type(grad) is np.ndarray else grad.sum(axis=0)
    return dx, dw, db


def _linear_jvp(tangents: Any, x: Any, weight: Any) -> Any:
    """The tangent of ``x @ weight.T + bias`` from the tangents (ẋ, Ẇ, ḃ), any of them None."""
    tx, tw, tb = (*tangents, None, None)[:3]
    return add_tangents(None if tx is None else tx @ weight.T, None if tw is None else x @ tw.T, tb)


class Linear(Op):
    """``x @ weight.T + bias`` in one op, with PyTorch's (out_features, in_features) weight."""

    batching = "linear"

    def forward(self, x, weight, bias=None):
        return _linear(self.name, x, weight, bias)

    def backward(self, grad, out, x, weight, bias=None):
        needs = self.needs_input_grad
        return _linear_vjp(grad, x, weight, needs[0], needs[1], bias is not None and needs[2])

    def jvp(self, tangents, out, x, weight, bias=None):
        return _linear_jvp(tangents, x, weight)


#: a step of a linear chain: (is it a ReLU, the index of its weight among the parameters, or for
#: a ReLU the number of parameters before it; the index of its bias, or None)
_Step = tuple[bool, int, "int | None"]


def _chain_layout(steps: tuple[str, ...]) -> tuple[tuple[_Step, ...], int]:
    """The steps of a linear chain as :data:`_Step` tuples, and how many parameters they take."""
    layout: list[_Step] = []
    n = 0
    for step in steps:
        if step == "relu":
            layout.append((True, n, None))
        elif step == "linear":
            layout.append((False, n, None))
            n += 1
        elif step == "linear+bias":
            layout.append((False, n, n + 1))
            n += 2
        else:
            raise ValueError(
                f"linear_chain: a step must be 'linear', 'linear+bias' or 'relu', got {step!r}"
            )
    if not layout:
        raise ValueError("linear_chain: needs at least one step")
    return tuple(layout), n


class LinearChain(Op):
    """Linear layers and ReLUs applied in turn, as one op: the forward and backward that a
    hand-written MLP step computes, with one node in the graph for the whole run.

    ``steps`` lists them in order: ``"linear"`` (takes the next input as its weight),
    ``"linear+bias"`` (the next two: weight and bias) or ``"relu"``; the inputs are ``x``
    followed by the weights and biases. A ReLU after another step runs in place on that
    step's fresh output, and backward masks gradients in place where they are its own, as a
    hand-written step does (``d *= h > 0``). ``nn.Sequential`` runs its runs of ``Linear``
    and ``ReLU`` layers as this op.
    """

    name = "linear_chain"
    batching = "linear_chain"
    _layouts: ClassVar[dict[tuple[str, ...], tuple[tuple[_Step, ...], int]]] = {}

    def __init__(self, steps: tuple[str, ...]):
        self.steps = steps = tuple(steps)
        layout = self._layouts.get(steps)
        if layout is None:
            layout = self._layouts[steps] = _chain_layout(steps)
        self.layout, self.n_params = layout
        self.uses_output = self.layout[-1][0]  # a final ReLU's mask is ``out > 0``

    def forward(self, x, *params):
        if len(params) != self.n_params:
            raise TypeError(
                f"{self.name}: steps {self.steps!r} take {self.n_params} weights and biases "
                f"after the input, got {len(params)}"
            )
        values = [x]  # the input of every step, then the output
        for k, (relu, w, b) in enumerate(self.layout):
            if relu:  # in place, except on the chain's input, which is not ours
                x = np.maximum(x, 0, out=x) if k else np.maximum(x, 0)
            else:
                try:
                    x = _linear(self.name, x, params[w], None if b is None else params[b])
                except ValueError as exc:
                    detail = str(exc).removeprefix(f"{self.name}: ")
                    raise ValueError(f"{self.name}: step {k} ({self.steps[k]}): {detail}") from None
            values.append(x)
        self.saved = values
        return x

    def _recorded(self, x: Any, params: tuple) -> list:
        """The values of ``forward``, recorded on Tensors, so that they are differentiable
        (when backward itself is being recorded, for higher derivatives)."""
        values = [x]
        for relu, w, b in self.layout:
            if relu:
                x = call(Relu, x)
            elif b is None:
                x = call(Linear, x, params[w])
            else:
                x = call(Linear, x, params[w], params[b])
            values.append(x)
        return values

    def backward(self, grad, out, x, *params):
        needs, layout, values = self.needs_input_grad, self.layout, self.saved
        if values[0] is not x:  # recording backward: on Tensors
            values = self._recorded(x, params)
        grads: list = [None] * len(needs)  # like needs: x's, then the parameters'
        own = self.grad_is_free  # whether grad is an array that backward may write into
        first = needs.index(True)  # the first input that needs a gradient (x is 0)
        for k in range(len(layout) - 1, -1, -1):
            relu, w, b = layout[k]
            upstream = first <= w  # x or a parameter of an earlier step needs a gradient
            if relu:
                if not upstream:
                    break
                if own:
                    grad *= values[k + 1] > 0
                else:
                    grad = grad * (values[k + 1] > 0)
                    own = type(grad) is np.ndarray
            else:
                grad, grads[w + 1], db = _linear_vjp(
                    grad,
                    values[k],
                    params[w],
                    upstream,
                    needs[w + 1],
                    b is not None and needs[b + 1],
                )
                if b is not None:
                    grads[b + 1] = db
                if not upstream:
                    break
                own = type(grad) is np.ndarray
        if needs[0]:
            grads[0] = grad
        return tuple(grads)

    def jvp(self, tangents, out, x, *params):
        """Tangents through the steps in order, on the values the forward kept (recorded
        again on Tensors when the tangent itself is recorded, so it depends on them)."""
        t, values = tangents[0], self.saved
        if values[0] is not x:  # the rule runs on Tensors: the values must be recorded too
            values = self._recorded(x, params)
        for k, (relu, w, b) in enumerate(self.layout):
            if relu:
                t = None if t is None else t * (values[k + 1] > 0)
            else:
                bias_tangent = None if b is None else tangents[b + 1]
                t = _linear_jvp((t, tangents[w + 1], bias_tangent), values[k], params[w])
        return t
