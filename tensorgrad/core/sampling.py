"""Random sampling with PyTorch's names: ``multinomial``, ``bernoulli``, ``normal`` (the
functions and their Tensor methods), and the in-place fills ``uniform_``, ``normal_`` and
``bernoulli_``.

Each draws from ``generator`` (a :class:`~tensorgrad.Generator`) or else from the global
generator that ``tg.manual_seed`` seeds, so a seeded program draws the same samples every run
(not PyTorch's samples: the streams are NumPy's, docs/porting.md). The samples are constants;
``normal`` with tensor arguments gives them a zero gradient, as PyTorch's does.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from tensorgrad import array_backend
from tensorgrad.core import engine
from tensorgrad.core.args import shape_args
from tensorgrad.core.engine import wrap
from tensorgrad.core.generator import numpy_generator
from tensorgrad.grad_mode import no_grad


def _rng(generator: Any, what: str) -> np.random.Generator:
    return numpy_generator(generator, what) or array_backend.rng()


def _array(value: Any) -> np.ndarray:
    return value._data if isinstance(value, engine.Tensor) else np.asarray(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


# --------------------------------------------------------------------------- multinomial
@engine.reads_values
def multinomial(
    input: Any, num_samples: int, replacement: bool = False, *, generator: Any = None
) -> Any:
    """``num_samples`` category indices (int64) per row of the non-negative weights ``input``
    (1-D: one distribution, 2-D: one per row); the weights need not sum to one.

    With replacement each draw is independent (inverse CDF); without, each category is drawn
    at most once, in the order of the exponential race ``w / E`` (``E ~ Exp(1)``), which is
    successive sampling proportional to the weights left (PyTorch's method)."""
    probs = _array(input)
    if probs.ndim not in (1, 2):
        raise RuntimeError(f"multinomial: prob_dist must be 1 or 2 dim, got shape {probs.shape}")
    if probs.dtype.kind != "f":
        raise RuntimeError(
            f"multinomial only supports floating-point dtypes for input, got: {probs.dtype}"
        )
    if isinstance(num_samples, bool) or not isinstance(num_samples, numbers.Integral):
        raise TypeError(f"multinomial: num_samples must be an int, got {num_samples!r}")
    num_samples = int(num_samples)
    if num_samples <= 0:
        raise RuntimeError(f"multinomial: cannot sample n_sample <= 0 samples ({num_samples})")
    categories = probs.shape[-1]
    if not replacement and num_samples > categories:
        raise RuntimeError(
            "multinomial: cannot sample n_sample > prob_dist.size(-1) samples without "
            f"replacement ({num_samples} > {categories})"
        )
    rows = probs.reshape(-1, categories).astype(np.float64)
    if rows.shape[0] == 0:
        return wrap(np.zeros((*probs.shape[:-1], num_samples), dtype=np.int64))
    if not np.all(np.isfinite(rows)) or (rows.size and rows.min() < 0):
        raise RuntimeError(
            "multinomial: probability tensor contains either `inf`, `nan` or element < 0"
        )
    totals = rows.sum(axis=1)
    if categories == 0 or np.any(totals <= 0):
        raise RuntimeError(
            "multinomial: invalid multinomial distribution (sum of probabilities <= 0)"
        )
    rng = _rng(generator, "multinomial")
    if replacement or num_samples == 1:
        drawn = _with_replacement(rows, totals, num_samples, rng)
    else:
        race = rows / rng.standard_exponential(rows.shape)  # larger first; weight 0 last
        drawn = np.argsort(-race, axis=1, kind="stable")[:, :num_samples]
    return wrap(np.ascontiguousarray(drawn, dtype=np.int64).reshape(*probs.shape[:-1], -1))


def _with_replacement(rows: np.ndarray, totals: np.ndarray, n: int, rng) -> np.ndarray:
    """Inverse-CDF draws: the first category whose cumulative weight exceeds u · total. A
    zero-weight category spans an empty interval and is never drawn."""
    cdf = np.cumsum(rows, axis=1)
    u = rng.random((rows.shape[0], n)) * totals[:, None]
    result = np.empty((rows.shape[0], n), dtype=np.int64)
    last = rows.shape[1] - 1 - np.argmax(rows[:, ::-1] > 0, axis=1)  # the last category > 0
    for i in range(rows.shape[0]):  # one searchsorted per distribution
        result[i] = np.minimum(np.searchsorted(cdf[i], u[i], side="right"), last[i])
    return result


# --------------------------------------------------------------------------- bernoulli
def _check_probability(p: float, what: str) -> float:
    if not _is_number(p):
        raise TypeError(f"{what}: p must be a number or a tensor, got {type(p).__name__}")
    if not 0.0 <= p <= 1.0:
        raise RuntimeError(f"{what} expects p to be in [0, 1], but got p={p:g}")
    return float(p)


def bernoulli(input: Any, p: float | None = None, *, generator: Any = None) -> Any:
    """0s and 1s of ``input``'s dtype and shape: 1 with probability ``input`` (elementwise),
    or with probability ``p`` where it is given. A constant: no gradient."""
    probs = _array(input)
    if probs.dtype.kind != "f":
        raise NotImplementedError(
            f"bernoulli: not implemented for {probs.dtype} input (probabilities are floating point)"
        )
    rng = _rng(generator, "bernoulli")
    if p is not None:
        p = _check_probability(p, "bernoulli")
        return wrap((rng.random(probs.shape) < p).astype(probs.dtype))
    if probs.size and not (np.all(probs >= 0) and np.all(probs <= 1)):
        raise RuntimeError(
            "bernoulli: Expected p_in >= 0 && p_in <= 1 to be true, but got false (input "
            "probabilities must lie in [0, 1])"
        )
    return wrap((rng.random(probs.shape) < probs).astype(probs.dtype))


def bernoulli_(tensor: Any, p: Any = 0.5, *, generator: Any = None) -> Any:
    """Fill ``tensor`` in place with 1 (probability ``p``, a number or a tensor that
    broadcasts to it) or 0."""
    rng = _rng(generator, "bernoulli_")
    if isinstance(p, (engine.Tensor, np.ndarray)):
        probs = _array(p)
        if probs.size and not (np.all(probs >= 0) and np.all(probs <= 1)):
            raise RuntimeError("bernoulli_ expects all elements of p to be in [0, 1]")
        try:
            probs = np.broadcast_to(probs, tensor.shape)
        except ValueError:
            raise RuntimeError(
                f"bernoulli_: p of shape {probs.shape} does not broadcast to the tensor's "
                f"shape {tensor.shape}"
            ) from None
    else:
        probs = _check_probability(p, "bernoulli_")
    with no_grad():
        return tensor.copy_((rng.random(tensor.shape) < probs).astype(tensor.dtype))


# --------------------------------------------------------------------------- normal, uniform
def _check_fill(what: str, tensor: Any) -> None:
    if tensor.dtype.kind != "f":
        raise NotImplementedError(
            f"{what}: random fill not implemented for {tensor.dtype} tensors (floating point only)"
        )


def uniform_(tensor: Any, a: float = 0.0, b: float = 1.0, *, generator: Any = None) -> Any:
    """Fill ``tensor`` in place with samples from U(a, b)."""
    _check_fill("uniform_", tensor)
    if a > b:
        raise RuntimeError(
            f"uniform_ expects to return a [from, to) range, but found from={a:g} > to={b:g}"
        )
    values = _rng(generator, "uniform_").uniform(a, b, tensor.shape)
    with no_grad():
        return tensor.copy_(values.astype(tensor.dtype))


def normal_(tensor: Any, mean: float = 0.0, std: float = 1.0, *, generator: Any = None) -> Any:
    """Fill ``tensor`` in place with samples from N(mean, std²)."""
    _check_fill("normal_", tensor)
    if not std >= 0.0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    values = _rng(generator, "normal_").normal(mean, std, tensor.shape)
    with no_grad():
        return tensor.copy_(values.astype(tensor.dtype))


def normal(
    mean: Any,
    std: Any = 1.0,
    size: Any = None,
    *,
    generator: Any = None,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Any:
    """Samples from N(mean, std²): ``normal(mean_tensor, std_tensor)`` (broadcast),
    ``normal(mean_tensor, std=1.0)``, ``normal(mean, std_tensor)``, or
    ``normal(mean, std, size)`` with numbers (the default float dtype unless ``dtype``)."""
    if device is not None:
        array_backend.as_device(device)
    rng = _rng(generator, "normal")
    tensors = [v for v in (mean, std) if isinstance(v, engine.Tensor)]
    if not tensors:
        if size is None:
            raise TypeError("normal: with a number mean and std, size is required")
        if not (_is_number(mean) and _is_number(std)):
            raise TypeError("normal: mean and std must be numbers or tensors")
        if not std >= 0.0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
        shape = shape_args((size,), "size")
        out_dtype = array_backend.as_dtype(dtype) or array_backend.DEFAULT_FLOAT
        result = wrap(rng.normal(float(mean), float(std), shape).astype(out_dtype))
        return result.requires_grad_(True) if requires_grad else result
    if size is not None:
        raise TypeError("normal: size is only taken with a number mean and std")
    for t in tensors:
        if t.dtype.kind != "f":
            raise NotImplementedError(
                f"normal: not implemented for {t.dtype} tensors (floating point only)"
            )
    out_dtype = array_backend.as_dtype(dtype) or np.result_type(*[t.dtype for t in tensors])
    mean_a, std_a = _array(mean), _array(std)
    if std_a.size and not np.all(std_a >= 0):
        bad = float(np.min(std_a))
        raise RuntimeError(f"normal expects all elements of std >= 0.0, but found std {bad:g}")
    try:
        shape = np.broadcast_shapes(mean_a.shape, std_a.shape)
    except ValueError:
        raise RuntimeError(
            f"normal: the size of mean {mean_a.shape} and of std {std_a.shape} do not broadcast"
        ) from None
    sample = (mean_a + std_a * rng.standard_normal(shape)).astype(out_dtype)
    result = wrap(sample)
    if any(t.requires_grad for t in tensors):  # PyTorch's zero gradient for mean and std
        for t in tensors:
            result = result + t * 0
    return result
