"""Derivatives as functions (``tg.func``): per-sample gradients, a JVP's cost, jacfwd vs
jacrev.

* **Per-sample gradients** of an MLP 784-256-10 (ReLU, cross-entropy, float32) on a batch of
  64: ``vmap(grad(loss), in_dims=(None, 0, 0))`` against a Python loop of per-sample
  ``backward`` calls (the way one writes it without ``tg.func``) and, when PyTorch is
  installed, ``torch.func.vmap(torch.func.grad(loss))`` on the same weights and data, all
  timed in turn in one run. Before timing, the three must agree (relative error 1e-4).
* **A JVP against the forward pass**: the same MLP's logits for the batch, and
  ``tg.func.jvp`` of them along a random direction in the weights (forward mode: value and
  tangent in one pass, checked by the adjoint identity against reverse mode); forward mode
  promises at most ~3× the forward pass.
* **jacfwd against jacrev** on ``f(x) = tanh(A·x)``, ``A`` of shape m × n: forward mode
  needs one pass per input (n), reverse mode one backward per output (m), so jacfwd wins for
  n ≪ m and jacrev for n ≫ m, the crossover near n = m.
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np

from bench import common

TOLERANCE = 1e-4


def after_warm_up(function, calls: int = 1):
    """A task timing ``calls`` calls of ``function`` after one untimed call: after the pause
    between tasks the first call pays for the BLAS threads waking up (tens of milliseconds
    on a loaded machine), the same for every implementation, which would drown the
    difference being measured. Returns the CPU seconds of the timed calls (the process's:
    on one thread, what the work cost, not what other programs on a shared machine took)."""

    def task() -> float:
        function()
        start = time.process_time()
        for _ in range(calls):
            function()
        return time.process_time() - start

    return task


def mlp_params(rng: np.random.Generator, sizes: tuple[int, ...]) -> list[np.ndarray]:
    params = []
    for fan_in, fan_out in itertools.pairwise(sizes):
        bound = 1 / np.sqrt(fan_in)
        params.append(rng.uniform(-bound, bound, (fan_in, fan_out)).astype(np.float32))
        params.append(np.zeros(fan_out, np.float32))
    return params


def tensorgrad_loss():
    import tensorgrad as tg
    from tensorgrad.nn import functional as F

    def loss(params, x, y):
        """One sample's loss: ``x`` of shape (784,), ``y`` a 0-d label."""
        w1, b1, w2, b2 = params
        logits = F.relu(x @ w1 + b1) @ w2 + b2
        return F.cross_entropy(logits.unsqueeze(0), y.unsqueeze(0))

    return tg, loss


def per_sample(config: common.Settings, rng: np.random.Generator) -> tuple[str, dict]:
    """The per-sample-gradient table and the ratios (for the summary line)."""
    batch = config.pick(full=64, quick=64, smoke=4)
    sizes = (784, 256, 10)
    weights = mlp_params(rng, sizes)
    xs = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    ys = rng.integers(0, sizes[-1], batch)
    tg, loss = tensorgrad_loss()
    params = [tg.tensor(w) for w in weights]
    txs, tys = tg.tensor(xs), tg.tensor(ys)
    per_sample_grads = tg.func.vmap(tg.func.grad(loss), in_dims=(None, 0, 0))

    def by_vmap():
        return [g.numpy() for g in per_sample_grads(params, txs, tys)]

    leaves = [tg.tensor(w, requires_grad=True) for w in weights]

    def by_loop():
        rows = [[] for _ in leaves]
        for i in range(batch):
            for p in leaves:
                p.grad = None
            loss(leaves, txs[i], tys[i]).backward()
            for row, p in zip(rows, leaves, strict=True):
                row.append(p.grad.numpy().copy())
        return [np.stack(row) for row in rows]

    tasks = {"tensorgrad vmap(grad)": by_vmap, "tensorgrad loop of backward": by_loop}
    torch = common.torch()
    if torch is not None:
        from torch.func import grad as torch_grad
        from torch.func import vmap as torch_vmap

        tparams = [torch.tensor(w) for w in weights]
        txs_t, tys_t = torch.tensor(xs), torch.tensor(ys)

        def torch_loss(params, x, y):
            w1, b1, w2, b2 = params
            logits = torch.relu(x @ w1 + b1) @ w2 + b2
            return torch.nn.functional.cross_entropy(logits.unsqueeze(0), y.unsqueeze(0))

        torch_per_sample = torch_vmap(torch_grad(torch_loss), in_dims=(None, 0, 0))

        def by_torch():
            return [g.numpy() for g in torch_per_sample(tparams, txs_t, tys_t)]

        tasks["PyTorch torch.func vmap(grad)"] = by_torch

    reference = by_loop()
    for name, task in tasks.items():
        got = task()
        error = max(common.relative_error(g, r) for g, r in zip(got, reference, strict=True))
        if error > TOLERANCE:
            raise common.DisagreementError(
                f"per-sample gradients: {name} differs from the loop of backward calls by "
                f"{error:.2g} (tolerance {TOLERANCE}); refusing to report timings"
            )
    timed = {name: after_warm_up(task) for name, task in tasks.items()}
    times = common.interleaved(timed, config.repeats, config.warmup, config.pause)
    vmap_times = times["tensorgrad vmap(grad)"]
    rows = []
    for name, values in times.items():
        summary = common.Summary.of(values).scaled(1e3)
        versus_loop = common.paired_ratios(times["tensorgrad loop of backward"], values)
        rows.append(
            [
                name,
                common.number(summary.median),
                common.spread(summary),
                common.ratio(versus_loop),
            ]
        )
    ratios = {"loop": common.paired_ratios(times["tensorgrad loop of backward"], vmap_times)}
    if torch is not None:
        ratios["torch"] = common.paired_ratios(times["PyTorch torch.func vmap(grad)"], vmap_times)
    headers = [f"per-sample gradients, batch {batch}", "ms", "range", "speed vs the loop"]
    return common.table(headers, rows), ratios


def jvp_cost(config: common.Settings, rng: np.random.Generator) -> tuple[str, common.Summary]:
    """The forward pass of the MLP's logits against ``tg.func.jvp`` of them."""
    batch = config.pick(full=64, quick=64, smoke=4)
    sizes = (784, 256, 10)
    tg, _ = tensorgrad_loss()
    from tensorgrad.nn import functional as F

    weights = [tg.tensor(w) for w in mlp_params(rng, sizes)]
    directions = [tg.tensor(rng.standard_normal(w.shape).astype(np.float32)) for w in weights]
    x = tg.tensor(rng.standard_normal((batch, sizes[0])).astype(np.float32))

    def logits(w1, b1, w2, b2):
        return F.relu(x @ w1 + b1) @ w2 + b2

    calls = config.pick(full=20, quick=10, smoke=1)

    def forward_pass():
        logits(*weights)

    def with_tangent():
        tg.func.jvp(logits, tuple(weights), tuple(directions))

    # the JVP checked by the adjoint identity ⟨u, J·v⟩ = ⟨Jᵀ·u, v⟩ against reverse mode, in
    # float64 (exact up to rounding; central differences would trip over the ReLU's kinks)
    w64 = tuple(w.double() for w in weights)
    d64 = tuple(d.double() for d in directions)
    x64 = x.double()

    def logits64(w1, b1, w2, b2):
        return F.relu(x64 @ w1 + b1) @ w2 + b2

    _, tangent = tg.func.jvp(logits64, w64, d64)
    u = tg.tensor(rng.standard_normal(tuple(tangent.shape)))
    _, vjp_fn = tg.func.vjp(logits64, *w64)
    u_jv = float((u * tangent).sum().item())
    jtu_v = sum(float((g * d).sum().item()) for g, d in zip(vjp_fn(u), d64, strict=True))
    if abs(u_jv - jtu_v) > 1e-9 * max(1.0, abs(u_jv)):
        raise common.DisagreementError(
            f"jvp: ⟨u, J·v⟩ = {u_jv} by forward mode but ⟨Jᵀ·u, v⟩ = {jtu_v} by reverse "
            "mode; refusing to report timings"
        )
    tasks = {"forward pass (logits)": forward_pass, "tg.func.jvp (logits and J·v)": with_tangent}
    torch = common.torch()
    if torch is not None:
        tw = [torch.tensor(w.numpy()) for w in weights]
        td = [torch.tensor(d.numpy()) for d in directions]
        tx = torch.tensor(x.numpy())

        def torch_logits(w1, b1, w2, b2):
            return torch.relu(tx @ w1 + b1) @ w2 + b2

        def torch_forward():
            torch_logits(*tw)

        def torch_jvp():
            torch.func.jvp(torch_logits, tuple(tw), tuple(td))

        tasks["PyTorch forward pass"] = torch_forward
        tasks["PyTorch torch.func.jvp"] = torch_jvp
    timed = {name: after_warm_up(task, calls) for name, task in tasks.items()}
    times = common.interleaved(timed, config.repeats, config.warmup, config.pause)
    ours = common.paired_ratios(
        times["tg.func.jvp (logits and J·v)"], times["forward pass (logits)"]
    )
    rows = [
        [
            name,
            common.number(common.Summary.of(values).scaled(1e6 / calls).median),
            common.spread(common.Summary.of(values).scaled(1e6 / calls)),
        ]
        for name, values in times.items()
    ]
    lines = [common.table([f"MLP logits, batch {batch}", "µs per call", "range"], rows)]
    if torch is not None:
        theirs = common.paired_ratios(
            times["PyTorch torch.func.jvp"], times["PyTorch forward pass"]
        )
        lines.append(f"PyTorch's JVP costs {common.ratio(theirs)} its forward pass.\n")
    return "\n".join(lines), ours


def jacobians(config: common.Settings, rng: np.random.Generator) -> str:
    """jacfwd and jacrev on tanh(A·x) for a few shapes of A."""
    import tensorgrad as tg

    shapes = config.pick(
        full=[(4, 256), (16, 64), (32, 32), (64, 16), (256, 4)],
        quick=[(4, 256), (32, 32), (256, 4)],
        smoke=[(2, 6), (6, 2)],
    )
    rows = []
    for n, m in shapes:
        a = tg.tensor(rng.standard_normal((m, n)) / np.sqrt(n))
        x = tg.tensor(rng.standard_normal(n))

        def f(v, a=a):
            return (a @ v).tanh()

        forward_jac = tg.func.jacfwd(f)
        reverse_jac = tg.func.jacrev(f)
        expected = (1 - np.tanh(a.numpy() @ x.numpy()) ** 2)[:, None] * a.numpy()
        for name, jac in (("jacfwd", forward_jac), ("jacrev", reverse_jac)):
            error = common.relative_error(jac(x).numpy(), expected)
            if error > 1e-10:
                raise common.DisagreementError(
                    f"{name} on {m}×{n} differs from the Jacobian by hand by {error:.2g}"
                )
        times = common.interleaved(
            {
                "jacfwd": after_warm_up(lambda f=forward_jac, x=x: f(x)),
                "jacrev": after_warm_up(lambda f=reverse_jac, x=x: f(x)),
            },
            config.repeats,
            config.warmup,
            config.pause,
        )
        fwd = common.Summary.of(times["jacfwd"]).scaled(1e3)
        rev = common.Summary.of(times["jacrev"]).scaled(1e3)
        speed = common.paired_ratios(times["jacrev"], times["jacfwd"])
        winner = "jacfwd" if speed.median > 1 else "jacrev"
        rows.append(
            [
                f"n = {n} inputs, m = {m} outputs",
                common.number(fwd.median),
                common.number(rev.median),
                common.ratio(speed),
                winner,
            ]
        )
    headers = ["f: Rⁿ → Rᵐ, tanh(A·x), float64", "jacfwd ms", "jacrev ms", "jacfwd speed", "faster"]
    return common.table(headers, rows)


def run(args: argparse.Namespace) -> str:
    config = common.settings(args)
    rng = np.random.default_rng(0)
    per_sample_table, ratios = per_sample(config, rng)
    jvp_table, jvp_ratio = jvp_cost(config, rng)
    jac_table = jacobians(config, rng)
    loop = ratios["loop"]
    summary = [
        f"Per-sample gradients by `vmap(grad)`: {common.ratio(loop)} the loop's speed (target "
        f"≥5×: {common.verdict(loop.median, 5.0)})"
    ]
    if "torch" in ratios:
        summary.append(
            f", {common.ratio(ratios['torch'])} torch.func's (target ≥1×: "
            f"{common.verdict(ratios['torch'].median, 1.0)})"
        )
    summary.append(
        ". `tg.func.vmap` calls the function once on the whole batch (a batching rule per "
        "op), so the per-sample gradient of `x @ W` is one outer product over the batch, "
        "not 64 backward calls.\n"
    )
    return "\n".join(
        [
            "## Function transforms (`tg.func`)\n",
            "Per-sample gradients of an MLP 784-256-10 (ReLU, cross-entropy, float32), each "
            "implementation checked against the loop of per-sample `backward` calls before "
            "timing (relative error 1e-4); milliseconds per batch, median and range over the "
            "repeats, speed as the per-round ratio. Every timing follows one untimed call (the "
            "thread pools wake up after the pause between tasks).\n",
            per_sample_table,
            "".join(summary),
            "A JVP against the forward pass (the same MLP's logits, the tangent along a random "
            "direction in the weights; checked in float64 by the adjoint identity against "
            "reverse mode):\n",
            jvp_table,
            f"tensorgrad's JVP costs {common.ratio(jvp_ratio)} its forward pass (target "
            f"≤3×: {common.verdict(jvp_ratio.median, 3.0, higher_is_better=False)}).\n",
            "jacfwd (one forward pass with tangents per input) against jacrev (one backward "
            "per output), each checked against the Jacobian by hand:\n",
            jac_table,
        ]
    )
