"""The recipe: every setting that decides what a training run computes, checked in one place.

A run resumed from a checkpoint must compute what the unbroken run would have, so
:func:`resume_differences` compares a new recipe with the saved one, field by field: a field
in :data:`RESULT_FIELDS` that differs refuses the resume; more ``epochs`` extend the run.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

DATASETS = ("auto", "mnist", "fashion-mnist", "digits")
OPTIMIZERS = ("sgd", "adam", "adamw", "rmsprop")


@dataclass
class Recipe:
    """Everything that defines a training run; the defaults are the MLP's documented recipe,
    and :meth:`for_model` gives another model's (``Recipe.for_model("cnn")``).

    ``hidden`` is the widths of the hidden layers: the MLP's fully connected layers, the
    CNN's convolution blocks (channels). ``shift`` moves each training image by up to that
    many pixels in each direction, at random (augmentation; 0: none).
    """

    dataset: str = "auto"
    data_dir: str | None = None
    model: str = "mlp"
    hidden: tuple[int, ...] = (1024, 512)
    dropout: float = 0.2
    epochs: int = 12
    batch_size: int = 128
    optimizer: str = "adamw"
    lr: float = 2e-3
    weight_decay: float = 1e-4
    label_smoothing: float = 0.05
    shift: int = 0
    seed: int = 0
    download: bool = True

    @classmethod
    def for_model(cls, model: str, **settings: Any) -> Recipe:
        """The recipe of ``model`` (its registered defaults over the MLP's), with
        ``settings`` changed: ``Recipe.for_model("cnn", dataset="fashion-mnist")``."""
        from tensorgrad.training.models import model_spec

        return cls(**{**model_spec(model).defaults, "model": model, **settings})

    def check(self) -> None:
        """Raise ``ValueError`` naming the first setting that cannot work."""
        from tensorgrad.training.models import MODELS

        problems = [
            ("dataset", self.dataset in DATASETS, f"one of {', '.join(DATASETS)}"),
            ("model", self.model in MODELS, f"one of {', '.join(MODELS)}"),
            ("hidden", _widths(self.hidden), "a tuple of positive integers"),
            ("dropout", _number(self.dropout) and 0 <= self.dropout < 1, "a number in [0, 1)"),
            ("epochs", _count(self.epochs), "a positive integer"),
            ("batch_size", _count(self.batch_size), "a positive integer"),
            ("optimizer", self.optimizer in OPTIMIZERS, f"one of {', '.join(OPTIMIZERS)}"),
            ("lr", _number(self.lr) and 0 < self.lr < math.inf, "a positive number"),
            (
                "weight_decay",
                _number(self.weight_decay) and 0 <= self.weight_decay < math.inf,
                "a number >= 0",
            ),
            (
                "label_smoothing",
                _number(self.label_smoothing) and 0 <= self.label_smoothing < 1,
                "a number in [0, 1)",
            ),
            ("shift", _is_int(self.shift) and self.shift >= 0, "an integer >= 0"),
            (
                "seed",
                isinstance(self.seed, int) and not isinstance(self.seed, bool) and self.seed >= 0,
                "an integer >= 0",
            ),
        ]
        for name, ok, expected in problems:
            if not ok:
                raise ValueError(f"Recipe.{name} must be {expected}, got {getattr(self, name)!r}")

    def to_dict(self) -> dict[str, Any]:
        """The recipe as plain values (``hidden`` as a list), as checkpoints store it."""
        values = dataclasses.asdict(self)
        values["hidden"] = list(self.hidden)
        return values

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> Recipe:
        """The inverse of :meth:`to_dict`; unknown keys are a ``ValueError``."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - names)
        if unknown:
            raise ValueError(f"unknown recipe settings: {', '.join(unknown)}")
        values = dict(values)
        if "hidden" in values:
            values["hidden"] = tuple(values["hidden"])
        return cls(**values)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _count(value: Any) -> bool:
    return _is_int(value) and value > 0


def _widths(value: Any) -> bool:
    return isinstance(value, tuple) and all(_count(v) for v in value)


#: Settings that change what a run computes: a resume must keep them. (``dataset`` is not
#: here: the data itself is compared, by name and fingerprint, so that ``auto`` and the
#: name it resolved to are the same; ``data_dir`` and ``download`` only say where it comes
#: from.)
RESULT_FIELDS = (
    "model",
    "hidden",
    "dropout",
    "batch_size",
    "optimizer",
    "lr",
    "weight_decay",
    "label_smoothing",
    "shift",
    "seed",
)


def option_name(field: str) -> str:
    """``batch_size`` -> ``--batch-size``: how the command line spells a recipe field."""
    return "--" + field.replace("_", "-")


def _shown(field: str, value: Any) -> str:
    if field == "hidden":
        return ",".join(map(str, value)) or "none"
    return str(value)


def resume_differences(saved: Recipe, new: Recipe) -> tuple[list[str], list[str]]:
    """``(problems, notes)`` of resuming a run made with ``saved`` under ``new``.

    A problem is a setting that would change the result (the resume must refuse); a note is an
    allowed change the user should hear about (more epochs).
    """
    problems = [
        f"{option_name(f)}: the checkpoint's run used {_shown(f, getattr(saved, f))}, "
        f"this command says {_shown(f, getattr(new, f))}"
        for f in RESULT_FIELDS
        if getattr(saved, f) != getattr(new, f)
    ]
    notes = []
    if new.epochs < saved.epochs:
        problems.append(
            f"--epochs: the checkpoint's run was planned for {saved.epochs} epochs, this "
            f"command says {new.epochs} (a run can be extended, not shortened: its "
            "learning-rate schedule was planned for its length)"
        )
    elif new.epochs > saved.epochs:
        added = new.epochs - saved.epochs
        notes.append(
            f"extending the run from {saved.epochs} to {new.epochs} epochs: the first "
            f"{saved.epochs} keep their one-cycle learning-rate schedule, and the {added} added "
            f"epoch{'s get' if added > 1 else ' gets'} a one-cycle schedule of its own"
        )
    return problems, notes
