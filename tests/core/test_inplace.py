"""In-place changes, views and version counters: the changes that once gave silently wrong
gradients, their siblings, and PyTorch's behaviour for each (compared where PyTorch is
installed)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tensorgrad as tg
from tensorgrad import nn, optim
from tests.core import inplace_programs as programs


def leaf(value, dtype=tg.float64):
    return tg.tensor(np.asarray(value, dtype=dtype), requires_grad=True)


def grad_of(t):
    return None if t.grad is None else t.grad.numpy()


# ---------------------------------------------------------------- changes after the forward
def test_optimizer_step_between_forward_and_backward_is_seen_through_a_transpose():
    w = nn.Parameter(np.array([[1.0, 2.0], [3.0, 4.0]]))
    x = leaf([[1.0, 1.0]])
    loss = (x @ w.T).sum()
    w.grad = np.ones((2, 2))
    optim.SGD([w], lr=1.0).step()
    with pytest.raises(RuntimeError, match=r"input 1 of matmul.*modified in place"):
        loss.backward()


@pytest.mark.parametrize(
    "change",
    [
        lambda x: x.detach().mul_(10),
        lambda x: x.T.mul_(10),
        lambda x: x[0:2].mul_(10),
        lambda x: x.reshape(3).mul_(10),
        lambda x: x.detach()[1:].mul_(10),
        lambda x: x.detach().T.detach().add_(1),
        lambda x: x.view(3).__setitem__(0, 5.0),
    ],
    ids=["detach", "T", "slice", "reshape", "detach-slice", "detach-T-detach", "view-setitem"],
)
def test_in_place_change_through_any_alias_is_seen(change):
    x = tg.tensor([1.0, 2.0, 3.0], dtype=tg.float64)
    w = leaf([1.0, 2.0, 3.0])
    loss = (x * w).sum()
    with tg.no_grad():
        change(x)
    with pytest.raises(RuntimeError, match=r"input 0 of mul.*modified in place"):
        loss.backward()


def test_in_place_change_to_a_slice_under_no_grad_is_seen():
    x = leaf([1.0, 2.0, 3.0])
    y = x * 1
    loss = (y * y).sum()
    with tg.no_grad():
        y[0:2].mul_(3)
    with pytest.raises(RuntimeError, match="modified in place"):
        loss.backward()


def test_in_place_change_to_a_view_of_a_saved_value_is_seen():
    x = leaf([[1.0, 2.0], [3.0, 4.0]])
    t = x.T  # MatMul saves the transpose; its base is changed in place
    y = (t @ t).sum()
    with tg.no_grad():
        x.mul_(2)
    with pytest.raises(RuntimeError, match="modified in place"):
        y.backward()


def test_assigning_data_bumps_the_version_of_what_was_saved():
    x = leaf([1.0, 2.0])
    y = (x * x).sum()
    x.data.mul_(10)  # .data is detached and untracked, as in PyTorch: no error
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [20.0, 40.0])


# ---------------------------------------------------------------- assignment into tensors
def test_assignment_into_a_plain_tensor_carries_the_gradient():
    y = leaf(3.0)
    x = tg.zeros(3, dtype=tg.float64)
    x[0] = y * 2
    assert x.requires_grad and not x.is_leaf
    (x * x).sum().backward()
    assert y.grad.item() == 24.0


def test_assignment_of_a_slice_of_a_graph_tensor():
    a = leaf([1.0, 2.0, 3.0])
    x = tg.zeros((2, 3), dtype=tg.float64)
    x[1, 1:] = a[:2] ** 2
    x[0] = a
    (x * x).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [2 + 4, 4 + 32, 6])


# ---------------------------------------------------------------- a failed backward
def test_retry_after_a_failed_backward_says_why():
    x = leaf([1.0, 2.0])
    y = x.exp()
    z = (y * y).sum()
    y.add_(1)
    with pytest.raises(RuntimeError, match="of mul.*modified in place"):
        z.backward()
    with pytest.raises(RuntimeError, match="earlier backward through this graph failed") as info:
        z.backward()
    assert "second time" not in str(info.value)


# ---------------------------------------------------------------- PyTorch's refusals
def test_in_place_on_a_leaf_that_requires_grad_is_refused():
    w = leaf([1.0, 2.0])
    for change in (lambda: w.add_(1), lambda: w.mul_(2), lambda: w.zero_(), lambda: w.fill_(1)):
        with pytest.raises(RuntimeError, match="a leaf Tensor that requires grad"):
            change()
    with pytest.raises(RuntimeError, match="a leaf Tensor that requires grad"):
        w[0] = 5.0
    np.testing.assert_array_equal(w.numpy(), [1.0, 2.0])  # nothing half-done
    assert w._version == 0


def test_in_place_on_a_view_of_a_leaf_that_requires_grad_is_refused():
    w = leaf([[1.0, 2.0], [3.0, 4.0]])
    for view in (w[0], w.T, w[:, 1], w.reshape(4)):
        with pytest.raises(RuntimeError, match="a view of a leaf Tensor that requires grad"):
            view.mul_(2)
    np.testing.assert_array_equal(w.numpy(), [[1.0, 2.0], [3.0, 4.0]])


def test_in_place_on_a_leaf_under_no_grad_is_allowed_and_recorded():
    w = leaf([1.0, 2.0])
    loss = (w * w).sum()
    with tg.no_grad():
        w.sub_(0.5)
        w[0:1].add_(1)  # a view, also under no_grad
    np.testing.assert_array_equal(w.numpy(), [1.5, 1.5])
    with pytest.raises(RuntimeError, match="modified in place"):
        loss.backward()


# ---------------------------------------------------------------- operands in the target's memory
@pytest.mark.parametrize(
    "change",
    [
        lambda y: y.mul_(y),
        lambda y: y.mul_(y[0:1]),
        lambda y: y.mul_(y.detach()),
        lambda y: y.div_(y.detach()[1:2]),
        lambda y: y.clamp_(y[1:2], None),
    ],
    ids=["self", "slice", "detach", "detach-div", "clamp-bound"],
)
def test_an_operand_overwritten_by_the_change_itself_is_not_read_in_backward(change):
    # the op's backward would read the operand, which the change overwrote: PyTorch raises
    # (in backward, or at once for a partial overlap); a gradient would be silently wrong
    a = leaf([1.0, 2.0, 3.0])
    y = a * 1
    change(y)
    with pytest.raises(RuntimeError, match="modified in place"):
        y.sum().backward()


def test_an_operand_in_the_target_memory_is_fine_when_unread():
    a = leaf([1.0, 2.0, 3.0])
    y = a * 1
    y.add_(y)  # Add reads no values
    y.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [2.0, 2.0, 2.0])


def test_an_element_picked_by_integers_is_a_view():
    x = tg.tensor([1.0, 2.0, 3.0])
    x[0].mul_(10)
    np.testing.assert_array_equal(x.numpy(), [10.0, 2.0, 3.0])
    a = leaf([1.0, 2.0, 3.0])
    y = a * 1
    y[1].mul_(5)
    y.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [1.0, 5.0, 1.0])


ELEMENTS = {  # ways to pick the element at flat position 5 of a 2x3 tensor (its value 6)
    "x[1, 2]": lambda x: x[1, 2],
    "x[-1, -1]": lambda x: x[-1, -1],
    "x[1][2]": lambda x: x[1][2],
    "1-D x[5]": lambda x: x.reshape(-1)[5],
    "1-D x[-1]": lambda x: x.view(-1)[-1],
    "np.int64": lambda x: x[np.int64(1), np.int64(2)],
    # siblings: a 0-d integer tensor indexes as the integer it holds (NumPy would copy)
    "0-d tensors": lambda x: x[tg.tensor(1), tg.tensor(2)],
    "0-d tensor then int": lambda x: x[tg.tensor(1)][2],
    "iteration": lambda x: list(x[1])[2],
    "unbind": lambda x: x[1].unbind()[2],
}


@pytest.mark.parametrize("pick", list(ELEMENTS))
def test_every_way_of_picking_one_element_gives_a_0d_view(pick):
    x = tg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    e = ELEMENTS[pick](x)
    assert e.shape == () and e.item() == 6.0
    before = x._version
    e.mul_(10)  # reaches x, and x's version counter
    np.testing.assert_array_equal(x.numpy(), [[1.0, 2.0, 3.0], [4.0, 5.0, 60.0]])
    assert x._version == e._version != before
    x.add_(1)  # and the other way
    assert e.item() == 61.0


def test_an_element_of_a_0d_tensor_is_a_view():
    x = tg.tensor(5.0)
    x[()].mul_(2)
    x[...].add_(1)
    assert x.item() == 11.0


def _element_programs() -> dict:
    """In-place changes through elements of a non-leaf ``y``, and PyTorch's gradients of
    ``a`` (2x3) and ``b`` (3,) for each."""

    def square_sum(y):
        return (y * y).sum()

    def first_of_1d(lib, a, b):
        y = b * 1
        y[0].mul_(10)
        return square_sum(y)

    def last_by_tensor(lib, a, b):
        y = b * 2
        y[-1].mul_(b[0])
        return (y**2).sum()

    def of_2d(lib, a, b):
        y = a * 1
        y[1, 2].mul_(3)
        return (y * a).sum()

    def chained(lib, a, b):
        y = a * 2
        y[0][1].mul_(4)
        return square_sum(y)

    def read_then_changed(lib, a, b):
        y = b * 3
        e = y[1] + 0
        y[1].add_(b[2])
        return (e * y).sum()

    def output_saved_then_changed(lib, a, b):
        y = b.exp()  # exp's backward reads y
        y[1].add_(5)
        return y.sum()

    def kept_view_of_changed_base(lib, a, b):
        y = b * 1
        e = y[2]
        y.mul_(2)
        return e * 3 + y.sum()

    def copied_into(lib, a, b):
        y = b * 1
        y[0].copy_(b[2] * 3)
        return y.sum() * 2

    def by_0d_tensor(lib, a, b):
        y = a * 1
        y[lib.tensor(1)].mul_(3)
        return square_sum(y)

    def two_elements(lib, a, b):
        y = b * 1
        y[0].add_(y[1] * 2)
        y[2].mul_(y[0] + 0)
        return square_sum(y)

    def operand_saved_then_changed(lib, a, b):
        y = b * 1
        y[0].mul_(y[1])  # mul_'s backward reads y[1], which mul_ itself changed
        return square_sum(y)

    return {
        f.__name__: f
        for f in (
            first_of_1d,
            last_by_tensor,
            of_2d,
            chained,
            read_then_changed,
            kept_view_of_changed_base,
            copied_into,
            by_0d_tensor,
            two_elements,
            output_saved_then_changed,
            operand_saved_then_changed,
        )
    }


ELEMENT_PROGRAMS = _element_programs()
ELEMENT_GRADIENTS = {  # PyTorch 2's gradients of a and b
    "first_of_1d": ([[0, 0, 0], [0, 0, 0]], [100.0, -2.0, 4.0]),
    "last_by_tensor": ([[0, 0, 0], [0, 0, 0]], [20.0, -8.0, 4.0]),
    "of_2d": ([[2, 4, 6], [8, 10, 36]], [0.0, 0.0, 0.0]),
    "chained": ([[8, 256, 24], [32, 40, 48]], [0.0, 0.0, 0.0]),
    "read_then_changed": ([[0, 0, 0], [0, 0, 0]], [-9.0, 10.5, -12.0]),
    "kept_view_of_changed_base": ([[0, 0, 0], [0, 0, 0]], [2.0, 2.0, 8.0]),
    "copied_into": ([[0, 0, 0], [0, 0, 0]], [0.0, 2.0, 8.0]),
    "by_0d_tensor": ([[2, 4, 6], [72, 90, 108]], [0.0, 0.0, 0.0]),
    "two_elements": ([[0, 0, 0], [0, 0, 0]], [-15.0, -32.0, 9.0]),
}


@pytest.mark.parametrize("name", ["output_saved_then_changed", "operand_saved_then_changed"])
def test_an_element_changed_after_backward_saved_it_is_refused(name):
    with pytest.raises(RuntimeError, match="modified in place"):
        _element_gradients(tg, name)


def _element_gradients(lib, name):
    a = lib.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    b = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
    ELEMENT_PROGRAMS[name](lib, a, b).backward()
    return [np.zeros(tuple(t.shape)) if t.grad is None else t.grad.numpy() for t in (a, b)]


@pytest.mark.parametrize("name", list(ELEMENT_GRADIENTS))
def test_in_place_changes_through_elements_get_pytorchs_gradients(name):
    for got, expected in zip(_element_gradients(tg, name), ELEMENT_GRADIENTS[name]):
        np.testing.assert_allclose(got, expected, rtol=1e-6)


@pytest.mark.parametrize("name", list(ELEMENT_PROGRAMS))
def test_in_place_changes_through_elements_agree_with_pytorch(name):
    torch = pytest.importorskip("torch")
    try:
        theirs = _element_gradients(torch, name)
    except RuntimeError:
        with pytest.raises(RuntimeError, match="modified in place"):
            _element_gradients(tg, name)
        return
    for got, expected in zip(_element_gradients(tg, name), theirs):
        np.testing.assert_allclose(got, expected, rtol=1e-6)


# ---------------------------------------------------------------- views of a changed base
def _stale_view():
    a = leaf([1.0, 2.0, 3.0])
    y = a * 1
    v = y[0:2]
    y.mul_(2)  # v's values changed: its node must be made again from y's new one
    return a, y, v


def test_a_view_used_as_the_root_of_backward_sees_its_base_changed():
    a = leaf([1.0, 2.0, 3.0])
    y = a * 1
    v = y[1:2]
    y.mul_(2)
    v.backward()
    np.testing.assert_array_equal(a.grad.numpy(), [0.0, 2.0, 0.0])


def test_a_view_given_to_grad_sees_its_base_changed():
    a, _, v = _stale_view()
    z = (v * v).sum()
    (gv,) = tg.autograd.grad(z, v, retain_graph=True)
    np.testing.assert_array_equal(gv.numpy(), [4.0, 8.0])
    (ga,) = tg.autograd.grad(z, a)
    np.testing.assert_array_equal(ga.numpy(), [8.0, 16.0, 0.0])


def test_grad_fn_and_is_leaf_of_a_view_follow_its_base():
    a, y, v = _stale_view()
    assert v.grad_fn is not None and v.grad_fn is not y.grad_fn
    x = tg.zeros(3, dtype=tg.float64)
    w = x[1:]
    assert w.is_leaf and not w.requires_grad
    x.copy_(a)  # x now has a graph, and so has its view
    assert w.requires_grad and not w.is_leaf
    (w * w).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [0.0, 4.0, 6.0])


def test_retain_grad_on_a_view_after_its_base_changed():
    a, _, v = _stale_view()
    v.retain_grad()
    (v * v).sum().backward()
    np.testing.assert_array_equal(v.grad.numpy(), [4.0, 8.0])
    np.testing.assert_array_equal(a.grad.numpy(), [8.0, 16.0, 0.0])


def test_a_hook_on_a_view_after_its_base_changed_sees_its_gradient():
    a, _, v = _stale_view()
    seen = []
    v.register_hook(lambda g: seen.append(g.numpy().copy()))
    (v * 3).sum().backward()
    assert len(seen) == 1
    np.testing.assert_array_equal(seen[0], [3.0, 3.0])
    np.testing.assert_array_equal(a.grad.numpy(), [6.0, 6.0, 0.0])


# ---------------------------------------------------------------- retain_grad and hooks
def test_retain_grad_gives_the_gradient_of_the_new_value_after_an_in_place_change():
    a = leaf([1.0, 2.0, 3.0])
    y = a * 1
    y.retain_grad()
    y.mul_(2)
    (y * y).sum().backward()
    np.testing.assert_array_equal(y.grad.numpy(), [4.0, 8.0, 12.0])  # 2y, y the new value
    np.testing.assert_array_equal(a.grad.numpy(), [8.0, 16.0, 24.0])


def test_retain_grad_on_a_base_changed_through_a_view():
    a = leaf([1.0, 2.0, 3.0])
    y = a * 1
    y.retain_grad()
    y[0:2].mul_(2)
    (y * y).sum().backward()
    np.testing.assert_array_equal(y.grad.numpy(), [4.0, 8.0, 6.0])
    np.testing.assert_array_equal(a.grad.numpy(), [8.0, 16.0, 6.0])


def test_retain_grad_on_a_view_changed_in_place_counts_only_its_own_uses():
    # PyTorch's rule: after the change the view is a view of its base's new value again,
    # so its gradient comes from what uses the view afterwards, not from uses of the base
    a = leaf([1.0, 2.0, 3.0])
    y = a * 1
    v = y[0:2]
    v.retain_grad()
    v.mul_(2)
    v.mul_(3)
    ((y * y).sum() + (v * 10).sum()).backward()
    np.testing.assert_array_equal(v.grad.numpy(), [10.0, 10.0])
    np.testing.assert_array_equal(a.grad.numpy(), [6 * 2 * 6 + 60, 12 * 2 * 6 + 60, 6.0])


def test_retain_grad_on_a_view_survives_a_change_to_its_base():
    a = leaf([1.0, 2.0, 3.0])
    y = a * 1
    v = y[0:2]
    v.retain_grad()
    y.mul_(2)
    (v * v).sum().backward()
    np.testing.assert_array_equal(v.grad.numpy(), [4.0, 8.0])


def test_hooks_before_and_after_an_in_place_change():
    # a hook registered before sees the gradient of the old value; one registered after,
    # of the new value (PyTorch's documented rule)
    a = leaf([1.0, 2.0, 3.0])
    y = a * 1
    before, after = [], []
    y.register_hook(lambda g: before.append(g.numpy().copy()))
    y.mul_(2)
    y.register_hook(lambda g: after.append(g.numpy().copy()))
    (y * y).sum().backward()
    np.testing.assert_array_equal(after[0], [4.0, 8.0, 12.0])
    np.testing.assert_array_equal(before[0], [8.0, 16.0, 24.0])


def test_a_hook_on_a_view_changed_in_place_sees_its_own_uses_only():
    a = leaf([1.0, 2.0, 3.0])
    y = a * 1
    v = y[0:2]
    v.mul_(2)
    seen = []
    v.register_hook(lambda g: seen.append(g.numpy().copy()))
    (g,) = tg.autograd.grad((y * y).sum() + (v * 10).sum(), v, retain_graph=True)
    np.testing.assert_array_equal(g.numpy(), [10.0, 10.0])
    np.testing.assert_array_equal(seen[0], [10.0, 10.0])
    assert type(v.grad_fn.op).__name__ != "Mul"  # a view of y's new value again


# ---------------------------------------------------------------- views made under no_grad
NO_GRAD_VIEW = "view was created in no_grad mode"


def test_in_place_on_a_no_grad_view_of_a_leaf_is_refused_with_grad_on():
    w = leaf([1.0, 2.0, 3.0])
    with tg.no_grad():
        v = w[0:2]
    with pytest.raises(RuntimeError, match=NO_GRAD_VIEW):
        v.mul_(2)
    np.testing.assert_array_equal(w.numpy(), [1.0, 2.0, 3.0])
    with tg.no_grad():
        v.mul_(2)  # both under no_grad: fine
    np.testing.assert_array_equal(w.numpy(), [2.0, 4.0, 3.0])


@pytest.mark.parametrize(
    ("change", "takes_a"),
    [
        (lambda v, a: v.mul_(2), False),
        (lambda v, a: v.copy_(a), True),
        (lambda v, a: v[0:1].mul_(2), False),  # a view of the no_grad view
        (lambda v, a: v.T.add_(a), True),
    ],
    ids=["mul_", "copy_", "view-of-it", "T"],
)
def test_in_place_on_a_no_grad_view_is_refused_when_grad_would_flow(change, takes_a):
    a = leaf([5.0, 6.0])
    b = leaf([1.0, 2.0, 3.0])
    y = b * 1  # the base is in a graph
    with tg.no_grad():
        v = y[0:2]
    with pytest.raises(RuntimeError, match=NO_GRAD_VIEW):
        change(v, a)
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])
    base = tg.zeros(3, dtype=tg.float64)  # not in a graph: refused only if a would be
    with tg.no_grad():
        v = base[0:2]
    if takes_a:
        with pytest.raises(RuntimeError, match=NO_GRAD_VIEW):
            change(v, a)
        np.testing.assert_array_equal(base.numpy(), [0.0, 0.0, 0.0])
    else:
        change(v, a)
        assert not base.requires_grad


@pytest.mark.parametrize("grad_mode_change", [True, False])
def test_a_no_grad_view_of_a_changed_base_cannot_be_used_with_grad_on(grad_mode_change):
    b = leaf([1.0, 2.0, 3.0])
    y = b * 1
    with tg.no_grad():
        v = y[0:2]
    with tg.enable_grad() if grad_mode_change else tg.no_grad():
        y.mul_(2)
    with tg.no_grad():
        np.testing.assert_array_equal((v * 3).numpy(), [6.0, 12.0])  # fine without grad
    with pytest.raises(RuntimeError, match=NO_GRAD_VIEW):
        v * 3


def test_a_no_grad_view_of_an_unchanged_base_is_a_constant():
    b = leaf([1.0, 2.0, 3.0])
    with tg.no_grad():
        v = b[0:2]
    r = v * 3  # PyTorch says requires_grad=True here, yet no gradient ever flows through it
    assert not r.requires_grad and not v.requires_grad and v.is_leaf


# ---------------------------------------------------------------- memory that cannot be written
@pytest.mark.parametrize(
    "change",
    [
        lambda e: e.mul_(2),
        lambda e: e.add_(1),
        lambda e: e.copy_(tg.ones((2, 3))),
        # PyTorch allows these three (every element gets the same value); NumPy's broadcast
        # arrays are read-only, so tensorgrad refuses them too
        lambda e: e.zero_(),
        lambda e: e.fill_(2.0),
        lambda e: e.__setitem__(0, 1.0),
    ],
    ids=["mul_", "add_", "copy_", "zero_", "fill_", "setitem"],
)
def test_in_place_on_an_expanded_tensor_is_refused(change):
    x = tg.tensor([1.0, 2.0, 3.0])
    e = x.expand(2, 3)  # both rows are the same memory
    with pytest.raises(RuntimeError, match=r"expand|clone\(\)"):
        change(e)
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0, 3.0])
    assert x._version == 0


def test_in_place_on_a_read_only_array_says_so():
    array = np.array([1.0, 2.0])
    array.flags.writeable = False
    t = tg.from_numpy(array)
    with pytest.raises(RuntimeError, match="read-only"):
        t.add_(1)


# ---------------------------------------------------------------- what backward reads
@pytest.mark.parametrize(
    ("use", "expected"),
    [
        (lambda y: y * 3, [3.0, 3.0]),
        (lambda y: 3 * y, [3.0, 3.0]),
        (lambda y: y / 4, [0.25, 0.25]),
        (lambda y: y @ tg.tensor([[1.0], [2.0]], dtype=tg.float64), [1.0, 2.0]),
        (lambda y: y * tg.tensor([2.0, 5.0], dtype=tg.float64), [2.0, 5.0]),
    ],
    ids=["mul", "rmul", "div", "matmul", "mul-constant-tensor"],
)
def test_changing_a_value_that_backward_does_not_read_is_no_error(use, expected):
    # the product rule reads each factor only for the other's gradient: PyTorch computes these
    a = leaf([1.0, 2.0])
    y = a * 1
    z = use(y)
    y.add_(1)
    z.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), expected)


def test_changing_the_output_of_a_power_with_a_constant_exponent_is_no_error():
    a = leaf([1.0, 2.0])
    z = a**2  # the base's gradient 2a reads a, not z
    z.add_(1)
    z.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [2.0, 4.0])


@pytest.mark.parametrize(
    "use",
    [lambda y, b: y * b, lambda y, b: b * y, lambda y, b: 3 / y, lambda y, b: y @ b],
    ids=["mul", "rmul", "rdiv", "matmul"],
)
def test_changing_a_value_that_backward_reads_is_still_an_error(use):
    a, b = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    y = a * 1
    z = use(y, b)  # b needs a gradient, which reads y
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified in place"):
        z.sum().backward()


def test_an_in_place_product_with_a_constant_keeps_no_copy_and_stays_right():
    a = leaf([1.0, 2.0])
    y = a * 1
    y.mul_(3)
    y.add_(1)
    y.mul_(tg.tensor([2.0, -1.0], dtype=tg.float64))
    assert y.grad_fn.inputs[0] is y.numpy()  # y's old value was not copied: never read
    y.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [6.0, -3.0])


# ---------------------------------------------------------------- tensors sharing memory
@pytest.mark.parametrize(
    "share", [tg.Tensor, nn.Parameter, tg.as_tensor], ids=["Tensor", "Parameter", "as_tensor"]
)
def test_a_tensor_made_around_another_shares_its_version_counter(share):
    t = tg.tensor([1.0, 2.0, 3.0], dtype=tg.float64)
    w = leaf([1.0, 1.0, 1.0])
    loss = (t * w).sum()
    alias = share(t)  # the same memory
    assert np.shares_memory(alias.numpy(), t.numpy())
    with tg.no_grad():
        alias.mul_(10)
    with pytest.raises(RuntimeError, match="modified in place"):
        loss.backward()  # w's gradient would be t's new values


def test_detach_in_place_is_refused_on_a_view():
    a = leaf([1.0, 2.0, 3.0])
    v = (a * 1)[0:2]
    with pytest.raises(RuntimeError, match="detach"):
        v.detach_()
    y = a * 2
    y.detach_()
    assert y.is_leaf and not y.requires_grad


def test_in_place_on_a_slice_of_an_expanded_tensor_is_refused_with_a_reason():
    # PyTorch allows this slice (no two of its elements share memory); NumPy's broadcast
    # arrays are read-only, so tensorgrad refuses it, saying why
    e = tg.ones((3, 4)).expand(2, 3, 4)
    with pytest.raises(RuntimeError, match="part of an expand"):
        e[1:].add_(0.5)


# ---------------------------------------------------------------- grad() and higher order
def test_grad_through_an_interior_value_changed_after_it_was_saved_raises():
    a = leaf([1.0, 2.0, 3.0])
    y = a * 2
    z = (y * y).sum()  # saves y
    y.add_(1)
    with pytest.raises(RuntimeError, match="input 0 of mul.*modified in place"):
        tg.autograd.grad(z, a)


def test_grad_with_respect_to_a_tensor_changed_in_place_is_for_its_new_value():
    a = leaf([1.0, 2.0, 3.0])
    y = a * 2
    z = y * 3  # reads no value of y: harmless
    y.add_(1)  # y is now y + 1, a new node
    (gy,) = tg.autograd.grad((z * y).sum(), y, retain_graph=True)
    np.testing.assert_array_equal(gy.numpy(), [6.0, 12.0, 18.0])  # z: PyTorch's answer too
    (ga,) = tg.autograd.grad((z * y).sum(), a)
    # d/da of 6a (2a + 1) = 24a + 6
    np.testing.assert_array_equal(ga.numpy(), [30.0, 54.0, 78.0])


def test_second_derivatives_through_in_place_ops():
    a = leaf([1.0, 2.0, 3.0])
    y = a * a
    y.mul_(a)  # a³
    (g1,) = tg.autograd.grad(y.sum(), a, create_graph=True)
    (g2,) = tg.autograd.grad(g1.sum(), a)
    np.testing.assert_allclose(g1.numpy(), [3.0, 12.0, 27.0])
    np.testing.assert_allclose(g2.numpy(), [6.0, 12.0, 18.0])


def test_second_derivatives_through_assignment_into_views():
    a = leaf([1.0, 2.0, 3.0])
    x = tg.zeros((2, 3), dtype=tg.float64)
    x[0] = a * a
    x[1, 1:] = a[:2] ** 3
    x.T[0].mul_(a[2])  # through a view of a view: column 0 times a₂
    (g1,) = tg.autograd.grad((x * x).sum(), a, create_graph=True)
    (g2,) = tg.autograd.grad(g1.sum(), a)
    # x*x sums a₀⁴a₂² + a₁⁴ + a₂⁴ + a₀⁶ + a₁⁶ (x[1, 0] = 0)
    a0, a1, a2 = 1.0, 2.0, 3.0
    np.testing.assert_allclose(
        g1.numpy(),
        [4 * a0**3 * a2**2 + 6 * a0**5, 4 * a1**3 + 6 * a1**5, 2 * a0**4 * a2 + 4 * a2**3],
    )
    hessian_rows = [
        12 * a0**2 * a2**2 + 30 * a0**4 + 8 * a0**3 * a2,
        12 * a1**2 + 30 * a1**4,
        8 * a0**3 * a2 + 2 * a0**4 + 12 * a2**2,
    ]
    np.testing.assert_allclose(g2.numpy(), hessian_rows)


def test_gradgradcheck_of_a_function_written_with_in_place_ops():
    def fn(x, w):
        h = x @ w
        h.mul_(h.detach() * 0 + 0.5)  # a constant factor, read in backward: not h itself
        h[:, 0] = h[:, 0].tanh()
        h += x.sum()
        return h.sigmoid()

    x = leaf(np.random.default_rng(0).normal(size=(3, 2)))
    w = leaf(np.random.default_rng(1).normal(size=(2, 4)))
    assert tg.autograd.gradcheck(fn, (x, w), n_directions=3)
    assert tg.autograd.gradgradcheck(fn, (x, w), n_directions=3)


# ---------------------------------------------------------------- against PyTorch, generated
# Programs of views, in-place changes (with and without grad) and ops that save values, run
# step for step in both libraries (see tests/core/inplace_programs.py): both raise, errors of
# one type, or values, requires_grad, is_leaf, gradients and hooks agree.
_INDEX = st.integers(0, 30)
_STEP = st.one_of(
    *(
        st.tuples(
            st.just(kind), st.sampled_from(names), _INDEX, _INDEX, st.integers(0, 14), st.booleans()
        )
        for kind, names in programs.KINDS.items()
    ),
    st.tuples(
        st.sampled_from(programs.OTHER), st.just(""), _INDEX, _INDEX, st.just(0), st.just(False)
    ),
)


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")  # imported once, outside hypothesis' deadlines


@settings(max_examples=300, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_STEP, min_size=1, max_size=12), st.integers(0, 2**16))
def test_programs_of_views_and_in_place_changes_agree_with_pytorch(torch, steps, seed):
    programs.compare(programs.run(tg, steps, seed), programs.run(torch, steps, seed))


@pytest.mark.slow
@settings(max_examples=3000, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_STEP, min_size=1, max_size=24), st.integers(0, 2**16))
def test_longer_programs_agree_with_pytorch(torch, steps, seed):
    programs.compare(programs.run(tg, steps, seed), programs.run(torch, steps, seed))


@pytest.mark.parametrize(
    "steps",
    [
        # found by the generated programs; each failed on the engine before its fix
        # a * 2.5 read a's value for nothing, then a changed under no_grad: PyTorch computes it
        [("unary", "mul2", 0, 0, 0, False), ("inplace", "add_", 0, 0, 0, True)],
        # retain_grad, then the tensor changed through a view of it
        [
            ("unary", "mul2", 0, 0, 0, False),
            ("retain_grad", "", 3, 0, 0, False),
            ("inplace", "mul_", 3, 0, 5, False),
        ],
        # y.mul_(y): an operand overwritten by the change it takes part in
        [("unary", "mul2", 0, 0, 0, False), ("inplace", "mul_t", 3, 3, 0, False)],
        # a view of a plain tensor, then a copy_ of a tensor that requires grad into the base
        [("view", "rows", 2, 0, 0, False), ("inplace", "copy_", 2, 0, 0, False)],
        # a flattened transpose of a transposed product, changed in place: the base's
        # gradient counted the changed region twice (the slow fuzz; see the test below)
        [
            ("view", "T", 0, 0, 0, False),
            ("unary", "mul2", 3, 0, 0, False),
            ("view", "T", 4, 0, 0, False),
            ("view", "reshape", 5, 0, 0, False),
            ("inplace", "add_", 6, 0, 0, False),
        ],
        # a view of a plain tensor, the tensor changed by one that requires grad, then the
        # view changed in place: PyTorch raised only because nothing had looked at the
        # view's grad_fn yet (see inplace_programs._inplace); the slow fuzz
        [
            ("view", "rows", 2, 0, 0, False),
            ("inplace", "add_t", 2, 0, 0, False),
            ("inplace", "add_", 3, 0, 0, False),
        ],
        # a hook on a view, then a change through a view of that view (the slow fuzz): the
        # hook is a known difference of bookkeeping (see inplace_programs._Program.changing)
        [
            ("unary", "mul2", 0, 0, 0, False),
            ("view", "rows", 3, 0, 0, False),
            ("hook", "", 4, 0, 0, False),
            ("unary", "mul2", 4, 0, 0, False),
            ("inplace", "add_", 4, 0, 5, False),
        ],
    ],
)
def test_programs_that_once_disagreed(torch, steps):
    programs.compare(programs.run(tg, steps, 0), programs.run(torch, steps, 0))


# ---------------------------------------------------------------- views of transposed memory
#: views that are views only of memory laid out transposed (a flattened transpose): the
#: write-back replays them on arrays of another layout, where a reshape copies; each works
#: on a Tensor and on a NumPy array alike
_TRANSPOSED_MEMORY_VIEWS = {
    "flat": lambda t: t.T.reshape(-1),
    "flat_slice": lambda t: t.T.reshape(-1)[1::2],
    "flat_element": lambda t: t.T.reshape(-1)[2, ...],
    "unflattened": lambda t: t.T.reshape(-1).reshape(3, 2)[1:],
}


@pytest.mark.parametrize("view", sorted(_TRANSPOSED_MEMORY_VIEWS))
def test_a_change_through_a_view_of_transposed_memory_is_counted_once(view):
    region_of = _TRANSPOSED_MEMORY_VIEWS[view]
    a = leaf(np.arange(6.0).reshape(2, 3))
    y = a.T * 1.0  # elementwise on a transpose: (3, 2) laid out transposed, as in PyTorch
    region_of(y).mul_(3.0)
    scale = np.ones((2, 3)).T  # the same layout, so that NumPy's reshapes are views too
    region_of(scale)[...] = 3.0
    np.testing.assert_array_equal(y.detach().numpy(), np.arange(6.0).reshape(2, 3).T * scale)
    weight = np.arange(1.0, 7.0).reshape(3, 2)
    (y * tg.tensor(weight)).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), (weight * scale).T)


@pytest.mark.parametrize("view", sorted(_TRANSPOSED_MEMORY_VIEWS))
def test_a_change_through_a_view_of_transposed_memory_agrees_with_pytorch(torch, view):
    results = []
    for lib in (tg, torch):
        a = lib.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
        y = a.T * 1.0
        _TRANSPOSED_MEMORY_VIEWS[view](y).add_(0.5)
        (y * lib.tensor(np.arange(1.0, 7.0).reshape(3, 2))).sum().backward()
        results.append((y.detach().numpy().copy(), a.grad.numpy().copy()))
    for ours, theirs in zip(results[0], results[1], strict=True):
        np.testing.assert_array_equal(ours, theirs)


# ---------------------------------------------------------------- leaves that stop requiring grad
@pytest.mark.parametrize(
    "stop", [lambda a: a.detach_(), lambda a: a.requires_grad_(False)], ids=["detach_", "flag"]
)
def test_a_leaf_that_stopped_requiring_grad_gets_no_gradient(stop):
    # PyTorch's rule: gradients accumulate only into leaves that require grad when backward
    # runs, even if the graph was built while they did
    a, b = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    y = (a * b).sum()
    stop(a)
    y.backward()
    assert a.grad is None
    np.testing.assert_array_equal(b.grad.numpy(), [1.0, 2.0])


def test_a_bad_index_is_an_index_error_before_the_leaf_refusal():
    """PyTorch indexes before it looks at the target: ``view_of_leaf[:, 1] = v`` with column 1
    out of range is an IndexError, not the in-place refusal (found by the generated
    programs)."""
    leaf = tg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(IndexError, match="setitem: index 1 is out of bounds"):
        leaf.unsqueeze(0).T[:, 1] = 0.5
    with pytest.raises(RuntimeError, match="leaf"):
        leaf.unsqueeze(0).T[:, 0] = 0.5
