"""Training an MLP: tensorgrad against the same model written by hand in NumPy, and PyTorch.

The model is MNIST's classic 784-256-128-10 MLP with ReLU, softmax cross-entropy and SGD with
momentum 0.9, in float32. Every implementation starts from the same weights and sees the same
batches. Before anything is timed, the first step's loss and gradients, and the weights after a
few steps, must agree with the NumPy reference; if they do not, there is no report.
"""

from __future__ import annotations

import argparse
import itertools
import os
import time

import numpy as np

from bench import common

LAYERS = (784, 256, 128, 10)
LR, MOMENTUM = 0.01, 0.9
BATCH_SIZES = (32, 128, 512)
INFERENCE_BATCH = 512
#: steps per timing (about 20 ms of work each): short timings interleaved many times pair
#: each implementation's measurement with the others' under nearly the same machine load
CHUNKS = {32: 16, 128: 8, 512: 4}
INFERENCE_CHUNK = 8
#: the smallest acceptable throughput as a fraction of the NumPy reference's
TRAINING_TARGETS = {32: 0.75, 128: 0.9, 512: 0.9}
INFERENCE_TARGET = 0.95
#: how closely the first step's loss and gradients must agree (normwise, float32)
TOLERANCE = 1e-5
CHECK_STEPS = 3


# --------------------------------------------------------------------------- data and weights
def load_data(samples: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, str]:
    """``samples`` MNIST-shaped inputs (float32 in [0, 1]) and labels, and where they came from.

    Real MNIST training images when ``TENSORGRAD_DATA`` points at them, else random pixels
    and labels from a seeded generator: the arithmetic, and so the speed, is the same.
    """
    if os.environ.get("TENSORGRAD_DATA"):
        from tensorgrad.data import load_mnist

        mnist = load_mnist(download=False)
        x = mnist.train_images[:samples].reshape(-1, LAYERS[0])
        return np.ascontiguousarray(x), mnist.train_labels[:samples], "MNIST training images"
    rng = np.random.default_rng(seed)
    x = rng.random((samples, LAYERS[0]), dtype=np.float32)
    y = rng.integers(0, LAYERS[-1], samples, dtype=np.int64)
    return x, y, "synthetic (seeded uniform pixels, random labels)"


def init_params(seed: int = 0) -> list[np.ndarray]:
    """[W1, b1, W2, b2, W3, b3], each W (out, in), drawn as PyTorch's default Linear init."""
    rng = np.random.default_rng(seed)
    params = []
    for n_in, n_out in itertools.pairwise(LAYERS):
        bound = 1.0 / np.sqrt(n_in)
        params.append(rng.uniform(-bound, bound, (n_out, n_in)).astype(np.float32))
        params.append(rng.uniform(-bound, bound, n_out).astype(np.float32))
    return params


def batches(x: np.ndarray, y: np.ndarray, batch_size: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Consecutive full batches (contiguous copies, as a data loader hands them out)."""
    return [
        (x[i : i + batch_size].copy(), y[i : i + batch_size].copy())
        for i in range(0, len(x) - batch_size + 1, batch_size)
    ]


# --------------------------------------------------------------------------- implementations
class NumpyMLP:
    """The reference: forward, backward by hand and SGD with momentum, in plain NumPy."""

    name = "NumPy (by hand)"

    def __init__(self, params: list[np.ndarray]) -> None:
        self.params = [p.copy() for p in params]
        self.velocity = [np.zeros_like(p) for p in params]

    def convert(self, array: np.ndarray) -> np.ndarray:
        return array

    def forward(self, x: np.ndarray) -> np.ndarray:
        w1, b1, w2, b2, w3, b3 = self.params
        h1 = x @ w1.T
        h1 += b1
        np.maximum(h1, 0, out=h1)
        h2 = h1 @ w2.T
        h2 += b2
        np.maximum(h2, 0, out=h2)
        logits = h2 @ w3.T
        logits += b3
        return logits

    def loss_and_grads(self, x: np.ndarray, y: np.ndarray) -> tuple[float, list[np.ndarray]]:
        w1, b1, w2, b2, w3, b3 = self.params
        n = len(x)
        rows = np.arange(n)
        h1 = x @ w1.T
        h1 += b1
        np.maximum(h1, 0, out=h1)
        h2 = h1 @ w2.T
        h2 += b2
        np.maximum(h2, 0, out=h2)
        logits = h2 @ w3.T
        logits += b3
        # stable log-softmax and the mean negative log-likelihood
        shifted = logits - logits.max(axis=1, keepdims=True)
        log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        loss = -log_probs[rows, y].mean()
        # backward: d loss / d logits = (softmax − onehot) / N
        d3 = np.exp(log_probs)
        d3[rows, y] -= 1
        d3 /= n
        d2 = d3 @ w3
        d2 *= h2 > 0
        d1 = d2 @ w2
        d1 *= h1 > 0
        grads = [d1.T @ x, d1.sum(axis=0), d2.T @ h1, d2.sum(axis=0), d3.T @ h2, d3.sum(axis=0)]
        return float(loss), grads

    def train_step(self, x: np.ndarray, y: np.ndarray) -> None:
        _, grads = self.loss_and_grads(x, y)
        for p, v, g in zip(self.params, self.velocity, grads, strict=True):
            v *= MOMENTUM
            v += g
            p -= LR * v

    def weights(self) -> list[np.ndarray]:
        return self.params


class TensorgradMLP:
    """The model as a tensorgrad user writes it: ``nn.Sequential`` and ``optim.SGD``."""

    name = "tensorgrad"

    def __init__(self, params: list[np.ndarray]) -> None:
        import tensorgrad as tg
        from tensorgrad import nn, optim
        from tensorgrad.nn import functional

        self.tg, self.functional = tg, functional
        linears = [nn.Linear(n_in, n_out) for n_in, n_out in itertools.pairwise(LAYERS)]
        self.model = nn.Sequential(linears[0], nn.ReLU(), linears[1], nn.ReLU(), linears[2])
        self.tensors = [t for layer in linears for t in (layer.weight, layer.bias)]
        for tensor, value in zip(self.tensors, params, strict=True):
            np.copyto(tensor.data, value)  # also checks the (out, in) weight layout
        self.optimizer = optim.SGD(self.model.parameters(), lr=LR, momentum=MOMENTUM)

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


class TorchMLP:
    """The same model in PyTorch (CPU, eager), with as many threads as NumPy's BLAS."""

    name = "PyTorch"

    def __init__(self, params: list[np.ndarray]) -> None:
        torch = self.torch = common.torch()
        linears = [torch.nn.Linear(n_in, n_out) for n_in, n_out in itertools.pairwise(LAYERS)]
        relu = torch.nn.ReLU
        self.model = torch.nn.Sequential(linears[0], relu(), linears[1], relu(), linears[2])
        self.tensors = [t for layer in linears for t in (layer.weight, layer.bias)]
        with torch.no_grad():
            for tensor, value in zip(self.tensors, params, strict=True):
                tensor.copy_(torch.from_numpy(value))
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=LR, momentum=MOMENTUM)
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
    found = [NumpyMLP, TensorgradMLP]
    if common.torch() is not None:
        found.append(TorchMLP)
    return found


# --------------------------------------------------------------------------- agreement
def check_agreement(impls: list, x: np.ndarray, y: np.ndarray) -> str:
    """Compare every implementation with the reference (the first): the first step's loss and
    gradients, then the weights after a few SGD steps. Raises :class:`common.DisagreementError`;
    returns a Markdown summary of the worst errors."""
    reference = impls[0]
    ref_loss, ref_grads = reference.loss_and_grads(x, y)
    for _ in range(CHECK_STEPS):
        reference.train_step(x, y)
    rows, failures = [], []
    for impl in impls[1:]:
        bx, by = impl.convert(x), impl.convert(y)
        loss, grads = impl.loss_and_grads(bx, by)
        for _ in range(CHECK_STEPS):
            impl.train_step(bx, by)
        loss_error = abs(loss - ref_loss) / abs(ref_loss)
        grad_error = max(common.relative_error(g, r) for g, r in zip(grads, ref_grads, strict=True))
        weight_error = max(
            common.relative_error(w, r)
            for w, r in zip(impl.weights(), reference.weights(), strict=True)
        )
        errors = (loss_error, grad_error, weight_error)
        rows.append([impl.name, *(f"{e:.1e}" for e in errors)])
        if not all(e <= TOLERANCE for e in errors):  # also catches NaN
            failures.append(impl.name)
    summary = common.table(
        ["vs NumPy", "loss", "gradients", f"weights after {CHECK_STEPS} steps"], rows
    )
    if failures:
        raise common.DisagreementError(
            f"{', '.join(failures)} disagree(s) with the NumPy reference beyond a relative "
            f"error of {TOLERANCE:g}; refusing to report timings.\n\n{summary}"
        )
    return summary


# --------------------------------------------------------------------------- timing
def _chunked_task(step, data: list, chunk: int):
    """A task that times ``chunk`` consecutive calls of ``step`` on the next items of ``data``
    (cycling), after one untimed call: after the pause between tasks, the first call pays for
    the thread pool waking up and for cold caches, the same for every implementation, which
    would pull every ratio towards 1."""
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


def _training_task(impl, data: list[tuple], chunk: int):
    return _chunked_task(lambda batch: impl.train_step(*batch), data, chunk)


def _inference_task(impl, data: list, chunk: int):
    return _chunked_task(impl.forward, data, chunk)


HEADERS = [
    "implementation", "samples/s (median)", "min–max", "ms per step", "× NumPy (min–max)",
    "× NumPy, best runs", "target",
]  # fmt: skip


def _rate_table(times: dict[str, list[float]], batch_size: int, steps: int, target: float) -> str:
    """Throughput per implementation and relative to the first (NumPy's), as Markdown."""
    names = list(times)
    reference = times[names[0]]
    rows = []
    for name in names:
        rate = common.Summary.of(times[name]).inverted(batch_size * steps)
        step_ms = 1e3 * batch_size / rate.median
        if name == names[0]:
            versus, best, goal = "1 (reference)", "1", ""
        else:
            # samples/s relative to NumPy = NumPy's time / this one's, per round
            relative = common.paired_ratios(reference, times[name])
            versus = common.ratio(relative)
            best = f"{min(reference) / min(times[name]):.2f}×"
            goal = ""
            if name == TensorgradMLP.name:
                goal = f"≥{target:g}× {common.verdict(relative.median, target)}"
        rows.append([
            name, common.number(rate.median), common.spread(rate), common.number(step_ms),
            versus, best, goal,
        ])  # fmt: skip
    return common.table(HEADERS, rows)


def run(args: argparse.Namespace) -> str:
    config = common.settings(args)
    samples = config.pick(full=4096, quick=2048, smoke=512)
    x_all, y_all, source = load_data(samples)
    params = init_params()
    kinds = implementations()

    check = check_agreement([kind(params) for kind in kinds], x_all[:128], y_all[:128])

    rounds = args.repeats or config.pick(full=60, quick=16, smoke=1)
    training = []
    for batch_size in BATCH_SIZES:
        impls = [kind(params) for kind in kinds]
        plain = batches(x_all, y_all, batch_size)
        chunk = min(CHUNKS[batch_size], len(plain))
        tasks = {
            impl.name: _training_task(
                impl, [(impl.convert(x), impl.convert(y)) for x, y in plain], chunk
            )
            for impl in impls
        }
        times = common.interleaved(tasks, rounds, config.warmup, config.pause)
        training.append(f"**Batch {batch_size}** ({chunk} steps per timing)\n")
        training.append(_rate_table(times, batch_size, chunk, TRAINING_TARGETS[batch_size]))

    impls = [kind(params) for kind in kinds]
    plain = [x for x, _ in batches(x_all, y_all, INFERENCE_BATCH)]
    chunk = min(INFERENCE_CHUNK, len(plain))
    tasks = {
        impl.name: _inference_task(impl, [impl.convert(x) for x in plain], chunk) for impl in impls
    }
    times = common.interleaved(tasks, rounds, config.warmup, config.pause)
    inference = _rate_table(times, INFERENCE_BATCH, chunk, INFERENCE_TARGET)

    skipped = "" if common.torch() is not None else " PyTorch is not installed: skipped."
    return "\n".join(
        [
            "## MLP training (784-256-128-10, ReLU, cross-entropy, SGD momentum 0.9, float32)\n",
            f"Data: {source} ({samples} samples, cycled through); the same batches and initial "
            f"weights for every implementation; {rounds} interleaved rounds, each timing a few "
            "steps after one untimed step. BLAS threads: "
            f"{common.blas()[1]}.{skipped}\n",
            f"Agreement with the NumPy reference (relative error, must be ≤ {TOLERANCE:g}):\n",
            check,
            *training,
            f"**Inference** (forward only, under `no_grad`, batch {INFERENCE_BATCH}, "
            f"{chunk} batches per timing; *ms per step* is per batch)\n",
            inference,
        ]
    )
