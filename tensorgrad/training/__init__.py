"""``tensorgrad train`` and ``tensorgrad evaluate``: a classifier on MNIST and friends, with
training that survives interruption.

Which file to open for which change:

- ``recipe.py``: the settings of a run (:class:`Recipe`), their checks, and which of them a
  resume must keep;
- ``models.py``: the model registry (``--model``), the optimizer and the one-cycle schedule;
- ``data.py``: loading and standardising the dataset, the shuffling loader;
- ``loop.py``: :func:`train` and the :class:`Run` — the epoch loop, the step and its guards
  (a non-finite loss, SIGINT/SIGTERM), resuming;
- ``checkpoint.py``: what a training checkpoint holds, writing and checking it;
- ``world.py``: the seam for data-parallel runs (the world of ranks, batch sharding,
  main-process I/O);
- ``signals.py``: turning SIGINT/SIGTERM into a clean stop;
- ``report.py``: the progress bar, the epoch lines, the confusion matrix, the plot;
- ``evaluate.py``: ``tensorgrad evaluate``, writing and reading ``--save`` files (``tg.save``
  or safetensors);
- ``export.py``: ``tensorgrad export``, a trained classifier as ONNX;
- ``commands.py``: the ``train`` and ``evaluate`` command-line options, their checks and exit
  statuses (``tensorgrad/cli.py``, the ``tensorgrad`` command itself, gathers the commands).

``examples/train_mnist.py`` is the same recipe as a short script.
"""

from tensorgrad.training.commands import register
from tensorgrad.training.data import flatten_images
from tensorgrad.training.evaluate import evaluate_arrays, evaluate_checkpoint
from tensorgrad.training.loop import (
    Hooks,
    ResumeError,
    Run,
    TrainingDiverged,
    TrainingStopped,
    train,
)
from tensorgrad.training.models import (
    MODELS,
    ModelSpec,
    build_model,
    build_optimizer,
    register_model,
)
from tensorgrad.training.recipe import DATASETS, OPTIMIZERS, Recipe
from tensorgrad.training.report import ProgressBar, confusion_matrix, format_confusion

__all__ = [
    "DATASETS",
    "MODELS",
    "OPTIMIZERS",
    "Hooks",
    "ModelSpec",
    "ProgressBar",
    "Recipe",
    "ResumeError",
    "Run",
    "TrainingDiverged",
    "TrainingStopped",
    "build_model",
    "build_optimizer",
    "confusion_matrix",
    "evaluate_arrays",
    "evaluate_checkpoint",
    "flatten_images",
    "format_confusion",
    "register",
    "register_model",
    "train",
]
