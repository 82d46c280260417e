"""Data loading: items per second through ``DataLoader``, item by item and batch by batch.

The ported PyTorch MNIST example reads ``datasets.MNIST`` with
``Compose([ToTensor(), Normalize(...)])``: item by item, that is 60,000 ``__getitem__`` and
two transforms an epoch in Python; ``MNIST.get_batch`` applies the same transforms to a
whole batch with a few array operations. Both are timed in turn on the same dataset (MNIST-
format files of random pixels, so that no download is needed), after checking that they give
the same batches. The ``TensorDataset`` row is the loader of ``tensorgrad train``.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np

from bench import common


def _mnist_like(directory: Path, n: int) -> None:
    """MNIST's training files, with ``n`` random images, in torchvision's layout."""
    from tensorgrad.data import IDX_FILES, write_idx

    raw = directory / "MNIST" / "raw"
    raw.mkdir(parents=True)
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
    write_idx(raw / IDX_FILES["train_images"], images, compress=False)
    write_idx(raw / IDX_FILES["train_labels"], rng.integers(0, 10, n, np.uint8), compress=False)


def _epoch(loader) -> None:
    for _ in loader:
        pass


def run(args: argparse.Namespace) -> str:
    from tensorgrad.data import DataLoader, TensorDataset, default_collate
    from tensorgrad.vision import datasets, transforms

    config = common.settings(args)
    n = config.pick(full=20_000, quick=10_000, smoke=256)
    batch = 64

    def per_item(samples):  # not the default collate_fn itself: the loader reads item by item
        return default_collate(samples)

    with tempfile.TemporaryDirectory() as directory:
        _mnist_like(Path(directory), n)
        transform = transforms.Compose(
            [transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))]
        )
        mnist = datasets.MNIST(directory, transform=transform)
    flat = TensorDataset(
        np.random.default_rng(1).random((n, 784), dtype=np.float32), np.arange(n) % 10
    )
    loaders = {
        "MNIST + ToTensor + Normalize, item by item": DataLoader(mnist, batch, collate_fn=per_item),
        "MNIST + ToTensor + Normalize, batched (get_batch)": DataLoader(mnist, batch),
        "TensorDataset (N×784 float32), batch 128, shuffled": DataLoader(
            flat, 128, shuffle=True, seed=0
        ),
    }
    first = [next(iter(loaders[name]))[0].data for name in list(loaders)[:2]]
    if not np.array_equal(first[0], first[1]):
        raise common.DisagreementError("loader: item-by-item and batched MNIST batches differ")

    times = common.interleaved(
        {name: (lambda loader=loader: _epoch(loader)) for name, loader in loaders.items()},
        config.repeats,
        warmup=config.warmup,
        pause=config.pause,
    )
    rows = []
    for name, seconds in times.items():
        rate = common.Summary.of(seconds).inverted(n)
        epoch = common.Summary.of(seconds).scaled(60_000 / n)
        rows.append(
            [name, common.number(rate.median), common.spread(rate), common.number(epoch.median)]
        )
    speedup = common.paired_ratios(*(times[name] for name in list(loaders)[:2]))
    return "\n".join(
        [
            "## Data loading\n",
            f"Items per second through `DataLoader` (batch {batch} unless said), {n:,} items "
            f"an epoch, median and range of {config.repeats} interleaved repeats; the last "
            "column scales the median to a 60,000-item epoch.\n",
            common.table(
                ["", "items/s", "range", "s per 60,000 items"],
                rows,
            ),
            f"Batched MNIST transforms: {common.ratio(speedup)} the item-by-item speed.\n",
        ]
    )
