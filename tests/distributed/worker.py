"""The program that ``tests/distributed`` runs on every rank under ``mpiexec -n 2``.

    mpiexec -n 2 python tests/distributed/worker.py SCENARIO OUTDIR

Each scenario does its work with ``tensorgrad.distributed`` and saves what it saw to
``OUTDIR/<scenario>-rank<r>.npz`` (or prints it); the test that launched it checks the
files against a single process. Nothing is asserted here, so that a wrong result is reported
by pytest with both ranks' values, and never hides behind an MPI abort.
"""

from __future__ import annotations

import datetime
import os
import signal
import sys
import time
from pathlib import Path

import numpy as np

import tensorgrad as tg
import tensorgrad.distributed as dist
import tensorgrad.nn.functional as F
from tensorgrad import nn, optim
from tensorgrad.data import DistributedSampler
from tensorgrad.nn.parallel import DistributedDataParallel

IN, HIDDEN, OUT = 6, 5, 3
PER_RANK = 4  #: per-rank batch
STEPS = 3


def make_model(dtype: str, seed: int) -> nn.Module:
    tg.manual_seed(seed)
    model = nn.Sequential(nn.Linear(IN, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, OUT))
    return model.to(dtype)


def global_batches(dtype: str, world: int, steps: int = STEPS, seed: int = 7) -> list:
    """The same global batches on every rank: (x, y) of world * PER_RANK rows each."""
    rng = np.random.default_rng(seed)
    return [
        (
            rng.standard_normal((world * PER_RANK, IN)).astype(dtype),
            rng.integers(0, OUT, world * PER_RANK),
        )
        for _ in range(steps)
    ]


def shard(array: np.ndarray, rank: int) -> np.ndarray:
    return array[rank * PER_RANK : (rank + 1) * PER_RANK]


def params_of(module: nn.Module) -> list[np.ndarray]:
    return [p.numpy().copy() for p in module.parameters()]


def grads_of(module: nn.Module) -> list[np.ndarray]:
    return [p.grad.numpy().copy() for p in module.parameters()]


def save(out: Path, name: str, rank: int, **arrays) -> None:
    np.savez(out / f"{name}-rank{rank}.npz", **arrays)


# --------------------------------------------------------------------------- scenarios
def train(out: Path, rank: int, world: int) -> None:
    """DDP training in several configurations; each rank starts from its own random model
    (DDP must copy rank 0's), and records the model after construction, and the gradients
    and parameters after each step."""
    configs = {
        "float64": dict(dtype="float64"),
        "float32": dict(dtype="float32"),
        "float64-one-bucket-per-param": dict(dtype="float64", bucket_cap_mb=1e-6),
        "float64-bucket-view": dict(dtype="float64", gradient_as_bucket_view=True),
        "float64-find-unused": dict(dtype="float64", find_unused_parameters=True),
    }
    for name, config in configs.items():
        dtype = config.pop("dtype")
        model = make_model(dtype, seed=100 + rank)
        ddp = DistributedDataParallel(model, **config)
        optimizer = optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
        record = {f"initial{i}": p for i, p in enumerate(params_of(model))}
        for step, (x, y) in enumerate(global_batches(dtype, world)):
            optimizer.zero_grad()
            loss = F.cross_entropy(ddp(tg.as_tensor(shard(x, rank))), shard(y, rank))
            loss.backward()
            for i, g in enumerate(grads_of(model)):
                record[f"grad{step}_{i}"] = g
            optimizer.step()
            for i, p in enumerate(params_of(model)):
                record[f"param{step}_{i}"] = p
        save(out, f"train-{name}", rank, **record)


def no_sync(out: Path, rank: int, world: int) -> None:
    """Gradient accumulation: two backward passes under no_sync, then one synced."""
    model = make_model("float64", seed=200 + rank)
    ddp = DistributedDataParallel(model)
    batches = global_batches("float64", world)
    record = {f"initial{i}": p for i, p in enumerate(params_of(model))}
    for step, (x, y) in enumerate(batches):
        x, y = tg.as_tensor(shard(x, rank)), shard(y, rank)
        if step < len(batches) - 1:
            with ddp.no_sync():
                F.cross_entropy(ddp(x), y).backward()
            for i, g in enumerate(grads_of(model)):
                record[f"local{step}_{i}"] = g
        else:
            F.cross_entropy(ddp(x), y).backward()
    for i, g in enumerate(grads_of(model)):
        record[f"grad{i}"] = g
    save(out, "no_sync", rank, **record)


def collectives(out: Path, rank: int, world: int) -> None:
    """Each collective once, on values that tell the ranks apart."""
    record = {}
    x = tg.tensor(np.arange(6.0).reshape(2, 3) * (rank + 1))
    dist.all_reduce(x)
    record["sum"] = x.numpy()
    for op in ("PRODUCT", "MIN", "MAX", "AVG"):
        y = tg.tensor(np.array([1.0, -2.0, 3.0]) * (rank + 2))
        dist.all_reduce(y, op=getattr(dist.ReduceOp, op))
        record[op] = y.numpy()
    bits = tg.tensor(np.array([1 + rank, 6], np.int64))
    dist.all_reduce(bits, op=dist.ReduceOp.BXOR)
    record["BXOR"] = bits.numpy()
    flags = tg.tensor(np.array([rank == 0, False, True]))
    dist.all_reduce(flags)
    record["bool_sum"] = flags.numpy()
    transposed = tg.tensor(np.arange(6.0).reshape(2, 3) + rank).T  # not contiguous
    dist.all_reduce(transposed)
    record["transposed"] = transposed.numpy()
    b = tg.tensor(np.full(4, float(rank)))
    dist.broadcast(b, src=1)
    record["broadcast"] = b.numpy()
    gathered = [tg.zeros(r + 1, dtype="float64") for r in range(world)]
    dist.all_gather(gathered, tg.tensor(np.full(rank + 1, rank + 0.5)))
    for r, t in enumerate(gathered):
        record[f"gathered{r}"] = t.numpy()
    work = dist.all_reduce(tg.tensor(np.array([rank + 1.0])), async_op=True)
    record["async_completed"] = np.array(work.wait())
    objects = [None] * world
    dist.all_gather_object(objects, {"rank": rank})
    record["objects"] = np.array([o["rank"] for o in objects])
    listed = [f"from {rank}", rank]
    dist.broadcast_object_list(listed, src=0)
    record["broadcast_objects"] = np.array([listed[0] == "from 0", listed[1] == 0])
    dist.barrier()
    save(out, "collectives", rank, **record)


def sampler(out: Path, rank: int, world: int) -> None:
    record = {}
    for n in (10, 11):
        for drop_last in (False, True):
            s = DistributedSampler(range(n), shuffle=True, seed=3, drop_last=drop_last)
            for epoch in (0, 1):
                s.set_epoch(epoch)
                record[f"n{n}-drop{int(drop_last)}-epoch{epoch}"] = np.array(list(s), np.int64)
    save(out, "sampler", rank, **record)


def mismatch(out: Path, rank: int, world: int) -> None:
    """Rank 1 builds a wider hidden layer: DDP must refuse on every rank."""
    tg.manual_seed(0)
    hidden = HIDDEN + rank
    model = nn.Sequential(nn.Linear(IN, hidden), nn.Tanh(), nn.Linear(hidden, OUT))
    try:
        DistributedDataParallel(model)
        message = "no error"
    except RuntimeError as error:
        message = str(error)
    (out / f"mismatch-rank{rank}.txt").write_text(message)


def unused(out: Path, rank: int, world: int) -> None:
    """A layer that only rank 0 uses, and one that no rank uses: with
    find_unused_parameters, the first is averaged, the second keeps no gradient; without it,
    the next forward fails, naming them."""

    class Branchy(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.trunk = nn.Linear(IN, OUT)
            self.rank0_only = nn.Linear(IN, OUT)
            self.never = nn.Linear(IN, OUT)

        def forward(self, x, use_branch: bool):
            y = self.trunk(x)
            return y + self.rank0_only(x) if use_branch else y

    record = {}
    tg.manual_seed(5)
    model = Branchy().to("float64")
    ddp = DistributedDataParallel(model, find_unused_parameters=True)
    x, y = global_batches("float64", world, steps=1)[0]
    F.cross_entropy(ddp(tg.as_tensor(shard(x, rank)), rank == 0), shard(y, rank)).backward()
    for name, p in model.named_parameters():
        record[name] = p.grad.numpy().copy() if p.grad is not None else np.array(np.nan)
    plain = DistributedDataParallel(Branchy().to("float64"))
    F.cross_entropy(plain(tg.as_tensor(shard(x, rank)), True), shard(y, rank)).backward()
    try:
        plain(tg.as_tensor(shard(x, rank)), True)
        message = "no error"
    except RuntimeError as error:
        message = str(error)
    save(out, "unused", rank, **record)
    (out / f"unused-rank{rank}.txt").write_text(message)


def buffers(out: Path, rank: int, world: int) -> None:
    """BatchNorm statistics: rank 0's at construction and before each training forward."""
    tg.manual_seed(rank)
    model = nn.Sequential(nn.Linear(IN, OUT), nn.BatchNorm1d(OUT)).to("float64")
    with tg.no_grad():
        model[1].running_mean.copy_(np.full(OUT, float(rank + 1)))
    ddp = DistributedDataParallel(model)
    record = {"after_init": model[1].running_mean.numpy().copy()}
    x, _ = global_batches("float64", world, steps=1)[0]
    ddp(tg.as_tensor(shard(x, rank)))  # each rank updates its statistics with its own shard
    record["after_forward"] = model[1].running_mean.numpy().copy()
    ddp(tg.as_tensor(shard(x, rank)))  # rank 0's are copied out first
    record["after_second_forward"] = model[1].running_mean.numpy().copy()
    save(out, "buffers", rank, **record)


def state_dict(out: Path, rank: int, world: int) -> None:
    model = make_model("float64", seed=300 + rank)
    ddp = DistributedDataParallel(model)
    keys = list(ddp.state_dict())
    (out / f"state_dict-rank{rank}.txt").write_text("\n".join(keys))


# --------------------------------------------------------------------------- failures
def fail_raise(out: Path, rank: int, world: int) -> None:
    """Rank 1 raises in its second step; rank 0 goes on into the all_reduce of its backward."""
    _failing_training(rank, lambda: (_ for _ in ()).throw(ValueError("rank 1 broke on purpose")))


def fail_kill(out: Path, rank: int, world: int) -> None:
    _failing_training(rank, lambda: os.kill(os.getpid(), signal.SIGKILL))


def fail_exit(out: Path, rank: int, world: int) -> None:
    _failing_training(rank, lambda: sys.exit(0))


def fail_timeout(out: Path, rank: int, world: int) -> None:
    """Rank 1 stalls (without leaving): rank 0's collective times out (timeout= is short)."""
    _failing_training(rank, lambda: time.sleep(60))


def _failing_training(rank: int, fail) -> None:
    model = make_model("float64", seed=0)
    ddp = DistributedDataParallel(model)
    for step, (x, y) in enumerate(global_batches("float64", dist.get_world_size(), steps=5)):
        if step == 1 and rank == 1:
            fail()
        F.cross_entropy(ddp(tg.as_tensor(shard(x, rank))), shard(y, rank)).backward()
    print(f"rank {rank} finished training: the failure was not noticed", flush=True)


SCENARIOS = {
    "train": train,
    "no_sync": no_sync,
    "collectives": collectives,
    "sampler": sampler,
    "mismatch": mismatch,
    "unused": unused,
    "buffers": buffers,
    "state_dict": state_dict,
    "fail_raise": fail_raise,
    "fail_kill": fail_kill,
    "fail_exit": fail_exit,
    "fail_timeout": fail_timeout,
}


def main() -> None:
    names, out = sys.argv[1].split(","), Path(sys.argv[2])
    # for the test's teardown, which ends any process of ours still running
    rank_variable = os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "x"))
    (out / f"pid-{rank_variable}-{os.getpid()}").write_text("")
    timeout = datetime.timedelta(seconds=float(os.environ.get("WORKER_TIMEOUT", "60")))
    dist.init_process_group(backend="mpi", timeout=timeout)
    rank, world = dist.get_rank(), dist.get_world_size()
    for name in names:
        SCENARIOS[name](out, rank, world)
    dist.destroy_process_group()
    (out / f"done-rank{rank}").write_text("")


if __name__ == "__main__":
    main()
