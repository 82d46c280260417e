"""``DistributedSampler`` against PyTorch's: the same index assignment (padding, dropping,
striding), and, given the same permutation, the same shards."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tensorgrad.distributed as dist
from tensorgrad.data import DistributedSampler

CASES = [(10, 3), (10, 2), (2, 5), (7, 7), (0, 2), (11, 4), (1, 1), (5, 8), (100, 6)]


@given(
    size=st.integers(0, 60),
    replicas=st.integers(1, 9),
    shuffle=st.booleans(),
    drop_last=st.booleans(),
    seed=st.integers(0, 5),
    epoch=st.integers(0, 3),
)
def test_shards_are_equal_sized_disjoint_but_for_padding_and_complete(
    size, replicas, shuffle, drop_last, seed, epoch
):
    shards = []
    for rank in range(replicas):
        sampler = DistributedSampler(range(size), replicas, rank, shuffle, seed, drop_last)
        sampler.set_epoch(epoch)
        shards.append(list(sampler))
        assert len(shards[-1]) == len(sampler)
    assert len({len(s) for s in shards}) == 1
    together = [i for s in shards for i in s]
    if drop_last:
        assert len(set(together)) == len(together) == size - size % replicas
    else:
        assert set(together) == set(range(size))
        assert len(together) == -(-size // replicas) * replicas
        if size >= replicas or size == 0:  # the padding repeats each index at most once more
            assert len(together) - len(set(together)) == (-size) % replicas


@pytest.mark.parametrize(("size", "replicas"), CASES)
@pytest.mark.parametrize("drop_last", [False, True])
def test_unshuffled_shards_are_pytorchs(size, replicas, drop_last):
    torch_data = pytest.importorskip("torch.utils.data")
    for rank in range(replicas):
        ours = DistributedSampler(range(size), replicas, rank, shuffle=False, drop_last=drop_last)
        theirs = torch_data.DistributedSampler(
            range(size), replicas, rank, shuffle=False, drop_last=drop_last
        )
        assert list(ours) == list(theirs)
        assert len(ours) == len(theirs)


@pytest.mark.parametrize(("size", "replicas"), CASES)
@pytest.mark.parametrize("drop_last", [False, True])
def test_shuffled_shards_are_pytorchs_given_the_same_permutation(
    monkeypatch, size, replicas, drop_last
):
    """Only the permutation's source differs (NumPy's generator, not torch.randperm): with
    PyTorch's sampler handed our permutation, the shards are the same."""
    torch = pytest.importorskip("torch")
    from torch.utils.data import distributed as torch_distributed

    for epoch in (0, 1):
        permutation = np.random.default_rng(4 + epoch).permutation(size)
        monkeypatch.setattr(
            torch_distributed.torch,
            "randperm",
            lambda n, generator=None, p=permutation: torch.from_numpy(p.copy()),
        )
        for rank in range(replicas):
            ours = DistributedSampler(range(size), replicas, rank, seed=4, drop_last=drop_last)
            theirs = torch_distributed.DistributedSampler(
                range(size), replicas, rank, seed=4, drop_last=drop_last
            )
            ours.set_epoch(epoch)
            theirs.set_epoch(epoch)
            assert list(ours) == list(theirs)


def test_the_process_group_gives_the_defaults():
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        DistributedSampler(range(4))
    dist.init_process_group()
    sampler = DistributedSampler(range(4), shuffle=False)
    assert (sampler.num_replicas, sampler.rank, list(sampler)) == (1, 0, [0, 1, 2, 3])


def test_errors():
    with pytest.raises(
        ValueError, match=r"Invalid rank 2, rank should be in the interval \[0, 1\]"
    ):
        DistributedSampler(range(4), num_replicas=2, rank=2)
    with pytest.raises(ValueError, match="Invalid rank -1"):
        DistributedSampler(range(4), num_replicas=2, rank=-1)
    with pytest.raises(ValueError, match="num_replicas must be a positive integer, got 0"):
        DistributedSampler(range(4), num_replicas=0, rank=0)
    data = list(range(5))
    sampler = DistributedSampler(data, num_replicas=2, rank=0)
    data.extend([5, 6, 7])
    with pytest.raises(RuntimeError, match="the dataset has 8 items now, 6 were planned"):
        list(sampler)


@given(
    steps=st.integers(1, 6),
    global_batch=st.sampled_from([12, 24]),
    epoch=st.integers(0, 3),
)
def test_each_global_batch_is_the_same_whatever_the_number_of_ranks(steps, global_batch, epoch):
    """Step k's global batch is positions kG..(k+1)G of the permutation for every world size
    that divides G and the dataset: a run resumes with another number of ranks on the same
    batches."""
    size = steps * global_batch
    batches_by_world = {}
    for world in (1, 2, 3, 4, 6):
        shards = []
        for rank in range(world):
            sampler = DistributedSampler(range(size), world, rank, seed=9)
            sampler.set_epoch(epoch)
            shards.append(list(sampler))
        per_rank = global_batch // world
        batches_by_world[world] = [
            sorted(i for shard in shards for i in shard[k * per_rank : (k + 1) * per_rank])
            for k in range(steps)
        ]
    assert all(batches == batches_by_world[1] for batches in batches_by_world.values())
