"""What the tests of the optimizers' flat-state speed tricks share (SGD's momentum buffer,
Adam's moments): parameters, the prepared flat state of a group, bitwise comparison."""

from __future__ import annotations

import numpy as np

from tensorgrad import nn, optim
from tensorgrad.optim.optimizer import FlatState


def param(values, dtype=np.float64) -> nn.Parameter:
    return nn.Parameter(np.array(values, dtype=dtype))


def flat_of(opt: optim.Optimizer, group: int = 0) -> FlatState | None:
    """The flat state the optimizer has prepared for a group, if any."""
    return opt._flat.get(id(opt.param_groups[group]))


def assert_same(a_params, b_params):
    for a, b in zip(a_params, b_params, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
