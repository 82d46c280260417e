"""minGPT's adder (Karpathy's ``projects/adder``, MIT; verbatim in ``mingpt_adder/``), ported
by changing imports only, trains and evaluates on tensorgrad.

The 1001-iteration run that ``docs/sequence.md`` reports takes minutes; here a few iterations
check the whole path a GPT program takes: the model (causal self-attention with a ``tril``
buffer, GELU, weight decay groups by module type), ``RandomSampler(replacement=True,
num_samples=int(1e10))``, AdamW with gradient clipping, greedy generation, ``torch.save``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.ported.test_ported_programs import port

ADDER = Path(__file__).parent / "mingpt_adder"


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
