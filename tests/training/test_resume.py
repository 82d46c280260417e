"""Resuming a run from its checkpoint gives the unbroken run's weights bit for bit; resumes
that would change the result are refused; NaNs stop the run and keep the last good
checkpoint. In-process, through ``train()`` and its hooks (the kill tests are in
test_faults.py)."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import warnings

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.data import load_digits
from tensorgrad.serialization import CheckpointError
from tensorgrad.training import Hooks, Recipe, ResumeError, TrainingDiverged, TrainingStopped, train
from tensorgrad.training import checkpoint as ckpt

RECIPE = Recipe(dataset="digits", hidden=(16,), epochs=2, batch_size=64, seed=1)
STEPS_PER_EPOCH = 23  # 1437 digits in batches of 64


def run(recipe=RECIPE, **kwargs):
    kwargs.setdefault("out", io.StringIO())
    kwargs.setdefault("progress", False)
    return train(recipe, **kwargs)


def weights(path) -> dict[str, np.ndarray]:
    return tg.load(path)["model"]


def assert_same_weights(a, b):
    assert list(a) == list(b)
    for name in a:
        assert np.asarray(a[name]).tobytes() == np.asarray(b[name]).tobytes(), name  # bit for bit


def assert_same_history(a, b):
    strip = [{k: v for k, v in row.items() if k != "seconds"} for row in a]
    assert strip == [{k: v for k, v in row.items() if k != "seconds"} for row in b]


class StopAt(Hooks):
    """Asks the run to stop (as SIGINT does) before step ``step``."""

    def __init__(self, step: int) -> None:
        self.step = step

    def before_step(self, run, x, y):
        if run.progress.step + 1 == self.step:
            import signal

            signal.raise_signal(signal.SIGINT)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The unbroken run: its final weights and history."""
    path = tmp_path_factory.mktemp("ref") / "final.npz"
    result = run(save=str(path))
    return weights(path), result["history"]


@pytest.mark.parametrize("optimizer", ["adamw", "sgd", "rmsprop"])
def test_every_part_of_the_state_is_needed_and_restored(tmp_path, optimizer):
    recipe = dataclasses.replace(RECIPE, optimizer=optimizer, dropout=0.3)
    straight = run(recipe, save=str(tmp_path / "a.npz"))
    with pytest.raises(TrainingStopped) as info:
        run(recipe, checkpoint=str(tmp_path / "c.npz"), hooks=StopAt(31))
    assert info.value.step == 31 and info.value.exit_status == 130
    resumed = run(recipe, resume=str(tmp_path / "c.npz"), save=str(tmp_path / "b.npz"))
    assert_same_weights(weights(tmp_path / "a.npz"), weights(tmp_path / "b.npz"))
    assert_same_history(straight["history"], resumed["history"])


@pytest.mark.parametrize("stop_at", [1, 2, 23, 24, 25, 46])
def test_stopping_at_any_step_resumes_identically(tmp_path, reference, stop_at):
    """Before the first step, mid-epoch, at the end of an epoch (then the checkpoint comes
    after its evaluation), at the first step of the next, and at the last step."""
    path = str(tmp_path / "c.npz")
    with pytest.raises(TrainingStopped) as info:
        run(checkpoint=path, hooks=StopAt(stop_at))
    assert info.value.step == stop_at  # the step in flight is finished first
    saved = ckpt.read(path)
    assert saved.progress.step == stop_at
    result = run(resume=path, save=str(tmp_path / "final.npz"), checkpoint=path)
    assert_same_weights(reference[0], weights(tmp_path / "final.npz"))
    assert_same_history(reference[1], result["history"])


def test_a_signal_before_the_first_step_checkpoints_the_start(tmp_path, reference, monkeypatch):
    import signal

    from tensorgrad.training import Run

    describe = Run.describe

    def describe_then_signal(self):  # called after the handlers are in place
        signal.raise_signal(signal.SIGTERM)
        return describe(self)

    path = str(tmp_path / "c.npz")
    monkeypatch.setattr(Run, "describe", describe_then_signal)
    with pytest.raises(TrainingStopped) as info:
        run(checkpoint=path)
    assert info.value.step == 0 and info.value.exit_status == 143
    monkeypatch.undo()
    run(resume=path, save=str(tmp_path / "final.npz"))
    assert_same_weights(reference[0], weights(tmp_path / "final.npz"))


def test_the_checkpoint_holds_every_generator_and_the_position(tmp_path):
    path = str(tmp_path / "c.npz")
    with pytest.raises(TrainingStopped):
        run(checkpoint=path, hooks=StopAt(6))
    state = tg.load(path)
    assert state["kind"] == "tensorgrad.training-checkpoint"
    assert set(state) >= {"recipe", "outputs", "data", "config", "model", "optimizer",
                          "scheduler", "rng", "progress"}  # fmt: skip
    assert state["rng"]["tensorgrad"].dtype == tg.uint8
    assert state["rng"]["loader"]["bit_generator"] == "PCG64"
    assert (state["progress"]["epoch"], state["progress"]["batch"]) == (0, 6)
    assert state["recipe"]["lr"] == RECIPE.lr and state["data"]["name"] == "digits"
    assert len(state["data"]["sha256"]) == 64


def test_checkpoint_every_n_steps_and_every_epoch(tmp_path, monkeypatch):
    written = []
    real_write = ckpt.write
    monkeypatch.setattr(ckpt, "write", lambda r, p: (written.append(r.progress.step),
                                                     real_write(r, p)))  # fmt: skip
    run(checkpoint=str(tmp_path / "c.npz"), checkpoint_every=10)
    assert written == [10, 20, 23, 30, 40, 46]


def test_resume_refuses_settings_that_change_the_result_and_lists_them(tmp_path):
    path = str(tmp_path / "c.npz")
    run(checkpoint=path)
    changed = dataclasses.replace(RECIPE, lr=0.1, seed=2, hidden=(8,), batch_size=32, epochs=1)
    with pytest.raises(ResumeError) as info:
        run(changed, resume=path)
    message = str(info.value)
    expected = [
        "--lr: the checkpoint's run used 0.002, this command says 0.1",
        "--seed: the checkpoint's run used 1, this command says 2",
        "--hidden: the checkpoint's run used 16, this command says 8",
        "--batch-size",
        "--epochs: the checkpoint's run was planned for 2 epochs",
    ]
    for text in expected:
        assert text in message
    assert f"cannot resume from {path}" in message


def test_resume_refuses_different_data(tmp_path):
    path = str(tmp_path / "c.npz")
    run(checkpoint=path)
    digits = load_digits()
    images = digits.train_images.copy()
    images[0, 0, 0] += 0.5
    other = dataclasses.replace(digits, train_images=images)
    with pytest.raises(ResumeError, match="digits .*different images"):
        run(resume=path, dataset=other)


def test_extending_epochs_does_not_depend_on_where_the_run_stopped(tmp_path):
    """Two epochs then resume with three equals stopping anywhere in the two, then three."""
    finished = str(tmp_path / "finished.npz")
    run(checkpoint=finished)
    out = io.StringIO()
    longer = dataclasses.replace(RECIPE, epochs=3)
    first = run(longer, resume=finished, out=out, save=str(tmp_path / "a.npz"))
    assert "extending the run from 2 to 3 epochs" in out.getvalue()
    assert len(first["history"]) == 3
    stopped = str(tmp_path / "stopped.npz")
    with pytest.raises(TrainingStopped):
        run(checkpoint=stopped, hooks=StopAt(17))
    run(longer, resume=stopped, save=str(tmp_path / "b.npz"))
    assert_same_weights(weights(tmp_path / "a.npz"), weights(tmp_path / "b.npz"))
    extended = str(tmp_path / "extended.npz")  # stopped inside the added epoch, resumed
    with pytest.raises(TrainingStopped):
        run(longer, resume=finished, checkpoint=extended, hooks=StopAt(55))
    saved = ckpt.read(extended)
    assert saved.progress.segments == [2, 1] and saved.segment == 1
    run(longer, resume=extended, save=str(tmp_path / "c.npz"))
    assert_same_weights(weights(tmp_path / "a.npz"), weights(tmp_path / "c.npz"))


def test_a_finished_run_resumes_to_the_same_result(tmp_path, reference):
    path = str(tmp_path / "c.npz")
    run(checkpoint=path)
    out = io.StringIO()
    run(resume=path, out=out, save=str(tmp_path / "again.npz"))
    assert "the run is complete" in out.getvalue()
    assert_same_weights(reference[0], weights(tmp_path / "again.npz"))


# ----------------------------------------------------------------------------- NaN faults
class Inject(Hooks):
    def __init__(self, step: int, where: str) -> None:
        self.step, self.where, self.injected = step, where, 0

    def before_step(self, run, x, y):
        if run.progress.step + 1 != self.step:
            return
        if self.where == "parameter":
            next(iter(run.model.parameters())).data[3, 5] = np.nan
        elif self.where == "input":
            x.data[7, 2] = np.nan
        else:
            return
        self.injected += 1

    def after_backward(self, run):
        if self.where == "gradient" and run.progress.step + 1 == self.step:
            list(run.model.parameters())[2].grad.data[0, 0] = np.inf
            self.injected += 1


@pytest.mark.parametrize("where", ["parameter", "input", "gradient"])
def test_a_nan_stops_the_run_keeps_the_last_good_checkpoint_and_resume_recovers(
    tmp_path, reference, where
):
    path = str(tmp_path / "c.npz")
    hooks = Inject(30, where)
    # An infinite gradient makes Adam divide inf by inf: NumPy's path warns of it, the numba
    # kernel's does not; any warning there is that one
    with warnings.catch_warnings(record=True) as caught, pytest.raises(TrainingDiverged) as info:
        warnings.simplefilter("always")
        run(checkpoint=path, checkpoint_every=5, hooks=hooks)
    for warning in caught:
        if issubclass(warning.category, RuntimeWarning):
            assert where == "gradient" and "invalid value" in str(warning.message), warning
    assert hooks.injected == 1
    message = str(info.value)
    assert "step 30 (batch 7 of 23 in epoch 2)" in message
    assert f"The last good checkpoint, {path} (after step 25), is kept" in message
    assert "--detect-anomaly" in message
    what = "parameter '3.weight' is not finite" if where == "gradient" else "the loss is nan"
    assert what in message
    saved = ckpt.read(path)
    assert saved.progress.step == 25
    assert all(np.isfinite(v).all() for v in saved.model.values())
    result = run(resume=path, save=str(tmp_path / "final.npz"))  # the fault is gone: recovers
    assert_same_weights(reference[0], weights(tmp_path / "final.npz"))
    assert_same_history(reference[1], result["history"])


def test_a_nan_without_a_checkpoint_says_how_to_find_it():
    with pytest.raises(TrainingDiverged, match=r"at step 3 .*run again with --detect-anomaly"):
        run(hooks=Inject(3, "input"))


def test_detect_anomaly_runs_each_step_under_the_engine_mode(monkeypatch):
    """Against a stand-in for tg.autograd.detect_anomaly (the engine's is tested there): each
    step runs inside it, and what it raises stops the run naming the step."""

    entered = []

    @contextlib.contextmanager
    def fake_detect_anomaly():
        entered.append(1)
        if len(entered) == 5:
            raise RuntimeError("Function 'MulBackward' returned nan values in its 0th output.")
        yield

    monkeypatch.setattr(tg.autograd, "detect_anomaly", fake_detect_anomaly, raising=False)
    with pytest.raises(TrainingDiverged) as info:
        run(detect_anomaly=True)
    assert "--detect-anomaly stopped step 5 (epoch 1, batch 5)" in str(info.value)
    assert "MulBackward" in str(info.value) and len(entered) == 5


def test_damaged_checkpoints_are_refused_before_anything_runs(tmp_path):
    path = tmp_path / "c.npz"
    run(checkpoint=str(path))
    state = tg.load(path)
    state["progress"]["segments"] = [5]
    tg.save(state, path)
    with pytest.raises(CheckpointError, match="schedule segments do not add up"):
        run(resume=str(path))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="truncated or corrupt"):
        run(resume=str(path))


@pytest.mark.skipif(
    not hasattr(tg.autograd, "detect_anomaly"),
    reason="tg.autograd.detect_anomaly is not in this tensorgrad",
)
def test_detect_anomaly_names_the_op_that_made_the_nan():
    """With the engine's own detect_anomaly: a NaN put into a weight is caught by the mode
    (in the forward, or in the backward as PyTorch does) and the run names the step."""
    with pytest.raises(TrainingDiverged) as info:
        run(detect_anomaly=True, hooks=Inject(3, "parameter"))
    assert "--detect-anomaly stopped step 3 (epoch 1, batch 3)" in str(info.value)
    assert isinstance(info.value.__cause__, RuntimeError)
    assert not isinstance(info.value.__cause__, TrainingDiverged)
