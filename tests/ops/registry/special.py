"""Registry entries for ``tensorgrad/ops/special.py``: erfc, erfinv, lgamma, digamma,
polygamma, i0, i1 and sinc, against SciPy's and NumPy's functions."""

from __future__ import annotations

import numpy as np
import scipy.special

import tensorgrad as tg
from tensorgrad import ops
from tensorgrad.core.engine import apply as _apply
from tests.ops.registry.core import OpInfo, Sample, away, positive, register, unary_samples, uniform


def _within(low: float, high: float):
    return lambda rng, shape: uniform(rng, shape, low, high)


def _negative_gamma(rng) -> list[Sample]:
    """lgamma and digamma between the poles of Γ at the negative integers."""
    return [Sample((np.array([-0.5, -1.4, -2.6, -3.3]),), desc="negative")]


register(OpInfo("erfc", lambda x: x.erfc(), scipy.special.erfc, unary_samples(_within(-3, 3))))
register(
    OpInfo(
        "erfinv", lambda x: tg.erfinv(x), scipy.special.erfinv, unary_samples(_within(-0.9, 0.9))
    )
)
register(
    OpInfo(
        "lgamma",
        lambda x: x.lgamma(),
        scipy.special.gammaln,
        unary_samples(positive, extra=_negative_gamma),
    )
)
register(
    OpInfo(
        "digamma",
        lambda x: tg.digamma(x),
        scipy.special.digamma,
        unary_samples(positive, extra=_negative_gamma),
    )
)
register(
    OpInfo(
        "polygamma",
        lambda x, n: x.polygamma(n),
        lambda x, n: scipy.special.polygamma(n, x),
        unary_samples(positive, n=2),
        rtol=1e-5,  # the third derivative of polygamma(2) grows fast near 0.3: central differences
    )
)
register(OpInfo("i0", lambda x: x.i0(), scipy.special.i0, unary_samples(_within(-3, 3))))
register(
    OpInfo(
        "i1",  # i0's slope (its VJP, recorded): no method of its own, as PyTorch's special.i1
        lambda x: _apply(ops.I1(), x),
        scipy.special.i1,
        unary_samples(
            _within(-3, 3), extra=lambda rng: [Sample((np.array([0.0, 1e-9]),), desc="at_0")]
        ),
    )
)
register(
    OpInfo(
        "sinc",
        lambda x: x.sinc(),
        np.sinc,
        unary_samples(lambda rng, shape: away(rng, shape, (0.0,), margin=0.2)),
    )
)
