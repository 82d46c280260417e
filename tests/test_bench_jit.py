"""Smoke test for the jit section of ``python -m bench``: well-formed Markdown with the
compile table, the training-step table and the per-op table where numba is installed, a
sentence where it is not. Nothing here asserts anything about speed."""

from __future__ import annotations

import pytest

from bench import jit, seq
from tests.test_bench import smoke_args, tables


def test_jit_section_without_numba_says_so(monkeypatch):
    monkeypatch.setattr(jit, "available", lambda: False)
    text = jit.run(smoke_args())
    assert "numba is not installed" in text and tables(text) == []


def test_jit_section_reports_compile_time_steps_and_ops():
    pytest.importorskip("numba")
    if not jit.available():
        pytest.skip("TENSORGRAD_JIT=0")
    compile_table, steps, mlp, ops = tables(jit.run(smoke_args()))
    first = next(iter(jit._kernel_calls()))  # smoke: one kernel
    assert [row[0] for row in compile_table[2:]] == ["import numba", first, "all"]
    assert all(float(cell) >= 0 for row in compile_table[2:] for cell in row[1:])
    assert [row[0] for row in steps[2:]] == [seq.SMOKE[0].name]
    assert [row[0] for row in mlp[2:]] == ["batch 32"]
    assert len(ops) == 2 + len(seq.op_cases(__import__("tensorgrad"), seq.SMOKE[0]))
