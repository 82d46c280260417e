"""Fault injection into real processes: kill -9 at random points of training and of saving,
SIGINT and SIGTERM, twice in a row. After each, what must hold is asserted: the checkpoint on
disk loads, no temporary file is left for good, and the resumed run ends with the unbroken
run's weights and history, bit for bit.

The children are forked (see forked.py); one test runs ``python -m tensorgrad`` for real.
More randomised kills run under ``make test-slow``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.training import checkpoint as ckpt
from tests.training.forked import CAN_FORK, Child, run, same_weights, temporaries

pytestmark = pytest.mark.skipif(not CAN_FORK, reason="needs os.fork (POSIX)")

ROOT = Path(__file__).resolve().parents[2]
ARGS = ["train", "--dataset", "digits", "--hidden", "32", "--batch-size", "64", "--epochs", "2",
        "--seed", "4", "--no-progress"]  # fmt: skip
TALLY: Counter = Counter()  # what was injected and what survived, printed at the end


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> tuple[Path, list]:
    """The unbroken run's --save file and history."""
    directory = tmp_path_factory.mktemp("reference")
    status, output = run(
        [*ARGS, "--save", str(directory / "final.npz"), "--checkpoint", str(directory / "c.npz")],
        directory / "log",
    )
    assert status == 0, output
    return directory / "final.npz", history(directory / "c.npz")


def history(path: Path) -> list:
    return [{k: v for k, v in row.items() if k != "seconds"}
            for row in ckpt.read(str(path)).progress.history]  # fmt: skip


def kill_until_done(tmp_path: Path, seed: int, kills: int, reference) -> None:
    """Start the run, kill -9 it after a random delay, resume, kill again... ``kills``
    times, then let it finish; the result must be the unbroken run's."""
    rng = np.random.default_rng(seed)
    checkpoint, final = tmp_path / "c.npz", tmp_path / "final.npz"
    first = [*ARGS, "--checkpoint", str(checkpoint), "--checkpoint-every", "3",
             "--save", str(final)]  # fmt: skip
    for attempt in range(kills + 1):
        argv = ["train", "--resume", str(checkpoint)] if checkpoint.exists() else first
        before = set(temporaries(tmp_path))
        child = Child(argv, tmp_path / f"log{attempt}")
        if attempt < kills and not child.wait_up_to(rng.uniform(0.01, 0.2)):
            child.signal(signal.SIGKILL)
            status = child.wait()
            if status == 0:  # it finished between the look and the kill: nothing to resume
                TALLY["runs that finished before their kill -9 landed"] += 1
                break
            assert status == -signal.SIGKILL, child.output()
            TALLY["kill -9 during a run"] += 1
            started = "model mlp" in child.output()
            TALLY["  of them after training had started" if started else
                  "  of them during start-up"] += 1  # fmt: skip
            if set(temporaries(tmp_path)) - before:
                TALLY["  of them in the middle of writing a file"] += 1
            if checkpoint.exists():
                tg.load(checkpoint)  # never half-written
                TALLY["  checkpoint intact and loadable afterwards"] += 1
            continue
        status = child.wait()
        assert status == 0, child.output()
        break
    assert same_weights(final, reference[0])
    assert history(checkpoint) == reference[1]
    assert temporaries(tmp_path) == []  # the killed runs' temporaries were cleaned up
    TALLY["runs killed and resumed to the identical result"] += 1


def test_kill_9_at_random_points_then_resume_gives_the_same_weights(tmp_path, reference):
    kill_until_done(tmp_path, seed=0, kills=3, reference=reference)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(1, 11))
def test_kill_9_at_many_random_points(tmp_path, reference, seed):
    kill_until_done(tmp_path, seed=seed, kills=8, reference=reference)


def wait_for_checkpoint(child: Child, path: Path) -> None:
    assert child.wait_for(path.exists), child.output()


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_finishes_the_step_checkpoints_and_resumes_identically(
    tmp_path, reference, signum, status
):
    checkpoint, final = tmp_path / "c.npz", tmp_path / "final.npz"
    child = Child([*ARGS, "--checkpoint", str(checkpoint), "--checkpoint-every", "2",
                   "--save", str(final)], tmp_path / "log")  # fmt: skip
    wait_for_checkpoint(child, checkpoint)
    child.signal(signum)
    assert child.wait() == status
    output = child.output()
    name = signal.Signals(signum).name
    assert f"{name}: stopping after this step" in output
    assert f"the checkpoint is {checkpoint}" in output
    assert f"resume with: tensorgrad train --resume {checkpoint}" in output
    TALLY[f"{name}: stopped cleanly with status {status}"] += 1
    stopped_at = ckpt.read(str(checkpoint)).progress.step
    assert stopped_at > 0
    resumed, output = run(["train", "--resume", str(checkpoint)], tmp_path / "log2")
    assert resumed == 0, output
    assert f"resumed from {checkpoint} after step {stopped_at}" in output
    assert same_weights(final, reference[0]) and history(checkpoint) == reference[1]
    assert temporaries(tmp_path) == []
    TALLY[f"{name}: resumed to the identical result"] += 1


@pytest.mark.parametrize(
    "seed", [0, *(pytest.param(s, marks=pytest.mark.slow) for s in range(1, 9))]
)
def test_a_second_ctrl_c_stops_at_once_and_keeps_the_previous_checkpoint(tmp_path, reference, seed):
    checkpoint, final = tmp_path / "c.npz", tmp_path / "final.npz"
    child = Child([*ARGS, "--checkpoint", str(checkpoint), "--checkpoint-every", "1",
                   "--save", str(final)], tmp_path / "log")  # fmt: skip
    wait_for_checkpoint(child, checkpoint)
    child.signal(signal.SIGINT)
    time.sleep(np.random.default_rng(seed).uniform(0, 0.01))
    child.signal(signal.SIGINT)
    status = child.wait()
    assert status == 130, child.output()
    assert "interrupted" in child.output() or "stopped after step" in child.output()
    TALLY["double Ctrl-C: stopped with status 130"] += 1
    tg.load(checkpoint)  # the previous (or the finished new) checkpoint, never half of one
    resumed, output = run(["train", "--resume", str(checkpoint)], tmp_path / "log2")
    assert resumed == 0, output
    assert same_weights(final, reference[0]) and history(checkpoint) == reference[1]
    assert temporaries(tmp_path) == []
    TALLY["double Ctrl-C: resumed to the identical result"] += 1


@pytest.mark.slow
def test_the_real_command_stops_on_sigterm_with_143(tmp_path):
    """The whole path once through a fresh interpreter (imports take about two seconds)."""
    checkpoint = tmp_path / "c.npz"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "tensorgrad", *ARGS, "--epochs", "50", "--checkpoint",
         str(checkpoint)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    assert process.stdout.readline().startswith("dataset digits")
    assert process.stdout.readline().startswith("model mlp")
    # after the first epoch, so that the checkpoint holds steps (a signal before the first
    # step is a checkpoint of step 0, which is right but shows less)
    assert process.stdout.readline().startswith("epoch  1/50")
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 143, err
    assert f"resume with: tensorgrad train --resume {checkpoint}" in err
    assert "Traceback" not in err
    assert ckpt.read(str(checkpoint)).progress.step > 0
    TALLY["SIGTERM to python -m tensorgrad: status 143, checkpoint written"] += 1


def test_zz_report_the_tally(capsys):
    """Prints what was injected and what survived (run with -s to see it)."""
    with capsys.disabled():
        print("\nfault-injection tally:")
        for what, count in TALLY.items():
            print(f"  {count:4d}  {what}")
