"""``mpiexec -n N tensorgrad train``: data-parallel training through the command line.

The launches run ``tests/training/parallel_worker.py`` (the ``train`` command with faults
injected) under ``mpiexec -n 2`` with a hard timeout, and compare with one process running the
same command in this process: the same global batches, so the same weights up to rounding.
The first tests need no MPI: the pieces of :mod:`tensorgrad.training.world` alone.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import re
import signal
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tensorgrad as tg
import tensorgrad.distributed as dist
from tensorgrad import cli
from tensorgrad.serialization import CheckpointError
from tensorgrad.training import Recipe, train
from tensorgrad.training import checkpoint as ckpt
from tensorgrad.training.report import matplotlib_missing
from tensorgrad.training.world import SINGLE_PROCESS, World, join, share, split_problem
from tests.distributed import launch

WORKER = Path(__file__).with_name("parallel_worker.py")
#: digits: 1437 training images, so batches of 64 end with one of 29 rows (15 + 14 on 2 ranks)
ARGS = ["train", "--dataset", "digits", "--hidden", "16", "--epochs", "1", "--batch-size", "64",
        "--dropout", "0", "--no-progress"]  # fmt: skip
#: float32 weights after a few dozen AdamW steps on different summation orders
RTOL = 1e-5


def launch_train(out: Path, argv: list[str], faults: str = "none", ranks: int = 2):
    return launch.Launch([str(WORKER), faults, str(out), *argv], out, ranks=ranks)


def run_train(out: Path, argv: list[str], faults: str = "none", timeout: float = 120, ranks=2):
    return launch_train(out, argv, faults, ranks).finish(timeout)


def one_process(argv: list[str]) -> tuple[int, str]:
    """The command in this process (a world of one, no launcher): status and output."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli.main(argv)
    return status, out.getvalue() + err.getvalue()


def weights(path: Path) -> dict[str, np.ndarray]:
    return {k: np.asarray(v) for k, v in tg.load(str(path))["model"].items()}


def assert_close(a: dict, b: dict, rtol: float = RTOL) -> None:
    assert list(a) == list(b)
    for name in a:
        scale = float(np.abs(b[name]).max()) or 1.0
        assert float(np.abs(a[name] - b[name]).max()) <= rtol * scale, name


def assert_identical(a: dict, b: dict) -> None:
    assert list(a) == list(b)
    for name in a:
        assert a[name].tobytes() == b[name].tobytes(), name


def writes(out: Path, rank: int) -> list[str]:
    path = out / f"writes-rank{rank}"
    return path.read_text().split() if path.exists() else []


# --------------------------------------------------------------------------- no MPI needed
@given(st.integers(1, 300), st.integers(1, 9))
def test_the_shares_of_a_batch_are_contiguous_disjoint_complete_and_even(batch, ranks):
    shares = [share(batch, rank, ranks) for rank in range(ranks)]
    assert shares[0].start == 0 and shares[-1].stop == batch
    for before, after in itertools.pairwise(shares):
        assert before.stop == after.start
    sizes = [s.stop - s.start for s in shares]
    assert max(sizes) - min(sizes) <= 1 and sorted(sizes, reverse=True) == sizes


@given(st.lists(st.floats(-5, 5), min_size=1, max_size=40), st.integers(2, 6))
def test_weighted_rank_losses_average_to_the_mean_over_the_batch(losses, ranks):
    """What DDP computes from each rank's weighted mean loss: the mean over the global batch,
    for uneven shares (the last batch of an epoch) and empty ones too."""
    batch = len(losses)
    averaged = 0.0
    for rank in range(ranks):
        rows = losses[share(batch, rank, ranks)]
        if rows:
            averaged += np.mean(rows) * (ranks * len(rows) / batch) / ranks
    assert averaged == pytest.approx(np.mean(losses), abs=1e-12)


def test_a_batch_the_ranks_cannot_share_is_refused_with_what_to_use():
    assert split_problem(128, 1) is None and split_problem(128, 4) is None
    message = split_problem(100, 3)
    assert message.startswith("--batch-size 100 is the global batch")
    assert "99 (33 per rank) or 102 (34 per rank)" in message
    assert "a number of ranks that divides 100 (1, 2, 4, 5, 10, 20, 25, 50" in message


def test_a_world_of_one_changes_nothing():
    world = World()
    model = object()
    assert world.wrap(model) is model and world.shard(7) == slice(0, 7)
    assert world.any(True) and not world.any(False)
    assert world.gather([1.5, 2]) == [[1.5, 2]]
    assert world.random_states(tg.get_rng_state()) is None
    world.agree(None)
    error = OSError("disk full")
    with pytest.raises(OSError) as info:
        world.agree(error)
    assert info.value is error


def test_join_without_a_launcher_is_a_world_of_one_and_close_ends_its_group(monkeypatch):
    for name in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE",
                 "SLURM_STEP_NUM_TASKS", "PMIX_RANK", "TENSORGRAD_DISTRIBUTED"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    world = join()
    assert (world.rank, world.size, world.is_main) == (0, 1, True)
    assert dist.is_initialized() and dist.get_backend() == "local"
    world.close()
    assert not dist.is_initialized()


def test_the_command_in_one_process_leaves_no_process_group(tmp_path):
    status, output = one_process([*ARGS, "--save", str(tmp_path / "m.npz")])
    assert status == 0, output
    assert "data-parallel" not in output and not dist.is_initialized()


def test_a_usage_error_found_after_the_group_started_leaves_no_process_group(tmp_path, capsys):
    same = str(tmp_path / "m.npz")
    with pytest.raises(SystemExit) as info:
        cli.main([*ARGS, "--save", same, "--checkpoint", same])  # found by _plan, after join
    assert info.value.code == 2 and "name one file" in capsys.readouterr().err
    assert not dist.is_initialized()


def test_a_one_process_checkpoint_says_nothing_of_ranks(tmp_path):
    path = tmp_path / "c.npz"
    train(Recipe(dataset="digits", hidden=(8,), epochs=1), out=io.StringIO(), progress=False,
          checkpoint=str(path))  # fmt: skip
    state = tg.load(str(path))
    assert "world" not in state and "ranks" not in state["rng"]
    assert ckpt.read(str(path)).world_size == 1
    assert SINGLE_PROCESS.size == 1


@pytest.mark.parametrize(
    ("before", "now", "dropout", "expected"),
    [
        (2, 2, 0.2, None),
        (2, 1, 0.2, "resuming on 1 rank a run checkpointed on 2 ranks: the same global batches"),
        (1, 2, 0.0, "unbroken run's up to floating-point rounding"),
        (1, 2, 0.2, "; rank 1 draws its dropout masks from a new random stream"),
        (2, 8, 0.2, "; ranks 2-7 draw dropout masks from a new random stream"),
    ],
)
def test_a_resume_on_another_number_of_ranks_says_what_changes(before, now, dropout, expected):
    from types import SimpleNamespace

    from tensorgrad.training.loop import _world_notes

    saved = SimpleNamespace(world_size=before, recipe=Recipe(dropout=dropout))
    world = SimpleNamespace(size=now)
    notes = _world_notes(saved, world)
    if expected is None:
        assert notes == []
    else:
        assert len(notes) == 1 and expected in notes[0], notes
        assert ("new random stream" in notes[0]) == (now > before and dropout > 0)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda s: s.update(world={"size": 0}), "its number of ranks is damaged"),
        (lambda s: s.update(world=[2]), "its number of ranks is damaged"),
        (lambda s: s["rng"].update(ranks=[s["rng"]["tensorgrad"]]), "generators' states"),
    ],
)
def test_a_damaged_record_of_the_ranks_is_refused(tmp_path, change, message):
    path = tmp_path / "c.npz"
    train(Recipe(dataset="digits", hidden=(8,), epochs=1), out=io.StringIO(), progress=False,
          checkpoint=str(path))  # fmt: skip
    state = tg.load(str(path))
    state["world"] = {"size": 2}
    state["rng"]["ranks"] = [state["rng"]["tensorgrad"]] * 2
    tg.save(state, str(path))
    assert ckpt.read(str(path)).world_size == 2  # intact: read
    change(state)
    tg.save(state, str(path))
    with pytest.raises(CheckpointError, match=message):
        ckpt.read(str(path))


# --------------------------------------------------------------------------- two ranks
def test_two_ranks_train_as_one_process_and_only_rank_0_speaks_and_writes(tmp_path):
    """N steps of 2-rank training equal one process's on the same global batches (the last
    one uneven: 15 + 14 rows), through the command line; rank 0 alone prints and writes."""
    two = tmp_path / "two"
    two.mkdir()
    argv = [*ARGS, "--save", str(two / "m.npz"), "--checkpoint", str(two / "c.npz")]
    result = run_train(two, argv)
    assert result.returncode == 0, result.output
    status, alone_output = one_process([*ARGS, "--save", str(tmp_path / "m.npz")])
    assert status == 0, alone_output

    assert_close(weights(two / "m.npz"), weights(tmp_path / "m.npz"))
    out = result.output
    assert "data-parallel: 2 ranks × 32 = global batch 64 (--batch-size is the global batch)" in out
    for line in alone_output.splitlines():  # every line once, and the numbers agree
        if line.startswith(("dataset", "model")):
            assert out.count(line) == 1, out
    ours = re.search(r"test loss (\S+) acc (\S+)%", out)
    theirs = re.search(r"test loss (\S+) acc (\S+)%", alone_output)
    assert ours.group(2) == theirs.group(2)
    assert float(ours.group(1)) == pytest.approx(float(theirs.group(1)), abs=2e-4)
    assert out.count("done: test accuracy") == 1 and out.count("saved the model") == 1
    assert "Traceback" not in out

    assert sorted(writes(two, 0)) == sorted([str(two / "c.npz"), str(two / "m.npz")])
    assert writes(two, 1) == []
    saved = ckpt.read(str(two / "c.npz"))
    assert saved.world_size == 2 and len(saved.rng["ranks"]) == 2
    assert saved.progress.step == 23 and saved.progress.history[-1]["samples"] == 1437


def test_a_nan_on_one_rank_stops_every_rank_together_keeping_the_last_checkpoint(tmp_path):
    argv = [*ARGS, "--checkpoint", str(tmp_path / "c.npz"), "--checkpoint-every", "4"]
    result = run_train(tmp_path, argv, faults="nan@1:6")
    assert result.returncode == 1, result.output
    message = "tensorgrad: error: the loss is nan on rank 1 at step 6 (batch 6 of 23 in epoch 1)"
    assert result.output.count(message) == 1, result.output
    assert "resume from it on one process (without mpiexec) with --resume" in result.output
    assert "Traceback" not in result.output and "MPI_Abort" not in result.output
    assert ckpt.read(str(tmp_path / "c.npz")).progress.step == 4


@pytest.mark.slow
def test_a_batch_of_one_row_leaves_rank_1_nothing_and_still_matches(tmp_path):
    """Batches of 718: 1437 = 2 × 718 + 1, so the last step gives rank 1 no row at all."""
    argv = [*ARGS, "--batch-size", "718", "--save"]
    plot = ["--plot", str(tmp_path / "curve.png")] if not matplotlib_missing() else []
    result = run_train(tmp_path, [*argv, str(tmp_path / "two.npz"), *plot])
    assert result.returncode == 0, result.output
    status, output = one_process([*argv, str(tmp_path / "one.npz")])
    assert status == 0, output
    assert_close(weights(tmp_path / "two.npz"), weights(tmp_path / "one.npz"))
    if plot:  # written by rank 0 alone, which says so once
        assert result.output.count("saved the training curve") == 1
        assert (tmp_path / "curve.png").stat().st_size > 0


@pytest.mark.slow
def test_sigterm_to_one_rank_stops_both_and_the_checkpoint_resumes_on_one_or_two(tmp_path):
    """With dropout, so that each rank's generator matters: resumed on 2 ranks, the run is the
    unbroken 2-rank run bit for bit; resumed on 1, the same up to rounding (dropout 0)."""
    dropout = [*ARGS, "--epochs", "2", "--dropout", "0.2"]
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    unbroken = run_train(tmp_path / "a", [*dropout, "--save", str(tmp_path / "a/m.npz")])
    assert unbroken.returncode == 0, unbroken.output
    checkpoint = tmp_path / "b/c.npz"
    stopped = run_train(tmp_path / "b", [*dropout, "--checkpoint", str(checkpoint)], "sigterm@1:30")
    assert stopped.returncode == 143, stopped.output
    assert stopped.output.count(f"stopped after step 30: the checkpoint is {checkpoint}") == 1
    assert f"resume with: mpiexec -n 2 tensorgrad train --resume {checkpoint}" in stopped.output
    assert ckpt.read(str(checkpoint)).progress.step == 30
    resumed = run_train(
        tmp_path / "b", ["train", "--resume", str(checkpoint), "--save", str(tmp_path / "b/m.npz")]
    )
    assert resumed.returncode == 0, resumed.output
    assert "resumed from" in resumed.output and "resuming on" not in resumed.output
    assert_identical(weights(tmp_path / "b/m.npz"), weights(tmp_path / "a/m.npz"))

    # without dropout: stopped on 2 ranks, finished on 1 = one process from start to end
    plain = [*ARGS, "--epochs", "2"]
    (tmp_path / "c").mkdir()
    checkpoint = tmp_path / "c/c.npz"
    stopped = run_train(tmp_path / "c", [*plain, "--checkpoint", str(checkpoint)], "sigterm@0:30")
    assert stopped.returncode == 143, stopped.output
    status, output = one_process(["train", "--resume", str(checkpoint), "--save",
                                  str(tmp_path / "c/m.npz"), "--no-progress"])  # fmt: skip
    assert status == 0, output
    assert "resuming on 1 rank a run checkpointed on 2 ranks: the same global batches" in output
    status, output = one_process([*plain, "--save", str(tmp_path / "one.npz")])
    assert status == 0, output
    assert_close(weights(tmp_path / "c/m.npz"), weights(tmp_path / "one.npz"))


@pytest.mark.slow
def test_a_one_process_checkpoint_resumes_on_two_ranks(tmp_path):
    plain = [*ARGS, "--epochs", "2"]
    checkpoint = tmp_path / "c.npz"
    stopped = run_train(tmp_path, [*plain, "--checkpoint", str(checkpoint)], "sigint@0:17",
                        ranks=1)  # fmt: skip
    assert stopped.returncode == 130, stopped.output
    assert ckpt.read(str(checkpoint)).world_size == 1
    resumed = run_train(tmp_path, ["train", "--resume", str(checkpoint), "--no-progress",
                                   "--save", str(tmp_path / "two.npz")])  # fmt: skip
    assert resumed.returncode == 0, resumed.output
    assert "resuming on 2 ranks a run checkpointed on 1 rank" in resumed.output
    assert "new random stream" not in resumed.output  # no dropout here
    status, output = one_process([*plain, "--save", str(tmp_path / "one.npz")])
    assert status == 0, output
    assert_close(weights(tmp_path / "two.npz"), weights(tmp_path / "one.npz"))


@pytest.mark.slow
def test_ctrl_c_to_mpiexec_stops_every_rank_after_the_step_with_a_checkpoint(tmp_path):
    checkpoint = tmp_path / "c.npz"
    run = launch_train(tmp_path, [*ARGS, "--epochs", "500", "--checkpoint", str(checkpoint)])
    run.read_until("epoch  2/500", timeout=60)
    run.signal(signal.SIGINT)  # mpiexec forwards it to every rank
    result = run.finish(60)
    assert result.returncode == 130, result.output
    assert result.output.count("SIGINT: stopping after this step") == 1, result.output
    assert result.output.count("stopped after step") == 1 and "Traceback" not in result.output
    saved = ckpt.read(str(checkpoint))
    assert saved.progress.step >= 2 * 23 and saved.world_size == 2


@pytest.mark.slow
def test_a_killed_rank_brings_the_other_down_within_seconds(tmp_path):
    checkpoint = tmp_path / "c.npz"
    argv = [*ARGS, "--epochs", "500", "--checkpoint", str(checkpoint)]
    result = run_train(tmp_path, argv, faults="kill@1:50", timeout=60)
    assert result.returncode != 0, result.output
    assert "KILLED BY SIGNAL: 9" in result.output or "signal 9" in result.output, result.output
    assert "done: test accuracy" not in result.output
    assert ckpt.read(str(checkpoint)).progress.step == 46  # the last epoch's end: intact


@pytest.mark.slow
def test_three_ranks_refuse_a_global_batch_they_cannot_share(tmp_path):
    fresh = run_train(tmp_path, ARGS, ranks=3)
    assert fresh.returncode == 2, fresh.output
    assert fresh.output.count("--batch-size 64 is the global batch") == 1, fresh.output
    checkpoint = tmp_path / "c.npz"
    first = run_train(tmp_path, [*ARGS, "--checkpoint", str(checkpoint)])
    assert first.returncode == 0, first.output
    resumed = run_train(tmp_path, ["train", "--resume", str(checkpoint), "--epochs", "2"],
                        ranks=3)  # fmt: skip
    assert resumed.returncode == 2, resumed.output
    assert resumed.output.count(f"cannot resume {checkpoint} on 3 ranks: --batch-size 64") == 1


@pytest.mark.slow
def test_data_missing_on_one_rank_stops_both_before_training_and_rank_0_says_so(tmp_path):
    result = run_train(tmp_path, ARGS, faults="nodata@1")
    assert result.returncode == 1, result.output
    message = "tensorgrad: error: rank 1: the dataset is not on the machine of rank 1"
    assert result.output.count(message) == 1, result.output
    assert "epoch" not in result.output and "MPI_Abort" not in result.output
