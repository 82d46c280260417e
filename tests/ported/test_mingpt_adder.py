"""minGPT's adder (Karpathy's ``projects/adder``, MIT; verbatim in ``mingpt_adder/``), ported
by changing imports only, trains and evaluates on tensorgrad.

The 1001-iteration runs that ``docs/sequence.md`` reports take minutes; here a few iterations
check the whole path a GPT program takes: the model (causal self-attention with a ``tril``
buffer, GELU, weight decay groups by module type), ``RandomSampler(replacement=True,
num_samples=int(1e10))``, AdamW with gradient clipping, greedy generation, ``torch.save``.

Where PyTorch is installed, the verbatim and the ported minGPT are imported side by side and
checked to train the same way: the same trajectory from the same weights with dropout off,
the same initial-weight distribution, the same dropout statistics. What is left between the
libraries is their random streams, so a seed is a different run in each.
"""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

import tensorgrad as tg
from tests.ported.test_ported_programs import port

ADDER = Path(__file__).parent / "mingpt_adder"
STEPS = 20
DRAWS = 200  # dropout masks per library


def test_ported_mingpt_adder_trains_and_scores(tmp_path):
    run = tmp_path / "run"
    (run / "mingpt").mkdir(parents=True)
    (run / "mingpt_adder.py").write_text(port((ADDER / "mingpt_adder.py").read_text()))
    for module in sorted((ADDER / "mingpt").glob("*.py")):
        (run / "mingpt" / module.name).write_text(port(module.read_text()))
    assert "import torch\n" not in (run / "mingpt" / "model.py").read_text()
    root = str(Path(__file__).resolve().parents[2])
    env = {
        **os.environ,
        "PYTHONWARNINGS": "ignore",
        "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])),
    }
    args = ["--trainer.max_iters=11", "--trainer.num_workers=0", "--system.work_dir='out'"]
    result = subprocess.run(
        [sys.executable, "mingpt_adder.py", *args],
        cwd=run,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    out = result.stdout
    losses = [float(x) for x in re.findall(r"iter \d+: train loss ([\d.]+)", out)]
    assert len(losses) == 2 and losses[1] < losses[0] < 3.0, out  # iterations 0 and 10
    assert re.search(r"number of parameters: 0\.09M", out), out
    assert re.search(r"test final score: \d+/500 = [\d.]+% correct", out), out
    assert (run / "out" / "model.pt").exists()


def _import_mingpt(root: Path, package: str, *, ported: bool) -> dict[str, ModuleType]:
    """minGPT's package and the adder under ``package`` (ported or verbatim), importable side by
    side with the other library's copy: ``mingpt.`` is renamed to ``package.``, nothing else."""
    (root / package).mkdir(parents=True)
    sources = {"adder": ADDER / "mingpt_adder.py"}
    sources.update((m.stem, m) for m in (ADDER / "mingpt").glob("*.py"))
    for name, source in sources.items():
        text = source.read_text().replace("from mingpt.", f"from {package}.")
        (root / package / f"{name}.py").write_text(port(text) if ported else text)
    return {name: importlib.import_module(f"{package}.{name}") for name in sources}


@pytest.fixture
def import_mingpt(tmp_path, monkeypatch):
    """``import_mingpt(ported=...)``: minGPT from ``tmp_path``, unloaded after the test."""
    monkeypatch.syspath_prepend(str(tmp_path))
    packages = {True: "mingpt_on_tensorgrad", False: "mingpt_on_torch"}
    try:
        yield lambda ported: _import_mingpt(tmp_path, packages[ported], ported=ported)
    finally:
        for name in [n for n in sys.modules if n.split(".")[0] in packages.values()]:
            del sys.modules[name]


@pytest.fixture
def both_mingpts(import_mingpt):
    """(torch, PyTorch's minGPT, the ported one), PyTorch on one thread meanwhile."""
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny products: PyTorch's threads only wait for each other
    try:
        yield torch, import_mingpt(False), import_mingpt(True)
    finally:
        torch.set_num_threads(threads)


def _nano_config(mingpt, dropout: float):
    config = mingpt["model"].GPT.get_default_config()
    config.model_type, config.vocab_size, config.block_size = "gpt-nano", 10, 6  # the adder's
    config.embd_pdrop = config.resid_pdrop = config.attn_pdrop = dropout
    return config


def test_ported_mingpt_follows_pytorch_from_the_same_weights(both_mingpts):
    """With PyTorch's initial weights loaded and dropout off, the ported GPT, fed the adder's
    batches, follows PyTorch's trajectory to float32 rounding: the loss (cross-entropy with
    ``ignore_index=-1``), the gradient norm that ``clip_grad_norm_`` clips, and the weights
    after AdamW (two weight-decay groups), step by step; then the same greedy answers. Anything
    that changed what training does (a VJP, the clipping rule, the decay groups, the Adam
    update) shows at the first step."""
    torch, on_torch, on_tg = both_mingpts
    torch.manual_seed(3407)
    models = [on_torch["model"].GPT(_nano_config(on_torch, 0.0))]
    models.append(on_tg["model"].GPT(_nano_config(on_tg, 0.0)))
    models[1].load_state_dict({k: tg.tensor(v.numpy()) for k, v in models[0].state_dict().items()})
    optimizers = []
    for mingpt, model in zip((on_torch, on_tg), models):
        train_config = mingpt["trainer"].Trainer.get_default_config()
        train_config.learning_rate = 5e-4  # the adder's
        optimizers.append(model.configure_optimizers(train_config))
        model.train()
    group_sizes = [[len(g["params"]) for g in opt.param_groups] for opt in optimizers]
    assert group_sizes[1] == group_sizes[0]
    dataset = on_torch["adder"].AdditionDataset(
        on_torch["adder"].AdditionDataset.get_default_config(), split="train"
    )
    rng = np.random.default_rng(0)
    traces = [[], []]
    for _ in range(STEPS):
        items = [dataset[int(i)] for i in rng.integers(0, len(dataset), 64)]
        x, y = torch.stack([x for x, _ in items]), torch.stack([y for _, y in items])
        for lib, model, optimizer, trace in zip((torch, tg), models, optimizers, traces):
            xb, yb = (x, y) if lib is torch else (tg.tensor(x.numpy()), tg.tensor(y.numpy()))
            _, loss = model(xb, yb)
            model.zero_grad(set_to_none=True)
            loss.backward()
            norm = lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            trace.append((loss.item(), float(norm)))
    on_pytorch, ported = np.array(traces[0]), np.array(traces[1])
    assert (on_pytorch[:, 1] > 1.0).sum() >= STEPS // 2  # clip_grad_norm_ clipped most steps
    np.testing.assert_allclose(ported, on_pytorch, rtol=1e-5)  # float32 rounding: ~1e-7 seen
    # Adam divides by the gradient's size, so a weight whose gradient is near zero follows the
    # rounding noise a little (7.7e-6 seen on one of 9216): atol is a fifth of one step's lr
    weights = models[0].state_dict()
    for name, value in models[1].state_dict().items():
        np.testing.assert_allclose(value.numpy(), weights[name].numpy(), rtol=1e-5, atol=1e-4)
    problems = x[:, :4]  # the adder's evaluation: greedy completion of the two numbers' digits
    answers = []
    for lib, model in zip((torch, tg), models):
        model.eval()
        answers.append(model.generate(lib.tensor(problems.numpy()), 3, do_sample=False).numpy())
    np.testing.assert_array_equal(answers[1], answers[0])


def _expected_init(name: str) -> tuple[float, float]:
    """(mean, std) of a minGPT parameter after ``_init_weights`` and the scaled ``c_proj``
    init (GPT-2's 0.02 / √(2 · n_layer)); LayerNorm weights are ones, biases zeros."""
    if name.endswith("c_proj.weight"):
        return 0.0, 0.02 / (2 * 3) ** 0.5
    if name.startswith("transformer.ln_f.") or ".ln_" in name:
        return (1.0 if name.endswith("weight") else 0.0), 0.0
    if name.endswith("bias"):
        return 0.0, 0.0
    return 0.0, 0.02  # Linear and Embedding weights


@pytest.mark.parametrize("ported", [True, False], ids=["tensorgrad", "pytorch"])
def test_mingpt_initialises_as_mingpt_says(import_mingpt, ported):
    """The GPT's initial weights, ported (tensorgrad's generator, so other numbers than
    PyTorch's) and on PyTorch, have the distribution minGPT sets: N(0, 0.02) for Linear and
    Embedding weights, N(0, 0.02/√6) for the residual projections, LayerNorm at (1, 0). The
    sample mean and standard deviation are checked to 5 standard errors."""
    lib = tg if ported else pytest.importorskip("torch")
    mingpt = import_mingpt(ported)
    lib.manual_seed(3407)
    model = mingpt["model"].GPT(_nano_config(mingpt, 0.1))
    names = [name for name, _ in model.named_parameters()]
    assert len(names) == 3 * 12 + 5 and "transformer.h.2.mlp.c_proj.weight" in names
    for name, parameter in model.named_parameters():
        values = parameter.detach().numpy().astype(np.float64).ravel()
        mean, std = _expected_init(name)
        if std == 0.0:
            assert np.all(values == mean), name
            continue
        n = values.size
        assert abs(values.mean() - mean) < 5 * std / n**0.5, name
        assert abs(values.std() / std - 1) < 5 / (2 * n) ** 0.5, name


def test_ported_mingpt_dropout_changes_the_logits_as_pytorch(both_mingpts):
    """From the same weights and batch, the training-mode logits under minGPT's dropout (0.1
    on the embeddings, the attention weights and both residual branches) have the same mean
    and variance over fresh masks in both libraries, element by element (the masks themselves
    differ). A wrong rate, a missing 1/(1 − p) or a dropout where minGPT has none moves them by
    many standard errors."""
    torch, on_torch, on_tg = both_mingpts
    torch.manual_seed(0)
    tg.manual_seed(0)
    models = [on_torch["model"].GPT(_nano_config(on_torch, 0.1))]
    models.append(on_tg["model"].GPT(_nano_config(on_tg, 0.1)))
    with torch.no_grad():  # larger weights than the init's, so that dropout matters
        for p in models[0].parameters():
            p.add_(torch.randn_like(p) * 0.3)
    models[1].load_state_dict({k: tg.tensor(v.numpy()) for k, v in models[0].state_dict().items()})
    x = np.random.default_rng(1).integers(0, 10, (64, 6))
    means, variances = [], []
    for lib, model in zip((torch, tg), models):
        model.train()
        with lib.no_grad():
            draws = np.stack([model(lib.tensor(x))[0].numpy() for _ in range(DRAWS)])
        means.append(draws.mean(0))
        variances.append(draws.var(0, ddof=1))
    z = (means[1] - means[0]) / np.sqrt((variances[0] + variances[1]) / DRAWS)
    assert np.mean(z**2) < 1.25  # about 1 when both draw from one distribution
    assert 0.92 < variances[1].mean() / variances[0].mean() < 1.08
