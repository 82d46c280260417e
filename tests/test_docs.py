"""The docs stay true: every ```python block in README.md and docs/*.md runs.

Blocks of one page run in order in one namespace, as a reader would type them. Excerpts that
are not meant to run on their own (a class body quoted from the source, say) are fenced as
```py instead. Blocks that import PyTorch run only where it is installed.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
HAS_TORCH = importlib.util.find_spec("torch") is not None


def python_blocks(page: Path) -> list[str]:
    return BLOCK.findall(page.read_text(encoding="utf-8"))


@pytest.mark.parametrize("page", [p for p in PAGES if python_blocks(p)], ids=lambda p: p.name)
def test_page_snippets_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # snippets that write files write them here
    namespace: dict = {"__name__": f"docs_{page.stem}"}
    for number, block in enumerate(python_blocks(page), 1):
        if "import torch" in block and not HAS_TORCH:
            continue  # the PyTorch interop snippets run where PyTorch is installed
        code = compile(block, f"{page.name} block {number}", "exec")
        exec(code, namespace)


def test_readme_quick_start_numbers(capsys):
    import tensorgrad as tg

    a = tg.tensor(2.0, requires_grad=True)
    b = tg.tensor(3.0, requires_grad=True)
    loss = (a * b) * a
    loss.backward()
    assert (loss.item(), a.grad.item(), b.grad.item()) == (12.0, 12.0, 4.0)
