"""Errors by type and message: every registered error input, and the autograd misuses.

A failed op must leave nothing behind: its inputs unchanged, no op recorded, and a later
backward through the same inputs exactly right.
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import ops
from tensorgrad.core.node import Node
from tests.ops.registry import error_cases


def recorded_ops_in(traceback) -> list:
    """Nodes, and ops that were recorded (given ``needs_input_grad``), found in the frames of
    a traceback."""
    found = []
    while traceback is not None:
        for value in traceback.tb_frame.f_locals.values():
            if isinstance(value, Node) or (
                isinstance(value, ops.Op) and "needs_input_grad" in vars(value)
            ):
                found.append(value)
        traceback = traceback.tb_next
    return found


@pytest.mark.parametrize(("info", "error"), error_cases())
def test_error_input(info, error):
    tensors = [tg.Tensor(np.array(a, dtype=np.float64), requires_grad=True) for a in error.args]
    before = [(t.numpy().copy(), t._version) for t in tensors]
    with pytest.raises(error.error, match=error.match) as excinfo:
        info.fn(*tensors, **error.kwargs)
    # nothing half-recorded: no op in the failed call got parents, the inputs are untouched
    assert recorded_ops_in(excinfo.value.__traceback__) == []
    for t, (data, version) in zip(tensors, before, strict=True):
        np.testing.assert_array_equal(t.numpy(), data)
        assert t._version == version
        assert t.grad is None and t.is_leaf and t.requires_grad
    # and the inputs still differentiate exactly
    if tensors:
        tg.backward([(t * 2.0).sum() for t in tensors])
        for t in tensors:
            np.testing.assert_array_equal(t.grad.numpy(), np.full(t.shape, 2.0))


# --------------------------------------------------------------------------- autograd misuse
@pytest.mark.parametrize("dtype", [tg.int64, tg.int32, tg.uint8, tg.bool_])
def test_requires_grad_on_a_non_float_tensor(dtype):
    with pytest.raises(
        RuntimeError,
        match=rf"only floating-point tensors can require gradients, "
        rf"this one is {np.dtype(dtype)}",
    ):
        tg.tensor([1, 0], dtype=dtype, requires_grad=True)
    with pytest.raises(RuntimeError, match="only floating-point tensors can require gradients"):
        tg.tensor([1, 0], dtype=dtype).requires_grad_()


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda: tg.tensor([1.0, 2.0]).sum(), id="constant"),
        pytest.param(lambda: tg.tensor([1.0, 2.0], requires_grad=True).argmax(), id="argmax"),
        pytest.param(
            lambda: tg.tensor([1.0, 2.0], requires_grad=True).detach().sum(), id="detached"
        ),
    ],
)
def test_backward_from_a_tensor_that_does_not_require_grad(make):
    with pytest.raises(RuntimeError, match=r"^backward: the tensor does not require grad"):
        make().backward()


def test_grad_of_a_tensor_that_does_not_require_grad():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"^grad: the tensor does not require grad"):
        tg.grad(tg.tensor([1.0]).sum(), x)


def test_backward_under_no_grad_has_nothing_to_differentiate():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    with tg.no_grad():
        y = (x * 2).sum()
    with pytest.raises(RuntimeError, match="does not require grad"):
        y.backward()


def test_failed_op_inside_a_graph_leaves_the_graph_intact():
    x = tg.Tensor(np.array([[1.0, 2.0, 3.0]]), requires_grad=True)
    y = x * 3.0
    with pytest.raises(ValueError, match=r"matmul: shapes \(1, 3\) and \(2, 2\)"):
        y @ tg.Tensor(np.ones((2, 2)), requires_grad=True)
    with pytest.raises(IndexError, match=r"sum: axis 5 is out of range"):
        y.sum(axis=5)
    assert isinstance(y.grad_fn.op, ops.Mul)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[3.0, 3.0, 3.0]])


def test_broadcast_error_names_both_shapes():
    x = tg.Tensor(np.ones((3, 1, 2)), requires_grad=True)
    with pytest.raises(ValueError, match=r"\(3,1,2\) \(4,3\)"):
        x + tg.Tensor(np.ones((4, 3)))


def test_matmul_error_names_both_shapes():
    with pytest.raises(ValueError, match=r"shapes \(2, 1, 3, 4\) and \(5, 3, 2\)"):
        tg.Tensor(np.ones((2, 1, 3, 4))) @ tg.Tensor(np.ones((5, 3, 2)))


def test_unsqueeze_error_names_the_tensors_own_dimensions():
    with pytest.raises(
        IndexError, match=r"^unsqueeze: dimension 4 is out of range for a tensor of 2 "
    ):
        tg.Tensor(np.ones((2, 3))).unsqueeze(4)


@pytest.mark.parametrize("p", [float("inf"), -float("inf"), -1.0])
@pytest.mark.parametrize(("shape", "dim"), [((0,), None), ((0, 3), 0)])
def test_norm_without_identity_over_no_elements(p, shape, dim):
    """PyTorch refuses the ±inf and negative norms of nothing (no identity) with a
    RuntimeError; p > 0 and p = 0 give 0."""
    x = tg.zeros(shape, dtype=tg.float64)
    with pytest.raises(RuntimeError, match=rf"^norm: cannot compute the {p:g} norm over no "):
        x.norm(p, dim)
    assert np.all(x.norm(2.0, dim).numpy() == 0) and np.all(x.norm(0, dim).numpy() == 0)


@pytest.mark.parametrize("bad", [-1, 2], ids=["negative", "too_large"])
def test_gather_and_scatter_add_refuse_indices_out_of_bounds(bad):
    """PyTorch's rule: an index outside [0, size) is a RuntimeError, negative ones included
    (no wrap-around as in NumPy)."""
    x = tg.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    index = tg.tensor([[bad, 0, 1]])
    message = rf"index {bad} is out of bounds for dimension 0 with size 2"
    with pytest.raises(RuntimeError, match=rf"^gather: {message}"):
        x.gather(0, index)
    with pytest.raises(RuntimeError, match=rf"^scatter_add: {message}"):
        x.scatter_add(0, index, tg.ones((1, 3), dtype=tg.float64))


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda: tg.tensor([True, False]) - tg.tensor([True, True]), id="bool-bool"),
        pytest.param(lambda: tg.tensor([True]) - tg.tensor([1], dtype=tg.uint8), id="bool-uint8"),
        pytest.param(lambda: tg.tensor([1, 2]) - True, id="int-True"),
        pytest.param(lambda: True - tg.tensor([1.5]), id="True-float"),
        pytest.param(lambda: tg.tensor([1, 2]).sub_(tg.tensor([True, False])), id="in_place"),
        pytest.param(lambda: -tg.tensor([True]), id="neg"),
        # a float number promotes the bool tensor to float32: refused before the cast
        pytest.param(lambda: tg.tensor([True]) - 1.5, id="bool-float_number"),
        pytest.param(lambda: 1.5 - tg.tensor([True]), id="float_number-bool"),
        pytest.param(lambda: tg.tensor(True) - 1.5, id="0d_bool-float_number"),
        # alpha scales the bool into a number: refused before scaling
        pytest.param(lambda: tg.tensor([1.0]).sub(tg.tensor([True]), alpha=2), id="alpha"),
        pytest.param(lambda: tg.tensor([1.0]).sub_(tg.tensor([True]), alpha=2), id="alpha_"),
    ],
)
def test_subtracting_or_negating_bools_is_refused_as_in_pytorch(call):
    """PyTorch refuses ``-`` with a bool operand (NumPy computes bool - uint8 as 0 - 1 = 255)."""
    message = r"^(sub|neg)_?: (Subtraction|Negation), the `-` operator"
    with pytest.raises(RuntimeError, match=message):
        call()
