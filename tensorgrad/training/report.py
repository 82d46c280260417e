"""What a run tells its user: the progress bar, a line per epoch, the confusion matrix and the
training curve. Only the main process of a data-parallel run prints (:class:`Reporter`)."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any, TextIO

import numpy as np

#: File extensions ``--plot`` accepts: the image formats matplotlib writes without extras.
PLOT_FORMATS = ("png", "pdf", "svg", "svgz", "jpg", "jpeg", "tif", "tiff", "webp", "eps", "ps")


class ProgressBar:
    """A one-line progress bar with the running loss and samples/s, redrawn in place."""

    def __init__(self, total: int, stream: TextIO, enabled: bool, done: int = 0) -> None:
        self.total, self.stream, self.enabled = total, stream, enabled
        self.done_before = done  # samples a resumed epoch had done: not in this rate
        self.start = time.perf_counter()
        self.last_draw = 0.0

    def update(self, done: int, loss: float) -> None:
        now = time.perf_counter()
        if not self.enabled or (now - self.last_draw < 0.1 and done < self.total):
            return
        self.last_draw = now
        fraction = done / max(self.total, 1)
        filled = int(30 * fraction)
        rate = (done - self.done_before) / max(now - self.start, 1e-9)
        bar = "#" * filled + "-" * (30 - filled)
        self.stream.write(
            f"\r  [{bar}] {done:>6}/{self.total} loss {loss:.4f} {rate:,.0f} samples/s"
        )
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\r" + " " * 90 + "\r")
            self.stream.flush()


class Reporter:
    """Prints a run's lines to ``out``, on the main process only."""

    def __init__(self, out: TextIO, enabled: bool, progress: bool) -> None:
        self.out, self.enabled, self.progress = out, enabled, progress and enabled

    def say(self, text: str) -> None:
        if self.enabled:
            print(text, file=self.out, flush=True)

    def bar(self, total: int, done: int = 0) -> ProgressBar:
        return ProgressBar(total, self.out, self.progress, done)

    def epoch(self, row: dict[str, float], epochs: int) -> None:
        rate = row["samples"] / row["seconds"] if row["seconds"] > 0 else float("nan")
        self.say(
            f"epoch {row['epoch']:>2}/{epochs}  train loss {row['train_loss']:.4f} "
            f"acc {100 * row['train_acc']:.2f}%  test loss {row['test_loss']:.4f} acc "
            f"{100 * row['test_acc']:.2f}%  {row['seconds']:.1f}s ({rate:,.0f} samples/s)"
        )


class TensorBoardLog:
    """``--tensorboard DIR``: per step ``train/loss``, ``train/accuracy`` (the batch's) and
    ``train/lr`` (the rate the step used), per epoch ``test/loss`` and ``test/accuracy``, by
    ``tensorgrad.utils.tensorboard.SummaryWriter``. A run resumed after step S (its
    checkpoint's) purges what an earlier run logged after S: those steps are logged again."""

    def __init__(self, log_dir: str | None, start_step: int = 0) -> None:
        self.writer = None
        if log_dir:
            from tensorgrad.utils.tensorboard import SummaryWriter

            self.writer = SummaryWriter(log_dir, purge_step=start_step + 1 if start_step else None)

    def step(self, step: int, loss: float, accuracy: float, lr: float) -> None:
        if self.writer is not None:
            self.writer.add_scalar("train/loss", loss, step)
            self.writer.add_scalar("train/accuracy", accuracy, step)
            self.writer.add_scalar("train/lr", lr, step)

    def epoch(self, row: dict[str, Any], step: int) -> None:
        if self.writer is not None:
            self.writer.add_scalar("test/loss", row["test_loss"], step)
            self.writer.add_scalar("test/accuracy", row["test_acc"], step)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


NO_LOG = TensorBoardLog(None)  #: the log of a run without --tensorboard: nothing


def tensorboard_missing() -> bool:
    import importlib.util

    return importlib.util.find_spec("tensorboard") is None


def confusion_matrix(labels: np.ndarray, predicted: np.ndarray, num_classes: int) -> np.ndarray:
    """Counts of (true class, predicted class) pairs."""
    matrix = np.zeros((num_classes, num_classes), dtype=np.int64)
    np.add.at(matrix, (labels, predicted), 1)
    return matrix


def format_confusion(matrix: np.ndarray, classes: Sequence[str]) -> str:
    width = max(5, *(len(str(v)) for v in matrix.ravel()), *(len(c[:8]) for c in classes))
    header = " " * 10 + "".join(f"{c[:8]:>{width + 1}}" for c in classes)
    rows = [
        f"{c[:9]:>9} " + "".join(f"{v:>{width + 1}}" for v in row)
        for c, row in zip(classes, matrix)
    ]
    return "\n".join(["rows: true class, columns: predicted class", header, *rows])


def plot_history(history: list[dict[str, Any]], path: str, dataset: str) -> None:
    """The training curve, in the format the extension of ``path`` names (needs matplotlib,
    the ``plot`` extra; the command line checks it is there before training)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    epochs = [row["epoch"] for row in history]
    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    left.plot(epochs, [row["train_loss"] for row in history], label="train")
    left.plot(epochs, [row["test_loss"] for row in history], label="test")
    left.set(xlabel="epoch", ylabel="loss", title=f"{dataset}: loss")
    right.plot(epochs, [100 * row["train_acc"] for row in history], label="train")
    right.plot(epochs, [100 * row["test_acc"] for row in history], label="test")
    right.set(xlabel="epoch", ylabel="accuracy (%)", title=f"{dataset}: accuracy")
    for axes in (left, right):
        axes.legend()
        axes.grid(alpha=0.3)
    figure.tight_layout()
    directory, name = os.path.split(os.path.abspath(path))
    temporary = os.path.join(directory, f".{name}.{os.getpid()}.tmp")
    try:  # written beside the target and renamed: no half-drawn image on a crash
        figure.savefig(temporary, dpi=100, format=os.path.splitext(name)[1][1:].lower())
        os.replace(temporary, path)
    finally:
        plt.close(figure)
        if os.path.exists(temporary):
            os.unlink(temporary)


def matplotlib_missing() -> bool:
    import importlib.util

    return importlib.util.find_spec("matplotlib") is None
