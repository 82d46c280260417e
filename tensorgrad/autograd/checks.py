"""The gradient checks, both references under one name (kept for existing imports).

The finite-difference checks live in ``tensorgrad.autograd.finite_differences``, the check
against the scalar engine in ``tensorgrad.autograd.scalar_oracle``; an op's scalar reference
lives beside its forward, as its ``scalar_forward`` method.
"""

from tensorgrad.autograd.finite_differences import (
    Entry,
    GradcheckError,
    GradcheckReport,
    GradcheckWarning,
    gradcheck,
    gradcheck_module,
    gradgradcheck,
)
from tensorgrad.autograd.scalar_oracle import SCALAR_FORWARDS, check_with_scalar_engine

__all__ = [
    "SCALAR_FORWARDS",
    "Entry",
    "GradcheckError",
    "GradcheckReport",
    "GradcheckWarning",
    "check_with_scalar_engine",
    "gradcheck",
    "gradcheck_module",
    "gradgradcheck",
]
