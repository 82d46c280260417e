"""vmap over real networks: per-sample gradients of a CNN, of the MLP, and batched Jacobians.

* **A CNN's per-sample gradients**: two 3×3 convolutions (32 and 64 channels), a 2×2
  max-pool and two linear layers (9216 → 128 → 10, log-softmax, ``nll_loss``), on 16
  MNIST-shaped samples, float32, one thread; written the torch.func way (one sample
  ``unsqueeze(0)``-ed, ``vmap(grad(loss), in_dims=(None, 0, 0))``), against tensorgrad's own
  loop of one-sample ``backward`` calls and PyTorch's ``torch.func``, interleaved in one
  process, after checking that the three agree (relative error 1e-4).
* **The MLP's** (``bench/func.py``'s table, the same code), to hold its ratio to torch.func.
* **jacrev of a 256 → 256 layer** (``tanh(W·x + b)``, float32): one backward sweep vmap-ed
  over the 256 unit cotangents against the row-by-row path (``BATCHED_JACOBIANS = False``,
  one sweep per output element), and ``torch.func.jacrev``.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator

import numpy as np

from bench import common
from bench.func import TOLERANCE, after_warm_up, per_sample

CNN_SHAPES = {
    "conv1.weight": (32, 1, 3, 3),
    "conv1.bias": (32,),
    "conv2.weight": (64, 32, 3, 3),
    "conv2.bias": (64,),
    "fc1.weight": (128, 9216),
    "fc1.bias": (128,),
    "fc2.weight": (10, 128),
    "fc2.bias": (10,),
}


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """tensorgrad's threads, BLAS's and PyTorch's held to one, as the targets are stated."""
    import tensorgrad as tg

    torch = common.torch()
    before = tg.get_num_threads(), None if torch is None else torch.get_num_threads()
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl is in the dev extras
        limit = contextlib.nullcontext()
    else:
        limit = threadpool_limits(limits=1, user_api="blas")
    tg.set_num_threads(1)
    if torch is not None:
        torch.set_num_threads(1)
    try:
        with limit:
            yield
    finally:
        tg.set_num_threads(before[0])
        if torch is not None:
            torch.set_num_threads(before[1])


def cnn_loss(m, functional):
    """One sample's loss, for tensorgrad (``m = tg``) or PyTorch (``m = torch``)."""

    def loss(p, x, y):
        h = functional.relu(functional.conv2d(x.unsqueeze(0), p["conv1.weight"], p["conv1.bias"]))
        h = functional.relu(functional.conv2d(h, p["conv2.weight"], p["conv2.bias"]))
        h = m.flatten(functional.max_pool2d(h, 2), 1)
        h = functional.relu(functional.linear(h, p["fc1.weight"], p["fc1.bias"]))
        logits = functional.linear(h, p["fc2.weight"], p["fc2.bias"])
        return functional.nll_loss(functional.log_softmax(logits, 1), y.unsqueeze(0))

    return loss


def cnn(config: common.Settings, rng: np.random.Generator) -> tuple[str, dict]:
    import tensorgrad as tg

    batch = config.pick(full=16, quick=16, smoke=2)
    weights = {
        k: (rng.uniform(-1, 1, s) / np.sqrt(np.prod(s[1:]) if len(s) > 1 else 8)).astype(np.float32)
        for k, s in CNN_SHAPES.items()
    }
    xs = rng.standard_normal((batch, 1, 28, 28)).astype(np.float32)
    ys = rng.integers(0, 10, batch)
    loss = cnn_loss(tg, tg.nn.functional)
    params = {k: tg.tensor(v) for k, v in weights.items()}
    txs, tys = tg.tensor(xs), tg.tensor(ys)
    per_sample_grads = tg.func.vmap(tg.func.grad(loss), in_dims=(None, 0, 0))

    def by_vmap():
        return {k: g.numpy() for k, g in per_sample_grads(params, txs, tys).items()}

    leaves = {k: tg.tensor(v, requires_grad=True) for k, v in weights.items()}

    def by_loop():
        rows = {k: [] for k in leaves}
        for i in range(batch):
            for p in leaves.values():
                p.grad = None
            loss(leaves, txs[i], tys[i]).backward()
            for k, p in leaves.items():
                rows[k].append(p.grad.numpy().copy())
        return {k: np.stack(row) for k, row in rows.items()}

    tasks = {"tensorgrad vmap(grad)": by_vmap, "tensorgrad loop of backward": by_loop}
    torch = common.torch()
    if torch is not None:
        tparams = {k: torch.tensor(v) for k, v in weights.items()}
        txs_t, tys_t = torch.tensor(xs), torch.tensor(ys)
        theirs = torch.func.vmap(
            torch.func.grad(cnn_loss(torch, torch.nn.functional)), in_dims=(None, 0, 0)
        )

        def by_torch():
            return {k: g.numpy() for k, g in theirs(tparams, txs_t, tys_t).items()}

        tasks["PyTorch torch.func vmap(grad)"] = by_torch
    reference = by_loop()
    for name, task in tasks.items():
        got = task()
        error = max(common.relative_error(got[k], reference[k]) for k in reference)
        if error > TOLERANCE:
            raise common.DisagreementError(
                f"CNN per-sample gradients: {name} differs from the loop of backward calls "
                f"by {error:.2g} (tolerance {TOLERANCE}); refusing to report timings"
            )
    times = common.interleaved(
        {name: after_warm_up(task) for name, task in tasks.items()},
        config.repeats,
        config.warmup,
        config.pause,
    )
    return _table(times, f"CNN per-sample gradients, batch {batch}"), times


def _table(times: dict, title: str) -> str:
    loop = times["tensorgrad loop of backward"]
    rows = []
    for name, values in times.items():
        summary = common.Summary.of(values).scaled(1e3)
        rows.append(
            [
                name,
                common.number(summary.median),
                common.spread(summary),
                common.ratio(common.paired_ratios(loop, values)),
            ]
        )
    return common.table([title, "ms", "range", "speed vs the loop"], rows)


def jacobian(config: common.Settings, rng: np.random.Generator) -> tuple[str, dict]:
    import tensorgrad as tg
    from tensorgrad.func import jacobians

    n = config.pick(full=256, quick=256, smoke=8)
    w = (rng.standard_normal((n, n)) / np.sqrt(n)).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32) * 0.1
    x = rng.standard_normal(n).astype(np.float32)
    tw, tb, tx = tg.tensor(w), tg.tensor(b), tg.tensor(x)

    def layer(v):
        return (tw @ v + tb).tanh()

    expected = (1 - np.tanh(w @ x + b) ** 2)[:, None] * w
    jac = tg.func.jacrev(layer)

    def batched():
        return jac(tx).numpy()

    def row_by_row():
        jacobians.BATCHED_JACOBIANS = False
        try:
            return jac(tx).numpy()
        finally:
            jacobians.BATCHED_JACOBIANS = True

    tasks = {"jacrev, one vmap-ed backward": batched, "jacrev, a backward per row": row_by_row}
    torch = common.torch()
    if torch is not None:
        pw, pb, px = torch.tensor(w), torch.tensor(b), torch.tensor(x)
        their_jac = torch.func.jacrev(lambda v: torch.tanh(pw @ v + pb))

        def by_torch():
            return their_jac(px).numpy()

        tasks["PyTorch torch.func.jacrev"] = by_torch
    for name, task in tasks.items():
        error = common.relative_error(task(), expected)
        if error > TOLERANCE:
            raise common.DisagreementError(
                f"jacrev of the {n}→{n} layer: {name} differs from the Jacobian by hand by "
                f"{error:.2g}; refusing to report timings"
            )
    times = common.interleaved(
        {name: after_warm_up(task) for name, task in tasks.items()},
        config.repeats,
        config.warmup,
        config.pause,
    )
    rows_time = times["jacrev, a backward per row"]
    rows = []
    for name, values in times.items():
        summary = common.Summary.of(values).scaled(1e3)
        rows.append(
            [
                name,
                common.number(summary.median),
                common.spread(summary),
                common.ratio(common.paired_ratios(rows_time, values)),
            ]
        )
    headers = [f"jacrev of tanh(W·x + b), {n}→{n}, float32", "ms", "range", "speed vs rows"]
    return common.table(headers, rows), times


def run(args: argparse.Namespace) -> str:
    config = common.settings(args)
    rng = np.random.default_rng(0)
    with one_thread():
        cnn_table, cnn_times = cnn(config, rng)
        mlp_table, mlp_ratios = per_sample(config, rng)
        jac_table, jac_times = jacobian(config, rng)
    ours = cnn_times["tensorgrad vmap(grad)"]
    vs_loop = common.paired_ratios(cnn_times["tensorgrad loop of backward"], ours)
    summary = [
        f"The CNN's per-sample gradients by `vmap(grad)`: {common.ratio(vs_loop)} tensorgrad's "
        f"loop (target ≥1×: {common.verdict(vs_loop.median, 1.0)})"
    ]
    if "PyTorch torch.func vmap(grad)" in cnn_times:
        vs_torch = common.paired_ratios(cnn_times["PyTorch torch.func vmap(grad)"], ours)
        summary.append(
            f", {common.ratio(vs_torch)} torch.func's (target ≥1×: "
            f"{common.verdict(vs_torch.median, 1.0)})"
        )
    if "torch" in mlp_ratios:
        summary.append(
            f"; the MLP's {common.ratio(mlp_ratios['torch'])} torch.func's (target ≥1.3×: "
            f"{common.verdict(mlp_ratios['torch'].median, 1.3)})"
        )
    rows_speed = common.paired_ratios(
        jac_times["jacrev, a backward per row"], jac_times["jacrev, one vmap-ed backward"]
    )
    summary.append(
        f"; jacrev of the layer {common.ratio(rows_speed)} the row-by-row path (target ≥5×: "
        f"{common.verdict(rows_speed.median, 5.0)}).\n"
    )
    return "\n".join(
        [
            "## vmap over networks (`tg.func.vmap`)\n",
            "One thread (tensorgrad's, BLAS's and PyTorch's), float32, each implementation "
            "checked against a reference before timing (relative error 1e-4); CPU milliseconds "
            "(the process's), median and range over the interleaved repeats, speed as the "
            "per-round ratio.\n",
            cnn_table,
            mlp_table,
            jac_table,
            "".join(summary),
        ]
    )


if __name__ == "__main__":  # python -m bench.vmap [--quick] [--threads 1]: this section alone
    import sys

    from bench.__main__ import main

    sys.exit(main(["--only", "vmap", *sys.argv[1:]]))
