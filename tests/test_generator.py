"""tg.Generator: PyTorch's generator API on a NumPy generator, accepted by DataLoader,
random_split and the random factories; and tg.randperm."""

from __future__ import annotations

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.data import DataLoader, TensorDataset, random_split


def test_manual_seed_returns_the_generator_and_makes_draws_repeatable():
    g = tg.Generator()
    assert g.manual_seed(7) is g and g.initial_seed() == 7

    def draws():
        return [
            tg.randn(3, generator=g).tolist(),
            tg.rand(2, generator=g).tolist(),
            tg.randint(0, 10, (4,), generator=g).tolist(),
            tg.randperm(6, generator=g).tolist(),
        ]

    first = draws()
    g.manual_seed(7)
    assert draws() == first


def test_a_generator_does_not_touch_the_global_one():
    tg.manual_seed(1)
    expected = tg.randn(4).tolist()
    tg.manual_seed(1)
    tg.randn(100, generator=tg.Generator().manual_seed(5))
    assert tg.randn(4).tolist() == expected


def test_fresh_generators_start_from_pytorchs_default_seed():
    a, b = tg.Generator(), tg.Generator()
    assert a.initial_seed() == b.initial_seed() == 67280421310721
    assert tg.rand(3, generator=a).tolist() == tg.rand(3, generator=b).tolist()


def test_negative_seeds_wrap_as_in_pytorch():
    assert tg.Generator().manual_seed(-1).initial_seed() == 2**64 - 1
    with pytest.raises(TypeError, match="manual_seed expected an int seed, got float"):
        tg.Generator().manual_seed(1.5)


def test_seed_draws_a_fresh_seed_and_reports_it():
    g = tg.Generator()
    seed = g.seed()
    assert isinstance(seed, int) and g.initial_seed() == seed
    expected = tg.rand(2, generator=g).tolist()
    assert tg.rand(2, generator=tg.Generator().manual_seed(seed)).tolist() == expected


def test_get_and_set_state_replay_draws():
    g = tg.Generator().manual_seed(3)
    state = g.get_state()
    assert state.dtype == tg.uint8 and state.ndim == 1
    expected = tg.randn(5, generator=g).tolist()
    assert g.set_state(state) is g
    assert tg.randn(5, generator=g).tolist() == expected
    with pytest.raises(TypeError, match="Generator.set_state: expected a uint8 Tensor"):
        g.set_state([1, 2])
    with pytest.raises(RuntimeError, match="not a state returned by get_state"):
        g.set_state(tg.tensor(np.zeros(4, np.uint8)))
    assert tg.randn(5, generator=g.set_state(state)).tolist() == expected  # unchanged by errors


def test_a_bad_generator_argument_is_named():
    with pytest.raises(TypeError, match="randn: generator must be a tensorgrad.Generator"):
        tg.randn(2, generator="seed")


def test_generator_device_is_the_cpu():
    assert tg.Generator("cpu").device == tg.device("cpu")
    with pytest.raises(tg.UnsupportedError, match="cuda"):
        tg.Generator("cuda")


def test_dataloader_shuffles_with_a_generator_reseeded_later():
    """A generator reseeded after the loader was built still decides the order (the NumPy
    generator is reseeded in place), as with PyTorch's."""
    dataset = TensorDataset(tg.arange(20))
    g = tg.Generator()
    loader = DataLoader(dataset, batch_size=20, shuffle=True, generator=g)
    g.manual_seed(0)
    first = next(iter(loader))[0].tolist()
    g.manual_seed(0)
    assert next(iter(loader))[0].tolist() == first
    assert sorted(first) == list(range(20)) and first != list(range(20))


def test_random_split_with_a_generator():
    parts = [random_split(range(10), [7, 3], generator=tg.Generator().manual_seed(42))
             for _ in range(2)]  # fmt: skip
    assert [list(p.indices) for p in parts[0]] == [list(p.indices) for p in parts[1]]


def test_randperm():
    tg.manual_seed(0)
    p = tg.randperm(10)
    assert p.dtype == tg.int64 and sorted(p.tolist()) == list(range(10))
    assert tg.randperm(0).shape == (0,)
    assert tg.randperm(4, dtype=tg.float32).dtype == tg.float32
    with pytest.raises(RuntimeError, match="n must be non-negative"):
        tg.randperm(-1)
    with pytest.raises(TypeError, match="n must be an int"):
        tg.randperm(2.5)
