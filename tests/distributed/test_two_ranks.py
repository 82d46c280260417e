"""Two ranks under ``mpiexec -n 2`` against one process: DistributedDataParallel's gradients
and training steps, the collectives, the sampler's shards, and the errors that must be raised
on every rank. One launch runs every scenario (about a second); the checks read its files.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tensorgrad as tg
import tensorgrad.nn.functional as F
from tensorgrad import optim
from tensorgrad.data import DistributedSampler
from tests.distributed import launch, worker

SCENARIOS = [
    "train", "no_sync", "collectives", "sampler", "mismatch", "unused", "buffers", "state_dict",
]  # fmt: skip
TOLERANCE = {"float64": 1e-12, "float32": 1e-6}
TRAIN_CONFIGS = [
    "float64",
    "float32",
    "float64-one-bucket-per-param",
    "float64-bucket-view",
    "float64-find-unused",
]


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("two-ranks")
    result = launch.run(SCENARIOS, folder, timeout=120)
    assert result.returncode == 0, result.output
    assert (folder / "done-rank0").exists() and (folder / "done-rank1").exists(), result.output
    return folder


def load(out: Path, name: str, rank: int) -> dict[str, np.ndarray]:
    with np.load(out / f"{name}-rank{rank}.npz") as data:
        return dict(data)


def relative_error(actual: np.ndarray, expected: np.ndarray) -> float:
    """max |actual − expected| / max |expected|."""
    scale = float(np.max(np.abs(expected), initial=0.0)) or 1.0
    return float(np.max(np.abs(actual - expected), initial=0.0)) / scale


def single_process(dtype: str, initial: list[np.ndarray]) -> tuple[list, list]:
    """The gradients and parameters of each step of one process training the same model
    from the same start on the whole global batches."""
    model = worker.make_model(dtype, seed=0)
    with tg.no_grad():
        for p, value in zip(model.parameters(), initial, strict=True):
            p.copy_(value)
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    grads, params = [], []
    for x, y in worker.global_batches(dtype, launch.RANKS):
        optimizer.zero_grad()
        F.cross_entropy(model(tg.as_tensor(x)), y).backward()
        grads.append(worker.grads_of(model))
        optimizer.step()
        params.append(worker.params_of(model))
    return grads, params


def steps(record: dict, kind: str, step: int) -> list[np.ndarray]:
    count = sum(1 for key in record if key.startswith(f"{kind}{step}_"))
    return [record[f"{kind}{step}_{i}"] for i in range(count)]


def initial(record: dict) -> list[np.ndarray]:
    return [record[f"initial{i}"] for i in range(sum(k.startswith("initial") for k in record))]


@pytest.mark.parametrize("config", TRAIN_CONFIGS)
def test_ddp_gradients_and_steps_equal_one_process_on_the_global_batch(out, config):
    dtype = config.split("-")[0]
    ranks = [load(out, f"train-{config}", r) for r in range(launch.RANKS)]
    grads, params = single_process(dtype, initial(ranks[0]))
    for step in range(worker.STEPS):
        for rank, record in enumerate(ranks):
            for i, (got, want) in enumerate(zip(steps(record, "grad", step), grads[step])):
                error = relative_error(got, want)
                assert error <= TOLERANCE[dtype], (config, rank, step, i, error)
                assert got.dtype == want.dtype
            for i, (got, want) in enumerate(zip(steps(record, "param", step), params[step])):
                error = relative_error(got, want)
                assert error <= TOLERANCE[dtype], (config, rank, step, i, error)


@pytest.mark.parametrize("config", TRAIN_CONFIGS)
def test_parameters_identical_on_every_rank_after_construction_and_every_step(out, config):
    rank0, rank1 = (load(out, f"train-{config}", r) for r in range(launch.RANKS))
    # each rank built its model from a different seed: construction copied rank 0's
    for a, b in zip(initial(rank0), initial(rank1), strict=True):
        np.testing.assert_array_equal(a, b)
    for step in range(worker.STEPS):
        for kind in ("grad", "param"):
            for a, b in zip(steps(rank0, kind, step), steps(rank1, kind, step), strict=True):
                np.testing.assert_array_equal(a, b, err_msg=f"{config} {kind} step {step}")


def test_no_sync_accumulates_locally_then_averages_everything(out):
    rank0, rank1 = (load(out, "no_sync", r) for r in range(launch.RANKS))
    batches = worker.global_batches("float64", launch.RANKS)
    # under no_sync each rank kept its own gradient: they differ
    assert not np.allclose(rank0["local0_0"], rank1["local0_0"])
    model = worker.make_model("float64", seed=0)
    with tg.no_grad():
        for p, value in zip(model.parameters(), initial(rank0), strict=True):
            p.copy_(value)
    for x, y in batches:  # the sum over the micro-batches of the global-batch gradients
        F.cross_entropy(model(tg.as_tensor(x)), y).backward()
    expected = worker.grads_of(model)
    for record in (rank0, rank1):
        for i, want in enumerate(expected):
            assert relative_error(record[f"grad{i}"], want) <= 1e-12


def test_collectives_give_every_rank_the_same_result(out):
    ranks = [load(out, "collectives", r) for r in range(launch.RANKS)]
    base = np.arange(6.0).reshape(2, 3)
    values = np.array([1.0, -2.0, 3.0])
    expected = {
        "sum": base * 1 + base * 2,
        "PRODUCT": (values * 2) * (values * 3),
        "MIN": np.minimum(values * 2, values * 3),
        "MAX": np.maximum(values * 2, values * 3),
        "AVG": (values * 2 + values * 3) / 2,
        "BXOR": np.array([1 ^ 2, 6 ^ 6]),
        "bool_sum": np.array([True, False, True]),
        "transposed": (base.T + base.T + 1),
        "broadcast": np.full(4, 1.0),
        "gathered0": np.array([0.5]),
        "gathered1": np.array([1.5, 1.5]),
        "async_completed": np.array(True),
        "objects": np.array([0, 1]),
        "broadcast_objects": np.array([True, True]),
    }
    for rank, record in enumerate(ranks):
        for name, want in expected.items():
            np.testing.assert_array_equal(record[name], want, err_msg=f"{name} on rank {rank}")


def test_sampler_shards_are_disjoint_and_cover_the_dataset(out):
    ranks = [load(out, "sampler", r) for r in range(launch.RANKS)]
    for n in (10, 11):
        for drop_last in (False, True):
            shards = {}
            for epoch in (0, 1):
                key = f"n{n}-drop{int(drop_last)}-epoch{epoch}"
                shards[epoch] = [record[key] for record in ranks]
                a, b = shards[epoch]
                assert len(a) == len(b)  # every rank runs the same number of steps
                together = np.concatenate([a, b])
                if drop_last:
                    assert len(set(together)) == len(together) == 2 * (n // 2)
                else:
                    assert set(together) == set(range(n))
                    assert len(together) - len(set(together)) == n % 2  # the padding
                for rank, shard in enumerate(shards[epoch]):
                    local = DistributedSampler(range(n), 2, rank, seed=3, drop_last=drop_last)
                    local.set_epoch(epoch)
                    np.testing.assert_array_equal(shard, list(local))
            assert not np.array_equal(shards[0][0], shards[1][0])  # set_epoch reshuffles


def test_a_model_that_differs_across_ranks_is_refused_on_every_rank(out):
    for rank in range(launch.RANKS):
        message = (out / f"mismatch-rank{rank}.txt").read_text()
        assert "the model differs across ranks" in message
        assert "rank 1 has parameter '0.weight' of shape (6, 6)" in message
        assert "rank 0 has parameter '0.weight' of shape (5, 6)" in message


def test_unused_parameters(out):
    ranks = [load(out, "unused", r) for r in range(launch.RANKS)]
    for name in ranks[0]:
        a, b = ranks[0][name], ranks[1][name]
        if name.startswith("never"):  # no rank used it: no gradient anywhere
            assert np.isnan(a).all() and np.isnan(b).all(), name
        else:  # used on rank 0 only, or on both: the average, on both
            np.testing.assert_array_equal(a, b, err_msg=name)
            assert not np.isnan(a).any()
    for rank in range(launch.RANKS):
        message = (out / f"unused-rank{rank}.txt").read_text()
        assert "Expected to have finished reduction in the prior iteration" in message
        assert "never.weight, never.bias" in message
        assert "find_unused_parameters=True" in message


def test_buffers_come_from_rank_0(out):
    ranks = [load(out, "buffers", r) for r in range(launch.RANKS)]
    for record in ranks:  # construction copied rank 0's statistics (each rank set its own)
        np.testing.assert_array_equal(record["after_init"], np.full(worker.OUT, 1.0))
    # the first forward updates each rank's statistics from its own shard ...
    assert not np.allclose(ranks[0]["after_forward"], ranks[1]["after_forward"])
    # ... and the next one starts again from rank 0's: running = 0.9 running + 0.1 mean, with
    # the same shard (so the same 0.1 mean) on each rank in both forwards
    for record in ranks:
        own_mean = record["after_forward"] - 0.9 * record["after_init"]
        np.testing.assert_allclose(
            record["after_second_forward"], 0.9 * ranks[0]["after_forward"] + own_mean, rtol=1e-12
        )


def test_state_dict_keys_have_the_module_prefix(out):
    keys = (out / "state_dict-rank0.txt").read_text().split("\n")
    assert keys == ["module.0.weight", "module.0.bias", "module.2.weight", "module.2.bias"]
