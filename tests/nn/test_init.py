"""nn.init: PyTorch's gains and fans, the statistics of each initialiser, reproducibility."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import nn
from tensorgrad.nn import init

SHAPE = (300, 400)  # fan_out 300, fan_in 400


def fresh(shape=SHAPE) -> nn.Parameter:
    return nn.Parameter(np.zeros(shape, dtype=np.float32))


@pytest.mark.parametrize(
    "nonlinearity, param, gain",
    [
        ("linear", None, 1.0),
        ("sigmoid", None, 1.0),
        ("conv2d", None, 1.0),
        ("tanh", None, 5 / 3),
        ("relu", None, math.sqrt(2)),
        ("leaky_relu", None, math.sqrt(2 / (1 + 0.01**2))),
        ("leaky_relu", 0.2, math.sqrt(2 / 1.04)),
        ("leaky_relu", math.sqrt(5), math.sqrt(1 / 3)),
        ("selu", None, 0.75),
    ],
)
def test_calculate_gain(nonlinearity, param, gain):
    assert init.calculate_gain(nonlinearity, param) == pytest.approx(gain, rel=1e-15)


def test_calculate_gain_errors():
    with pytest.raises(ValueError, match="unsupported nonlinearity"):
        init.calculate_gain("swish")
    with pytest.raises(ValueError, match="not a valid number"):
        init.calculate_gain("leaky_relu", True)


@pytest.mark.parametrize(
    "fill, bound",
    [
        (lambda t: init.kaiming_uniform_(t), math.sqrt(3) * math.sqrt(2) / math.sqrt(400)),
        (
            lambda t: init.kaiming_uniform_(t, mode="fan_out", nonlinearity="relu"),
            math.sqrt(6 / 300),
        ),
        (lambda t: init.kaiming_uniform_(t, a=math.sqrt(5)), 1 / math.sqrt(400)),
        (lambda t: init.xavier_uniform_(t), math.sqrt(6 / 700)),
        (lambda t: init.xavier_uniform_(t, gain=2.0), 2 * math.sqrt(6 / 700)),
        (lambda t: init.uniform_(t, -0.3, 0.3), 0.3),
    ],
)
def test_uniform_initialisers_fill_their_interval(fill, bound):
    t = fresh()
    assert fill(t) is t
    values = t.numpy()
    assert values.dtype == np.float32
    assert np.abs(values).max() <= bound
    assert np.abs(values).max() > 0.999 * bound
    assert abs(values.mean()) < 0.01 * bound
    assert values.std() == pytest.approx(bound / math.sqrt(3), rel=0.01)  # U(-b, b): std b/√3


@pytest.mark.parametrize(
    "fill, std",
    [
        (lambda t: init.kaiming_normal_(t), math.sqrt(2 / 400)),
        (
            lambda t: init.kaiming_normal_(t, mode="fan_out", nonlinearity="tanh"),
            5 / 3 / math.sqrt(300),
        ),
        (lambda t: init.xavier_normal_(t), math.sqrt(2 / 700)),
        (lambda t: init.normal_(t, 0.0, 0.02), 0.02),
    ],
)
def test_normal_initialisers_have_their_std(fill, std):
    values = fill(fresh()).numpy()
    assert values.std() == pytest.approx(std, rel=0.02)
    assert abs(values.mean()) < 0.02 * std


def test_normal_mean_and_constants():
    assert init.normal_(fresh((1000,)), 3.0, 0.1).numpy().mean() == pytest.approx(3.0, abs=0.02)
    np.testing.assert_array_equal(init.constant_(fresh((2, 2)), 0.5).numpy(), 0.5)
    np.testing.assert_array_equal(init.ones_(fresh((2, 2))).numpy(), 1.0)
    np.testing.assert_array_equal(init.zeros_(init.ones_(fresh((2, 2)))).numpy(), 0.0)


def test_fans_include_the_receptive_field():
    t = nn.Parameter(np.zeros((8, 4, 3, 3), dtype=np.float32))  # a conv weight
    init.kaiming_uniform_(t)
    assert np.abs(t.numpy()).max() <= math.sqrt(6 / (4 * 9))
    init.xavier_uniform_(t)
    assert np.abs(t.numpy()).max() <= math.sqrt(6 / (4 * 9 + 8 * 9))
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(fresh((5,)))
    with pytest.raises(ValueError, match="fan_in' or 'fan_out"):
        init.kaiming_normal_(fresh(), mode="fan_avg")


def test_init_works_on_parameters_while_grad_is_enabled_and_bumps_version():
    t = fresh()
    version = t._version
    assert tg.is_grad_enabled()
    init.kaiming_uniform_(t)
    assert t._version > version and t.requires_grad


def test_manual_seed_makes_initialisation_reproducible():
    tg.manual_seed(42)
    a = init.xavier_normal_(fresh()).numpy().copy()
    b = init.kaiming_uniform_(fresh()).numpy().copy()
    tg.manual_seed(42)
    np.testing.assert_array_equal(init.xavier_normal_(fresh()).numpy(), a)
    np.testing.assert_array_equal(init.kaiming_uniform_(fresh()).numpy(), b)
    assert not np.array_equal(init.xavier_normal_(fresh()).numpy(), a)


# --------------------------------------------------------------------- what is refused
@pytest.mark.parametrize(
    "fill, error, message",
    [
        (
            lambda t: init.uniform_(t, 1, 0),
            RuntimeError,
            r"\[from, to\) range, but found from=1 > to=0",
        ),
        (lambda t: init.uniform_(t, 0, math.inf), RuntimeError, "b=inf is out of bounds"),
        (lambda t: init.uniform_(t, math.nan, 1), RuntimeError, "a=nan is out of bounds"),
        (lambda t: init.uniform_(t, "0", 1), TypeError, "uniform_: a must be a number, got str"),
        (
            lambda t: init.normal_(t, 0, -1),
            RuntimeError,
            "normal expects std >= 0.0, but found std -1",
        ),
        (lambda t: init.normal_(t, None), TypeError, "normal_: mean must be a number"),
    ],
)
def test_bad_bounds_are_refused_as_pytorch_refuses_them(fill, error, message):
    tensor = fresh((3,))
    with pytest.raises(error, match=message):
        fill(tensor)
    np.testing.assert_array_equal(tensor.numpy(), 0.0)  # untouched


def test_equal_bounds_fill_with_that_value():
    np.testing.assert_array_equal(init.uniform_(fresh((3,)), 0.5, 0.5).numpy(), 0.5)
    np.testing.assert_array_equal(init.normal_(fresh((3,)), 2.0, 0.0).numpy(), 2.0)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.bool_])
@pytest.mark.parametrize(
    "fill",
    [
        init.uniform_,
        init.normal_,
        init.kaiming_uniform_,
        init.kaiming_normal_,
        init.xavier_uniform_,
        init.xavier_normal_,
    ],
)
def test_random_fills_of_integer_tensors_are_refused(fill, dtype):
    """NumPy would round the draws silently; PyTorch has no random fill for these dtypes."""
    tensor = tg.Tensor(np.zeros((3, 4), dtype=dtype))
    with pytest.raises(
        NotImplementedError, match=f"random fill not implemented for {np.dtype(dtype)}"
    ):
        fill(tensor)
    np.testing.assert_array_equal(tensor.numpy(), 0)
    init.constant_(tensor, 1)  # a constant is fine, as in PyTorch
    np.testing.assert_array_equal(tensor.numpy(), 1)


@pytest.mark.parametrize(
    "name, args, integer",
    [
        ("uniform_", (1.0, 0.0), False),
        ("normal_", (0.0, -1.0), False),
        ("uniform_", (), True),
        ("normal_", (), True),
        ("kaiming_uniform_", (), True),
        ("xavier_normal_", (), True),
    ],
)
def test_pytorch_refuses_the_same_with_the_same_error_type(name, args, integer):
    torch = pytest.importorskip("torch")
    theirs = torch.zeros(3, 4, dtype=torch.int64 if integer else torch.float32)
    ours = tg.Tensor(np.zeros((3, 4), dtype=np.int64 if integer else np.float32))
    with pytest.raises(Exception) as caught:
        getattr(torch.nn.init, name)(theirs, *args)
    with pytest.raises(caught.type):
        getattr(init, name)(ours, *args)
