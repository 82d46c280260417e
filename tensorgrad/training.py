"""``tensorgrad train`` and ``tensorgrad evaluate``: an MLP classifier on MNIST and friends.

The training loop is the one every tutorial shows — zero the gradients, forward, backward,
step — with a progress bar, a line per epoch and a checkpoint that ``evaluate`` (or PyTorch)
can load. ``examples/train_mnist.py`` is the same recipe as a short script.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np

import tensorgrad as tg
from tensorgrad import nn, optim
from tensorgrad.nn import functional as F

DATASETS = ("auto", "mnist", "fashion-mnist", "digits")
OPTIMIZERS = ("sgd", "adam", "adamw", "rmsprop")


@dataclass
class Recipe:
    """Everything that defines a training run; the defaults are the documented recipe."""

    dataset: str = "auto"
    data_dir: str | None = None
    hidden: tuple[int, ...] = (1024, 512)
    dropout: float = 0.2
    epochs: int = 12
    batch_size: int = 128
    optimizer: str = "adamw"
    lr: float = 2e-3
    weight_decay: float = 1e-4
    label_smoothing: float = 0.05
    seed: int = 0
    download: bool = True
    extra: dict[str, Any] = field(default_factory=dict)


# ----------------------------------------------------------------------------- building blocks
def build_model(
    in_features: int, hidden: Sequence[int], num_classes: int, dropout: float
) -> nn.Module:
    """An MLP: Linear → ReLU (→ Dropout) per hidden layer, then a Linear classifier."""
    layers: list[nn.Module] = []
    width = in_features
    for size in hidden:
        layers += [nn.Linear(width, size), nn.ReLU()]
        if dropout:
            layers.append(nn.Dropout(dropout))
        width = size
    layers.append(nn.Linear(width, num_classes))
    return nn.Sequential(*layers)


def build_optimizer(name: str, params: Any, lr: float, weight_decay: float) -> optim.Optimizer:
    if name == "sgd":
        return optim.SGD(params, lr=lr, momentum=0.9, nesterov=True, weight_decay=weight_decay)
    if name == "adam":
        return optim.Adam(params, lr=lr, weight_decay=weight_decay)
    if name == "adamw":
        return optim.AdamW(params, lr=lr, weight_decay=weight_decay)
    if name == "rmsprop":
        return optim.RMSprop(params, lr=lr, weight_decay=weight_decay)
    raise ValueError(f"unknown optimizer {name!r}; choose from {', '.join(OPTIMIZERS)}")


def flatten_images(images: np.ndarray, mean: float, std: float) -> np.ndarray:
    """(N, H, W) images in [0, 1] → (N, H·W) float32, standardised with the training mean/std."""
    flat = images.reshape(len(images), -1).astype(np.float32, copy=False)
    return (flat - np.float32(mean)) / np.float32(std)


@tg.no_grad()
def evaluate_arrays(
    model: nn.Module, inputs: np.ndarray, labels: np.ndarray, batch_size: int = 1000
) -> tuple[float, float, np.ndarray]:
    """Mean loss, accuracy and predicted classes of ``model`` on arrays, in eval mode."""
    was_training = model.training
    model.eval()
    total_loss, predictions = 0.0, []
    for start in range(0, len(inputs), batch_size):
        x = tg.tensor(inputs[start : start + batch_size])
        y = labels[start : start + batch_size]
        logits = model(x)
        total_loss += F.cross_entropy(logits, y, reduction="sum").item()
        predictions.append(logits._data.argmax(axis=1))
    model.train(was_training)
    predicted = np.concatenate(predictions) if predictions else np.zeros(0, np.int64)
    accuracy = float((predicted == labels).mean()) if len(labels) else float("nan")
    return total_loss / max(len(labels), 1), accuracy, predicted


def confusion_matrix(labels: np.ndarray, predicted: np.ndarray, num_classes: int) -> np.ndarray:
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


class ProgressBar:
    """A one-line progress bar with the running loss and samples/s, redrawn in place."""

    def __init__(self, total: int, stream: TextIO, enabled: bool) -> None:
        self.total, self.stream, self.enabled = total, stream, enabled
        self.start = time.perf_counter()
        self.last_draw = 0.0

    def update(self, done: int, loss: float) -> None:
        now = time.perf_counter()
        if not self.enabled or (now - self.last_draw < 0.1 and done < self.total):
            return
        self.last_draw = now
        fraction = done / max(self.total, 1)
        filled = int(30 * fraction)
        rate = done / max(now - self.start, 1e-9)
        bar = "#" * filled + "-" * (30 - filled)
        self.stream.write(
            f"\r  [{bar}] {done:>6}/{self.total} loss {loss:.4f} {rate:,.0f} samples/s"
        )
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\r" + " " * 90 + "\r")
            self.stream.flush()


# ----------------------------------------------------------------------------- the run
def train(
    recipe: Recipe,
    save: str | None = None,
    plot: str | None = None,
    out: TextIO | None = None,
    progress: bool | None = None,
) -> dict[str, Any]:
    """Train an MLP as ``recipe`` says; print progress to ``out``; return the final metrics."""
    out = out or sys.stdout
    from tensorgrad.data import DataLoader, TensorDataset, load_dataset

    data = load_dataset(recipe.dataset, root=recipe.data_dir, download=recipe.download)
    if data.notice:
        print(f"notice: {data.notice}", file=out)
    mean, std = float(data.train_images.mean()), float(data.train_images.std())
    x_train = flatten_images(data.train_images, mean, std)
    x_test = flatten_images(data.test_images, mean, std)
    y_train, y_test = data.train_labels, data.test_labels

    tg.manual_seed(recipe.seed)
    model = build_model(x_train.shape[1], recipe.hidden, data.num_classes, recipe.dropout)
    optimizer = build_optimizer(
        recipe.optimizer, model.parameters(), recipe.lr, recipe.weight_decay
    )
    loader = DataLoader(
        TensorDataset(x_train, y_train),
        batch_size=recipe.batch_size,
        shuffle=True,
        seed=recipe.seed,
    )
    scheduler = optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=recipe.lr, epochs=recipe.epochs, steps_per_epoch=len(loader)
    )
    print(
        f"dataset {data.name}: {len(x_train)} train / {len(x_test)} test, from {data.source}\n"
        f"model {x_train.shape[1]}-{'-'.join(map(str, recipe.hidden))}-{data.num_classes} "
        f"({sum(p.size for p in model.parameters()):,} parameters), {recipe.optimizer} lr "
        f"{recipe.lr} one-cycle, batch {recipe.batch_size}, {recipe.epochs} epochs, "
        f"seed {recipe.seed}",
        file=out,
    )
    show_bar = out.isatty() if progress is None else progress
    history: list[dict[str, float]] = []
    train_seconds = 0.0
    for epoch in range(1, recipe.epochs + 1):
        model.train()
        bar = ProgressBar(len(x_train), out, show_bar)
        started = time.perf_counter()
        loss_sum, correct, seen = 0.0, 0, 0
        for x, y in loader:
            optimizer.zero_grad()
            logits = model(x)
            loss = F.cross_entropy(logits, y, label_smoothing=recipe.label_smoothing)
            loss.backward()
            optimizer.step()
            scheduler.step()
            n = len(y)
            loss_sum += loss.item() * n
            correct += int((logits._data.argmax(axis=1) == y._data).sum())
            seen += n
            bar.update(seen, loss_sum / seen)
        seconds = time.perf_counter() - started
        train_seconds += seconds
        bar.close()
        test_loss, test_acc, _ = evaluate_arrays(model, x_test, y_test)
        row = {
            "epoch": epoch,
            "train_loss": loss_sum / seen,
            "train_acc": correct / seen,
            "test_loss": test_loss,
            "test_acc": test_acc,
            "seconds": seconds,
        }
        history.append(row)
        print(
            f"epoch {epoch:>2}/{recipe.epochs}  train loss {row['train_loss']:.4f} "
            f"acc {100 * row['train_acc']:.2f}%  test loss {test_loss:.4f} acc "
            f"{100 * test_acc:.2f}%  {seconds:.1f}s ({seen / seconds:,.0f} samples/s)",
            file=out,
        )
        if not math.isfinite(row["train_loss"]):
            print("training diverged (the loss is not finite); try a smaller --lr", file=out)
            break

    final = history[-1]
    print(
        f"done: test accuracy {100 * final['test_acc']:.2f}% on {data.name} after "
        f"{len(history)} epochs, {train_seconds:.1f}s of training",
        file=out,
    )
    if save:
        config = {
            "in_features": int(x_train.shape[1]),
            "hidden": list(recipe.hidden),
            "num_classes": data.num_classes,
            "dropout": recipe.dropout,
            "mean": mean,
            "std": std,
            "dataset": data.name,
            "classes": list(data.classes),
            "test_acc": final["test_acc"],
            "seed": recipe.seed,
        }
        tg.save({"model": model.state_dict(), "config": config}, save)
        print(f"saved the model to {save}", file=out)
    if plot:
        _plot_history(history, plot, data.name, out)
    return {
        "history": history,
        "test_acc": final["test_acc"],
        "train_seconds": train_seconds,
        "dataset": data.name,
        "notice": data.notice,
    }


def _plot_history(history: list[dict[str, float]], path: str, dataset: str, out: TextIO) -> None:
    """The training curve as a PNG, when matplotlib (the ``plot`` extra) is installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("no plot: matplotlib is not installed (pip install 'tensorgrad[plot]')", file=out)
        return
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
    figure.savefig(path, dpi=100)
    plt.close(figure)
    print(f"saved the training curve to {path}", file=out)


def evaluate_checkpoint(
    checkpoint: str, dataset: str | None, data_dir: str | None, out: TextIO | None = None
) -> float:
    """Load a checkpoint written by ``train --save`` and report its test accuracy."""
    out = out or sys.stdout
    from tensorgrad.data import load_dataset

    state = tg.load(checkpoint)
    if not isinstance(state, dict) or "model" not in state or "config" not in state:
        raise ValueError(f"{checkpoint}: not a checkpoint written by `tensorgrad train --save`")
    config = state["config"]
    data = load_dataset(dataset or config["dataset"], root=data_dir)
    if data.notice:
        print(f"notice: {data.notice}", file=out)
    model = build_model(
        config["in_features"], config["hidden"], config["num_classes"], config["dropout"]
    )
    model.load_state_dict(state["model"])
    x_test = flatten_images(data.test_images, config["mean"], config["std"])
    if x_test.shape[1] != config["in_features"]:
        raise ValueError(
            f"{checkpoint}: the model takes {config['in_features']} inputs, but {data.name} "
            f"images have {x_test.shape[1]} pixels"
        )
    loss, accuracy, predicted = evaluate_arrays(model, x_test, data.test_labels)
    print(
        f"{data.name} test set: {len(x_test)} images, loss {loss:.4f}, "
        f"accuracy {100 * accuracy:.2f}%",
        file=out,
    )
    print(
        format_confusion(
            confusion_matrix(data.test_labels, predicted, config["num_classes"]), data.classes
        ),
        file=out,
    )
    return accuracy


# ----------------------------------------------------------------------------- command line
def _number(kind: Callable[[str], Any], accept: Callable[[Any], bool], expected: str) -> Any:
    """An argparse ``type=`` that parses with ``kind`` and refuses what ``accept`` rejects."""

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or not accept(value):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        return value

    return parse


_positive_int = _number(int, lambda v: v > 0, "a positive integer")
_positive_float = _number(float, lambda v: 0 < v < math.inf, "a positive number")
_fraction = _number(float, lambda v: 0 <= v < 1, "a number in [0, 1)")


def _hidden(text: str) -> tuple[int, ...]:
    if text.strip() in ("", "none"):
        return ()
    try:
        sizes = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected layer widths separated by commas, such as 512,256; got {text!r}"
        ) from None
    if any(size <= 0 for size in sizes):
        raise argparse.ArgumentTypeError(f"layer widths must be positive, got {text!r}")
    return sizes


def register(subparsers: Any) -> None:
    defaults = Recipe()
    train_parser = subparsers.add_parser(
        "train",
        help="train an MLP classifier",
        description="Train an MLP classifier on MNIST, "
        "Fashion-MNIST or scikit-learn's digits, and report test accuracy.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    add = train_parser.add_argument
    add(
        "--dataset",
        choices=DATASETS,
        default=defaults.dataset,
        help="auto: MNIST when found or downloadable, else the digits (with a notice)",
    )
    add(
        "--data-dir",
        default=None,
        help="where the dataset files are (else $TENSORGRAD_DATA, then the cache directory)",
    )
    add("--no-download", action="store_true", help="never try to download")
    add("--hidden", type=_hidden, default=defaults.hidden, help="hidden layer widths, e.g. 512,256")
    add(
        "--dropout",
        type=_fraction,
        default=defaults.dropout,
        help="dropout after each hidden layer",
    )
    add("--epochs", type=_positive_int, default=defaults.epochs)
    add("--batch-size", type=_positive_int, default=defaults.batch_size)
    add("--optimizer", choices=OPTIMIZERS, default=defaults.optimizer)
    add("--lr", type=_positive_float, default=defaults.lr, help="peak learning rate (one-cycle)")
    add("--weight-decay", type=float, default=defaults.weight_decay)
    add("--label-smoothing", type=_fraction, default=defaults.label_smoothing)
    add("--seed", type=int, default=defaults.seed)
    add("--save", metavar="FILE", help="write the trained model (a .npz checkpoint) here")
    add("--plot", metavar="PNG", help="write the training curve here (needs matplotlib)")
    add("--no-progress", action="store_true", help="no progress bar")
    train_parser.set_defaults(func=_run_train)

    eval_parser = subparsers.add_parser(
        "evaluate",
        help="report a checkpoint's test accuracy and confusion matrix",
        description="Evaluate a checkpoint written by `tensorgrad train --save`.",
    )
    eval_parser.add_argument("--checkpoint", required=True, metavar="FILE")
    eval_parser.add_argument(
        "--dataset",
        choices=DATASETS,
        default=None,
        help="default: the dataset the model was trained on",
    )
    eval_parser.add_argument("--data-dir", default=None)
    eval_parser.set_defaults(func=_run_evaluate)


def _fail(message: str) -> int:
    print(f"tensorgrad: error: {message}", file=sys.stderr)
    return 1


def _run_train(args: argparse.Namespace) -> int:
    from tensorgrad.data import DatasetError, DatasetNotFoundError

    recipe = Recipe(
        dataset=args.dataset,
        data_dir=args.data_dir,
        hidden=args.hidden,
        dropout=args.dropout,
        epochs=args.epochs,
        batch_size=args.batch_size,
        optimizer=args.optimizer,
        lr=args.lr,
        weight_decay=args.weight_decay,
        label_smoothing=args.label_smoothing,
        seed=args.seed,
        download=not args.no_download,
    )
    if args.save and not Path(args.save).resolve().parent.is_dir():
        return _fail(f"--save: the directory of {args.save} does not exist")
    try:
        train(
            recipe, save=args.save, plot=args.plot, progress=None if not args.no_progress else False
        )
    except (DatasetNotFoundError, DatasetError) as exc:
        return _fail(str(exc))
    return 0


def _run_evaluate(args: argparse.Namespace) -> int:
    from tensorgrad.data import DatasetError, DatasetNotFoundError

    try:
        evaluate_checkpoint(args.checkpoint, args.dataset, args.data_dir)
    except FileNotFoundError as exc:
        return _fail(str(exc))
    except (DatasetNotFoundError, DatasetError, ValueError, KeyError) as exc:
        return _fail(str(exc))
    return 0
