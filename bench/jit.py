"""The numba kernels' effect (``tensorgrad/_jit``, the ``[jit]`` extra): the sequence
models' training steps and the GPT block's ops with the kernels and without, interleaved
with PyTorch in one process (the switch ``tensorgrad._jit.ENABLED`` flipped around each
tensorgrad task); the first-call compile time of each kernel, in a fresh process with an
empty cache and again with the cache filled; and the size the extra adds on disk.

``python -m bench.jit --worker JOB`` is the compile-time subprocess.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from bench import common, seq

#: the issue's targets with the extra, × PyTorch eager's training steps per second
TARGETS = {"gpt64": 1.3, "gpt128": 1.2, "lstm200": 1.2}


def _key(config: seq.Config) -> str:
    return f"{config.kind}{config.width}"


def available() -> bool:
    """Whether the kernels run here (numba installed, ``TENSORGRAD_JIT`` not 0)."""
    from tensorgrad import _jit

    return _jit.ENABLED


def without_jit(task: Callable[[], object]) -> Callable[[], object]:
    """``task`` with the kernels switched off while it runs."""
    from tensorgrad import _jit

    def plain() -> object:
        _jit.ENABLED = False
        try:
            return task()
        finally:
            _jit.ENABLED = True

    return plain


# --------------------------------------------------------------------------- compile time
def _kernel_calls() -> dict[str, Callable[[], object]]:
    """A first call of each kernel on float32 arrays of the small GPT's shapes."""
    from tensorgrad import _jit
    from tensorgrad.ops import erf
    from tensorgrad.ops.sums import row_sums

    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 32, 256)).astype(np.float32)
    rows = rng.standard_normal((1024, 64)).astype(np.float32)
    w, b = np.ones(64, np.float32), np.zeros(64, np.float32)
    cdf = np.full_like(x, 0.5)
    inverse_std = np.ones((1024, 1), np.float32)
    logits = rng.standard_normal((1024, 65)).astype(np.float32)
    sums, target = np.ones((1024, 1), np.float32), np.arange(1024) % 65
    scores = rng.standard_normal((32, 4, 32, 32)).astype(np.float32)
    x1 = x.reshape(-1)
    return {
        "gelu_erf_forward": lambda: _jit.run("gelu_erf_forward", x, *erf.CDF_COEFFICIENTS),
        "gelu_erf_backward": lambda: _jit.run("gelu_erf_backward", x, x, cdf),
        "gelu_tanh_forward": lambda: _jit.run("gelu_tanh_forward", x),
        "gelu_tanh_backward": lambda: _jit.run("gelu_tanh_backward", x, x, cdf),
        "layer_norm_forward": lambda: _jit.run("layer_norm_forward", rows, w, b, 1e-5),
        "layer_norm_backward": lambda: _jit.run(
            "layer_norm_backward", rows, rows, inverse_std, w, True
        ),
        "log_softmax_rows": lambda: _jit.run(
            "log_softmax_rows", logits, logits.max(axis=1, keepdims=True), row_sums
        ),
        "cross_entropy_backward": lambda: _jit.run(
            "cross_entropy_backward", logits, sums, target, 0.0, 1 / 1024
        ),
        "attention_scores_gradient": lambda: _jit.run(
            "attention_scores_gradient", scores, scores[..., 0, :].copy(), scores
        ),
        **_recurrent_calls(rng),
        "adam_moments": lambda: _jit.run(
            "adam_moments", x1, x1.copy(), x1 * x1, 0.9, 0.999, 1.0, 1e-8, x1.copy()
        ),
        "add_rows": lambda: _jit.run("add_rows", rows.copy(), target % 64, rows[:1024]),
        "softmax_exps_float32": lambda: _jit.run(
            "softmax_exps_float32", logits, logits.max(axis=1, keepdims=True)
        ),
        "exp_float32_inplace": lambda: _jit.run("exp_float32_inplace", -(x * x)),
        "gelu_erf_backward_fast": lambda: _jit.run("gelu_erf_backward_fast", x, x, cdf),
    }


def _recurrent_calls(rng: np.random.Generator) -> dict[str, Callable[[], object]]:
    """A first call of the LSTM's and GRU's step kernels at the word model's shapes."""
    from tensorgrad import _jit

    batch, hidden = 20, 200
    f32 = np.float32

    def draw(*shape):
        return rng.standard_normal(shape).astype(f32)

    def lstm():
        return _jit.run(
            "lstm_step_forward", draw(batch, 4 * hidden), draw(batch, 4 * hidden),
            draw(4 * hidden), draw(batch, hidden), draw(batch, 4 * hidden),
            draw(batch, hidden), draw(batch, hidden), draw(batch, hidden),
        )  # fmt: skip

    def lstm_back():
        return _jit.run(
            "lstm_step_backward", draw(batch, hidden), draw(batch, hidden),
            draw(batch, hidden), draw(batch, 4 * hidden), draw(batch, hidden),
            draw(batch, hidden), draw(batch, 4 * hidden),
        )  # fmt: skip

    def gru():
        return _jit.run(
            "gru_step_forward", draw(batch, 3 * hidden), draw(batch, 3 * hidden),
            draw(3 * hidden), draw(batch, hidden), draw(batch, 3 * hidden),
            draw(batch, hidden), draw(batch, hidden),
        )  # fmt: skip

    def gru_back():
        return _jit.run(
            "gru_step_backward", draw(batch, hidden), draw(batch, hidden),
            draw(batch, hidden), draw(batch, 3 * hidden), draw(batch, hidden),
            draw(batch, 3 * hidden), draw(batch, 3 * hidden), draw(batch, hidden),
        )  # fmt: skip

    return {
        "lstm_step_forward": lstm,
        "lstm_step_backward": lstm_back,
        "gru_step_forward": gru,
        "gru_step_backward": gru_back,
    }


def compile_worker(kernels: list[str]) -> dict:
    """Seconds to import numba (with the kernels' module) and for the first call of each of
    ``kernels``, in this fresh process, against the cache ``TENSORGRAD_JIT_CACHE`` names."""
    start = time.perf_counter()
    import tensorgrad._jit.kernels  # noqa: F401  (numba and llvmlite)

    seconds = {"import numba": time.perf_counter() - start}
    calls = _kernel_calls()
    for name in kernels:
        call = calls[name]
        start = time.perf_counter()
        if call() is None:
            raise RuntimeError(f"the kernel {name} did not run")
        seconds[name] = time.perf_counter() - start
    return seconds


def compile_rows(kernels: list[str]) -> list[list[str]]:
    job = {"kind": "tensorgrad", "kernels": kernels}
    with tempfile.TemporaryDirectory() as cache:
        os.environ["TENSORGRAD_JIT_CACHE"] = cache
        try:
            cold = common.in_subprocess("bench.jit", job)
            warm = common.in_subprocess("bench.jit", job)
        finally:
            del os.environ["TENSORGRAD_JIT_CACHE"]
    rows = [[name, f"{cold[name] * 1e3:.0f}", f"{warm[name] * 1e3:.0f}"] for name in cold]
    rows.append(["all", f"{sum(cold.values()) * 1e3:.0f}", f"{sum(warm.values()) * 1e3:.0f}"])
    return rows


def installed_size() -> str:
    """The size on disk of numba and llvmlite (the packages the extra brings)."""
    total = 0
    for name in ("numba", "llvmlite"):
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            continue
        for root, _, files in os.walk(next(iter(spec.submodule_search_locations))):
            total += sum(os.path.getsize(Path(root, f)) for f in files)
    return f"{total / 2**20:.0f} MiB"


# --------------------------------------------------------------------------- the timings
def step_rows(configs, rounds: int, settings: common.Settings) -> list[list[str]]:
    """Training steps: tensorgrad with and without the kernels and PyTorch, interleaved."""
    torch = common.torch()
    rows = []
    for config in configs:
        weights = seq.initial_weights(config)
        data = seq.batches(config, 4)
        found = seq.trainers(config, weights)
        seq.check_agreement(found, data[0])
        tasks = {t.name: seq._task(t, data, seq.CHUNK) for t in found}
        tasks["NumPy only"] = without_jit(seq._task(found[0], data, seq.CHUNK))
        times = common.interleaved(tasks, rounds, settings.warmup, settings.pause)
        ms = {name: common.Summary.of(t).median * 1e3 / seq.CHUNK for name, t in times.items()}
        speedup = common.paired_ratios(times["NumPy only"], times["tensorgrad"])
        row = [
            config.name,
            common.number(ms["tensorgrad"]),
            common.number(ms["NumPy only"]),
            common.ratio(speedup),
        ]
        if torch is None:
            rows.append([*row, "n/a", "n/a", "n/a", ""])
            continue
        fused = common.paired_ratios(times["PyTorch"], times["tensorgrad"])
        plain = common.paired_ratios(times["PyTorch"], times["NumPy only"])
        target = TARGETS.get(_key(config), 1.0)
        rows.append([
            *row, common.number(ms["PyTorch"]), common.ratio(fused), common.ratio(plain),
            f"≥{target:g}× {common.verdict(fused.median, target)}",
        ])  # fmt: skip
    return rows


def mlp_rows(rounds: int, settings: common.Settings) -> list[list[str]]:
    """The MLP's training step (its cross-entropy takes the kernels) with and without them,
    against the NumPy step by hand, interleaved: the extra must not make it slower."""
    from bench import mlp

    x, y, _ = mlp.load_data(settings.pick(full=2048, quick=1024, smoke=64))
    rows = []
    for batch in settings.pick(full=(32, 128), quick=(32, 128), smoke=(32,)):
        data = mlp.batches(x, y, batch)
        ours, by_hand = mlp.TensorgradMLP(mlp.init_params()), mlp.NumpyMLP(mlp.init_params())
        steps = settings.pick(full=16, quick=16, smoke=1) * 32 // batch or 1
        tasks = {
            "kernels": mlp._training_task(ours, [tuple(map(ours.convert, b)) for b in data], steps),
            "NumPy by hand": mlp._training_task(by_hand, data, steps),
        }
        tasks["NumPy only"] = without_jit(tasks["kernels"])
        times = common.interleaved(tasks, rounds, settings.warmup, settings.pause)
        rows.append([
            f"batch {batch}",
            common.ratio(common.paired_ratios(times["NumPy by hand"], times["kernels"])),
            common.ratio(common.paired_ratios(times["NumPy by hand"], times["NumPy only"])),
            common.ratio(common.paired_ratios(times["NumPy only"], times["kernels"])),
        ])  # fmt: skip
    return rows


def op_rows(config: seq.Config, rounds: int, warmup: int) -> list[list[str]]:
    """The GPT block's ops forward and backward: with the kernels, without, and PyTorch."""
    import tensorgrad

    torch = common.torch()
    ours = seq.op_cases(tensorgrad, config)
    theirs = seq.op_cases(torch, config) if torch else {}
    rows = []
    for name, (function, shapes) in ours.items():
        fused = seq._op_task(tensorgrad, function, shapes)
        tasks = {"fused": fused, "plain": without_jit(seq._op_task(tensorgrad, function, shapes))}
        if torch is not None:
            tasks["PyTorch"] = seq._op_task(torch, theirs[name][0], shapes)
        times = common.interleaved(tasks, rounds, warmup)
        us = {k: common.Summary.of(t).median * 1e6 for k, t in times.items()}
        row = [
            name,
            common.number(us["plain"]),
            common.number(us["fused"]),
            common.ratio(common.paired_ratios(times["plain"], times["fused"])),
        ]
        if torch is None:
            rows.append([*row, "n/a", "n/a", "n/a"])
            continue
        rows.append([
            *row, common.number(us["PyTorch"]),
            common.ratio(common.paired_ratios(times["PyTorch"], times["plain"])),
            common.ratio(common.paired_ratios(times["PyTorch"], times["fused"])),
        ])  # fmt: skip
    return rows


def run(args: argparse.Namespace) -> str:
    heading = "## The numba kernels (`[jit]` extra, `tensorgrad/_jit`)\n"
    if not available():
        return (
            f"{heading}\nnumba is not installed (or `TENSORGRAD_JIT=0`): every op runs its "
            "NumPy code; `pip install tensorgrad[jit]` for this section.\n"
        )
    settings = common.settings(args)
    configs = settings.pick(full=seq.FULL, quick=seq.FULL, smoke=seq.SMOKE[:1])
    rounds = args.repeats or settings.pick(full=15, quick=5, smoke=1)
    op_rounds = settings.pick(full=60, quick=30, smoke=1)
    kernels = list(_kernel_calls())
    compile_table = compile_rows(settings.pick(full=kernels, quick=kernels, smoke=kernels[:1]))
    parts = [
        heading,
        "Each kernel's first call in a fresh process, with an empty cache (numba compiles "
        "it) and again with the cache it filled (numba loads it); ms, float32 arrays of the "
        f"small GPT's shapes. The extra's packages, numba and llvmlite, take "
        f"{installed_size()} on disk.\n",
        common.table(
            ["kernel", "first call, empty cache (ms)", "cache filled (ms)"], compile_table
        ),
        f"\n**Training steps** interleaved in one process ({rounds} rounds of {seq.CHUNK} "
        "steps, each after an untimed one; ms per step, median): tensorgrad with the kernels, "
        "the same model with them switched off (*NumPy only*), and PyTorch eager. BLAS "
        f"threads: {common.blas()[1]}.\n",
        common.table(
            [
                "model",
                "tensorgrad (ms)",
                "NumPy only (ms)",
                "kernels' speed-up (min–max)",
                "PyTorch (ms)",
                "× PyTorch (min–max)",
                "NumPy only × PyTorch",
                "target",
            ],
            step_rows(configs, rounds, settings),
        ),
        "\n**The MLP 784-256-128-10** (SGD with momentum, cross-entropy; as in *mlp*), "
        f"interleaved ({rounds * 4} rounds): speeds as a ratio, above 1 faster.\n",
        common.table(
            [
                "step",
                "with kernels × NumPy by hand",
                "NumPy only × NumPy by hand",
                "kernels' speed-up",
            ],
            mlp_rows(rounds * 4, settings),
        ),
        f"\n**The {configs[0].name} block's ops**, forward and backward from a gradient of "
        f"ones, interleaved ({op_rounds} rounds; µs, median):\n",
        common.table(
            [
                "op",
                "NumPy only (µs)",
                "with kernels (µs)",
                "speed-up (min–max)",
                "PyTorch (µs)",
                "NumPy only × PyTorch",
                "with kernels × PyTorch",
            ],
            op_rows(configs[0], op_rounds, settings.warmup),
        ),
    ]
    return "\n".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--worker", required=True)
    job = json.loads(parser.parse_args().worker)
    print(json.dumps(compile_worker(job["kernels"])))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
