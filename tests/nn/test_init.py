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


# --------------------------------------------------------------------- the rest of PyTorch's init
def test_every_pytorch_initialiser_is_here_with_its_signature():
    torch = pytest.importorskip("torch")
    import inspect

    names = [n for n in dir(torch.nn.init) if n.endswith("_") and not n.startswith("_")]
    for name in [*names, "calculate_gain"]:
        assert hasattr(init, name), name
        theirs = inspect.signature(getattr(torch.nn.init, name)).parameters
        ours = inspect.signature(getattr(init, name)).parameters
        assert list(ours) == list(theirs), name
        for key, parameter in theirs.items():
            assert ours[key].default == parameter.default, (name, key)


def test_generator_makes_an_initialiser_reproducible_without_the_global_stream():
    for fill in (
        init.uniform_,
        init.normal_,
        init.xavier_uniform_,
        init.xavier_normal_,
        init.kaiming_uniform_,
        init.kaiming_normal_,
        init.orthogonal_,
        init.trunc_normal_,
        lambda t, generator: init.sparse_(t, 0.5, generator=generator),
    ):
        tg.manual_seed(0)
        a = fill(fresh((6, 5)), generator=tg.Generator().manual_seed(3)).numpy().copy()
        b = fill(fresh((6, 5)), generator=tg.Generator().manual_seed(3)).numpy()
        np.testing.assert_array_equal(a, b)
        state = tg.get_rng_state()
        fill(fresh((6, 5)), generator=tg.Generator().manual_seed(4))
        assert np.array_equal(tg.get_rng_state().numpy(), state.numpy())  # global untouched


def test_trunc_normal_stays_inside_and_has_the_truncated_moments():
    values = init.trunc_normal_(fresh((200, 500)), mean=0.5, std=1.0, a=-1.0, b=1.5).numpy()
    assert values.min() >= -1.0 and values.max() <= 1.5
    # moments of N(0.5, 1) truncated to [-1, 1.5]: alpha = -1.5, beta = 1
    phi = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    cdf = lambda z: 0.5 * (1 + math.erf(z / math.sqrt(2)))  # noqa: E731
    z = cdf(1) - cdf(-1.5)
    mean = 0.5 + (phi(-1.5) - phi(1)) / z
    assert values.mean() == pytest.approx(mean, abs=0.01)
    with pytest.warns(UserWarning, match="more than 2 std"):
        init.trunc_normal_(fresh((10,)), mean=10.0, std=1.0, a=-2.0, b=2.0)
    with pytest.warns(UserWarning, match="more than 2 std"):  # std 0: the clamped mean
        np.testing.assert_array_equal(init.trunc_normal_(fresh((3,)), 5.0, 0.0).numpy(), 2.0)


@pytest.mark.parametrize("shape", [(4, 6), (6, 4), (3, 2, 2, 2)])
def test_orthogonal_rows_or_columns_are_orthonormal(shape):
    q = init.orthogonal_(fresh(shape), gain=2.0).numpy().astype(np.float64).reshape(shape[0], -1)
    small = min(q.shape)
    gram = q @ q.T if q.shape[0] == small else q.T @ q
    np.testing.assert_allclose(gram, 4.0 * np.eye(small), atol=1e-5)
    with pytest.raises(ValueError, match="2 or more dimensions"):
        init.orthogonal_(fresh((3,)))


def test_eye_dirac_and_sparse():
    np.testing.assert_array_equal(init.eye_(fresh((2, 3))).numpy(), np.eye(2, 3))
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions"):
        init.eye_(fresh((2, 2, 2)))
    weight = init.dirac_(fresh((4, 2, 3, 3)), groups=2)
    x = tg.randn(1, 4, 5, 5)
    y = nn.functional.conv2d(x, weight, padding=1, groups=2)  # passes the input through
    np.testing.assert_allclose(y.numpy(), x.numpy(), atol=1e-6)
    with pytest.raises(ValueError, match="divisible by groups"):
        init.dirac_(fresh((3, 1, 3)), groups=2)
    with pytest.raises(ValueError, match="3, 4, or 5 dimensions"):
        init.dirac_(fresh((3, 3)))
    values = init.sparse_(fresh((10, 7)), sparsity=0.3, std=0.5).numpy()
    assert np.all((values == 0).sum(axis=0) >= 3)  # ceil(0.3 · 10) zeros in every column
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions"):
        init.sparse_(fresh((3,)), 0.1)


def test_deprecated_names_warn_and_fill():
    with pytest.warns(FutureWarning, match="nn.init.xavier_uniform_"):
        init.xavier_uniform(fresh((3, 4)))
    with pytest.warns(FutureWarning):
        assert init.constant(fresh((2,)), 3.0).numpy().tolist() == [3.0, 3.0]


def test_new_initialisers_agree_with_torch_where_deterministic_and_in_distribution():
    torch = pytest.importorskip("torch")
    for shape, groups in [((4, 2, 3), 2), ((6, 3, 3, 3), 1), ((2, 2, 1, 3, 3), 1)]:
        theirs = torch.nn.init.dirac_(torch.empty(shape), groups=groups).numpy()
        np.testing.assert_array_equal(init.dirac_(fresh(shape), groups=groups).numpy(), theirs)
    np.testing.assert_array_equal(
        init.eye_(fresh((3, 5))).numpy(), torch.nn.init.eye_(torch.empty(3, 5)).numpy()
    )
    ours = init.trunc_normal_(fresh((400, 250)), 0.2, 0.7, -0.5, 1.0).numpy()
    theirs = torch.nn.init.trunc_normal_(torch.empty(400, 250), 0.2, 0.7, -0.5, 1.0).numpy()
    assert ours.mean() == pytest.approx(theirs.mean(), abs=0.01)
    assert ours.std() == pytest.approx(theirs.std(), abs=0.01)
