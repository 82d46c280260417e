"""Training checkpoints: everything a run needs to continue exactly where it stopped.

A checkpoint (``tensorgrad train --checkpoint FILE``) is a ``tg.save`` file holding

- ``recipe`` and ``outputs``: the run's settings (``--resume`` compares them) and where its
  results go;
- ``data``: the dataset's name, sizes and SHA-256 (a resume must see the same data);
- ``config`` and ``model``: what ``--save`` writes, so ``evaluate`` reads checkpoints too;
- ``optimizer`` and ``scheduler``: their ``state_dict()``, with the index of the one-cycle
  segment the scheduler runs (a run extended on resume has one segment per stretch);
- ``rng``: tensorgrad's global generator (initialisation, dropout) and the loader's
  generator (shuffling), the latter as it was *before* the current epoch's permutation;
- ``progress``: the epoch in progress, the batches of it already done, the step count, the
  epoch's running sums and the history of finished epochs;
- from a data-parallel run only: ``world``, the number of ranks that wrote it, and in ``rng``
  each rank's generator (``ranks``); the rest is the same whatever the number of ranks (the
  batch size is the global batch), so the checkpoint resumes on any number of ranks that
  divides it.

Written by ``tg.save`` (atomic, every entry with a CRC-32), so a crash leaves the previous
checkpoint; read by :func:`read`, which checks every part before anything is built from it.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import tensorgrad as tg
from tensorgrad.serialization import CheckpointError
from tensorgrad.training.recipe import Recipe

KIND = "tensorgrad.training-checkpoint"
VERSION = 1


@dataclass
class Progress:
    """Where a run is: ``epoch`` (0-based) is in progress with ``batch`` batches done (0: it
    has not started), after ``step`` optimizer steps in all."""

    epoch: int = 0
    batch: int = 0
    step: int = 0
    loader_state: dict[str, Any] = field(default_factory=dict)
    loss_sum: float = 0.0
    correct: int = 0
    seen: int = 0
    seconds: float = 0.0
    train_seconds: float = 0.0
    history: list[dict[str, Any]] = field(default_factory=list)
    segments: list[int] = field(default_factory=list)

    def start_epoch_sums(self) -> None:
        self.loss_sum, self.correct, self.seen, self.seconds = 0.0, 0, 0, 0.0


@dataclass
class Saved:
    """A checkpoint as :func:`read` returns it, checked."""

    path: str
    recipe: Recipe
    outputs: dict[str, Any]
    data: dict[str, Any]
    config: dict[str, Any]
    model: dict[str, np.ndarray]
    optimizer: dict[str, Any]
    scheduler: dict[str, Any]
    segment: int
    rng: dict[str, Any]
    progress: Progress
    world_size: int = 1


def capture(run: Any) -> dict[str, Any]:
    """The checkpoint of ``run`` (a :class:`tensorgrad.training.loop.Run`) as it is now."""
    state = {
        "kind": KIND,
        "version": VERSION,
        "recipe": run.recipe.to_dict(),
        "outputs": dict(run.outputs),
        "data": run.data.describe(),
        "config": run.model_config(),
        "model": run.model.state_dict(),
        "optimizer": run.optimizer.state_dict(),
        "scheduler": {"segment": run.segment, "state": run.scheduler.state_dict()},
        "rng": {"tensorgrad": tg.get_rng_state(), "loader": run.progress.loader_state},
        "progress": dataclasses.asdict(run.progress),
    }
    if run.world.size > 1:
        state["world"] = {"size": run.world.size}
        state["rng"]["ranks"] = list(run.rank_random_states)
    return state


def non_finite_parameter(model: Any) -> str | None:
    """The name of the first parameter holding a NaN or an infinity, if any."""
    for name, value in model.state_dict().items():
        if value.dtype.kind == "f" and not np.isfinite(value).all():
            return name
    return None


def write(run: Any, path: str) -> None:
    """Save ``run``'s checkpoint to ``path`` atomically (the previous one stays on failure)."""
    tg.save(capture(run), path)


def _need(condition: bool, path: str, what: str) -> None:
    if not condition:
        raise CheckpointError(f"{path}: not a usable training checkpoint: {what}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def read(path: str) -> Saved:
    """Load and check a training checkpoint; ``CheckpointError`` says what is wrong."""
    state = tg.load(path)
    if isinstance(state, dict) and "model" in state and "kind" not in state:
        raise CheckpointError(
            f"{path}: a model saved by --save, not a training checkpoint: it has the weights "
            "but not the optimizer, schedule and random state a resume needs (write those with "
            "--checkpoint FILE)"
        )
    _need(isinstance(state, dict) and state.get("kind") == KIND, path, f"no kind {KIND!r}")
    if state.get("version") != VERSION:
        raise CheckpointError(
            f"{path}: training checkpoint version {state.get('version')!r}; this tensorgrad "
            f"resumes version {VERSION}"
        )
    parts = ("recipe", "outputs", "data", "config", "model", "optimizer", "scheduler", "rng")
    for part in (*parts, "progress"):
        _need(isinstance(state.get(part), dict), path, f"its {part!r} part is missing")
    try:
        recipe = Recipe.from_dict(state["recipe"])
        recipe.check()
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"{path}: not a usable training checkpoint: {exc}") from None
    try:
        progress = Progress(**state["progress"])
    except TypeError as exc:
        raise CheckpointError(f"{path}: not a usable training checkpoint: {exc}") from None
    _check_progress(progress, recipe, path)
    scheduler = state["scheduler"]
    _need(
        _is_int(scheduler.get("segment"))
        and 0 <= scheduler["segment"] < len(progress.segments)
        and isinstance(scheduler.get("state"), dict),
        path,
        "the scheduler part is damaged",
    )
    rng = state["rng"]
    _need(
        isinstance(rng.get("tensorgrad"), tg.Tensor) and isinstance(rng.get("loader"), dict),
        path,
        "the random generators' states are missing",
    )
    _need(
        all(isinstance(v, (np.ndarray, tg.Tensor)) for v in state["model"].values()),
        path,
        "the model's weights are not arrays or tensors",
    )
    world = state.get("world", {"size": 1})
    size = world.get("size") if isinstance(world, dict) else None
    _need(_is_int(size) and size >= 1, path, "its number of ranks is damaged")
    ranks = rng.get("ranks")
    _need(
        ranks is None
        or (
            isinstance(ranks, list)
            and len(ranks) == size
            and all(isinstance(r, tg.Tensor) for r in ranks)
        ),
        path,
        "the ranks' random generators' states are damaged",
    )
    return Saved(
        path=path,
        recipe=recipe,
        outputs=state["outputs"],
        data=state["data"],
        config=state["config"],
        model=state["model"],
        optimizer=state["optimizer"],
        scheduler=scheduler["state"],
        segment=scheduler["segment"],
        rng=rng,
        progress=progress,
        world_size=size,
    )


def _check_progress(p: Progress, recipe: Recipe, path: str) -> None:
    counts = (p.epoch, p.batch, p.step, p.correct, p.seen)
    _need(all(_is_int(v) and v >= 0 for v in counts), path, "its progress counters are damaged")
    _need(
        all(_is_int(s) and s > 0 for s in p.segments) and sum(p.segments) == recipe.epochs,
        path,
        "its schedule segments do not add up to its epochs",
    )
    _need(p.epoch <= recipe.epochs and len(p.history) == p.epoch, path, "its history is damaged")
    _need(isinstance(p.loader_state, dict), path, "the loader's random state is missing")
    _need(math.isfinite(p.loss_sum), path, "its running loss is not finite")
