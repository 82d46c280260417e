"""Random sampling (``tensorgrad/core/sampling.py``): multinomial, bernoulli, normal and the
in-place fills, by their statistics, their seeded reproducibility and PyTorch's errors; and
``unique``/``unique_consecutive``/``kthvalue``/``msort`` against PyTorch and NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import tensorgrad as tg

WEIGHTS = [1.0, 2.0, 3.0, 4.0]


def generator(seed=0):
    return tg.Generator().manual_seed(seed)


# --------------------------------------------------------------------------- multinomial
def test_multinomial_with_replacement_follows_the_weights():
    drawn = tg.multinomial(tg.tensor(WEIGHTS), 200_000, replacement=True, generator=generator())
    assert drawn.dtype == tg.int64 and drawn.shape == (200_000,)
    np.testing.assert_allclose(
        np.bincount(drawn.numpy(), minlength=4) / 2e5, [0.1, 0.2, 0.3, 0.4], atol=0.005
    )


def test_multinomial_without_replacement_draws_each_category_once_by_successive_weights():
    rows = tg.tensor(WEIGHTS).expand(40_000, 4).contiguous()
    drawn = tg.multinomial(rows, 4, generator=generator()).numpy()
    assert drawn.shape == (40_000, 4)
    assert np.all(np.sort(drawn, axis=1) == np.arange(4))  # a permutation per row
    p = np.array(WEIGHTS) / 10
    second = [sum(p[j] * p[i] / (1 - p[j]) for j in range(4) if j != i) for i in range(4)]
    np.testing.assert_allclose(np.bincount(drawn[:, 1], minlength=4) / 4e4, second, atol=0.01)


def test_multinomial_never_draws_a_zero_weight_while_others_remain():
    weights = tg.tensor([[0.0, 1.0, 0.0, 3.0], [5.0, 0.0, 0.0, 0.0]])
    with_replacement = tg.multinomial(weights, 1000, True, generator=generator()).numpy()
    assert set(with_replacement[0]) <= {1, 3} and set(with_replacement[1]) == {0}
    without = tg.multinomial(weights, 2, generator=generator()).numpy()
    assert set(without[0]) == {1, 3} and without[1, 0] == 0
    assert tg.multinomial(tg.zeros(0, 3), 2).shape == (0, 2)


def test_multinomial_is_reproducible_with_a_seed_and_a_generator():
    tg.manual_seed(5)
    a = tg.tensor(WEIGHTS).multinomial(3)
    tg.manual_seed(5)
    assert tg.tensor(WEIGHTS).multinomial(3).tolist() == a.tolist()
    b = tg.multinomial(tg.tensor(WEIGHTS), 10, True, generator=generator(7))
    assert (
        tg.multinomial(tg.tensor(WEIGHTS), 10, True, generator=generator(7)).tolist() == b.tolist()
    )


@pytest.mark.parametrize(
    ("weights", "n", "replacement", "message"),
    [
        ([0.2, 0.8], 3, False, "cannot sample n_sample > prob_dist.size"),
        ([0.2, 0.8], 0, True, "cannot sample n_sample <= 0 samples"),
        ([-1.0, 2.0], 1, True, "element < 0"),
        ([float("nan"), 1.0], 1, True, "`inf`, `nan`"),
        ([float("inf"), 1.0], 1, False, "`inf`, `nan`"),
        ([0.0, 0.0], 1, True, "sum of probabilities <= 0"),
        ([[[1.0]]], 1, True, "prob_dist must be 1 or 2 dim"),
        (1.0, 1, True, "prob_dist must be 1 or 2 dim"),
    ],
)
def test_multinomial_errors_are_pytorchs(weights, n, replacement, message):
    with pytest.raises(RuntimeError, match=message):
        tg.multinomial(tg.tensor(weights), n, replacement)
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError, match=message.replace("`", ".")):
        torch.multinomial(torch.tensor(weights), n, replacement)


def test_multinomial_refuses_integer_weights():
    with pytest.raises(RuntimeError, match="floating-point dtypes"):
        tg.multinomial(tg.tensor([1, 2]), 1)


# --------------------------------------------------------------------------- bernoulli
def test_bernoulli_draws_ones_with_the_given_probabilities():
    p = tg.tensor([0.0, 0.25, 1.0], dtype=tg.float64).expand(100_000, 3)
    drawn = tg.bernoulli(p, generator=generator())
    assert drawn.dtype == tg.float64 and set(np.unique(drawn.numpy())) <= {0.0, 1.0}
    np.testing.assert_allclose(drawn.numpy().mean(axis=0), [0.0, 0.25, 1.0], atol=0.005)
    assert tg.bernoulli(tg.zeros(50_000), 0.5).numpy().mean() == pytest.approx(0.5, abs=0.01)
    x = tg.zeros(40_000)
    assert x.bernoulli_(0.75) is x and x.numpy().mean() == pytest.approx(0.75, abs=0.01)
    x.bernoulli_(tg.tensor([0.0, 1.0]).repeat(20_000))
    assert x.numpy()[::2].sum() == 0 and x.numpy()[1::2].sum() == 20_000
    assert tg.zeros(3, dtype=tg.int64).bernoulli_(1.0).tolist() == [1, 1, 1]


def test_bernoulli_errors():
    with pytest.raises(RuntimeError, match="p_in >= 0 && p_in <= 1"):
        tg.bernoulli(tg.tensor([0.5, 2.0]))
    with pytest.raises(
        RuntimeError, match="bernoulli_ expects p to be in \\[0, 1\\], but got p=1.5"
    ):
        tg.zeros(3).bernoulli_(1.5)
    with pytest.raises(NotImplementedError):
        tg.bernoulli(tg.tensor([1, 0]))


# --------------------------------------------------------------------------- normal, fills
def test_normal_forms_dtypes_and_statistics():
    a = tg.normal(tg.full((100_000,), 2.0), tg.full((100_000,), 3.0), generator=generator())
    assert a.dtype == tg.float32
    assert a.numpy().mean() == pytest.approx(2.0, abs=0.05) and a.numpy().std() == pytest.approx(
        3.0, rel=0.02
    )
    assert tg.normal(0.0, tg.ones(3)).dtype == tg.float32
    assert tg.normal(tg.zeros(3, dtype=tg.float64)).dtype == tg.float64
    assert tg.normal(0.0, 1.0, (2, 3)).shape == (2, 3)
    assert tg.normal(0.0, 1.0, size=(4,), dtype=tg.float64).dtype == tg.float64
    assert tg.normal(tg.zeros(2, 1), tg.ones(3)).shape == (2, 3)
    np.testing.assert_array_equal(tg.normal(tg.tensor([1.0, -2.0]), 0.0).numpy(), [1.0, -2.0])
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0"):
        tg.normal(0.0, -1.0, (2,))
    with pytest.raises(RuntimeError, match="normal expects all elements of std >= 0.0"):
        tg.normal(tg.zeros(2), tg.tensor([1.0, -1.0]))
    with pytest.raises(RuntimeError, match="do not broadcast"):
        tg.normal(tg.zeros(2), tg.ones(3))


def test_normal_gives_mean_and_std_a_zero_gradient_as_pytorch():
    mean = tg.zeros(3, requires_grad=True)
    std = tg.ones(3, requires_grad=True)
    out = tg.normal(mean, std)
    assert out.requires_grad
    out.sum().backward()
    assert mean.grad.tolist() == [0.0, 0.0, 0.0] and std.grad.tolist() == [0.0, 0.0, 0.0]


def test_in_place_fills_take_a_generator():
    a = tg.zeros(5).uniform_(-1, 1, generator=generator(1))
    b = tg.zeros(5).uniform_(-1, 1, generator=generator(1))
    assert a.tolist() == b.tolist() and a.numpy().min() >= -1 and a.numpy().max() < 1
    c = tg.zeros(5).normal_(3.0, 0.5, generator=generator(2))
    assert c.tolist() == tg.zeros(5).normal_(3.0, 0.5, generator=generator(2)).tolist()
    with pytest.raises(RuntimeError, match="from=1 > to=0"):
        tg.zeros(3).uniform_(1, 0)
    with pytest.raises(NotImplementedError, match="int64"):
        tg.zeros(3, dtype=tg.int64).normal_()


def test_samplers_refuse_what_pytorch_refuses_with_the_same_types():
    torch = pytest.importorskip("torch")
    calls = [
        lambda m: m.zeros(3).bernoulli_(1.5),
        lambda m: m.bernoulli(m.tensor([0.5, 2.0])),
        lambda m: m.normal(m.zeros(3), -1.0),
        lambda m: m.zeros(3).normal_(0, -1),
        lambda m: m.zeros(3).uniform_(1, 0),
        lambda m: m.zeros(3, dtype=m.int64).uniform_(0, 1),
        lambda m: m.multinomial(m.tensor([1, 2]), 1),
        lambda m: m.multinomial(m.ones(2, 2, 2), 1),
    ]
    for call in calls:
        with pytest.raises(Exception) as theirs:
            call(torch)
        with pytest.raises(theirs.type):
            call(tg)


# --------------------------------------------------------------------------- unique and friends
UNIQUE_CASES = [
    ([3, 1, 2, 3, 1], {"return_inverse": True, "return_counts": True}),
    ([[3, 1], [2, 3], [3, 1]], {"dim": 0, "return_inverse": True, "return_counts": True}),
    ([[3, 1], [2, 3], [3, 1]], {"return_inverse": True}),
    ([[3, 1], [2, 3], [3, 1]], {"dim": 1, "return_inverse": True}),
    ([[3, 1], [2, 3], [3, 1]], {"dim": -1, "return_counts": True}),
    ([3.0, float("nan"), float("nan"), 1.0], {"return_counts": True}),  # NaNs stay apart
    ([True, False, True], {}),
    (3, {"return_inverse": True}),
    ([], {"return_inverse": True, "return_counts": True}),
]


def _as_lists(result):
    result = result if isinstance(result, tuple) else (result,)
    return [(tuple(r.shape), np.asarray(r.tolist(), dtype=float).tolist()) for r in result]


@pytest.mark.parametrize(("data", "kwargs"), UNIQUE_CASES)
def test_unique_agrees_with_numpy(data, kwargs):
    result = tg.unique(tg.tensor(data), **kwargs)
    values = result[0] if isinstance(result, tuple) else result
    flat = np.asarray(data).reshape(-1) if "dim" not in kwargs else np.asarray(data)
    expected = np.unique(flat, axis=kwargs.get("dim"), equal_nan=False)
    np.testing.assert_array_equal(values.numpy(), expected)
    if kwargs.get("return_inverse"):
        inverse = result[1].numpy()
        axis = kwargs.get("dim")
        rebuilt = (
            values.numpy()[inverse] if axis is None else np.take(values.numpy(), inverse, axis)
        )
        np.testing.assert_array_equal(
            rebuilt, np.asarray(data).reshape(np.shape(inverse) if axis is None else np.shape(data))
        )


@pytest.mark.parametrize(("data", "kwargs"), UNIQUE_CASES)
def test_unique_agrees_with_torch(data, kwargs):
    torch = pytest.importorskip("torch")
    assert (
        _as_lists(tg.unique(tg.tensor(data), **kwargs))
        == _as_lists(torch.unique(torch.tensor(data), **kwargs))
        or np.isnan(data).any()
    )
    if not np.isnan(np.asarray(data, dtype=float)).any():
        return
    ours = tg.unique(tg.tensor(data), **kwargs)
    theirs = torch.unique(torch.tensor(data), **kwargs)
    np.testing.assert_array_equal(ours[0].numpy(), theirs[0].numpy())
    np.testing.assert_array_equal(ours[1].numpy(), theirs[1].numpy())


@pytest.mark.parametrize(
    ("data", "kwargs"),
    [
        ([1, 1, 2, 2, 3, 1, 1], {"return_inverse": True, "return_counts": True}),
        (
            [[1, 1], [1, 1], [2, 3], [1, 1]],
            {"dim": 0, "return_inverse": True, "return_counts": True},
        ),
        ([[1, 1, 2], [1, 1, 3]], {"dim": 1, "return_counts": True}),
        ([], {"return_inverse": True, "return_counts": True}),
    ],
)
def test_unique_consecutive(data, kwargs):
    ours = tg.unique_consecutive(tg.tensor(data, dtype=tg.int64), **kwargs)
    if data == [1, 1, 2, 2, 3, 1, 1]:
        assert [r.tolist() for r in ours] == [[1, 2, 3, 1], [0, 0, 1, 1, 2, 3, 3], [2, 2, 1, 2]]
    torch = pytest.importorskip("torch")
    assert _as_lists(ours) == _as_lists(
        torch.unique_consecutive(torch.tensor(data, dtype=torch.int64), **kwargs)
    )


def test_unique_errors():
    with pytest.raises(IndexError):
        tg.unique(tg.tensor([[1]]), dim=2)
    with pytest.raises(RuntimeError, match="0 sized dimensions"):
        tg.unique(tg.zeros(0, 3), dim=1)
    assert tg.unique(tg.zeros(0, 3), dim=0).shape == (0, 3)


def test_kthvalue_and_msort():
    x = tg.tensor([[3.0, 1.0, 2.0, 5.0], [0.0, -1.0, 4.0, 4.0]])
    values, indices = tg.kthvalue(x, 2, 1)
    assert values.tolist() == [2.0, 0.0] and indices.tolist() == [2, 0]
    assert x.kthvalue(1, dim=0, keepdim=True).values.shape == (1, 4)
    assert tg.msort(x).tolist() == [[0.0, -1.0, 2.0, 4.0], [3.0, 1.0, 4.0, 5.0]]
    with pytest.raises(RuntimeError, match="out of range"):
        x.kthvalue(5)
    y = x.clone().requires_grad_(True)
    y.kthvalue(3).values.sum().backward()
    assert y.grad.tolist() == [[1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]]
