"""``bench/distributed.py``: the two-rank benchmark runs with tiny settings and reports
well-formed tables (nothing about speed is asserted), and the cost-model fit recovers the
latency and bandwidth it is given."""

from __future__ import annotations

import numpy as np
import pytest

import bench
from bench import __main__ as cli
from bench import distributed
from tests.distributed import launch
from tests.test_bench import tables


def test_fit_recovers_latency_and_bandwidth():
    alpha, bandwidth = 5e-6, 2e9
    sizes = [4 << (2 * k) for k in range(12)]
    n = distributed.RANKS
    results = {
        s: {"tensorgrad": [2 * (n - 1) * alpha + 2 * (n - 1) / n * s / bandwidth]} for s in sizes
    }
    fitted_alpha, fitted_bandwidth = distributed.fit_allreduce(results)
    assert fitted_alpha == pytest.approx(alpha, rel=1e-6)
    assert fitted_bandwidth == pytest.approx(bandwidth, rel=1e-6)


def test_the_section_is_listed_when_mpi4py_is_installed():
    pytest.importorskip("mpi4py")
    assert "distributed" in bench.SECTIONS


@pytest.mark.slow
def test_smoke_run_reports_every_table():
    launch.require_mpi()
    text = distributed.run(cli.parse_args(["--smoke", "--repeats", "1", "--only", "mlp"]))
    found = tables(text)
    agreement, *training, allreduce, projection, overlap = found
    assert [row[0] for row in agreement[2:]] == ["vs one process", "rank 1 vs rank 0"]
    assert len(training) == len(distributed.BATCH_SIZES)
    for table in training:
        assert [row[0] for row in table[2:]] == list(distributed.CONFIGS)
        for row in table[2:]:
            assert float(row[2].replace(",", "")) > 0
    assert len(allreduce) - 2 == len(distributed._message_sizes("smoke"))
    assert len(overlap) - 2 == 2
    rows = len(distributed.BATCH_SIZES) * len(distributed.NETWORKS)
    assert len(projection) - 2 == rows
    for row in projection[2:]:
        for cell in row[4:]:
            step, efficiency = cell.split(" ")
            assert float(step) > 0 and 0 < float(efficiency.strip("(%)")) <= 100
    assert "Scaling efficiency" in text and "α =" in text
    assert np.isfinite(float(text.split("α = ")[1].split(" ")[0]))


def test_projection_follows_the_ring_cost_model():
    step, efficiency = distributed.project(0.010, 0.001, 1e6, 1e-5, 1e9, 8)
    wire = 2 * 7 * 1e-5 + 2 * 7 / 8 * 1e6 / 1e9
    assert step == pytest.approx(0.011 + wire)
    assert efficiency == pytest.approx(0.010 / (0.011 + wire))
    # more ranks: the bandwidth term tends to 2·S/B, the latency term keeps growing
    steps = [distributed.project(0.01, 0, 1e6, 1e-5, 1e9, n)[0] for n in (2, 8, 64, 512)]
    assert steps == sorted(steps)
