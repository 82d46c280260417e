"""The ``train`` and ``evaluate`` commands: options, their checks, and exit statuses.

Every option is checked before any data is loaded: a bad value or an output path that cannot
be written is a usage error (status 2). Then: 0 when the run finishes, 1 for an error (data
not found, an unusable checkpoint, a loss that is not finite), 2 for a resume that would
change the result, 130 / 143 when SIGINT / SIGTERM stopped the run after its checkpoint.

Under an MPI launcher (``mpiexec -n N tensorgrad train ...``) every rank runs this command:
``train`` starts the process group, ``--batch-size`` is the global batch, and the ranks end
together with the same status; rank 0 alone prints (errors included) and writes files.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable
from typing import Any

from tensorgrad.training.models import MODELS
from tensorgrad.training.recipe import DATASETS, OPTIMIZERS, Recipe, option_name
from tensorgrad.training.report import PLOT_FORMATS, matplotlib_missing, tensorboard_missing


# ----------------------------------------------------------------------------- option types
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
_nonnegative_float = _number(float, lambda v: 0 <= v < math.inf, "a number >= 0")
_fraction = _number(float, lambda v: 0 <= v < 1, "a number in [0, 1)")
_nonnegative_int = _number(int, lambda v: v >= 0, "an integer >= 0")
_seed = _number(int, lambda v: 0 <= v < 2**63, "an integer from 0 to 2**63 - 1")


def _hidden(text: str) -> tuple[int, ...]:
    if text.strip().lower() == "none":
        return ()
    try:
        sizes = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected layer widths separated by commas, such as 512,256, or 'none' for no "
            f"hidden layer; got {text!r}"
        ) from None
    if any(size <= 0 for size in sizes):
        raise argparse.ArgumentTypeError(f"layer widths must be positive, got {text!r}")
    return sizes


def output_problem(path: str) -> str | None:
    """Why ``path`` cannot receive an output file (None when it can): checked before training,
    by creating and removing a file beside it, so that no run ends unable to save."""
    import tempfile

    if not path:
        return "expected a file name, got ''"
    if os.path.isdir(path) or path.endswith(("/", os.sep)):
        return f"{path} is a directory; expected a file name"
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        return f"cannot write {path}: the directory {directory} does not exist"
    try:
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as exc:
        return f"cannot write {path}: cannot create files in {directory} ({exc.strerror})"
    return None


def _output(path: str) -> str:
    problem = output_problem(path)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return path


def _model_file(path: str) -> str:
    """--save: a tg.save file, or safetensors for a name ending in .safetensors."""
    from tensorgrad.training.evaluate import is_safetensors

    if is_safetensors(path) and _missing("safetensors"):
        raise argparse.ArgumentTypeError(
            "a .safetensors model needs the safetensors package: "
            "pip install 'tensorgrad[safetensors]'"
        )
    return _output(path)


def _log_dir(path: str) -> str:
    if not path or os.path.isfile(path):
        raise argparse.ArgumentTypeError(f"expected a directory for the logs, got {path!r}")
    if tensorboard_missing():
        raise argparse.ArgumentTypeError(
            "the TensorBoard logs need tensorboard: pip install 'tensorgrad[tensorboard]'"
        )
    return os.path.abspath(path)


def _missing(package: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(package) is None


def _image(path: str) -> str:
    extension = os.path.splitext(path)[1].lower().lstrip(".")
    if extension not in PLOT_FORMATS:
        raise argparse.ArgumentTypeError(
            f"expected an image file name ending in "
            f"{', '.join('.' + f for f in PLOT_FORMATS)}; got {path!r}"
        )
    if matplotlib_missing():
        raise argparse.ArgumentTypeError(
            "the training curve needs matplotlib: pip install 'tensorgrad[plot]'"
        )
    return _output(path)


# ----------------------------------------------------------------------------- the parsers
def register(subparsers: Any) -> None:
    """Add ``train`` and ``evaluate`` to the ``tensorgrad`` command line."""
    parser = subparsers.add_parser(
        "train",
        help="train a classifier (an MLP by default)",
        description="Train a classifier on MNIST, Fashion-MNIST or scikit-learn's digits, and "
        "report test accuracy. With --checkpoint, a run stopped by Ctrl-C, SIGTERM or a crash "
        "continues with --resume exactly as if it had never stopped.",
    )
    _add_settings(parser)
    _add_outputs(parser)
    parser.set_defaults(func=_run_train, parser=parser)

    evaluate = subparsers.add_parser(
        "evaluate",
        help="report a saved model's test accuracy and confusion matrix",
        description="Evaluate a model written by `tensorgrad train --save` or --checkpoint.",
    )
    evaluate.add_argument("--checkpoint", required=True, metavar="FILE")
    evaluate.add_argument(
        "--dataset",
        choices=DATASETS,
        default=None,
        help="default: the dataset the model was trained on",
    )
    evaluate.add_argument("--data-dir", default=None)
    evaluate.set_defaults(func=_run_evaluate, parser=evaluate)


def _add_settings(parser: argparse.ArgumentParser) -> None:
    """The recipe's options. They default to SUPPRESS, so that an option not given is seen as
    such: a resume then takes it from the checkpoint (and a new run from :class:`Recipe`)."""
    defaults = Recipe()

    def setting(name: str, help: str, **kwargs: Any) -> None:
        default = getattr(defaults, name.lstrip("-").replace("-", "_"), None)
        if isinstance(default, tuple):
            default = ",".join(map(str, default))
        shown = f" (default: {default})" if default is not None else ""
        parser.add_argument(name, default=argparse.SUPPRESS, help=help + shown, **kwargs)

    setting(
        "--dataset",
        "auto: MNIST when found or downloadable, else the digits (with a notice)",
        choices=DATASETS,
    )
    setting("--data-dir", "where the dataset files are (default: $TENSORGRAD_DATA, the cache)")
    setting("--no-download", "never try to download", action="store_true")
    setting("--model", _model_help(defaults), choices=tuple(MODELS))
    setting(
        "--hidden",
        "hidden layer widths, e.g. 512,256, or none (cnn: the convolution blocks' channels)",
        type=_hidden,
    )
    setting("--dropout", "dropout after each hidden layer", type=_fraction)
    setting("--epochs", "passes over the training set", type=_positive_int)
    setting(
        "--batch-size",
        "samples per step; under mpiexec -n K, over all K ranks (K must divide it)",
        type=_positive_int,
    )
    setting("--optimizer", "the optimizer", choices=OPTIMIZERS)
    setting("--lr", "peak learning rate (one-cycle)", type=_positive_float)
    setting("--weight-decay", "weight decay", type=_nonnegative_float)
    setting("--label-smoothing", "label smoothing", type=_fraction)
    setting(
        "--shift",
        "move training images by up to this many pixels each way, at random (augmentation)",
        type=_nonnegative_int,
    )
    setting("--seed", "weights, dropout, shuffling and shifts", type=_seed)


def _model_help(defaults: Recipe) -> str:
    """--model's help: each model's settings that differ from the defaults shown (the MLP's)."""
    lines = []
    for name in MODELS:
        own = Recipe.for_model(name)
        changed = [
            f"{option_name(f)} {_shown(getattr(own, f))}"
            for f in _RECIPE_OPTIONS
            if f != "model" and getattr(own, f) != getattr(defaults, f)
        ]
        if changed:
            lines.append(f"{name} trains with {' '.join(changed)} unless told otherwise")
    return "the model; " + "; ".join(lines) if lines else "the model"


def _shown(value: Any) -> str:
    return ",".join(map(str, value)) if isinstance(value, tuple) else str(value)


def _add_outputs(parser: argparse.ArgumentParser) -> None:
    """Where results go, checkpointing and resuming, and how the run reports."""

    def output(name: str, help: str, **kwargs: Any) -> None:
        parser.add_argument(name, default=argparse.SUPPRESS, help=help, **kwargs)

    output(
        "--save",
        "write the trained model (weights and configuration) here; a name ending in "
        ".safetensors writes safetensors (for PyTorch and friends; needs the safetensors extra)",
        metavar="FILE",
        type=_model_file,
    )
    output(
        "--tensorboard",
        "write TensorBoard logs (loss, accuracy and learning rate per step) into this directory",
        metavar="DIR",
        type=_log_dir,
    )
    output(
        "--plot",
        "write the training curve here (.png, .pdf, .svg...; needs matplotlib)",
        metavar="IMAGE",
        type=_image,
    )
    output(
        "--checkpoint",
        "write a training checkpoint here after every epoch (atomically), and on Ctrl-C or SIGTERM",
        metavar="FILE",
        type=_output,
    )
    output("--checkpoint-every", "also checkpoint every N steps", metavar="N", type=_positive_int)
    parser.add_argument(
        "--resume",
        metavar="FILE",
        default=None,
        help="continue the run in this checkpoint: its settings and outputs are the "
        "defaults, settings that would change the result are refused, more --epochs extend "
        "it; it keeps checkpointing to FILE unless --checkpoint says otherwise",
    )
    parser.add_argument(
        "--detect-anomaly",
        action="store_true",
        help="run each step under tg.autograd.detect_anomaly() to name the op that makes a NaN "
        "(slower)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def _fail(message: str, status: int = 1) -> int:
    print(f"tensorgrad: error: {message}", file=sys.stderr)
    return status


_RECIPE_OPTIONS = (
    "dataset",
    "data_dir",
    "model",
    "hidden",
    "dropout",
    "epochs",
    "batch_size",
    "optimizer",
    "lr",
    "weight_decay",
    "label_smoothing",
    "shift",
    "seed",
)


def _plan(args: argparse.Namespace) -> tuple[Recipe, dict[str, Any], Any]:
    """The recipe and outputs: the command line's, over the checkpoint's when resuming."""
    from tensorgrad.training import checkpoint as ckpt

    given = vars(args)
    saved = None
    if args.resume is not None:
        saved = ckpt.read(args.resume)
        recipe_values = saved.recipe.to_dict()
        kept = ("save", "plot", "checkpoint_every", "tensorboard")
        outputs = {k: saved.outputs.get(k) for k in kept}
        outputs["checkpoint"] = args.resume
    else:
        recipe_values = Recipe.for_model(given.get("model", Recipe.model)).to_dict()
        outputs = {"save": None, "plot": None, "checkpoint": None, "checkpoint_every": 0,
                   "tensorboard": None}  # fmt: skip
    for name in _RECIPE_OPTIONS:
        if name in given:
            recipe_values[name] = given[name]
    if "no_download" in given:
        recipe_values["download"] = False
    for name in ("save", "plot", "checkpoint", "checkpoint_every", "tensorboard"):
        if name in given:
            outputs[name] = given[name]
    recipe = Recipe.from_dict(recipe_values)
    for name in ("save", "plot"):  # paths stored in a checkpoint: check them again
        if outputs[name] and name not in given:
            problem = output_problem(outputs[name])
            if problem:
                args.parser.error(f"{option_name(name)} (from {args.resume}): {problem}")
    paths = [(n, os.path.abspath(outputs[n])) for n in ("save", "plot", "checkpoint") if outputs[n]]
    for i, (name, path) in enumerate(paths):
        for other, other_path in paths[:i]:
            if path == other_path:
                args.parser.error(f"{option_name(other)} and {option_name(name)} name one file")
    if outputs["checkpoint_every"] and not outputs["checkpoint"]:
        args.parser.error("--checkpoint-every needs --checkpoint FILE")
    for name in ("save", "plot"):
        if outputs[name]:
            outputs[name] = os.path.abspath(outputs[name])
    return recipe, outputs, saved


def _run_train(args: argparse.Namespace) -> int:
    from tensorgrad.training.loop import anomaly_mode
    from tensorgrad.training.world import join

    if args.detect_anomaly:
        try:
            anomaly_mode()
        except RuntimeError as exc:
            args.parser.error(str(exc))
    try:  # the MPI launcher's ranks, or a world of one (no MPI) without a launcher
        world = join()
    except (RuntimeError, ValueError) as exc:
        return _fail(str(exc))
    if not world.is_main:
        _quiet(args.parser)
    try:
        status = _train_in(world, args)
    except BaseException:
        if world.size == 1:  # a usage error, Ctrl-C twice: no process group is left behind
            world.close()
        raise  # several ranks: they end at exit (or abort on an uncaught error, as they must)
    world.close()
    return status


def _quiet(parser: argparse.ArgumentParser) -> None:
    """Usage errors on ranks other than 0: the same status, printed by rank 0 alone."""
    parser.print_usage = lambda file=None: None  # type: ignore[method-assign]
    parser.exit = lambda status=0, message=None: sys.exit(status)  # type: ignore[method-assign]


def _train_in(world: Any, args: argparse.Namespace) -> int:
    from tensorgrad.data import DatasetError, DatasetNotFoundError
    from tensorgrad.serialization import CheckpointError
    from tensorgrad.training.loop import (
        ANOMALY_NEEDS_ONE_PROCESS,
        ResumeError,
        TrainingDiverged,
        TrainingStopped,
        train,
    )
    from tensorgrad.training.world import PeerFailed, split_problem

    if world.size > 1 and args.detect_anomaly:
        args.parser.error(ANOMALY_NEEDS_ONE_PROCESS)
    error = None
    try:
        recipe, outputs, saved = _plan(args)
    except (CheckpointError, OSError) as exc:
        error = exc
    try:
        world.agree(error)  # a rank that cannot read the checkpoint stops every rank
    except (CheckpointError, OSError, PeerFailed) as exc:
        return _fail_in(world, exc)
    problem = split_problem(recipe.batch_size, world.size)
    if problem and saved is not None:
        return _fail_in(world, f"cannot resume {args.resume} on {world.size} ranks: {problem}", 2)
    if problem:
        args.parser.error(problem)
    try:
        train(
            recipe,
            save=outputs["save"],
            plot=outputs["plot"],
            progress=False if args.no_progress else None,
            checkpoint=outputs["checkpoint"],
            checkpoint_every=outputs["checkpoint_every"] or 0,
            resume=saved,
            detect_anomaly=args.detect_anomaly,
            world=world,
            tensorboard=outputs["tensorboard"],
        )
    except TrainingStopped as stop:
        if world.is_main:
            how = f"mpiexec -n {world.size} " if world.size > 1 else ""
            print(
                f"stopped after step {stop.step}: the checkpoint is {stop.checkpoint}\n"
                f"resume with: {how}tensorgrad train --resume {stop.checkpoint}",
                file=sys.stderr,
            )
            if world.size > 1:
                print(
                    "(or on any number of ranks that divides the global batch of "
                    f"{recipe.batch_size}, or without mpiexec)",
                    file=sys.stderr,
                )
        return stop.exit_status
    except ResumeError as exc:
        return _fail_in(world, exc, status=2)
    except (DatasetNotFoundError, DatasetError, CheckpointError, TrainingDiverged) as exc:
        return _fail_in(world, exc)
    except (OSError, PeerFailed) as exc:  # writing an output failed (disk full, say)
        return _fail_in(world, exc)
    return 0


def _fail_in(world: Any, error: BaseException | str, status: int = 1) -> int:
    """``_fail`` on rank 0 (with what every rank reported, when the ranks agreed on a
    failure); the other ranks only print an error no rank agreed on, naming their rank."""
    from tensorgrad.training.loop import TrainingDiverged

    report = getattr(error, "ranks_report", None)
    if world.is_main:
        return _fail(report or str(error), status)
    if report is None and not isinstance(error, (str, TrainingDiverged)):
        return _fail(f"(rank {world.rank}) {error}", status)
    return status


def _run_evaluate(args: argparse.Namespace) -> int:
    from tensorgrad.data import DatasetError, DatasetNotFoundError
    from tensorgrad.serialization import CheckpointError
    from tensorgrad.training.evaluate import evaluate_checkpoint

    if os.path.isdir(args.checkpoint):
        return _fail(f"{args.checkpoint} is a directory; expected a file written by train --save")
    try:
        evaluate_checkpoint(args.checkpoint, args.dataset, args.data_dir)
    except (DatasetNotFoundError, DatasetError, CheckpointError, ValueError, OSError) as exc:
        return _fail(str(exc))
    return 0
