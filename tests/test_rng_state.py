"""tg.get_rng_state / tg.set_rng_state: PyTorch's names, types and errors; exact replay."""

from __future__ import annotations

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import nn


def test_a_saved_state_replays_every_draw():
    tg.manual_seed(5)
    tg.randn((3,))
    state = tg.get_rng_state()
    assert isinstance(state, tg.Tensor) and state.dtype == tg.uint8 and state.ndim == 1
    first = [tg.randn((4,)).tolist(), tg.rand((2,)).tolist(), tg.randint(0, 9, (3,)).tolist()]
    drop = nn.Dropout(0.5)
    mask = drop(tg.ones((20,))).tolist()
    tg.set_rng_state(state)
    again = [tg.randn((4,)).tolist(), tg.rand((2,)).tolist(), tg.randint(0, 9, (3,)).tolist()]
    assert again == first and drop(tg.ones((20,))).tolist() == mask


def test_the_state_is_a_snapshot_and_survives_save_and_load(tmp_path):
    state = tg.get_rng_state()
    expected = tg.randn((5,)).tolist()
    tg.randn((100,))  # drawing on does not change the snapshot
    tg.save({"rng": state}, tmp_path / "s.npz")
    tg.set_rng_state(tg.load(tmp_path / "s.npz")["rng"])
    assert tg.randn((5,)).tolist() == expected


def test_the_generator_keeps_its_identity():
    generator = tg.array_backend.rng()
    state = tg.get_rng_state()
    value = generator.random()
    tg.set_rng_state(state)
    assert tg.array_backend.rng() is generator and generator.random() == value


@pytest.mark.parametrize(
    ("bad", "error", "message"),
    [
        (np.zeros(3, np.uint8), TypeError, "expected a uint8 Tensor from get_rng_state, got nd"),
        ([1, 2], TypeError, "got list"),
        (tg.zeros(5), TypeError, "got a float32 Tensor"),
        (tg.tensor(np.zeros(3, np.uint8)), RuntimeError, "not a state returned by get_rng_state"),
        (tg.tensor(np.frombuffer(b'{"bit_generator": "MT19937"}', np.uint8)), RuntimeError,
         "not a PCG64 state"),
        (tg.tensor(np.frombuffer(b'{"bit_generator": "PCG64", "state": 3}', np.uint8)),
         RuntimeError, "not a state returned by get_rng_state"),
    ],
)  # fmt: skip
def test_bad_states_raise_pytorchs_errors_and_change_nothing(bad, error, message):
    state = tg.get_rng_state()
    expected = tg.randn((3,)).tolist()
    tg.set_rng_state(state)
    with pytest.raises(error, match=message):
        tg.set_rng_state(bad)
    assert tg.randn((3,)).tolist() == expected


def test_same_types_and_errors_as_pytorch():
    torch = pytest.importorskip("torch")
    assert torch.get_rng_state().dtype == torch.uint8 and torch.get_rng_state().dim() == 1
    assert tg.get_rng_state().dtype == tg.uint8 and tg.get_rng_state().ndim == 1
    for bad_torch, bad_tg in [([1, 2], [1, 2]), (torch.zeros(5), tg.zeros(5))]:
        with pytest.raises(TypeError):
            torch.set_rng_state(bad_torch)
        with pytest.raises(TypeError):
            tg.set_rng_state(bad_tg)
    with pytest.raises(RuntimeError):
        torch.set_rng_state(torch.zeros(3, dtype=torch.uint8))
    with pytest.raises(RuntimeError):
        tg.set_rng_state(tg.tensor(np.zeros(3, np.uint8)))
