"""Neural-network ops, fused where a hand-written step would fuse them.

Fusing softmax with cross-entropy is both faster and stabler: the gradient is simply
``softmax(x) - onehot(target)``, and log-probabilities never pass through ``log(softmax)``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from tensorgrad.ops.base import Op, call, normalize_axis, shape_of, sum_to
from tensorgrad.ops.elementwise import Relu, Sigmoid


class Softmax(Op):
    uses_inputs = False
    uses_output = True

    def __init__(self, axis: int = -1):
        self.axis = axis

    def forward(self, x):
        self.axis = normalize_axis(self.axis, len(shape_of(x)), self.name)
        shifted = x - x.max(axis=self.axis, keepdims=True) if x.size else x
        e = np.exp(shifted)
        return e / e.sum(axis=self.axis, keepdims=True)

    def backward(self, grad, out, x):
        return (out * (grad - (grad * out).sum(axis=self.axis, keepdims=True)),)


class LogSoftmax(Op):
    name = "log_softmax"
    uses_inputs = False
    uses_output = True

    def __init__(self, axis: int = -1):
        self.axis = axis

    def forward(self, x):
        self.axis = normalize_axis(self.axis, len(shape_of(x)), self.name)
        return _log_softmax(x, self.axis)

    def backward(self, grad, out, x):
        return (grad - np.exp(out) * grad.sum(axis=self.axis, keepdims=True),)


def _log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    """``x − logsumexp(x)`` along ``axis`` (non-negative), shifted by the maximum for stability.
    On arrays only: the reductions call the ufuncs directly, skipping NumPy's Python wrappers."""
    if not x.size:
        return x.copy()
    shifted = x - np.maximum.reduce(x, axis=axis, keepdims=True)
    shifted -= np.log(np.add.reduce(np.exp(shifted), axis=axis, keepdims=True))
    return shifted


def _linear(where: str, x: Any, weight: Any, bias: Any) -> Any:
    """``x @ weight.T + bias`` (bias may be None); ``where`` names the op (and the step) in
    errors. A matmul that fails is a shape mismatch; the checks before it catch the shapes
    that would broadcast silently instead."""
    if weight.ndim != 2 or (bias is not None and (bias.ndim != 1 or len(bias) != len(weight))):
        raise ValueError(_linear_error(where, x, weight, bias))
    try:
        out = x @ weight.T
    except ValueError:
        raise ValueError(_linear_error(where, x, weight, bias)) from None
    if bias is not None:
        out += bias
    return out


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
    dx = grad @ weight if need_dx else None
    if grad.ndim != 2:  # (..., out) and (..., in): the batch axes flattened into one
        out_features, in_features = weight.shape
        grad, x = grad.reshape(-1, out_features), x.reshape(-1, in_features)
    dw = grad.T @ x if need_dw else None
    if need_db:  # on arrays, the ufunc itself (``sum`` goes through a Python wrapper)
        db = np.add.reduce(grad, 0) if type(grad) is np.ndarray else grad.sum(axis=0)
    else:
        db = None
    return dx, dw, db


class Linear(Op):
    """``x @ weight.T + bias`` in one op, with PyTorch's (out_features, in_features) weight."""

    def forward(self, x, weight, bias=None):
        return _linear(self.name, x, weight, bias)

    def backward(self, grad, out, x, weight, bias=None):
        needs = self.needs_input_grad
        return _linear_vjp(grad, x, weight, needs[0], needs[1], bias is not None and needs[2])


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


_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


class CrossEntropy(Op):
    """Softmax cross-entropy of logits (N, C) against class indices (N,), fused and stable.

    ``reduction`` is "mean", "sum" or "none"; with ``label_smoothing`` ε the target puts
    1 − ε on the class and ε/C on every class, as in PyTorch.
    """

    name = "cross_entropy"

    def __init__(self, target: np.ndarray, reduction: str = "mean", label_smoothing: float = 0.0):
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(
                f"cross_entropy: reduction must be 'mean', 'sum' or 'none', got {reduction!r}"
            )
        if not 0.0 <= label_smoothing <= 1.0:
            raise ValueError(
                f"cross_entropy: label_smoothing must be in [0, 1], got {label_smoothing}"
            )
        self.target, self.reduction, self.smoothing = target, reduction, label_smoothing

    def _target_weights(self, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        """The target distribution: one-hot, smoothed by ε."""
        n, c = shape
        weights = np.full(shape, self.smoothing / c, dtype=dtype)
        weights[np.arange(n), self.target] += 1 - self.smoothing
        return weights

    def forward(self, logits):
        target = self.target
        if logits.ndim != 2:
            raise ValueError(
                f"cross_entropy: logits must be 2-D (batch, classes), got shape {logits.shape}"
            )
        n, c = logits.shape
        if shape_of(target) != (n,):
            raise ValueError(
                f"cross_entropy: target must have shape ({n},) to match logits of shape "
                f"{logits.shape}, got {shape_of(target)}"
            )
        if target.dtype.kind not in "iu":
            raise TypeError(
                f"cross_entropy: target must hold class indices (integers), got {target.dtype}"
            )
        # one pass finds negatives too: seen as unsigned, they are larger than any class
        if n and np.maximum.reduce(target.view(_UNSIGNED[target.itemsize])) >= c:
            bad = int(target.max() if target.max() >= c else target.min())
            raise IndexError(f"cross_entropy: target class {bad} is out of range for {c} classes")
        logp = _log_softmax(logits, 1)
        rows = np.arange(n)
        self.saved = (logits, logp, rows)  # for the backward on these very arrays
        if self.smoothing:
            picked = np.add.reduce(logp * self._target_weights((n, c), logp.dtype), axis=1)
        else:
            picked = logp[rows, target]  # each sample's log-probability of its class
        if self.reduction == "none":
            return -picked
        total = -np.add.reduce(picked)  # negated once, after the sum
        return total / n if self.reduction == "mean" else total

    def backward(self, grad, out, logits):
        saved_logits, logp, rows = self.saved
        n, c = logp.shape
        if logits is not saved_logits:  # recording on Tensors: a differentiable log-softmax
            probs = np.exp(call(LogSoftmax, logits, axis=1))
            scale = grad.reshape(n, 1) if self.reduction == "none" else grad
            scale = scale / n if self.reduction == "mean" else scale
            return ((probs - self._target_weights((n, c), probs.dtype)) * scale,)
        probs = np.exp(logp)
        probs[rows, self.target] -= 1 - self.smoothing  # softmax − target, in place
        if self.smoothing:
            probs -= self.smoothing / c
        if self.reduction == "none":
            probs *= grad.reshape(n, 1)
        else:  # a 0-d gradient: as a Python number, the cheapest operand
            probs *= float(grad) / n if self.reduction == "mean" else float(grad)
        return (probs,)


class BinaryCrossEntropyWithLogits(Op):
    """Elementwise ``-[y log σ(x) + (1 − y) log(1 − σ(x))]``, stable for any logit."""

    name = "binary_cross_entropy_with_logits"

    def forward(self, x, y):
        return np.maximum(x, 0) - x * y + np.log1p(np.exp(-np.abs(x)))

    def backward(self, grad, out, x, y):
        nx, ny = self.needs_input_grad
        return (
            sum_to(grad * (call(Sigmoid, x) - y), shape_of(x)) if nx else None,
            sum_to(-grad * x, shape_of(y)) if ny else None,
        )
