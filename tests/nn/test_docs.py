"""docs/nn.md: every example runs and prints what the page shows."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "nn.md"
HAS_TORCH = importlib.util.find_spec("torch") is not None


def expected_output(block: str, text_after: str) -> str:
    """The text block right after a snippet, or else the comments on (or just below) its
    ``print`` lines."""
    if text_after:
        return text_after
    lines, expected = block.splitlines(), []
    for i, line in enumerate(lines):
        if line.lstrip().startswith("print("):
            comment = line.partition(")  # ")[2] or lines[i + 1].strip().removeprefix("# ")
            expected.append(comment + "\n")
    return "".join(expected)


def test_examples_print_what_the_page_shows(capsys):
    pattern = r"```python\n(.*?)```\n(?:\n```text\n(.*?)```\n)?"
    snippets = re.findall(pattern, DOC.read_text(), flags=re.DOTALL)
    assert len(snippets) >= 15, "docs/nn.md lost its examples"
    namespace: dict = {"__name__": "docs_nn"}
    checked = 0
    for number, (block, text_after) in enumerate(snippets, 1):
        if block.startswith("import torch") and not HAS_TORCH:
            continue
        exec(compile(block, f"nn.md block {number}", "exec"), namespace)
        printed = capsys.readouterr().out
        assert printed == expected_output(block, text_after), f"block {number}"
        checked += bool(printed)
    assert checked >= 12
