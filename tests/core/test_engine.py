"""The recording engine (``tensorgrad/core/engine.py``): version counters that refuse a
backward through a value changed in place after an op saved it, in-place changes to leaves,
``detach``, and failed ops that leave no graph behind."""

from __future__ import annotations

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import ops
from tensorgrad.core.engine import apply as _apply
from tensorgrad.core.node import Node


def leaf(value, dtype=tg.float64):
    return tg.tensor(np.asarray(value, dtype=dtype), requires_grad=True)


# ------------------------------------------------------------ versions and in-place changes
def test_in_place_change_to_an_unrelated_tensor_is_no_false_alarm():
    x = leaf([1.0, 2.0])
    w = tg.tensor([3.0, 4.0])
    y = (x * w).sum()
    other = tg.tensor([1.0])
    other += 1  # a change made after y was recorded, but not to anything y saved
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 4.0])


def test_in_place_change_of_saved_input_is_detected():
    x = leaf([1.0, 2.0])
    w = tg.tensor([3.0, 4.0])
    y = (x * w).sum()
    w += 1  # w does not require grad, so this is allowed, but Mul saved it
    with pytest.raises(RuntimeError, match=r"input 1 of mul.*modified in place"):
        y.backward()


def test_in_place_change_of_saved_output_is_detected():
    x = leaf([1.0, 2.0])
    y = x.exp()
    with tg.no_grad():
        y.mul_(2)
    with pytest.raises(RuntimeError, match=r"output of exp.*modified in place"):
        y.sum().backward()


@pytest.mark.parametrize(("steps", "detected"), [(("linear", "relu"), True), (("linear",), False)])
def test_linear_chain_reads_its_output_only_when_it_ends_with_a_relu(steps, detected):
    x, w = leaf([[1.0, 2.0]]), leaf([[0.5, 0.25], [-1.0, 1.0]])
    y = _apply(ops.LinearChain(steps), x, w)
    with tg.no_grad():
        y.mul_(2)  # the mask ``out > 0`` would be read from the changed output
    if detected:
        with pytest.raises(RuntimeError, match=r"output of linear_chain.*modified in place"):
            y.sum().backward()
    else:
        y.sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), [[-0.5, 1.25]])


def test_in_place_change_of_unread_input_is_harmless():
    x = leaf([1.0, 2.0])
    c = tg.tensor([5.0, 5.0])
    y = (x + c).sum()
    c[0] = 7.0  # Add never reads its inputs' values in backward
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0])


def test_assigning_data_bumps_the_version():
    x = leaf([1.0, 2.0])
    w = tg.tensor([3.0, 4.0])
    y = (x * w).sum()
    w.data = np.array([0.0, 0.0])
    with pytest.raises(RuntimeError, match="modified in place"):
        y.backward()


def test_in_place_on_leaf_requiring_grad_is_refused():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"add_: a leaf Tensor that requires grad.*no_grad"):
        x += 1
    with tg.no_grad():
        x += 1
    np.testing.assert_array_equal(x.numpy(), [2.0, 3.0])
    assert x._version > 0  # the in-place change is on record


# ----------------------------------------------------------------------- detach
def test_detach_cuts_the_graph():
    x = leaf([2.0])
    y = x * x
    (y.detach() * x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [4.0])


# ----------------------------------------------------------------------- bad input
def test_failed_op_leaves_no_graph_behind():
    x = leaf(np.ones((2, 3)))
    y = x * 2
    with pytest.raises(ValueError, match=r"matmul: shapes \(2, 3\) and \(2, 3\)"):
        y @ y
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 3), 2.0))


def test_broadcast_error_names_op_and_shapes():
    with pytest.raises(ValueError, match=r"add: .*\(2,3\).*\(4,\)"):
        tg.ones(2, 3) + tg.ones(4)


def test_axis_out_of_range():
    with pytest.raises(
        IndexError, match="sum: axis 2 is out of range for a tensor of 2 dimensions"
    ):
        tg.ones(2, 3).sum(axis=2)


def test_the_node_records_the_call_and_the_op_holds_no_graph():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3.0
    node = y.grad_fn
    assert isinstance(node, Node) and isinstance(node.op, ops.Mul)
    assert node.name == "mul" and repr(node) == "<MulBackward>"
    assert node.parents == [x, None] and node.inputs[0] is x.numpy() and node.out is y.numpy()
    # the op keeps what backward reads of it (which inputs want a gradient) and nothing of
    # the graph: no parents, inputs, output, ticks or hooks
    assert vars(node.op) == {"needs_input_grad": [True, False]}
    z = (y * y).sum()
    assert z.grad_fn.parents[0].parents[0] is node
    z.backward()
    assert node.parents is None and node.inputs is None and node.out is None  # freed
    assert node.op.saved is None and node.name == "mul"


@pytest.mark.parametrize(
    ("make", "needs", "reads"),
    [
        (ops.Mul, [True, False], [False, True]),  # x's gradient reads y only
        (ops.Mul, [False, True], [True, False]),
        (ops.MatMul, [True, True], [True, True]),
        (ops.Div, [False, True], [True, True]),  # y's gradient reads x and y
        (ops.Div, [True, False], [False, True]),
        (ops.Add, [True, True], [False, False]),
        (ops.Exp, [True], [False]),  # it reads its output instead
    ],
)
def test_ops_declare_which_inputs_backward_reads(make, needs, reads):
    op = make()
    assert [op.reads_input(i, needs) for i in range(len(needs))] == reads


def test_pow_reads_its_output_only_for_the_exponents_gradient():
    assert not ops.Pow().reads_output([True, False]) and ops.Pow().reads_output([False, True])
    base = tg.tensor([2.0, 3.0], requires_grad=True)
    out = base**2.0
    out.add_(1.0)  # the output changed in place: harmless, base's gradient does not read it
    out.sum().backward()
    np.testing.assert_array_equal(base.grad.numpy(), [4.0, 6.0])
