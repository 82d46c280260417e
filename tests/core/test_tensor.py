"""The Tensor's surface (``tensorgrad/core/tensor.py``): attributes, operators, in-place
operations and NumPy interoperability. Making tensors: ``test_creation.py``."""

from __future__ import annotations

import numpy as np
import pytest

import tensorgrad as tg


# ----------------------------------------------------------------------- attributes
def test_attributes():
    t = tg.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    assert t.shape == (2, 3) and t.ndim == 2 and t.size == 6 and t.numel() == 6
    assert t.T.shape == (3, 2)
    assert t.is_leaf and t.grad is None and t.grad_fn is None
    assert t.numpy() is t.numpy()
    y = t * 2
    assert not y.is_leaf and type(y.grad_fn.op).__name__ == "Mul"
    assert repr(y.grad_fn) == "<MulBackward>"


def test_item_and_conversions():
    assert tg.tensor([[2.5]]).item() == 2.5
    assert float(tg.tensor(1.5)) == 1.5 and int(tg.tensor(3.0)) == 3
    with pytest.raises(RuntimeError, match=r"2 elements cannot be converted.*shape \(2,\)"):
        tg.tensor([1.0, 2.0]).item()
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(tg.tensor([1.0, 2.0]))
    assert bool(tg.tensor([1.0]))
    assert len(tg.zeros(4, 2)) == 4
    with pytest.raises(TypeError, match="len"):
        len(tg.tensor(1.0))
    assert [row.tolist() for row in tg.tensor([[1.0], [2.0]])] == [[1.0], [2.0]]


def test_detach_shares_memory_and_drops_grad():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    d = (x * 2).detach()
    assert not d.requires_grad and d.is_leaf
    assert np.shares_memory(x.detach().numpy(), x.numpy())


def test_requires_grad_flag():
    t = tg.tensor([1.0])
    assert t.requires_grad_() is t and t.requires_grad
    with pytest.raises(RuntimeError, match="only floating-point tensors.*int64"):
        tg.tensor(np.array([1])).requires_grad_()
    y = t * 2
    with pytest.raises(RuntimeError, match="only a leaf"):
        y.requires_grad_(False)
    with pytest.raises(RuntimeError, match="does not require grad"):
        tg.tensor([1.0]).retain_grad()


def test_grad_assignment_is_checked():
    t = tg.tensor([1.0, 2.0], requires_grad=True)
    t.grad = np.ones(2, np.float32)
    assert isinstance(t.grad, tg.Tensor)
    with pytest.raises(ValueError, match=r"shape \(3,\).*shape \(2,\)"):
        t.grad = np.ones(3)


def test_repr():
    assert repr(tg.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert repr(tg.tensor([1.0], requires_grad=True)) == "tensor([1.], requires_grad=True)"
    assert repr(tg.tensor(np.arange(2))) == "tensor([0, 1])"  # int64 and bool go without dtype
    assert repr(tg.tensor([1.0], dtype=tg.float64)) == "tensor([1.], dtype=float64)"
    assert repr(tg.zeros((0, 3))) == "tensor([], size=(0, 3))"  # the shape, where it is lost
    assert repr(tg.zeros(0, dtype=tg.int64)) == "tensor([], dtype=int64)"
    x = tg.tensor(2.0, requires_grad=True)
    assert repr(x * x) == "tensor(4., grad_fn=<MulBackward>)"


# ----------------------------------------------------------------------- operators
def test_operators_with_numbers_on_either_side():
    x = tg.tensor([1.0, 2.0, 4.0], requires_grad=True)
    results = {
        "2*x": (2 * x, [2, 4, 8]),
        "x*2": (x * 2, [2, 4, 8]),
        "1-x": (1 - x, [0, -1, -3]),
        "x-1": (x - 1, [0, 1, 3]),
        "8/x": (8 / x, [8, 4, 2]),
        "x/2": (x / 2, [0.5, 1, 2]),
        "2**x": (2**x, [2, 4, 16]),
        "x**2": (x**2, [1, 4, 16]),
        "-x": (-x, [-1, -2, -4]),
        "x+1": (x + 1, [2, 3, 5]),
        "1+x": (1 + x, [2, 3, 5]),
    }
    for name, (result, expected) in results.items():
        assert isinstance(result, tg.Tensor), name
        assert result.dtype == np.float32, name
        np.testing.assert_allclose(result.numpy(), expected, err_msg=name)


def test_ndarray_on_the_left_gives_a_tensor():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    for result in (np.ones(2) + x, np.ones(2) * x, np.ones(2) - x, np.ones(2) / x, np.eye(2) @ x):
        assert isinstance(result, tg.Tensor)
        assert result.numpy().dtype != object
        assert result.requires_grad


def test_float32_stays_float32_with_python_and_numpy_scalars():
    x = tg.tensor([1.0, 2.0])
    assert (x * np.float64(2.0)).dtype == np.float32
    assert (x + 1e-300).dtype == np.float32
    assert (x * 3).dtype == np.float32


def test_numpy_functions_on_tensors():
    x = tg.tensor([0.5, 1.5], requires_grad=True)
    y = np.exp(x)
    assert isinstance(y, tg.Tensor) and y.requires_grad
    s = np.sum(x * x)
    s.backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 3.0])
    assert np.shape(x) == (2,)
    np.testing.assert_array_equal(np.asarray(x), x.numpy())
    with pytest.raises(TypeError, match=r"np.sort is not supported on tensorgrad Tensors that"):
        np.sort(x)  # would lose the gradient
    assert np.array_equal(np.sort(x.detach()), [0.5, 1.5])  # without one: NumPy's result


def test_comparisons_return_bool_tensors_without_grad():
    x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    for mask in (x > 1, x >= 2, x < 2, x <= 1, x == 2, x != 2):
        assert mask.dtype == np.bool_ and not mask.requires_grad
    np.testing.assert_array_equal((x > 1).numpy(), [False, True, True])
    np.testing.assert_array_equal(((x > 1) & (x < 3)).numpy(), [False, True, False])
    np.testing.assert_array_equal((~(x > 1)).numpy(), [True, False, False])


def test_unsupported_operand_type():
    with pytest.raises(TypeError):
        tg.tensor([1.0]) + "a"


def test_in_place_operations_bump_version():
    t = tg.zeros(3)
    versions = [t._version]
    for change in (
        lambda: t.__iadd__(1),
        lambda: t.__imul__(3),
        lambda: t.__setitem__(0, 5.0),
        lambda: t.sub_(1),
        lambda: t.div_(2),
    ):
        change()
        versions.append(t._version)
    assert t.tolist() == [2.0, 1.0, 1.0]
    assert versions == sorted(set(versions)) and versions[0] == 0  # each change moves it on
    t.zero_()
    assert t.tolist() == [0.0, 0.0, 0.0] and t._version > versions[-1]


def test_in_place_cast_error_names_op():
    t = tg.tensor(np.arange(3))
    with pytest.raises(RuntimeError, match="add_: the result type cannot be cast.*int64"):
        t += 0.5


# ----------------------------------------------------------------------- shape helpers
def test_split_follows_pytorch_rule():
    x = tg.arange(7.0)
    assert [p.shape for p in x.split(3)] == [(3,), (3,), (1,)]
    assert [p.tolist() for p in tg.split(x, [2, 5])] == [[0, 1], [2, 3, 4, 5, 6]]
    with pytest.raises(ValueError, match="do not add up"):
        x.split([2, 2])


def test_squeeze_unsqueeze_flatten():
    x = tg.zeros(2, 1, 3)
    assert x.squeeze().shape == (2, 3)
    assert x.squeeze(1).shape == (2, 3)
    assert x.unsqueeze(0).shape == (1, 2, 1, 3)
    assert x.unsqueeze(-1).shape == (2, 1, 3, 1)
    assert x.flatten().shape == (6,)
    assert x.flatten(1).shape == (2, 3)
    assert x.squeeze(0).shape == (2, 1, 3)  # PyTorch's rule: a dimension that is not 1 stays
    assert x.squeeze((0, 1)).shape == (2, 3)


def test_where_needs_a_bool_condition():
    with pytest.raises(TypeError, match="where: condition must be a bool tensor"):
        tg.where(tg.ones(2), tg.ones(2), tg.zeros(2))


# ----------------------------------------------------------------------- identity and gradients
def test_tensors_hash_by_identity():
    a, b = tg.tensor([1.0]), tg.tensor([1.0])
    assert len({a, b}) == 2
    assert (a == b).numpy().all()


def test_requires_grad_on_integer_tensor():
    with pytest.raises(
        RuntimeError, match="only floating-point tensors can require gradients.*int64"
    ):
        tg.tensor(np.arange(3), requires_grad=True)


def test_comparisons_promote_as_pytorch_before_comparing():
    """int32 tensor vs a Python float compares in float32 (PyTorch's result type), where
    -1.9999999999999998 is -2; NumPy would compare in float64 (found by the API fuzz)."""
    x = tg.tensor(np.array(-2, dtype=np.int32))
    near = -1.9999999999999998
    assert bool(x == near) and not bool(x != near) and not bool(x < near)
    assert (tg.tensor([1, 2]) == tg.tensor([1.0, 2.5])).tolist() == [True, False]


# ----------------------------------------------------------------------- contiguous and view
def test_contiguous_lays_a_transposed_tensor_out_row_major_so_view_works():
    """minGPT's ``y.transpose(1, 2).contiguous().view(B, T, C)``."""
    x = tg.tensor(np.arange(24.0).reshape(2, 3, 4), requires_grad=True)
    y = x.transpose(1, 2)
    assert not y.is_contiguous()
    c = y.contiguous()
    assert c.is_contiguous() and c.numpy().flags.c_contiguous
    np.testing.assert_array_equal(c.numpy(), np.arange(24.0).reshape(2, 3, 4).transpose(0, 2, 1))
    v = c.view(2, 12)
    assert np.shares_memory(v.numpy(), c.numpy())
    (v * tg.arange(24.0).view(2, 12)).sum().backward()
    np.testing.assert_array_equal(
        x.grad.numpy(), np.arange(24.0).reshape(2, 4, 3).transpose(0, 2, 1)
    )
    assert x.contiguous() is x  # already row-major: the tensor itself, as PyTorch
    assert y.clone().is_contiguous() is False  # clone keeps the layout (preserve_format)


def test_view_of_a_non_contiguous_tensor_raises_pytorchs_error():
    y = tg.zeros(2, 3, 4).transpose(1, 2)
    with pytest.raises(RuntimeError, match=r"view size is not compatible.*Use \.reshape"):
        y.view(2, 12)
    assert y.reshape(2, 12).shape == (2, 12)
    sliced = tg.zeros(4, 6)[:, :3]  # not contiguous, but its rows split without a copy
    assert sliced.view(2, 2, 3).shape == (2, 2, 3)


def test_contiguous_and_view_agree_with_torch():
    torch = pytest.importorskip("torch")
    values = np.random.default_rng(0).standard_normal((2, 3, 4, 5))
    ours, theirs = tg.tensor(values), torch.tensor(values)
    for dims in [(1, 2), (0, 3), (2, 3)]:
        a, b = ours.transpose(*dims), theirs.transpose(*dims)
        assert a.is_contiguous() == b.is_contiguous()
        assert a.contiguous().is_contiguous() and b.contiguous().is_contiguous()
        np.testing.assert_array_equal(
            a.contiguous().view(-1).numpy(), b.contiguous().view(-1).numpy()
        )
    for view in [lambda t: t[:, :, :2], lambda t: t[:, 1], lambda t: t.transpose(0, 1)]:
        a, b = view(ours), view(theirs)
        for shape in [(-1,), (a.shape[0], -1), (*a.shape[:-1], a.shape[-1])]:
            try:
                b.view(*shape)
            except RuntimeError:
                with pytest.raises(RuntimeError, match="view size is not compatible"):
                    a.view(*shape)
            else:
                np.testing.assert_array_equal(a.view(*shape).numpy(), b.view(*shape).numpy())


# ----------------------------------------------------------------------- type() and device flags
def test_type_names_and_casts():
    x = tg.tensor([1.5, 2.0])
    assert x.type() == "torch.FloatTensor" and x.double().type() == "torch.DoubleTensor"
    assert tg.tensor([1]).type() == "torch.LongTensor" and tg.tensor([True]).type() == (
        "torch.BoolTensor"
    )
    assert x.type(tg.float64).dtype == tg.float64
    assert x.type("torch.LongTensor").tolist() == [1, 2]
    assert x.type("torch.FloatTensor") is x  # already that type: itself, as PyTorch
    with pytest.raises(ValueError, match="invalid type"):
        x.type("torch.NopeTensor")
    with pytest.raises(tg.UnsupportedError, match="CPU only"):
        x.type("torch.cuda.FloatTensor")
    assert x.is_cpu and not (x.is_cuda or x.is_xpu or x.is_mps or x.is_meta)


def test_type_agrees_with_torch():
    torch = pytest.importorskip("torch")
    for dtype in [
        "float32",
        "float64",
        "float16",
        "int64",
        "int32",
        "int16",
        "int8",
        "uint8",
        "bool",
    ]:
        ours = tg.zeros(2, dtype=getattr(tg, dtype) if dtype != "bool" else tg.bool)
        theirs = torch.zeros(2, dtype=getattr(torch, dtype))
        assert ours.type() == theirs.type()
        assert ours.type(tg.float64).type() == theirs.type(torch.float64).type()
    assert tg.zeros(1).is_xpu == torch.zeros(1).is_xpu and tg.zeros(1).is_cuda is False


def test_view_after_a_convolution_works_as_in_pytorch():
    """``x.view(x.size(0), -1)`` after a convolution (LeNet's ``x.view(-1, 16 * 5 * 5)``,
    PyTorch-GAN's discriminators): tensorgrad keeps the activations channels-last inside
    (docs/conv.md), PyTorch's are contiguous, so the view must work; gradients flow. A
    channels-last view the user made keeps PyTorch's error."""
    tg.manual_seed(0)
    x = tg.randn(2, 3, 12, 12, requires_grad=True)
    conv = tg.nn.Conv2d(3, 4, 3, stride=2, padding=1)
    pooled = tg.nn.functional.max_pool2d(tg.nn.functional.relu(conv(x)), 2)
    normed = tg.nn.BatchNorm2d(4)(conv(x))
    for out in (conv(x), pooled, normed):
        flat = out.view(out.size(0), -1)
        np.testing.assert_array_equal(flat.detach().numpy(), out.detach().numpy().reshape(2, -1))
    pooled.view(-1, 4 * 3 * 3).sum().backward()
    assert x.grad is not None and x.grad.shape == (2, 3, 12, 12)
    permuted = tg.randn(2, 5, 6, 3).permute(0, 3, 1, 2)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        permuted.view(2, -1)


def test_view_after_a_convolution_agrees_with_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    ours = tg.nn.functional.conv2d(tg.tensor(x), tg.tensor(w)).view(2, -1)
    theirs = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w)).view(2, -1)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-5)
