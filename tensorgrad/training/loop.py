"""The run: build it (or restore it from a checkpoint), loop over the epochs, stop cleanly.

The step is the one every tutorial shows — zero the gradients, forward, backward, step — with
three guards around it: a loss that is not finite stops the run before the optimizer uses it,
a checkpoint is never written from parameters that are not finite, and a SIGINT or SIGTERM
ends the step, writes the checkpoint and stops (see :mod:`tensorgrad.training.signals`).
"""

from __future__ import annotations

import io
import itertools
import math
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, TextIO

import numpy as np

import tensorgrad as tg
from tensorgrad.nn import functional as F
from tensorgrad.serialization import CheckpointError
from tensorgrad.training import checkpoint as ckpt
from tensorgrad.training.data import (
    RunData,
    load_run_data,
    make_loader,
    random_shift,
    shift_generator,
)
from tensorgrad.training.evaluate import evaluate_arrays, write_model_file
from tensorgrad.training.models import (
    ModelSpec,
    build_optimizer,
    build_scheduler,
    model_spec,
    segment_of,
)
from tensorgrad.training.recipe import Recipe, resume_differences
from tensorgrad.training.report import NO_LOG, Reporter, TensorBoardLog, plot_history
from tensorgrad.training.signals import EXIT_STATUS, GracefulStop
from tensorgrad.training.world import SINGLE_PROCESS, BatchSplitError, World, split_problem

if TYPE_CHECKING:
    from tensorgrad.data import LoadedDataset


class TrainingDiverged(RuntimeError):
    """The loss (or, after a step, a parameter) is not finite: the run stopped at ``step``
    without writing a checkpoint, so the last one written is the last good one."""

    def __init__(self, message: str, step: int) -> None:
        self.step = step
        super().__init__(message)


class ResumeError(ValueError):
    """The run cannot resume from the checkpoint; ``problems`` lists why, one per line."""

    def __init__(self, path: str, problems: list[str]) -> None:
        self.path, self.problems = path, list(problems)
        super().__init__(
            f"cannot resume from {path}: these settings would change the result:\n  "
            + "\n  ".join(self.problems)
        )


class TrainingStopped(KeyboardInterrupt):
    """The run stopped on SIGINT or SIGTERM after writing its checkpoint to ``checkpoint``."""

    def __init__(self, signum: int, checkpoint: str, step: int) -> None:
        self.signum, self.checkpoint, self.step = signum, checkpoint, step
        super().__init__(f"stopped after step {step}; checkpoint written to {checkpoint}")

    @property
    def exit_status(self) -> int:
        return EXIT_STATUS.get(self.signum, 128 + self.signum)


class Hooks:
    """Calls into a run, for tests and tools (fault injection, logging); the defaults do
    nothing. ``before_step`` sees the batch before the forward; ``after_backward`` sees the
    gradients before the optimizer uses them."""

    def before_step(self, run: Run, x: tg.Tensor, y: tg.Tensor) -> None:
        pass

    def after_backward(self, run: Run) -> None:
        pass


def anomaly_mode() -> Callable[[], Any]:
    """``tg.autograd.detect_anomaly`` (PyTorch's name and semantics), or a clear error."""
    detect = getattr(tg.autograd, "detect_anomaly", None)
    if detect is None:
        raise RuntimeError(
            "--detect-anomaly needs tg.autograd.detect_anomaly(), which this version of "
            "tensorgrad does not have"
        )
    return detect


class Run:
    """One training run: the model, optimizer, schedule and loader, and where it is."""

    def __init__(
        self,
        recipe: Recipe,
        data: RunData,
        spec: ModelSpec,
        *,
        reporter: Reporter,
        outputs: dict[str, Any],
        world: World = SINGLE_PROCESS,
        hooks: Hooks | None = None,
        anomaly: Callable[[], Any] | None = None,
    ) -> None:
        self.recipe, self.data, self.spec, self.world = recipe, data, spec, world
        self.reporter, self.outputs = reporter, outputs
        self.hooks = hooks or Hooks()
        self.anomaly = anomaly
        # The order of these lines is the order the global generator is drawn from.
        tg.manual_seed(recipe.seed)
        self.model = spec.build(data.image_shape, data.num_classes, self.model_settings())
        self.optimizer = build_optimizer(
            recipe.optimizer, self.model.parameters(), recipe.lr, recipe.weight_decay
        )
        self.params = list(self.model.parameters())
        self.loader = make_loader(data, recipe.batch_size, recipe.seed)
        self.steps_per_epoch = len(self.loader)
        self.progress = ckpt.Progress(
            segments=[recipe.epochs], loader_state=self.loader.generator.bit_generator.state
        )
        self.segment = 0
        self.scheduler = build_scheduler(
            self.optimizer, recipe.lr, recipe.epochs, self.steps_per_epoch
        )
        self.last_checkpoint_step: int | None = None
        # data-parallel runs (a world of one changes nothing): the module the step calls
        # (DDP's wrapper), each rank's dropout stream, and the stop flag agreed at each step
        self.net = world.wrap(self.model)
        world.own_random_stream(recipe.seed)
        self.stop_agreed: int | None = None
        self.rank_random_states: list[Any] | None = None
        self.board: TensorBoardLog = NO_LOG  # --tensorboard's log (main process), set by train

    # ----------------------------------------------------------------- description
    def model_settings(self) -> dict[str, Any]:
        return {"hidden": list(self.recipe.hidden), "dropout": self.recipe.dropout}

    def model_config(self) -> dict[str, Any]:
        """What ``--save`` files record to rebuild the model (read by ``evaluate``)."""
        history = self.progress.history
        return {
            "model": self.spec.name,
            "image_shape": list(self.data.image_shape),
            "in_features": int(np.prod(self.data.image_shape)),
            **self.model_settings(),
            "num_classes": self.data.num_classes,
            "mean": self.data.mean,
            "std": self.data.std,
            "dataset": self.data.name,
            "classes": list(self.data.dataset.classes),
            "test_acc": history[-1]["test_acc"] if history else None,
            "seed": self.recipe.seed,
        }

    def describe(self) -> str:
        r, d = self.recipe, self.data
        size = sum(p.size for p in self.model.parameters())
        shape = self.spec.summary(d.image_shape, d.num_classes, self.model_settings())
        return (
            f"dataset {d.name}: {len(d.x_train)} train / {len(d.x_test)} test, from "
            f"{d.dataset.source}\nmodel {r.model} {shape} ({size:,} parameters), "
            f"{r.optimizer} lr {r.lr} one-cycle, batch {r.batch_size}, {r.epochs} epochs, "
            f"seed {r.seed}" + self._describe_world()
        )

    def _describe_world(self) -> str:
        n = self.world.size
        if n == 1:
            return ""
        per_rank = self.recipe.batch_size // n
        return (
            f"\ndata-parallel: {n} ranks × {per_rank} = global batch {self.recipe.batch_size} "
            "(--batch-size is the global batch)"
        )

    # ----------------------------------------------------------------- resuming
    def restore(self, saved: ckpt.Saved) -> None:
        """Continue from ``saved``: every state as it was, the schedule extended to the
        recipe's epochs (one more one-cycle segment for the added epochs)."""
        progress = saved.progress
        if progress.epoch < saved.recipe.epochs and progress.batch > self.steps_per_epoch:
            raise ResumeError(saved.path, ["the checkpoint is past the end of its epoch"])
        self.segment = saved.segment
        segment_epochs = progress.segments[self.segment]
        self.scheduler = build_scheduler(
            self.optimizer, self.recipe.lr, segment_epochs, self.steps_per_epoch
        )
        self.model.load_state_dict(saved.model)
        self.optimizer.load_state_dict(saved.optimizer)
        self.scheduler.load_state_dict(saved.scheduler)
        ranks_states = saved.rng.get("ranks")
        if ranks_states and saved.world_size == self.world.size:
            tg.set_rng_state(ranks_states[self.world.rank])  # each rank its own stream
        elif self.world.rank == 0:
            tg.set_rng_state(saved.rng["tensorgrad"])
        else:  # a rank the checkpoint's run did not have: a stream of its own, from here on
            self.world.own_random_stream(self.recipe.seed, progress.step)
        self.loader.generator.bit_generator.state = progress.loader_state
        if self.recipe.epochs > saved.recipe.epochs:
            progress.segments.append(self.recipe.epochs - saved.recipe.epochs)
        self.progress = progress
        self.last_checkpoint_step = progress.step

    # ----------------------------------------------------------------- the loop
    def fit(self, stop: GracefulStop) -> None:
        """Train until the recipe's last epoch; on a stop request, checkpoint and raise
        :class:`TrainingStopped`."""
        p = self.progress
        signum = self._stop_signal(stop)
        if signum and p.epoch < self.recipe.epochs:  # a signal while starting up
            self._checkpoint()
            raise TrainingStopped(signum, self.outputs["checkpoint"], p.step)
        while p.epoch < self.recipe.epochs:
            self._start_segment_if_due()
            if p.batch == 0:
                p.loader_state = self.loader.generator.bit_generator.state
                p.start_epoch_sums()
            self._run_epoch(stop)
            self._finish_epoch()
            self._checkpoint()
            signum = self._stop_signal(stop)
            if signum:
                raise TrainingStopped(signum, self.outputs["checkpoint"], p.step)

    def _start_segment_if_due(self) -> None:
        wanted = segment_of(self.progress.epoch, self.progress.segments)
        if wanted != self.segment:  # the first epoch of a stretch added on resume
            self.segment = wanted
            self.scheduler = build_scheduler(
                self.optimizer,
                self.recipe.lr,
                self.progress.segments[wanted],
                self.steps_per_epoch,
            )

    def _batches(self) -> Iterator[Any]:
        """This epoch's remaining batches: the permutation is drawn from the loader's
        generator as it was before the epoch, then the batches already done are skipped."""
        self.loader.generator.bit_generator.state = self.progress.loader_state
        return itertools.islice(iter(self.loader), self.progress.batch, None)

    def _run_epoch(self, stop: GracefulStop) -> None:
        p, spe = self.progress, self.steps_per_epoch
        every = self.outputs.get("checkpoint_every") or 0
        self.model.train()
        bar = self.reporter.bar(len(self.data.x_train), p.seen)
        started = time.perf_counter()
        try:
            for x, y in self._batches():
                lr = self.optimizer.param_groups[0]["lr"]  # the rate this step uses
                loss, correct, n = self._step(self._augmented(x), y, stop)
                p.loss_sum, p.correct, p.seen = p.loss_sum + loss, p.correct + correct, p.seen + n
                p.batch += 1
                p.step += 1
                self.board.step(p.step, loss / max(n, 1), correct / max(n, 1), lr)
                bar.update(p.seen, p.loss_sum / max(p.seen, 1))
                if p.batch == spe:
                    break  # the end of the epoch checkpoints (and stops) after evaluating
                stopping = self._stop_signal(stop, self.stop_agreed)
                if stopping or (every and p.step % every == 0):
                    p.seconds += time.perf_counter() - started
                    self._checkpoint()
                    started = time.perf_counter()  # the time spent saving is not training
                if stopping:
                    raise TrainingStopped(stopping, self.outputs["checkpoint"], p.step)
        finally:
            p.seconds += time.perf_counter() - started
            bar.close()

    def _augmented(self, x: tg.Tensor) -> tg.Tensor:
        """The batch with ``recipe.shift``'s random shifts (drawn from the step's own
        generator), or as it is; moved-in pixels are blank (0 before standardising)."""
        if not self.recipe.shift:
            return x
        blank = -self.data.mean / self.data.std
        generator = shift_generator(self.recipe.seed, self.progress.step)
        shape = self.data.image_shape
        return tg.as_tensor(random_shift(x._data, shape, self.recipe.shift, blank, generator))

    def _step(
        self, x: tg.Tensor, y: tg.Tensor, stop: GracefulStop | None = None
    ) -> tuple[float, int, int]:
        """One optimizer step on a (global) batch; returns (loss · rows, correct, rows) summed
        over the ranks. Raises :class:`TrainingDiverged` before stepping on a non-finite loss
        (on every rank together, when any rank's loss is not finite)."""
        self.hooks.before_step(self, x, y)
        batch_size = len(y)
        if self.world.size > 1:
            rows = self.world.shard(batch_size)
            x, y = x[rows], y[rows]
        self.optimizer.zero_grad()
        if self.anomaly is None:
            logits = self.net(x)
            # an empty share (a last batch smaller than the number of ranks) has a zero loss
            reduction = "mean" if len(y) else "sum"
            loss = F.cross_entropy(
                logits, y, label_smoothing=self.recipe.label_smoothing, reduction=reduction
            )
            value = loss.item()
            totals = self._exchange(value, logits, y, stop)
            self.world.weigh(loss, len(y), batch_size).backward()
        else:
            logits, value = self._anomaly_step(x, y)
            totals = self._exchange(value, logits, y, stop)
        self.hooks.after_backward(self)
        self.world.average_gradients(self.params)
        self.optimizer.step()
        self.scheduler.step()
        return totals

    def _exchange(
        self, value: float, logits: tg.Tensor, y: tg.Tensor, stop: GracefulStop | None
    ) -> tuple[float, int, int]:
        """(loss · rows, correct, rows) of this step over all ranks, before its backward: one
        exchange of every rank's loss, counts and stop flag, so that a loss that is not finite
        on any rank stops every rank, and a stop request on any rank stops all after this step.
        """
        n = len(y)
        correct = int((logits._data.argmax(axis=1) == y._data).sum())
        step = self.progress.step + 1
        if self.world.size == 1:
            if not math.isfinite(value):
                raise self._diverged(f"the loss is {value}", step)
            return value * n, correct, n
        signum = (stop.requested if stop is not None else None) or 0
        rows = self.world.gather([value, correct, n, signum])
        bad = [(r, row[0]) for r, row in enumerate(rows) if row[2] and not math.isfinite(row[0])]
        if bad:
            where = ", ".join(f"{loss} on rank {rank}" for rank, loss in bad)
            raise self._diverged(f"the loss is {where}", step)
        self.stop_agreed = _first_signal(row[3] for row in rows)
        return (
            sum(row[0] * row[2] for row in rows),
            int(sum(row[1] for row in rows)),
            int(sum(row[2] for row in rows)),
        )

    def _anomaly_step(self, x: tg.Tensor, y: tg.Tensor) -> tuple[tg.Tensor, float]:
        """Forward and backward under ``tg.autograd.detect_anomaly()``: a NaN loss is still
        differentiated, so that the op whose backward makes a NaN is named."""
        step = self.progress.step + 1
        try:
            with self.anomaly():
                logits = self.model(x)
                loss = F.cross_entropy(logits, y, label_smoothing=self.recipe.label_smoothing)
                value = loss.item()
                loss.backward()
        except RuntimeError as exc:
            raise TrainingDiverged(
                f"--detect-anomaly stopped step {step} (epoch {self.progress.epoch + 1}, "
                f"batch {self.progress.batch + 1}): {exc}",
                step,
            ) from exc
        if not math.isfinite(value):
            raise self._diverged(f"the loss is {value}", step)
        return logits, value

    def _diverged(self, what: str, step: int) -> TrainingDiverged:
        p = self.progress
        batch = p.batch + step - p.step  # the step being taken, or the one just taken
        where = f"step {step} (batch {batch} of {self.steps_per_epoch} in epoch {p.epoch + 1})"
        path = self.outputs.get("checkpoint")
        alone = " on one process (without mpiexec)" if self.world.size > 1 else ""
        if path and self.last_checkpoint_step is not None:
            advice = (
                f"The last good checkpoint, {path} (after step {self.last_checkpoint_step}), is "
                f"kept. To find the operation that made it, resume from it{alone} with --resume "
                f"{path} --detect-anomaly; to train on, lower --lr."
            )
        else:
            advice = (
                "To find the operation that made it, run again with --detect-anomaly; to train "
                "on, lower --lr."
            )
        return TrainingDiverged(f"{what} at {where}; training stopped. {advice}", step)

    def _finish_epoch(self) -> None:
        p = self.progress
        bad = ckpt.non_finite_parameter(self.model)
        if self.world.any(bad is not None):
            raise self._diverged(f"parameter {bad or 'of another rank'!r} is not finite", p.step)
        test_loss, test_acc, _ = evaluate_arrays(self.model, self.data.x_test, self.data.y_test)
        row = {
            "epoch": p.epoch + 1,
            "train_loss": p.loss_sum / p.seen,
            "train_acc": p.correct / p.seen,
            "test_loss": test_loss,
            "test_acc": test_acc,
            "seconds": p.seconds,
            "samples": p.seen,
        }
        p.history.append(row)
        p.train_seconds += p.seconds
        self.reporter.epoch(row, self.recipe.epochs)
        self.board.epoch(row, p.step)
        p.epoch += 1
        p.batch = 0
        p.loader_state = self.loader.generator.bit_generator.state
        p.start_epoch_sums()

    def _stop_signal(self, stop: GracefulStop, agreed: int | None = None) -> int | None:
        """The signal (SIGINT, SIGTERM) to stop on now, or None to go on: as the ranks
        ``agreed`` in the step just taken, or else as they agree now (the first rank's that got
        one; a single process: the one it got)."""
        if agreed is None:
            agreed = _first_signal(row[0] for row in self.world.gather([stop.requested or 0]))
        return agreed if self.outputs.get("checkpoint") else None

    def _checkpoint(self) -> None:
        """Write the checkpoint (main process only), unless a parameter is not finite: then
        the last one written stays, as the last good one."""
        path = self.outputs.get("checkpoint")
        if not path:
            return
        bad = ckpt.non_finite_parameter(self.model)
        if self.world.any(bad is not None):
            raise self._diverged(
                f"parameter {bad or 'of another rank'!r} is not finite after its update",
                self.progress.step,
            )
        self.rank_random_states = self.world.random_states(tg.get_rng_state())
        error = None
        if self.world.is_main:
            try:
                ckpt.write(self, path)
            except OSError as exc:  # the disk is full, say: every rank stops with it
                error = exc
        self.world.agree(error)
        self.last_checkpoint_step = self.progress.step

    # ----------------------------------------------------------------- results
    def result(self) -> dict[str, Any]:
        history = self.progress.history
        final = history[-1] if history else {}
        return {
            "history": history,
            "test_acc": final.get("test_acc", float("nan")),
            "train_seconds": self.progress.train_seconds,
            "dataset": self.data.name,
            "notice": self.data.dataset.notice,
            "steps": self.progress.step,
        }


def train(
    recipe: Recipe,
    save: str | None = None,
    plot: str | None = None,
    out: TextIO | None = None,
    progress: bool | None = None,
    *,
    checkpoint: str | None = None,
    checkpoint_every: int = 0,
    resume: str | ckpt.Saved | None = None,
    detect_anomaly: bool = False,
    dataset: LoadedDataset | None = None,
    hooks: Hooks | None = None,
    world: World = SINGLE_PROCESS,
    tensorboard: str | None = None,
) -> dict[str, Any]:
    """Train as ``recipe`` says; print progress to ``out``; return the final metrics.

    ``checkpoint`` writes a training checkpoint there after every epoch (and every
    ``checkpoint_every`` steps), and makes SIGINT/SIGTERM stop cleanly after the step
    (raising :class:`TrainingStopped`). ``resume`` continues from such a checkpoint; the
    result is then the same, bit for bit, as the unbroken run's, and settings that would change
    it raise :class:`ResumeError`. A non-finite loss raises :class:`TrainingDiverged`.
    ``dataset`` replaces ``recipe.dataset`` with data already loaded.

    ``world`` (see :mod:`tensorgrad.training.world`) makes this process one rank of a
    data-parallel run: every rank calls ``train`` with the same arguments, ``recipe.batch_size``
    is the global batch (it must divide by the number of ranks), and rank 0 alone prints and
    writes files.

    ``tensorboard`` writes TensorBoard logs into that directory (main process): per step
    ``train/loss``, ``train/accuracy`` (of the batch) and ``train/lr``, per epoch
    ``test/loss`` and ``test/accuracy``; a resumed run hides the steps logged after its
    checkpoint.
    """
    out = out or sys.stdout
    recipe.check()
    if checkpoint_every and not checkpoint:
        raise ValueError("checkpoint_every needs a checkpoint path")
    if world.size > 1:
        problem = split_problem(recipe.batch_size, world.size)
        if problem:
            raise BatchSplitError(problem)
        if detect_anomaly:
            raise ValueError(ANOMALY_NEEDS_ONE_PROCESS)
    anomaly = anomaly_mode() if detect_anomaly else None
    reporter = Reporter(out, world.is_main, out.isatty() if progress is None else progress)
    notes: list[str] = []
    try:  # what can fail on one rank alone (a file missing on its machine): ranks agree below
        saved = ckpt.read(resume) if isinstance(resume, str) else resume
        if saved is not None:
            problems, notes = resume_differences(saved.recipe, recipe)
            if problems:
                raise ResumeError(saved.path, problems)
        spec = model_spec(recipe.model)
        data = load_run_data(recipe, spec, dataset)
        if data.dataset.notice:
            reporter.say(f"notice: {data.dataset.notice}")
        if saved is not None:
            _check_same_data(saved, data)
            notes += _world_notes(saved, world)
    except Exception as exc:
        world.agree(exc)  # raises: this error here, PeerFailed on the other ranks
        raise
    world.agree(None)
    outputs = {"save": save, "plot": plot, "checkpoint": checkpoint,
               "checkpoint_every": checkpoint_every, "tensorboard": tensorboard}  # fmt: skip
    quiet = None if world.is_main else io.StringIO()  # signals are announced by rank 0 only
    with GracefulStop(enabled=bool(checkpoint), stream=quiet) as stop:  # a signal checkpoints
        run = Run(recipe, data, spec, reporter=reporter, outputs=outputs, world=world,
                  hooks=hooks, anomaly=anomaly)  # fmt: skip
        reporter.say(run.describe())
        if saved is not None:
            _restore(run, saved, notes)
        if tensorboard and world.is_main:
            run.board = TensorBoardLog(tensorboard, run.progress.step)
        try:
            run.fit(stop)
        finally:
            run.board.close()
    _finish(run, save, plot)
    return run.result()


def _first_signal(signals: Iterable[float]) -> int | None:
    """The first signal number of the ranks' (0: none), as an int; None when none got one."""
    return next((int(s) for s in signals if s), None)


ANOMALY_NEEDS_ONE_PROCESS = (
    "--detect-anomaly needs one process: run without mpiexec (to find the NaN of a "
    "data-parallel run, resume its checkpoint on one process: tensorgrad train --resume FILE "
    "--detect-anomaly; it trains on the same global batches)"
)


def _world_notes(saved: ckpt.Saved, world: World) -> list[str]:
    """What a resume on another number of ranks than the checkpoint's run changes."""
    before, now = saved.world_size, world.size
    if before == now:
        return []

    def ranks(n: int) -> str:
        return f"{n} rank{'s' if n > 1 else ''}"

    note = (
        f"resuming on {ranks(now)} a run checkpointed on {ranks(before)}: the same global "
        f"batches of {saved.recipe.batch_size} and the same state, so the result is the "
        "unbroken run's up to floating-point rounding"
    )
    if now > before and saved.recipe.dropout > 0:
        new = f"rank {before} draws its" if now - before == 1 else f"ranks {before}-{now - 1} draw"
        note += f"; {new} dropout masks from a new random stream"
    return [note]


def _check_same_data(saved: ckpt.Saved, data: RunData) -> None:
    before, now = saved.data, data.describe()
    if before.get("name") != now["name"] or before.get("sha256") != now["sha256"]:
        raise ResumeError(
            saved.path,
            [
                f"the data: the checkpoint's run trained on {before.get('name')} "
                f"({before.get('train')} training images), this command loads {now['name']} "
                f"({now['train']} training images"
                + (", different images" if before.get("name") == now["name"] else "")
                + "); pass the --dataset the run used"
            ],
        )


def _restore(run: Run, saved: ckpt.Saved, notes: list[str]) -> None:
    try:
        run.restore(saved)
    except (RuntimeError, ValueError, TypeError, KeyError) as exc:
        raise CheckpointError(f"{saved.path}: cannot restore the run: {exc}") from exc
    p, epochs = run.progress, run.recipe.epochs
    done = f"{p.epoch} of {epochs} epochs done"
    if p.batch:
        done += f", and {p.batch} of {run.steps_per_epoch} steps of epoch {p.epoch + 1}"
    run.reporter.say(f"resumed from {saved.path} after step {p.step}: {done}")
    for note in notes:
        run.reporter.say(note)
    if p.epoch >= epochs:
        run.reporter.say(f"the run is complete; pass --epochs above {epochs} to train on")


def _finish(run: Run, save: str | None, plot: str | None) -> None:
    """The closing line, and the model and the training curve written (main process)."""
    history = run.progress.history
    final = history[-1]
    run.reporter.say(
        f"done: test accuracy {100 * final['test_acc']:.2f}% on {run.data.name} after "
        f"{len(history)} epochs, {run.progress.train_seconds:.1f}s of training"
    )
    error = None
    if run.world.is_main:
        try:
            if save:
                write_model_file(save, run.model.state_dict(), run.model_config())
                run.reporter.say(f"saved the model to {save}")
            if plot:
                plot_history(history, plot, run.data.name)
                run.reporter.say(f"saved the training curve to {plot}")
        except OSError as exc:
            error = exc
    run.world.agree(error)
