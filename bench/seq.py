"""Training sequence models: tensorgrad against PyTorch (CPU, eager), step for step.

Three models, each written once and built in both libraries from the same source:

* **GPT** (minGPT/nanoGPT's): token and position embeddings, pre-LayerNorm blocks of causal
  self-attention (``F.scaled_dot_product_attention(is_causal=True)``) and a GELU MLP, a final
  LayerNorm and a linear head; 2 layers × 4 heads × 64 wide at context 32, and 4 × 4 × 128 at
  context 64, batch 32, a 65-character vocabulary (Tiny Shakespeare's).
* **Word language model**: PyTorch's ``examples/word_language_model`` LSTM — embedding,
  2-layer LSTM of 200, linear decoder over a 10,000-word vocabulary; 35 steps (bptt) of a
  batch of 20, the hidden state carried from step to step, detached (``repackage_hidden``).

Every step is AdamW with gradients clipped by norm (1.0 for the GPTs, 0.25 as the word model
does), in float32, without dropout (the libraries' random streams differ). Both libraries
start from the same weights and see the same seeded random tokens; before anything is timed,
the first step's loss and gradients must agree, or there is no report. Steps are timed
interleaved in one process, then each library alone in a fresh process.

``python -m bench.seq --worker JOB`` is that subprocess.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from bench import common


@dataclass(frozen=True)
class Config:
    name: str
    kind: str  # "gpt" or "lstm"
    vocab: int
    context: int  # the GPT's block size, or the LSTM's bptt steps
    batch: int
    layers: int
    width: int
    heads: int = 0
    target: float = 0.8  # the smallest acceptable throughput as a fraction of PyTorch's
    clip: float = 1.0


FULL = (
    Config("GPT 2×4×64, context 32", "gpt", 65, 32, 32, 2, 64, heads=4, target=1.0),
    Config("GPT 4×4×128, context 64", "gpt", 65, 64, 32, 4, 128, heads=4),
    Config("LSTM word LM 2×200, vocabulary 10,000", "lstm", 10_000, 35, 20, 2, 200, clip=0.25),
)
SMOKE = (
    Config("GPT 1×2×16, context 8", "gpt", 11, 8, 4, 1, 16, heads=2, target=1.0),
    Config("LSTM 2×8, vocabulary 50", "lstm", 50, 5, 3, 2, 8, clip=0.25),
)
LR = 1e-3
#: how closely the first step's loss and gradients must agree (relative, normwise, float32)
TOLERANCE = 1e-4
#: training steps per timing (each after one untimed step)
CHUNK = 4


# --------------------------------------------------------------------------- the models
def build(lib: Any, config: Config) -> Any:
    """The model of ``config`` in ``lib`` (``tensorgrad`` or ``torch``): one source for both."""
    nn, F = lib.nn, lib.nn.functional

    class Attention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.qkv = nn.Linear(config.width, 3 * config.width)
            self.proj = nn.Linear(config.width, config.width)

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.qkv(x).split(c, dim=2)
            heads = config.heads
            q, k, v = (z.view(b, t, heads, c // heads).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.proj(y.transpose(1, 2).contiguous().view(b, t, c))

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(config.width), nn.LayerNorm(config.width)
            self.attn = Attention()
            self.fc = nn.Linear(config.width, 4 * config.width)
            self.gelu = nn.GELU()
            self.out = nn.Linear(4 * config.width, config.width)

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.out(self.gelu(self.fc(self.ln2(x))))

    class GPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.wte = nn.Embedding(config.vocab, config.width)
            self.wpe = nn.Embedding(config.context, config.width)
            self.blocks = nn.ModuleList([Block() for _ in range(config.layers)])
            self.ln_f = nn.LayerNorm(config.width)
            self.head = nn.Linear(config.width, config.vocab)

        def forward(self, idx):
            x = self.wte(idx) + self.wpe(lib.arange(idx.shape[1]))
            for block in self.blocks:
                x = block(x)
            return self.head(self.ln_f(x))

    class WordLM(nn.Module):  # PyTorch's word_language_model RNNModel('LSTM'), no dropout
        def __init__(self) -> None:
            super().__init__()
            self.encoder = nn.Embedding(config.vocab, config.width)
            self.rnn = nn.LSTM(config.width, config.width, config.layers)
            self.decoder = nn.Linear(config.width, config.vocab)

        def forward(self, idx, hidden):
            output, hidden = self.rnn(self.encoder(idx), hidden)
            return self.decoder(output), hidden

    return GPT() if config.kind == "gpt" else WordLM()


def initial_weights(config: Config, seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded float32 weights for every entry of the model's state dict: normal(0, 0.02)
    matrices and embeddings (GPT-2's), U(±0.1) for the word model (its ``init_weights``),
    LayerNorm at (1, 0), biases 0 but the LSTM's, U(±1/√hidden)."""
    import tensorgrad

    rng = np.random.default_rng(seed)
    weights = {}
    for name, tensor in build(tensorgrad, config).state_dict().items():
        shape = tuple(tensor.shape)
        if name.startswith("rnn."):
            bound = 1 / np.sqrt(config.width)
            value = rng.uniform(-bound, bound, shape)
        elif config.kind == "lstm":
            value = rng.uniform(-0.1, 0.1, shape) if len(shape) == 2 else np.zeros(shape)
        elif ".ln" in name or name.startswith("ln_f"):
            value = np.ones(shape) if name.endswith("weight") else np.zeros(shape)
        else:
            value = rng.normal(0.0, 0.02, shape) if len(shape) == 2 else np.zeros(shape)
        weights[name] = value.astype(np.float32)
    return weights


def batches(config: Config, count: int, seed: int = 1) -> list[tuple[np.ndarray, np.ndarray]]:
    """Seeded random tokens and their targets: (batch, context) for the GPT, time-major
    (bptt, batch) for the word model, as its ``get_batch`` gives them."""
    rng = np.random.default_rng(seed)
    shape = (
        (config.batch, config.context) if config.kind == "gpt" else (config.context, config.batch)
    )
    return [
        (rng.integers(0, config.vocab, shape), rng.integers(0, config.vocab, shape))
        for _ in range(count)
    ]


class Trainer:
    """A model of ``config`` in ``lib`` with AdamW, from the given weights."""

    def __init__(self, lib: Any, name: str, config: Config, weights: dict[str, np.ndarray]):
        self.lib, self.name, self.config = lib, name, config
        self.model = build(lib, config)
        self.model.load_state_dict({k: lib.tensor(v) for k, v in weights.items()})
        self.params = list(self.model.parameters())
        self.optimizer = lib.optim.AdamW(self.params, lr=LR, weight_decay=0.01)
        self.hidden = None

    def convert(self, batch: tuple[np.ndarray, np.ndarray]) -> tuple:
        return tuple(self.lib.from_numpy(np.ascontiguousarray(a)) for a in batch)

    def _loss(self, x, y):
        functional = self.lib.nn.functional
        if self.config.kind == "gpt":
            logits = self.model(x)
        else:
            if self.hidden is not None:  # repackage_hidden: carried over, detached
                self.hidden = tuple(h.detach() for h in self.hidden)
            logits, self.hidden = self.model(x, self.hidden)
        return functional.cross_entropy(logits.reshape(-1, self.config.vocab), y.reshape(-1))

    def loss_and_grads(self, x, y) -> tuple[float, list[np.ndarray]]:
        self.optimizer.zero_grad()
        loss = self._loss(x, y)
        loss.backward()
        return loss.item(), [p.grad.numpy().copy() for p in self.params]

    def step(self, batch: tuple) -> None:
        self.optimizer.zero_grad()
        loss = self._loss(*batch)
        loss.backward()
        self.lib.nn.utils.clip_grad_norm_(self.params, self.config.clip)
        self.optimizer.step()


def trainers(config: Config, weights: dict[str, np.ndarray]) -> list[Trainer]:
    import tensorgrad

    found = [Trainer(tensorgrad, "tensorgrad", config, weights)]
    torch = common.torch()
    if torch is not None:
        found.append(Trainer(torch, "PyTorch", config, weights))
    return found


def check_agreement(found: list[Trainer], batch: tuple[np.ndarray, np.ndarray]) -> list[str]:
    """The first step's loss and gradients of tensorgrad against PyTorch's (a table row);
    raises :class:`common.DisagreementError` if they differ beyond :data:`TOLERANCE`."""
    if len(found) < 2:
        loss, _ = found[0].loss_and_grads(*found[0].convert(batch))
        return [found[0].config.name, f"{loss:.6f}", "(no PyTorch)", "", ""]
    (ours_loss, ours), (theirs_loss, theirs) = (t.loss_and_grads(*t.convert(batch)) for t in found)
    for trainer in found:
        trainer.hidden = None  # the timed steps start afresh
    loss_error = abs(ours_loss - theirs_loss) / abs(theirs_loss)
    grad_error = max(common.relative_error(a, b) for a, b in zip(ours, theirs, strict=True))
    row = [
        found[0].config.name, f"{ours_loss:.6f}", f"{theirs_loss:.6f}",
        f"{loss_error:.1e}", f"{grad_error:.1e}",
    ]  # fmt: skip
    if not (loss_error <= TOLERANCE and grad_error <= TOLERANCE):  # also catches NaN
        raise common.DisagreementError(
            f"{found[0].config.name}: tensorgrad and PyTorch disagree on the first step (loss "
            f"{ours_loss} against {theirs_loss}, gradients {grad_error:.1e}); refusing to "
            "report timings"
        )
    return row


# --------------------------------------------------------------------------- the ops
def op_cases(lib: Any, config: Config) -> dict[str, tuple[Callable[..., Any], list[tuple]]]:
    """The GPT block's ops at ``config``'s shapes, by name: a function of tensors built from
    one source for both libraries, and its input shapes (float32, all requiring grad)."""
    F = lib.nn.functional
    b, t, c, h = config.batch, config.context, config.width, config.heads

    def split_heads(qkv):  # the block's q/k/v split and head views, and the merge after
        q, k, v = qkv.split(c, dim=2)
        q, k, v = (z.view(b, t, h, c // h).transpose(1, 2) for z in (q, k, v))
        return (q * k + v).transpose(1, 2).contiguous().view(b, t, c)

    return {
        "linear (c → 4c)": (F.linear, [(b, t, c), (4 * c, c), (4 * c,)]),
        "linear (4c → c)": (F.linear, [(b, t, 4 * c), (c, 4 * c), (c,)]),
        "gelu": (F.gelu, [(b, t, 4 * c)]),
        "layer_norm": (lambda x, w, bias: F.layer_norm(x, (c,), w, bias), [(b, t, c), (c,), (c,)]),
        "scaled_dot_product_attention (causal)": (
            lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
            [(b, h, t, c // h)] * 3,
        ),
        "q/k/v split, head views, merge": (split_heads, [(b, t, 3 * c)]),
        "cross_entropy": (
            lambda x: F.cross_entropy(x, lib.from_numpy(np.arange(b * t) % config.vocab)),
            [(b * t, config.vocab)],
        ),
    }


def _op_task(lib: Any, function: Callable[..., Any], shapes: list[tuple]) -> Callable[[], None]:
    """A task running ``function`` forward and backward (from a gradient of ones) once."""
    rng = np.random.default_rng(0)
    tensors = [
        lib.from_numpy(rng.standard_normal(shape).astype(np.float32)).requires_grad_()
        for shape in shapes
    ]
    seed = None

    def task() -> None:
        nonlocal seed
        for tensor in tensors:
            tensor.grad = None
        out = function(*tensors)
        if seed is None:
            seed = lib.ones_like(out)
        out.backward(seed)

    return task


def op_rows(config: Config, rounds: int, warmup: int) -> list[list[str]]:
    """Each op of :func:`op_cases` forward + backward, tensorgrad and PyTorch interleaved:
    where a training step's difference comes from."""
    import tensorgrad

    torch = common.torch()
    ours, theirs = op_cases(tensorgrad, config), op_cases(torch, config) if torch else {}
    rows = []
    for name, (function, shapes) in ours.items():
        tasks = {"tensorgrad": _op_task(tensorgrad, function, shapes)}
        if torch is not None:
            tasks["PyTorch"] = _op_task(torch, theirs[name][0], shapes)
        times = common.interleaved(tasks, rounds, warmup)
        median = common.Summary.of(times["tensorgrad"]).median * 1e6
        if torch is None:
            rows.append([name, common.number(median), "n/a", "n/a"])
            continue
        relative = common.paired_ratios(times["PyTorch"], times["tensorgrad"])
        theirs_median = common.Summary.of(times["PyTorch"]).median * 1e6
        rows.append(
            [name, common.number(median), common.number(theirs_median), common.ratio(relative)]
        )
    return rows


# --------------------------------------------------------------------------- timing
def _task(trainer: Trainer, data: list, chunk: int):
    """A task timing ``chunk`` steps on the next batches (cycling), after one untimed step."""
    converted = [trainer.convert(b) for b in data]
    position = 0

    def task() -> float:
        nonlocal position
        trainer.step(converted[position % len(converted)])
        start = time.perf_counter()
        for i in range(1, chunk + 1):
            trainer.step(converted[(position + i) % len(converted)])
        position += chunk + 1
        return time.perf_counter() - start

    return task


def rate_worker(kind: str, config: Config, steps: int, rounds: int) -> dict:
    """Seconds per training step, the median of ``rounds`` timings of ``steps``, for one
    library alone in its process."""
    weights = initial_weights(config)
    data = batches(config, 4)
    lib = __import__("tensorgrad" if kind == "tensorgrad" else "torch")
    task = _task(Trainer(lib, kind, config, weights), data, steps)
    return {"step": float(np.median([task() / steps for _ in range(rounds)]))}


def _in_subprocess(job: dict) -> dict:
    return common.in_subprocess("bench.seq", job)


def _verdict(ratio: float, target: float) -> str:
    return f"≥{target:g}× {common.verdict(ratio, target)}"


def run(args: argparse.Namespace) -> str:
    settings = common.settings(args)
    configs = settings.pick(full=FULL, quick=FULL, smoke=SMOKE)
    rounds = args.repeats or settings.pick(full=15, quick=5, smoke=1)
    alone_rounds = settings.pick(full=7, quick=3, smoke=1)
    torch = common.torch()
    alone_configs = settings.pick(full=configs, quick=configs, smoke=configs[:1])
    agreement, interleaved, alone = [], [], []
    for config in configs:
        weights = initial_weights(config)
        data = batches(config, 4)
        found = trainers(config, weights)
        agreement.append(check_agreement(found, data[0]))
        tasks = {t.name: _task(t, data, CHUNK) for t in found}
        times = common.interleaved(tasks, rounds, settings.warmup, settings.pause)
        ours = common.Summary.of(times["tensorgrad"]).scaled(1e3 / CHUNK)
        if torch is None:
            interleaved.append([config.name, common.number(ours.median), "n/a", "n/a", ""])
            continue
        theirs = common.Summary.of(times["PyTorch"]).scaled(1e3 / CHUNK)
        relative = common.paired_ratios(times["PyTorch"], times["tensorgrad"])
        interleaved.append([
            config.name, common.number(ours.median), common.number(theirs.median),
            common.ratio(relative), _verdict(relative.median, config.target),
        ])  # fmt: skip
        if config not in alone_configs:  # (the smoke test's second model: its path is the same)
            continue
        job = {"config": asdict(config), "steps": CHUNK, "rounds": alone_rounds}
        ours_alone = _in_subprocess({**job, "kind": "tensorgrad"})["step"]
        theirs_alone = _in_subprocess({**job, "kind": "torch"})["step"]
        ratio = theirs_alone / ours_alone
        alone.append([
            config.name, common.number(1e3 * ours_alone), common.number(1e3 * theirs_alone),
            f"{ratio:.2f}×", _verdict(ratio, config.target),
        ])  # fmt: skip
    parts = [
        "## Sequence models (GPT, LSTM word language model; AdamW, float32)\n",
        "Each model is written once and built in both libraries (`bench/seq.py`); the same "
        "initial weights and seeded random tokens; AdamW (lr 1e-3, weight decay 0.01) with "
        "gradient clipping, no dropout. The GPTs: pre-LayerNorm blocks, causal "
        "`scaled_dot_product_attention`, GELU MLP, batch 32. The LSTM: PyTorch's "
        "word_language_model, 35 steps of batch 20, the hidden state carried over detached. "
        f"{rounds} interleaved rounds of {CHUNK} steps, each after one untimed step. BLAS "
        f"threads: {common.blas()[1]}.{'' if torch else ' PyTorch is not installed.'}\n",
        f"First-step agreement (relative; must be ≤ {TOLERANCE:g}):\n",
        common.table(
            ["model", "tensorgrad loss", "PyTorch loss", "loss error", "gradient error"],
            agreement,
        ),
        "\n**Interleaved in one process** (ms per training step, median):\n",
        common.table(
            ["model", "tensorgrad", "PyTorch", "× PyTorch (min–max)", "target"], interleaved
        ),
    ]
    op_rounds = settings.pick(full=100, quick=40, smoke=1)
    parts += [
        f"\n**Where the difference is**: the {configs[0].name} block's ops, forward and "
        f"backward from a gradient of ones, interleaved ({op_rounds} rounds; µs, median; "
        "× PyTorch above 1 is faster than PyTorch):\n",
        common.table(
            ["op", "tensorgrad (µs)", "PyTorch (µs)", "× PyTorch (min–max)"],
            op_rows(configs[0], op_rounds, settings.warmup),
        ),
    ]
    if alone:
        parts += [
            f"\n**Each alone in its own process** (median of {alone_rounds} timings of "
            f"{CHUNK} steps; PyTorch with glibc's malloc as its users get it):\n",
            common.table(
                ["model", "tensorgrad (ms)", "PyTorch (ms)", "× PyTorch", "target"], alone
            ),
        ]
    return "\n".join(parts)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="bench.seq rate worker")
    parser.add_argument("--worker", nargs=1, required=True, help="a JSON job")
    job = json.loads(parser.parse_args().worker[0])
    common.limit_threads(job["threads"])
    config = Config(**job["config"])
    print(json.dumps(rate_worker(job["kind"], config, job["steps"], job["rounds"])))
