"""The docs stay true: every ```python block in README.md and docs/*.md runs.

Blocks of one page run in order in one namespace, as a reader would type them. Excerpts that
are not meant to run on their own (a class body quoted from the source, say) are fenced as
```py instead. Blocks that import PyTorch run only where it is installed, and blocks that say
``pip install 'tensorgrad[EXTRA]'`` in a comment only where that extra's packages are. The
``tensorgrad ...`` commands of docs/moving-models-out.md's ```sh blocks run too.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from tensorgrad.core import batching

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
HAS_TORCH = importlib.util.find_spec("torch") is not None
#: the packages each optional extra installs (pyproject.toml)
EXTRAS = {
    "safetensors": ("safetensors",),
    "onnx": ("onnx", "onnxruntime"),
    "tensorboard": ("tensorboard",),
}
NEEDS_EXTRA = re.compile(r"^# pip install 'tensorgrad\[(\w+)\]'", re.MULTILINE)
SHELL_BLOCK = re.compile(r"^```sh\n(.*?)^```", re.MULTILINE | re.DOTALL)


def missing_extras(block: str) -> list[str]:
    return [
        extra
        for extra in NEEDS_EXTRA.findall(block)
        if any(importlib.util.find_spec(p) is None for p in EXTRAS[extra])
    ]


def python_blocks(page: Path) -> list[str]:
    return BLOCK.findall(page.read_text(encoding="utf-8"))


@pytest.mark.parametrize("page", [p for p in PAGES if python_blocks(p)], ids=lambda p: p.name)
def test_page_snippets_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # snippets that write files write them here
    # a page reads as if run in a fresh process: vmap's once-per-op warnings not yet given
    monkeypatch.setattr(batching.state, "warned", set())
    namespace: dict = {"__name__": f"docs_{page.stem}"}
    for number, block in enumerate(python_blocks(page), 1):
        if "import torch" in block and not HAS_TORCH:
            continue  # the PyTorch interop snippets run where PyTorch is installed
        if missing_extras(block):
            continue  # and those of an optional extra where it is installed
        code = compile(block, f"{page.name} block {number}", "exec")
        exec(code, namespace)


def test_moving_models_out_commands_run(tmp_path, monkeypatch, capsys):
    """The page's command lines, in order, in one directory (they read each other's files)."""
    from tensorgrad import cli

    page = (ROOT / "docs" / "moving-models-out.md").read_text(encoding="utf-8")
    commands = [
        line.split()[1:]
        for block in SHELL_BLOCK.findall(page)
        for line in block.splitlines()
        if line.startswith("tensorgrad ")
    ]
    assert len(commands) == 4
    needs = {"safetensors": "safetensors", "onnx": "onnx", "tensorboard": "tensorboard"}
    if any(importlib.util.find_spec(p) is None for p in needs.values()):
        pytest.skip("needs the interop extras (safetensors, onnx, tensorboard)")
    monkeypatch.chdir(tmp_path)
    for argv in commands:
        assert cli.main([*argv, "--no-progress"] if argv[0] == "train" else argv) == 0, argv
    assert (tmp_path / "model.onnx").exists() and list((tmp_path / "runs" / "digits").iterdir())
    assert "digits test set" in capsys.readouterr().out


def test_readme_quick_start_numbers(capsys):
    import tensorgrad as tg

    a = tg.tensor(2.0, requires_grad=True)
    b = tg.tensor(3.0, requires_grad=True)
    loss = (a * b) * a
    loss.backward()
    assert (loss.item(), a.grad.item(), b.grad.item()) == (12.0, 12.0, 4.0)
