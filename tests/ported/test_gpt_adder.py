"""The GPT adder of ``programs/gpt_adder.py``, ported by the import rule, beyond the check run
that ``test_ported_programs.py`` compares with PyTorch's (the same trajectory from the same
weights with dropout off: losses, clipped gradient norms, every parameter's norm after 20
AdamW steps, the greedy answers and the test score, the weights saved and loaded).

Here: the ``--train`` run as a user starts it (random initial weights, dropout, batches drawn
by ``RandomSampler(replacement=True, num_samples=int(1e10))``, the score, ``torch.save``) for
a few iterations; that the check run clips its gradients and decays the Linear weights only;
the initial weights' distribution in both libraries; and, from the same weights, the same
statistics of the logits under dropout. What is left between the libraries is their random
streams, so a seed is a different run in each; the 2000-iteration runs that
``docs/sequence.md`` reports take minutes.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

import tensorgrad as tg
from tests.ported.test_ported_programs import port, run

PROGRAM = Path(__file__).parent / "programs" / "gpt_adder.py"
DRAWS = 200  # dropout masks per library


def load(folder: Path, *, ported: bool) -> ModuleType:
    """The program as a module (its ``__main__`` part does not run), ported or as written."""
    name = "gpt_adder_on_tensorgrad" if ported else "gpt_adder_on_torch"
    path = folder / f"{name}.py"
    source = PROGRAM.read_text()
    path.write_text(port(source) if ported else source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def both(tmp_path):
    """(torch, the program on PyTorch, the program on tensorgrad), each library on one
    thread meanwhile (tiny products: a second thread only waits)."""
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads(), tg.get_num_threads()
    torch.set_num_threads(1)
    tg.set_num_threads(1)
    try:
        yield torch, load(tmp_path, ported=False), load(tmp_path, ported=True)
    finally:
        torch.set_num_threads(threads[0])
        tg.set_num_threads(threads[1])


def test_ported_adder_trains_from_a_random_start_scores_and_saves(tmp_path):
    ported = tmp_path / "gpt_adder.py"
    ported.write_text(port(PROGRAM.read_text()))
    out = run(ported, tmp_path, "--train", "--iters=11", "--out=run")
    assert re.search(r"^number of parameters: 86016$", out, re.M), out
    losses = [float(x) for x in re.findall(r"^iter \d+: train loss ([\d.]+)$", out, re.M)]
    assert len(losses) == 2 and losses[1] < losses[0] < 3.0, out  # iterations 0 and 10
    score = re.search(r"^test score: (\d+)/500 = ([\d.]+)% correct$", out, re.M)
    assert score and float(score[2]) == pytest.approx(int(score[1]) / 5), out
    model = load(tmp_path, ported=True).AdderGPT()
    result = model.load_state_dict(tg.load(tmp_path / "run" / "model.pt"))
    assert not result.missing_keys and not result.unexpected_keys


def test_the_check_run_clips_and_decays_the_linear_weights_only(tmp_path):
    """The check run's first steps have gradient norms over 1, which ``clip_grad_norm_``
    scales to 1; AdamW's decayed group is the Linear layers' weights, nothing else."""
    adder = load(tmp_path, ported=True)
    model = adder.AdderGPT(dropout=0.0)
    adder.set_weights_by_formula(model)
    groups = adder.parameter_groups(model, weight_decay=0.1)
    names = {id(p): n for n, p in model.named_parameters()}
    decayed = sorted(names[id(p)] for p in groups[0]["params"])
    linear_weights = sorted(
        f"{m}.weight" for m, module in model.named_modules() if isinstance(module, tg.nn.Linear)
    )
    assert decayed == linear_weights and len(decayed) == 3 * 6 + 1
    assert len(groups[0]["params"]) + len(groups[1]["params"]) == len(names)
    optimizer = tg.optim.AdamW(groups, lr=5e-4, betas=(0.9, 0.95))
    loader = tg.data.DataLoader(adder.Additions("train"), batch_size=64)
    for _, norm in adder.training_steps(model, optimizer, loader, 3):
        grads = [p.grad.numpy().astype(np.float64) for g in groups for p in g["params"]]
        clipped = np.sqrt(sum((grad**2).sum() for grad in grads))
        assert norm > 1.0 and clipped == pytest.approx(1.0, rel=1e-5)


def expected_init(name: str) -> tuple[float, float]:
    """(mean, std) of a parameter as the program initialises it; std 0 means all equal."""
    if name.endswith(("attention.out.weight", "feed_forward.2.weight")):
        return 0.0, 0.02 / (2 * 3) ** 0.5  # writes into the residual stream
    if "norm." in name:
        return (1.0 if name.endswith("weight") else 0.0), 0.0
    if name.endswith("bias"):
        return 0.0, 0.0
    return 0.0, 0.02  # Linear and Embedding weights


@pytest.mark.parametrize("ported", [True, False], ids=["tensorgrad", "pytorch"])
def test_adder_initialises_as_it_says(tmp_path, ported):
    """The initial weights on tensorgrad (its own generator, so other numbers than PyTorch's)
    and on PyTorch have the distribution the program sets, checked by the sample mean and
    standard deviation to 5 standard errors."""
    lib = tg if ported else pytest.importorskip("torch")
    lib.manual_seed(3407)
    model = load(tmp_path, ported=ported).AdderGPT()
    names = [name for name, _ in model.named_parameters()]
    assert len(names) == 3 * 15 + 5 and "blocks.2.feed_forward.2.weight" in names
    for name, parameter in model.named_parameters():
        values = parameter.detach().numpy().astype(np.float64).ravel()
        mean, std = expected_init(name)
        if std == 0.0:
            assert np.all(values == mean), name
            continue
        n = values.size
        assert abs(values.mean() - mean) < 5 * std / n**0.5, name
        assert abs(values.std() / std - 1) < 5 / (2 * n) ** 0.5, name


def test_ported_adder_dropout_changes_the_logits_as_pytorch(both):
    """From the same weights and batch, the training-mode logits under dropout 0.1 (on the
    embeddings, the attention weights and both residual branches) have the same mean and
    variance over fresh masks in both libraries, element by element (the masks themselves
    differ). A wrong rate, a missing 1/(1 − p) or a dropout where the program has none moves
    them by many standard errors."""
    torch, on_torch, on_tg = both
    torch.manual_seed(0)
    tg.manual_seed(0)
    models = [on_torch.AdderGPT(dropout=0.1), on_tg.AdderGPT(dropout=0.1)]
    with torch.no_grad():  # larger weights than the init's, so that dropout matters
        for p in models[0].parameters():
            p.add_(torch.randn_like(p) * 0.3)
    models[1].load_state_dict({k: tg.tensor(v.numpy()) for k, v in models[0].state_dict().items()})
    x = np.random.default_rng(1).integers(0, 10, (32, 6))
    means, variances = [], []
    for lib, model in zip((torch, tg), models):
        model.train()
        with lib.no_grad():
            draws = np.stack([model(lib.tensor(x)).numpy() for _ in range(DRAWS)])
        means.append(draws.mean(0))
        variances.append(draws.var(0, ddof=1))
    z = (means[1] - means[0]) / np.sqrt((variances[0] + variances[1]) / DRAWS)
    assert np.mean(z**2) < 1.25  # about 1 when both draw from one distribution
    assert 0.92 < variances[1].mean() / variances[0].mean() < 1.08
