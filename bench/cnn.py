"""Training a CNN: tensorgrad against PyTorch and the same network written by hand in NumPy.

The network is PyTorch's MNIST example without its dropout (so that every implementation
computes the same thing): conv 1→32 3×3, ReLU, conv 32→64 3×3, ReLU, max-pool 2, flatten,
linear 9216→128, ReLU, linear 128→10, softmax cross-entropy, and plain SGD, in float32. Every
implementation starts from the same weights and sees the same batches. Before anything is
timed, the first step's loss and gradients must agree with the NumPy reference; if they do
not, there is no report.

The NumPy reference is the im2col network a careful programmer writes: channels-last
(N, H, W, C) throughout, so that no transposes are needed; the windows copied into an
(N·OH·OW, kH·kW·C) matrix with one ``as_strided`` view and one copy; one matrix product per
convolution and per gradient; col2im as nine strided adds; the max-pool's gradient to the
first maximum of each window (PyTorch's rule). It does not split work across threads or
chunks; tensorgrad's convolution does (docs/conv.md). A second tensorgrad row, "tensorgrad,
1 thread" (``TENSORGRAD_THREADS=1``: its convolutions in the calling thread, BLAS multiplying
with its own threads), shows what those threads are worth.

``python -m bench.cnn --worker JOB`` is the subprocess that measures one implementation's
peak memory (see :func:`memory_table`).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import time

import numpy as np
from numpy.lib.stride_tricks import as_strided

from bench import common, memory

#: (out, in, kernel) of the two convolutions, then (out, in) of the two linear layers
CONVS = ((32, 1, 3), (64, 32, 3))
LINEARS = ((128, 9216), (10, 128))
LR = 0.01
BATCH_SIZES = (64, 256)
#: steps per timing (each after one untimed step)
CHUNKS = {64: 2, 256: 1}
INFERENCE_CHUNKS = {64: 4, 256: 2}
#: the smallest acceptable throughput of tensorgrad as a fraction of PyTorch's
TRAINING_TARGET = 0.8
INFERENCE_TARGET = 0.8
PEAK_TARGET = 1.5
#: how closely the first step's loss and gradients must agree (normwise, float32): sums of
#: thousands of products in a different order differ in the last bits
TOLERANCE = 2e-5


# --------------------------------------------------------------------------- data and weights
def load_data(samples: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, str]:
    """``samples`` MNIST-shaped images (N, 1, 28, 28), float32 in [0, 1], and labels: MNIST's
    training images when ``TENSORGRAD_DATA`` points at them, else seeded random pixels."""
    if os.environ.get("TENSORGRAD_DATA"):
        from tensorgrad.data import load_mnist

        mnist = load_mnist(download=False)
        x = mnist.train_images[:samples].reshape(-1, 1, 28, 28)
        return np.ascontiguousarray(x), mnist.train_labels[:samples], "MNIST training images"
    rng = np.random.default_rng(seed)
    x = rng.random((samples, 1, 28, 28), dtype=np.float32)
    y = rng.integers(0, 10, samples, dtype=np.int64)
    return x, y, "synthetic (seeded uniform pixels, random labels)"


def init_params(seed: int = 0) -> list[np.ndarray]:
    """[w1, b1, w2, b2, w3, b3, w4, b4] in PyTorch's layouts, each U(−1/√fan_in, 1/√fan_in)."""
    rng = np.random.default_rng(seed)
    params = []
    shapes = [((o, i, k, k), i * k * k) for o, i, k in CONVS] + [((o, i), i) for o, i in LINEARS]
    for shape, fan_in in shapes:
        bound = 1.0 / np.sqrt(fan_in)
        params.append(rng.uniform(-bound, bound, shape).astype(np.float32))
        params.append(rng.uniform(-bound, bound, shape[0]).astype(np.float32))
    return params


def batches(x: np.ndarray, y: np.ndarray, batch_size: int) -> list[tuple[np.ndarray, np.ndarray]]:
    return [
        (x[i : i + batch_size].copy(), y[i : i + batch_size].copy())
        for i in range(0, len(x) - batch_size + 1, batch_size)
    ]


# --------------------------------------------------------------------------- NumPy by hand
def _im2col(x: np.ndarray, k: int) -> np.ndarray:
    """(N, H, W, C) → (N·OH·OW, k·k·C), columns ordered (kernel row, kernel column, channel)."""
    n, h, w, c = x.shape
    oh, ow = h - k + 1, w - k + 1
    sn, sh, sw, sc = x.strides
    windows = as_strided(x, (n, oh, ow, k, k, c), (sn, sh, sw, sh, sw, sc), writeable=False)
    return windows.reshape(n * oh * ow, k * k * c)  # the copy


def _col2im(cols: np.ndarray, shape: tuple[int, ...], k: int) -> np.ndarray:
    """The adjoint of :func:`_im2col`: add each column back onto its window."""
    n, h, w, c = shape
    oh, ow = h - k + 1, w - k + 1
    blocks = cols.reshape(n, oh, ow, k, k, c)
    out = np.zeros(shape, dtype=cols.dtype)
    for i in range(k):
        for j in range(k):
            out[:, i : i + oh, j : j + ow] += blocks[:, :, :, i, j]
    return out


def _conv_matrix(w: np.ndarray) -> np.ndarray:
    """(O, C, k, k) → (O, k·k·C), matching :func:`_im2col`'s column order."""
    return w.transpose(0, 2, 3, 1).reshape(w.shape[0], -1)


def _conv_grad(dw: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """(k·k·C, O) → (O, C, k, k)."""
    o, c, k, _ = shape
    return np.ascontiguousarray(dw.reshape(k, k, c, o).transpose(3, 2, 0, 1))


class NumpyCNN:
    """The reference: forward, backward by hand and SGD, channels-last, in plain NumPy."""

    name = "NumPy (by hand)"

    def __init__(self, params: list[np.ndarray]) -> None:
        self.params = [p.copy() for p in params]

    def convert(self, array: np.ndarray) -> np.ndarray:
        return array

    def _forward(self, x: np.ndarray) -> tuple:
        w1, b1, w2, b2, w3, b3, w4, b4 = self.params
        n = len(x)
        cols1 = _im2col(x.reshape(n, 28, 28, 1), 3)  # one channel: NCHW is NHWC
        h1 = cols1 @ _conv_matrix(w1).T
        h1 += b1
        np.maximum(h1, 0, out=h1)
        h1 = h1.reshape(n, 26, 26, 32)
        cols2 = _im2col(h1, 3)
        h2 = cols2 @ _conv_matrix(w2).T
        h2 += b2
        np.maximum(h2, 0, out=h2)
        h2 = h2.reshape(n, 24, 24, 64)
        pooled = h2.reshape(n, 12, 2, 12, 2, 64).max(axis=(2, 4))
        flat = pooled.transpose(0, 3, 1, 2).reshape(n, 9216)  # PyTorch's (C, H, W) order
        h3 = flat @ w3.T
        h3 += b3
        np.maximum(h3, 0, out=h3)
        logits = h3 @ w4.T
        logits += b4
        return cols1, h1, cols2, h2, pooled, flat, h3, logits

    def forward(self, x: np.ndarray) -> np.ndarray:
        return self._forward(x)[-1]

    def loss_and_grads(self, x: np.ndarray, y: np.ndarray) -> tuple[float, list[np.ndarray]]:
        w1, _, w2, _, w3, _, w4, _ = self.params
        n = len(x)
        cols1, h1, cols2, h2, pooled, flat, h3, logits = self._forward(x)
        rows = np.arange(n)
        shifted = logits - logits.max(axis=1, keepdims=True)
        log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        loss = -log_probs[rows, y].mean()
        d4 = np.exp(log_probs)  # d loss / d logits = (softmax − onehot) / N
        d4[rows, y] -= 1
        d4 /= n
        d3 = d4 @ w4
        d3 *= h3 > 0
        dflat = d3 @ w3
        # max-pool: each window's gradient to its first maximum
        dpooled = dflat.reshape(n, 64, 12, 12).transpose(0, 2, 3, 1)
        windows = h2.reshape(n, 12, 2, 12, 2, 64)
        dh2 = np.zeros_like(windows)
        left = dpooled.copy()
        for a in range(2):
            for b in range(2):
                hit = windows[:, :, a, :, b] == pooled
                dh2[:, :, a, :, b] = np.where(hit, left, 0)
                left[hit] = 0
        dz2 = dh2.reshape(n * 576, 64)
        dz2 *= h2.reshape(n * 576, 64) > 0
        dh1 = _col2im(dz2 @ _conv_matrix(w2), h1.shape, 3)
        dh1 *= h1 > 0
        dz1 = dh1.reshape(n * 676, 32)
        grads = [
            _conv_grad(cols1.T @ dz1, w1.shape), dz1.sum(axis=0),
            _conv_grad(cols2.T @ dz2, w2.shape), dz2.sum(axis=0),
            d3.T @ flat, d3.sum(axis=0),
            d4.T @ h3, d4.sum(axis=0),
        ]  # fmt: skip
        return float(loss), grads

    def train_step(self, x: np.ndarray, y: np.ndarray) -> None:
        _, grads = self.loss_and_grads(x, y)
        for p, g in zip(self.params, grads, strict=True):
            p -= LR * g

    def weights(self) -> list[np.ndarray]:
        return self.params


# --------------------------------------------------------------------------- the frameworks
class TensorgradCNN:
    """The network as a tensorgrad user writes it: ``nn.Sequential`` and ``optim.SGD``."""

    name = "tensorgrad"

    def __init__(self, params: list[np.ndarray]) -> None:
        import tensorgrad as tg
        from tensorgrad import nn, optim
        from tensorgrad import nn as cm
        from tensorgrad.nn import functional

        self.tg, self.functional = tg, functional
        (o1, i1, k1), (o2, i2, k2) = CONVS
        self.model = nn.Sequential(
            cm.Conv2d(i1, o1, k1), nn.ReLU(), cm.Conv2d(i2, o2, k2), nn.ReLU(),
            cm.MaxPool2d(2), nn.Flatten(),
            nn.Linear(*LINEARS[0][::-1]), nn.ReLU(), nn.Linear(*LINEARS[1][::-1]),
        )  # fmt: skip
        self.tensors = list(self.model.parameters())
        for tensor, value in zip(self.tensors, params, strict=True):
            np.copyto(tensor.data, value)  # also checks the shapes
        self.optimizer = optim.SGD(self.tensors, lr=LR)

    def convert(self, array: np.ndarray):
        return self.tg.as_tensor(array)

    def forward(self, x):
        with self.tg.no_grad():
            return self.model(x)

    def loss_and_grads(self, x, y) -> tuple[float, list[np.ndarray]]:
        self.optimizer.zero_grad()
        loss = self.functional.cross_entropy(self.model(x), y)
        loss.backward()
        return loss.item(), [t.grad.numpy().copy() for t in self.tensors]

    def train_step(self, x, y) -> None:
        self.optimizer.zero_grad()
        loss = self.functional.cross_entropy(self.model(x), y)
        loss.backward()
        self.optimizer.step()

    def weights(self) -> list[np.ndarray]:
        return [t.numpy() for t in self.tensors]


class TensorgradOneThread(TensorgradCNN):
    """tensorgrad with its convolution and pooling kept in the calling thread
    (``TENSORGRAD_THREADS=1``): BLAS then uses its own threads on each chunk's products."""

    name = "tensorgrad, 1 thread"

    def _alone(self, method, *args):
        from tensorgrad._native import threads

        before, threads.THREADS = threads.THREADS, 1
        try:
            return method(*args)
        finally:
            threads.THREADS = before

    def forward(self, x):
        return self._alone(super().forward, x)

    def loss_and_grads(self, x, y):
        return self._alone(super().loss_and_grads, x, y)

    def train_step(self, x, y) -> None:
        self._alone(super().train_step, x, y)


class TorchCNN:
    """The same network in PyTorch (CPU, eager), with as many threads as NumPy's BLAS."""

    name = "PyTorch"

    def __init__(self, params: list[np.ndarray]) -> None:
        torch = self.torch = common.torch()
        nn = torch.nn
        (o1, i1, k1), (o2, i2, k2) = CONVS
        self.model = nn.Sequential(
            nn.Conv2d(i1, o1, k1), nn.ReLU(), nn.Conv2d(i2, o2, k2), nn.ReLU(),
            nn.MaxPool2d(2), nn.Flatten(),
            nn.Linear(*LINEARS[0][::-1]), nn.ReLU(), nn.Linear(*LINEARS[1][::-1]),
        )  # fmt: skip
        self.tensors = list(self.model.parameters())
        with torch.no_grad():
            for tensor, value in zip(self.tensors, params, strict=True):
                tensor.copy_(torch.from_numpy(value))
        self.optimizer = torch.optim.SGD(self.tensors, lr=LR)
        self.loss_fn = torch.nn.functional.cross_entropy

    def convert(self, array: np.ndarray):
        return self.torch.from_numpy(array)

    def forward(self, x):
        with self.torch.no_grad():
            return self.model(x)

    def loss_and_grads(self, x, y) -> tuple[float, list[np.ndarray]]:
        self.optimizer.zero_grad()
        loss = self.loss_fn(self.model(x), y)
        loss.backward()
        return loss.item(), [t.grad.numpy().copy() for t in self.tensors]

    def train_step(self, x, y) -> None:
        self.optimizer.zero_grad()
        loss = self.loss_fn(self.model(x), y)
        loss.backward()
        self.optimizer.step()

    def weights(self) -> list[np.ndarray]:
        return [t.detach().numpy() for t in self.tensors]


def implementations() -> list[type]:
    """The implementations to compare, the NumPy reference first; PyTorch when installed."""
    found = [NumpyCNN, TensorgradCNN, TensorgradOneThread]
    if common.torch() is not None:
        found.append(TorchCNN)
    return found


# --------------------------------------------------------------------------- agreement
def check_agreement(impls: list, x: np.ndarray, y: np.ndarray) -> str:
    """The first step's loss and gradients of every implementation against the reference
    (the first), and the forward under no_grad. Raises :class:`common.DisagreementError`;
    returns a Markdown summary of the worst errors."""
    reference = impls[0]
    ref_logits = reference.forward(x)
    ref_loss, ref_grads = reference.loss_and_grads(x, y)
    rows, failures = [], []
    for impl in impls[1:]:
        bx, by = impl.convert(x), impl.convert(y)
        logits = np.asarray(impl.forward(bx))
        loss, grads = impl.loss_and_grads(bx, by)
        errors = (
            abs(loss - ref_loss) / abs(ref_loss),
            max(common.relative_error(g, r) for g, r in zip(grads, ref_grads, strict=True)),
            common.relative_error(logits, ref_logits),
        )
        rows.append([impl.name, *(f"{e:.1e}" for e in errors)])
        if not all(e <= TOLERANCE for e in errors):  # also catches NaN
            failures.append(impl.name)
    summary = common.table(["vs NumPy", "loss", "gradients", "logits (no_grad)"], rows)
    if failures:
        raise common.DisagreementError(
            f"{', '.join(failures)} disagree(s) with the NumPy reference beyond a relative "
            f"error of {TOLERANCE:g}; refusing to report timings.\n\n{summary}"
        )
    return summary


# --------------------------------------------------------------------------- timing
def _chunked_task(step, data: list, chunk: int):
    """A task timing ``chunk`` calls of ``step`` on the next items of ``data`` (cycling),
    after one untimed call (see bench/mlp.py)."""
    position = 0

    def task() -> float:
        nonlocal position
        step(data[position % len(data)])
        start = time.perf_counter()
        for i in range(1, chunk + 1):
            step(data[(position + i) % len(data)])
        elapsed = time.perf_counter() - start
        position += chunk + 1
        return elapsed

    return task


HEADERS = [
    "implementation", "samples/s (median)", "min–max", "ms per step", "× PyTorch (min–max)",
    "× NumPy (min–max)", "target",
]  # fmt: skip


def _rate_table(times: dict[str, list[float]], batch_size: int, steps: int, target: float) -> str:
    """Throughput of each implementation, and per-round ratios to PyTorch's and NumPy's."""
    rows = []
    numpy_times = times[NumpyCNN.name]
    torch_times = times.get(TorchCNN.name)
    for name, seconds in times.items():
        rate = common.Summary.of(seconds).inverted(batch_size * steps)
        versus_torch = versus_numpy = goal = ""
        if torch_times is not None:
            relative = common.paired_ratios(torch_times, seconds)
            versus_torch = "1" if name == TorchCNN.name else common.ratio(relative)
            if name == TensorgradCNN.name:
                goal = f"≥{target:g}× {common.verdict(relative.median, target)}"
        elif name == TensorgradCNN.name:
            goal = "(no PyTorch)"
        versus_numpy = (
            "1"
            if name == NumpyCNN.name
            else common.ratio(common.paired_ratios(numpy_times, seconds))
        )
        rows.append([
            name, common.number(rate.median), common.spread(rate),
            common.number(1e3 * batch_size / rate.median), versus_torch or "n/a", versus_numpy,
            goal,
        ])  # fmt: skip
    return common.table(HEADERS, rows)


def _timed(kinds, params, data, batch_size, rounds, config, training: bool) -> str:
    impls = [kind(params) for kind in kinds]
    chunk = min((CHUNKS if training else INFERENCE_CHUNKS).get(batch_size, 1), len(data))
    tasks = {}
    for impl in impls:
        converted = [(impl.convert(x), impl.convert(y)) for x, y in data]
        if training:
            step = lambda batch, impl=impl: impl.train_step(*batch)  # noqa: E731
        else:
            step = lambda batch, impl=impl: impl.forward(batch[0])  # noqa: E731
        tasks[impl.name] = _chunked_task(step, converted, chunk)
    times = common.interleaved(tasks, rounds, config.warmup, config.pause)
    target = TRAINING_TARGET if training else INFERENCE_TARGET
    what = "training step" if training else "forward under `no_grad`"
    return f"**Batch {batch_size}**, {what} ({chunk} per timing)\n\n" + _rate_table(
        times, batch_size, chunk, target
    )


# --------------------------------------------------------------------------- memory
IMPLEMENTATIONS = {"numpy": NumpyCNN, "tensorgrad": TensorgradCNN, "torch": TorchCNN}


def memory_worker(kind: str, batch_size: int, steps: int) -> dict:
    """A few training steps; the resident size before the first and the peak during them.

    The first step counts: before it, nothing a step allocates has been allocated, so the
    peak's growth over the resident size is what a step needs (after it, the allocator would
    keep much of that memory resident, and the growth of later steps would hide it)."""
    x, y, _ = load_data(batch_size * 2)
    impl = IMPLEMENTATIONS[kind](init_params())
    data = [(impl.convert(bx), impl.convert(by)) for bx, by in batches(x, y, batch_size)]
    gc.collect()
    before = memory.resident()
    reset = memory.reset_peak()
    for step in range(steps):
        impl.train_step(*data[step % len(data)])
    return {"before": before, "peak": memory.peak(), "peak_reset": reset}


def rate_worker(kind: str, batch_size: int, steps: int, rounds: int) -> dict:
    """Seconds per training step and per forward pass, the median of ``rounds`` timings of
    ``steps`` each, for one implementation alone in its process."""
    x, y, _ = load_data(batch_size * 4)
    impl = IMPLEMENTATIONS[kind](init_params())
    data = [(impl.convert(bx), impl.convert(by)) for bx, by in batches(x, y, batch_size)]
    result = {}
    for name, step in (
        ("training", lambda batch: impl.train_step(*batch)),
        ("inference", lambda batch: impl.forward(batch[0])),
    ):
        task = _chunked_task(step, data, steps)
        result[name] = float(np.median([task() / steps for _ in range(rounds)]))
    return result


def separate_table(sizes: tuple[int, ...], rounds: int) -> str:
    """tensorgrad and PyTorch each alone in a fresh process, one after the other: PyTorch
    with glibc's malloc as its users get it (in the interleaved tables it shares
    tensorgrad's process, whose malloc keeps freed memory, and runs faster for it)."""
    rows = []
    for batch_size in sizes:
        steps = CHUNKS.get(batch_size, 1) * 2
        job = {"mode": "rate", "batch": batch_size, "steps": steps, "rounds": rounds}
        ours = _in_subprocess({**job, "kind": "tensorgrad"})
        theirs = _in_subprocess({**job, "kind": "torch"})
        for what in ("training", "inference"):
            target = TRAINING_TARGET if what == "training" else INFERENCE_TARGET
            ratio = theirs[what] / ours[what]
            rows.append([
                str(batch_size), what, common.number(batch_size / ours[what]),
                common.number(batch_size / theirs[what]), f"{ratio:.2f}×",
                f"≥{target:g}× {common.verdict(ratio, target)}",
            ])  # fmt: skip
    headers = [
        "batch", "step", "tensorgrad (samples/s)", "PyTorch (samples/s)", "× PyTorch", "target",
    ]  # fmt: skip
    return common.table(headers, rows)


def _in_subprocess(job: dict) -> dict:
    return common.in_subprocess("bench.cnn", job)


def memory_table(batch_size: int, steps: int) -> str:
    """Peak resident memory over a few training steps, each implementation in its own
    process; *growth* is the peak over the resident size just before the steps."""
    kinds = ["numpy", "tensorgrad"] + (["torch"] if common.torch() is not None else [])
    results = {
        kind: _in_subprocess({"kind": kind, "batch": batch_size, "steps": steps}) for kind in kinds
    }
    reference = results["numpy"]
    ref_growth = reference["peak"] - (reference["before"] or 0)
    rows = []
    for kind in kinds:
        r = results[kind]
        growth = r["peak"] - (r["before"] or 0)
        goal = ""
        if kind == "tensorgrad":
            ratio = growth / ref_growth if ref_growth > 0 else float("nan")
            goal = f"≤{PEAK_TARGET:g}× {common.verdict(ratio, PEAK_TARGET, False)}"
        rows.append([
            IMPLEMENTATIONS[kind].name, memory._mib(r["before"]), memory._mib(r["peak"]),
            memory._mib(growth),
            f"{growth / ref_growth:.2f}×" if ref_growth > 0 else "n/a", goal,
        ])  # fmt: skip
    headers = [
        "implementation", "RSS before (MiB)", "peak (MiB)", "growth (MiB)", "growth × NumPy",
        "target (growth)",
    ]  # fmt: skip
    note = ""
    if not all(r["peak_reset"] for r in results.values()):
        note = "\n*The kernel's peak could not be reset: the peaks include loading.*\n"
    return common.table(headers, rows) + note


# --------------------------------------------------------------------------- the section
def _same_threads() -> None:
    """tensorgrad's own threads, as many as NumPy's BLAS has (and PyTorch): with
    ``--threads 1`` every implementation runs on one core."""
    from tensorgrad._native import threads

    threads.THREADS = min(threads.THREADS, common.blas()[1])


def run(args: argparse.Namespace) -> str:
    _same_threads()
    config = common.settings(args)
    sizes = config.pick(full=BATCH_SIZES, quick=BATCH_SIZES, smoke=(8,))
    samples = config.pick(full=1024, quick=512, smoke=32)
    x_all, y_all, source = load_data(samples)
    params = init_params()
    kinds = implementations()
    check = check_agreement([kind(params) for kind in kinds], x_all[:32], y_all[:32])
    rounds = args.repeats or config.pick(full=15, quick=5, smoke=1)
    parts = []
    for batch_size in sizes:
        data = batches(x_all, y_all, batch_size)
        parts.append(_timed(kinds, params, data, batch_size, rounds, config, training=True))
    for batch_size in sizes:
        data = batches(x_all, y_all, batch_size)
        parts.append(_timed(kinds, params, data, batch_size, rounds, config, training=False))
    memory_batch = sizes[0]
    memory_steps = config.pick(full=10, quick=5, smoke=2)
    skipped = "" if common.torch() is not None else " PyTorch is not installed: skipped."
    separate = []
    if common.torch() is not None:
        alone_rounds = config.pick(full=7, quick=3, smoke=1)
        separate = [
            "**Each alone in its own process** (median of "
            f"{alone_rounds} timings each): the interleaved tables above run PyTorch in "
            "tensorgrad's process, where tensorgrad's malloc settings (freed memory kept for "
            "the next arrays, `_native/malloc.py`) make PyTorch faster too; here "
            "PyTorch runs with glibc's malloc as its users get it. One timing after the "
            "other, not interleaved: noisier than the tables above.\n",
            separate_table(sizes, alone_rounds),
        ]
    return "\n".join(
        [
            "## CNN training (PyTorch's MNIST net without dropout, SGD, float32)\n",
            "conv 1→32 3×3, ReLU, conv 32→64 3×3, ReLU, max-pool 2, flatten, linear 9216→128, "
            f"ReLU, linear 128→10, cross-entropy. Data: {source} ({samples} samples, cycled "
            "through); the same batches and initial weights for every implementation; "
            f"{rounds} interleaved rounds, each timing a few steps after one untimed step. "
            f"BLAS threads: {common.blas()[1]}, and as many for PyTorch and for tensorgrad's own "
            f"threads.{skipped}\n",
            f"Agreement with the NumPy reference (relative error, must be ≤ {TOLERANCE:g}):\n",
            check,
            *parts,
            f"**Peak memory** over {memory_steps} training steps at batch {memory_batch}, each "
            "implementation in its own process; *growth* is the peak over the resident size "
            "before the first step (the interpreter, the libraries, the data and the model).\n",
            memory_table(memory_batch, memory_steps),
            *separate,
        ]
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="bench.cnn memory and rate worker")
    parser.add_argument("--worker", nargs=1, required=True, help="a JSON job")
    job = json.loads(parser.parse_args().worker[0])
    common.limit_threads(job["threads"])
    _same_threads()
    if job.get("mode") == "rate":
        print(json.dumps(rate_worker(job["kind"], job["batch"], job["steps"], job["rounds"])))
    else:
        print(json.dumps(memory_worker(job["kind"], job["batch"], job["steps"])))
