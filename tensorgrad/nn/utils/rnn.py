"""Variable-length sequences for the recurrent layers, as PyTorch's ``torch.nn.utils.rnn``.

A :class:`PackedSequence` stores a batch of sequences of different lengths time-major and
without padding: ``data`` holds, for each time step in turn, the elements of the sequences
still running then (longest first), and ``batch_sizes[t]`` says how many there are. The
recurrent layers run step ``t`` on ``batch_sizes[t]`` rows only, so padding is never computed
and each sequence's final state is taken at its own last step.

Packing and unpacking are each one gather (an integer index into the flattened rows), so
gradients flow back through them as one scatter-add.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from tensorgrad.core.engine import as_tensor
from tensorgrad.core.functions import cat
from tensorgrad.core.tensor import Tensor


def _indices(value: Any) -> np.ndarray | None:
    if value is None:
        return None
    array = value._data if isinstance(value, Tensor) else np.asarray(value)
    return array.astype(np.int64, copy=False)


def invert_permutation(permutation: Any) -> Tensor | None:
    """The permutation that undoes ``permutation`` (None stays None)."""
    perm = _indices(permutation)
    if perm is None:
        return None
    inverse = np.empty_like(perm)
    inverse[perm] = np.arange(len(perm), dtype=np.int64)
    return Tensor(inverse)


class _PackedSequenceFields(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(_PackedSequenceFields):
    """A batch of variable-length sequences, packed (see the module docstring). Made by
    :func:`pack_padded_sequence` or :func:`pack_sequence`, not by hand; a tuple
    ``(data, batch_sizes, sorted_indices, unsorted_indices)`` as PyTorch's."""

    def __new__(
        cls,
        data: Tensor,
        batch_sizes: Tensor | None = None,
        sorted_indices: Tensor | None = None,
        unsorted_indices: Tensor | None = None,
    ) -> PackedSequence:
        if batch_sizes is None:
            raise TypeError("PackedSequence: batch_sizes is required (use pack_padded_sequence)")
        sizes = _indices(batch_sizes)
        sorted_indices = None if sorted_indices is None else Tensor(_indices(sorted_indices))
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        else:
            unsorted_indices = Tensor(_indices(unsorted_indices))
        return super().__new__(
            cls, as_tensor(data), Tensor(sizes), sorted_indices, unsorted_indices
        )

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """The same sequences with ``data`` moved or cast (the indices stay int64)."""
        return type(self)(self.data.to(*args, **kwargs), *self[1:])

    def cpu(self) -> PackedSequence:
        return self

    def double(self) -> PackedSequence:
        return self.to(np.float64)

    def float(self) -> PackedSequence:
        return self.to(np.float32)

    @property
    def is_cuda(self) -> bool:
        return False

    def is_pinned(self) -> bool:
        return False


def _lengths(lengths: Any) -> np.ndarray:
    array = lengths._data if isinstance(lengths, Tensor) else np.asarray(lengths)
    if array.ndim != 1:
        raise RuntimeError(f"lengths must be a 1-D sequence of ints, got shape {array.shape}")
    return array.astype(np.int64)


def pack_padded_sequence(
    input: Tensor, lengths: Any, batch_first: bool = False, enforce_sorted: bool = True
) -> PackedSequence:
    """Pack a padded batch (T, B, *) — (B, T, *) with ``batch_first`` — of sequences of the
    given ``lengths``. With ``enforce_sorted`` the lengths must be in decreasing order;
    otherwise the batch is sorted here and the order remembered."""
    x = as_tensor(input)
    lengths = _lengths(lengths)
    if x.ndim < 2:
        raise RuntimeError(
            f"pack_padded_sequence: expected input of at least 2 dimensions (T, B, *), got "
            f"shape {tuple(x.shape)}"
        )
    if batch_first:
        x = x.transpose(0, 1)
    steps, batch = x.shape[0], x.shape[1]
    if len(lengths) != batch:
        raise ValueError(
            f"Expected `len(lengths)` to be equal to batch_size, but got {len(lengths)} "
            f"(batch_size={batch})"
        )
    if enforce_sorted:
        if np.any(np.diff(lengths) > 0):
            raise RuntimeError(
                "`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
                f"True (got lengths {lengths.tolist()}). You can pass `enforce_sorted=False` to "
                "pack_padded_sequence and/or pack_sequence to sidestep this requirement if you "
                "do not need ONNX exportability."
            )
        order = None
    else:
        order = np.argsort(-lengths, kind="stable")
        lengths = lengths[order]
    if batch and lengths[-1] <= 0:
        raise RuntimeError(
            "Length of all samples has to be greater than 0, but found an element in 'lengths' "
            f"that is <= 0 (lengths {lengths.tolist()})"
        )
    if batch and lengths[0] > steps:
        raise RuntimeError(
            f"pack_padded_sequence: a length of {int(lengths[0])} is longer than the input's "
            f"{steps} time steps (input of shape {tuple(input.shape)})"
        )
    longest = int(lengths[0]) if batch else 0
    batch_sizes = (lengths[None, :] > np.arange(longest)[:, None]).sum(axis=1)
    columns = np.arange(batch) if order is None else order
    rows = np.concatenate(
        [t * batch + columns[:size] for t, size in enumerate(batch_sizes)]
        or [np.zeros(0, np.int64)]
    )
    data = x.reshape(steps * batch, *x.shape[2:])[rows]
    return PackedSequence(data, batch_sizes, order, None)


def pad_packed_sequence(
    sequence: PackedSequence,
    batch_first: bool = False,
    padding_value: float = 0.0,
    total_length: int | None = None,
) -> tuple[Tensor, Tensor]:
    """Undo :func:`pack_padded_sequence`: the padded batch (T, B, *) (or (B, T, *)) in the
    original batch order, and the lengths (an int64 tensor)."""
    data = sequence.data
    sizes = _indices(sequence.batch_sizes)
    steps = len(sizes)
    batch = int(sizes[0]) if steps else 0
    if total_length is not None:
        if total_length < steps:
            raise ValueError(
                "Expected total_length to be at least the length of the longest sequence in "
                f"input, but got total_length={total_length} and max sequence length being "
                f"{steps}"
            )
        steps_out = int(total_length)
    else:
        steps_out = steps
    lengths = (sizes[None, :] > np.arange(batch)[:, None]).sum(axis=1)  # in sorted order
    offsets = np.concatenate([[0], np.cumsum(sizes)])[:-1]
    unsorted = _indices(sequence.unsorted_indices)
    position = np.arange(batch) if unsorted is None else unsorted  # column j's sorted place
    t = np.arange(steps_out)[:, None]
    running = t < lengths[position][None, :]
    pad_row = len(data)
    index = np.where(
        running,
        np.concatenate([offsets, np.zeros(steps_out - steps, np.int64)])[t] + position,
        pad_row,
    )
    if batch_first:
        index = index.T
    padding = Tensor(np.full((1, *data.shape[1:]), padding_value, dtype=data.dtype))
    padded = cat([data, padding])[index.reshape(-1)]
    padded = padded.reshape(*index.shape, *data.shape[1:])
    return padded, Tensor(lengths[position])


def pad_sequence(
    sequences: Sequence[Tensor] | Tensor,
    batch_first: bool = False,
    padding_value: float = 0.0,
    padding_side: str = "right",
) -> Tensor:
    """Stack sequences of shapes (L_i, *) into (max L, B, *) (or (B, max L, *)), padding with
    ``padding_value`` on the right (or on the left, ``padding_side="left"``)."""
    if padding_side not in ("left", "right"):
        raise ValueError(
            f"Expected padding_side to be one of left or right, but got {padding_side}."
        )
    tensors = [as_tensor(s) for s in sequences]
    if not tensors:
        raise RuntimeError("pad_sequence: received an empty list of sequences")
    trailing = tuple(tensors[0].shape[1:])
    for s in tensors:
        if tuple(s.shape[1:]) != trailing:
            raise RuntimeError(
                f"pad_sequence: the sequences' trailing dimensions must match, got shapes "
                f"{[tuple(t.shape) for t in tensors]}"
            )
    lengths = np.array([s.shape[0] for s in tensors], dtype=np.int64)
    longest = int(lengths.max())
    starts = np.concatenate([[0], np.cumsum(lengths)])[:-1]
    t = np.arange(longest)[:, None]
    shift = (longest - lengths)[None, :] if padding_side == "left" else 0
    step = t - shift
    running = (step >= 0) & (step < lengths[None, :])
    total = int(lengths.sum())
    index = np.where(running, starts[None, :] + step, total)
    if batch_first:
        index = index.T
    dtype = tensors[0].dtype
    padding = Tensor(np.full((1, *trailing), padding_value, dtype=dtype))
    flat = cat([*tensors, padding])[index.reshape(-1)]
    return flat.reshape(*index.shape, *trailing)


def unpad_sequence(padded_sequences: Tensor, lengths: Any, batch_first: bool = False) -> list:
    """The sequences of a padded batch, each cut to its length."""
    x = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    return [x[i, : int(n)] for i, n in enumerate(_lengths(lengths))]


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of sequences (L_i, *); with ``enforce_sorted`` they must come longest
    first."""
    lengths = [as_tensor(s).shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list:
    """The list of sequences a :class:`PackedSequence` holds, in their original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)


__all__ = [
    "PackedSequence",
    "invert_permutation",
    "pack_padded_sequence",
    "pack_sequence",
    "pad_packed_sequence",
    "pad_sequence",
    "unpack_sequence",
    "unpad_sequence",
]
