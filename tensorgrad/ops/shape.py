"""Ops that move elements without changing them: reshape, transpose, broadcast, join."""

from __future__ import annotations

import numpy as np

from tensorgrad.ops.base import (
    Op,
    linear_jvp,
    normalize_axes,
    normalize_axis,
    shape_of,
    sum_to,
)


class Reshape(Op):
    batching = "reshape"
    uses_inputs = False

    def __init__(self, shape: tuple[int, ...]):
        self.shape = shape

    def forward(self, x):
        return x.reshape(self.shape)

    def backward(self, grad, out, x):
        shape = shape_of(x)  # the same shape: the gradient itself (still free to reuse)
        return (grad if shape_of(grad) == shape else grad.reshape(shape),)

    jvp = linear_jvp  # linear in its inputs: the op itself maps the tangents


class Transpose(Op):
    """Permute the axes; ``axes=None`` reverses them."""

    batching = "transpose"

    uses_inputs = False

    def __init__(self, axes: tuple[int, ...] | None = None):
        self.axes = axes

    def forward(self, x):
        if self.axes is not None:
            ndim = len(shape_of(x))
            if len(self.axes) != ndim:
                raise ValueError(
                    f"transpose: axes {tuple(self.axes)} do not match a tensor of {ndim} "
                    f"dimension{'' if ndim == 1 else 's'}"
                )
            normalize_axes(self.axes, ndim, self.name)  # out of range or repeated: say so
        return x.transpose(self.axes)

    def backward(self, grad, out, x):
        if self.axes is None:
            return (np.transpose(grad),)
        inverse = [0] * len(self.axes)  # the permutation that undoes axes
        for position, axis in enumerate(self.axes):
            inverse[axis % len(self.axes)] = position
        return (np.transpose(grad, inverse),)

    jvp = linear_jvp  # linear in its inputs: the op itself maps the tangents


class BroadcastTo(Op):
    name = "broadcast_to"
    batching = "broadcast_to"
    uses_inputs = False

    def __init__(self, shape: tuple[int, ...]):
        self.shape = tuple(shape)

    def forward(self, x):
        try:
            return np.broadcast_to(x, self.shape)
        except ValueError:
            raise ValueError(
                f"broadcast_to: cannot broadcast a tensor of shape {shape_of(x)} to {self.shape}"
            ) from None

    def backward(self, grad, out, x):
        return (sum_to(grad, shape_of(x)),)

    jvp = linear_jvp  # linear in its inputs: the op itself maps the tangents


class Concatenate(Op):
    batching = "join"
    uses_inputs = False

    def __init__(self, axis: int = 0):
        self.axis = axis

    def forward(self, *xs):
        if not xs:
            raise ValueError("concatenate: needs at least one tensor")
        ndim = len(shape_of(xs[0]))
        if ndim == 0:
            raise ValueError("concatenate: zero-dimensional tensors cannot be concatenated")
        self.axis = normalize_axis(self.axis, ndim, self.name)
        shapes = [shape_of(x) for x in xs]
        for shape in shapes:
            if len(shape) != ndim or any(
                a != b for i, (a, b) in enumerate(zip(shape, shapes[0])) if i != self.axis
            ):
                raise ValueError(f"concatenate: shapes {shapes} differ outside axis {self.axis}")
        return np.concatenate(xs, axis=self.axis)

    def backward(self, grad, out, *xs):
        grads, start = [], 0
        lead = (slice(None),) * self.axis
        for x, needed in zip(xs, self.needs_input_grad):
            stop = start + shape_of(x)[self.axis]
            grads.append(grad[(*lead, slice(start, stop))] if needed else None)
            start = stop
        return tuple(grads)

    jvp = linear_jvp  # linear in its inputs: the op itself maps the tangents


class Stack(Op):
    batching = "join"
    uses_inputs = False

    def __init__(self, axis: int = 0):
        self.axis = axis

    def forward(self, *xs):
        if not xs:
            raise ValueError("stack: needs at least one tensor")
        shapes = [shape_of(x) for x in xs]
        if any(shape != shapes[0] for shape in shapes):
            raise ValueError(f"stack: all tensors must have the same shape, got {shapes}")
        self.axis = normalize_axis(self.axis, len(shapes[0]) + 1, self.name)
        return np.stack(xs, axis=self.axis)

    def backward(self, grad, out, *xs):
        lead = (slice(None),) * self.axis
        return tuple(
            grad[(*lead, i)] if needed else None for i, needed in enumerate(self.needs_input_grad)
        )

    jvp = linear_jvp  # linear in its inputs: the op itself maps the tangents
