"""A rank that fails must bring every rank down within seconds, with a message naming the
rank and the error: never a hang. Each test launches two ranks of DDP training in which
rank 1 fails at its second step while rank 0 goes on into the all_reduce of its backward.
"""

from __future__ import annotations

import re

import pytest

from tests.distributed import launch

#: "within seconds": the launch itself takes about one
WITHIN = 15.0


def test_a_rank_that_raises_aborts_every_rank_naming_the_rank_and_the_error(tmp_path):
    result = launch.run(["fail_raise"], tmp_path, timeout=60)
    assert result.returncode != 0, result.output
    assert result.seconds < WITHIN, result.output
    assert "ValueError: rank 1 broke on purpose" in result.output  # the traceback
    assert (
        "tensorgrad.distributed: rank 1 of 2 failed with ValueError: rank 1 broke on purpose; "
        "aborting all 2 ranks (MPI_Abort)"
    ) in result.output
    assert "finished training" not in result.output


@pytest.mark.slow
def test_a_rank_that_is_killed_ends_every_rank_and_the_launcher_names_it(tmp_path):
    result = launch.run(
        ["fail_kill"], tmp_path, timeout=60, env={"TENSORGRAD_DISTRIBUTED_DEBUG": "1"}
    )
    assert result.returncode != 0, result.output
    assert result.seconds < WITHIN, result.output
    # with TENSORGRAD_DISTRIBUTED_DEBUG, each rank said which process it is; the launcher
    # reports the killed process by its id
    said = re.search(r"rank 1 of 2 is process (\d+) on", result.output)
    assert said, result.output
    assert f"PID {said.group(1)} " in result.output, result.output
    assert "KILLED BY SIGNAL: 9" in result.output or "signal 9" in result.output
    assert "finished training" not in result.output


@pytest.mark.slow
def test_a_rank_that_exits_mid_training_makes_the_waiting_rank_fail(tmp_path):
    result = launch.run(["fail_exit"], tmp_path, timeout=60)
    assert result.returncode != 0, result.output
    assert result.seconds < WITHIN, result.output
    assert (
        "rank 0 of 2 failed with RuntimeError: DistributedDataParallel: rank 1 exited without "
        "destroy_process_group while rank 0 was waiting for it in this collective"
    ) in result.output
    assert "finished training" not in result.output


@pytest.mark.slow
def test_a_rank_that_stalls_makes_the_waiting_rank_time_out(tmp_path):
    result = launch.run(["fail_timeout"], tmp_path, timeout=60, env={"WORKER_TIMEOUT": "3"})
    assert result.returncode != 0, result.output
    assert result.seconds < WITHIN + 3, result.output
    assert (
        "rank 0 of 2 failed with RuntimeError: DistributedDataParallel: timed out after 3 s "
        "waiting for the other ranks"
    ) in result.output
