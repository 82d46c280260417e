"""PyTorch programs, ported by changing their imports only, run on tensorgrad and print what
PyTorch prints.

Each file in ``programs/`` is plain PyTorch source (``import torch``), written here the way a
PyTorch user writes it; drop in another and it is checked the same way. The test ports it by
the import rule of docs/porting.md (:func:`port`, the rules of ``../shared/ports/port.py``),
runs it with tensorgrad, and, where PyTorch is installed, runs the original too and compares
their output: the same text, and every number in it within a tolerance.

The programs do not depend on the random generators, whose streams differ between the two
libraries: weights are set from formulas (``sin``/``cos``/``linspace``), the data is
scikit-learn's digits or a formula, batches come in order (``shuffle=False``), and dropout
runs in eval mode or at rate 0 (``gpt_adder.py`` also has a ``--train`` mode that draws,
which ``test_gpt_adder.py`` runs). What remains are float32 rounding differences (BLAS and
reduction orders differ), about 1e-7 relative per operation. A few hundred optimizer steps of
the short, non-chaotic runs here carry that to at most ~1e-5 relative in the printed losses,
so the default tolerance is rtol 1e-4 with atol 1e-5 (for values near zero); a broken op or
gradient moves the numbers by percent. Integer counts (accuracy) are compared with the same
tolerance, so they must agree exactly. A program must avoid parameters whose true gradient is
zero, such as a convolution's bias right before BatchNorm or a bias on attention's keys: under
Adam, which divides by the gradient's size, such a parameter follows the rounding noise,
which differs between the libraries.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

PROGRAMS = sorted((Path(__file__).parent / "programs").glob("*.py"))
#: the rule as a script, in ../shared/ports/ beside the project's checkout (not part of it)
SHARED_PORT = next(
    (
        folder / "shared" / "ports" / "port.py"
        for folder in Path(__file__).resolve().parents[3:]
        if (folder / "shared" / "ports" / "port.py").exists()
    ),
    Path("../shared/ports/port.py"),
)

#: (rtol, atol) per program where the default does not fit, and why
TOLERANCES: dict[str, tuple[float, float]] = {
    # 20 AdamW steps of a GPT from the same weights agree to ~3e-7 (seen); 1e-5 keeps a
    # wrong gradient or update far outside, atol is the printed digits' rounding
    "gpt_adder": (1e-5, 2e-7),
}
DEFAULT_TOLERANCE = (1e-4, 1e-5)

NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|\bnan\b|\binf\b")


def port(source: str) -> str:
    """Rewrite module paths as the porting rule does, and nothing else: ``import torch`` →
    ``import tensorgrad as torch``, ``from torch…`` / ``import torch.X`` → ``tensorgrad…``,
    ``torch.utils.data`` → ``tensorgrad.data``, ``torchvision`` → ``tensorgrad.vision``."""
    source = source.replace(
        "from micrograd.engine import Value", "from tensorgrad.scalar import Value"
    )
    source = source.replace("torch.utils.data", "tensorgrad.data")
    source = re.sub(r"\btorchvision\b", "tensorgrad.vision", source)
    lines = []
    for line in source.splitlines():
        stripped = line.lstrip()
        if stripped.startswith("import torch") and not stripped.startswith("import torch."):
            line = line.replace("import torch", "import tensorgrad as torch", 1)
        elif stripped.startswith("import torch."):
            line = re.sub(r"\bimport torch\.", "import tensorgrad.", line)
        elif stripped.startswith("from torch"):
            line = re.sub(r"^(\s*)from torch\b", r"\1from tensorgrad", line)
        lines.append(line)
    if any("tensorgrad.data." in line for line in lines):  # the module path used in the body
        at = max((i + 1 for i, s in enumerate(lines) if s.startswith("from __future__")), default=0)
        lines.insert(at, "import tensorgrad")
    return "\n".join(lines) + "\n"


def run(program: Path, cwd: Path, *args: str) -> str:
    """Run ``program`` with ``args`` in ``cwd`` and return what it printed (failing loudly if
    it fails)."""
    root = str(Path(__file__).resolve().parents[2])  # tensorgrad, importable without installing
    path = os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "PYTHONPATH": path}
    result = subprocess.run(
        [sys.executable, str(program), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert result.returncode == 0, f"{program.name} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def compare(ours: str, theirs: str, rtol: float, atol: float) -> None:
    """The same text with numbers blanked out, and each number within the tolerance."""
    assert NUMBER.sub("#", ours) == NUMBER.sub("#", theirs), f"\nours:\n{ours}\ntheirs:\n{theirs}"
    worst = []
    for a, b in zip(NUMBER.findall(ours), NUMBER.findall(theirs), strict=True):
        x, y = float(a), float(b)
        if not (abs(x - y) <= atol + rtol * abs(y) or (x != x and y != y)):
            worst.append(f"{a} (tensorgrad) vs {b} (PyTorch)")
    assert not worst, "numbers differ: " + "; ".join(worst) + f"\nours:\n{ours}\ntheirs:\n{theirs}"


def test_there_are_programs():
    assert len(PROGRAMS) >= 8


def test_the_rule_is_the_shared_scripts():
    """The port here and ../shared/ports/port.py give the same text (when the script is
    there: it is not part of the project)."""
    if not SHARED_PORT.exists():
        pytest.skip(f"{SHARED_PORT} is not there")
    samples = [p.read_text() for p in PROGRAMS]
    samples.append(
        "from __future__ import annotations\nimport torch\nimport torch.nn as nn\n"
        "from torch.optim import SGD\nfrom torchvision import datasets\n"
        "loader = torch.utils.data.DataLoader(x)\n    import torch\n"
    )
    for i, source in enumerate(samples):
        src = Path(os.environ.get("TMPDIR", "/tmp")) / f"tg_port_rule_{os.getpid()}_{i}.py"
        dst = src.with_suffix(".out")
        try:
            src.write_text(source)
            subprocess.run([sys.executable, str(SHARED_PORT), str(src), str(dst)], check=True)
            assert dst.read_text() == port(source)
        finally:
            src.unlink(missing_ok=True)
            dst.unlink(missing_ok=True)


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.stem)
def test_ported_program_runs_and_prints_what_pytorch_prints(program, tmp_path):
    source = program.read_text()
    assert re.search(r"^import torch$|^from torch", source, re.M), "a PyTorch program"
    ported = tmp_path / "tensorgrad" / program.name
    ported.parent.mkdir()
    ported.write_text(port(source))
    assert "import torch\n" not in ported.read_text()
    ours = run(ported, ported.parent)
    assert ours.strip(), f"{program.name} printed nothing"
    if importlib.util.find_spec("torch") is None:
        pytest.skip("PyTorch is not installed: ran on tensorgrad only")
    original = tmp_path / "torch"
    original.mkdir()
    theirs = run(program, original)
    compare(ours, theirs, *TOLERANCES.get(program.stem, DEFAULT_TOLERANCE))
