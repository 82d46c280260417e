"""Registry entries for ``tensorgrad/ops/division.py``: remainder and fmod, with samples whose
quotients stay away from the integers (where the remainder jumps)."""

from __future__ import annotations

import numpy as np

import tensorgrad as tg
from tests.ops.registry.core import (
    OpInfo,
    Sample,
    binary_samples,
    broadcast_error,
    register,
    unary_samples,
    uniform,
)


def _off_integer_quotients(rng, shape_x, shape_y):
    """x and y (|y| >= 0.4) whose broadcast quotients are at least 0.05 from an integer."""
    for _ in range(10_000):
        x = uniform(rng, shape_x, -3, 3)
        y = uniform(rng, shape_y, 0.4, 1.5) * rng.choice([-1.0, 1.0], shape_y)
        q = np.asarray(x / y)
        if np.all(np.abs(q - np.round(q)) > 0.05):
            return x, y
    raise AssertionError("could not sample off-integer quotients")


def _by_number(divisor: float):
    def make(rng, shape):
        for _ in range(10_000):
            x = uniform(rng, shape, -3, 3)
            q = np.asarray(x / divisor)
            if np.all(np.abs(q - np.round(q)) > 0.05):
                return x
        raise AssertionError("could not sample off-integer quotients")

    return make


for _name, _fn, _ref in [
    ("remainder", lambda x, y: x.remainder(y), np.remainder),
    ("fmod", lambda x, y: tg.fmod(x, y), np.fmod),
]:
    register(
        OpInfo(
            _name,
            _fn,
            _ref,
            binary_samples(_off_integer_quotients),
            errors=(broadcast_error(_name),),
        )
    )
register(
    OpInfo(
        "remainder_number",
        lambda x: x.remainder(-0.7),
        lambda x: np.remainder(x, -0.7),
        unary_samples(_by_number(-0.7)),
    )
)
register(
    OpInfo(
        "fmod_number",
        lambda x: x.fmod(0.7),
        lambda x: np.fmod(x, 0.7),
        unary_samples(
            _by_number(0.7), extra=lambda rng: [Sample((np.array([-2.9, 2.9]),), desc="signs")]
        ),
    )
)
