"""Turning the samples of a batch into Tensors, as PyTorch's ``default_collate`` does.

A sample is a Tensor, an ndarray, a number, a string, or a dict / tuple / list of those.
:func:`default_collate` stacks a list of samples field by field: Tensors and arrays along a
new first dimension, Python ints into an int64 Tensor, Python floats into a float64 Tensor
(both as in PyTorch), strings into a list. Tuples come back as lists, as in PyTorch.
:func:`default_convert` turns the arrays of one unbatched sample into Tensors.

The stacking is done on NumPy arrays and the result wrapped once, so a batch costs one
``np.stack`` per field. The tensor engine is imported on first use, not at import.
"""

from __future__ import annotations

import collections.abc
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["default_collate", "default_convert", "stack_samples"]

_NOT_COLLATABLE = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"
)


def _tensor_type() -> type:
    from tensorgrad import Tensor

    return Tensor


def _field(where: str) -> str:
    return f" in field {where}" if where else ""


def _stack_arrays(arrays: list[np.ndarray], where: str) -> np.ndarray:
    """``np.stack(arrays)``; samples of different shapes raise an error naming two of them."""
    try:
        return np.stack(arrays)
    except ValueError:
        first = arrays[0].shape
        odd = next((i for i, a in enumerate(arrays) if a.shape != first), None)
        if odd is None:
            raise
        raise RuntimeError(
            f"default_collate: cannot stack samples of different shapes{_field(where)}: "
            f"sample 0 has shape {tuple(first)}, sample {odd} has shape "
            f"{tuple(arrays[odd].shape)}. Give the DataLoader a collate_fn that pads or crops "
            "them to one shape, or batch_size=1."
        ) from None


def _python_numbers(batch: Sequence[Any], where: str) -> np.ndarray:
    """Python ints (and bools) as ``torch.tensor(batch)`` infers them: all bools -> bool,
    ints -> int64, any float among them -> float32 (the default float dtype)."""
    if all(isinstance(x, bool) for x in batch):
        return np.asarray(batch, dtype=np.bool_)
    if all(isinstance(x, numbers.Integral) for x in batch):
        return np.asarray(batch, dtype=np.int64)
    if all(isinstance(x, numbers.Real) for x in batch):
        return np.asarray(batch, dtype=np.float32)
    odd = next(x for x in batch if not isinstance(x, numbers.Real))
    raise TypeError(f"default_collate: samples mix numbers and {type(odd).__name__}{_field(where)}")


def _collate(batch: Sequence[Any], where: str) -> Any:
    tensor_type = _tensor_type()
    elem = batch[0]
    if isinstance(elem, tensor_type):
        if any(getattr(t, "requires_grad", False) for t in batch):
            from tensorgrad import stack

            _stack_arrays([t._data for t in batch], where)  # the shape check
            return stack(batch)
        return tensor_type(_stack_arrays([_unwrap(t) for t in batch], where))
    if isinstance(elem, np.ndarray):
        if elem.dtype.kind in "OUSV":
            raise TypeError(_NOT_COLLATABLE.format(elem.dtype))
        return tensor_type(_stack_arrays([np.asarray(_unwrap(a)) for a in batch], where))
    if isinstance(elem, np.bool_ | np.number):
        return tensor_type(np.asarray(batch))
    if isinstance(elem, float):
        return tensor_type(np.asarray(batch, dtype=np.float64))
    if isinstance(elem, int):
        return tensor_type(_python_numbers(batch, where))
    if isinstance(elem, str | bytes):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        out = {key: _collate([d[key] for d in batch], f"{where}[{key!r}]") for key in elem}
        return out if type(elem) is dict else _rebuild_mapping(elem, out)
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # a namedtuple
        return type(elem)(*_collate_fields(batch, where))
    if isinstance(elem, collections.abc.Sequence):
        fields = _collate_fields(batch, where)
        return fields if isinstance(elem, tuple | list) else _rebuild_sequence(elem, fields)
    raise TypeError(_NOT_COLLATABLE.format(type(elem)))


def _collate_fields(batch: list[Any], where: str) -> list[Any]:
    width = len(batch[0])
    for i, sample in enumerate(batch):
        if len(sample) != width:
            raise RuntimeError(
                "each element in list of batch should be of equal size: "
                f"sample 0 has {width} fields, sample {i} has {len(sample)}{_field(where)}"
            )
    # Each field as the tuple zip makes: a field of strings comes back as that tuple (PyTorch).
    return [_collate(samples, f"{where}[{j}]") for j, samples in enumerate(zip(*batch))]


def _rebuild_mapping(elem: Any, values: dict) -> Any:
    try:
        return type(elem)(values)
    except TypeError:
        return values


def _rebuild_sequence(elem: Any, values: list) -> Any:
    try:
        return type(elem)(values)
    except TypeError:
        return values


def _unwrap(value: Any) -> Any:
    """The ndarray behind a Tensor (its ``numpy()``); anything else as it is."""
    if isinstance(value, np.ndarray):
        return value
    to_numpy = getattr(value, "numpy", None)
    data = to_numpy() if callable(to_numpy) else None
    return data if isinstance(data, np.ndarray) else value


def default_collate(batch: list[Any]) -> Any:
    """Collate a list of samples into a batch of Tensors, as PyTorch's ``default_collate``.

    Tensors and ndarrays are stacked along a new first dimension (a new array: the batch never
    shares memory with the dataset), keeping their dtype; NumPy scalars become a Tensor of
    their dtype; Python ints an int64 Tensor, Python floats a float64 Tensor, bools a bool
    Tensor; strings stay a list of strings; dicts, namedtuples, tuples and lists are collated
    field by field (a tuple becomes a list, as in PyTorch). Samples of different shapes raise
    a RuntimeError naming the shapes and the field.
    """
    if not isinstance(batch, collections.abc.Sequence) or isinstance(batch, str | bytes):
        raise TypeError(f"default_collate: expected a list of samples, got {type(batch).__name__}")
    if len(batch) == 0:
        raise ValueError("default_collate: the batch is empty")
    return _collate(list(batch), "")


def default_convert(data: Any) -> Any:
    """Turn the ndarrays (and NumPy scalars) in one sample into Tensors, leaving the rest.

    What the DataLoader applies to each sample when automatic batching is off
    (``batch_size=None``), as PyTorch's ``default_convert``. Arrays are wrapped, not copied,
    as ``torch.as_tensor`` does; a tuple becomes a list.
    """
    tensor_type = _tensor_type()
    if isinstance(data, tensor_type):
        return data
    if isinstance(data, np.ndarray):
        return data if data.dtype.kind in "OUSV" else tensor_type(data)
    if isinstance(data, np.bool_ | np.number):
        return tensor_type(np.asarray(data))
    if isinstance(data, collections.abc.Mapping):
        out = {key: default_convert(value) for key, value in data.items()}
        return out if type(data) is dict else _rebuild_mapping(data, out)
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple | list):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, str | bytes):
        return _rebuild_sequence(data, [default_convert(d) for d in data])
    return data


def batch_to_tensors(batch: Any) -> Any:
    """A batch of ndarrays (from a dataset's ``get_batch``) as :func:`default_collate` would
    have made it from the samples: each array a Tensor, tuples as lists.

    An array that owns its memory (what fancy indexing makes) is wrapped as it is; a view,
    which could share memory with the dataset, is copied, so that batches never alias the
    dataset, as with stacked samples.
    """
    tensor_type = _tensor_type()
    if isinstance(batch, np.ndarray):
        return tensor_type(batch if batch.flags.owndata else batch.copy())
    if isinstance(batch, collections.abc.Mapping):
        return {key: batch_to_tensors(value) for key, value in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(batch_to_tensors(b) for b in batch))
    if isinstance(batch, tuple | list):
        return [batch_to_tensors(b) for b in batch]
    return batch


def stack_samples(samples: list[Any]) -> Any:
    """Stack a list of samples into NumPy arrays, field by field (tuples stay tuples).

    Samples may be arrays, numbers, Tensors, or tuples/lists/dicts of those. Useful as
    ``collate_fn=stack_samples`` to get NumPy batches instead of Tensors.
    """
    first = samples[0]
    if isinstance(first, collections.abc.Mapping):
        return {key: stack_samples([s[key] for s in samples]) for key in first}
    if isinstance(first, tuple | list):
        width = len(first)
        if any(len(s) != width for s in samples):
            raise ValueError("DataLoader: items of one batch have different numbers of fields")
        return tuple(stack_samples(list(field)) for field in zip(*samples, strict=True))
    return _stack_arrays([np.asarray(_unwrap(s)) for s in samples], "")
