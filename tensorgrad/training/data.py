"""A run's data: the dataset, standardised with the training statistics, shaped for the model,
the shuffling loader whose generator a checkpoint saves, and the random shifts of
augmentation."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from tensorgrad.training.models import ModelSpec
from tensorgrad.training.recipe import Recipe

if TYPE_CHECKING:
    from tensorgrad.data import DataLoader, LoadedDataset


def flatten_images(images: np.ndarray, mean: float, std: float) -> np.ndarray:
    """(N, H, W) images in [0, 1] → (N, H·W) float32, standardised with the training mean/std."""
    return standardise(images, mean, std).reshape(len(images), -1)


def standardise(images: np.ndarray, mean: float, std: float) -> np.ndarray:
    """Images as float32, minus the training mean, divided by the training std."""
    flat = images.astype(np.float32, copy=False)
    return (flat - np.float32(mean)) / np.float32(std)


@dataclass(frozen=True, eq=False)
class RunData:
    """The loaded dataset and the arrays the model trains and is tested on."""

    dataset: LoadedDataset
    mean: float
    std: float
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray

    @property
    def name(self) -> str:
        return self.dataset.name

    @property
    def image_shape(self) -> tuple[int, ...]:
        return tuple(int(d) for d in self.dataset.train_images.shape[1:])

    @property
    def num_classes(self) -> int:
        return self.dataset.num_classes

    @functools.cached_property
    def fingerprint(self) -> str:
        """SHA-256 of both splits' images and labels: a resume checks it is the same data."""
        import hashlib

        digest = hashlib.sha256()
        d = self.dataset
        for array in (d.train_images, d.train_labels, d.test_images, d.test_labels):
            array = np.ascontiguousarray(array)
            digest.update(f"{array.dtype.str}{array.shape}".encode())
            digest.update(memoryview(array).cast("B"))
        return digest.hexdigest()

    def describe(self) -> dict[str, object]:
        """What a checkpoint records about the data."""
        return {
            "name": self.name,
            "train": len(self.x_train),
            "test": len(self.x_test),
            "sha256": self.fingerprint,
        }


def load_run_data(recipe: Recipe, spec: ModelSpec, dataset: LoadedDataset | None = None) -> RunData:
    """Load ``recipe.dataset`` (unless ``dataset`` is given) and prepare it for ``spec``."""
    from tensorgrad.data import DatasetError, load_dataset

    if dataset is None:
        dataset = load_dataset(recipe.dataset, root=recipe.data_dir, download=recipe.download)
    for split in ("train", "test"):
        if len(getattr(dataset, f"{split}_images")) == 0:
            raise DatasetError(dataset.source, f"the {split} split of {dataset.name} is empty")
    mean, std = float(dataset.train_images.mean()), float(dataset.train_images.std())
    if not 0 < std < math.inf:  # NaN or infinite pixels, or all pixels equal
        raise DatasetError(
            dataset.source, f"the training images of {dataset.name} have standard deviation {std}"
        )
    return RunData(
        dataset=dataset,
        mean=mean,
        std=std,
        x_train=spec.inputs(standardise(dataset.train_images, mean, std)),
        y_train=dataset.train_labels,
        x_test=spec.inputs(standardise(dataset.test_images, mean, std)),
        y_test=dataset.test_labels,
    )


def make_loader(data: RunData, batch_size: int, seed: int) -> DataLoader:
    """The shuffling loader: one permutation per epoch from a generator seeded with ``seed``
    (its state before an epoch's permutation is what a checkpoint saves)."""
    from tensorgrad.data import DataLoader, TensorDataset

    dataset = TensorDataset(data.x_train, data.y_train)
    return DataLoader(dataset, batch_size=batch_size, shuffle=True, seed=seed)


def shift_generator(seed: int, step: int) -> np.random.Generator:
    """The generator of step ``step``'s random shifts: a function of the seed and the step
    alone, so a resumed run (and every rank of a data-parallel one) draws the same shifts
    without any state to save."""
    return np.random.default_rng((seed, step))


def random_shift(
    batch: np.ndarray,
    image_shape: tuple[int, ...],
    shift: int,
    fill: float,
    generator: np.random.Generator,
) -> np.ndarray:
    """Each image of ``batch`` (rows of ``image_shape`` = (..., H, W) images, in any shape the
    model takes) moved by up to ``shift`` pixels down or up and right or left, independently
    and uniformly, the pixels moved in set to ``fill`` (the background): a random crop of
    the image padded by ``shift`` on every side, as torchvision's ``RandomCrop(size,
    padding=shift)``. A new array of ``batch``'s shape and dtype."""
    n = len(batch)
    images = batch.reshape(n, -1, *image_shape[-2:])  # (N, C, H, W)
    c, h, w = images.shape[1:]
    framed = np.full((n, c, h + 2 * shift, w + 2 * shift), fill, dtype=batch.dtype)
    framed[:, :, shift : shift + h, shift : shift + w] = images
    # every (H, W) window of the framed images: (N, C, 2·shift + 1, 2·shift + 1, H, W)
    windows = np.lib.stride_tricks.sliding_window_view(framed, (h, w), axis=(2, 3))
    down = generator.integers(0, 2 * shift + 1, n)
    right = generator.integers(0, 2 * shift + 1, n)
    return windows[np.arange(n), :, down, right].reshape(batch.shape)
