"""``tg.Generator``: PyTorch's ``torch.Generator``, a random stream of one's own.

It wraps a NumPy ``Generator`` (PCG64) and is accepted wherever PyTorch takes a generator:
``DataLoader(generator=)``, ``random_split(generator=)``, ``tg.rand``/``randn``/``randint``/
``randperm(generator=)``. Seeding and restoring change the NumPy generator in place, so a
sampler holding it sees ``g.manual_seed(s)`` made later, as PyTorch's does. The numbers drawn
are NumPy's, not PyTorch's (another algorithm): the same seed gives other values.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from tensorgrad import array_backend
from tensorgrad.core import engine

#: the seed of a fresh ``torch.Generator()`` (``default_rng_seed_val`` in PyTorch)
DEFAULT_SEED = 67280421310721


class Generator:
    """A random-number generator of one's own: ``tg.Generator().manual_seed(0)``."""

    def __init__(self, device: Any = "cpu") -> None:
        self.device = array_backend.as_device(device)
        self.numpy_generator = np.random.default_rng(DEFAULT_SEED)  #: the NumPy stream it draws
        self._initial_seed = DEFAULT_SEED

    def manual_seed(self, seed: int) -> Generator:
        """Seed the generator and return it (``g = tg.Generator().manual_seed(0)``). Negative
        seeds are taken modulo 2**64, as PyTorch does."""
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise TypeError(f"manual_seed expected an int seed, got {type(seed).__name__}")
        seed = int(seed) % 2**64
        self.numpy_generator.bit_generator.state = np.random.PCG64(seed).state
        self._initial_seed = seed
        return self

    def seed(self) -> int:
        """Seed from the operating system's entropy and return the seed used."""
        seed = int(np.random.SeedSequence().entropy) % 2**64
        self.manual_seed(seed)
        return seed

    def initial_seed(self) -> int:
        """The seed last given to :meth:`manual_seed` (or :meth:`seed`)."""
        return self._initial_seed

    def get_state(self) -> Any:
        """The generator's state as a 1-D uint8 tensor, for :meth:`set_state`."""
        return state_tensor(self.numpy_generator)

    def set_state(self, new_state: Any) -> Generator:
        """Restore a state from :meth:`get_state` (nothing changes when it is not one)."""
        restore_state(self.numpy_generator, new_state, "Generator.set_state", "get_state")
        return self

    def __repr__(self) -> str:
        return f"<tensorgrad.Generator on {self.device}, initial seed {self._initial_seed}>"


def state_tensor(generator: np.random.Generator) -> Any:
    """A NumPy generator's state as a 1-D uint8 tensor: its bit generator's state as JSON."""
    text = json.dumps(generator.bit_generator.state, sort_keys=True)
    return engine.wrap(np.frombuffer(text.encode("ascii"), dtype=np.uint8).copy())


def restore_state(generator: np.random.Generator, new_state: Any, what: str, source: str) -> None:
    """Set ``generator`` to a state from :func:`state_tensor`. As PyTorch: anything but a uint8
    tensor raises ``TypeError``, a uint8 tensor that is not such a state ``RuntimeError``, and
    then nothing has changed."""
    if not isinstance(new_state, engine.Tensor) or new_state.dtype != array_backend.uint8:
        got = (
            f"a {new_state.dtype} Tensor"
            if isinstance(new_state, engine.Tensor)
            else (type(new_state).__name__)
        )
        raise TypeError(f"{what}: expected a uint8 Tensor from {source}, got {got}")
    bit_generator = generator.bit_generator
    kind = type(bit_generator)
    try:
        state = json.loads(np.ascontiguousarray(new_state._data).tobytes().decode("ascii"))
        if not isinstance(state, dict) or state.get("bit_generator") != kind.__name__:
            raise ValueError(f"not a {kind.__name__} state")
        kind().state = state  # NumPy checks every field; try it on a scratch generator first
    except (ValueError, TypeError, KeyError, UnicodeDecodeError, RecursionError) as exc:
        raise RuntimeError(
            f"{what}: the tensor is not a state returned by {source} ({exc})"
        ) from None
    bit_generator.state = state


def numpy_generator(generator: Any, what: str) -> np.random.Generator | None:
    """The NumPy generator behind a ``generator=`` argument: a :class:`Generator`'s, a NumPy
    Generator as it is, None for the global one."""
    if generator is None or isinstance(generator, np.random.Generator):
        return generator
    if isinstance(generator, Generator):
        return generator.numpy_generator
    raise TypeError(f"{what}: generator must be a tensorgrad.Generator, got {generator!r}")
