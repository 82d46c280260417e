"""tg.from_dlpack: zero-copy from NumPy, PyTorch and tensorgrad itself; and back."""

from __future__ import annotations

import numpy as np
import pytest

import tensorgrad as tg


def test_from_numpy_shares_memory():
    array = np.arange(6.0).reshape(2, 3)
    t = tg.from_dlpack(array)
    assert t.dtype == np.float64 and t.shape == (2, 3)
    array[0, 0] = 100.0
    assert t[0, 0].item() == 100.0
    t.numpy()[1, 2] = -1.0
    assert array[1, 2] == -1.0


def test_from_a_tensor_shares_memory():
    a = tg.arange(4)
    b = tg.from_dlpack(a)
    b.numpy()[0] = 9
    assert a[0].item() == 9 and not b.requires_grad


def test_round_trip_with_torch_is_zero_copy():
    torch = pytest.importorskip("torch")
    theirs = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    ours = tg.from_dlpack(theirs)
    assert ours.dtype == np.float32 and ours.shape == (2, 3)
    theirs[1, 1] = 42.0
    assert ours[1, 1].item() == 42.0
    back = torch.from_dlpack(ours)
    ours.numpy()[0, 0] = -5.0
    assert back[0, 0].item() == -5.0
    strided = torch.arange(12.0).reshape(3, 4)[:, ::2]  # a non-contiguous view
    np.testing.assert_array_equal(tg.from_dlpack(strided).numpy(), strided.numpy())


def test_from_dlpack_errors():
    with pytest.raises(TypeError, match="from_dlpack: expected an object with __dlpack__"):
        tg.from_dlpack([1, 2])
    with pytest.raises(tg.UnsupportedError, match="complex128.*porting.md"):
        tg.from_dlpack(np.zeros(2, np.complex128))

    class OnAGpu:
        def __dlpack__(self, **kwargs):
            raise AssertionError("not reached")

        def __dlpack_device__(self):
            return (2, 0)  # kDLCUDA

    with pytest.raises(tg.UnsupportedError, match="device type 2, not the CPU"):
        tg.from_dlpack(OnAGpu())
