"""Data-parallel training on MPI: two ranks against one, and the all_reduce underneath.

One job of two ranks (``mpiexec -n 2 python -m bench.distributed --worker ...``) measures,
in interleaved rounds, for each per-rank batch B:

* *1 rank*: one process training the MLP of ``bench.mlp`` alone (plain model, batch B, one
  BLAS thread), the other rank asleep;
* *2 ranks, no_sync*: both ranks computing their steps at once with DistributedDataParallel
  but without communicating (what sharing the machine costs);
* *2 ranks (DDP)*: both ranks training for real (global batch 2B);
* *1 process, 2 threads*: the other way to use both cores, one process with a two-thread BLAS
  on the global batch 2B;

and then the time of ``all_reduce`` by message size (tensorgrad's, which polls, and mpi4py's
blocking ``Allreduce``), and whether starting an all_reduce before some computation and
waiting after it (overlap) saves time. Scaling efficiency is 2-rank throughput over twice the
1-rank throughput. docs/distributed.md feeds these numbers to a cost model.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench import common, mlp

RANKS = 2
BATCH_SIZES = (32, 128, 512)
#: steps per timing: about 20–40 ms of work
CHUNKS = {32: 16, 128: 8, 512: 4}
#: the agreement check: DDP's weights after a few steps against one process on the global batch
TOLERANCE = 1e-5
CHECK_STEPS = 3
CONFIGS = (
    "1 rank",
    "2 ranks, no_sync",
    "2 ranks (DDP)",
    "1 process, 2 threads",
)
#: how many per-rank batches make a step of each configuration (the others: RANKS)
_BATCHES_OF = {"1 rank": 1}
#: the networks of the projection: (latency α in seconds, bandwidth B in bytes per second)
NETWORKS = {
    "25 Gb/s Ethernet, TCP": (20e-6, 2.8e9),
    "100 Gb/s InfiniBand, RDMA": (2e-6, 12e9),
}
PROJECTED_RANKS = (8, 64, 512)
ROOT = Path(__file__).resolve().parent.parent


# --------------------------------------------------------------------------- worker side
class _Model:
    """``bench.mlp``'s MLP as a tensorgrad user writes it, optionally wrapped in DDP."""

    def __init__(self, params: list[np.ndarray], ddp: bool) -> None:
        import tensorgrad as tg
        import tensorgrad.nn.functional as F
        from tensorgrad import nn, optim
        from tensorgrad.nn.parallel import DistributedDataParallel

        self.tg, self.F = tg, F
        linears = [nn.Linear(n_in, n_out) for n_in, n_out in itertools.pairwise(mlp.LAYERS)]
        self.model = nn.Sequential(linears[0], nn.ReLU(), linears[1], nn.ReLU(), linears[2])
        self.tensors = [t for layer in linears for t in (layer.weight, layer.bias)]
        for tensor, value in zip(self.tensors, params, strict=True):
            np.copyto(tensor.data, value)
        self.net = DistributedDataParallel(self.model) if ddp else self.model
        self.optimizer = optim.SGD(self.net.parameters(), lr=mlp.LR, momentum=mlp.MOMENTUM)

    def step(self, x, y) -> None:
        self.optimizer.zero_grad()
        self.F.cross_entropy(self.net(x), y).backward()
        self.optimizer.step()

    def step_no_sync(self, x, y) -> None:
        self.optimizer.zero_grad()
        with self.net.no_sync():
            self.F.cross_entropy(self.net(x), y).backward()
        self.optimizer.step()

    def weights(self) -> list[np.ndarray]:
        return [t.numpy().copy() for t in self.tensors]


def _idle(comm) -> None:
    """Wait, asleep, for rank 0 to finish a task of its own (a spinning wait would take the
    core the task is meant to have to itself, or half of it with two threads)."""
    request = comm.Ibarrier()
    while not request.Test():
        time.sleep(1e-3)


def _agreement(comm, rank: int, x: np.ndarray, y: np.ndarray) -> dict:
    """DDP's weights after a few steps, on both ranks, against one process on the global
    batches: the relative errors (rank 0's view)."""
    import tensorgrad as tg

    params = mlp.init_params()
    per_rank = 32
    ddp = _Model(params, ddp=True)
    for step in range(CHECK_STEPS):
        rows = slice(step * RANKS * per_rank, (step + 1) * RANKS * per_rank)
        mine = slice(rows.start + rank * per_rank, rows.start + (rank + 1) * per_rank)
        ddp.step(tg.as_tensor(x[mine]), tg.as_tensor(y[mine]))
    theirs = comm.gather(ddp.weights(), root=0)
    if rank != 0:
        return {}
    single = _Model(params, ddp=False)
    for step in range(CHECK_STEPS):
        rows = slice(step * RANKS * per_rank, (step + 1) * RANKS * per_rank)
        single.step(tg.as_tensor(x[rows]), tg.as_tensor(y[rows]))
    reference = single.weights()
    return {
        "vs one process": max(
            common.relative_error(w, r) for w, r in zip(theirs[0], reference, strict=True)
        ),
        "rank 1 vs rank 0": max(
            common.relative_error(a, b) for a, b in zip(theirs[1], theirs[0], strict=True)
        ),
    }


def _training(comm, rank: int, job: dict, x_all: np.ndarray, y_all: np.ndarray) -> dict:
    """Seconds per timed chunk, for each configuration and per-rank batch size."""
    results = {}
    for batch in BATCH_SIZES:
        chunk = CHUNKS[batch] if job["size"] != "smoke" else 2
        times = _time_training(comm, rank, job, mlp.batches(x_all, y_all, RANKS * batch), chunk)
        results[batch] = {"chunk": chunk, "times": times}
    return results


def _time_training(comm, rank: int, job: dict, global_batches: list, chunk: int) -> dict:
    from threadpoolctl import threadpool_limits

    import tensorgrad as tg

    batch = len(global_batches[0][0]) // RANKS
    rows = slice(rank * batch, (rank + 1) * batch)
    mine = [(tg.as_tensor(gx[rows]), tg.as_tensor(gy[rows])) for gx, gy in global_batches]
    whole = [(tg.as_tensor(gx), tg.as_tensor(gy)) for gx, gy in global_batches]
    params = mlp.init_params()
    ddp, alone, threaded = _Model(params, True), _Model(params, False), _Model(params, False)
    position = 0

    def run(step, data, barrier=None) -> float:
        """``chunk`` timed steps after one untimed one (which wakes the BLAS threads and
        warms the caches); ``barrier`` lines the ranks up before and after the timed ones."""
        nonlocal position
        step(*data[position % len(data)])
        if barrier:
            barrier()
        start = time.perf_counter()
        for i in range(1, chunk + 1):
            step(*data[(position + i) % len(data)])
        if barrier:
            barrier()  # until both ranks are done
        position += chunk + 1
        return time.perf_counter() - start

    def together(step) -> float:
        return run(step, mine, comm.Barrier)

    def rank0_alone(step, data, threads: int) -> float | None:
        if rank != 0:
            _idle(comm)
            return None
        with threadpool_limits(limits=threads, user_api="blas"):
            elapsed = run(step, data)
        comm.Ibarrier().Wait()
        return elapsed

    tasks = {
        "1 rank": lambda: rank0_alone(alone.step, mine, 1),
        "2 ranks, no_sync": lambda: together(ddp.step_no_sync),
        "2 ranks (DDP)": lambda: together(ddp.step),
        "1 process, 2 threads": lambda: rank0_alone(threaded.step, whole, 2),
    }
    times: dict[str, list[float]] = {name: [] for name in CONFIGS}
    for round_ in range(job["rounds"]):
        order = CONFIGS[round_ % len(CONFIGS) :] + CONFIGS[: round_ % len(CONFIGS)]
        for name in order:
            if job["pause"]:
                time.sleep(job["pause"])
            elapsed = tasks[name]()
            if elapsed is not None:
                times[name].append(elapsed)
    return times


def _local_work(comm, rank: int, job: dict, x: np.ndarray, y: np.ndarray) -> list[float]:
    """Seconds of DDP's own work per step, measured on rank 0 alone: the reducer taking the
    MLP's gradients into its bucket, scaled, and back, with an all_reduce that returns at once
    (a world of one), as the hooks of one backward call it."""
    import tensorgrad as tg
    from tensorgrad.distributed.worlds import LocalWorld

    model = _Model(mlp.init_params(), ddp=True)  # a collective: on both ranks
    if rank != 0:
        _idle(comm)
        return []
    reducer = model.net.reducer
    reducer.world = LocalWorld()
    model.step(tg.as_tensor(x[:32]), tg.as_tensor(y[:32]))  # the gradients exist
    order = [i for bucket in reducer.buckets for i in reversed(bucket.indices)]
    calls = 2 if job["size"] == "smoke" else 50

    def one_step() -> None:
        reducer.prepare_for_backward(None)
        for index in order:
            reducer.mark_ready(index)

    times = []
    for _ in range(job["rounds"]):
        start = time.perf_counter()
        for _ in range(calls):
            one_step()
        times.append((time.perf_counter() - start) / calls)
    comm.Ibarrier().Wait()
    return times


def _message_sizes(size: str) -> list[int]:
    largest = {"full": 64 << 20, "quick": 16 << 20, "smoke": 1 << 16}[size]
    return [4 << (2 * k) for k in range(13) if 4 << (2 * k) <= largest]


def _allreduce(comm, rank: int, job: dict) -> dict:
    """Seconds per all_reduce of float32 messages, tensorgrad's and mpi4py's, by size."""
    return {nbytes: _time_allreduce(comm, job, nbytes) for nbytes in _message_sizes(job["size"])}


def _time_allreduce(comm, job: dict, nbytes: int) -> dict:
    import tensorgrad as tg
    import tensorgrad.distributed as dist

    array = np.ones(nbytes // 4, np.float32)
    tensor = tg.Tensor(array.copy())
    buffer = np.empty_like(array)
    calls = 2 if job["size"] == "smoke" else max(3, min(2000, int(2e7 / (nbytes + 2e4))))
    implementations = [
        ("tensorgrad", lambda: dist.all_reduce(tensor)),
        ("mpi4py", lambda: comm.Allreduce(array, buffer)),
    ]
    times: dict[str, list[float]] = {name: [] for name, _ in implementations}
    for round_ in range(job["rounds"]):
        for name, call in implementations[round_ % 2 :] + implementations[: round_ % 2]:
            comm.Barrier()
            call()
            comm.Barrier()
            start = time.perf_counter()
            for _ in range(calls):
                call()
            times[name].append((time.perf_counter() - start) / calls)
            tensor.data[:] = 1.0  # sums of sums grow: keep the values finite
    return times


def _overlap(comm, rank: int, job: dict) -> dict:
    """Does an all_reduce started before some computation finish during it? The time of
    all_reduce then compute, against start, compute, wait; compute is matmuls of about the
    all_reduce's duration, the message the MLP's gradient (and four times it)."""
    gradient = sum(a.size for a in mlp.init_params())
    return {4 * gradient * scale: _time_overlap(comm, job, gradient, scale) for scale in (1, 4)}


def _time_overlap(comm, job: dict, gradient: int, scale: int) -> dict:
    from mpi4py import MPI

    rng = np.random.default_rng(0)
    left = rng.random((256, 784), dtype=np.float32)
    right = rng.random((784, 256), dtype=np.float32)
    array = np.ones(gradient * scale, np.float32)

    def compute() -> None:
        for _ in range(scale):
            left @ right

    def sequential() -> None:
        comm.Allreduce(MPI.IN_PLACE, array)
        compute()

    def overlapped() -> None:
        request = comm.Iallreduce(MPI.IN_PLACE, array)
        compute()
        request.Wait()

    tasks = [
        ("all_reduce", lambda: comm.Allreduce(MPI.IN_PLACE, array)),
        ("compute", compute),
        ("sequential", sequential),
        ("overlapped", overlapped),
    ]
    times: dict[str, list[float]] = {name: [] for name, _ in tasks}
    calls = 2 if job["size"] == "smoke" else 20
    for round_ in range(job["rounds"]):
        shift = round_ % len(tasks)
        for name, call in tasks[shift:] + tasks[:shift]:
            comm.Barrier()
            start = time.perf_counter()
            for _ in range(calls):
                call()
            times[name].append((time.perf_counter() - start) / calls)
            array[:] = 1.0
    return times


def worker_main(job: dict) -> None:
    from mpi4py import MPI

    import tensorgrad.distributed as dist

    dist.init_process_group()
    comm = MPI.COMM_WORLD.Dup()  # the benchmark's own coordination
    rank = comm.Get_rank()
    common.limit_threads(1)
    x_all, y_all, source = mlp.load_data(job["samples"])
    report: dict = {"ranks": comm.Get_size(), "source": source, "blas": common.blas()[0]}
    report["agreement"] = _agreement(comm, rank, x_all, y_all)
    agreement = comm.bcast(report["agreement"], root=0)
    if all(value <= TOLERANCE for value in agreement.values()):
        report["training"] = _training(comm, rank, job, x_all, y_all)
        report["local"] = _local_work(comm, rank, job, x_all, y_all)
        report["allreduce"] = _allreduce(comm, rank, job)
        report["overlap"] = _overlap(comm, rank, job)
    if rank == 0:
        Path(job["output"]).write_text(json.dumps(report))
    comm.Free()
    dist.destroy_process_group()


# --------------------------------------------------------------------------- parent side
def mpiexec() -> str | None:
    """The ``mpiexec`` next to this Python (pip's ``mpich`` puts it there), else on PATH."""
    import shutil

    beside = Path(sys.executable).with_name("mpiexec")
    return str(beside) if beside.exists() else shutil.which("mpiexec")


def launch(job: dict, timeout: float) -> dict:
    """Run the two-rank job; what rank 0 reported."""
    command = mpiexec()
    if command is None:
        raise RuntimeError("bench.distributed: no mpiexec found (pip install mpich)")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMI_", "OMPI_", "PMIX_"))}
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env.pop(name, None)  # the worker sets 1 or 2 BLAS threads itself, per task
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    worker = [sys.executable, "-m", "bench.distributed", "--worker", json.dumps(job)]
    process = subprocess.Popen(
        [command, "-n", str(RANKS), *worker],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.terminate()  # mpiexec ends its ranks on SIGTERM
        output, _ = process.communicate()
        raise RuntimeError(
            f"bench.distributed: the MPI job hung ({timeout} s):\n{output}"
        ) from None
    if process.returncode != 0:
        raise RuntimeError(f"bench.distributed: the MPI job failed:\n{output}")
    return json.loads(Path(job["output"]).read_text())


def fit_allreduce(results: dict, statistic=statistics.median) -> tuple[float, float]:
    """(α, B): least squares of the ``statistic`` of each size's times on
    t(S) = 2(n−1)·α + 2(n−1)/n · S/B, the ring all_reduce's cost (n = 2 ranks), in seconds
    and bytes per second."""
    sizes = np.array([float(s) for s in results])
    times = np.array([statistic(v["tensorgrad"]) for v in results.values()])
    n = RANKS
    design = np.stack([np.full_like(sizes, 2 * (n - 1)), 2 * (n - 1) / n * sizes], axis=1)
    weights = 1.0 / times  # relative errors: the small messages count as much as the large
    (alpha, inverse_bandwidth), *_ = np.linalg.lstsq(
        design * weights[:, None], times * weights, rcond=None
    )
    return float(alpha), float(1.0 / inverse_bandwidth) if inverse_bandwidth > 0 else float("inf")


def project(
    compute: float, local: float, gradient: float, alpha: float, bandwidth: float, ranks: int
) -> tuple[float, float]:
    """(step time, scaling efficiency) of ``ranks`` ranks each computing a step in
    ``compute`` seconds, with ``local`` seconds of DDP bookkeeping and one ring all_reduce of
    ``gradient`` bytes, not overlapped: the efficiency is ``compute`` over the step time."""
    wire = 2 * (ranks - 1) * alpha + 2 * (ranks - 1) / ranks * gradient / bandwidth
    step = compute + local + wire
    return step, compute / step


def _projection_table(training: dict, local_times: list[float], gradient: float) -> str:
    """The projection, from the best (least disturbed) rounds: a cluster node runs one job."""
    local = min(local_times)
    headers = ["per-rank batch", "network", "compute ms", "DDP local ms"]
    headers += [f"{n} ranks: step ms (efficiency)" for n in PROJECTED_RANKS]
    rows = []
    for batch, entry in training.items():
        times = entry["times"]
        compute = min(times["1 rank"]) / entry["chunk"]
        for network, (alpha, bandwidth) in NETWORKS.items():
            cells = []
            for n in PROJECTED_RANKS:
                step, efficiency = project(compute, local, gradient, alpha, bandwidth, n)
                cells.append(f"{1e3 * step:.2f} ({efficiency:.0%})")
            rows.append([str(batch), network, f"{1e3 * compute:.2f}", f"{1e3 * local:.2f}", *cells])
    return common.table(headers, rows)


def _bytes(n: float) -> str:
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:g} B"


def _training_tables(training: dict) -> list[str]:
    parts = []
    headers = [
        "configuration", "global batch", "samples/s (median)", "min–max", "ms per step",
        "× 1 rank (min–max)", "× 1 rank, best runs",
    ]  # fmt: skip
    for batch, entry in training.items():
        batch = int(batch)
        chunk, times = entry["chunk"], entry["times"]
        rows = []
        alone = times["1 rank"]
        for name in CONFIGS:
            global_batch = batch * _BATCHES_OF.get(name, RANKS)
            rate = common.Summary.of(times[name]).inverted(global_batch * chunk)
            ratio = common.paired_ratios(
                [global_batch * chunk / t for t in times[name]], [batch * chunk / t for t in alone]
            )
            rows.append([
                name, str(global_batch), common.number(rate.median), common.spread(rate),
                common.number(1e3 * global_batch / rate.median),
                "1" if name == "1 rank" else common.ratio(ratio),
                f"{global_batch * min(alone) / (batch * min(times[name])):.2f}×",
            ])  # fmt: skip
        ddp = common.paired_ratios(
            [RANKS * batch * chunk / t for t in times["2 ranks (DDP)"]],
            [batch * chunk / t for t in alone],
        )
        threads = common.paired_ratios(times["1 process, 2 threads"], times["2 ranks (DDP)"])
        sync = statistics.median(times["2 ranks (DDP)"]) - statistics.median(
            times["2 ranks, no_sync"]
        )
        parts.append(
            f"**Per-rank batch {batch}** ({chunk} steps per timing). Scaling efficiency "
            f"(2-rank throughput / 2 × 1-rank): **{ddp.median / RANKS:.0%}** "
            f"({ddp.low / RANKS:.0%}–{ddp.high / RANKS:.0%}); 2 ranks against 1 process with "
            f"2 threads on the same global batch: {common.ratio(threads)}; gradient "
            f"averaging costs {1e3 * sync / chunk:.2f} ms per step (DDP − no_sync).\n"
        )
        parts.append(common.table(headers, rows))
    return parts


def _allreduce_table(results: dict) -> str:
    rows = []
    for nbytes, times in results.items():
        ours = common.Summary.of(times["tensorgrad"])
        theirs = common.Summary.of(times["mpi4py"])
        nbytes = int(nbytes)
        algbw = nbytes / ours.median / 1e9
        rows.append([
            _bytes(nbytes), common.number(ours.median * 1e6), common.spread(ours.scaled(1e6)),
            common.number(theirs.median * 1e6),
            common.ratio(common.paired_ratios(times["tensorgrad"], times["mpi4py"])),
            f"{algbw:.3g}", f"{algbw * 2 * (RANKS - 1) / RANKS:.3g}",
        ])  # fmt: skip
    headers = [
        "message", "tensorgrad µs (median)", "min–max", "mpi4py Allreduce µs",
        "tensorgrad / mpi4py", "algbw GB/s", "busbw GB/s",
    ]  # fmt: skip
    return common.table(headers, rows)


def _overlap_table(results: dict) -> str:
    rows = []
    for nbytes, times in results.items():
        medians = {name: statistics.median(v) * 1e3 for name, v in times.items()}
        saved = common.paired_ratios(times["sequential"], times["overlapped"])
        rows.append([
            _bytes(int(nbytes)), f"{medians['all_reduce']:.3f}", f"{medians['compute']:.3f}",
            f"{medians['sequential']:.3f}", f"{medians['overlapped']:.3f}", common.ratio(saved),
        ])  # fmt: skip
    headers = [
        "all_reduce of", "all_reduce ms", "compute ms", "one after the other ms",
        "started before compute ms", "speedup of overlap",
    ]  # fmt: skip
    return common.table(headers, rows)


def run(args: argparse.Namespace) -> str:
    config = common.settings(args)
    heading = "## Data-parallel training on MPI (2 ranks, `tensorgrad.distributed`)\n"
    if mpiexec() is None:
        return (
            heading
            + "\nmpiexec is not installed: skipped (`pip install 'tensorgrad[distributed]'`).\n"
        )
    rounds = args.repeats or config.pick(full=15, quick=5, smoke=1)
    with tempfile.TemporaryDirectory() as folder:
        job = {
            "size": config.size,
            "rounds": rounds,
            "pause": config.pause,
            "samples": config.pick(full=4096, quick=2048, smoke=1024),
            "output": str(Path(folder) / "report.json"),
        }
        report = launch(job, timeout=config.pick(full=1800, quick=900, smoke=300))
    agreement = report["agreement"]
    check = common.table(
        ["DDP weights after 3 steps", "relative error"],
        [[name, f"{value:.1e}"] for name, value in agreement.items()],
    )
    if not all(value <= TOLERANCE for value in agreement.values()):
        raise common.DisagreementError(
            f"DistributedDataParallel disagrees with one process beyond {TOLERANCE:g}; "
            f"refusing to report timings.\n\n{check}"
        )
    alpha, bandwidth = fit_allreduce(report["allreduce"])
    best_alpha, best_bandwidth = fit_allreduce(report["allreduce"], min)
    gradient = 4.0 * sum(a.size for a in mlp.init_params())  # float32 bytes
    return "\n".join(
        [
            heading,
            f"Data: {report['source']}; the MLP, SGD and initial weights of the MLP section; "
            f"{rounds} interleaved rounds. One BLAS thread per rank ({report['blas']}); "
            "*1 process, 2 threads* uses both cores alone. Timings on a shared machine are "
            "noisy: read the ratios, which pair measurements of the same round.\n",
            f"Agreement (must be ≤ {TOLERANCE:g}):\n",
            check,
            *_training_tables(report["training"]),
            "**all_reduce** (float32, in place, 2 ranks on one machine through shared memory; "
            "busbw = algbw × 2(n−1)/n, the bandwidth each link of a ring needs).\n",
            _allreduce_table(report["allreduce"]),
            f"Fit of t = 2(n−1)·α + 2(n−1)/n · S/B to the medians: α = {alpha * 1e6:.2f} µs, "
            f"B = {bandwidth / 1e9:.2f} GB/s; to the best rounds: α = {best_alpha * 1e6:.2f} "
            f"µs, B = {best_bandwidth / 1e9:.2f} GB/s.\n",
            "**Projection** to a cluster (docs/distributed.md): a step is the compute of one "
            "rank alone (from the best rounds: a cluster node runs one job) plus DDP's local "
            f"work ({1e3 * min(report['local']):.2f} ms: the reducer alone, its all_reduce "
            f"returning at once; median {1e3 * statistics.median(report['local']):.2f} ms) plus "
            "one ring all_reduce of the "
            f"gradient ({_bytes(gradient)}) at 2(n−1)·α + 2(n−1)/n · S/B, not overlapped; "
            + "; ".join(
                f"{name}: α = {a * 1e6:g} µs, B = {b / 1e9:g} GB/s"
                for name, (a, b) in NETWORKS.items()
            )
            + ".\n",
            _projection_table(report["training"], report["local"], gradient),
            "**Overlap**: an all_reduce started before a matmul and waited for after it, "
            "against the two one after the other (mpi4py, nonblocking).\n",
            _overlap_table(report["overlap"]),
        ]
    )


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--worker"]:
        worker_main(json.loads(argv[1]))
        return 0
    from bench import __main__ as cli

    return cli.main(["--only", "distributed", *argv])


if __name__ == "__main__":
    sys.exit(main())
